//! Sequencer commitments on a DA slot: by slot number (7) and by slot hash (8).

use super::error::RpcError;
use crate::ledger::{LedgerRead, LedgerReader};
use crate::types::Hash;
use crate::wire;

/// A commitments query, parsed from the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// `ledger_getSequencerCommitmentsOnSlotByNumber`
    BySlotNumber(u64),
    /// `ledger_getSequencerCommitmentsOnSlotByHash`
    BySlotHash(Hash),
}

impl Request {
    pub fn apply(&self, reader: &LedgerReader, out: &mut Vec<u8>) -> Result<(), RpcError> {
        let slot = match *self {
            Request::BySlotNumber(slot) => Some(slot),
            Request::BySlotHash(hash) => reader.slot_by_hash(&hash)?,
        };
        let commitments = match slot {
            Some(slot) => reader.commitments_on_slot(slot)?,
            None => None,
        };
        match commitments {
            Some(items) if !items.is_empty() => wire::write::write_commitments(out, &items),
            _ => wire::write::write_null(out),
        }
        Ok(())
    }
}
