//! Sequencer commitments on a DA slot: by slot number (7) and by slot hash (8).

use super::error::RpcError;
use super::params::{Params, HASH, HEIGHT};
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
    pub fn parse_by_number(params: &Params) -> Result<Request, RpcError> {
        Ok(Request::BySlotNumber(params.height(HEIGHT)?))
    }

    pub fn parse_by_hash(params: &Params) -> Result<Request, RpcError> {
        Ok(Request::BySlotHash(params.hash(HASH)?))
    }

    /// Writes the commitments of the slot, or `null` when it holds none or
    /// the slot hash is unknown.
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
