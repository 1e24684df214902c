//! The peers' state, and bitcoind's beside them, shared with `/health` and
//! `/metrics`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};

use super::latest;

/// Every `BlockError::reason` (`source::bitcoin::block`), the `reason` label of
/// `ledgerd_bitcoin_blocks_refused_total`.
pub const BLOCK_REFUSALS: [&str; 8] = [
    "undecodable",
    "bad-blk-hash",
    "high-hash",
    "bad-txnmrklroot",
    "bad-txns-duplicate",
    "bad-witness-nonce-size",
    "bad-witness-merkle-match",
    "unexpected-witness",
];

/// Why a peer was disconnected: the `reason` label of
/// `ledgerd_bitcoin_peers_dropped_total`.
pub const DROP_REASONS: [&str; 11] = [
    // Could not connect, or the connection broke.
    "connection",
    // Sent nothing asked for within the bound.
    "stalled",
    // Spoke another network's magic.
    "wrong_network",
    // Announced a message above the 4,000,000-byte cap, or too many headers.
    "oversized",
    // A message that does not decode, or a bad checksum.
    "malformed",
    // Broke the protocol (a second version, no witness service, an unasked block).
    "protocol",
    // Did not have a block it was asked for.
    "not_found",
    // Sent a header that breaks a header-chain rule.
    "bad_header",
    // Sent a block that does not match its header: mutated (Merkle root,
    // a duplicated transaction, witnesses stripped or changed: Core
    // disconnects for these too), or another block than asked, or one
    // below its own target; `ledgerd_bitcoin_blocks_refused_total` counts
    // the blocks by Core's reject reason.
    "bad_block",
    // A found peer (not a --bitcoin-peer) whose chain has less work than
    // the best one: rotated out for another from the address book.
    "less_work",
    // Anything else.
    "other",
];

/// The drop reasons that ban a found peer for 24 h (the address book's):
/// the peer's fault, not the network's. The `reason` label of
/// `ledgerd_bitcoin_peers_banned_total`.
pub const BAN_REASONS: [&str; 6] = [
    "wrong_network",
    "oversized",
    "malformed",
    "protocol",
    "bad_header",
    "bad_block",
];

/// One peer as `/health` shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerState {
    /// `HOST:PORT` as given, or the address found; empty: a free
    /// outbound slot (not shown).
    pub addr: String,
    /// Where it came from: `flag`, `dns`, `addr`, or `book` (in the
    /// address book at start).
    pub source: &'static str,
    pub connected: bool,
    /// Blocks it sent that passed their checks, since start.
    pub blocks_fetched: u64,
    /// Why it was last dropped or could not be reached (cleared on connect),
    /// or, while [`PeerState::behind`], why it is behind.
    pub problem: Option<String>,
    /// Connected, but its chain has less work than the best one (another
    /// branch, or not up to the best tip): asked for headers at each look,
    /// for no block beyond its own chain's tip.
    pub behind: bool,
    /// While connected: the transport it speaks, `v1` or `v2` (BIP324).
    pub transport: Option<&'static str>,
}

/// The P2P source's peers (`--bitcoin-peer`; empty without it).
#[derive(Debug, Default)]
pub struct PeersStatus {
    /// One entry per `--bitcoin-peer`, in the order given, then one per
    /// outbound slot of found peers.
    pub peers: Mutex<Vec<PeerState>>,
    /// Whether Bitcoin is read over P2P (set at start).
    pub enabled: AtomicBool,
    /// Addresses in the address book, and how many of them are banned now.
    pub book_size: AtomicU64,
    pub banned: AtomicU64,
    /// Peers banned since start, by [`BAN_REASONS`] index.
    pub bans: [AtomicU64; BAN_REASONS.len()],
    /// Peers dropped, by [`DROP_REASONS`] index.
    pub dropped: [AtomicU64; DROP_REASONS.len()],
    /// Blocks refused as not matching their header, whoever sent them (a
    /// peer, or bitcoind beside the peers), by [`BLOCK_REFUSALS`] index
    /// (Bitcoin Core's reject reasons).
    pub blocks_refused: [AtomicU64; BLOCK_REFUSALS.len()],
    /// Connections on which `--bitcoin-transport auto` gave up v2 (the
    /// peer hung up on the handshake without a word) and spoke v1.
    pub v1_fallbacks: AtomicU64,
}

