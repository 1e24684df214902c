//! How verified records land in the ledger: the write rules that the sync
//! thread, `ledgerd import` and the devnet (through the sync thread) share.
//!
//! Each method writes one verified record with everything that goes with
//! it, inside the caller's write transaction: a block with its hash index,
//! status and the DA slot it points at; a commitment with the statuses it
//! raises; a proof with the heights it proves. Verification is the caller's
//! (`crate::checks`): nothing here checks a chain rule.

use super::{LedgerError, LedgerRead, LedgerWriter};
use crate::types::{Hash, SequencerCommitment, SoftConfirmation, Status, VerifiedBatchProof};

impl LedgerWriter<'_> {
    /// Stores verified blocks in height order, each with its hash index and
    /// status Trusted, and records the DA slot hash each points at (a
    /// signed block vouches for it; `..OnSlotByHash` looks it up). Fails
    /// with `AlreadyStored(height)` at the first height already stored.
    /// Between blocks the server's threads may take the core
    /// (`os::give_way`).
    pub fn store_blocks<'a>(
        &mut self,
        blocks: impl IntoIterator<Item = &'a SoftConfirmation>,
    ) -> Result<(), LedgerError> {
        let mut last_slot = None;
        for sc in blocks {
            crate::os::give_way();
            self.put_soft_confirmation(sc)?;
            if last_slot != Some(sc.da_slot_height) {
                self.put_da_slot_hash(sc.da_slot_height, &sc.da_slot_hash)?;
                last_slot = Some(sc.da_slot_height);
            }
        }
        Ok(())
    }

    /// Stores verified commitments found on DA slot `slot` (in the order
    /// given), each by [`LedgerWriter::apply_commitment`]; when they move
    /// the committed frontier up, the frontier index says so
    /// (`frontier.rs`).
    pub fn apply_commitments(
        &mut self,
        slot: u64,
        commitments: &[SequencerCommitment],
    ) -> Result<(), LedgerError> {
        let before = match commitments {
            // Most slots carry none: nothing to read or move.
            [] => return Ok(()),
            _ => self.frontiers()?,
        };
        for c in commitments {
            self.finalize_committed(c)?;
        }
        self.add_commitments(slot, commitments)?;
        self.note_commitments(slot, before, commitments)
    }

    /// The commitment rule, as Citrea v0.6.2's full node applies it
    /// (`process_sequencer_commitment`): a verified commitment is recorded
    /// on the DA slot it was found on, and every height it covers becomes
    /// Finalized. Whatever came before: after a gap (heights never
    /// committed, or whose commitment was refused) the gap stays Trusted;
    /// a range committed again is recorded on its new slot too. A status
    /// never goes down: a Proven height stays Proven (where Citrea would
    /// write it back to Finalized).
    pub fn apply_commitment(
        &mut self,
        slot: u64,
        c: &SequencerCommitment,
    ) -> Result<(), LedgerError> {
        self.apply_commitments(slot, std::slice::from_ref(c))
    }

    /// The status part of the commitment rule alone (for a recompute of
    /// statuses from the commitments already recorded): the heights `c`
    /// covers become Finalized, none goes down.
    pub fn finalize_committed(&mut self, c: &SequencerCommitment) -> Result<(), LedgerError> {
        self.raise_status(
            c.l2_start_block_number,
            c.l2_end_block_number,
            Status::Finalized,
        )
    }

    /// The proof rule: a verified proof is recorded on the DA slot it was
    /// found on, and the height ranges it proves
    /// (`checks::verify_proof`) become Proven; when that moves the
    /// proven frontier up, the frontier index says so.
    pub fn apply_proof(
        &mut self,
        slot: u64,
        proof: &VerifiedBatchProof,
        proven: &[(u64, u64)],
    ) -> Result<(), LedgerError> {
        let before = self.frontiers()?;
        self.prove_ranges(proven)?;
        self.put_proof(slot, proof)?;
        self.note_proof(slot, before)
    }

    /// The status part of the proof rule alone (for a recompute): every
    /// height of `proven` becomes Proven.
    pub fn prove_ranges(&mut self, proven: &[(u64, u64)]) -> Result<(), LedgerError> {
        for &(start, end) in proven {
            self.raise_status(start, end, Status::Proven)?;
        }
        Ok(())
    }
}

/// Where the stored chain ends, for the rules that continue it.
pub trait ChainTip: LedgerRead {
    /// The head height and its hash: `(0, ZERO_HASH)` for an empty ledger
    /// (the block at height 1 links to the zero hash).
    fn tip(&self) -> Result<(u64, Hash), LedgerError> {
        let head = self.head_height()?;
        if head == 0 {
            return Ok((0, crate::types::ZERO_HASH));
        }
        Ok((head, self.hash_at(head)?.unwrap_or_default()))
    }

    /// The DA slot the newest stored block points at (0 when none is
    /// stored): a proof may name no later slot.
    fn head_slot(&self) -> Result<u64, LedgerError> {
        let head = self.head_height()?;
        if head == 0 {
            return Ok(0);
        }
        Ok(self
            .soft_confirmation(head)?
            .map_or(0, |sc| sc.da_slot_height))
    }
}

impl<T: LedgerRead> ChainTip for T {}
