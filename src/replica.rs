//! `ledgerd serve-readonly`: a server on a ledger another process writes.
//!
//! The ledger is opened with LMDB's read-only flag (the environment cannot
//! write: [`crate::ledger::Ledger::writer`] refuses, and no chain source
//! runs). LMDB's lock file still registers this process's readers, so the
//! writer never reuses pages a replica reads, and every new read transaction
//! sees the writer's latest commit. Requests open their own snapshot, so
//! answers are always current; this module only keeps the shared
//! [`Progress`] (sync status, `/health`, `/metrics`) in step with the ledger.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use log::warn;

use crate::ledger::{Ledger, LedgerRead};
use crate::progress::{unix_ms, Progress};
use crate::stop::Stop;

/// How often a replica looks at the ledger's heads.
pub const POLL: Duration = Duration::from_millis(100);

/// Reads the stored heads once into `progress`: both layers read Synced at
/// what the ledger holds (a replica has no source of its own to be behind).
pub fn refresh(ledger: &Ledger, progress: &Progress) -> Result<(), crate::ledger::LedgerError> {
    let (head, scanned, without_bodies) = {
        let r = ledger.reader()?;
        (
            r.head_height()?,
            r.last_scanned_l1()?,
            r.blocks_without_bodies()?,
        )
    };
    progress
        .blocks_without_bodies
        .store(without_bodies, Relaxed);
    let before = progress.l2_synced.swap(head, Relaxed);
    if head > before {
        progress.last_block_unix_ms.store(unix_ms(), Relaxed);
    }
    progress.l2_source_head.store(head, Relaxed);
    progress.l1_synced.store(scanned, Relaxed);
    progress.l1_source_head.store(scanned, Relaxed);
    progress.source_reachable.store(true, Relaxed);
    Ok(())
}

/// Runs until stopped: [`refresh`] every `every`.
pub fn follow(ledger: Arc<Ledger>, progress: Arc<Progress>, stop: Arc<Stop>, every: Duration) {
    let mut failing = false;
    loop {
        match refresh(&ledger, &progress) {
            Ok(()) => failing = false,
            Err(e) if !failing => {
                warn!("replica cannot read the ledger: {e}");
                failing = true;
            }
            Err(_) => {}
        }
        if stop.sleep(every) {
            break;
        }
    }
}
