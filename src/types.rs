//! The ledger's records, as plain Rust values.
//!
//! These are the nouns every other module shares: the ledger stores them, the
//! RPC layer writes them as JSON, the sync thread verifies them and the devnet
//! makes them. Field names follow the wire names of `docs/API.md`.

use std::fmt;

/// A 32-byte hash (SHA-256 output, DA slot hash, state root, Merkle root).
pub type Hash = [u8; 32];

/// The all-zero hash: `prevHash` of height 1.
pub const ZERO_HASH: Hash = [0u8; 32];

/// One L2 block signed by the sequencer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SoftConfirmation {
    pub l2_height: u64,
    pub da_slot_height: u64,
    pub da_slot_hash: Hash,
    pub da_slot_txs_commitment: Hash,
    pub hash: Hash,
    pub prev_hash: Hash,
    /// Raw transaction blobs (hex strings on the wire).
    pub txs: Vec<Vec<u8>>,
    pub state_root: Hash,
    pub signature: [u8; 64],
    pub pub_key: [u8; 32],
    /// Raw deposit blobs (hex strings on the wire).
    pub deposit_data: Vec<Vec<u8>>,
    pub l1_fee_rate: u128,
    pub timestamp: u64,
}

/// A sequencer commitment found on a DA slot: a Merkle root over a contiguous
/// range of soft-confirmation hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SequencerCommitment {
    pub found_in_l1: u64,
    pub merkle_root: Hash,
    pub l2_start_block_number: u64,
    pub l2_end_block_number: u64,
}

/// The public output of a verified batch proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProofOutput {
    pub initial_state_root: Hash,
    pub final_state_root: Hash,
    pub prev_soft_confirmation_hash: Hash,
    pub final_soft_confirmation_hash: Hash,
    /// Key -> value; `None` is a deleted key (`null` on the wire).
    pub state_diff: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// The hash of the DA slot whose commitments this proof proves.
    pub da_slot_hash: Hash,
    /// First and last index (from 0) of the commitments it proves, in the
    /// list of the commitments on the `da_slot_hash` slot sorted by
    /// `l2StartBlockNumber`, without those in `preproven_commitments`.
    pub sequencer_commitments_range: (u64, u64),
    pub sequencer_public_key: Vec<u8>,
    pub sequencer_da_public_key: Vec<u8>,
    /// Positions in that sorted list of commitments an earlier proof proved.
    pub preproven_commitments: Vec<u64>,
    /// The last height proven (Kumquat-era proofs; 0 in Genesis-era ones,
    /// whose prev/final soft confirmation hashes are all zero as well).
    pub last_l2_height: u64,
}

/// A zero-knowledge batch proof that was verified on DA slot `height` (the
/// slot it was found on; the slot whose commitments it proves is the one
/// named by `proof_output.da_slot_hash`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedBatchProof {
    pub proof: Vec<u8>,
    pub proof_output: ProofOutput,
    pub height: u64,
}

/// Where a soft confirmation stands. The order is the order of progress:
/// a status never moves backwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    Trusted = 0,
    Finalized = 1,
    Proven = 2,
}

impl Status {
    /// Every status, in order: a status's byte is its index.
    const ALL: [Status; 3] = [Status::Trusted, Status::Finalized, Status::Proven];

    /// The wire string: exactly `Trusted`, `Finalized` or `Proven`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Trusted => "Trusted",
            Status::Finalized => "Finalized",
            Status::Proven => "Proven",
        }
    }

    /// The wire string a Citrea v0.6 node writes: `trusted`, `finalized`, `proven`.
    pub fn as_lowercase_str(self) -> &'static str {
        match self {
            Status::Trusted => "trusted",
            Status::Finalized => "finalized",
            Status::Proven => "proven",
        }
    }

    /// The one-byte form used in the ledger.
    pub fn to_byte(self) -> u8 {
        self as u8
    }

    /// Reads the one-byte form; `None` for a byte no status has.
    pub fn from_byte(b: u8) -> Option<Status> {
        Status::ALL.get(usize::from(b)).copied()
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One layer's progress (`svc_syncStatus`'s `l1Status`, `l2Status`): the
/// head its source reported and how far the ledger has got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerStatus {
    Synced(u64),
    Syncing { head: u64, synced: u64 },
}

