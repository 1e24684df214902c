//! Where the first peers come from: a network's DNS seeds (Bitcoin Core's
//! `vSeeds`, `src/kernel/chainparams.cpp`; `--bitcoin-dns-seed` replaces
//! them), resolved with the system resolver in the background, and Core's
//! fixed seeds (`src/chainparamsseeds.h`) when no seed answered within
//! [`FIXED_SEEDS_AFTER`], as Core falls back to them. Regtest has neither.
//!
//! Also which addresses count as one network group (at most
//! [`PER_NETGROUP`] outbound peers in one), as Core's `GetGroup` does for
//! IPv4 (/16) and IPv6 (/32).

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::{Duration, Instant};

use crate::headers::BitcoinNetwork;

/// How long the DNS seeds have before the fixed seeds are used (Core: 60 s).
pub const FIXED_SEEDS_AFTER: Duration = Duration::from_secs(60);

/// The most outbound peers in one network group.
pub const PER_NETGROUP: usize = 2;

/// The network's default P2P port (Core's `nDefaultPort`).
pub fn default_port(chain: BitcoinNetwork) -> u16 {
    match chain {
        BitcoinNetwork::Main => 8333,
        BitcoinNetwork::Testnet4 => 48333,
        BitcoinNetwork::Signet => 38333,
        BitcoinNetwork::Regtest => 18444,
    }
}

/// The network's DNS seeds: Bitcoin Core 31's `vSeeds` (none for regtest,
/// whose `dummySeed.invalid.` resolves to nothing).
pub fn dns_seeds(chain: BitcoinNetwork) -> &'static [&'static str] {
    match chain {
        BitcoinNetwork::Main => &[
            "dnsseed.bluematt.me",
            "seed.bitcoin.jonasschnelli.ch",
            "seed.btc.petertodd.net",
            "seed.bitcoin.sprovoost.nl",
            "dnsseed.emzy.de",
            "seed.bitcoin.wiz.biz",
            "seed.mainnet.achownodes.xyz",
        ],
        BitcoinNetwork::Testnet4 => &[
            "seed.testnet4.bitcoin.sprovoost.nl",
            "seed.testnet4.wiz.biz",
        ],
        BitcoinNetwork::Signet => &[
            "seed.signet.bitcoin.sprovoost.nl",
            "seed.signet.achownodes.xyz",
        ],
        BitcoinNetwork::Regtest => &[],
    }
}

/// A few of Core's fixed seeds per network: the first IPv4 entries of
/// `chainparams_seed_main`, `_testnet4` and `_signet` in Bitcoin Core 31's
/// `src/chainparamsseeds.h` (512, 63 and 46 IPv4 entries there).
pub fn fixed_seeds(chain: BitcoinNetwork) -> &'static [&'static str] {
    match chain {
        BitcoinNetwork::Main => &[
            "2.121.116.198:8333",
            "3.86.179.235:8333",
            "4.2.51.251:8333",
            "5.2.23.226:8333",
            "5.2.222.125:8333",
            "5.11.92.140:8333",
            "5.35.15.93:8333",
            "5.36.230.237:8333",
        ],
        BitcoinNetwork::Testnet4 => &[
            "2.59.134.244:48333",
            "2.110.106.102:48333",
            "5.182.4.106:48333",
            "31.220.30.248:48333",
            "34.232.194.104:48333",
            "35.201.167.154:48333",
            "38.102.86.40:48333",
            "45.41.204.8:48333",
        ],
        BitcoinNetwork::Signet => &[
            "34.135.189.101:38333",
            "34.254.97.244:38333",
            "35.196.2.204:38333",
            "35.217.13.118:38333",
            "37.120.177.204:38333",
            "38.83.170.18:38333",
            "44.192.76.239:38333",
            "45.94.168.5:38333",
        ],
        BitcoinNetwork::Regtest => &[],
    }
}

/// A seed's addresses: `HOST` with the network's default port, or
/// `HOST:PORT` (a seed on another port, as a test's).
pub fn resolve(seed: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
    if let Ok(ip) = seed.trim_matches(['[', ']']).parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let named_port = seed
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok());
    let with_port = match named_port {
        true => seed.to_string(),
        false => format!("{seed}:{port}"),
    };
    Ok(with_port.to_socket_addrs()?.collect())
}

/// How long a node whose address book holds addresses tries them before
/// it asks the DNS seeds, as Core's `ThreadDNSAddressSeed` does
/// (`src/net.cpp`): not at all with an empty book, 11 s with a few
/// addresses, 5 minutes with 1,000 or more; looking every 11 s meanwhile,
/// and not asking at all once [`ENOUGH_PEERS`] are connected.
pub fn seeds_wait(in_book: usize) -> Duration {
    match in_book {
        0 => Duration::ZERO,
        1..=999 => SEEDS_LOOK_EVERY,
        _ => Duration::from_secs(5 * 60),
    }
}