impl PeersStatus {
    /// Sets the peers' addresses, at start.
    pub fn set_addrs(&self, addrs: &[String]) {
        self.enabled.store(true, Relaxed);
        if let Ok(mut p) = self.peers.lock() {
            *p = addrs
                .iter()
                .map(|a| PeerState {
                    addr: a.clone(),
                    source: "flag",
                    ..PeerState::default()
                })
                .collect();
        }
    }

    /// Adds `n` free outbound slots (after the `--bitcoin-peer`s).
    pub fn add_slots(&self, n: usize) {
        self.enabled.store(true, Relaxed);
        if let Ok(mut p) = self.peers.lock() {
            p.extend((0..n).map(|_| PeerState::default()));
        }
    }

    /// Outbound slot `index` is to connect to `addr`, found from `source`
    /// (empty: freed).
    pub fn assign(&self, index: usize, addr: &str, source: &'static str) {
        self.with(index, |s| {
            *s = PeerState {
                addr: addr.to_string(),
                source,
                ..PeerState::default()
            }
        });
    }

    /// Whether this node reads Bitcoin from peers.
    pub fn any(&self) -> bool {
        self.enabled.load(Relaxed)
    }

    /// A copy of every peer's state, free slots included (by index).
    pub fn snapshot(&self) -> Vec<PeerState> {
        self.peers.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// The peers to show: every one but the free slots.
    pub fn shown(&self) -> Vec<PeerState> {
        let all = self.snapshot().into_iter();
        all.filter(|p| !p.addr.is_empty()).collect()
    }

    /// A peer was banned for `reason`.
    pub fn banned_for(&self, reason: &str) {
        bump(&BAN_REASONS, &self.bans, reason);
    }

    /// The connected peers by source and transport, sorted.
    pub fn connections(&self) -> Vec<((&'static str, &'static str), u64)> {
        let mut by: std::collections::BTreeMap<(&'static str, &'static str), u64> =
            Default::default();
        for p in self.shown().iter().filter(|p| p.connected) {
            *by.entry((p.source, p.transport.unwrap_or("v1")))
                .or_default() += 1;
        }
        by.into_iter().collect()
    }

    /// How many connected peers speak `transport` (`v1`, `v2`).
    pub fn connected_by_transport(&self, transport: &str) -> usize {
        self.how_many(|s| s.connected && s.transport == Some(transport))
    }

    /// How many peers (free slots included) are as `is` asks.
    fn how_many(&self, is: impl Fn(&PeerState) -> bool) -> usize {
        let peers = self.peers.lock();
        peers.map_or(0, |p| p.iter().filter(|s| is(s)).count())
    }

    /// A block was refused for `reason` (one of [`BLOCK_REFUSALS`]).
    pub fn block_refused(&self, reason: &str) {
        bump(&BLOCK_REFUSALS, &self.blocks_refused, reason);
    }

    fn with(&self, index: usize, f: impl FnOnce(&mut PeerState)) {
        if let Ok(mut p) = self.peers.lock() {
            if let Some(s) = p.get_mut(index) {
                f(s);
            }
        }
    }

    /// Peer `index` is connected, speaking `transport` (`v1`, `v2`);
    /// `fell_back`: over v1 after its v2 handshake got no answer.
    pub fn connected_now(&self, index: usize, transport: &'static str, fell_back: bool) {
        if fell_back {
            self.v1_fallbacks.fetch_add(1, Relaxed);
        }
        self.with(index, |s| {
            s.connected = true;
            s.transport = Some(transport);
            s.problem = None;
            s.behind = false;
        });
    }

    /// Peer `index` is behind the best chain (`Some(why)`), or no longer.
    pub fn set_behind(&self, index: usize, why: Option<&str>) {
        self.with(index, |s| {
            if s.behind || why.is_some() {
                s.problem = why.map(str::to_string);
            }
            s.behind = why.is_some();
        });
    }

    /// Peer `index` could not be connected to (not counted as a drop).
    pub fn unreachable(&self, index: usize, why: &str) {
        self.with(index, |s| {
            s.connected = false;
            s.transport = None;
            s.behind = false;
            s.problem = Some(why.to_string());
        });
    }

    /// Peer `index` was dropped under `reason`, for `why`.
    pub fn dropped(&self, index: usize, reason: &str, why: &str) {
        let i = DROP_REASONS
            .iter()
            .position(|r| *r == reason)
            .unwrap_or(DROP_REASONS.len() - 1);
        self.dropped[i].fetch_add(1, Relaxed);
        self.unreachable(index, why);
    }

    /// Peer `index` sent `n` more checked blocks.
    pub fn fetched(&self, index: usize, n: u64) {
        self.with(index, |s| s.blocks_fetched += n);
    }
}

/// Adds one to the counter of `label` (one of `labels`; another: none).
pub(super) fn bump(labels: &[&str], counters: &[AtomicU64], label: &str) {
    if let Some(i) = labels.iter().position(|l| *l == label) {
        counters[i].fetch_add(1, Relaxed);
    }
}

/// The counter of `label` (one of `labels`; another: 0).
pub(super) fn count(labels: &[&str], counters: &[AtomicU64], label: &str) -> u64 {
    labels
        .iter()
        .position(|l| *l == label)
        .map_or(0, |i| counters[i].load(Relaxed))
}

/// bitcoind's RPC read beside the peers (`--bitcoin-rpc` with
/// `--bitcoin-peer`; unset otherwise). With `--bitcoin-rpc` alone,
/// bitcoind is the whole source and [`crate::progress::BitcoinProgress`]
/// itself shows it.
#[derive(Debug, Default)]
pub struct BitcoindStatus {
    /// Its URL, without credentials; set once at start.
    pub url: OnceLock<String>,
    /// Whether its last call got an answer.
    pub reachable: AtomicBool,
    /// Why its last call failed, or why its chain is not read.
    pub problem: latest::Latest<String>,
    /// Its chain has less work than the best one (another branch, or not up
    /// to the best tip): asked for no block beyond its own chain's tip.
    pub behind: AtomicBool,
    /// Blocks it sent that passed their checks, since start.
    pub blocks_fetched: AtomicU64,
}

impl BitcoindStatus {
    /// Whether bitcoind is read beside the peers.
    pub fn any(&self) -> bool {
        self.url.get().is_some()
    }

