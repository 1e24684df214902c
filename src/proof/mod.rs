//! Where a batch proof's own bytes are checked: the receipt decoded, its
//! journal read and held against the `proofOutput` beside it, and the
//! receipt verified against the batch-proof image of the network and fork.
//!
//! Citrea's rule for *which heights* a proof proves is in
//! [`crate::sync::verify`]; this room answers whether the proof proves what
//! its output says at all. The sync thread calls [`verify_proof_receipt`]
//! for every proof that passed that rule, before anything of it is stored;
//! `ledgerd import` does the same, and `ledgerd verify-proof`
//! ([`crate::verify_proof_cmd`]) runs the steps one by one for a person.
//!
//! - [`receipt`]: bincode of a risc0 receipt; verification with Citrea's
//!   pre-1.1.0 fallback; fake receipts.
//! - [`journal`]: the circuit output in its two layouts, compared field by
//!   field.
//! - [`image_ids`]: the pinned batch-proof image IDs per network and fork.
//!
//! **Fake receipts** prove nothing. They count only on a chain with no
//! network named (the embedded devnet makes them) or with
//! `--allow-fake-proofs` (Citrea's dev mode); each one accepted is counted
//! in the ledger ([`fake_proofs_stored`]), shown by `/metrics` and `/health`.

pub mod image_ids;
pub mod journal;
pub mod receipt;

use std::fmt;

use crate::chain::{Fork, ForkTable, Network};
use crate::ledger::{LedgerError, LedgerRead, LedgerWriter};
use crate::sync::verify::{Check, VerifyError};
use crate::types::{ProofOutput, VerifiedBatchProof};
use image_ids::{BatchImage, NoImage};
use journal::{FieldMismatch, Journal, JournalError};
use receipt::{DecodedReceipt, ReceiptError, ReceiptKind, Verified};

/// The flag that lets fake receipts prove heights on a named network.
pub const ALLOW_FAKE_PROOFS: &str = "--allow-fake-proofs";

/// Which receipts a node accepts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiptRules {
    /// `--network`: whose batch-proof images proofs must verify against
    /// (`None`: the embedded devnet's, which only fakes claim).
    pub network: Option<Network>,
    /// `--allow-fake-proofs`: accept fake receipts on a named network.
    pub allow_fake_proofs: bool,
}

impl ReceiptRules {
    /// Fakes count on a devnet (no network) or when explicitly allowed.
    pub fn fakes_accepted(&self) -> bool {
        self.network.is_none() || self.allow_fake_proofs
    }

    /// The image a proof with this journal must verify against, by
    /// Citrea's choice: a new-layout journal by the fork of its
    /// `last_l2_height`, an old-layout one the Genesis-era image.
    pub fn image_for(&self, journal: &Journal, forks: &ForkTable) -> Result<BatchImage, NoImage> {
        let fork = match journal {
            Journal::New(o) => forks.fork_at(o.last_l2_height),
            Journal::Old(_) => Fork::Genesis,
        };
        image_ids::batch_image(self.network, fork)
    }
}

/// Why a proof's bytes do not prove its output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProofError {
    Receipt(ReceiptError),
    Journal(JournalError),
    Mismatch(FieldMismatch),
    NoImage(NoImage),
    /// A fake receipt on a named network without `--allow-fake-proofs`.
    FakeRefused(Network),
}

impl fmt::Display for ProofError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProofError::Receipt(e) => e.fmt(f),
            ProofError::Journal(e) => e.fmt(f),
            ProofError::Mismatch(e) => e.fmt(f),
            ProofError::NoImage(e) => e.fmt(f),
            ProofError::FakeRefused(n) => write!(
                f,
                "the receipt is a fake (InnerReceipt::Fake, what a prover makes under \
                 RISC0_DEV_MODE): it proves nothing, and {n} is a named network; start ledgerd \
                 with {ALLOW_FAKE_PROOFS} to accept fakes (a test chain only)"
            ),
        }
    }
}

impl std::error::Error for ProofError {}

/// A proof whose bytes prove its output.
#[derive(Debug)]
pub struct CheckedProof {
    pub journal: Journal,
    pub image: BatchImage,
    pub kind: ReceiptKind,
    pub verified: Verified,
}

