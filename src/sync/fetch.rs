//! The fetch machinery both parts of a pass share: ranges cut into chunks,
//! fetched on a fetch thread up to a depth ahead while the sync thread
//! verifies and writes what arrived through a [`Sink`].

use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
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

/// Hands one fetched answer to `sink` (an empty one stops the pass).
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
    T: Reach + Send,
    F: FnMut(&mut S, (u64, u64)) -> Result<T, SourceError> + Send,
{
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
                    if tx.send(fetched).is_err() {
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

/// [`fetch_ahead`] for a source that hands on what it fetches piece by
/// piece as it comes (`fetch` calls its third argument with each piece,
/// which returns false once nothing more is wanted): the fetch thread sends
/// each piece on at once, up to `depth` waiting, and the calling thread
/// takes each and commits whenever no next one is waiting. So what is
/// stored, and reported, follows what is read piece by piece; when a commit
/// takes longer than a piece takes to come, the pieces that came meanwhile
/// go into the next commit together (a group commit), and the fetch thread
/// never waits on a commit while fewer than `depth` are waiting.
pub(super) fn stream_ahead<S, T, F>(
    source: &mut S,
    mut ranges: ChunkRanges,
    stop: &Stop,
    depth: usize,
    mut fetch: F,
    sink: &mut impl Sink<T>,
) -> Result<(), SyncError>
where
    S: Send,
    T: Reach + Send,
    F: FnMut(&mut S, (u64, u64), &mut dyn FnMut(T) -> bool) -> Result<(), SourceError> + Send,
{
    let (tx, rx) = std::sync::mpsc::sync_channel::<Result<T, SourceError>>(depth.max(1));
    let outcome = std::thread::scope(|s| {
        s.spawn(move || {
            while let Some(range) = ranges.next() {
                if stop.is_stopped() {
                    break;
                }
                let (mut reach, mut open) = (None, true);
                let fetched = fetch(source, range, &mut |piece: T| {
                    reach = piece.reach().or(reach);
                    open = tx.send(Ok(piece)).is_ok();
                    open
                });
                if let Err(e) = fetched {
                    let _ = tx.send(Err(e));
                    break;
                }
                match (open, reach) {
                    // Ask next from just above what was answered.
                    (true, Some(n)) => ranges.next = n + 1,
                    _ => break,
                }
            }
        });
        let mut outcome = Ok(());
        let mut waiting = None;
        loop {
            let fetched = match waiting.take() {
                Some(fetched) => fetched,
                None => match rx.recv() {
                    Ok(fetched) => fetched,
                    Err(_) => break,
                },
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
            match rx.try_recv() {
                Ok(fetched) => waiting = Some(fetched),
                // Nothing more yet: store what came.
                Err(TryRecvError::Empty) => {
                    if let Err(e) = sink.commit() {
                        outcome = Err(e);
                        break;
                    }
                }
                Err(TryRecvError::Disconnected) => break,
            }
        }
        // Dropping the receiver stops the fetch thread at its next send.
        drop(rx);
        outcome
    });
    let committed = sink.commit();
    outcome.and(committed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn slot(number: u64) -> Vec<DaSlot> {
        vec![DaSlot {
            number,
            hash: None,
            commitments: Vec::new(),
            proofs: Vec::new(),
            chunks: Default::default(),
        }]
    }

    /// Records what it took and, at each commit, the last slot taken.
    #[derive(Default)]
    struct Recorder {
        taken: Vec<u64>,
        open: bool,
        commits: Vec<u64>,
        slow: Duration,
    }

    impl Sink<Vec<DaSlot>> for Recorder {
        fn take(&mut self, item: Vec<DaSlot>) -> Result<Flow, SyncError> {
            std::thread::sleep(self.slow);
            self.taken.extend(item.iter().map(|s| s.number));
            self.open = true;
            Ok(Flow::More)
        }
        fn commit(&mut self) -> Result<(), SyncError> {
            if std::mem::take(&mut self.open) {
                self.commits.push(*self.taken.last().unwrap_or(&0));
            }
            Ok(())
        }
        fn due(&self) -> Option<Instant> {
            None
        }
    }

    fn stream(pieces_every: Duration, sink: &mut Recorder) {
        let ranges = ChunkRanges {
            next: 1,
            last: 20,
            chunk: 10,
        };
        let fetch =
            |_: &mut (), (from, to): (u64, u64), each: &mut dyn FnMut(Vec<DaSlot>) -> bool| {
                for n in from..=to {
                    std::thread::sleep(pieces_every);
                    if !each(slot(n)) {
                        break;
                    }
                }
                Ok(())
            };
        stream_ahead(&mut (), ranges, &Stop::new(), 64, fetch, sink).unwrap();
        assert_eq!(sink.taken, (1..=20).collect::<Vec<_>>());
    }

    #[test]
    fn pieces_slower_than_the_sink_are_committed_one_by_one() {
        let mut sink = Recorder::default();
        stream(Duration::from_millis(5), &mut sink);
        assert_eq!(sink.commits, (1..=20).collect::<Vec<_>>());
    }

    #[test]
    fn pieces_faster_than_the_sink_are_committed_in_groups_and_all_of_them() {
        let mut sink = Recorder {
            slow: Duration::from_millis(5),
            ..Recorder::default()
        };
        stream(Duration::ZERO, &mut sink);
        assert!(sink.commits.len() < 20, "{:?}", sink.commits);
        assert_eq!(sink.commits.last(), Some(&20));
    }
}
