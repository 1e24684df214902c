//! What the ledger says of itself: the L2 genesis state root (6) and the
//! last scanned L1 height (13).

use super::error::RpcError;
use crate::ledger::{LedgerRead, LedgerReader};
use crate::wire;

/// A query of the ledger's own facts (neither takes parameters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// `ledger_getL2GenesisStateRoot`: 32 byte values, or `null` when not known yet.
    GenesisStateRoot,
    /// `ledger_getLastScannedL1Height`: 0 on an empty ledger.
    LastScannedL1Height,
}

impl Request {
    pub fn apply(&self, reader: &LedgerReader, out: &mut Vec<u8>) -> Result<(), RpcError> {
        match self {
            Request::GenesisStateRoot => match reader.genesis_state_root()? {
                Some(root) => wire::write::write_byte_array(out, &root),
                None => wire::write::write_null(out),
            },
            Request::LastScannedL1Height => wire::write::write_u64(out, reader.last_scanned_l1()?),
        }
        Ok(())
    }
}