/// One DA (layer-1) slot as the sync thread sees it: its hash (when the
/// source tells it), and the commitments and the verified proofs found on it.
///
/// A source need not know a slot's own hash: an upstream node does not serve
/// it. The sync thread learns it from the L2 blocks that point at the slot
/// (their `daSlotHeight` / `daSlotHash`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DaSlot {
    pub number: u64,
    pub hash: Option<Hash>,
    pub commitments: Vec<SequencerCommitment>,
    /// In the order the source lists them (Citrea may verify several on one slot).
    pub proofs: Vec<VerifiedBatchProof>,
    /// Proof chunks this slot's block carried, and the chunks an aggregate
    /// on it used (a source that reads Bitcoin itself; empty otherwise):
    /// the found ones are stored with the slot and forgotten only with it.
    pub chunks: ChunkChanges,
}

/// What a DA slot changes in the remembered proof chunks (see
/// [`DaSlot::chunks`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkChanges {
    /// Chunk transactions found on the slot: txid (raw byte order) and raw bytes.
    pub found: Vec<(Hash, Vec<u8>)>,
    /// Chunks an aggregate on the slot put together into a proof, by txid
    /// (they stay stored: a rollback to a slot before the aggregate's needs
    /// them again).
    pub used: Vec<Hash>,
}

/// A block for tests: its hash holds its height, so consecutive heights
/// link; two 60-byte transactions, a DA slot near 800,000.
#[cfg(test)]
pub(crate) fn sample_block(height: u64) -> SoftConfirmation {
    let mut hash = [0u8; 32];
    hash[..8].copy_from_slice(&height.to_be_bytes());
    hash[31] = 0xaa;
    let mut prev_hash = [0u8; 32];
    if height > 1 {
        prev_hash[..8].copy_from_slice(&(height - 1).to_be_bytes());
        prev_hash[31] = 0xaa;
    }
    SoftConfirmation {
        l2_height: height,
        da_slot_height: 800_000 + height / 10,
        da_slot_hash: [1; 32],
        da_slot_txs_commitment: [2; 32],
        hash,
        prev_hash,
        txs: vec![vec![height as u8; 60], vec![0xbb; 60]],
        state_root: [height as u8; 32],
        signature: [6; 64],
        pub_key: [7; 32],
        deposit_data: vec![],
        l1_fee_rate: 1000,
        timestamp: 1_735_000_000 + height,
    }
}

/// A proof for tests: verified on DA slot `height`, proving up to
/// `last_l2_height`, its state diff a set key and a deleted one.
#[cfg(test)]
pub(crate) fn sample_proof(height: u64, last_l2_height: u64) -> VerifiedBatchProof {
    VerifiedBatchProof {
        proof: vec![1, 2, 3],
        proof_output: ProofOutput {
            initial_state_root: [1; 32],
            final_state_root: [2; 32],
            prev_soft_confirmation_hash: [3; 32],
            final_soft_confirmation_hash: [4; 32],
            state_diff: vec![(vec![0xaa], Some(vec![0xbb, 0x0c])), (vec![0x01], None)],
            da_slot_hash: [5; 32],
            sequencer_commitments_range: (0, 0),
            sequencer_public_key: vec![7; 32],
            sequencer_da_public_key: vec![8; 33],
            preproven_commitments: vec![1, 2],
            last_l2_height,
        },
        height,
    }
}

/// `p` with its state diff sorted: JSON reads a state diff through a map, so
/// a proof read back is compared sorted.
#[cfg(test)]
pub(crate) fn diff_sorted(mut p: VerifiedBatchProof) -> VerifiedBatchProof {
    p.proof_output.state_diff.sort();
    p
}

/// A commitment for tests: found on `slot`, over `start..=end`, its root
/// `start`'s low byte repeated.
#[cfg(test)]
pub(crate) fn sample_commitment(slot: u64, start: u64, end: u64) -> SequencerCommitment {
    SequencerCommitment {
        found_in_l1: slot,
        merkle_root: [start as u8; 32],
        l2_start_block_number: start,
        l2_end_block_number: end,
    }
}
