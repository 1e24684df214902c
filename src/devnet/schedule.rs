//! The devnet's timetable: how fast the DA chain moves, when commitments
//! and proofs land by default, and the values derived from the seed.
//! ([`super::timeline`] applies the timetable as blocks are made.)
//!
//! With these numbers a chain of N >= 100 blocks has all three statuses:
//! the oldest blocks Proven, then Finalized, the newest Trusted.

use crate::chain::sha256;
use crate::types::Hash;

/// The DA slot that L2 height 1 points at.
pub const DA_GENESIS_SLOT: u64 = 1000;
/// L2 blocks per DA slot.
pub const BLOCKS_PER_SLOT: u64 = 2;
/// L2 blocks per sequencer commitment (the default of `dev_setAutoCommit`).
pub const COMMITMENT_BLOCKS: u64 = 16;
/// Sequencer commitments per batch proof (the default of `dev_setAutoProve`).
pub const COMMITMENTS_PER_PROOF: u64 = 4;
/// A commitment lands this many slots after the slot of its last block.
pub const COMMITMENT_DELAY_SLOTS: u64 = 1;
/// A proof lands this many slots after the slot of its last block.
pub const PROOF_DELAY_SLOTS: u64 = 8;
/// Timestamp of height 0 (unix seconds); block h is one second later per height.
pub const GENESIS_TIMESTAMP: u64 = 1_726_584_750;

/// The DA slot L2 height `h` (>= 1) points at, while no `dev_commit` or
/// `dev_prove` has opened a slot of its own.
pub fn slot_of(h: u64) -> u64 {
    DA_GENESIS_SLOT + h.saturating_sub(1) / BLOCKS_PER_SLOT
}

fn derive(label: &str, seed: u64, n: u64) -> Hash {
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

/// Transactions commitment of DA slot `n`.
pub fn slot_txs_commitment(seed: u64, n: u64) -> Hash {
    derive("ledgerd-devnet/slot-txs", seed, n)
}

/// Random bytes for block `h` (its txs, deposits and fee).
pub fn block_entropy(seed: u64, h: u64) -> Hash {
    derive("ledgerd-devnet/block", seed, h)
}

/// Random bytes for the proof that lands on slot `n`.
pub fn proof_entropy(seed: u64, n: u64) -> Hash {
    derive("ledgerd-devnet/proof", seed, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_hold_consecutive_heights() {
        assert_eq!(slot_of(1), DA_GENESIS_SLOT);
        assert_eq!((slot_of(7), slot_of(8), slot_of(9)), (1003, 1003, 1004));
    }
}
