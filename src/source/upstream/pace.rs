//! How fast an upstream answers, and so how many requests to keep waiting
//! at it and how long to wait for one.
//!
//! An upstream may answer several requests at once and quickly (a ledgerd
//! on loopback) or one at a time and slowly (a rate-limited public
//! endpoint). Requests sent to the second kind only queue there: each waits
//! for all those before it, so eight in flight make every answer eight
//! times as late (and a head poll behind them too) without a block more per
//! second. [`Pace`] tells the two apart from the answer times alone, the
//! way TCP's congestion control does (additive increase, multiplicative
//! decrease):
//!
//! - it starts with one request in flight;
//! - an answer not much slower than the quickest of the last [`WINDOW`]
//!   (at most 1.5 times it plus [`SLACK`]) lets one more request be in
//!   flight: per answer until the first cut (slow start: the limit doubles
//!   per round, 8 after the first few answers), per round after it (the
//!   limit grows by 1/limit per answer), up to what the caller wants
//!   (`--sync-concurrency`);
//! - a slower one means requests wait in a queue at the upstream: the limit
//!   is halved (at least 1), once per round: answers to requests sent before
//!   the cut are not held against it again;
//! - a request waits at most [`Pace::timeout`]: the caller's floor (10 s),
//!   or 4 times the slowest recent answer when that is more, doubled for
//!   each timeout in a row (at most [`MAX_TIMEOUT`]): an upstream that
//!   takes 12 s per answer is followed slowly, not failed forever.
//!
//! Two manners are the upstream's to ask for, not learnt:
//!
//! - an HTTP 429 (too many requests) or 503 (unavailable) answer says to
//!   wait: nothing is sent to the upstream until its `Retry-After` (seconds
//!   or an HTTP date) has passed, or, without one, 1 s doubled per such
//!   answer in a row; at most [`MAX_PUSHBACK_WAIT`] either way
//!   ([`Pace::pushed_back`], [`Pace::waiting`]);
//! - `--upstream-max-rps N`: requests start at least 1/N s apart
//!   ([`Pace::turn`]), all clients of the upstream together.
//!
//! An upstream whose typical answer takes [`SLOW`] or more is slow: the
//! follower then fetches its blocks before its DA slots, and the watcher
//! asks it for its head less often. Clones of an [`super::Upstream`]
//! share one `Pace`; nothing here is a chain rule, only manners.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::progress::Pushback;

/// Answer times remembered.
pub const WINDOW: usize = 16;

/// Answer-time jitter that says nothing about queueing (loopback answers
/// vary by tens of milliseconds on a busy machine).
pub const SLACK: Duration = Duration::from_millis(100);

/// A typical answer this slow or slower makes a slow upstream.
pub const SLOW: Duration = Duration::from_millis(250);

/// The most requests ever in flight (`--sync-concurrency` allows no more).
pub const MAX_IN_FLIGHT: usize = 64;

/// The longest a request is waited for, however slow the upstream.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(120);

/// The longest wait an upstream's 429 or 503 answer is honoured for.
pub const MAX_PUSHBACK_WAIT: Duration = Duration::from_secs(300);

/// The wait after a 429 or 503 answer without `Retry-After` (doubled for
/// each such answer in a row).
pub const FIRST_PUSHBACK_WAIT: Duration = Duration::from_secs(1);

/// The learnt pace of one upstream (see the module docs).
#[derive(Debug)]
pub struct Pace {
    state: Mutex<State>,
    /// Its 429 and 503 answers, counted (`/metrics`).
    pushback: Arc<Pushback>,
    /// `--upstream-max-rps`: the least time between two requests' starts.
    gap: Option<Duration>,
}

