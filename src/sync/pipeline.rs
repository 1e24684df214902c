//! Several range requests in flight at once, handed out in order.
//!
//! A Citrea node serves at most 20 blocks per `ledger_getSoftConfirmationRange`;
//! a follower that waits for each answer before asking the next spends its
//! time on round trips. [`Pipeline`] keeps up to `width` requests in flight
//! on as many worker threads (each request on its own connection of the
//! source's pool) and gives the answers back strictly in order, so the sync
//! thread still verifies and writes block after block (or DA slot after DA
//! slot: the same pipeline fetches batches of slots).
//!
//! The pipeline only fetches: nothing it fetches is trusted or stored until
//! the sync thread has verified it. When an answer is shorter than asked
//! (the source's range limit, or its head), the requests after it no longer
//! line up: they are dropped and asked again from just above the answer.

use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};

use crate::source::{RangeFetch, SourceError};

type Answer<T> = Result<T, SourceError>;

/// One range to fetch, and where to send the answer.
struct Job<T> {
    from: u64,
    to: u64,
    reply: SyncSender<Answer<T>>,
}

/// Range requests in flight, answered in order (see the module docs).
pub struct Pipeline<T> {
    /// The workers' queue: dropping it (with the pipeline) ends every
    /// worker once it is idle.
    jobs: Sender<Job<T>>,
    fetcher: Arc<dyn RangeFetch<T>>,
    /// Requests sent, oldest first: (from, where its answer arrives).
    in_flight: VecDeque<(u64, Receiver<Answer<T>>)>,
    /// The next height to ask for.
    next: u64,
    /// Ask for nothing above this height.
    last: u64,
    width: usize,
    chunk: u64,
}

impl<T: Send + 'static> Pipeline<T> {
    /// A pipeline over `fetcher` that asks for numbers up to `last`, at most
    /// `width` requests of at most `chunk` numbers in flight. Starts `width`
    /// worker threads, which end once the pipeline is dropped and their
    /// request in flight (if any) has been answered or timed out.
    pub fn new(
        fetcher: Box<dyn RangeFetch<T>>,
        last: u64,
        width: usize,
        chunk: u64,
    ) -> Result<Pipeline<T>, SourceError> {
        let fetcher: Arc<dyn RangeFetch<T>> = Arc::from(fetcher);
        let (jobs, queue) = mpsc::channel::<Job<T>>();
        let queue = Arc::new(Mutex::new(queue));
        let width = width.max(1);
        for i in 0..width {
            let queue = queue.clone();
            let fetcher = fetcher.clone();
            std::thread::Builder::new()
                .name(format!("fetch-{i}"))
                .spawn(move || worker(&queue, fetcher.as_ref()))
                .map_err(|e| SourceError::unreachable("cannot start a fetch thread", e))?;
        }
        Ok(Pipeline {
            jobs,
            fetcher,
            in_flight: VecDeque::with_capacity(width),
            next: 0,
            last,
            width,
            chunk: chunk.max(1),
        })
    }

    /// The answer for the range starting at `from` (for blocks: a prefix of
    /// what was asked); `None` once `from` is above the last number. Requests
    /// for the ranges after it are kept in flight.
    pub fn next_from(&mut self, from: u64) -> Answer<Option<T>> {
        if self.in_flight.front().map(|(f, _)| *f) != Some(from) {
            // The previous answer was short (or this is the start): what is
            // in flight does not continue it.
            self.in_flight.clear();
            self.next = from;
        }
        self.top_up();
        let Some((_, answer)) = self.in_flight.pop_front() else {
            return Ok(None);
        };
        let got = answer
            .recv()
            .unwrap_or_else(|_| Err(SourceError::bad_answer("a fetch thread stopped")));
        if got.is_err() {
            self.in_flight.clear();
        }
        self.top_up();
        got.map(Some)
    }

    /// Sends requests until `width` are in flight (or fewer, as many as the
    /// source takes at once) or every height is asked for.
    fn top_up(&mut self) {
        let width = self.fetcher.in_flight(self.width).clamp(1, self.width);
        while self.in_flight.len() < width && self.next <= self.last {
            let chunk = self.fetcher.preferred_chunk(self.chunk).max(1);
            let from = self.next;
            let to = self.last.min(from.saturating_add(chunk - 1));
            let (reply, answer) = mpsc::sync_channel(1);
            if self.jobs.send(Job { from, to, reply }).is_err() {
                return;
            }
            self.in_flight.push_back((from, answer));
            self.next = to + 1;
        }
    }
}

fn worker<T>(queue: &Mutex<Receiver<Job<T>>>, fetcher: &dyn RangeFetch<T>) {
    loop {
        let Ok(Ok(job)) = queue.lock().map(|q| q.recv()) else {
            return;
        };
        let answer = fetcher.fetch(job.from, job.to);
        // The pipeline may have dropped this request: nobody to tell.
        let _ = job.reply.send(answer);
        crate::os::give_way();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::SoftConfirmation;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};

    /// A source of empty-bodied blocks that serves at most `limit` per
    /// request and records how many requests were in flight at once.
    struct Capped {
        limit: u64,
        now: AtomicUsize,
        most: AtomicUsize,
        asked: AtomicU64,
    }

    impl RangeFetch<Vec<SoftConfirmation>> for Arc<Capped> {
        fn fetch(&self, from: u64, to: u64) -> Answer<Vec<SoftConfirmation>> {
            let now = self.now.fetch_add(1, SeqCst) + 1;
            self.most.fetch_max(now, SeqCst);
            self.asked.fetch_add(1, SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(2));
            self.now.fetch_sub(1, SeqCst);
            Ok((from..=to.min(from + self.limit - 1))
                .map(crate::types::sample_block)
                .collect())
        }
    }

    fn capped(limit: u64) -> Arc<Capped> {
        Arc::new(Capped {
            limit,
            now: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
            asked: AtomicU64::new(0),
        })
    }

    fn drain(p: &mut Pipeline<Vec<SoftConfirmation>>, mut from: u64) -> Vec<u64> {
        let mut heights = Vec::new();
        loop {
            let got = p.next_from(from).unwrap().unwrap_or_default();
            let Some(last) = got.last() else { break };
            from = last.l2_height + 1;
            heights.extend(got.iter().map(|b| b.l2_height));
        }
        heights
    }

    #[test]
    fn answers_come_back_in_order_with_several_requests_in_flight() {
        let source = capped(20);
        let mut p = Pipeline::new(Box::new(source.clone()), 1000, 8, 20).unwrap();
        assert_eq!(drain(&mut p, 1), (1..=1000).collect::<Vec<_>>());
        let most = source.most.load(SeqCst);
        assert!(
            (2..=8).contains(&most),
            "{most} requests were in flight at once"
        );
        assert_eq!(source.asked.load(SeqCst), 50);
    }

    #[test]
    fn a_short_answer_restarts_the_requests_after_it() {
        // Asked for 100 per request, the source answers 20: every answer is
        // short, and the pipeline still hands out every height once, in order.
        let source = capped(20);
        let mut p = Pipeline::new(Box::new(source.clone()), 333, 4, 100).unwrap();
        assert_eq!(drain(&mut p, 5), (5..=333).collect::<Vec<_>>());
    }
}
