//! Upstream failover: which of the follower's `--upstream` URLs the sync
//! thread asks.
//!
//! [`Upstreams`] is the follower's chain source. It holds one
//! [`Upstream`] client per URL and passes every call to the one in use; it
//! only decides which one that is:
//!
//! - at first, and whenever it can, the first in the list that answers and
//!   is not behind the others (more than `tolerance` blocks below the best
//!   head any of them reported);
//! - when the one in use fails (cannot be reached, answers something
//!   unreadable, claims a head it cannot serve, or sends something that
//!   fails verification) it is backed off (100 ms, doubling, at most the
//!   sync back-off) and the next usable one is taken;
//! - at the start of each sync pass it moves back to a better (earlier)
//!   one once that answers again and has caught up.
//!
//! Each change is one `info` log line; `/health` and `/metrics` show the
//! upstream in use ([`Progress::upstream`]). Nothing an upstream sends is
//! trusted: the sync thread verifies it all, so a bad upstream can delay the
//! follower but never make it store anything wrong.
//!
//! Before it follows an upstream, and again after the upstream failed or
//! stopped answering the watcher (a reconnect: it may be another node
//! now), it checks that the upstream serves the data dir's chain: its
//! genesis state root and its block 1's hash ([`ChainIdentity`]) against
//! those the data dir holds (or, on a new data dir, those the first
//! upstream to answer served: that chain is then the data dir's, and is
//! stored as it syncs). An upstream of another chain is refused for good:
//! one ERROR that says "this upstream serves another chain" and what
//! differs, never asked again until restart, its heads not counted; the
//! others keep serving, and when none is left `/health` answers 503
//! (`other_chain`). Nothing of a refused upstream is written.
//!
//! A [`Watcher`] thread asks every upstream for its head once a second, so
//! the choice above, and `/health`'s "how far behind" (the newest head
//! reported, in [`Progress::l2_source_head`]), stay fresh while the sync
//! thread is busy or stuck in a long request. An upstream that answers
//! slowly ([`crate::source::upstream::pace`]) is asked less often, every
//! [`SLOW_WATCH_FACTOR`] answer times: at an upstream that answers one
//! request at a time, each head poll delays the blocks.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use log::{error, info};

use crate::progress::Progress;
use crate::source::backoff::Backoff;
use crate::source::upstream::{Upstream, UpstreamConfig};
use crate::source::{ChainIdentity, DaSource, L2Source, RangeFetch, SourceError, SourceErrorKind};
use crate::stop::Stop;
use crate::types::{DaSlot, Hash, SoftConfirmation};

/// The log target of this module's INFO lines: the module path
/// they had before the sources moved under `source/` (this was `sync/upstreams.rs`; RUST_LOG
/// filters and log readers name it).
const LOG_TARGET: &str = "ledgerd::sync::upstreams";

/// How often the watcher asks every upstream for its head.
pub const WATCH_EVERY: Duration = Duration::from_secs(1);

/// A slow upstream is asked for its head every this many answer times.
pub const SLOW_WATCH_FACTOR: u32 = 10;

/// `url` as shown in logs, `/health` and `/metrics`: without a user name or
/// password (`http://user:secret@host/` is shown as `http://host/`).
pub fn display_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find('/').unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// What the watcher last saw of one upstream.
#[derive(Debug, Default)]
struct Seen {
    /// The head it last reported.
    head: AtomicU64,
    /// Whether its last head request was answered.
    up: AtomicBool,
    /// Times the watcher saw it stop answering: a change means its chain
    /// is checked again before it is followed.
    downs: AtomicU64,
    /// Whether it serves the data dir's chain: 0 (not checked yet: its
    /// heads are not counted), [`SAME_CHAIN`] or [`OTHER_CHAIN`].
    chain: AtomicU8,
}

/// [`Seen::chain`]: serves the data dir's chain.
const SAME_CHAIN: u8 = 1;
/// [`Seen::chain`]: serves another chain; refused for good.
const OTHER_CHAIN: u8 = 2;