#[derive(Debug, Default)]
struct State {
    /// The last [`WINDOW`] answer times, newest last.
    recent: VecDeque<Duration>,
    /// Requests allowed in flight; fractional, as it grows by 1/limit.
    limit: f64,
    /// When the limit was last halved (`None`: never, still in slow start).
    cut_at: Option<Instant>,
    /// Requests in a row that timed out.
    timeouts: u32,
    /// Asked to wait (429 or 503): until when, and the status that asked.
    wait: Option<(Instant, u16)>,
    /// 429 and 503 answers in a row (0: none since the last answer).
    pushbacks: u32,
    /// When the next request may start, under the `--upstream-max-rps` gap.
    next_turn: Option<Instant>,
}

impl Pace {
    /// Nothing known yet: one request in flight, and at most `max_rps`
    /// requests started per second (`--upstream-max-rps`; `None` or 0: no cap).
    pub fn with_max_rps(max_rps: Option<u32>) -> Pace {
        Pace {
            state: Mutex::new(State {
                recent: VecDeque::with_capacity(WINDOW),
                limit: 1.0,
                ..State::default()
            }),
            pushback: Arc::new(Pushback::default()),
            gap: max_rps
                .filter(|n| *n > 0)
                .map(|n| Duration::from_secs(1) / n),
        }
    }

    /// The counts of the upstream's 429 and 503 answers.
    pub fn pushback(&self) -> &Arc<Pushback> {
        &self.pushback
    }

    /// How long to wait before the next request starts, under
    /// `--upstream-max-rps` (zero without it); the turn is taken.
    pub fn turn(&self) -> Duration {
        let Some(gap) = self.gap else {
            return Duration::ZERO;
        };
        let now = Instant::now();
        let mut s = self.state();
        let at = s.next_turn.map_or(now, |t| t.max(now));
        s.next_turn = Some(at + gap);
        at - now
    }

    /// Records a 429 or 503 answer (`code`) that said to wait `retry_after`
    /// (its `Retry-After`, if it had one): returns how long nothing will be
    /// sent, at most [`MAX_PUSHBACK_WAIT`].
    pub fn pushed_back(&self, code: u16, retry_after: Option<Duration>) -> Duration {
        let counter = match code {
            429 => &self.pushback.too_many_requests,
            _ => &self.pushback.unavailable,
        };
        counter.fetch_add(1, Relaxed);
        let mut s = self.state();
        let doubled = FIRST_PUSHBACK_WAIT.saturating_mul(1 << s.pushbacks.min(16));
        s.pushbacks = s.pushbacks.saturating_add(1);
        let wait = retry_after.unwrap_or(doubled).min(MAX_PUSHBACK_WAIT);
        s.wait = Some((Instant::now() + wait, code));
        wait
    }

    /// While the upstream's last 429 or 503 asks to wait: that status, and
    /// how much of the wait is left.
    pub fn waiting(&self) -> Option<(u16, Duration)> {
        let s = self.state();
        let (until, code) = s.wait?;
        let left = until.saturating_duration_since(Instant::now());
        (!left.is_zero()).then_some((code, left))
    }

