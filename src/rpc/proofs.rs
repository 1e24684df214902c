//! Verified batch proofs: by DA slot height (11) and the last one (12).

use super::error::RpcError;
use crate::ledger::{LedgerRead, LedgerReader};
use crate::wire;
use crate::wire::WireShape;

/// A proof query, parsed from the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// `ledger_getVerifiedBatchProofsBySlotHeight`: with `--wire ledgerd`,
    /// the proof verified last on that slot (one object, as the spec says);
    /// with `--wire citrea`, an array of every proof verified on it, in the
    /// order they were verified.
    BySlotHeight(u64),
    /// `ledger_getLastVerifiedBatchProof`: the proof verified last on the
    /// highest slot that has one.
    Last,
}

impl Request {
    pub fn apply(
        &self,
        reader: &LedgerReader,
        wire: WireShape,
        out: &mut Vec<u8>,
    ) -> Result<(), RpcError> {
        match (*self, wire) {
            (Request::BySlotHeight(slot), WireShape::Citrea) => {
                let proofs = reader.proofs_on_slot(slot)?;
                if proofs.is_empty() {
                    wire::write::write_null(out);
                } else {
                    wire::write::write_citrea_proofs_on_slot(out, &proofs);
                }
            }
            (request, WireShape::Ledgerd) => {
                let proof = match request {
                    Request::BySlotHeight(slot) => reader.last_proof_on_slot(slot)?,
                    Request::Last => reader.last_proof()?,
                };
                match proof {
                    Some(p) => wire::write::write_verified_batch_proof(out, &p),
                    None => wire::write::write_null(out),
                }
            }
            // Citrea v0.6.2 answers the first proof of the highest slot
            // (`get_last_verified_batch_proof`, sov-db's ledger_db/rpc.rs:
            // `item.value[0]`); the spec, the last one verified.
            (Request::Last, WireShape::Citrea) => match reader.first_proof_on_last_slot()? {
                None => wire::write::write_null(out),
                Some(p) => wire::write::write_citrea_last_proof(out, &p),
            },
        }
        Ok(())
    }
}
