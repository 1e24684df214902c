//! One peer's share of a block download ([`PeerSet::fetch_blocks`](super::peers::PeerSet::fetch_blocks)): the
//! peer's thread reads its blocks (up to [`WINDOW`] in flight), and
//! [`CHECKERS`] threads beside it check each against its header as it
//! comes, so reading and hashing overlap.

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Mutex;

use bitcoin::block::Header;
use bitcoin::BlockHash;

use crate::progress::Progress;
use crate::source::bitcoin::block::BlockError;
use crate::source::bitcoin::p2p::message::checksum_matches;
use crate::source::bitcoin::p2p::peer::{Peer, PeerError};

/// How a download checks each block: its height, the hash the header chain
/// has there, its bytes; what it keeps of it, or what is wrong with it.
pub type CheckBlock<T> = dyn Fn(u64, &BlockHash, &[u8]) -> Result<T, BlockError> + Sync;

/// Blocks in flight per peer (Bitcoin Core serves one per message-loop pass).
pub const WINDOW: usize = 16;

/// Blocks read and waiting for the check, per peer: the peer's thread
/// reads (and, over v2, decrypts) the next block while others check the
/// last ones, so reading and hashing overlap on two cores; at most this
/// many raw blocks wait (4 MB each at most, a mainnet block 1.5-2 MB).
pub const CHECK_QUEUE: usize = 2;

/// Threads checking one peer's blocks: the check (hashing) is the larger
/// part of a block's cost, so two of them keep pace with a reader whose
/// block costs less to read than to check. With [`CHECK_QUEUE`], at most
/// 2 + 2 raw blocks wait or are checked besides the one being read (5 x
/// 4 MB at most).
pub const CHECKERS: usize = 2;

/// What one peer's share of a download works with (see [`PeerSet::fetch_blocks`](super::peers::PeerSet::fetch_blocks)).
pub(super) struct Share<'a, T> {
    pub(super) wanted: &'a [(u64, BlockHash)],
    /// The indexes (in `wanted`) no peer has asked for yet.
    pub(super) queue: &'a Mutex<VecDeque<usize>>,
    /// Checked blocks, by index, to the thread that emits them in order.
    pub(super) done: std::sync::mpsc::Sender<(usize, T)>,
    pub(super) check: &'a CheckBlock<T>,
    /// The caller wants no more blocks.
    pub(super) halt: &'a AtomicBool,
    pub(super) progress: &'a Progress,
}

/// A block read: its index in `wanted`, its bytes, and over v1 its message
/// checksum, not hashed yet.
type Read = (usize, Vec<u8>, Option<[u8; 4]>);

/// One peer's share of a download (see [`PeerSet::fetch_blocks`](super::peers::PeerSet::fetch_blocks)): how many
/// blocks it delivered, and why it stopped early, if it did. This thread
/// reads the blocks; [`CHECKERS`] others check them as they come.
///
/// A block that fails its check is refused and counted by Core's reason,
/// and drops the peer (`bad_block`), unless it came over v1 and its bytes
/// do not match the message's checksum: then they were damaged on the way
/// (or framed wrong), which is `malformed`, as a bad checksum always was
/// ([`crate::source::bitcoin::p2p::message`]).
pub(super) fn download<T: Send>(peer: &mut Peer, share: Share<'_, T>) -> (u64, Option<PeerError>) {
    let (wanted, queue, halt) = (share.wanted, share.queue, share.halt);
    // The first block that failed its check, and why.
    let failed: Mutex<Option<PeerError>> = Mutex::new(None);
    let (to_check, checking) = std::sync::mpsc::sync_channel::<Read>(CHECK_QUEUE);
    let checking = Mutex::new(checking);
    std::thread::scope(|s| {
        let checkers: Vec<_> = (0..CHECKERS)
            .map(|_| {
                let (checking, failed, done) = (&checking, &failed, share.done.clone());
                s.spawn(move || {
                    let (mut fetched, mut unchecked) = (0u64, Vec::new());
                    loop {
                        let next = checking.lock().map(|rx| rx.recv());
                        let Ok(Ok((i, raw, sum))) = next else { break };
                        if has_failed(failed) || halt.load(Relaxed) {
                            unchecked.push(i);
                            continue;
                        }
                        crate::os::give_way();
                        let (height, expected) = wanted[i];
                        match (share.check)(height, &expected, &raw) {
                            Ok(checked) => {
                                if done.send((i, checked)).is_err() {
                                    unchecked.push(i);
                                    continue;
                                }
                                fetched += 1;
                            }
                            Err(e) => {
                                let damaged = sum.is_some_and(|sum| !checksum_matches(&raw, sum));
                                let error = if damaged {
                                    PeerError::misbehaved(
                                        "malformed",
                                        "its \"block\" message does not match its checksum",
                                    )
                                } else {
                                    share.progress.bitcoin.peers.block_refused(e.reason());
                                    PeerError::misbehaved("bad_block", e.to_string())
                                };
                                if let Ok(mut f) = failed.lock() {
                                    f.get_or_insert(error);
                                }
                                unchecked.push(i);
                            }
                        }
                    }
                    (fetched, unchecked)
                })
            })
            .collect();
        drop(share.done);
        let read_error = read_blocks(peer, wanted, queue, &to_check, &failed, halt);
        drop(to_check);
        let mut fetched = 0;
        for checker in checkers {
            let (n, unchecked) = checker.join().unwrap_or_default();
            fetched += n;
            give_back(queue, unchecked.into_iter());
        }
        let failed = failed.lock().ok().and_then(|mut f| f.take());
        (fetched, failed.or(read_error))
    })
}