/// One upstream as the sync thread sees it.
struct Candidate {
    /// As shown to operators ([`display_url`]).
    name: String,
    client: Upstream,
    /// Failures in a row: each within twice the longest back-off of the one
    /// before. (An upstream that answers its head but sends blocks that fail
    /// verification never has a call fail outright: counting only calls
    /// would retry it every 100 ms.)
    backoff: Backoff,
    /// When it last failed.
    failed_at: Option<Instant>,
    /// Not asked again before this, after a failure.
    retry_at: Option<Instant>,
    /// Its chain was found to be the data dir's while its [`Seen::downs`]
    /// was this (`None`: not since it last failed).
    checked: Option<u64>,
    /// Why it is refused for good: it serves another chain.
    refused: Option<SourceError>,
}

/// The follower's chain source over one or more upstreams.
pub struct Upstreams {
    candidates: Vec<Candidate>,
    current: usize,
    seen: Arc<[Seen]>,
    progress: Arc<Progress>,
    /// An upstream more than this many blocks below the best head is behind.
    tolerance: u64,
    max_backoff: Duration,
    /// The head the upstream in use reported at the start of this pass.
    pass_head: u64,
    /// The chain followed: the data dir's, or, for what it does not hold
    /// yet, what the first upstream to answer served.
    held: ChainIdentity,
}

/// Asks every upstream for its head, every [`WATCH_EVERY`] (less often
/// when slow), until stopped.
pub struct Watcher {
    clients: Vec<Upstream>,
    /// When each was last asked.
    asked: Vec<Option<Instant>>,
    seen: Arc<[Seen]>,
    progress: Arc<Progress>,
}

impl Upstreams {
    /// The source over `urls` (preferred first, at least one) and its
    /// watcher, to be run on a thread of its own. Publishes the list in
    /// `progress`.
    ///
    /// `max_rps` (`--upstream-max-rps`) caps the requests started per second
    /// at each upstream, the watcher's included.
    pub fn new(
        urls: &[String],
        ca_file: Option<&std::path::Path>,
        max_rps: Option<u32>,
        progress: Arc<Progress>,
        tolerance: u64,
        max_backoff: Duration,
    ) -> (Upstreams, Watcher) {
        let config = |url: &str| UpstreamConfig {
            ca_file: ca_file.map(Into::into),
            max_rps,
            ..UpstreamConfig::new(url)
        };
        let seen: Arc<[Seen]> = urls.iter().map(|_| Seen::default()).collect();
        let names: Vec<String> = urls.iter().map(|u| display_url(u)).collect();
        let _ = progress.upstream_urls.set(names.clone());
        progress.upstream_in_use.store(0, Relaxed);
        let candidates: Vec<Candidate> = urls
            .iter()
            .zip(names)
            .map(|(url, name)| Candidate {
                name,
                client: Upstream::new(config(url)),
                backoff: Backoff::new(max_backoff),
                failed_at: None,
                retry_at: None,
                checked: None,
                refused: None,
            })
            .collect();
        let pushbacks = candidates
            .iter()
            .map(|c| c.client.pace().pushback().clone());
        let _ = progress.upstream_pushback.set(pushbacks.collect());
        let clients: Vec<Upstream> = candidates
            .iter()
            .map(|c| {
                let probe = UpstreamConfig {
                    connect_timeout: Duration::from_secs(1),
                    read_timeout: Duration::from_secs(2),
                    // Heads and the chain's identity (block 1) are small: a
                    // watcher reading a hostile upstream's answers beside the
                    // sync thread holds little more than the sync thread's cap.
                    max_answer_bytes: 16 << 20,
                    ..config(c.client.url())
                };
                Upstream::with_pace(probe, c.client.pace().clone())
            })
            .collect();
        let watcher = Watcher {
            asked: vec![None; clients.len()],
            clients,
            seen: seen.clone(),
            progress: progress.clone(),
        };
        let upstreams = Upstreams {
            candidates,
            current: 0,
            seen,
            progress,
            tolerance,
            max_backoff,
            pass_head: 0,
            held: ChainIdentity::default(),
        };
        (upstreams, watcher)
    }

