//! What the sync thread has done, shared with the server without locks.
//!
//! The sync thread writes these counters; the server reads them to answer
//! `svc_syncStatus`, `/health` and `/metrics`. Every field is an atomic, so a
//! reader may see one layer updated before the other, never a torn number.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// One layer's progress: the head its source reported and how far the ledger has got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerStatus {
    Synced(u64),
    Syncing { head: u64, synced: u64 },
}

/// Shared sync progress.
#[derive(Debug, Default)]
pub struct Progress {
    /// Newest L2 height the source has reported (0: none seen yet).
    pub l2_source_head: AtomicU64,
    /// Newest L2 height stored in the ledger.
    pub l2_synced: AtomicU64,
    /// Newest DA slot the source has reported as scanned.
    pub l1_source_head: AtomicU64,
    /// Newest DA slot this ledger has scanned.
    pub l1_synced: AtomicU64,
    /// Unix milliseconds of the last block stored (0: none since start).
    pub last_block_unix_ms: AtomicU64,
    /// Whether the last request to the source succeeded.
    pub source_reachable: AtomicBool,
    /// Blocks verified and stored since start.
    pub blocks_verified: AtomicU64,
    /// Blocks the ledger holds that were accepted without their transaction
    /// bodies (`--allow-missing-tx-bodies`), counted over the ledger's life.
    pub blocks_without_bodies: AtomicU64,
    /// Upstream requests that failed since start.
    pub upstream_errors: AtomicU64,
    /// Verification failures since start, by check.
    pub failures: FailureCounts,
    /// Unix milliseconds of the last request to the source that succeeded (0: none yet).
    pub source_ok_unix_ms: AtomicU64,
    /// Unix milliseconds since when the ledger has been behind the source's
    /// heads without catching up (0: caught up). `/health` uses it.
    pub behind_since_unix_ms: AtomicU64,
    /// Unix milliseconds of the last DA slot scanned (0: none since start).
    pub last_slot_unix_ms: AtomicU64,
    /// A follower's upstreams (`--upstream`, preferred first, as shown to
    /// operators: without user names or passwords); set once at start.
    pub upstream_urls: OnceLock<Vec<String>>,
    /// Which of `upstream_urls` the sync thread asks now.
    pub upstream_in_use: AtomicUsize,
    /// Times the follower has moved to another upstream since start.
    pub upstream_switches: AtomicU64,
}

/// Verification failures by the check that failed.
#[derive(Debug, Default)]
pub struct FailureCounts {
    pub prev_hash: AtomicU64,
    pub hash: AtomicU64,
    pub signature: AtomicU64,
    pub pub_key: AtomicU64,
    pub merkle_root: AtomicU64,
    pub proof: AtomicU64,
    pub receipt: AtomicU64,
    pub other: AtomicU64,
}

fn layer(head: u64, synced: u64) -> LayerStatus {
    if synced >= head {
        LayerStatus::Synced(synced)
    } else {
        LayerStatus::Syncing { head, synced }
    }
}

/// Unix time in milliseconds.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Progress {
    /// L2: Synced while the ledger holds the newest head the source reported.
    pub fn l2_status(&self) -> LayerStatus {
        layer(
            self.l2_source_head.load(Relaxed),
            self.l2_synced.load(Relaxed),
        )
    }

    /// L1 (DA): Synced while the ledger has scanned the newest slot the source reported.
    pub fn l1_status(&self) -> LayerStatus {
        layer(
            self.l1_source_head.load(Relaxed),
            self.l1_synced.load(Relaxed),
        )
    }

    /// Records that the ledger now holds L2 blocks up to `height`.
    pub fn stored_l2(&self, height: u64, new_blocks: u64) {
        self.l2_synced.store(height, Relaxed);
        if new_blocks > 0 {
            self.blocks_verified.fetch_add(new_blocks, Relaxed);
            self.last_block_unix_ms.store(unix_ms(), Relaxed);
        }
    }

    /// Records that a request to the source succeeded.
    pub fn source_ok(&self) {
        self.source_reachable.store(true, Relaxed);
        self.source_ok_unix_ms.store(unix_ms(), Relaxed);
    }

    /// Records that the ledger now has DA slots scanned up to `slot`.
    pub fn scanned_l1(&self, slot: u64, new_slots: u64) {
        self.l1_synced.store(slot, Relaxed);
        if new_slots > 0 {
            self.last_slot_unix_ms.store(unix_ms(), Relaxed);
        }
    }

    /// Whether either layer is behind the head its source reported.
    pub fn is_behind(&self) -> bool {
        self.l2_synced.load(Relaxed) < self.l2_source_head.load(Relaxed)
            || self.l1_synced.load(Relaxed) < self.l1_source_head.load(Relaxed)
    }

    /// The URL of the upstream in use (`None` unless following upstreams).
    pub fn upstream(&self) -> Option<&str> {
        let urls = self.upstream_urls.get()?;
        urls.get(self.upstream_in_use.load(Relaxed))
            .map(String::as_str)
    }

    /// Blocks the ledger's L2 head is below the newest head the source reported.
    pub fn l2_behind(&self) -> u64 {
        self.l2_source_head
            .load(Relaxed)
            .saturating_sub(self.l2_synced.load(Relaxed))
    }

    /// Re-reads whether the ledger is behind its source: starts the "behind
    /// since" clock when it first falls behind, stops it when caught up.
    pub fn note_behind(&self) {
        if self.is_behind() {
            let _ = self
                .behind_since_unix_ms
                .compare_exchange(0, unix_ms(), Relaxed, Relaxed);
        } else {
            self.behind_since_unix_ms.store(0, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_is_syncing_only_while_behind_the_head_it_has_seen() {
        let p = Progress::default();
        assert_eq!(p.l2_status(), LayerStatus::Synced(0));
        p.l2_source_head.store(10, Relaxed);
        p.stored_l2(4, 4);
        assert_eq!(
            p.l2_status(),
            LayerStatus::Syncing {
                head: 10,
                synced: 4
            }
        );
        p.stored_l2(10, 6);
        assert_eq!(p.l2_status(), LayerStatus::Synced(10));
        assert_eq!(p.blocks_verified.load(Relaxed), 10);
    }
}