/// Puts `indexes` back at the front of `queue`, in their order, for the
/// peers to ask again.
fn give_back(queue: &Mutex<VecDeque<usize>>, indexes: impl DoubleEndedIterator<Item = usize>) {
    if let Ok(mut q) = queue.lock() {
        for i in indexes.rev() {
            q.push_front(i);
        }
    }
}

/// Whether a checker found a bad block (or its lock is poisoned).
pub(super) fn has_failed(failed: &Mutex<Option<PeerError>>) -> bool {
    match failed.lock() {
        Ok(f) => f.is_some(),
        Err(_) => true,
    }
}

/// The reading half of [`download`]: asks for blocks up to [`WINDOW`] in
/// flight and hands each to the checkers as it comes; stops at the first
/// error, or once a checker found a bad block, giving back the blocks in
/// flight. Once the caller wants no more (`halt`), it asks for none but
/// still reads those in flight (a block nobody asked for would break the
/// next exchange), handing none on.
pub(super) fn read_blocks(
    peer: &mut Peer,
    wanted: &[(u64, BlockHash)],
    queue: &Mutex<VecDeque<usize>>,
    to_check: &std::sync::mpsc::SyncSender<Read>,
    failed: &Mutex<Option<PeerError>>,
    halt: &AtomicBool,
) -> Option<PeerError> {
    let mut in_flight: VecDeque<usize> = VecDeque::with_capacity(WINDOW);
    let stop = |in_flight: &mut VecDeque<usize>, e: Option<PeerError>| {
        give_back(queue, in_flight.drain(..));
        e
    };
    loop {
        if has_failed(failed) {
            return stop(&mut in_flight, None);
        }
        let halted = halt.load(Relaxed);
        let mut ask = Vec::new();
        if let (false, Ok(mut q)) = (halted, queue.lock()) {
            while in_flight.len() < WINDOW {
                match q.pop_front() {
                    Some(i) => {
                        in_flight.push_back(i);
                        ask.push(wanted[i].1);
                    }
                    None => break,
                }
            }
        }
        if !ask.is_empty() {
            if let Err(e) = peer.request_blocks(&ask) {
                return stop(&mut in_flight, Some(e));
            }
        }
        if in_flight.is_empty() {
            return None;
        }
        crate::os::give_way();
        let (raw, sum) = match peer.next_block() {
            Ok(b) => b,
            Err(e) => return stop(&mut in_flight, Some(e)),
        };
        // The header's hash names the block (the check then holds the rest to it).
        let hash = match raw.get(..80).map(bitcoin::consensus::deserialize::<Header>) {
            Some(Ok(header)) => header.block_hash(),
            _ => {
                let why = format!(
                    "it sent a block of {} bytes, shorter than a header",
                    raw.len()
                );
                return stop(
                    &mut in_flight,
                    Some(PeerError::misbehaved("malformed", why)),
                );
            }
        };
        let Some(pos) = in_flight.iter().position(|i| wanted[*i].1 == hash) else {
            let why = format!("it sent block {hash}, which was not asked for");
            return stop(&mut in_flight, Some(PeerError::misbehaved("protocol", why)));
        };
        let i = in_flight.remove(pos).unwrap_or(pos);
        if halt.load(Relaxed) {
            give_back(queue, std::iter::once(i));
            continue;
        }
        if to_check.send((i, raw, sum)).is_err() {
            in_flight.push_front(i);
            let why = "the checking threads stopped";
            return stop(&mut in_flight, Some(PeerError::misbehaved("other", why)));
        }
    }
}
