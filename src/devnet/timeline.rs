//! The devnet's DA timeline, decided as the chain is made: which DA slot
//! each new block points at, and what lands on each slot.
//!
//! - The DA chain moves with the L2 chain: a new slot opens once
//!   [`schedule::BLOCKS_PER_SLOT`] blocks point at the newest one.
//! - When a slot opens, the automatic rules decide what lands on it: a
//!   commitment for every `auto_commit` blocks made before it, and a proof
//!   of the oldest `auto_prove` unproven commitments once the newest of
//!   them is [`PROOF_GAP`] slots old. 0 turns a rule off.
//! - `dev_commit` and `dev_prove` open a slot of their own, now, with a
//!   commitment of every block not yet committed, or a proof of every
//!   commitment not yet proven.
//!
//! A slot's plan (which heights, which commitment indexes) is kept until the
//! sync thread has scanned the slot; [`super::da`] turns a plan into the
//! slot itself from the hashes the ledger holds. With the default rules and
//! no explicit calls, this is the schedule of [`schedule`]: commitment `i`
//! covers heights `16i+1..=16i+16` and lands one slot after the slot of its
//! last block; proof `j` proves commitments `4j..=4j+3` and lands eight
//! slots after the slot of its last block.

use std::collections::{BTreeMap, VecDeque};

use crate::devnet::schedule;

/// A proof lands this many slots after the slot of the newest commitment it
/// proves (the schedule's proof delay minus its commitment delay).
pub const PROOF_GAP: u64 = schedule::PROOF_DELAY_SLOTS - schedule::COMMITMENT_DELAY_SLOTS;

/// A commitment that will be or has been found on a slot, not yet proven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Committed {
    /// Its index (commitments are counted from 0 in the order they are found).
    pub index: u64,
    /// The slot it lands on.
    pub slot: u64,
    pub start: u64,
    pub end: u64,
}

/// A proof to make: commitments `first..=last` (indexes), which cover
/// heights `start..=end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProofPlan {
    pub first: u64,
    pub last: u64,
    pub start: u64,
    pub end: u64,
}

/// What lands on one slot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlotPlan {
    /// Height ranges `(start, end)` of the commitments found on it, in order.
    pub commitments: Vec<(u64, u64)>,
    pub proof: Option<ProofPlan>,
}

impl SlotPlan {
    fn is_empty(&self) -> bool {
        self.commitments.is_empty() && self.proof.is_none()
    }
}

/// Where the DA chain stands and what the automatic rules will do next.
#[derive(Clone, Debug)]
pub struct Timeline {
    /// The newest slot.
    tip: u64,
    /// Blocks that point at it.
    on_tip: u64,
    /// The last height a commitment (found, or planned) covers.
    committed_to: u64,
    /// Commitments found or planned: the next one's index.
    commitments: u64,
    /// Commitments not yet proven (nor planned to be), oldest first.
    unproven: VecDeque<Committed>,
    /// Plans of slots the sync thread has not scanned yet.
    plans: BTreeMap<u64, SlotPlan>,
    /// Commit every this many blocks (0: only when asked).
    pub auto_commit: u64,
    /// Prove every this many commitments (0: only when asked).
    pub auto_prove: u64,
}

/// What the ledger says about the chain when the devnet (re)starts.
#[derive(Clone, Debug, Default)]
pub struct Stored {
    /// The newest slot that exists: the slot of the stored head, or the
    /// last scanned slot if that is newer.
    pub tip: u64,
    /// Stored blocks that point at `tip`.
    pub on_tip: u64,
    /// The finalized height (the end of the last commitment).
    pub committed_to: u64,
    /// Commitments stored.
    pub commitments: u64,
    /// Stored commitments that no proof covers, oldest first.
    pub unproven: Vec<Committed>,
    /// For each slot above the last scanned one, up to `tip`, oldest first:
    /// the newest height made before it opened. Their plans are decided
    /// again, by the automatic rules.
    pub unscanned: Vec<u64>,
}

