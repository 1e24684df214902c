//! `--ephemeral`: a new temporary data dir, removed when the node stops,
//! and the ones of killed nodes removed at the next start.

use log::info;

use super::NodeError;
use crate::ledger::LedgerError;

/// A new temporary data dir, removed (with everything in it) on drop.
#[derive(Debug)]
pub(super) struct EphemeralDir(pub(super) std::path::PathBuf);

impl EphemeralDir {
    pub(super) fn create() -> Result<EphemeralDir, NodeError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static MADE: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        const PREFIX: &str = "ledgerd-ephemeral-";
        let parent = std::env::temp_dir();
        // The dirs of processes that were killed before they could remove
        // their own (`kill -9`): their writer lock is free, their PID gone.
        for dir in crate::ledger::lock::remove_stale_ephemeral(&parent, PREFIX) {
            info!(
                "removed the ephemeral data dir {} of a process that is gone",
                dir.display()
            );
        }
        let name = format!(
            "{PREFIX}{}-{}-{nanos:08x}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        );
        let path = parent.join(name);
        std::fs::create_dir(&path).map_err(|source| {
            NodeError::Ledger(LedgerError::Io {
                path: path.clone(),
                source,
            })
        })?;
        Ok(EphemeralDir(path))
    }
}

impl Drop for EphemeralDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            log::warn!(
                "the ephemeral data dir {} was not removed: {e}",
                self.0.display()
            );
        }
    }
}
