//! The set of peers (`--bitcoin-peer`, repeatable): connecting with back-off,
//! dropping by reason, and block downloads spread over the connected peers.
//!
//! A peer that fails (cannot be reached, breaks the protocol, stalls, sends
//! something false) is disconnected, its failure counted under its reason
//! ([`crate::progress::bitcoin_peers::DROP_REASONS`]), and it is tried again after a back-off
//! that doubles with each failure in a row (1 s up to [`MAX_BACKOFF`]); a
//! peer that delivers something checked starts afresh.
//!
//! A peer whose chain has less work than the best one is not a failure: it
//! stays connected, is asked for headers at each look (it may catch up),
//! and is asked for no block its own chain does not hold ([`PeerChain`]:
//! the caller says which peers may serve a download).
//!
//! [`PeerSet::fetch_blocks`] gives each peer that may serve a thread of its
//! own for the download: each takes heights from one shared queue, keeping up to
//! [`WINDOW`](super::download::WINDOW) blocks in flight, and checks each block as it arrives (on its
//! own thread, so peers' blocks are hashed in parallel). A peer that fails
//! mid-download puts the blocks it had in flight back on the queue, for the
//! others; the download ends when every block came, or fails when no
//! peer is left.

use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bitcoin::p2p::ServiceFlags;
use bitcoin::BlockHash;
use log::{debug, info, warn};

use crate::headers::HeaderTree;
use crate::ledger::LedgerError;
use crate::progress::Progress;
use crate::source::bitcoin::p2p::book::Source;
use crate::source::bitcoin::p2p::discover::Discovery;
use crate::source::bitcoin::p2p::download::{download, CheckBlock, Share};
use crate::source::bitcoin::p2p::peer::{Peer, PeerError, PeerOptions};
use crate::source::SourceError;

/// The longest back-off before a failed peer is tried again.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// What a connected peer's last answer to `getheaders` showed of its chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerChain {
    /// Not asked since it connected.
    Unknown,
    /// Its chain ends at this block of the best chain then (height, hash):
    /// it holds the best chain's blocks up to there.
    On(u64, BlockHash),
    /// Its chain ends on another branch, with less work than the best one
    /// (its last header's hash): none of its blocks above the fork is read.
    Branch(BlockHash),
}

impl PeerChain {
    /// The height up to which it holds the best chain `chain`'s blocks:
    /// where it ends, when that is still on the best chain.
    pub fn holds(self, chain: &HeaderTree) -> Option<u64> {
        match self {
            PeerChain::On(height, hash) if chain.hash_at(height).ok().flatten() == Some(hash) => {
                Some(height)
            }
            _ => None,
        }
    }
}

struct Slot {
    /// `HOST:PORT` as given, or the address found; empty: a free outbound slot.
    addr: String,
    /// A `--bitcoin-peer` (kept, retried after its back-off), else an
    /// outbound slot filled from the address book.
    manual: bool,
    /// The address connected to (the book's key).
    sock: Option<SocketAddr>,
    conn: Option<Peer>,
    /// What its headers showed (reset when it disconnects).
    chain: PeerChain,
    /// Since it was seen below the best chain's tip: when its chain counts
    /// as old, and that tip's height ([`old_chain`]).
    behind: Option<(Instant, u64)>,
    /// Failures in a row (the back-off's exponent).
    failures: u32,
    /// Not tried again before this.
    retry_at: Instant,
}

impl Slot {
    /// A slot for `addr`, not connected, due now.
    fn new(addr: &str, manual: bool) -> Slot {
        Slot {
            addr: addr.to_string(),
            manual,
            sock: None,
            conn: None,
            chain: PeerChain::Unknown,
            behind: None,
            failures: 0,
            retry_at: Instant::now(),
        }
    }
}

/// How long a found peer may stay below the best chain's tip before its
/// chain counts as old: Core's `CHAIN_SYNC_TIMEOUT` (20 min) and the
/// `HEADERS_RESPONSE_TIME` (2 min) it then gives a last `getheaders`.
pub const OLD_CHAIN_AFTER: Duration = Duration::from_secs(22 * 60);

