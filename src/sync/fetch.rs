//! The fetch machinery both parts of a pass share: ranges cut into chunks,
//! fetched on a fetch thread up to a depth ahead while the sync thread
//! verifies and writes what arrived through a [`Sink`].

use std::sync::mpsc::{RecvTimeoutError, SyncSender, TrySendError};
use std::time::Instant;

use super::SyncError;
use crate::source::SourceError;
use crate::stop::Stop;
use crate::types::{DaSlot, SoftConfirmation};

/// Whether the consumer of fetched items wants more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flow {
    More,
    /// Commit what is in the transaction and stop this pass (a failure is
    /// returned as an error instead).
    Stop,
}

/// `next..=last` cut into ranges of `chunk`.
pub(super) struct ChunkRanges {
    pub(super) next: u64,
    pub(super) last: u64,
    pub(super) chunk: u64,
}

impl Iterator for ChunkRanges {
    type Item = (u64, u64);
    fn next(&mut self) -> Option<(u64, u64)> {
        if self.next > self.last {
            return None;
        }
        let to = self.last.min(self.next.saturating_add(self.chunk - 1));
        let range = (self.next, to);
        self.next = to + 1;
        Some(range)
    }
}

/// Something fetched with how far it reached, so the fetcher knows where
/// to ask next (a source may answer a shorter prefix than asked).
pub(super) trait Reach {
    /// The last height (or slot) in this answer; `None` when it is empty.
    fn reach(&self) -> Option<u64>;
}

impl Reach for Vec<SoftConfirmation> {
    fn reach(&self) -> Option<u64> {
        self.last().map(|b| b.l2_height)
    }
}

impl Reach for Vec<DaSlot> {
    fn reach(&self) -> Option<u64> {
        self.last().map(|s| s.number)
    }
}

/// What the fetch thread may check of an answer while the sync thread is
/// behind (the queue of answers is full): a share of the sync thread's own
/// checks, recorded in the answer so that the sync thread skips them with
/// the same verdict. So the fetch thread's waits become checks, and the
/// two threads share the work as their speeds allow, with no third busy
/// thread beside the server's.
pub(super) trait CheckAhead {
    /// Checks a little more (a few signatures, well under a millisecond);
    /// false once there is nothing more it may check.
    fn check_more(&mut self) -> bool {
        false
    }
}

impl CheckAhead for Vec<DaSlot> {}

/// Takes what a fetch thread fetched: verifies and writes it inside one
/// open write transaction that it commits now and then, and at the end.
pub(super) trait Sink<T> {
    /// Verifies and writes one answer. A failure is returned after what
    /// verified before it is written (and later committed).
    fn take(&mut self, item: T) -> Result<Flow, SyncError>;
    /// Commits the open write transaction, if any, and publishes progress.
    fn commit(&mut self) -> Result<(), SyncError>;
    /// When the open write transaction is to be committed if nothing more
    /// arrives by then (`None`: none is open).
    fn due(&self) -> Option<Instant>;
}

