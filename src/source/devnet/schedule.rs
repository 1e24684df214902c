//! The devnet's timetable: which DA slot each block points at, when
//! commitments and proofs land, and the values derived from the seed.
//!
//! A batch proof proves the commitments of one DA slot, as a Citrea prover
//! does: its `daSlotHash` is that slot's hash and its
//! `sequencerCommitmentsRange` indexes the slot's commitments sorted by
//! start ([0, n-1]: all of them). [`COMMITMENTS_PER_PROOF`] commitments land
//! on one slot (one, as on Citrea's testnet); the proof lands some slots later.
//!
//! With these numbers a chain of N >= 100 blocks has all three statuses:
//! the oldest blocks Proven, then Finalized, the newest Trusted.
//!
//! The chain is made by [`super::timeline`], which applies these rules as
//! blocks are made (and lets `dev_*` calls change them); the functions below
//! are the timetable in closed form, which the timeline's tests check it
//! against.

use crate::chain_rules::sha256;
use crate::types::Hash;

/// The DA slot that L2 height 1 points at.
pub const DA_GENESIS_SLOT: u64 = 1000;
/// L2 blocks per DA slot.
pub const BLOCKS_PER_SLOT: u64 = 2;
/// L2 blocks per sequencer commitment.
pub const COMMITMENT_BLOCKS: u64 = 16;
/// Sequencer commitments that land on one DA slot, and that one batch proof proves.
pub const COMMITMENTS_PER_PROOF: u64 = 1;
/// A slot's commitments land this many slots after the slot of their last block.
pub const COMMITMENT_DELAY_SLOTS: u64 = 1;
/// A proof lands this many slots after the slot of the last block it proves
/// (longer than the slots a group of commitments spans, so that from 100
/// blocks on some finalized heights always wait for their proof).
pub const PROOF_DELAY_SLOTS: u64 = 16;
/// Timestamp of height 0 (unix seconds); block h is one second later per height.
pub const GENESIS_TIMESTAMP: u64 = 1_726_584_750;

/// The DA slot L2 height `h` (>= 1) points at.
pub fn slot_of(h: u64) -> u64 {
    DA_GENESIS_SLOT + h.saturating_sub(1) / BLOCKS_PER_SLOT
}

/// The L2 heights that point at `slot`.
pub fn heights_of_slot(slot: u64) -> std::ops::RangeInclusive<u64> {
    let first = (slot - DA_GENESIS_SLOT) * BLOCKS_PER_SLOT + 1;
    first..=first + BLOCKS_PER_SLOT - 1
}

/// 32 bytes that only `label`, `seed` and `n` decide: everything the
/// devnet makes up (keys, hashes, its blocks' and proofs' random bytes)
/// comes from here, so one seed makes one chain.
pub fn derive(label: &str, seed: u64, n: u64) -> Hash {
    let mut input = Vec::with_capacity(label.len() + 16);
    input.extend_from_slice(label.as_bytes());
    input.extend_from_slice(&seed.to_be_bytes());
    input.extend_from_slice(&n.to_be_bytes());
    sha256(&input)
}

/// The sequencer's Ed25519 secret key.
pub fn sequencer_secret(seed: u64) -> Hash {
    derive("ledgerd-devnet/sequencer", seed, 0)
}

/// The sequencer's DA public key (33 bytes, compressed-point shaped).
pub fn sequencer_da_public_key(seed: u64) -> Vec<u8> {
    let mut key = vec![0x02];
    key.extend_from_slice(&derive("ledgerd-devnet/da-key", seed, 0));
    key
}

/// The genesis state root.
pub fn genesis_state_root(seed: u64) -> Hash {
    derive("ledgerd-devnet/genesis", seed, 0)
}

/// Hash of DA slot `n`.
pub fn slot_hash(seed: u64, n: u64) -> Hash {
    derive("ledgerd-devnet/slot", seed, n)
}