    /// Records an answer that was not a 429 or 503: a push-back episode,
    /// if there was one, is over.
    pub fn not_pushed_back(&self) {
        let mut s = self.state();
        s.pushbacks = 0;
        s.wait = None;
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is a few numbers, each update complete: a panic
        // elsewhere while it was held leaves nothing half-written.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records the answer to a request sent at `sent`.
    pub fn answered(&self, sent: Instant) {
        let now = Instant::now();
        let took = now.saturating_duration_since(sent);
        let mut s = self.state();
        if s.recent.len() == WINDOW {
            s.recent.pop_front();
        }
        s.recent.push_back(took);
        s.timeouts = 0;
        // Answers to requests sent before the last cut were queued behind
        // the old limit: they say nothing about the new one.
        if s.cut_at.is_some_and(|cut| sent < cut) {
            return;
        }
        let quickest = s.recent.iter().min().copied().unwrap_or(took);
        if took > quickest * 3 / 2 + SLACK {
            s.cut(now);
            log::debug!(
                "upstream answered in {took:.2?} (quickest recent {quickest:.2?}): \
                 requests queue there; at most {} in flight",
                s.limit as usize
            );
        } else if s.cut_at.is_none() {
            s.limit = (s.limit + 1.0).min(MAX_IN_FLIGHT as f64);
        } else {
            s.limit = (s.limit + 1.0 / s.limit.max(1.0)).min(MAX_IN_FLIGHT as f64);
        }
    }

    /// Records that a request sent at `sent` was not answered in time.
    pub fn timed_out(&self, sent: Instant) {
        let mut s = self.state();
        s.timeouts = s.timeouts.saturating_add(1);
        if s.cut_at.is_none_or(|cut| sent >= cut) {
            s.cut(Instant::now());
        }
    }

    /// Requests to keep in flight, at most `wanted` (at least 1).
    pub fn in_flight(&self, wanted: usize) -> usize {
        let wanted = wanted.max(1);
        let mut s = self.state();
        // Never above what is used, so that a cut takes effect at once.
        s.limit = s.limit.min(wanted as f64);
        (s.limit as usize).clamp(1, wanted)
    }

    /// How long to wait for the next request: `floor`, or 4 times the
    /// slowest recent answer if that is longer, doubled per timeout in a
    /// row; at most [`MAX_TIMEOUT`] (or `floor`, if that is longer).
    pub fn timeout(&self, floor: Duration) -> Duration {
        let s = self.state();
        let slowest = s.recent.iter().max().copied().unwrap_or_default();
        let base = floor.max(slowest.saturating_mul(4));
        base.saturating_mul(1 << s.timeouts.min(8))
            .min(MAX_TIMEOUT.max(floor))
    }

    /// The typical (median) recent answer time; `None` before the first answer.
    pub fn answer_time(&self) -> Option<Duration> {
        let s = self.state();
        let mut times: Vec<Duration> = s.recent.iter().copied().collect();
        times.sort_unstable();
        times.get(times.len() / 2).copied()
    }

    /// Whether the upstream answers slowly: a typical answer of [`SLOW`] or
    /// more, or the last request timed out.
    pub fn is_slow(&self) -> bool {
        self.state().timeouts > 0 || self.answer_time().is_some_and(|t| t >= SLOW)
    }
}

/// A `Retry-After` value as a wait from `now`: seconds, or an HTTP date
/// (a date past is no wait); `None` when it is neither.
pub fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or_default())
}