    /// The upstream in use, as shown to operators.
    pub fn in_use(&self) -> &str {
        &self.candidates[self.current].name
    }

    fn client(&mut self) -> &mut Upstream {
        &mut self.candidates[self.current].client
    }

    /// Whether `i` may be asked now: not refused, not backing off, and
    /// answering the watcher.
    fn usable(&self, i: usize, now: Instant) -> bool {
        self.candidates[i].refused.is_none()
            && self.candidates[i].retry_at.is_none_or(|t| now >= t)
            && self.seen[i].up.load(Relaxed)
    }

    /// At the start of a pass: the first usable upstream that is not behind
    /// the best head the watcher saw, if that is not the one in use.
    fn choose(&mut self, now: Instant) {
        let n = self.candidates.len();
        let best = (0..n)
            .filter(|&i| self.seen[i].up.load(Relaxed) && self.candidates[i].refused.is_none())
            .map(|i| self.seen[i].head.load(Relaxed))
            .max();
        let Some(best) = best else { return };
        // An earlier upstream is taken back only once it has caught up with
        // this ledger: below it, it would have nothing to give.
        let ours = self.progress.l2_synced.load(Relaxed);
        let fit = |i: usize| {
            let head = self.seen[i].head.load(Relaxed);
            self.usable(i, now)
                && head.saturating_add(self.tolerance) >= best
                && (i >= self.current || head >= ours)
        };
        let Some(pick) = (0..n).find(|&i| fit(i)) else {
            return;
        };
        if pick == self.current {
            return;
        }
        let why = if pick < self.current {
            format!(
                "{} answers again and is not behind; it comes earlier in --upstream",
                self.candidates[pick].name
            )
        } else if !self.seen[self.current].up.load(Relaxed) {
            format!("{} does not answer", self.candidates[self.current].name)
        } else {
            let head = self.seen[self.current].head.load(Relaxed);
            format!(
                "{} is {} blocks behind the best upstream head {best} (limit {})",
                self.candidates[self.current].name,
                best.saturating_sub(head),
                self.tolerance
            )
        };
        self.switch(pick, &why);
    }

    fn switch(&mut self, to: usize, why: &str) {
        info!(
            target: LOG_TARGET,
            "upstream: now following {} ({why})",
            self.candidates[to].name
        );
        self.current = to;
        // Its head is not known until it is asked (the next pass).
        self.pass_head = 0;
        self.progress.upstream_in_use.store(to, Relaxed);
        self.progress.upstream_switches.fetch_add(1, Relaxed);
    }

    /// The upstream in use failed: back it off and move to the first usable
    /// other one, if there is one. Returns `e`.
    fn failed(&mut self, e: SourceError) -> SourceError {
        let now = Instant::now();
        let in_a_row = self.max_backoff * 2;
        let c = &mut self.candidates[self.current];
        if c.failed_at.is_none_or(|t| now.duration_since(t) > in_a_row) {
            c.backoff.reset();
        }
        c.failed_at = Some(now);
        c.retry_at = Some(now + c.backoff.fail());
        // Once it could not be reached, it may come back as another node:
        // its chain is checked again.
        if e.kind == SourceErrorKind::Unreachable {
            c.checked = None;
        }
        // Until the watcher hears from it again.
        self.seen[self.current].up.store(false, Relaxed);
        // Only to one the watcher hears from: while all are down, the sync
        // thread's back-off retries this one, and the next pass takes the
        // first to answer the watcher again (no line per try).
        let next = (0..self.candidates.len()).find(|&i| i != self.current && self.usable(i, now));
        if let Some(next) = next {
            let why = format!("{} failed: {e}", self.candidates[self.current].name);
            self.switch(next, &why);
        }
        e
    }

