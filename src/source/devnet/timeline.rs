//! The devnet's DA timeline, decided as the chain is made: which DA slot
//! each new block points at, and what lands on each slot.
//!
//! - The DA chain moves with the L2 chain: a new slot opens once
//!   [`schedule::BLOCKS_PER_SLOT`] blocks point at the newest one. Blocks
//!   move on one slot at a time, as a sequencer that processes every DA
//!   block does, so every slot gets a block (a follower learns a slot's
//!   hash from the blocks that point at it).
//! - When a slot opens, the automatic rules decide what lands on it: a
//!   commitment for every `auto_commit` blocks made before it, and proofs
//!   of the oldest `auto_prove` unproven commitments once the newest of
//!   them is [`PROOF_GAP`] slots old. 0 turns a rule off.
//! - `dev_commit` opens a slot of its own, now, with a commitment of every
//!   block not yet committed; `dev_prove` opens one for each slot that holds
//!   commitments not yet proven, with a proof of them.
//!
//! Proofs follow Citrea's rule: one proof proves commitments of one slot
//! (it names that slot by hash and indexes its commitments sorted by
//! start), so commitments from several slots take several proofs.
//!
//! A slot's plan (which heights, which commitments a proof proves) is kept
//! until the sync thread has scanned the slot; [`super::da`] turns a plan
//! into the slot itself from the hashes the ledger holds. With the default
//! rules and no explicit calls, this is the closed-form schedule of
//! [`schedule`]: commitment `i` covers heights `16i+1..=16i+16` and lands
//! one slot after the slot of its last block; its proof lands
//! [`schedule::PROOF_DELAY_SLOTS`] slots after the slot of its last block.

use std::collections::{BTreeMap, VecDeque};

use crate::source::devnet::schedule;

/// A proof lands this many slots after the slot of the newest commitment it
/// proves (the schedule's proof delay minus its commitment delay).
pub const PROOF_GAP: u64 = schedule::PROOF_DELAY_SLOTS - schedule::COMMITMENT_DELAY_SLOTS;

/// A commitment that will be or has been found on a slot, not yet proven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Committed {
    /// The slot it lands on.
    pub slot: u64,
    /// Where it stands in that slot's commitments, sorted by start (from 0).
    pub pos: u64,
    pub start: u64,
    pub end: u64,
}

/// A proof to make: the commitments at `first..=last` of slot `slot`'s
/// (sorted by start), which cover heights `start..=end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProofPlan {
    pub slot: u64,
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
    pub proofs: Vec<ProofPlan>,
}

impl SlotPlan {
    fn is_empty(&self) -> bool {
        self.commitments.is_empty() && self.proofs.is_empty()
    }
}

