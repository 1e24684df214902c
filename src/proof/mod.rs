//! Where a batch proof's own bytes are checked: the receipt decoded, its
//! journal read and held against the `proofOutput` beside it, and the
//! receipt verified against the batch-proof image of the network and fork.
//!
//! Citrea's rule for *which heights* a proof proves is in
//! [`crate::checks`]; this room answers whether the proof proves what
//! its output says at all. The sync thread calls [`verify_proof_receipt`]
//! for every proof that passed that rule, before anything of it is stored;
//! `ledgerd import` does the same, and `ledgerd verify-proof`
//! ([`crate::cmd::verify_proof`]) runs the steps one by one for a person.
//!
//! - [`receipt`]: bincode of a risc0 receipt; verification with Citrea's
//!   pre-1.1.0 fallback; fake receipts.
//! - [`journal`]: the circuit output in its two layouts, compared field by
//!   field.
//! - [`image_ids`]: the pinned batch-proof image IDs per network and fork.
//!
//! **Images** ([`ProofRules`], [`Images`]): `--network`'s (Citrea ships
//! them), the embedded devnet's own, the ones pinned with
//! `--batch-proof-image FORK=HEX`, or, on a chain without a network name or
//! pins, the image each receipt claims (its seal must hold for it); proofs
//! so accepted are counted ([`unpinned_proofs_stored`]).
//!
//! **Fake receipts** prove nothing. They count only on a chain with no
//! network named (the embedded devnet makes them) or with
//! `--allow-fake-proofs` (Citrea's dev mode); each one accepted is counted
//! in the ledger ([`fake_proofs_stored`]), shown by `/metrics` and `/health`.

pub mod args;
pub mod image_ids;
pub mod journal;
pub mod receipt;

use std::fmt;

use crate::chain_rules::{Fork, ForkTable, Network};
use crate::checks::{Check, VerifyError};
use crate::ledger::{LedgerError, LedgerRead, LedgerWriter};
use crate::types::{ProofOutput, VerifiedBatchProof};
use image_ids::{BatchImage, ImageOrigin, ImagePins, NoImage};
use journal::{FieldMismatch, Journal, JournalError};
use receipt::{DecodedReceipt, ReceiptError, ReceiptKind, Verified};

/// The flag that lets fake receipts prove heights on a named network.
pub const ALLOW_FAKE_PROOFS: &str = "--allow-fake-proofs";

/// Which receipts count on a named network or on ledgerd's own devnet:
/// `--network`'s images (`None`: the embedded devnet's), and whether fakes
/// count there. A node's full rules, with pinned or unpinned images, are
/// [`ProofRules`]; these convert into them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiptRules {
    /// `--network`: whose batch-proof images proofs must verify against
    /// (`None`: the embedded devnet's, which only fakes claim).
    pub network: Option<Network>,
    /// `--allow-fake-proofs`: accept fake receipts on a named network.
    pub allow_fake_proofs: bool,
}

/// Which images a node holds batch proofs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Images {
    /// `--network`: the images Citrea ships for it; pins fill the forks it
    /// ships none for (nightly's, mainnet's Kumquat).
    Network(Network, ImagePins),
    /// ledgerd's own devnet: its fake image ([`image_ids::DEVNET_FAKE_IMAGE`]).
    Devnet,
    /// A chain without a network name, `--batch-proof-image` given: the
    /// pinned image of each fork.
    Pinned(ImagePins),
    /// A chain without a network name or pins: each receipt is verified
    /// against the image it claims (its seal must hold), and proofs so
    /// accepted are counted ([`unpinned_proofs_stored`]).
    Unpinned,
}

/// A node's rules for a proof's receipt: the images, and whether fakes count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProofRules {
    pub images: Images,
    /// `--allow-fake-proofs` (on a named network; fakes count elsewhere).
    pub allow_fake_proofs: bool,
}

impl Default for ProofRules {
    /// The embedded devnet's.
    fn default() -> Self {
        ProofRules::from(ReceiptRules::default())
    }
}