/// Core's chain-sync timeout (`ConsiderEviction`, `src/net_processing.cpp`)
/// for an outbound peer whose chain ends at `height` on the best chain,
/// with the tip at `tip`; `behind` is its state. The first time it is seen
/// below the tip (or when it has reached the tip it was measured against,
/// but not the new one), it gets [`OLD_CHAIN_AFTER`] to reach this tip;
/// true once that passed and it has not: rotated out for another peer.
fn old_chain(behind: &mut Option<(Instant, u64)>, height: u64, tip: u64, now: Instant) -> bool {
    match *behind {
        _ if height >= tip => {
            *behind = None;
            false
        }
        Some((deadline, target)) if height < target => now > deadline,
        _ => {
            *behind = Some((now + OLD_CHAIN_AFTER, tip));
            false
        }
    }
}

/// `f` of each of `items`, each on a thread of its own, in order; a
/// thread that panicked answers so (`what`: the thread's job).
fn on_threads<T: Send, R: Send>(
    items: Vec<T>,
    what: &str,
    f: impl Fn(T) -> Result<R, PeerError> + Sync,
) -> Vec<Result<R, PeerError>> {
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .into_iter()
            .map(|item| s.spawn(move || f(item)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    let why = format!("the {what} thread panicked");
                    Err(PeerError::misbehaved("other", why))
                })
            })
            .collect()
    })
}

/// The peers (module docs).
pub struct PeerSet {
    slots: Vec<Slot>,
    options: PeerOptions,
    progress: Arc<Progress>,
    /// The address book and the outbound slots (`--bitcoin-p2p`).
    discovery: Option<Discovery>,
}

impl PeerSet {
    pub fn new(addrs: &[String], options: PeerOptions, progress: Arc<Progress>) -> PeerSet {
        progress.bitcoin.peers.set_addrs(addrs);
        PeerSet {
            slots: addrs.iter().map(|a| Slot::new(a, true)).collect(),
            options,
            progress,
            discovery: None,
        }
    }

    /// Adds the address book and `discovery.slots` outbound slots, filled
    /// from it ([`crate::source::bitcoin::p2p::discover`]).
    pub fn with_discovery(mut self, discovery: Discovery) -> Self {
        let n = discovery.slots;
        self.progress.bitcoin.peers.add_slots(n);
        self.slots.extend((0..n).map(|_| Slot::new("", false)));
        self.discovery = Some(discovery);
        self.note_book();
        self
    }

    /// Feeds the book (the seeds' answers, the connected peers' gossip)
    /// and fills the free outbound slots from it.
    fn fill_slots(&mut self) {
        let Some(d) = &mut self.discovery else {
            return;
        };
        let found = self.slots.iter().filter(|s| !s.manual && s.conn.is_some());
        d.poll_seeds(found.count());
        for s in &mut self.slots {
            if let Some(peer) = &mut s.conn {
                d.learn(&s.addr, peer.take_learned());
            }
        }
        let free: Vec<usize> = (0..self.slots.len())
            .filter(|i| !self.slots[*i].manual && self.slots[*i].addr.is_empty())
            .collect();
        if free.is_empty() {
            return;
        }
        let mut busy: HashSet<SocketAddr> = self.slots.iter().filter_map(|s| s.sock).collect();
        busy.extend(
            self.slots
                .iter()
                .filter(|s| s.manual)
                .filter_map(|s| s.addr.parse::<SocketAddr>().ok()),
        );
        let in_use: Vec<SocketAddr> = self
            .slots
            .iter()
            .filter(|s| !s.manual)
            .filter_map(|s| s.sock)
            .collect();
        let picked = d.pick(free.len(), &busy, &in_use);
        for (i, addr) in free.into_iter().zip(picked) {
            let origin = d.book.origin(&addr);
            let s = &mut self.slots[i];
            s.addr = addr.to_string();
            s.sock = Some(addr);
            s.retry_at = Instant::now();
            self.progress.bitcoin.peers.assign(i, &s.addr, origin);
        }
    }

    /// Shows the book's size in `/metrics`.
    fn note_book(&self) {
        if let Some(d) = &self.discovery {
            let p = &self.progress.bitcoin.peers;
            p.book_size.store(d.book.len() as u64, Relaxed);
            p.banned.store(d.book.banned() as u64, Relaxed);
        }
    }

    /// Writes the address book's changes (on the thread that owns the
    /// source, the ledger's one writer).
    pub fn save_book(&mut self) -> Result<(), LedgerError> {
        self.note_book();
        let discovery = self.discovery.as_mut();
        discovery.map_or(Ok(()), |d| d.book.save())
    }

