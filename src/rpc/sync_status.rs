//! Sync status (1): `svc_syncStatus`, also answered as `citrea_syncStatus`.
//!
//! Read from the sync thread's shared [`Progress`], not from the ledger.

use crate::progress::Progress;
use crate::wire;

/// Writes `{"l1Status":..,"l2Status":..}`; each layer is `{"Synced":n}` or,
/// while behind, `{"Syncing":{"headBlockNumber":h,"syncedBlockNumber":s}}`.
pub fn apply(progress: &Progress, out: &mut Vec<u8>) {
    wire::write::write_sync_status(out, progress.l1_status(), progress.l2_status());
}
