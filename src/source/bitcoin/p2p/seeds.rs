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
use std::sync::mpsc::{channel, Receiver, TryRecvError};
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

/// The DNS seeds being asked (one thread each, as `getaddrinfo` blocks),
/// and the fixed seeds once none answered in time.
pub struct SeedLookup {
    answers: Receiver<(String, std::io::Result<Vec<SocketAddr>>)>,
    pending: usize,
    any_answered: bool,
    fixed: &'static [&'static str],
    fixed_at: Instant,
}

impl SeedLookup {
    /// Starts asking `seeds`, their addresses on `port`.
    pub fn start(seeds: &[String], port: u16, fixed: &'static [&'static str]) -> SeedLookup {
        let (tx, answers) = channel();
        let mut pending = 0;
        for seed in seeds {
            let (tx, name) = (tx.clone(), seed.clone());
            let spawned = std::thread::Builder::new()
                .name("dns-seed".into())
                .spawn(move || {
                    let got = resolve(&name, port);
                    let _ = tx.send((name, got));
                });
            match spawned {
                Ok(_) => pending += 1,
                Err(e) => log::warn!("bitcoin: DNS seed {seed} not asked: {e}"),
            }
        }
        SeedLookup {
            answers,
            pending,
            any_answered: false,
            fixed,
            fixed_at: Instant::now() + FIXED_SEEDS_AFTER,
        }
    }

    /// The addresses answered since the last call (not waiting), and the
    /// fixed seeds once, when no seed answered with an address in time.
    pub fn poll(&mut self) -> Vec<(SocketAddr, bool)> {
        let mut out = Vec::new();
        loop {
            match self.answers.try_recv() {
                Ok((seed, Ok(addrs))) => {
                    self.pending -= 1;
                    log::info!(
                        "bitcoin: DNS seed {seed} answered {} addresses",
                        addrs.len()
                    );
                    self.any_answered |= !addrs.is_empty();
                    out.extend(addrs.into_iter().map(|a| (a, false)));
                }
                Ok((seed, Err(e))) => {
                    self.pending -= 1;
                    log::warn!("bitcoin: DNS seed {seed} did not answer: {e}");
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        if !self.any_answered && !self.fixed.is_empty() && Instant::now() >= self.fixed_at {
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

    /// Whether some seed is still being asked.
    pub fn pending(&self) -> bool {
        self.pending > 0
    }
}

/// The network group an address counts in for [`PER_NETGROUP`]: its /16
/// (IPv4) or /32 (IPv6); `None` for loopback and private ranges, which
/// have no limit (the operator's own peers).
pub fn netgroup(addr: &SocketAddr) -> Option<[u8; 4]> {
    let ip = match addr.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    };
    match ip {
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

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_netgroup_is_a_slash_16_or_slash_32_and_local_ranges_have_none() {
        assert_eq!(netgroup(&sa("1.2.3.4:8333")), netgroup(&sa("1.2.200.9:1")));
        assert_ne!(netgroup(&sa("1.2.3.4:8333")), netgroup(&sa("1.3.3.4:8333")));
        assert_eq!(
            netgroup(&sa("[2001:db8:1::1]:8333")),
            netgroup(&sa("[2001:db8:ffff::2]:8333"))
        );
        assert_ne!(
            netgroup(&sa("[2001:db8::1]:8333")),
            netgroup(&sa("[2001:db9::1]:8333"))
        );
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
            assert_eq!(netgroup(&sa(local)), None, "{local}");
        }
    }

    #[test]
    fn a_seed_takes_the_default_port_unless_it_names_one() {
        let mut got = resolve("localhost", 18444).unwrap();
        got.sort();
        assert!(got
            .iter()
            .all(|a| a.ip().is_loopback() && a.port() == 18444));
        assert!(!got.is_empty());
        assert!(resolve("127.0.0.1:7", 18444)
            .unwrap()
            .contains(&sa("127.0.0.1:7")));
        assert!(resolve("::1", 8333).unwrap().contains(&sa("[::1]:8333")));
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