impl State {
    fn cut(&mut self, now: Instant) {
        self.limit = (self.limit / 2.0).max(1.0);
        self.cut_at = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records `n` answers that took `ms`, each sent now minus `ms`.
    fn answers(p: &Pace, ms: u64, n: usize) {
        for _ in 0..n {
            p.answered(Instant::now() - Duration::from_millis(ms));
        }
    }

    /// Lets `p` grow to 8 in flight (slow start) on quick answers.
    fn eight(p: &Pace) {
        assert_eq!(p.in_flight(8), 1, "one at first");
        answers(p, 1, 3);
        assert_eq!(p.in_flight(8), 4, "one more per answer");
        answers(p, 1, 10);
        assert_eq!(p.in_flight(8), 8, "up to what is wanted");
    }

    #[test]
    fn answers_that_queue_halve_the_requests_in_flight_once_per_round() {
        let p = Pace::with_max_rps(None);
        eight(&p);
        // One at a time, 1 s each, 8 in flight: 1 s, 2 s, 3 s... (the
        // quick answers above pass out of the window)
        answers(&p, 1000, WINDOW);
        answers(&p, 2000, 1);
        assert_eq!(p.in_flight(8), 4, "2 s against a quickest of 1 s");
        // The rest were sent before the cut: no further cut for them.
        for ms in [3000, 4000, 5000] {
            p.answered(Instant::now() - Duration::from_millis(ms) - Duration::from_secs(1));
        }
        assert_eq!(p.in_flight(8), 4);
        assert!(p.is_slow(), "a median answer of seconds");
        assert_eq!(
            p.timeout(Duration::from_secs(10)).as_secs(),
            24,
            "4 times the slowest answer, 6 s"
        );
        // After a cut the limit grows by one per round, not per answer.
        std::thread::sleep(Duration::from_millis(5));
        answers(&p, 0, 4);
        assert_eq!(p.in_flight(8), 4);
    }

    #[test]
    fn answers_that_do_not_queue_let_the_limit_grow_back_to_what_is_wanted() {
        let p = Pace::with_max_rps(None);
        eight(&p);
        answers(&p, 10, 1);
        answers(&p, 400, 1);
        assert_eq!(p.in_flight(8), 4);
        // Sent after the cut.
        std::thread::sleep(Duration::from_millis(30));
        answers(&p, 10, 40);
        assert_eq!(p.in_flight(8), 8);
        assert!(!p.is_slow());
        assert_eq!(
            p.timeout(Duration::from_secs(10)),
            Duration::from_secs(10),
            "quick answers keep the floor"
        );
    }

    #[test]
    fn loopback_jitter_is_not_queueing() {
        let p = Pace::with_max_rps(None);
        for ms in [1, 40, 3, 90, 2, 60, 5, 70] {
            answers(&p, ms, 1);
        }
        assert_eq!(p.in_flight(8), 8);
    }

    #[test]
    fn retry_after_is_read_as_seconds_or_an_http_date() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO),
            "a date past"
        );
        assert_eq!(retry_after("soon", now), None);
        assert_eq!(retry_after("-5", now), None);
    }

    #[test]
    fn a_push_back_is_waited_out_capped_and_doubles_without_retry_after() {
        let p = Pace::with_max_rps(None);
        assert_eq!(p.waiting(), None);
        assert_eq!(
            p.pushed_back(429, Some(Duration::from_secs(3600))),
            MAX_PUSHBACK_WAIT
        );
        let (code, left) = p.waiting().unwrap();
        assert_eq!(code, 429);
        assert!(left > Duration::from_secs(299), "{left:?}");
        assert_eq!(p.pushed_back(503, None), Duration::from_secs(2));
        assert_eq!(p.pushed_back(503, None), Duration::from_secs(4));
        assert_eq!(p.pushback().too_many_requests.load(Relaxed), 1);
        assert_eq!(p.pushback().unavailable.load(Relaxed), 2);
        p.not_pushed_back();
        assert_eq!(p.waiting(), None);
        assert_eq!(p.pushed_back(503, None), FIRST_PUSHBACK_WAIT);
    }

    #[test]
    fn a_rate_cap_spaces_the_starts_of_requests() {
        assert_eq!(Pace::with_max_rps(None).turn(), Duration::ZERO);
        let p = Pace::with_max_rps(Some(10));
        let waits: Vec<Duration> = (0..4).map(|_| p.turn()).collect();
        assert_eq!(waits[0], Duration::ZERO);
        assert!(waits[3] > Duration::from_millis(250), "{waits:?}");
        assert!(waits[3] <= Duration::from_millis(300), "{waits:?}");
    }

    #[test]
    fn timeouts_in_a_row_lengthen_the_wait_and_an_answer_resets_it() {
        let p = Pace::with_max_rps(None);
        eight(&p);
        let floor = Duration::from_secs(10);
        p.timed_out(Instant::now() - floor);
        assert_eq!(p.timeout(floor), Duration::from_secs(20));
        assert!(p.is_slow());
        std::thread::sleep(Duration::from_millis(2));
        p.timed_out(Instant::now());
        assert_eq!(p.timeout(floor), Duration::from_secs(40));
        for _ in 0..10 {
            p.timed_out(Instant::now());
        }
        assert_eq!(p.timeout(floor), MAX_TIMEOUT);
        answers(&p, 12_000, 1);
        assert_eq!(p.timeout(floor).as_secs(), 48);
        assert_eq!(p.in_flight(8), 1);
    }
}
