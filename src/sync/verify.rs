//! Where the sync thread verifies a block, a commitment and a proof, by the
//! chain rules of each block's fork ([`crate::chain`]), before anything is
//! written.
//!
//! Each check has a name ([`Check`]) so a failure can be logged, counted in
//! `/metrics` and explained: "soft confirmation 17: prevHash does not link
//! to the stored hash of 16".

use crate::chain::{
    block_hash, first_bad_signature, merkle_root, signed_message, verify_block_signature, ForkTable,
};
use crate::ledger::{LedgerError, LedgerRead};
use crate::types::{Hash, SequencerCommitment, SoftConfirmation, VerifiedBatchProof, ZERO_HASH};

/// The chain rule that a block, commitment or proof broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Check {
    /// Heights must follow the stored head one by one.
    Height,
    /// prevHash must equal the stored hash of the height below.
    PrevHash,
    /// The hash must recompute from the fields.
    Hash,
    /// pubKey must be the pinned sequencer key.
    PubKey,
    /// The Ed25519 signature must verify.
    Signature,
    /// A commitment's range must continue the last one, over stored heights.
    CommitmentRange,
    /// A commitment's Merkle root must match the stored hashes.
    MerkleRoot,
    /// A proof must end on a stored hash and continue the last proof.
    Proof,
}

impl Check {
    /// The label used in logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Check::Height => "height",
            Check::PrevHash => "prev_hash",
            Check::Hash => "hash",
            Check::PubKey => "pub_key",
            Check::Signature => "signature",
            Check::CommitmentRange => "commitment_range",
            Check::MerkleRoot => "merkle_root",
            Check::Proof => "proof",
        }
    }
}

/// A record that failed verification, or a ledger that could not be read to verify it.
#[derive(Debug)]
pub enum VerifyError {
    Failed { check: Check, what: String },
    Ledger(LedgerError),
}

impl VerifyError {
    fn failed(check: Check, what: String) -> VerifyError {
        VerifyError::Failed { check, what }
    }
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VerifyError::Failed { check, what } => {
                write!(f, "check {} failed: {what}", check.name())
            }
            VerifyError::Ledger(e) => write!(f, "cannot verify: {e}"),
        }
    }
}

impl std::error::Error for VerifyError {}

impl From<LedgerError> for VerifyError {
    fn from(e: LedgerError) -> Self {
        VerifyError::Ledger(e)
    }
}

/// Checks one block on its own by its fork's rules: the hash recomputes,
/// the key is the sequencer's, the signature verifies. (The link to the
/// block below is checked in order by [`verify_link`].)
pub fn verify_block_alone(
    sc: &SoftConfirmation,
    sequencer: &[u8; 32],
    forks: &ForkTable,
) -> Result<(), VerifyError> {
    verify_hash_and_key(sc, sequencer, forks)?;
    let fork = forks.fork_at(sc.l2_height);
    verify_block_signature(sc, fork, sequencer).map_err(|e| {
        VerifyError::failed(
            Check::Signature,
            format!("soft confirmation {} ({fork} rules): {e}", sc.l2_height),
        )
    })
}

/// The hash recomputes from the fields by the block's fork's rules and the
/// key is the sequencer's (the signature is checked by the caller: one by
/// one, or batched).
fn verify_hash_and_key(
    sc: &SoftConfirmation,
    sequencer: &[u8; 32],
    forks: &ForkTable,
) -> Result<(), VerifyError> {
    let h = sc.l2_height;
    let fork = forks.fork_at(h);
    if block_hash(sc, fork) != sc.hash {
        return Err(VerifyError::failed(
            Check::Hash,
            format!(
                "soft confirmation {h}: hash {} does not recompute from its fields by the {fork} rules",
                hex::encode(sc.hash)
            ),
        ));
    }
    if &sc.pub_key != sequencer {
        return Err(VerifyError::failed(
            Check::PubKey,
            format!(
                "soft confirmation {h}: pubKey {} is not the sequencer key {}",
                hex::encode(sc.pub_key),
                hex::encode(sequencer)
            ),
        ));
    }
    Ok(())
}

/// Checks that `sc` follows the block (height, hash) below it.
pub fn verify_link(sc: &SoftConfirmation, below: (u64, Hash)) -> Result<(), VerifyError> {
    let (below_height, below_hash) = below;
    if sc.l2_height != below_height + 1 {
        return Err(VerifyError::failed(
            Check::Height,
            format!(
                "expected soft confirmation {}, got {}",
                below_height + 1,
                sc.l2_height
            ),
        ));
    }
    if sc.prev_hash != below_hash {
        return Err(VerifyError::failed(
            Check::PrevHash,
            format!(
                "soft confirmation {}: prevHash {} does not link to the stored hash {} of {}",
                sc.l2_height,
                hex::encode(sc.prev_hash),
                hex::encode(below_hash),
                below_height
            ),
        ));
    }
    Ok(())
}