    /// Makes sure the upstream in use serves the chain followed, asking it
    /// which it serves if it has not been asked since it last failed;
    /// refuses (for good) one that serves another, and moves to the next.
    /// Fails when no upstream is left that serves it, or when the one in
    /// use cannot say.
    ///
    /// With `with_head`, a check asks the head in the same request and
    /// returns it (`None`: no check was needed, the head not asked).
    fn confirm_chain(&mut self, with_head: bool) -> Result<Option<u64>, SourceError> {
        loop {
            let i = self.current;
            if let Some(refused) = &self.candidates[i].refused {
                let refused = refused.clone();
                // Another one not refused: the first usable one, else the
                // first (a failure there says why it is not usable).
                let now = Instant::now();
                let n = self.candidates.len();
                let open = |j: &usize| self.candidates[*j].refused.is_none();
                let next = (0..n)
                    .filter(open)
                    .find(|&j| self.usable(j, now))
                    .or_else(|| (0..n).find(open));
                let Some(next) = next else {
                    return Err(refused);
                };
                let why = format!("{} serves another chain", self.candidates[i].name);
                self.switch(next, &why);
                continue;
            }
            let downs = self.seen[i].downs.load(Relaxed);
            if self.candidates[i].checked == Some(downs) {
                return Ok(None);
            }
            let answer = self.candidates[i].client.identity_and_head(with_head);
            let (served, head) = answer.map_err(|e| self.failed(e))?;
            match self.held.differs(&served) {
                None => {
                    // On a new data dir, the first to answer names the chain.
                    self.held.learn(&served);
                    self.candidates[i].checked = Some(downs);
                    self.seen[i].chain.store(SAME_CHAIN, Relaxed);
                    return Ok(head);
                }
                Some(what) => self.refuse(i, what),
            }
        }
    }

    /// Refuses upstream `i` for good: it serves another chain (`what`
    /// differs). One ERROR; `/health` and `/metrics` show it.
    fn refuse(&mut self, i: usize, what: String) {
        let name = self.candidates[i].name.clone();
        error!(
            target: LOG_TARGET,
            "upstream {name}: this upstream serves another chain ({what}); it is refused for \
             good: nothing of it is written, and it is not asked again until ledgerd restarts"
        );
        self.candidates[i].refused = Some(SourceError::new(
            SourceErrorKind::OtherChain,
            format!("upstream {name} serves another chain"),
            Some(what.clone()),
        ));
        self.seen[i].chain.store(OTHER_CHAIN, Relaxed);
        self.seen[i].up.store(false, Relaxed);
        self.progress.upstream_refused(i, what);
    }

    /// Passes `call` to the upstream in use, once it is known to serve the
    /// chain followed; a failure moves to the next.
    fn ask<T>(
        &mut self,
        call: impl FnOnce(&mut Upstream) -> Result<T, SourceError>,
    ) -> Result<T, SourceError> {
        self.confirm_chain(false)?;
        call(self.client()).map_err(|e| self.failed(e))
    }
}

impl L2Source for Upstreams {
    fn first_slot(&mut self) -> Result<Option<u64>, SourceError> {
        self.ask(|u| u.first_slot())
    }

    fn head(&mut self) -> Result<u64, SourceError> {
        if self.candidates.len() > 1 {
            self.choose(Instant::now());
        }
        // A check of the chain (first use, a reconnect) brings the head.
        let head = match self.confirm_chain(true)? {
            Some(head) => head,
            None => self.ask(|u| u.head())?,
        };
        self.pass_head = head;
        Ok(head)
    }