impl CheckedProof {
    pub fn is_fake(&self) -> bool {
        self.verified == Verified::Fake
    }
}

/// Decodes `bytes`, reads the journal, requires it to equal `given` (when
/// an output came beside the bytes), and verifies the receipt against the
/// image for `rules` and the journal's fork.
pub fn check(
    bytes: &[u8],
    given: Option<&ProofOutput>,
    rules: &ReceiptRules,
    forks: &ForkTable,
) -> Result<CheckedProof, ProofError> {
    let receipt = receipt::decode(bytes).map_err(ProofError::Receipt)?;
    let journal = journal::decode(receipt.journal()).map_err(ProofError::Journal)?;
    if let Some(given) = given {
        if let Some(m) = journal::first_difference(&journal.proof_output(), given) {
            return Err(ProofError::Mismatch(m));
        }
    }
    let image = rules
        .image_for(&journal, forks)
        .map_err(ProofError::NoImage)?;
    let verified = verify_decoded(&receipt, &image, rules)?;
    Ok(CheckedProof {
        journal,
        image,
        kind: receipt.kind(),
        verified,
    })
}

/// Verifies a decoded receipt against `image`, refusing fakes where they
/// do not count.
pub fn verify_decoded(
    receipt: &DecodedReceipt,
    image: &BatchImage,
    rules: &ReceiptRules,
) -> Result<Verified, ProofError> {
    if receipt.kind() == ReceiptKind::Fake && !rules.fakes_accepted() {
        if let Some(network) = rules.network {
            return Err(ProofError::FakeRefused(network));
        }
    }
    receipt.verify(image).map_err(ProofError::Receipt)
}

/// The sync thread's and import's check of one proof that passed Citrea's
/// proof rule: its bytes must prove its `proofOutput`. A failure reads
/// `proof on slot 1104: receipt does not verify against ...`.
pub fn verify_proof_receipt(
    proof: &VerifiedBatchProof,
    rules: &ReceiptRules,
    forks: &ForkTable,
) -> Result<CheckedProof, VerifyError> {
    check(&proof.proof, Some(&proof.proof_output), rules, forks).map_err(|e| VerifyError::Failed {
        check: Check::Receipt,
        what: format!("proof on slot {}: {e}", proof.height),
    })
}

/// The ledger's free meta entry counting proofs accepted on fake receipts.
const FAKE_PROOFS_KEY: &str = "proofs_on_fake_receipts";

/// How many stored proofs were accepted on fake receipts, over the
/// ledger's life.
pub fn fake_proofs_stored(r: &impl LedgerRead) -> Result<u64, LedgerError> {
    Ok(r.meta_bytes(FAKE_PROOFS_KEY)?
        .and_then(|b| <[u8; 8]>::try_from(b.as_slice()).ok())
        .map_or(0, u64::from_be_bytes))
}

/// Whether `bytes` decode as a fake receipt (what `ledgerd rollback`
/// counts again among the proofs it keeps).
pub fn is_fake_receipt(bytes: &[u8]) -> bool {
    receipt::decode(bytes).is_ok_and(|r| r.kind() == ReceiptKind::Fake)
}

/// Sets the count of stored proofs accepted on fake receipts (a rollback
/// recounts the proofs it keeps).
pub fn set_fake_proof_count(w: &mut LedgerWriter<'_>, n: u64) -> Result<(), LedgerError> {
    if n == 0 && fake_proofs_stored(&*w)? == 0 {
        return Ok(());
    }
    w.set_meta_bytes(FAKE_PROOFS_KEY, &n.to_be_bytes())
}

/// Adds `n` proofs accepted on fake receipts to the ledger's count, in the
/// caller's write transaction (with the proofs themselves).
pub fn count_fake_proofs(w: &mut LedgerWriter<'_>, n: u64) -> Result<(), LedgerError> {
    if n == 0 {
        return Ok(());
    }
    let total = fake_proofs_stored(&*w)? + n;
    w.set_meta_bytes(FAKE_PROOFS_KEY, &total.to_be_bytes())
}
