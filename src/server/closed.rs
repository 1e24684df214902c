//! The loop's memory of connections it has closed after an answer.
//!
//! tiny_http reads ahead: requests pipelined behind a closing answer may
//! already be parsed and queued, and reach the loop afterwards. They come
//! from the same peer address *and* the same socket (inode); a new
//! connection from a reused port has a new socket and is served. The loop
//! asks [`ClosedConns::is_after_close`] before handling a request, and
//! [`ClosedConns::which`] before closing a peer's sockets by address.

use std::collections::HashMap;
use std::net::{Shutdown, SocketAddr};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use super::fds::{FdTable, HeldSocket, Which};

/// Sends FIN after what is queued on each socket: whatever tiny_http writes
/// next on the connection goes nowhere. The tracker (`close_tx`) finishes
/// the close.
fn shut_and_hand_over(sockets: Vec<HeldSocket>, close_tx: &Sender<Vec<HeldSocket>>) {
    for s in &sockets {
        s.shutdown(Shutdown::Write);
    }
    // The tracker is gone only when the server stops: nothing left to finish.
    let _ = close_tx.send(sockets);
}

fn inodes(sockets: &[HeldSocket]) -> Vec<u64> {
    sockets.iter().map(|s| s.inode()).collect()
}

/// A connection the loop has closed (or is closing) after an answer.
struct Closed {
    at: Instant,
    inodes: Vec<u64>,
}

/// A [`Closed`] entry older than this is forgotten (a request from it after
/// that would be handled, and its answer fail on the shut socket).
const CLOSED_KEEP: Duration = Duration::from_secs(30);
/// More entries than this and the old ones are pruned.
const CLOSED_PRUNE_AT: usize = 256;
/// Hard cap on entries: over it, all are forgotten (fail open, as above).
const CLOSED_MAX: usize = 8192;

/// Connections closed after an answer, by peer.
#[derive(Default)]
pub(super) struct ClosedConns {
    by_peer: HashMap<SocketAddr, Closed>,
}

impl ClosedConns {
    /// Whether `peer` has a connection the loop closed.
    pub(super) fn contains(&self, peer: &SocketAddr) -> bool {
        self.by_peer.contains_key(peer)
    }

    /// Whether a request from `peer` comes from a connection the loop has
    /// already closed after an answer, so it is dropped. Scans
    /// /proc/self/fd (through `fds`), so only for peers with an entry.
    ///
    /// Yes unless `peer` now has another socket: a new connection from the
    /// same address and port (the closed socket itself may no longer be
    /// found by its peer address: getpeername fails once the client has
    /// closed too). While the closed socket also still exists, the request
    /// may be either one's: it is handled, and the entry kept, so that no
    /// socket of `peer` is closed by address meanwhile ([`ClosedConns::which`]).
    /// A request from the closed connection then gets an answer that cannot
    /// be sent (its write side is shut).
    pub(super) fn is_after_close(
        &mut self,
        fds: &mut FdTable,
        local: SocketAddr,
        peer: SocketAddr,
    ) -> bool {
        let Some(closed) = self.by_peer.get(&peer) else {
            return false;
        };
        if closed.at.elapsed() >= CLOSED_KEEP {
            self.by_peer.remove(&peer);
            return false;
        }
        let fresh = fds
            .sockets_of(local, peer)
            .iter()
            .any(|(_, ino)| !closed.inodes.contains(ino));
        if !fresh {
            return true;
        }
        // (sockets_of has just rescanned the fd table.)
        if !fds.has_any(&closed.inodes) {
            self.by_peer.remove(&peer);
        }
        false
    }

    /// Which sockets of `peer` belong to a request being answered now: all
    /// of them, except those of a connection already closed from the same
    /// address.
    pub(super) fn which(&self, peer: SocketAddr) -> Which {
        let closed = self.by_peer.get(&peer);
        closed.map_or(Which::All, |c| Which::Except(c.inodes.clone()))
    }

    /// Exactly the sockets of `peer`'s closed connection (none if it has
    /// none): for a request that came from it.
    pub(super) fn only(&self, peer: SocketAddr) -> Which {
        let closed = self.by_peer.get(&peer);
        Which::Only(closed.map_or(Vec::new(), |c| c.inodes.clone()))
    }

    /// Remembers that `peer`'s connection (these sockets) is being closed.
    /// Closes the connection of an answer written on the loop, before its
    /// writer is released: its sockets (those [`ClosedConns::which`] allows)
    /// are found in /proc/self/fd while the writer still holds them open,
    /// shut, remembered as closed, and handed to the tracker.
    pub(super) fn close_now(
        &mut self,
        fds: &mut FdTable,
        (local, peer): (SocketAddr, SocketAddr),
        close_tx: &Sender<Vec<HeldSocket>>,
    ) {
        let which = self.which(peer);
        let sockets = fds.hold_sockets_which(local, peer, &which);
        self.mark(peer, inodes(&sockets));
        shut_and_hand_over(sockets, close_tx);
    }

    /// The close an off-loop writer runs before it releases the connection
    /// (`before_release` of `write::spawn_off_loop`, told whether the answer
    /// went out whole).
    /// With `close`, the sockets are held now, while the request surely
    /// holds the socket open, and remembered as closed. Without, they are
    /// closed only after a failed write, and by address only if the address
    /// names no connection closed before (see `is_after_close`).
    pub(super) fn close_after_write(
        &mut self,
        fds: &mut FdTable,
        (local, peer): (SocketAddr, SocketAddr),
        close: bool,
        close_tx: Sender<Vec<HeldSocket>>,
    ) -> Box<dyn FnOnce(bool) + Send> {
        let which = self.which(peer);
        let held = if close {
            let sockets = fds.hold_sockets_which(local, peer, &which);
            self.mark(peer, inodes(&sockets));
            Some(sockets)
        } else {
            None
        };
        let close_on_failure = matches!(which, Which::All);
        Box::new(move |ok| {
            let sockets = match held {
                Some(sockets) => sockets,
                None if !ok && close_on_failure => {
                    FdTable::default().hold_sockets_which(local, peer, &Which::All)
                }
                None => return,
            };
            shut_and_hand_over(sockets, &close_tx);
        })
    }

    pub(super) fn mark(&mut self, peer: SocketAddr, inodes: Vec<u64>) {
        if inodes.is_empty() {
            return;
        }
        let now = Instant::now();
        if self.by_peer.len() >= CLOSED_PRUNE_AT {
            self.by_peer
                .retain(|_, c| now.duration_since(c.at) < CLOSED_KEEP);
            if self.by_peer.len() >= CLOSED_MAX {
                self.by_peer.clear();
            }
        }
        let entry = self.by_peer.entry(peer).or_insert(Closed {
            at: now,
            inodes: Vec::new(),
        });
        entry.at = now;
        for ino in inodes {
            if !entry.inodes.contains(&ino) {
                entry.inodes.push(ino);
            }
        }
    }
}