/// What a soft confirmation says about the DA slot it points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotRef {
    /// `daSlotHeight`.
    pub number: u64,
    /// `daSlotHash`.
    pub hash: Hash,
    /// `daSlotTxsCommitment`.
    pub txs_commitment: Hash,
}

/// Slot `n` of the simulated DA chain: made-up hashes from the seed.
pub fn simulated_slot(seed: u64, n: u64) -> SlotRef {
    SlotRef {
        number: n,
        hash: slot_hash(seed, n),
        txs_commitment: derive("ledgerd-devnet/slot-txs", seed, n),
    }
}

/// Commitment `i` (counted from 0) covers these heights.
pub fn commitment_heights(i: u64) -> (u64, u64) {
    (i * COMMITMENT_BLOCKS + 1, (i + 1) * COMMITMENT_BLOCKS)
}

/// The slot commitment `i` lands on (with the others of its proof).
pub fn commitment_slot(i: u64) -> u64 {
    let (_, last_of_group) = proof_commitments(i / COMMITMENTS_PER_PROOF);
    slot_of(commitment_heights(last_of_group).1) + COMMITMENT_DELAY_SLOTS
}

/// Proof `j` (counted from 0) proves these commitments (counted from 0 on
/// the whole chain; all of them land on `commitment_slot`).
pub fn proof_commitments(j: u64) -> (u64, u64) {
    (
        j * COMMITMENTS_PER_PROOF,
        (j + 1) * COMMITMENTS_PER_PROOF - 1,
    )
}

/// The slot proof `j` lands on.
pub fn proof_slot(j: u64) -> u64 {
    let last_commitment = proof_commitments(j).1;
    slot_of(commitment_heights(last_commitment).1) + PROOF_DELAY_SLOTS
}

/// The group of commitments (proof `j`'s) whose last block points at `slot`.
fn group_ending_on(slot: u64) -> Option<u64> {
    if slot < DA_GENESIS_SLOT {
        return None;
    }
    let per_proof = COMMITMENT_BLOCKS * COMMITMENTS_PER_PROOF;
    heights_of_slot(slot)
        .find(|h| h.is_multiple_of(per_proof))
        .map(|h| h / per_proof - 1)
}

/// The commitments that land on `slot` (first and last index), if any do.
pub fn commitments_landing_on(slot: u64) -> Option<(u64, u64)> {
    group_ending_on(slot.checked_sub(COMMITMENT_DELAY_SLOTS)?).map(proof_commitments)
}

/// The proof that lands on `slot`, if one does.
pub fn proof_landing_on(slot: u64) -> Option<u64> {
    group_ending_on(slot.checked_sub(PROOF_DELAY_SLOTS)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_commitment_and_proof_lands_on_exactly_the_slot_the_schedule_names() {
        for i in 0..50 {
            let (a, b) = commitments_landing_on(commitment_slot(i)).unwrap();
            assert!((a..=b).contains(&i));
            assert_eq!(proof_landing_on(proof_slot(i)), Some(i));
            assert_eq!(
                commitment_slot(proof_commitments(i).0),
                commitment_slot(proof_commitments(i).1)
            );
            assert!(proof_slot(i) > commitment_slot(proof_commitments(i).1));
        }
        let first = DA_GENESIS_SLOT + COMMITMENT_DELAY_SLOTS;
        let commitments: u64 = (first..first + 400)
            .filter_map(commitments_landing_on)
            .map(|(a, b)| b - a + 1)
            .sum();
        assert_eq!(commitments, 400 * BLOCKS_PER_SLOT / COMMITMENT_BLOCKS);
    }

    #[test]
    fn slots_hold_consecutive_heights() {
        assert_eq!(slot_of(1), DA_GENESIS_SLOT);
        assert_eq!(heights_of_slot(slot_of(7)).collect::<Vec<_>>(), vec![7, 8]);
    }
}