/// Fetches `ranges` from `source` on a fetch thread, up to `depth` answers
/// ahead, while the calling thread verifies and writes them through `sink`.
/// With a depth of 0, or a single range, everything runs on the calling
/// thread. What verified before a failure is committed.
///
/// What was written is committed once the sink says it is due (100 ms
/// after the transaction opened) and nothing more has arrived: behind a
/// slow source a verified chunk is stored while the next is still on its
/// way, not when it arrives.
///
/// The fetch thread stops as soon as the sink stops taking (a failure, or
/// a slot to come back to), or on `stop`; nothing it fetched beyond that is
/// used.
pub(super) fn fetch_ahead<S, T, F>(
    source: &mut S,
    mut ranges: ChunkRanges,
    stop: &Stop,
    depth: usize,
    mut fetch: F,
    sink: &mut impl Sink<T>,
) -> Result<(), SyncError>
where
    S: Send,
    T: Reach + CheckAhead + Send,
    F: FnMut(&mut S, (u64, u64)) -> Result<T, SourceError> + Send,
{
    fn consume<T: Reach>(
        sink: &mut impl Sink<T>,
        item: Result<T, SourceError>,
    ) -> Result<Flow, SyncError> {
        let item = item?;
        if item.reach().is_none() {
            return Ok(Flow::Stop);
        }
        sink.take(item)
    }
    let outcome = if depth == 0 || ranges.last - ranges.next < ranges.chunk {
        let mut outcome = Ok(());
        while let Some(range) = ranges.next() {
            if stop.is_stopped() {
                break;
            }
            if sink.due().is_some_and(|due| Instant::now() >= due) {
                if let Err(e) = sink.commit() {
                    outcome = Err(e);
                    break;
                }
            }
            let fetched = fetch(source, range);
            let reach = fetched.as_ref().ok().and_then(Reach::reach);
            match consume(&mut *sink, fetched) {
                Ok(Flow::More) => {}
                Ok(Flow::Stop) => break,
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
            // Ask next from just above what was answered.
            if let Some(n) = reach {
                ranges.next = n + 1;
            }
        }
        outcome
    } else {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<T, SourceError>>(depth);
        std::thread::scope(|s| {
            s.spawn(move || {
                while let Some(range) = ranges.next() {
                    if stop.is_stopped() {
                        break;
                    }
                    let fetched = fetch(source, range);
                    let reach = fetched.as_ref().ok().and_then(Reach::reach);
                    if !hand_over(&tx, fetched) {
                        break;
                    }
                    match reach {
                        Some(n) => ranges.next = n + 1,
                        None => break,
                    }
                }
            });
            let mut outcome = Ok(());
            loop {
                let fetched = match sink.due() {
                    None => match rx.recv() {
                        Ok(fetched) => fetched,
                        Err(_) => break,
                    },
                    Some(due) => {
                        match rx.recv_timeout(due.saturating_duration_since(Instant::now())) {
                            Ok(fetched) => fetched,
                            // Nothing more yet: store what verified meanwhile.
                            Err(RecvTimeoutError::Timeout) => match sink.commit() {
                                Ok(()) => continue,
                                Err(e) => {
                                    outcome = Err(e);
                                    break;
                                }
                            },
                            Err(RecvTimeoutError::Disconnected) => break,
                        }
                    }
                };
                match consume(&mut *sink, fetched) {
                    Ok(Flow::More) => {}
                    Ok(Flow::Stop) => break,
                    Err(e) => {
                        outcome = Err(e);
                        break;
                    }
                }
                if stop.is_stopped() {
                    break;
                }
            }
            // Dropping the receiver stops the fetch thread at its next send.
            drop(rx);
            outcome
        })
    };
    let committed = sink.commit();
    outcome.and(committed)
}

/// Sends `fetched` to the sync thread; while its queue is full, checks
/// ahead what the sync thread would check ([`CheckAhead`]). False when the
/// sync thread stopped taking.
fn hand_over<T: CheckAhead>(
    tx: &SyncSender<Result<T, SourceError>>,
    mut fetched: Result<T, SourceError>,
) -> bool {
    loop {
        match tx.try_send(fetched) {
            Ok(()) => return true,
            Err(TrySendError::Disconnected(_)) => return false,
            Err(TrySendError::Full(back)) => {
                fetched = back;
                if !fetched.as_mut().is_ok_and(CheckAhead::check_more) {
                    return tx.send(fetched).is_ok();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;
    use std::time::Duration;

    /// An answer with `left` steps of checking to do.
    struct Steps {
        left: usize,
        done: usize,
    }

    impl CheckAhead for Steps {
        fn check_more(&mut self) -> bool {
            if self.left == 0 {
                return false;
            }
            self.left -= 1;
            self.done += 1;
            true
        }
    }

    #[test]
    fn a_full_queue_is_waited_on_by_checking_ahead_then_by_blocking() {
        let (tx, rx) = sync_channel::<Result<Steps, SourceError>>(1);
        // Room in the queue: sent at once, nothing checked.
        assert!(hand_over(&tx, Ok(Steps { left: 5, done: 0 })));
        // The queue is full: all five steps are checked, then the send
        // blocks until the receiver takes the first answer.
        let taker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            let first = rx.recv().unwrap().unwrap();
            let second = rx.recv().unwrap().unwrap();
            (first.done, second.done)
        });
        assert!(hand_over(&tx, Ok(Steps { left: 5, done: 0 })));
        assert_eq!(taker.join().unwrap(), (0, 5));
        // A failed fetch is sent as it is; a receiver gone stops the sender.
        assert!(!hand_over(&tx, Err(SourceError::bad_answer("gone"))));
    }
}