    /// Rotates found peer `index` out for another from the book (its chain
    /// has less work than the best one): dropped under `less_work`, not
    /// banned. A `--bitcoin-peer` stays. Whether it was rotated out.
    pub fn rotate_out(&mut self, index: usize, why: &str) -> bool {
        let found = self.slots.get(index).is_some_and(|s| !s.manual);
        if found {
            self.fail(index, &PeerError::misbehaved("less_work", why));
        }
        found
    }

    /// The peers' addresses: those given, and those found so far.
    pub fn addrs(&self) -> Vec<&str> {
        let addrs = self.slots.iter().map(|s| s.addr.as_str());
        addrs.filter(|a| !a.is_empty()).collect()
    }

    /// Peer `index`'s address.
    pub fn addr(&self, index: usize) -> &str {
        &self.slots[index].addr
    }

    /// Connects every peer that is not connected and whose back-off has
    /// passed (in parallel: a peer that does not answer costs its connect
    /// bound once, not once per peer). Returns how many are connected.
    pub fn connect_due(&mut self) -> usize {
        self.fill_slots();
        let now = Instant::now();
        let due: Vec<usize> = (0..self.slots.len())
            .filter(|i| {
                let s = &self.slots[*i];
                s.conn.is_none() && s.retry_at <= now && !s.addr.is_empty()
            })
            .collect();
        let mut asks = Vec::with_capacity(due.len());
        for &i in &due {
            let slot = &self.slots[i];
            let mut options = self.options.clone();
            if let (Some(sock), Some(d)) = (slot.sock, &mut self.discovery) {
                d.book.attempt(&sock);
                // A found peer's transport by the services known of it; a
                // --bitcoin-peer's are unknown (v2 first).
                if !slot.manual {
                    options.services = Some(d.services(&sock));
                }
            }
            asks.push((slot.addr.clone(), options));
        }
        let results = on_threads(asks, "connecting", |(addr, options)| {
            Peer::connect(&addr, options)
        });
        for (i, result) in due.into_iter().zip(results) {
            let peer = match result {
                Ok(peer) => peer,
                Err(e) => {
                    self.fail(i, &e);
                    continue;
                }
            };
            let transport = peer.transport().as_str();
            if let Some(why) = &peer.fell_back {
                info!(
                    "bitcoin peer {}: {why}; connected again over v1, as Bitcoin Core does \
                     (--bitcoin-transport v2 would refuse it)",
                    self.slots[i].addr
                );
            }
            info!(
                "bitcoin peer {} connected ({transport}, {}, height {})",
                self.slots[i].addr, peer.user_agent, peer.start_height
            );
            let fell_back = peer.fell_back.is_some();
            self.progress
                .bitcoin
                .peers
                .connected_now(i, transport, fell_back);
            let slot = &mut self.slots[i];
            if let Some(d) = &mut self.discovery {
                if slot.manual {
                    d.book.learn(peer.addr(), Source::Flag, ServiceFlags::NONE);
                }
                d.book.success(&peer.addr(), peer.services);
            }
            slot.sock = Some(peer.addr());
            slot.conn = Some(peer);
        }
        self.connected()
    }

    /// How many peers are connected.
    pub fn connected(&self) -> usize {
        self.slots.iter().filter(|s| s.conn.is_some()).count()
    }

    /// The connected peers' indexes.
    pub fn connected_indexes(&self) -> Vec<usize> {
        (0..self.slots.len())
            .filter(|i| self.slots[*i].conn.is_some())
            .collect()
    }

    /// What peer `index`'s headers showed of its chain.
    pub fn chain(&self, index: usize) -> PeerChain {
        self.slots
            .get(index)
            .map_or(PeerChain::Unknown, |s| s.chain)
    }

    /// Records what peer `index`'s headers showed of its chain.
    pub fn set_chain(&mut self, index: usize, chain: PeerChain) {
        if let Some(s) = self.slots.get_mut(index) {
            if s.conn.is_some() {
                s.chain = chain;
            }
        }
    }

    /// Whether found peer `index`, whose chain ends at `height` on the best
    /// chain, has an old chain (Core's chain-sync timeout, [`OLD_CHAIN_AFTER`]) now that the tip is at `tip`.
    pub fn old_chain(&mut self, index: usize, height: u64, tip: u64) -> bool {
        match self.slots.get_mut(index) {
            Some(s) if !s.manual => old_chain(&mut s.behind, height, tip, Instant::now()),
            _ => false,
        }
    }

