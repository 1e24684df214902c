//! The fetch machinery both parts of a pass share: ranges cut into chunks,
//! fetched on a fetch thread up to a depth ahead while the sync thread
//! verifies and writes what arrived through a [`Sink`].

use std::sync::mpsc::{RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
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

/// What a fetch thread works through: `ranges` of `source`, up to `depth`
/// answers ahead, until `stop`.
pub(super) struct Fetching<'a, S> {
    pub(super) source: &'a mut S,
    pub(super) ranges: ChunkRanges,
    pub(super) stop: &'a Stop,
    pub(super) depth: usize,
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

/// Hands one fetched answer to `sink` (an empty one stops the pass).
fn consume<T: Reach>(
    sink: &mut impl Sink<T>,
    item: Result<T, SourceError>,
    stop: &Stop,
) -> Result<bool, SyncError> {
    let item = item?;
    if item.reach().is_none() {
        return Ok(false);
    }
    Ok(matches!(sink.take(item)?, Flow::More) && !stop.is_stopped())
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
    job: Fetching<'_, S>,
    mut fetch: F,
    sink: &mut impl Sink<T>,
) -> Result<(), SyncError>
where
    S: Send,
    T: Reach + CheckAhead + Send,
    F: FnMut(&mut S, (u64, u64)) -> Result<T, SourceError> + Send,
{
    let (source, mut ranges, stop, depth) = (job.source, job.ranges, job.stop, job.depth);
    let outcome = if depth == 0 || ranges.last - ranges.next < ranges.chunk {
        loop {
            let Some(range) = ranges.next().filter(|_| !stop.is_stopped()) else {
                break Ok(());
            };
            if sink.due().is_some_and(|due| Instant::now() >= due) {
                if let Err(e) = sink.commit() {
                    break Err(e);
                }
            }
            let fetched = fetch(source, range);
            let reach = fetched.as_ref().ok().and_then(Reach::reach);
            match consume(&mut *sink, fetched, stop) {
                Ok(true) => {}
                done => break done.map(drop),
            }
            // Ask next from just above what was answered.
            if let Some(n) = reach {
                ranges.next = n + 1;
            }
        }
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
            let outcome = loop {
                let fetched = match sink.due() {
                    None => match rx.recv() {
                        Ok(fetched) => fetched,
                        Err(_) => break Ok(()),
                    },
                    Some(due) => {
                        match rx.recv_timeout(due.saturating_duration_since(Instant::now())) {
                            Ok(fetched) => fetched,
                            // Nothing more yet: store what verified meanwhile.
                            Err(RecvTimeoutError::Timeout) => match sink.commit() {
                                Ok(()) => continue,
                                Err(e) => break Err(e),
                            },
                            Err(RecvTimeoutError::Disconnected) => break Ok(()),
                        }
                    }
                };
                match consume(&mut *sink, fetched, stop) {
                    Ok(true) => {}
                    done => break done.map(drop),
                }
            };
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
    job: Fetching<'_, S>,
    mut fetch: F,
    sink: &mut impl Sink<T>,
) -> Result<(), SyncError>
where
    S: Send,
    T: Reach + Send,
    F: FnMut(&mut S, (u64, u64), &mut dyn FnMut(T) -> bool) -> Result<(), SourceError> + Send,
{
    let (source, mut ranges, stop, depth) = (job.source, job.ranges, job.stop, job.depth);
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
        let mut waiting = None;
        let outcome = loop {
            let fetched = match waiting.take().map_or_else(|| rx.recv(), Ok) {
                Ok(fetched) => fetched,
                Err(_) => break Ok(()),
            };
            match consume(&mut *sink, fetched, stop) {
                Ok(true) => {}
                done => break done.map(drop),
            }
            match rx.try_recv() {
                Ok(fetched) => waiting = Some(fetched),
                // Nothing more yet: store what came.
                Err(TryRecvError::Empty) => {
                    if let Err(e) = sink.commit() {
                        break Err(e);
                    }
                }
                Err(TryRecvError::Disconnected) => break Ok(()),
            }
        };
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

    /// Orders the two sides of a stream: how far the fetch side has sent
    /// and the sink has committed, so a test decides what is waiting when.
    #[derive(Default)]
    struct Gate {
        state: std::sync::Mutex<(u64, u64)>,
        moved: std::sync::Condvar,
    }

    impl Gate {
        fn set(&self, f: impl FnOnce(&mut (u64, u64))) {
            f(&mut self.state.lock().unwrap());
            self.moved.notify_all();
        }
        /// Waits (at most 10 s) until `ready` holds of (sent, committed).
        fn wait(&self, ready: impl Fn(&(u64, u64)) -> bool) {
            let state = self.state.lock().unwrap();
            let (state, timeout) = self
                .moved
                .wait_timeout_while(state, Duration::from_secs(10), |s| !ready(s))
                .unwrap();
            assert!(!timeout.timed_out(), "the stream stalled at {:?}", *state);
        }
    }

    fn slot(number: u64) -> Vec<DaSlot> {
        vec![DaSlot {
            number,
            ..DaSlot::default()
        }]
    }

    /// Records what it took and, at each commit, the last slot taken. With
    /// `lag`, it takes slot n only once slot n + 1 was sent (or the last).
    struct Recorder<'g> {
        gate: &'g Gate,
        lag: bool,
        taken: Vec<u64>,
        open: bool,
        commits: Vec<u64>,
    }

    impl Sink<Vec<DaSlot>> for Recorder<'_> {
        fn take(&mut self, item: Vec<DaSlot>) -> Result<Flow, SyncError> {
            for s in &item {
                if self.lag {
                    self.gate.wait(|&(sent, _)| sent > s.number || sent == 20);
                }
                self.taken.push(s.number);
            }
            self.open = true;
            Ok(Flow::More)
        }
        fn commit(&mut self) -> Result<(), SyncError> {
            if std::mem::take(&mut self.open) {
                let last = *self.taken.last().unwrap_or(&0);
                self.commits.push(last);
                self.gate.set(|s| s.1 = last);
            }
            Ok(())
        }
        fn due(&self) -> Option<Instant> {
            None
        }
    }

    /// Streams slots 1..=20 in ranges of 10 to a [`Recorder`]; with
    /// `one_by_one`, the fetch side sends slot n only once n - 1 was committed.
    fn stream(one_by_one: bool, lag: bool) -> Vec<u64> {
        let gate = Gate::default();
        let ranges = ChunkRanges {
            next: 1,
            last: 20,
            chunk: 10,
        };
        let fetch =
            |_: &mut (), (from, to): (u64, u64), each: &mut dyn FnMut(Vec<DaSlot>) -> bool| {
                for n in from..=to {
                    if one_by_one {
                        gate.wait(|&(_, committed)| committed + 1 >= n);
                    }
                    let open = each(slot(n));
                    gate.set(|s| s.0 = n);
                    if !open {
                        break;
                    }
                }
                Ok(())
            };
        let mut sink = Recorder {
            gate: &gate,
            lag,
            taken: Vec::new(),
            open: false,
            commits: Vec::new(),
        };
        let job = Fetching {
            source: &mut (),
            ranges,
            stop: &Stop::new(),
            depth: 64,
        };
        stream_ahead(job, fetch, &mut sink).unwrap();
        assert_eq!(sink.taken, (1..=20).collect::<Vec<_>>());
        sink.commits
    }

    #[test]
    fn pieces_slower_than_the_sink_are_committed_one_by_one() {
        assert_eq!(stream(true, false), (1..=20).collect::<Vec<_>>());
    }

    #[test]
    fn pieces_faster_than_the_sink_are_committed_in_groups_and_all_of_them() {
        assert_eq!(stream(false, true), vec![20]);
    }
}
