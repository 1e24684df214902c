//! Verified batch proofs: by DA slot height (11) and the last one (12).

use super::error::RpcError;
use super::params::{Params, Slot};
use crate::json;
use crate::ledger::{LedgerRead, LedgerReader};

const HEIGHT: Slot = Slot {
    position: 0,
    name: "height",
};

/// A proof query, parsed from the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// `ledger_getVerifiedBatchProofsBySlotHeight`: the latest proof
    /// verified on that slot (one object, as the spec says).
    BySlotHeight(u64),
    /// `ledger_getLastVerifiedBatchProof`
    Last,
}

impl Request {
    pub fn parse_by_slot_height(params: &Params) -> Result<Request, RpcError> {
        Ok(Request::BySlotHeight(params.height(HEIGHT)?))
    }

    /// Writes the proof, or `null` when there is none.
    pub fn apply(&self, reader: &LedgerReader, out: &mut Vec<u8>) -> Result<(), RpcError> {
        let proof = match *self {
            Request::BySlotHeight(slot) => reader.proof_on_slot(slot)?,
            Request::Last => reader.last_proof()?,
        };
        match proof {
            Some(p) => json::write_verified_batch_proof(out, &p),
            None => json::write_null(out),
        }
        Ok(())
    }
}