    /// bitcoind answered.
    pub fn answered(&self) {
        self.reachable.store(true, Relaxed);
        self.problem.set(None);
    }

    /// bitcoind could not be asked (`reachable`: it answered, but not what
    /// was wanted), and why.
    pub fn failed(&self, reachable: bool, why: &str) {
        self.reachable.store(reachable, Relaxed);
        self.problem.set(Some(why.to_string()));
    }

    /// Why it fails or is not read, if it is not.
    pub fn problem(&self) -> Option<String> {
        self.problem.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two peers, both connected.
    fn two_connected() -> PeersStatus {
        let s = PeersStatus::default();
        s.set_addrs(&["a:1".into(), "b:2".into()]);
        s.connected_now(0, "v1", false);
        s.connected_now(1, "v1", false);
        s
    }

    /// How many peers are connected, and how many of those are behind.
    fn connected_and_behind(s: &PeersStatus) -> (usize, usize) {
        (
            s.how_many(|p| p.connected),
            s.how_many(|p| p.connected && p.behind),
        )
    }

    #[test]
    fn a_drop_is_counted_under_its_reason_and_an_unknown_one_under_other() {
        let s = two_connected();
        assert_eq!(connected_and_behind(&s).0, 2);
        s.dropped(1, "bad_block", "its block does not match its header");
        s.dropped(0, "no such reason", "why");
        assert_eq!(connected_and_behind(&s).0, 0);
        let dropped =
            |r| s.dropped[DROP_REASONS.iter().position(|x| *x == r).unwrap()].load(Relaxed);
        assert_eq!(dropped("bad_block"), 1);
        assert_eq!(dropped("other"), 1);
        assert_eq!(
            s.snapshot()[1].problem.as_deref(),
            Some("its block does not match its header")
        );
    }

    #[test]
    fn a_peer_behind_stays_connected_is_counted_and_is_cleared_when_it_catches_up() {
        let s = two_connected();
        s.set_behind(1, Some("its chain has less work"));
        assert_eq!(connected_and_behind(&s), (2, 1));
        assert_eq!(
            s.snapshot()[1].problem.as_deref(),
            Some("its chain has less work")
        );
        s.set_behind(1, None);
        assert_eq!(connected_and_behind(&s), (2, 0));
        assert_eq!(s.snapshot()[1].problem, None);
        // Not behind: a drop's problem stays.
        s.dropped(0, "stalled", "it answered nothing");
        s.set_behind(0, None);
        assert_eq!(
            s.snapshot()[0].problem.as_deref(),
            Some("it answered nothing")
        );
        assert_eq!(connected_and_behind(&s).1, 0);
    }
}