impl From<ReceiptRules> for ProofRules {
    fn from(r: ReceiptRules) -> Self {
        ProofRules {
            images: match r.network {
                Some(n) => Images::Network(n, ImagePins::default()),
                None => Images::Devnet,
            },
            allow_fake_proofs: r.allow_fake_proofs,
        }
    }
}

impl ProofRules {
    /// The rules of a node or command from its flags: `--network`,
    /// `--batch-proof-image` pins, `--allow-fake-proofs`, and whether it is
    /// ledgerd's own devnet (which pins its own image).
    pub fn new(
        network: Option<Network>,
        pins: ImagePins,
        allow_fake_proofs: bool,
        devnet: bool,
    ) -> ProofRules {
        let images = match network {
            Some(n) => Images::Network(n, pins),
            None if devnet => Images::Devnet,
            None if pins.is_empty() => Images::Unpinned,
            None => Images::Pinned(pins),
        };
        ProofRules {
            images,
            allow_fake_proofs,
        }
    }

    /// Fakes count everywhere but on a named network without
    /// `--allow-fake-proofs`.
    pub fn fakes_accepted(&self) -> bool {
        !matches!(self.images, Images::Network(..)) || self.allow_fake_proofs
    }

    /// Whether proofs are held to images someone chose (false: each
    /// receipt's own claim, [`Images::Unpinned`]).
    pub fn images_pinned(&self) -> bool {
        self.images != Images::Unpinned
    }

    /// The image of each fork these rules hold proofs to, where one is
    /// fixed (what `/health` shows): `(fork, image)` for Genesis and Kumquat.
    pub fn fixed_images(&self) -> Vec<(Fork, BatchImage)> {
        [Fork::Genesis, Fork::Kumquat]
            .into_iter()
            .filter_map(|fork| self.fixed_image(fork).ok().map(|i| (fork, i)))
            .collect()
    }

    fn fixed_image(&self, fork: Fork) -> Result<BatchImage, NoImage> {
        let pinned = |pins: &ImagePins, network| {
            pins.get(fork)
                .map(|id| BatchImage {
                    origin: ImageOrigin::Pinned,
                    fork,
                    id,
                })
                .ok_or(NoImage { network, fork })
        };
        match &self.images {
            Images::Network(n, pins) => {
                image_ids::batch_image(Some(*n), fork).or_else(|_| pinned(pins, Some(*n)))
            }
            Images::Devnet => image_ids::batch_image(None, fork),
            Images::Pinned(pins) => pinned(pins, None),
            Images::Unpinned => Err(NoImage {
                network: None,
                fork,
            }),
        }
    }

