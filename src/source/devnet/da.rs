//! Where the devnet makes DA slots: each slot's hash, the sequencer
//! commitments that land on it (real Merkle roots over stored block hashes)
//! and the batch proofs that land later still, made by Citrea's rule: a
//! proof names the slot its commitments landed on by that slot's hash, and
//! indexes that slot's commitments (sorted by start) with
//! `sequencerCommitmentsRange`. Which ones land on which slot is the
//! timeline's plan ([`super::timeline`]).
//!
//! A proof's bytes are a fake risc0 receipt ([`crate::proof::receipt`]):
//! no seal, a claim of the devnet's made-up image, and a journal that is the
//! proof's output in the circuit's layout (the old one for a Genesis-era
//! proof), so a follower decodes and compares every devnet proof as it
//! would a real one. `--dev-proof-bytes` pads the state diff to make each
//! receipt that size.

use crate::chain_rules::{merkle_root, Fork};
use crate::ledger::LedgerRead;
use crate::proof::{image_ids, journal, receipt};
use crate::source::devnet::timeline::ProofPlan;
use crate::source::devnet::{schedule, Devnet, View};
use crate::source::SourceError;
use crate::types::{DaSlot, Hash, ProofOutput, SequencerCommitment, VerifiedBatchProof, ZERO_HASH};

/// Why a slot cannot be made yet.
pub(super) fn missing(what: &str, height: u64) -> SourceError {
    SourceError::bad_answer(format!(
        "devnet cannot make its DA slot yet: the {what} of height {height} is not stored"
    ))
}

/// DA slot `number`, with what the devnet's plan puts on it, and no hash
/// yet.
pub(super) fn make_slot(
    ledger: &View<impl LedgerRead>,
    number: u64,
) -> Result<DaSlot, SourceError> {
    let mut commitments = Vec::new();
    let mut proofs = Vec::new();
    if let Some(plan) = ledger.devnet.state.timeline.plan(number) {
        for &(start, end) in &plan.commitments {
            let leaves = (start..=end)
                .map(|h| ledger.hash(h))
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
            proofs.push(make_proof(ledger, number, p)?);
        }
    }
    // The slot's own hash is the caller's: made up from the seed, or the
    // regtest block's once it is mined.
    Ok(DaSlot {
        number,
        commitments,
        proofs,
        ..DaSlot::default()
    })
}

fn make_proof(
    ledger: &View<impl LedgerRead>,
    slot: u64,
    plan: &ProofPlan,
) -> Result<VerifiedBatchProof, SourceError> {
    let Devnet {
        config, forks, key, ..
    } = ledger.devnet;
    let seed = config.seed;
    let (start, end) = (plan.start, plan.end);
    // A Genesis-era proof (its last height under the Genesis rules) has no
    // prev/final soft confirmation hashes or lastL2Height: zeros, as Citrea
    // serves them.
    let genesis_era = forks.fork_at(end) == Fork::Genesis;
    let below = match start {
        1 => ZERO_HASH,
        _ => ledger.hash(start - 1)?,
    };
    let prev_hash = if genesis_era { ZERO_HASH } else { below };
    let final_hash = if genesis_era {
        ZERO_HASH
    } else {
        ledger.hash(end)?
    };
    let entropy = schedule::derive("ledgerd-devnet/proof", seed, slot);
    let state_diff: Vec<(Vec<u8>, Option<Vec<u8>>)> = (0..4u8)
        .map(|k| {
            let mut key = b"devnet/account/".to_vec();
            key.extend_from_slice(&entropy[..4]);
            key.push(k);
            let value = (k != 3)
                .then(|| crate::chain_rules::sha256(&[entropy.as_slice(), &[k]].concat()).to_vec());
            (key, value)
        })
        .collect();
    let mut proof_output = ProofOutput {
        initial_state_root: ledger.state_root(start - 1)?,
        final_state_root: ledger.state_root(end)?,
        prev_soft_confirmation_hash: prev_hash,
        final_soft_confirmation_hash: final_hash,
        state_diff,
        // The slot its commitments landed on, and where they stand in
        // that slot's list sorted by start.
        da_slot_hash: ledger.slot_hash(plan.slot)?,
        sequencer_commitments_range: (plan.first, plan.last),
        sequencer_public_key: key.public_key().to_vec(),
        sequencer_da_public_key: ledger.sequencer_da_key(),
        preproven_commitments: Vec::new(),
        last_l2_height: if genesis_era { 0 } else { end },
    };
    // The Genesis-era guest wrote the old journal layout, with two fields
    // the RPC does not show: the hash below the first height, and the DA
    // slot the commitments landed on with the one before it.
    let old_layout = if genesis_era {
        let condition = journal::OldValidityCondition {
            prev_hash: ledger.slot_hash(plan.slot.saturating_sub(1))?,
            block_hash: ledger.slot_hash(plan.slot)?,
        };
        Some((below, condition))
    } else {
        None
    };
    let image = image_ids::batch_image(None, forks.fork_at(end))
        .map_err(|e| SourceError::bad_answer(format!("devnet cannot make a fake receipt: {e}")))?;
    let encode = |out: &ProofOutput| {
        journal::encode(out, old_layout.clone())
            .map_err(|e| SourceError::bad_answer(format!("devnet cannot encode a journal: {e}")))
    };
    // --dev-proof-bytes: a padding entry in the state diff brings the
    // receipt to that size, when it is larger than the receipt without one.
    let bare = receipt::fake_receipt_overhead(&image) + encode(&proof_output)?.len();
    let key = [b"devnet/padding/".as_slice(), &entropy[..4]].concat();
    let entry_overhead = 4 + key.len() + 1 + 4;
    if let Some(fill) = config.proof_bytes.checked_sub(bare + entry_overhead) {
        let value = (0..fill).map(|i| entropy[i % 32]).collect();
        proof_output.state_diff.push((key, Some(value)));
    }
    let proof = receipt::make_fake(&image, encode(&proof_output)?);
    Ok(VerifiedBatchProof {
        proof,
        height: slot,
        proof_output,
    })
}