/// How often a node waiting to ask the seeds looks whether it still needs
/// to (Core's `DNSSEEDS_DELAY_FEW_PEERS`).
const SEEDS_LOOK_EVERY: Duration = Duration::from_secs(11);

/// Found peers connected that make asking the DNS seeds needless (Core's
/// `SEED_OUTBOUND_CONNECTION_THRESHOLD`).
pub const ENOUGH_PEERS: usize = 2;

/// The DNS seeds being asked (one thread each, as `getaddrinfo` blocks),
/// and the fixed seeds once none answered in time.
pub struct SeedLookup {
    answers: Receiver<(String, std::io::Result<Vec<SocketAddr>>)>,
    pending: usize,
    any_answered: bool,
    fixed: &'static [&'static str],
    fixed_at: Instant,
    /// The seeds, the port, when they are asked and when next looked at,
    /// while [`seeds_wait`] runs.
    waiting: Option<(Vec<String>, u16, Instant, Instant)>,
    sender: Sender<(String, std::io::Result<Vec<SocketAddr>>)>,
}

impl SeedLookup {
    /// Asks `seeds`, their addresses on `port`, after `wait` ([`seeds_wait`]).
    pub fn start(
        seeds: &[String],
        port: u16,
        fixed: &'static [&'static str],
        wait: Duration,
    ) -> SeedLookup {
        let (sender, answers) = channel();
        let now = Instant::now();
        let mut lookup = SeedLookup {
            answers,
            pending: 0,
            any_answered: false,
            fixed,
            fixed_at: now + wait + FIXED_SEEDS_AFTER,
            waiting: None,
            sender,
        };
        match wait.is_zero() {
            true => lookup.ask(seeds, port),
            false => {
                log::info!(
                    "bitcoin: trying the address book's peers for {}s before asking the DNS seeds",
                    wait.as_secs()
                );
                let look = now + wait.min(SEEDS_LOOK_EVERY);
                lookup.waiting = Some((seeds.to_vec(), port, now + wait, look));
            }
        }
        lookup
    }

    fn ask(&mut self, seeds: &[String], port: u16) {
        for seed in seeds {
            let (tx, name) = (self.sender.clone(), seed.clone());
            let spawned = std::thread::Builder::new()
                .name("dns-seed".into())
                .spawn(move || {
                    let got = resolve(&name, port);
                    let _ = tx.send((name, got));
                });
            match spawned {
                Ok(_) => self.pending += 1,
                Err(e) => log::warn!("bitcoin: DNS seed {seed} not asked: {e}"),
            }
        }
    }

    /// While the lookup waits ([`seeds_wait`]): with `connected` found
    /// peers connected at a look, whether the seeds are still needed;
    /// asks them once the wait is over.
    fn look(&mut self, now: Instant, connected: usize) {
        let Some((seeds, port, ask_at, look_at)) = self.waiting.take() else {
            return;
        };
        if now < look_at {
            self.waiting = Some((seeds, port, ask_at, look_at));
        } else if connected >= ENOUGH_PEERS {
            log::info!("bitcoin: {connected} peers from the address book connected: the DNS seeds are not asked");
            self.fixed = &[];
        } else if now >= ask_at {
            self.ask(&seeds, port);
        } else {
            let look_at = (look_at + SEEDS_LOOK_EVERY).min(ask_at);
            self.waiting = Some((seeds, port, ask_at, look_at));
        }
    }

    /// The addresses answered since the last call (not waiting), and the
    /// fixed seeds once, when no seed answered with an address in time;
    /// `connected`: the found peers connected now.
    pub fn poll(&mut self, connected: usize) -> Vec<(SocketAddr, bool)> {
        self.poll_at(Instant::now(), connected)
    }

    fn poll_at(&mut self, now: Instant, connected: usize) -> Vec<(SocketAddr, bool)> {
        self.look(now, connected);
        let mut out = Vec::new();
        for (seed, answer) in self.answers.try_iter() {
            self.pending -= 1;
            match answer {
                Ok(addrs) => {
                    let n = addrs.len();
                    log::info!("bitcoin: DNS seed {seed} answered {n} addresses");
                    self.any_answered |= n > 0;
                    out.extend(addrs.into_iter().map(|a| (a, false)));
                }
                Err(e) => log::warn!("bitcoin: DNS seed {seed} did not answer: {e}"),
            }
        }
        if !self.any_answered && !self.fixed.is_empty() && now >= self.fixed_at {
            log::info!(
                "bitcoin: no DNS seed answered within {}s: trying Bitcoin Core's {} fixed seeds",
                FIXED_SEEDS_AFTER.as_secs(),
                self.fixed.len()
            );
            out.extend(
                self.fixed
                    .iter()
                    .filter_map(|a| a.parse::<SocketAddr>().ok())
                    .map(|a| (a, true)),
            );
            self.fixed = &[];
        }
        out
    }

    /// Whether the fixed seeds may still be given (once, when no seed answered).
    pub fn fixed_left(&self) -> bool {
        !self.any_answered && !self.fixed.is_empty()
    }

    /// Whether some seed is still being asked, or waits to be.
    pub fn pending(&self) -> bool {
        self.pending > 0 || self.waiting.is_some()
    }
}

