//! Table walks, for `ledgerd export` (see [`crate::jsonl`]) and for the
//! devnet when it starts on a stored chain.
//!
//! The request path never walks a table; an export does, once per table, to
//! find every commitment, proof and DA slot hash the ledger holds. Kept apart
//! from the point reads in `mod.rs` so the two evolve separately.

use std::ops::ControlFlow;

use super::cursor::{entries, u64_key, walk_back};
use super::tables::{Commitments, DaSlots, Proofs, Table, ValueTable};
use super::{corrupt, LedgerError, LedgerRead};
use crate::types::{Hash, SequencerCommitment, VerifiedBatchProof};

/// Walks of tables, in key order. Implemented for every [`LedgerRead`].
pub trait LedgerWalk: LedgerRead {
    /// The stored commitments that end above `height`, in the order they
    /// were found, each with its DA slot (a walk back from the newest slot,
    /// which stops at the first commitment that ends at or below `height`).
    fn commitments_above(
        &self,
        height: u64,
    ) -> Result<Vec<(u64, SequencerCommitment)>, LedgerError> {
        let ctx = || format!("walking {} back to height {height}", Commitments::NAME);
        let mut newest_first = Vec::new();
        walk_back::<Self, Commitments>(self, None, ctx, |k, v| {
            let slot = u64_key::<Commitments>(k)?;
            let list = Commitments::decode(v).map_err(|e| corrupt::<Commitments>(&slot, e))?;
            for c in list.into_iter().rev() {
                if c.l2_end_block_number <= height {
                    return Ok(ControlFlow::Break(()));
                }
                newest_first.push((slot, c));
            }
            Ok(ControlFlow::Continue(()))
        })?;
        newest_first.reverse();
        Ok(newest_first)
    }

    /// Every DA slot that holds commitments, with them, in slot order.
    fn all_commitments(&self) -> Result<Vec<(u64, Vec<SequencerCommitment>)>, LedgerError> {
        entries::<Self, Commitments>(self)
    }

    /// Every stored proof with its DA slot, in slot order, and on one slot
    /// in the order they were verified.
    fn all_proofs(&self) -> Result<Vec<(u64, VerifiedBatchProof)>, LedgerError> {
        Ok(entries::<Self, Proofs>(self)?
            .into_iter()
            .flat_map(|(slot, list)| list.into_iter().map(move |p| (slot, p)))
            .collect())
    }

    /// Every recorded DA slot hash as (slot number, hash), in slot order.
    fn all_da_slots(&self) -> Result<Vec<(u64, Hash)>, LedgerError> {
        let mut out: Vec<(u64, Hash)> = entries::<Self, DaSlots>(self)?
            .into_iter()
            .map(|(hash, slot)| (slot, hash))
            .collect();
        out.sort_unstable();
        Ok(out)
    }
}

impl<R: LedgerRead> LedgerWalk for R {}