    fn blocks(&mut self, from: u64, to: u64) -> Result<Vec<SoftConfirmation>, SourceError> {
        let blocks = self.ask(|u| u.blocks(from, to))?;
        if blocks.is_empty() && from <= self.pass_head {
            let e = SourceError::bad_answer(format!(
                "upstream {} reported head {} but answered no block {from}",
                self.in_use(),
                self.pass_head
            ));
            return Err(self.failed(e));
        }
        Ok(blocks)
    }

    /// The one the upstream in use served when its chain was checked (no
    /// request more), else asked.
    fn genesis_state_root(&mut self) -> Result<Option<Hash>, SourceError> {
        self.confirm_chain(false)?;
        match self.held.genesis_root {
            Some(root) => Ok(Some(root)),
            None => self.ask(|u| u.genesis_state_root()),
        }
    }

    /// The data dir's parts win over those learnt from the first upstream.
    fn hold_to(&mut self, mut held: ChainIdentity) {
        held.learn(&self.held);
        self.held = held;
    }

    fn rejected(&mut self, why: &str) {
        let e = SourceError::bad_answer(format!("what it sent failed verification ({why})"));
        self.failed(e);
    }

    /// The upstream in use's, for this pass (a pass starts with `head`,
    /// which picks the upstream).
    fn parallel(&self) -> Option<Box<dyn RangeFetch<Vec<SoftConfirmation>>>> {
        self.candidates[self.current].client.parallel()
    }

    fn slow(&self) -> bool {
        self.candidates[self.current].client.slow()
    }
}

impl DaSource for Upstreams {
    fn rejected(&mut self, why: &str) {
        L2Source::rejected(self, why);
    }

    fn last_scanned(&mut self) -> Result<u64, SourceError> {
        self.ask(|u| u.last_scanned())
    }

    fn slot(&mut self, number: u64) -> Result<DaSlot, SourceError> {
        self.ask(|u| u.slot(number))
    }

    fn slots(&mut self, from: u64, to: u64) -> Result<Vec<DaSlot>, SourceError> {
        self.ask(|u| u.slots(from, to))
    }

    fn parallel_slots(&self) -> Option<Box<dyn RangeFetch<Vec<DaSlot>>>> {
        self.candidates[self.current].client.parallel_slots()
    }
}

impl Watcher {
    /// Asks each upstream for its head once; records what each answered and
    /// raises the source head `/health` compares against.
    pub fn look(&mut self) {
        let now = Instant::now();
        for (i, client) in self.clients.iter_mut().enumerate() {
            // Refused for good: not asked again.
            if self.seen[i].chain.load(Relaxed) == OTHER_CHAIN {
                continue;
            }
            let every = match client.pace().answer_time() {
                Some(t) if client.pace().is_slow() => WATCH_EVERY.max(t * SLOW_WATCH_FACTOR),
                _ => WATCH_EVERY,
            };
            // A little early is on time: looks come every WATCH_EVERY.
            if self.asked[i].is_some_and(|t| now + WATCH_EVERY / 2 < t + every) {
                continue;
            }
            self.asked[i] = Some(now);
            match client.head() {
                Ok(head) => {
                    self.seen[i].head.store(head, Relaxed);
                    self.seen[i].up.store(true, Relaxed);
                    // Only a chain known to be ours says how far behind we are.
                    if self.seen[i].chain.load(Relaxed) == SAME_CHAIN {
                        self.progress.l2_source_head.fetch_max(head, Relaxed);
                    }
                }
                Err(e) => {
                    let lost = e.kind == SourceErrorKind::Unreachable;
                    if self.seen[i].up.swap(false, Relaxed) && lost {
                        self.seen[i].downs.fetch_add(1, Relaxed);
                        log::debug!("upstream watcher: {e}");
                    }
                }
            }
        }
        self.progress.note_behind();
    }