impl Timeline {
    /// The timeline of a stored chain, with the default rules.
    pub fn new(stored: Stored) -> Timeline {
        let mut timeline = Timeline {
            tip: stored.tip - stored.unscanned.len() as u64,
            on_tip: 0,
            committed_to: stored.committed_to,
            commitments: stored.commitments,
            unproven: stored.unproven.into(),
            plans: BTreeMap::new(),
            auto_commit: schedule::COMMITMENT_BLOCKS,
            auto_prove: schedule::COMMITMENTS_PER_PROOF,
        };
        for made in stored.unscanned {
            timeline.open_slot(made);
        }
        timeline.on_tip = stored.on_tip;
        timeline
    }

    /// The newest slot.
    pub fn tip(&self) -> u64 {
        self.tip
    }

    /// The last height a commitment covers or will cover.
    pub fn committed_to(&self) -> u64 {
        self.committed_to
    }

    /// The slot block `h` points at, `h` being the next block made: opens
    /// a new slot first when the newest one is full.
    pub fn next_block(&mut self, h: u64) -> u64 {
        if self.on_tip >= schedule::BLOCKS_PER_SLOT {
            self.open_slot(h - 1);
        }
        self.on_tip += 1;
        self.tip
    }

    /// Opens slot `tip + 1` with what the automatic rules put on it, given
    /// that blocks up to `made` exist.
    fn open_slot(&mut self, made: u64) {
        self.tip += 1;
        self.on_tip = 0;
        let slot = self.tip;
        let mut plan = SlotPlan::default();
        let n = self.auto_prove as usize;
        if n > 0 && self.unproven.len() >= n && self.unproven[n - 1].slot + PROOF_GAP <= slot {
            plan.proof = Some(self.take_unproven(n));
        }
        if self.auto_commit > 0 {
            while made.saturating_sub(self.committed_to) >= self.auto_commit {
                let end = self.committed_to + self.auto_commit;
                self.add_commitment(&mut plan, slot, end);
            }
        }
        if !plan.is_empty() {
            self.plans.insert(slot, plan);
        }
    }

    fn add_commitment(&mut self, plan: &mut SlotPlan, slot: u64, end: u64) {
        let start = self.committed_to + 1;
        plan.commitments.push((start, end));
        self.unproven.push_back(Committed {
            index: self.commitments,
            slot,
            start,
            end,
        });
        self.commitments += 1;
        self.committed_to = end;
    }

    fn take_unproven(&mut self, n: usize) -> ProofPlan {
        let taken: Vec<Committed> = self.unproven.drain(..n).collect();
        let (first, last) = (taken[0], taken[n - 1]);
        ProofPlan {
            first: first.index,
            last: last.index,
            start: first.start,
            end: last.end,
        }
    }

    /// `dev_commit`: opens a slot now with one commitment of heights
    /// `committed_to + 1 ..= made`; `None` when every block made is committed.
    pub fn commit_now(&mut self, made: u64) -> Option<u64> {
        if made <= self.committed_to {
            return None;
        }
        self.tip += 1;
        self.on_tip = 0;
        let slot = self.tip;
        let mut plan = SlotPlan::default();
        self.add_commitment(&mut plan, slot, made);
        self.plans.insert(slot, plan);
        Some(slot)
    }

    /// `dev_prove`: opens a slot now with one proof of every commitment not
    /// yet proven; `None` when there is none.
    pub fn prove_now(&mut self) -> Option<u64> {
        if self.unproven.is_empty() {
            return None;
        }
        self.tip += 1;
        self.on_tip = 0;
        let slot = self.tip;
        let proof = self.take_unproven(self.unproven.len());
        self.plans.insert(
            slot,
            SlotPlan {
                commitments: Vec::new(),
                proof: Some(proof),
            },
        );
        Some(slot)
    }

    /// What lands on `slot` (nothing, unless planned).
    pub fn plan(&self, slot: u64) -> Option<&SlotPlan> {
        self.plans.get(&slot)
    }