/// Verifies `blocks` on top of `below` = (height, hash) of the stored head,
/// each by the rules of its fork in `forks`. Returns how many leading blocks
/// verified, and the first failure if any: the caller stores the verified
/// prefix and never skips past the failure.
///
/// Heights, links, hashes and keys are checked in order; then the
/// signatures of the blocks that passed, each as Citrea checks it
/// (`chain::first_bad_signature`), on both cores for large chunks.
pub fn verify_blocks(
    blocks: &[SoftConfirmation],
    below: (u64, Hash),
    sequencer: &[u8; 32],
    forks: &ForkTable,
) -> (usize, Option<VerifyError>) {
    const PARALLEL_MIN: usize = 64;
    let mut failure = None;
    let mut limit = blocks.len();
    let mut below = below;
    for (i, sc) in blocks.iter().enumerate() {
        let checked =
            verify_link(sc, below).and_then(|_| verify_hash_and_key(sc, sequencer, forks));
        if let Err(e) = checked {
            failure = Some(e);
            limit = i;
            break;
        }
        below = (sc.l2_height, sc.hash);
    }
    let first_bad = |part: &[SoftConfirmation]| {
        let messages: Vec<_> = part
            .iter()
            .map(|sc| signed_message(sc, forks.fork_at(sc.l2_height)))
            .collect();
        let items: Vec<_> = part
            .iter()
            .zip(&messages)
            .map(|(sc, m)| (&sc.pub_key, m.as_ref(), &sc.signature))
            .collect();
        first_bad_signature(&items)
    };
    let signed = &blocks[..limit];
    let bad = if signed.len() < PARALLEL_MIN {
        first_bad(signed)
    } else {
        let (a, b) = signed.split_at(signed.len() / 2);
        let (ra, rb) = std::thread::scope(|s| {
            let ha = s.spawn(|| first_bad(a));
            let rb = first_bad(b);
            (ha.join(), rb)
        });
        // A panicked verifier proves nothing: treat its whole half as unverified.
        let ra = ra.unwrap_or(Some(0));
        ra.or(rb.map(|i| i + a.len()))
    };
    match bad {
        Some(i) => {
            let sc = &blocks[i];
            let fork = forks.fork_at(sc.l2_height);
            let e = verify_block_signature(sc, fork, &sc.pub_key)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_else(|| "signature batch verification failed".to_string());
            (
                i,
                Some(VerifyError::failed(
                    Check::Signature,
                    format!("soft confirmation {} ({fork} rules): {e}", sc.l2_height),
                )),
            )
        }
        None => (limit, failure),
    }
}

/// What a commitment check decided.
#[derive(Debug, PartialEq, Eq)]
pub enum CommitmentVerdict {
    /// It verified: its heights may be marked Finalized.
    Valid,
    /// It covers heights the ledger does not hold yet: scan this slot again later.
    NotYet,
}

/// Checks a commitment against the stored chain: it continues the previous
/// commitment (`finalized` = the last committed height), its heights are
/// stored, and its Merkle root matches their stored hashes.
pub fn verify_commitment(
    ledger: &impl LedgerRead,
    c: &SequencerCommitment,
    finalized: u64,
) -> Result<CommitmentVerdict, VerifyError> {
    let (start, end) = (c.l2_start_block_number, c.l2_end_block_number);
    if start != finalized + 1 || end < start {
        return Err(VerifyError::failed(
            Check::CommitmentRange,
            format!(
                "commitment on slot {} covers {start}..={end}; the next commitment must start at {}",
                c.found_in_l1,
                finalized + 1
            ),
        ));
    }
    if end > ledger.head_height()? {
        return Ok(CommitmentVerdict::NotYet);
    }
    let mut leaves = Vec::with_capacity((end - start + 1) as usize);
    for h in start..=end {
        match ledger.hash_at(h)? {
            Some(hash) => leaves.push(hash),
            None => return Ok(CommitmentVerdict::NotYet),
        }
    }
    let root = merkle_root(&leaves).unwrap_or(ZERO_HASH);
    if root != c.merkle_root {
        return Err(VerifyError::failed(
            Check::MerkleRoot,
            format!(
                "commitment on slot {} for {start}..={end}: merkle root {} does not match {} of the stored hashes",
                c.found_in_l1,
                hex::encode(c.merkle_root),
                hex::encode(root)
            ),
        ));
    }
    Ok(CommitmentVerdict::Valid)
}

/// Checks a verified batch proof against the stored chain: it covers
/// `proven + 1 ..= lastL2Height`, its prevSoftConfirmationHash is the stored
/// hash below that range and its finalSoftConfirmationHash the stored hash
/// at lastL2Height. Returns the first height it proves.
pub fn verify_proof(
    ledger: &impl LedgerRead,
    proof: &VerifiedBatchProof,
    proven: u64,
) -> Result<u64, VerifyError> {
    let out = &proof.proof_output;
    let last = out.last_l2_height;
    let fail = |what: String| {
        VerifyError::failed(
            Check::Proof,
            format!("proof on slot {}: {what}", proof.height),
        )
    };
    if last <= proven {
        return Err(fail(format!(
            "lastL2Height {last} is not above the proven height {proven}"
        )));
    }
    let stored = ledger
        .hash_at(last)?
        .ok_or_else(|| fail(format!("lastL2Height {last} is not stored")))?;
    if stored != out.final_soft_confirmation_hash {
        return Err(fail(format!(
            "finalSoftConfirmationHash {} is not the stored hash {} of {last}",
            hex::encode(out.final_soft_confirmation_hash),
            hex::encode(stored)
        )));
    }
    let below = if proven == 0 {
        ZERO_HASH
    } else {
        ledger
            .hash_at(proven)?
            .ok_or_else(|| fail(format!("height {proven} is not stored")))?
    };
    if below != out.prev_soft_confirmation_hash {
        return Err(fail(format!(
            "prevSoftConfirmationHash {} is not the stored hash {} of {proven}",
            hex::encode(out.prev_soft_confirmation_hash),
            hex::encode(below)
        )));
    }
    Ok(proven + 1)
}
