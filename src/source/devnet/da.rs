//! Where the devnet makes DA slots: each slot's hash, the sequencer
//! commitments that land on it (real Merkle roots over stored block hashes)
//! and the batch proofs that land later still, made by Citrea's rule: a
//! proof names the slot its commitments landed on by that slot's hash, and
//! indexes that slot's commitments (sorted by start) with
//! `sequencerCommitmentsRange`. Which ones land on which slot is the
//! timeline's plan ([`super::timeline`]).

use crate::chain::{merkle_root, Fork, ForkTable};
use crate::ledger::LedgerRead;
use crate::source::devnet::timeline::{ProofPlan, SlotPlan};
use crate::source::devnet::{schedule, DevnetConfig};
use crate::source::SourceError;
use crate::types::{DaSlot, Hash, ProofOutput, SequencerCommitment, VerifiedBatchProof, ZERO_HASH};

fn missing(what: &str, height: u64) -> SourceError {
    SourceError::bad_answer(format!(
        "devnet cannot make its DA slot yet: the {what} of height {height} is not stored"
    ))
}

fn hash_at(ledger: &impl LedgerRead, h: u64) -> Result<Hash, SourceError> {
    ledger
        .hash_at(h)
        .map_err(|e| SourceError::unreachable("devnet cannot read the ledger", e))?
        .ok_or_else(|| missing("hash", h))
}

fn state_root_at(ledger: &impl LedgerRead, h: u64, seed: u64) -> Result<Hash, SourceError> {
    if h == 0 {
        return Ok(schedule::genesis_state_root(seed));
    }
    ledger
        .state_root_at(h)
        .map_err(|e| SourceError::unreachable("devnet cannot read the ledger", e))?
        .ok_or_else(|| missing("state root", h))
}

/// DA slot `number`, with what `plan` says lands on it (`None`: nothing).
pub fn make_slot(
    config: &DevnetConfig,
    forks: &ForkTable,
    pub_key: &[u8; 32],
    ledger: &impl LedgerRead,
    number: u64,
    plan: Option<&SlotPlan>,
) -> Result<DaSlot, SourceError> {
    let seed = config.seed;
    let mut commitments = Vec::new();
    let mut proofs = Vec::new();
    if let Some(plan) = plan {
        for &(start, end) in &plan.commitments {
            let leaves = (start..=end)
                .map(|h| hash_at(ledger, h))
                .collect::<Result<Vec<Hash>, SourceError>>()?;
            let merkle_root = merkle_root(&leaves).unwrap_or(ZERO_HASH);
            commitments.push(SequencerCommitment {
                found_in_l1: number,
                merkle_root,
                l2_start_block_number: start,
                l2_end_block_number: end,
            });
        }
        for p in &plan.proofs {
            proofs.push(make_proof(config, forks, pub_key, ledger, number, p)?);
        }
    }
    Ok(DaSlot {
        number,
        hash: Some(schedule::slot_hash(seed, number)),
        commitments,
        proofs,
    })
}

fn make_proof(
    config: &DevnetConfig,
    forks: &ForkTable,
    pub_key: &[u8; 32],
    ledger: &impl LedgerRead,
    slot: u64,
    plan: &ProofPlan,
) -> Result<VerifiedBatchProof, SourceError> {
    let seed = config.seed;
    let (start, end) = (plan.start, plan.end);
    // A Genesis-era proof (its last height under the Genesis rules) has no
    // prev/final soft confirmation hashes or lastL2Height: zeros, as Citrea
    // serves them.
    let genesis_era = forks.fork_at(end) == Fork::Genesis;
    let prev_hash = if start == 1 || genesis_era {
        ZERO_HASH
    } else {
        hash_at(ledger, start - 1)?
    };
    let final_hash = if genesis_era {
        ZERO_HASH
    } else {
        hash_at(ledger, end)?
    };
    let entropy = schedule::proof_entropy(seed, slot);
    let mut proof = Vec::with_capacity(config.proof_bytes);
    let mut block = entropy;
    while proof.len() < config.proof_bytes {
        proof.extend_from_slice(&block);
        block = crate::chain::sha256(&block);
    }
    proof.truncate(config.proof_bytes);
    let state_diff = (0..4u8)
        .map(|k| {
            let mut key = b"devnet/account/".to_vec();
            key.extend_from_slice(&entropy[..4]);
            key.push(k);
            let value = (k != 3)
                .then(|| crate::chain::sha256(&[entropy.as_slice(), &[k]].concat()).to_vec());
            (key, value)
        })
        .collect();
    Ok(VerifiedBatchProof {
        proof,
        height: slot,
        proof_output: ProofOutput {
            initial_state_root: state_root_at(ledger, start - 1, seed)?,
            final_state_root: state_root_at(ledger, end, seed)?,
            prev_soft_confirmation_hash: prev_hash,
            final_soft_confirmation_hash: final_hash,
            state_diff,
            // The slot its commitments landed on, and where they stand in
            // that slot's list sorted by start.
            da_slot_hash: schedule::slot_hash(seed, plan.slot),
            sequencer_commitments_range: (plan.first, plan.last),
            sequencer_public_key: pub_key.to_vec(),
            sequencer_da_public_key: schedule::sequencer_da_public_key(seed),
            preproven_commitments: Vec::new(),
            last_l2_height: if genesis_era { 0 } else { end },
        },
    })
}
