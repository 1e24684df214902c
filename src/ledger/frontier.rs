//! The finality frontier: up to which L2 height the ledger is committed
//! (Finalized) and proven, and on which DA slot each frontier moved, kept as
//! an index so that Citrea v0.7's `citrea_getLastCommittedL2Height`,
//! `citrea_getLastProvenL2Height` and `citrea_getL2StatusHeightsByL1Height`,
//! `/health` and `/metrics` answer with one or two B-tree seeks instead of
//! a walk of the status table.
//!
//! The index is Citrea's own (`L2StatusHeights` in sov-db v0.7.0: key
//! `(status, l1_height)`, value `{height, commitment_index}`): table
//! `status_heights`, one entry per DA slot on which a frontier moved up,
//! written by the write rules of `apply.rs` (a commitment raises the
//! committed frontier, a proof the proven one) and by nothing else. An
//! entry holds the frontier's new height, the commitment index that took it
//! there, and when this ledger stored it.
//!
//! What "last committed L2 height" means: the highest height a stored
//! commitment covers, as in Citrea (its full node keeps the highest end
//! height of the commitments it accepted). Since commitments after a gap
//! are accepted (a range whose commitment was refused or never published
//! stays Trusted), heights below the frontier may still be Trusted:
//! `ledger_getSoftConfirmationStatus` answers for one height.
//!
//! Commitment indices: Citrea v0.7 commitments carry an index (from 1);
//! v0.6 commitments, which ledgerd follows, do not. ledgerd numbers them
//! from 1 in the order it stored them, so on a chain whose commitments were
//! each stored once, in order, the numbers are Citrea's.

use std::ops::ControlFlow;
use std::time::{SystemTime, UNIX_EPOCH};

use lmdb::WriteFlags;

use super::cursor::{u64_keys, walk_back};
use super::sealed::Access;
use super::tables::{Commitments, Frontier, KeyCodec, Proofs, StatusHeights, Table, ValueTable};
use super::{corrupt, lmdb_err, LedgerError, LedgerRead, LedgerWriter, ProofCommitmentsError};
use crate::types::SequencerCommitment;

/// Where a frontier stood after a DA slot moved it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrontierMark {
    /// The DA slot (L1 height) whose commitment or proof moved it.
    pub l1_height: u64,
    /// The frontier's L2 height from then on.
    pub l2_height: u64,
    /// The index (from 1, see the module docs) of the commitment that ends
    /// the frontier's range.
    pub commitment_index: u64,
    /// When this ledger stored it (Unix seconds).
    pub stored_unix_s: u64,
}

/// Reads of the frontier index, for every [`LedgerRead`].
pub trait FrontierRead: LedgerRead {
    /// The frontier as it stands now, and the slot that last moved it;
    /// `None` when nothing was ever committed (proven). One seek.
    fn frontier(&self, which: Frontier) -> Result<Option<FrontierMark>, LedgerError> {
        frontier_at(self, which, u64::MAX)
    }

    /// The frontier as it stood once DA slot `l1_height` was applied (the
    /// entry of the highest slot at or below it); `None` when nothing was
    /// committed (proven) by then. One seek.
    fn frontier_at_l1(
        &self,
        which: Frontier,
        l1_height: u64,
    ) -> Result<Option<FrontierMark>, LedgerError> {
        frontier_at(self, which, l1_height)
    }
}

impl<R: LedgerRead> FrontierRead for R {}

fn frontier_at<R: Access>(
    r: &R,
    which: Frontier,
    l1_height: u64,
) -> Result<Option<FrontierMark>, LedgerError> {
    let ctx = || {
        format!(
            "finding the {} frontier at L1 height {l1_height}",
            which.name()
        )
    };
    let above = match l1_height.checked_add(1) {
        Some(next) => StatusHeights::key(&(which, next)),
        None => past_every(which),
    };
    let mut mark = None;
    walk_back::<R, StatusHeights>(r, Some(&above), ctx, |k, v| {
        mark = mark_of(which, k, v)?;
        Ok(ControlFlow::Break(()))
    })?;
    Ok(mark)
}