    /// Peer `index` delivered something checked: its back-off starts afresh.
    pub fn succeeded(&mut self, index: usize) {
        if let Some(s) = self.slots.get_mut(index) {
            s.failures = 0;
        }
    }

    /// Disconnects peer `index` for `error`: counted by reason (a failed
    /// connect is not a drop), logged, and retried after the back-off.
    pub fn fail(&mut self, index: usize, error: &PeerError) {
        let slot = &mut self.slots[index];
        let was_connected = slot.conn.take().is_some();
        slot.chain = PeerChain::Unknown;
        slot.behind = None;
        let backoff = Duration::from_secs(1u64 << slot.failures.min(6)).min(MAX_BACKOFF);
        slot.failures = slot.failures.saturating_add(1);
        slot.retry_at = Instant::now() + backoff;
        let why = format!("bitcoin peer {}: {error}", slot.addr);
        let peers = &self.progress.bitcoin.peers;
        let reason = error.reason();
        // A --bitcoin-peer is kept, never banned: in the book it failed to connect.
        let book_reason = if slot.manual { "connection" } else { reason };
        let banned = match (&mut self.discovery, slot.sock) {
            (Some(d), Some(sock)) => d.book.failed(&sock, book_reason),
            _ => false,
        };
        if was_connected {
            peers.dropped(index, reason, &why);
        }
        if !slot.manual {
            // A found peer: its slot is freed for another from the book.
            if banned {
                warn!("{why}; banned for 24 h");
                peers.banned_for(reason);
            } else if was_connected {
                info!("{why}; disconnected, another peer from the address book takes its place");
            } else {
                debug!("{why}");
            }
            slot.addr.clear();
            slot.sock = None;
            peers.assign(index, "", "");
        } else if was_connected {
            warn!("{why}; disconnected, tried again in {}s", backoff.as_secs());
        } else {
            if slot.failures == 1 {
                warn!("{why}; tried again in {}s", backoff.as_secs());
            } else {
                debug!("{why}; tried again in {}s", backoff.as_secs());
            }
            peers.unreachable(index, &why);
        }
    }

    /// Asks every connected peer the same thing at once (a thread each, so
    /// one that stalls costs one bound): each peer's index and answer. The
    /// caller decides what a failure means ([`PeerSet::fail`]).
    pub fn ask_all<R: Send>(
        &mut self,
        ask: impl Fn(&mut Peer) -> Result<R, PeerError> + Sync,
    ) -> Vec<(usize, Result<R, PeerError>)> {
        let mut taken: Vec<(usize, Peer)> = (0..self.slots.len())
            .filter_map(|i| self.slots[i].conn.take().map(|p| (i, p)))
            .collect();
        let answers: Vec<Result<R, PeerError>> = if taken.len() == 1 {
            vec![ask(&mut taken[0].1)]
        } else {
            let peers: Vec<&mut Peer> = taken.iter_mut().map(|(_, peer)| peer).collect();
            on_threads(peers, "asking", ask)
        };
        taken
            .into_iter()
            .zip(answers)
            .map(|((i, peer), answer)| {
                self.slots[i].conn = Some(peer);
                (i, answer)
            })
            .collect()
    }