/// The network group an address counts in for [`PER_NETGROUP`]: its /16
/// (IPv4) or /32 (IPv6); `None` for loopback and private ranges, which
/// have no limit (the operator's own peers).
pub fn netgroup(addr: &SocketAddr) -> Option<[u8; 4]> {
    match addr.ip().to_canonical() {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            let local = v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || (o[0] == 100 && (o[1] & 0xc0) == 64);
            (!local).then_some([4, o[0], o[1], 0])
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let local = v6.is_loopback()
                || v6.is_unspecified()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80;
            let o = v6.octets();
            (!local).then_some([o[0], o[1], o[2], o[3]])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::bitcoin::p2p::sa;

    #[test]
    fn a_netgroup_is_a_slash_16_or_slash_32_and_local_ranges_have_none() {
        let group = |a: &str| netgroup(&sa(a));
        assert_eq!(group("1.2.3.4:8333"), group("1.2.200.9:1"));
        assert_ne!(group("1.2.3.4:8333"), group("1.3.3.4:8333"));
        assert_eq!(
            group("[2001:db8:1::1]:8333"),
            group("[2001:db8:ffff::2]:8333")
        );
        assert_ne!(group("[2001:db8::1]:8333"), group("[2001:db9::1]:8333"));
        for local in [
            "127.0.0.1:1",
            "10.0.0.1:1",
            "192.168.1.1:1",
            "172.16.0.1:1",
            "100.64.0.1:1",
            "[::1]:1",
            "[fd00::1]:1",
            "[::ffff:10.0.0.1]:1",
        ] {
            assert_eq!(group(local), None, "{local}");
        }
    }

    #[test]
    fn a_seed_takes_the_default_port_unless_it_names_one() {
        let got = resolve("localhost", 18444).unwrap();
        let loopback = |a: &SocketAddr| a.ip().is_loopback() && a.port() == 18444;
        assert!(got.iter().all(loopback));
        assert!(!got.is_empty());
        let resolves_to = |seed, port, addr| resolve(seed, port).unwrap().contains(&sa(addr));
        assert!(resolves_to("127.0.0.1:7", 18444, "127.0.0.1:7"));
        assert!(resolves_to("::1", 8333, "[::1]:8333"));
    }

    #[test]
    fn a_book_with_addresses_waits_for_them_and_skips_the_seeds_once_enough_connected() {
        assert_eq!(seeds_wait(0), Duration::ZERO);
        assert_eq!(seeds_wait(999), Duration::from_secs(11));
        assert_eq!(seeds_wait(1000), Duration::from_secs(300));
        let seeds = vec!["127.0.0.1:18444".to_string()];
        let fixed: &[&str] = &["1.2.3.4:8333"];
        let t0 = Instant::now();
        // Not asked while the wait runs, however few are connected.
        let mut l = SeedLookup::start(&seeds, 1, fixed, seeds_wait(999));
        assert!(l.poll_at(t0 + Duration::from_secs(10), 0).is_empty());
        assert!(l.pending() && l.pending == 0);
        // Enough at a look: never asked, and no fixed seeds later.
        assert!(l.poll_at(t0 + Duration::from_secs(12), 2).is_empty());
        assert!(!l.pending() && !l.fixed_left());
        assert!(l.poll_at(t0 + Duration::from_secs(600), 0).is_empty());
        // Too few at every look: asked once the wait is over.
        let mut l = SeedLookup::start(&seeds, 1, fixed, seeds_wait(1000));
        for s in [11, 22, 299] {
            assert!(l.poll_at(t0 + Duration::from_secs(s), 1).is_empty());
            assert_eq!(l.pending, 0, "not asked at {s}s");
        }
        let got = l.poll_at(t0 + Duration::from_secs(301), 1);
        // Asked: the answer is on its way, or came within that same poll
        // (the resolver's thread may answer before the poll looks).
        assert!(l.waiting.is_none(), "asked after 5 minutes");
        assert!(l.pending == 1 || !got.is_empty(), "{got:?}");
        // An empty book asks at once.
        let l = SeedLookup::start(&seeds, 1, fixed, seeds_wait(0));
        assert!(l.pending == 1 && l.waiting.is_none());
    }

    #[test]
    fn every_network_but_regtest_has_seeds_and_fixed_seeds_on_its_port() {
        for chain in BitcoinNetwork::ALL {
            let regtest = chain == BitcoinNetwork::Regtest;
            assert_eq!(dns_seeds(chain).is_empty(), regtest);
            assert_eq!(fixed_seeds(chain).is_empty(), regtest);
            for a in fixed_seeds(chain) {
                assert_eq!(sa(a).port(), default_port(chain), "{a}");
            }
        }
    }
}