    /// Looks every [`WATCH_EVERY`] until `stop`.
    pub fn run(mut self, stop: &Stop) {
        while !stop.is_stopped() {
            self.look();
            if stop.sleep(WATCH_EVERY) {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_names_and_passwords_are_not_shown() {
        assert_eq!(
            display_url("http://user:secret@10.0.0.1:8545/rpc"),
            "http://10.0.0.1:8545/rpc"
        );
        assert_eq!(display_url("https://a.example"), "https://a.example");
        assert_eq!(
            display_url("http://a.example/p@th"),
            "http://a.example/p@th"
        );
    }

    fn upstreams(n: usize) -> Upstreams {
        let urls: Vec<String> = (0..n)
            .map(|i| format!("http://127.0.0.1:{}", i + 1))
            .collect();
        let (u, _) = Upstreams::new(
            &urls,
            None,
            None,
            Arc::new(Progress::default()),
            10,
            Duration::from_secs(5),
        );
        u
    }

    fn saw(u: &Upstreams, i: usize, head: Option<u64>) {
        u.seen[i].up.store(head.is_some(), Relaxed);
        u.seen[i].head.store(head.unwrap_or(0), Relaxed);
    }

    #[test]
    fn the_first_upstream_that_answers_and_is_not_behind_is_chosen() {
        let mut u = upstreams(3);
        let now = Instant::now();
        saw(&u, 0, Some(100));
        saw(&u, 1, Some(500));
        saw(&u, 2, Some(495));
        u.choose(now);
        assert_eq!(u.current, 1, "0 is 400 behind");
        assert_eq!(u.progress.upstream(), Some("http://127.0.0.1:2"));
        u.progress.l2_synced.store(493, Relaxed);
        saw(&u, 0, Some(492));
        u.choose(now);
        assert_eq!(u.current, 1, "0 is below this ledger's head");
        saw(&u, 0, Some(493));
        u.choose(now);
        assert_eq!(
            u.current, 0,
            "within the tolerance of 10: back to the first"
        );
        saw(&u, 0, None);
        u.choose(now);
        assert_eq!(u.current, 1, "0 stopped answering");
        assert_eq!(u.progress.upstream_switches.load(Relaxed), 3);
    }

    #[test]
    fn a_failed_upstream_is_backed_off_and_the_next_one_taken() {
        let mut u = upstreams(2);
        saw(&u, 0, Some(50));
        saw(&u, 1, Some(50));
        u.failed(SourceError::bad_answer("refused"));
        assert_eq!(u.current, 1);
        // Backing off: not chosen again yet, though the watcher sees it.
        saw(&u, 0, Some(50));
        let now = Instant::now();
        u.choose(now);
        assert_eq!(u.current, 1);
        // After its back-off it is preferred again.
        u.choose(now + Duration::from_millis(150));
        assert_eq!(u.current, 0);
        // Failures in a row back off longer, up to the limit.
        for _ in 0..20 {
            u.current = 0;
            u.failed(SourceError::bad_answer("refused"));
        }
        let wait = u.candidates[0].retry_at.unwrap() - Instant::now();
        assert!(
            wait > Duration::from_secs(4) && wait <= Duration::from_secs(5),
            "{wait:?}"
        );
    }

    #[test]
    fn while_every_upstream_is_down_a_failure_moves_nowhere() {
        let mut u = upstreams(2);
        saw(&u, 0, None);
        saw(&u, 1, None);
        for _ in 0..5 {
            u.failed(SourceError::bad_answer("refused"));
        }
        assert_eq!(u.current, 0);
        assert_eq!(u.progress.upstream_switches.load(Relaxed), 0);
        // The second answers the watcher again: the next failure moves there.
        saw(&u, 1, Some(9));
        u.failed(SourceError::bad_answer("refused"));
        assert_eq!(u.current, 1);
    }

    #[test]
    fn one_upstream_stays_in_use_whatever_fails() {
        let mut u = upstreams(1);
        u.failed(SourceError::bad_answer("refused"));
        assert_eq!(u.current, 0);
        assert_eq!(u.progress.upstream_switches.load(Relaxed), 0);
    }
}