    /// Forgets the plans of slots below `slot` (the ledger has scanned them).
    pub fn forget_below(&mut self, slot: u64) {
        self.plans = self.plans.split_off(&slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devnet::schedule::{
        slot_of, BLOCKS_PER_SLOT, COMMITMENTS_PER_PROOF, COMMITMENT_BLOCKS, COMMITMENT_DELAY_SLOTS,
        DA_GENESIS_SLOT, PROOF_DELAY_SLOTS,
    };

    fn genesis() -> Timeline {
        Timeline::new(Stored {
            tip: DA_GENESIS_SLOT,
            ..Stored::default()
        })
    }

    /// Makes blocks `from..=to`; returns the slot of each.
    fn make(t: &mut Timeline, from: u64, to: u64) -> Vec<u64> {
        (from..=to).map(|h| t.next_block(h)).collect()
    }

    #[test]
    fn the_default_rules_make_the_closed_form_schedule() {
        let mut t = genesis();
        let slots = make(&mut t, 1, 2000);
        for (i, slot) in slots.iter().enumerate() {
            assert_eq!(*slot, slot_of(i as u64 + 1), "slot of height {}", i + 1);
        }
        for i in 0..2000 / COMMITMENT_BLOCKS - 1 {
            let (start, end) = (i * COMMITMENT_BLOCKS + 1, (i + 1) * COMMITMENT_BLOCKS);
            let slot = slot_of(end) + COMMITMENT_DELAY_SLOTS;
            assert_eq!(
                t.plan(slot).map(|p| p.commitments.clone()),
                Some(vec![(start, end)]),
                "commitment {i}"
            );
        }
        let per_proof = COMMITMENT_BLOCKS * COMMITMENTS_PER_PROOF;
        for j in 0..2000 / per_proof - 2 {
            let end = (j + 1) * per_proof;
            let slot = slot_of(end) + PROOF_DELAY_SLOTS;
            let want = ProofPlan {
                first: j * COMMITMENTS_PER_PROOF,
                last: (j + 1) * COMMITMENTS_PER_PROOF - 1,
                start: j * per_proof + 1,
                end,
            };
            assert_eq!(t.plan(slot).and_then(|p| p.proof), Some(want), "proof {j}");
        }
        let planned = t.plans.len() as u64;
        let commitments = 2000 / COMMITMENT_BLOCKS - 1;
        assert!(planned >= commitments, "{planned} plans");
        assert_eq!(BLOCKS_PER_SLOT, 2, "the test's slot arithmetic");
    }

    #[test]
    fn an_explicit_commit_and_prove_each_open_a_slot_that_the_next_block_points_at() {
        let mut t = genesis();
        t.auto_commit = 0;
        t.auto_prove = 0;
        assert_eq!(make(&mut t, 1, 5), vec![1000, 1000, 1001, 1001, 1002]);
        assert_eq!(t.prove_now(), None, "nothing committed yet");
        assert_eq!(t.commit_now(5), Some(1003));
        assert_eq!(t.plan(1003).unwrap().commitments, vec![(1, 5)]);
        assert_eq!(t.commit_now(5), None, "nothing left to commit");
        assert_eq!(make(&mut t, 6, 7), vec![1003, 1003]);
        assert_eq!(t.commit_now(7), Some(1004));
        assert_eq!(t.prove_now(), Some(1005));
        let proof = t.plan(1005).unwrap().proof.unwrap();
        assert_eq!(
            proof,
            ProofPlan {
                first: 0,
                last: 1,
                start: 1,
                end: 7
            }
        );
        assert_eq!(t.prove_now(), None, "everything is proven");
        assert_eq!(make(&mut t, 8, 8), vec![1005]);
        t.forget_below(1005);
        assert!(t.plan(1004).is_none() && t.plan(1005).is_some());
    }

    #[test]
    fn automatic_rules_pick_up_after_explicit_calls() {
        let mut t = genesis();
        t.auto_commit = 4;
        t.auto_prove = 1;
        make(&mut t, 1, 3);
        assert_eq!(t.commit_now(3), Some(1002));
        // Heights 4..=7 make the next automatic commitment, 4 blocks.
        let slots = make(&mut t, 4, 9);
        let auto = *slots.last().unwrap();
        assert_eq!(t.plan(auto).unwrap().commitments, vec![(4, 7)]);
        // The explicit commitment (index 0) is proven PROOF_GAP slots later.
        make(&mut t, 10, 30);
        let proofs: Vec<ProofPlan> = t.plans.values().filter_map(|p| p.proof).collect();
        assert_eq!(proofs[0].first, 0);
        assert_eq!((proofs[0].start, proofs[0].end), (1, 3));
        assert_eq!(proofs[1].first, 1);
    }
}