/// Where the DA chain stands and what the automatic rules will do next.
#[derive(Clone, Debug)]
pub struct Timeline {
    /// The newest slot.
    tip: u64,
    /// The slot the newest block points at (`tip`, or below it after
    /// explicit calls opened slots).
    pointer: u64,
    /// Blocks that point at `pointer`.
    on_pointer: u64,
    /// The last height a commitment (found, or planned) covers.
    committed_to: u64,
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
    /// The slot the stored head points at.
    pub pointer: u64,
    /// Stored blocks that point at `pointer`.
    pub on_pointer: u64,
    /// The finalized height (the end of the last commitment).
    pub committed_to: u64,
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
            pointer: stored.pointer,
            on_pointer: stored.on_pointer,
            committed_to: stored.committed_to,
            unproven: stored.unproven.into(),
            plans: BTreeMap::new(),
            auto_commit: schedule::COMMITMENT_BLOCKS,
            auto_prove: schedule::COMMITMENTS_PER_PROOF,
        };
        for made in stored.unscanned {
            timeline.open_slot(made);
        }
        timeline
    }

    /// The newest slot.
    pub fn tip(&self) -> u64 {
        self.tip
    }

    /// The slot block `h` points at, `h` being the next block made: the
    /// next slot if one exists, else the newest one until it is full, and
    /// then a new one, opened first.
    pub fn next_block(&mut self, h: u64) -> u64 {
        if self.pointer < self.tip || self.on_pointer >= schedule::BLOCKS_PER_SLOT {
            if self.pointer == self.tip {
                self.open_slot(h - 1);
            }
            self.pointer += 1;
            self.on_pointer = 0;
        }
        self.on_pointer += 1;
        self.pointer
    }

    /// Opens slot `tip + 1` with what the automatic rules put on it, given
    /// that blocks up to `made` exist.
    fn open_slot(&mut self, made: u64) {
        self.tip += 1;
        let slot = self.tip;
        let mut plan = SlotPlan::default();
        let n = self.auto_prove as usize;
        if n > 0 && self.unproven.len() >= n && self.unproven[n - 1].slot + PROOF_GAP <= slot {
            plan.proofs = self.take_unproven(n);
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
        self.unproven.push_back(Committed {
            slot,
            pos: plan.commitments.len() as u64,
            start,
            end,
        });
        plan.commitments.push((start, end));
        self.committed_to = end;
    }

    /// Proofs of the oldest `n` unproven commitments: one per slot they lie on.
    fn take_unproven(&mut self, n: usize) -> Vec<ProofPlan> {
        let mut proofs: Vec<ProofPlan> = Vec::new();
        for c in self.unproven.drain(..n) {
            match proofs.last_mut() {
                Some(p) if p.slot == c.slot => {
                    p.last = c.pos;
                    p.end = c.end;
                }
                _ => proofs.push(ProofPlan {
                    slot: c.slot,
                    first: c.pos,
                    last: c.pos,
                    start: c.start,
                    end: c.end,
                }),
            }
        }
        proofs
    }

    /// `dev_commit`: opens a slot now with one commitment of heights
    /// `committed_to + 1 ..= made`; `None` when every block made is committed.
    pub fn commit_now(&mut self, made: u64) -> Option<u64> {
        if made <= self.committed_to {
            return None;
        }
        self.tip += 1;
        let slot = self.tip;
        let mut plan = SlotPlan::default();
        self.add_commitment(&mut plan, slot, made);
        self.plans.insert(slot, plan);
        Some(slot)
    }

    /// `dev_prove`: proves every commitment not yet proven, now: one proof
    /// per slot they lie on, each on a new slot of its own (so that each is
    /// the answer of `ledger_getVerifiedBatchProofsBySlotHeight` for its
    /// slot). The last of those slots; `None` when there was none to prove.
    pub fn prove_now(&mut self) -> Option<u64> {
        let mut last = None;
        for proof in self.take_unproven(self.unproven.len()) {
            self.tip += 1;
            let plan = SlotPlan {
                proofs: vec![proof],
                ..SlotPlan::default()
            };
            self.plans.insert(self.tip, plan);
            last = Some(self.tip);
        }
        last
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
    use crate::source::devnet::schedule::{
        self, commitment_heights, commitment_slot, proof_slot, slot_of, COMMITMENTS_PER_PROOF,
        DA_GENESIS_SLOT,
    };

    /// A fresh timeline that commits every `auto_commit` blocks and proves
    /// every `auto_prove` commitments.
    fn genesis(auto_commit: u64, auto_prove: u64) -> Timeline {
        let mut t = Timeline::new(Stored {
            tip: DA_GENESIS_SLOT,
            pointer: DA_GENESIS_SLOT,
            ..Stored::default()
        });
        (t.auto_commit, t.auto_prove) = (auto_commit, auto_prove);
        t
    }

    /// The proof of commitments `first..=last` of `slot`, heights `start..=end`.
    fn proof(slot: u64, first: u64, last: u64, start: u64, end: u64) -> ProofPlan {
        ProofPlan {
            slot,
            first,
            last,
            start,
            end,
        }
    }

    /// Makes blocks `from..=to`; returns the slot of each.
    fn make(t: &mut Timeline, from: u64, to: u64) -> Vec<u64> {
        (from..=to).map(|h| t.next_block(h)).collect()
    }

    #[test]
    fn the_default_rules_make_the_closed_form_schedule() {
        // The closed form lands a group of COMMITMENTS_PER_PROOF commitments
        // on one slot; the timeline lands each as soon as it can: the same
        // for groups of one.
        assert_eq!(COMMITMENTS_PER_PROOF, 1);
        let mut t = genesis(schedule::COMMITMENT_BLOCKS, COMMITMENTS_PER_PROOF);
        let slots = make(&mut t, 1, 2000);
        for (i, slot) in slots.iter().enumerate() {
            assert_eq!(*slot, slot_of(i as u64 + 1), "slot of height {}", i + 1);
        }
        let mut checked = 0;
        for i in 0.. {
            let (start, end) = commitment_heights(i);
            if proof_slot(i) > t.tip() {
                break;
            }
            let on = commitment_slot(i);
            assert_eq!(
                t.plan(on).map(|p| p.commitments.clone()),
                Some(vec![(start, end)]),
                "commitment {i}"
            );
            assert_eq!(
                t.plan(proof_slot(i)).map(|p| p.proofs.clone()),
                Some(vec![proof(on, 0, 0, start, end)]),
                "proof {i}"
            );
            checked += 1;
        }
        assert!(checked > 100, "{checked} commitments");
        let planned = t
            .plans
            .values()
            .map(|p| p.commitments.len() + p.proofs.len());
        assert_eq!(
            planned.sum::<usize>() as u64,
            2 * checked + t.unproven.len() as u64
        );
        assert_eq!(PROOF_GAP, schedule::PROOF_DELAY_SLOTS - 1);
    }

    #[test]
    fn an_explicit_commit_and_prove_each_open_a_slot_that_the_next_block_points_at() {
        let mut t = genesis(0, 0);
        assert_eq!(make(&mut t, 1, 5), vec![1000, 1000, 1001, 1001, 1002]);
        assert_eq!(t.prove_now(), None, "nothing committed yet");
        assert_eq!(t.commit_now(5), Some(1003));
        assert_eq!(t.plan(1003).unwrap().commitments, vec![(1, 5)]);
        assert_eq!(t.commit_now(5), None, "nothing left to commit");
        assert_eq!(make(&mut t, 6, 7), vec![1003, 1003]);
        assert_eq!(t.commit_now(7), Some(1004));
        // Two slots hold unproven commitments: two proofs, one slot each.
        assert_eq!(t.prove_now(), Some(1006));
        let proofs: Vec<ProofPlan> = [1005, 1006]
            .iter()
            .flat_map(|s| t.plan(*s).unwrap().proofs.clone())
            .collect();
        assert_eq!(proofs, [proof(1003, 0, 0, 1, 5), proof(1004, 0, 0, 6, 7)]);
        assert_eq!(t.prove_now(), None, "everything is proven");
        // Blocks catch up one slot at a time, then open new ones.
        assert_eq!(make(&mut t, 8, 12), vec![1004, 1005, 1006, 1006, 1007]);
        t.forget_below(1006);
        assert!(t.plan(1005).is_none() && t.plan(1006).is_some());
    }

    #[test]
    fn automatic_rules_pick_up_after_explicit_calls() {
        let mut t = genesis(4, 1);
        make(&mut t, 1, 3);
        assert_eq!(t.commit_now(3), Some(1002));
        // Heights 4..=7 make the next automatic commitment, 4 blocks.
        let slots = make(&mut t, 4, 9);
        let auto = *slots.last().unwrap();
        assert_eq!(t.plan(auto).unwrap().commitments, vec![(4, 7)]);
        // Each is proven PROOF_GAP slots after its slot, by its slot's hash.
        make(&mut t, 10, 60);
        let proofs: Vec<ProofPlan> = t.plans.values().flat_map(|p| p.proofs.clone()).collect();
        assert_eq!(proofs[0], proof(1002, 0, 0, 1, 3));
        assert_eq!(proofs[1], proof(auto, 0, 0, 4, 7));
        assert_eq!(t.plan(1002 + PROOF_GAP).unwrap().proofs[0], proofs[0]);
    }

    #[test]
    fn two_commitments_on_one_slot_are_proven_by_their_positions_in_it() {
        let mut t = genesis(1, 2);
        // A slot opens every two blocks: two one-block commitments each.
        make(&mut t, 1, 40);
        let on = 1001;
        assert_eq!(t.plan(on).unwrap().commitments, vec![(1, 1), (2, 2)]);
        let proofs = t.plan(on + PROOF_GAP).unwrap().proofs.clone();
        assert_eq!(proofs, vec![proof(on, 0, 1, 1, 2)]);
    }
}
