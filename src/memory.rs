//! Giving the heap back: the allocator's settings for the whole process,
//! and trims after work that used a lot of heap (a catch-up, a devnet
//! prefill), so a node that has caught up holds about what a fresh one does.
//!
//! Where the memory went (measured with `scripts/memory.sh`, see
//! docs/PERFORMANCE.md): glibc's malloc gives each thread that allocates an
//! arena of its own (up to 8 per core) and returns a freed block to the
//! system only when it lies at the top of its arena and the free space
//! there exceeds a threshold, a threshold that grows (up to 64 MB) each
//! time a large block is freed. A catch-up frees its range answers, its
//! blocks in flight and its verify threads' work in the middle of several
//! arenas: 13-30 MB that stayed for the life of the process. [`configure`]
//! bounds the arenas; [`trim`] (at most once a second while a catch-up
//! runs, and once when it is done) hands every whole free page back.
//!
//! What stays is live: chiefly the dirty-page cache of LMDB, which keeps
//! the pages of the largest write transaction for reuse (about 4 KB per
//! block a transaction holds; see `SyncConfig::commit_blocks`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{SystemTime, UNIX_EPOCH};

/// Arenas malloc may create (glibc's default is 8 per core). Each arena a
/// catch-up's threads spread their work over keeps some of it: with 8, a
/// follower served at 10.6 MB after a 1M catch-up (2.2x a fresh server).
/// Fewer arenas are shared by more threads, which then wait for each
/// other's malloc: with 2, a batch of 10 calls was answered at 0.77x the
/// rate of the uncapped build (perf: malloc and futex wakes). 4 kept it
/// within 6% and the follower within 2x (`scripts/memory.sh`, docs/PERFORMANCE.md).
const ARENAS: i32 = 4;

/// Sets the allocator's limits; call at start-up, before threads start.
///
/// The thresholds are left to glibc: fixing the mmap threshold low (256 KB)
/// made every 100-block range answer a fresh mapping, page faults and all,
/// and cost the catch-up a fifth of its speed; the trims below give back
/// what the grown thresholds keep.
pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes malloc's parameters; called before any
    // other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, ARENAS);
    }
}

/// Hands every whole free page of every arena back to the system.
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes malloc's own locks; it frees nothing in use.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Unix milliseconds of the last trim by [`trim_now_and_then`].
static LAST_TRIM_MS: AtomicU64 = AtomicU64::new(0);

/// [`trim`], unless one ran less than a second ago: for a catch-up to call
/// after each commit (a trim of a few MB takes well under a millisecond).
pub fn trim_now_and_then() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let last = LAST_TRIM_MS.load(Relaxed);
    if now.saturating_sub(last) >= 1000
        && LAST_TRIM_MS
            .compare_exchange(last, now, Relaxed, Relaxed)
            .is_ok()
    {
        trim();
    }
}