/// A `status_heights` key above every entry of frontier `which`.
fn past_every(which: Frontier) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = which.byte() + 1;
    k
}

/// The `status_heights` entry (`k`, `v`) as a mark of frontier `which`
/// (`None`: the entry is another frontier's).
fn mark_of(which: Frontier, k: &[u8], v: &[u8]) -> Result<Option<FrontierMark>, LedgerError> {
    match <(Frontier, u64)>::from_bytes(k) {
        Some(key) if key.0 == which => {
            let (l2_height, index, at) =
                StatusHeights::decode(v).map_err(|e| corrupt::<StatusHeights>(&key, e))?;
            Ok(Some(mark(key.1, l2_height, index, at)))
        }
        _ => Ok(None),
    }
}

fn now_unix_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The frontiers before a write rule runs (see [`LedgerWriter::frontiers`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Before {
    finalized: u64,
    proven: u64,
    commitments: u64,
}

impl LedgerWriter<'_> {
    /// The frontiers and the commitment count, taken by a write rule before
    /// it raises statuses.
    pub(crate) fn frontiers(&self) -> Result<Before, LedgerError> {
        Ok(Before {
            finalized: self.finalized_height()?,
            proven: self.proven_height()?,
            commitments: self.commitment_count()?,
        })
    }

    fn put_mark(&mut self, which: Frontier, mark: &FrontierMark) -> Result<(), LedgerError> {
        let value =
            StatusHeights::encode(&(mark.l2_height, mark.commitment_index, mark.stored_unix_s));
        self.put::<StatusHeights>(&(which, mark.l1_height), &value, WriteFlags::empty())
    }

    /// After `commitments` found on DA slot `slot` were applied: when they
    /// moved the committed frontier up, records where it stands, with the
    /// index of the commitment that ends it (`before.commitments` were
    /// stored before these, numbered from 1).
    pub(crate) fn note_commitments(
        &mut self,
        slot: u64,
        before: Before,
        commitments: &[SequencerCommitment],
    ) -> Result<(), LedgerError> {
        let finalized = self.finalized_height()?;
        if finalized <= before.finalized {
            return Ok(());
        }
        let position = commitments
            .iter()
            .enumerate()
            .max_by_key(|(i, c)| (c.l2_end_block_number, *i))
            .map_or(0, |(i, _)| i as u64);
        let index = before.commitments + position + 1;
        let mark = mark(slot, finalized, index, now_unix_s());
        self.put_mark(Frontier::Committed, &mark)
    }

    /// After a proof found on DA slot `slot` was applied: when it moved the
    /// proven frontier up, records where it stands, with the index of the
    /// commitment that ends it (that of the committed frontier's first entry
    /// at or above the new height: a walk back over the commitments stored
    /// since, a handful when proofs keep up; the write path only).
    pub(crate) fn note_proof(&mut self, slot: u64, before: Before) -> Result<(), LedgerError> {
        let proven = self.proven_height()?;
        if proven <= before.proven {
            return Ok(());
        }
        let index = self.committed_index_at(proven)?;
        self.put_mark(Frontier::Proven, &mark(slot, proven, index, now_unix_s()))
    }

    /// The index of the commitment that ends at `height`: found through the
    /// committed frontier's first entry at or above it (the slot whose
    /// commitments took the frontier past it), then in that slot's list;
    /// 0 when no entry is that high.
    fn committed_index_at(&self, height: u64) -> Result<u64, LedgerError> {
        let ctx = || format!("finding the commitment that ends at L2 height {height}");
        let mut found = None;
        let above = past_every(Frontier::Committed);
        walk_back::<Self, StatusHeights>(self, Some(&above), ctx, |k, v| {
            match mark_of(Frontier::Committed, k, v)? {
                Some(m) if m.l2_height >= height => {
                    found = Some((m.l1_height, m.l2_height, m.commitment_index));
                    Ok(ControlFlow::Continue(()))
                }
                _ => Ok(ControlFlow::Break(())),
            }
        })?;
        let Some((slot, top, index)) = found else {
            return Ok(0);
        };
        if top == height {
            return Ok(index);
        }
        // The entry's index is that of the slot's commitment with the
        // highest end; the one ending at `height` is further up its list.
        let list = self.commitments_on_slot(slot)?.unwrap_or_default();
        let position = |wanted: &dyn Fn(&SequencerCommitment) -> bool| {
            list.iter().position(wanted).map(|p| p as u64)
        };
        let at_top = position(&|c| c.l2_end_block_number == top);
        let at_height = position(&|c| c.l2_end_block_number == height);
        Ok(match (at_top, at_height) {
            (Some(t), Some(h)) if h <= t => index.saturating_sub(t - h),
            _ => index,
        })
    }

    /// Rebuilds the frontier index from the stored commitments and proofs,
    /// slot by slot, as the write rules would have written it (on a slot,
    /// proofs before commitments, as the DA pass applies them). For the
    /// layout upgrade that adds the index, and for anything that removes
    /// commitments or proofs. The times are those of the rebuild. Returns
    /// how many entries it wrote.
    pub fn rebuild_frontier(&mut self) -> Result<u64, LedgerError> {
        let ctx = || format!("clearing {}", StatusHeights::NAME);
        self.txn
            .clear_db(StatusHeights::db(&self.ledger.dbs))
            .map_err(lmdb_err(ctx))?;
        let mut slots = u64_keys::<_, Commitments>(self, 0)?;
        slots.extend(u64_keys::<_, Proofs>(self, 0)?);
        slots.sort_unstable();
        slots.dedup();
        let now = now_unix_s();
        // The statuses are the truth: no proof may take the proven frontier
        // above the proven height they hold.
        let proven_cap = self.proven_height()?;
        let (mut committed, mut proven, mut count) = (0u64, 0u64, 0u64);
        let mut written = 0;
        // (end height, index) of the commitments that moved the committed
        // frontier, for the proofs' indices.
        let mut ends: Vec<(u64, u64)> = Vec::new();
        for slot in slots {
            let mut proven_here = None;
            for p in self.proofs_on_slot(slot)? {
                let top = match self.proof_commitments(&p) {
                    Ok(Some(cs)) => cs.iter().map(|c| c.l2_end_block_number).max().unwrap_or(0),
                    Err(ProofCommitmentsError::Ledger(e)) => return Err(e),
                    // A proof whose slot cannot be read back: the last
                    // height its output names (Kumquat-era proofs).
                    Ok(None) | Err(_) => p.proof_output.last_l2_height,
                }
                .min(proven_cap);
                if top > proven {
                    proven = top;
                    proven_here = Some(top);
                }
            }
            let list = self.commitments_on_slot(slot)?.unwrap_or_default();
            let mut raised = None;
            for c in &list {
                count += 1;
                if c.l2_end_block_number > committed {
                    committed = c.l2_end_block_number;
                    ends.push((committed, count));
                    raised = Some((committed, count));
                }
            }
            if let Some((h, index)) = raised {
                self.put_mark(Frontier::Committed, &mark(slot, h, index, now))?;
                written += 1;
            }
            if let Some(h) = proven_here {
                let index = ends
                    .iter()
                    .find(|(end, _)| *end >= h)
                    .map_or(0, |(_, i)| *i);
                self.put_mark(Frontier::Proven, &mark(slot, h, index, now))?;
                written += 1;
            }
        }
        Ok(written)
    }
}

fn mark(l1_height: u64, l2_height: u64, commitment_index: u64, stored_unix_s: u64) -> FrontierMark {
    FrontierMark {
        l1_height,
        l2_height,
        commitment_index,
        stored_unix_s,
    }
}