    /// The blocks `wanted` (height, hash) from the peers `serving` (those
    /// whose chain holds them all: the caller knows the best chain), each
    /// passed through `check` (which says what is wrong with a block that
    /// does not match its header) and handed to `emit` with its index in
    /// `wanted`, in the order asked, each as soon as it and those before it
    /// are checked (so the caller can store them one by one while the rest
    /// download). `emit` returning false stops the download: the peers stop
    /// asking, read what they had in flight, and nothing more is emitted.
    /// Fails when none of the peers is left with blocks still missing.
    pub fn fetch_blocks<T: Send>(
        &mut self,
        wanted: &[(u64, BlockHash)],
        serving: &[usize],
        check: &CheckBlock<T>,
        emit: &mut dyn FnMut(usize, T) -> bool,
    ) -> Result<(), SourceError> {
        let queue: Mutex<VecDeque<usize>> = Mutex::new((0..wanted.len()).collect());
        let halt = AtomicBool::new(false);
        // Checked blocks that came before one asked earlier, till it comes.
        let mut waiting: Vec<Option<T>> = (0..wanted.len()).map(|_| None).collect();
        let mut next = 0;
        loop {
            if halt.load(Relaxed) || next == wanted.len() {
                return Ok(());
            }
            let workers: Vec<(usize, Peer)> = self
                .slots
                .iter_mut()
                .enumerate()
                .filter(|(i, _)| serving.contains(i))
                .filter_map(|(i, s)| s.conn.take().map(|p| (i, p)))
                .collect();
            if workers.is_empty() {
                return Err(self.none_usable());
            }
            let progress = &*self.progress;
            let (done, checked) = std::sync::mpsc::channel::<(usize, T)>();
            let outcomes: Vec<(usize, Peer, u64, Option<PeerError>)> = std::thread::scope(|s| {
                let handles: Vec<_> = workers
                    .into_iter()
                    .map(|(i, mut peer)| {
                        let (queue, halt, done) = (&queue, &halt, done.clone());
                        s.spawn(move || {
                            let share = Share {
                                wanted,
                                queue,
                                done,
                                check,
                                halt,
                                progress,
                            };
                            let (n, err) = download(&mut peer, share);
                            (i, peer, n, err)
                        })
                    })
                    .collect();
                drop(done);
                // In the order asked, as they are checked (on the calling thread).
                for (k, block) in checked {
                    if halt.load(Relaxed) {
                        continue;
                    }
                    waiting[k] = Some(block);
                    while let Some(block) = waiting.get_mut(next).and_then(Option::take) {
                        if !emit(next, block) {
                            halt.store(true, Relaxed);
                            break;
                        }
                        next += 1;
                    }
                }
                handles.into_iter().filter_map(|h| h.join().ok()).collect()
            });
            for (i, peer, fetched, err) in outcomes {
                self.slots[i].conn = Some(peer);
                if fetched > 0 {
                    self.progress.bitcoin.peers.fetched(i, fetched);
                    self.progress
                        .bitcoin
                        .blocks_fetched
                        .fetch_add(fetched, Relaxed);
                }
                match err {
                    Some(e) => self.fail(i, &e),
                    None if fetched > 0 => self.succeeded(i),
                    None => {}
                }
            }
            if !halt.load(Relaxed)
                && next < wanted.len()
                && queue.lock().map(|q| q.is_empty()).unwrap_or(true)
            {
                return Err(SourceError::bad_answer(
                    "a block asked of the peers is missing",
                ));
            }
        }
    }

    /// The error when no peer can be asked: why each is not usable.
    pub fn none_usable(&self) -> SourceError {
        let detail = self
            .progress
            .bitcoin
            .peers
            .snapshot()
            .into_iter()
            .filter_map(|p| p.problem)
            .collect::<Vec<_>>()
            .join("; ");
        SourceError::unreachable(
            if self.connected() == 0 {
                "no Bitcoin peer is reachable"
            } else {
                "no Bitcoin peer connected holds the best chain's blocks asked"
            },
            if detail.is_empty() {
                "none is connected on the best chain".to_string()
            } else {
                detail
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_below_the_tip_has_22_minutes_to_reach_it_and_a_new_tip_restarts_the_clock() {
        let t0 = Instant::now();
        let min = |m: u64| t0 + Duration::from_secs(m * 60);
        let mut behind = None;
        // First seen 5 below the tip at 100: not old, however long before 22 min.
        assert!(!old_chain(&mut behind, 95, 100, t0));
        assert!(!old_chain(&mut behind, 99, 101, min(21)));
        assert!(old_chain(&mut behind, 99, 101, min(23)), "still below 100");
        // It reached the tip it was measured against: a new clock, for 101.
        let mut behind = None;
        assert!(!old_chain(&mut behind, 95, 100, t0));
        assert!(!old_chain(&mut behind, 100, 101, min(21)));
        assert!(!old_chain(&mut behind, 100, 101, min(30)));
        assert!(old_chain(&mut behind, 100, 102, min(44)));
        // On the tip: the clock is gone.
        let mut behind = None;
        assert!(!old_chain(&mut behind, 95, 100, t0));
        assert!(!old_chain(&mut behind, 100, 100, min(10)));
        assert_eq!(behind, None);
        assert!(!old_chain(&mut behind, 99, 101, min(30)));
    }
}