    /// The image a receipt with this journal must verify against: by
    /// Citrea's choice of fork (a new-layout journal by the fork of its
    /// `last_l2_height`, an old-layout one the Genesis era), that fork's
    /// image by these rules; with [`Images::Unpinned`], the one the receipt
    /// claims.
    pub fn image_for(
        &self,
        receipt: &DecodedReceipt,
        journal: &Journal,
        forks: &ForkTable,
    ) -> Result<BatchImage, ProofError> {
        let fork = match journal {
            Journal::New(o) => forks.fork_at(o.last_l2_height),
            Journal::Old(_) => Fork::Genesis,
        };
        if self.images == Images::Unpinned {
            let id = receipt.claimed_image().map_err(ProofError::Receipt)?;
            return Ok(BatchImage {
                origin: ImageOrigin::Claimed,
                fork,
                id,
            });
        }
        self.fixed_image(fork).map_err(ProofError::NoImage)
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
/// image `rules` give for the journal's fork (`rules`: a node's
/// [`ProofRules`], or the [`ReceiptRules`] of a named network or the devnet).
pub fn check<R: Copy + Into<ProofRules>>(
    bytes: &[u8],
    given: Option<&ProofOutput>,
    rules: &R,
    forks: &ForkTable,
) -> Result<CheckedProof, ProofError> {
    let rules: ProofRules = (*rules).into();
    let receipt = receipt::decode(bytes).map_err(ProofError::Receipt)?;
    let journal = journal::decode(receipt.journal()).map_err(ProofError::Journal)?;
    if let Some(given) = given {
        if let Some(m) = journal::first_difference(&journal.proof_output(), given) {
            return Err(ProofError::Mismatch(m));
        }
    }
    let image = rules.image_for(&receipt, &journal, forks)?;
    let verified = verify_decoded(&receipt, &image, &rules)?;
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
    rules: &ProofRules,
) -> Result<Verified, ProofError> {
    if receipt.kind() == ReceiptKind::Fake && !rules.fakes_accepted() {
        if let Images::Network(network, _) = rules.images {
            return Err(ProofError::FakeRefused(network));
        }
    }
    receipt.verify(image).map_err(ProofError::Receipt)
}

/// The sync thread's and import's check of one proof that passed Citrea's
/// proof rule: its bytes must prove its `proofOutput`. A failure reads
/// `proof on slot 1104: receipt does not verify against ...`.
pub fn verify_proof_receipt<R: Copy + Into<ProofRules>>(
    proof: &VerifiedBatchProof,
    rules: &R,
    forks: &ForkTable,
) -> Result<CheckedProof, VerifyError> {
    let rules: ProofRules = (*rules).into();
    check(&proof.proof, Some(&proof.proof_output), &rules, forks).map_err(|e| {
        let hint = match (&e, rules.images) {
            (ProofError::Receipt(ReceiptError::FakeClaimMismatch { .. }), Images::Pinned(_))
            | (ProofError::Receipt(ReceiptError::DoesNotVerify { .. }), Images::Pinned(_)) => {
                format!(
                    " (the images pinned with {} are not the ones this chain's prover ran: \
                     check the pins against the chain's guest build)",
                    image_ids::BATCH_PROOF_IMAGE
                )
            }
            _ => String::new(),
        };
        VerifyError::Failed {
            check: Check::Receipt,
            what: format!("proof on slot {}: {e}{hint}", proof.height),
        }
    })
}

/// The ledger's free meta entry counting proofs accepted on fake receipts.
const FAKE_PROOFS_KEY: &str = "proofs_on_fake_receipts";

/// How many stored proofs were accepted on fake receipts, over the
/// ledger's life.
pub fn fake_proofs_stored(r: &impl LedgerRead) -> Result<u64, LedgerError> {
    stored_count(r, FAKE_PROOFS_KEY)
}

/// A count kept in the free meta entry `key` (u64 big-endian; 0 unset).
fn stored_count(r: &impl LedgerRead, key: &str) -> Result<u64, LedgerError> {
    Ok(r.meta_bytes(key)?
        .and_then(|b| <[u8; 8]>::try_from(b.as_slice()).ok())
        .map_or(0, u64::from_be_bytes))
}

/// Adds `n` to the count under `key`, in the caller's write transaction
/// (nothing is written for 0).
fn add_to_count(w: &mut LedgerWriter<'_>, key: &str, n: u64) -> Result<(), LedgerError> {
    if n == 0 {
        return Ok(());
    }
    let total = stored_count(&*w, key)? + n;
    w.set_meta_bytes(key, &total.to_be_bytes())
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

/// The ledger's free meta entry counting proofs accepted against the image
/// their receipt claims (no image pinned).
const UNPINNED_PROOFS_KEY: &str = "proofs_on_unpinned_images";

/// How many stored proofs were accepted with no image pinned (their
/// receipts verified against the images they claim), over the ledger's life.
pub fn unpinned_proofs_stored(r: &impl LedgerRead) -> Result<u64, LedgerError> {
    stored_count(r, UNPINNED_PROOFS_KEY)
}

/// Counts what was stored of `checked` proofs: fakes, and proofs whose
/// image was not pinned, in the caller's write transaction.
pub fn count_checked_proofs<'a>(
    w: &mut LedgerWriter<'_>,
    checked: impl IntoIterator<Item = &'a CheckedProof>,
) -> Result<(), LedgerError> {
    let (mut fakes, mut unpinned) = (0, 0);
    for c in checked {
        fakes += u64::from(c.is_fake());
        unpinned += u64::from(c.image.origin == ImageOrigin::Claimed);
    }
    add_to_count(w, FAKE_PROOFS_KEY, fakes)?;
    add_to_count(w, UNPINNED_PROOFS_KEY, unpinned)
}
