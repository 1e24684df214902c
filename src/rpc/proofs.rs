//! Verified batch proofs: by DA slot height (11) and the last one (12).

use super::error::RpcError;
use super::params::{Params, Slot};
use super::Wire;
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
    /// verified on that slot (one object, as the spec says; with
    /// `--wire citrea`, an array of it).
    BySlotHeight(u64),
    /// `ledger_getLastVerifiedBatchProof`
    Last,
}

impl Request {
    pub fn parse_by_slot_height(params: &Params) -> Result<Request, RpcError> {
        Ok(Request::BySlotHeight(params.height(HEIGHT)?))
    }

    /// Writes the proof, or `null` when there is none, in the shape of
    /// `wire`: the seed's `{"proof":{..,"height":n}}` for both methods, or
    /// Citrea's array without height (11) and `{"proof":{..},"height":n}` (12).
    pub fn apply(
        &self,
        reader: &LedgerReader,
        wire: Wire,
        out: &mut Vec<u8>,
    ) -> Result<(), RpcError> {
        let proof = match *self {
            Request::BySlotHeight(slot) => reader.proof_on_slot(slot)?,
            Request::Last => reader.last_proof()?,
        };
        match (proof, wire, self) {
            (None, _, _) => json::write_null(out),
            (Some(p), Wire::Ledgerd, _) => json::write_verified_batch_proof(out, &p),
            (Some(p), Wire::Citrea, Request::BySlotHeight(_)) => {
                json::write_citrea_proofs_on_slot(out, std::slice::from_ref(&p))
            }
            (Some(p), Wire::Citrea, Request::Last) => json::write_citrea_last_proof(out, &p),
        }
        Ok(())
    }
}
