//! What the sync thread tells an operator at INFO: changes, not progress.
//!
//! Per-chunk progress is logged at DEBUG. At INFO the sync thread says only
//! what changed, as geth and reth do:
//! - `caught up`: both layers reached the heads the source reported;
//! - `fell behind`: after being caught up, the ledger stayed behind the
//!   source for [`FELL_BEHIND_AFTER`] (a new block waiting for the next poll
//!   is not falling behind);
//! - a summary with blocks per second, at most every [`SUMMARY_EVERY`], and
//!   only when something was stored since the last one.
//!
//! Losing and finding the source again is logged where the failure is seen
//! (`Syncer::record_failure`, "sync resumed").

use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use log::info;

use crate::progress::Progress;

/// How long the ledger must stay behind the source before `fell behind` is said.
pub const FELL_BEHIND_AFTER: Duration = Duration::from_secs(10);
/// The shortest time between two summaries.
pub const SUMMARY_EVERY: Duration = Duration::from_secs(30);

/// Where the ledger stood at the last summary.
#[derive(Clone, Copy)]
struct Mark {
    at: Instant,
    blocks: u64,
    l1: u64,
}

/// Turns the shared progress counters into the few INFO lines an operator reads.
pub struct Reporter {
    /// `None` before the first look; then whether the last line said caught up.
    caught_up: Option<bool>,
    /// When the ledger was last seen caught up (or when the reporter started).
    last_caught_up: Instant,
    summary: Mark,
}

impl Reporter {
    pub fn new(progress: &Progress) -> Self {
        let now = Instant::now();
        Reporter {
            caught_up: None,
            last_caught_up: now,
            summary: Mark {
                at: now,
                blocks: progress.blocks_verified.load(Relaxed),
                l1: progress.l1_synced.load(Relaxed),
            },
        }
    }

    /// Looks at the progress after a sync pass and logs what changed.
    pub fn after_step(&mut self, progress: &Progress) {
        self.look(progress, Instant::now());
    }

    fn look(&mut self, progress: &Progress, now: Instant) {
        let l2 = progress.l2_synced.load(Relaxed);
        let l1 = progress.l1_synced.load(Relaxed);
        let l2_head = progress.l2_source_head.load(Relaxed);
        let l1_head = progress.l1_source_head.load(Relaxed);
        if !progress.is_behind() {
            self.last_caught_up = now;
            if self.caught_up != Some(true) {
                info!("caught up: L2 at {l2}, L1 at slot {l1}");
                self.caught_up = Some(true);
            }
        } else {
            let behind_for = now.duration_since(self.last_caught_up);
            let newly_behind = match self.caught_up {
                None => true,
                Some(true) => behind_for >= FELL_BEHIND_AFTER,
                Some(false) => false,
            };
            if newly_behind {
                let verb = if self.caught_up.is_none() {
                    "catching up"
                } else {
                    "fell behind"
                };
                info!(
                    "{verb}: L2 at {l2} of {l2_head}, L1 at slot {l1} of {l1_head} ({} blocks behind)",
                    l2_head.saturating_sub(l2)
                );
                self.caught_up = Some(false);
            }
        }
        self.summarise(progress, now, l2, l1, l2_head);
    }

    fn summarise(&mut self, progress: &Progress, now: Instant, l2: u64, l1: u64, l2_head: u64) {
        let elapsed = now.duration_since(self.summary.at);
        if elapsed < SUMMARY_EVERY {
            return;
        }
        let blocks = progress.blocks_verified.load(Relaxed);
        let new_blocks = blocks.saturating_sub(self.summary.blocks);
        let new_slots = l1.saturating_sub(self.summary.l1);
        if new_blocks > 0 || new_slots > 0 {
            let rate = new_blocks as f64 / elapsed.as_secs_f64();
            let behind = match l2_head.saturating_sub(l2) {
                0 => String::from("in sync"),
                n => format!("{n} blocks behind"),
            };
            info!(
                "L2 at {l2} (+{new_blocks} blocks in {:.0} s, {rate:.1} blocks/s), L1 at slot {l1} (+{new_slots} slots), {behind}",
                elapsed.as_secs_f64()
            );
        }
        self.summary = Mark {
            at: now,
            blocks,
            l1,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(l2: u64, l2_head: u64, l1: u64, l1_head: u64) -> Progress {
        let p = Progress::default();
        p.l2_synced.store(l2, Relaxed);
        p.l2_source_head.store(l2_head, Relaxed);
        p.l1_synced.store(l1, Relaxed);
        p.l1_source_head.store(l1_head, Relaxed);
        p
    }

    /// A reporter of `p` that has looked once, and when.
    fn looked_at(p: &Progress) -> (Reporter, Instant) {
        let mut r = Reporter::new(p);
        let t0 = Instant::now();
        r.look(p, t0);
        (r, t0)
    }

    #[test]
    fn a_block_waiting_for_the_next_poll_is_not_falling_behind() {
        let p = progress(10, 10, 5, 5);
        let (mut r, t0) = looked_at(&p);
        assert_eq!(r.caught_up, Some(true));
        p.l2_source_head.store(11, Relaxed);
        r.look(&p, t0 + Duration::from_millis(200));
        assert_eq!(
            r.caught_up,
            Some(true),
            "one poll behind is still caught up"
        );
        r.look(&p, t0 + FELL_BEHIND_AFTER + Duration::from_millis(1));
        assert_eq!(r.caught_up, Some(false), "behind for the whole window");
        p.l2_synced.store(11, Relaxed);
        r.look(&p, t0 + FELL_BEHIND_AFTER * 2);
        assert_eq!(r.caught_up, Some(true));
    }

    #[test]
    fn a_node_that_starts_behind_is_catching_up_until_it_is_not() {
        let p = progress(0, 1000, 0, 50);
        let (mut r, t0) = looked_at(&p);
        assert_eq!(r.caught_up, Some(false));
        p.l2_synced.store(1000, Relaxed);
        r.look(&p, t0 + Duration::from_secs(1));
        assert_eq!(r.caught_up, Some(false), "L1 is still behind");
        p.l1_synced.store(50, Relaxed);
        r.look(&p, t0 + Duration::from_secs(2));
        assert_eq!(r.caught_up, Some(true));
    }

    #[test]
    fn a_summary_waits_its_interval_and_counts_from_the_last_one() {
        let p = progress(0, 0, 0, 0);
        let mut r = Reporter::new(&p);
        let t0 = r.summary.at;
        p.stored_l2(300, 300);
        r.look(&p, t0 + Duration::from_secs(1));
        assert_eq!(r.summary.blocks, 0, "no summary before its interval");
        r.look(&p, t0 + SUMMARY_EVERY);
        assert_eq!(r.summary.blocks, 300);
        assert_eq!(r.summary.at, t0 + SUMMARY_EVERY);
    }
}
