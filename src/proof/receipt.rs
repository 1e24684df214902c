//! The proof bytes themselves: a risc0 receipt, decoded and verified as
//! Citrea v0.6.2's full node does (`crates/risc0/src/host.rs`), plus the
//! fake receipts of dev mode and of ledgerd's devnet.
//!
//! - **Decoding**: bincode 1.3 of risc0-zkvm 1.2.1's `Receipt` with the
//!   options `bincode::deserialize` uses (fixed-width integers, trailing
//!   bytes allowed), plus a limit of the input's own length, so no length
//!   field can make the decoder reserve more than the bytes given.
//! - **Verifying**: `Receipt::verify(image_id)`; on `InvalidProof`, once
//!   more under the verifier context of risc0 before 1.1.0 (the control
//!   IDs and roots Citrea pins in `verifier_context_pre_1_1_0`): testnet's
//!   Genesis-era proofs were made by that prover.
//! - **Fakes** (`InnerReceipt::Fake`, what a prover makes under
//!   `RISC0_DEV_MODE`) carry no seal. risc0 passes them whenever that
//!   environment variable is set; ledgerd never hands one to risc0. It
//!   checks what risc0 checks besides the seal (the verifier parameters
//!   and that the claim's digest is `ReceiptClaim::ok(image, journal)`'s)
//!   and lets the caller decide whether fakes count ([`super::ReceiptRules`]).
//!   A composite receipt resting on a fake assumption is refused outright:
//!   only `RISC0_DEV_MODE` could pass it.

use std::fmt;

use bincode::Options;
use risc0_zkp::verify::VerificationError;
use risc0_zkvm::sha::{Digest, Digestible};
use risc0_zkvm::{
    FakeReceipt, Groth16ReceiptVerifierParameters, InnerAssumptionReceipt, InnerReceipt, Journal,
    MaybePruned, Receipt, ReceiptClaim, SegmentReceiptVerifierParameters,
    SuccinctReceiptVerifierParameters, VerifierContext,
};

use super::image_ids::BatchImage;
use crate::chain_rules::hex_key;

/// What kind of receipt a proof is (risc0's `InnerReceipt` tags 0-3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiptKind {
    Composite,
    Succinct,
    Groth16,
    Fake,
}

impl ReceiptKind {
    pub fn name(self) -> &'static str {
        match self {
            ReceiptKind::Composite => "composite",
            ReceiptKind::Succinct => "succinct",
            ReceiptKind::Groth16 => "Groth16",
            ReceiptKind::Fake => "fake",
        }
    }
}

/// Proof bytes read as a receipt.
#[derive(Debug)]
pub struct DecodedReceipt {
    receipt: Receipt,
}

/// Which verifier context a receipt verified under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verified {
    /// risc0 1.2.1's own context.
    Current,
    /// The pre-1.1.0 context Citrea falls back to.
    Pre110,
    /// A fake receipt whose claim is the image's with this journal: it
    /// proves nothing (accepted only where fakes are allowed).
    Fake,
}

impl Verified {
    pub fn describe(self) -> &'static str {
        match self {
            Verified::Current => "verifies (risc0 1.2 verifier context)",
            Verified::Pre110 => "verifies (the pre-1.1.0 verifier context Citrea falls back to)",
            Verified::Fake => {
                "is a fake receipt claiming this image and journal (no seal: it proves nothing)"
            }
        }
    }
}

/// Why proof bytes are not a valid receipt for an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReceiptError {
    /// The bytes do not decode as a receipt.
    NotAReceipt(String),
    /// The seal or claim does not verify; the second text is the retry
    /// under the pre-1.1.0 context, when Citrea would retry.
    DoesNotVerify {
        image: BatchImage,
        error: String,
        pre_1_1_0: Option<String>,
    },
    /// A fake receipt whose claim is not the image's with this journal.
    FakeClaimMismatch { image: BatchImage, detail: String },
    /// A composite receipt with a fake assumption receipt inside.
    FakeAssumption,
    /// No image is pinned, and the receipt does not say which it claims.
    NoClaimedImage(String),
}

impl fmt::Display for ReceiptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReceiptError::NotAReceipt(e) => write!(
                f,
                "the proof bytes are not a risc0 receipt (bincode of risc0-zkvm 1.2's Receipt): {e}"
            ),
            ReceiptError::DoesNotVerify {
                image,
                error,
                pre_1_1_0,
            } => {
                write!(f, "receipt does not verify against {image}: {error}")?;
                if let Some(e) = pre_1_1_0 {
                    write!(f, "; nor under the pre-1.1.0 verifier context: {e}")?;
                }
                Ok(())
            }
            ReceiptError::FakeClaimMismatch { image, detail } => write!(
                f,
                "the fake receipt's claim is not {image} with this journal: {detail}"
            ),
            ReceiptError::NoClaimedImage(why) => write!(
                f,
                "no batch-proof image is pinned and the receipt names none it claims ({why}): \
                 pin the chain's images with --batch-proof-image FORK=HEX"
            ),
            ReceiptError::FakeAssumption => f.write_str(
                "the composite receipt rests on a fake assumption receipt, which only \
                 RISC0_DEV_MODE would pass: refused",
            ),
        }
    }
}

impl std::error::Error for ReceiptError {}

/// Reads proof bytes as a receipt, as Citrea does (`bincode::deserialize`),
/// never reserving more memory than the bytes could fill.
pub fn decode(bytes: &[u8]) -> Result<DecodedReceipt, ReceiptError> {
    let options = bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .allow_trailing_bytes()
        .with_limit(bytes.len() as u64);
    options
        .deserialize::<Receipt>(bytes)
        .map(|receipt| DecodedReceipt { receipt })
        .map_err(|e| ReceiptError::NotAReceipt(e.to_string()))
}

impl DecodedReceipt {
    /// The journal: what the guest committed (the circuit output).
    pub fn journal(&self) -> &[u8] {
        &self.receipt.journal.bytes
    }

    pub fn kind(&self) -> ReceiptKind {
        match &self.receipt.inner {
            InnerReceipt::Composite(_) => ReceiptKind::Composite,
            InnerReceipt::Succinct(_) => ReceiptKind::Succinct,
            InnerReceipt::Groth16(_) => ReceiptKind::Groth16,
            // `InnerReceipt` is non-exhaustive; the arms above and Fake
            // are all 1.2.1 has.
            _ => ReceiptKind::Fake,
        }
    }

    /// The image ID the receipt's claim names (the digest of its `pre`
    /// state, which `ReceiptClaim::ok` sets to the image ID): what a chain
    /// without pinned images holds the receipt to.
    pub fn claimed_image(&self) -> Result<[u8; 32], ReceiptError> {
        let claim = self
            .receipt
            .claim()
            .map_err(|e| ReceiptError::NoClaimedImage(e.to_string()))?;
        let claim = claim
            .as_value()
            .map_err(|_| ReceiptError::NoClaimedImage("its claim is pruned to a digest".into()))?;
        let digest = claim.pre.digest();
        digest
            .as_bytes()
            .try_into()
            .map_err(|_| ReceiptError::NoClaimedImage("its image digest is not 32 bytes".into()))
    }

    /// Checks the receipt against `image`: the seal by risc0 (with Citrea's
    /// pre-1.1.0 retry), or, for a fake, its claim alone.
    pub fn verify(&self, image: &BatchImage) -> Result<Verified, ReceiptError> {
        let id = Digest::from(image.id);
        let r = &self.receipt;
        match &r.inner {
            InnerReceipt::Fake(fake) => return verify_fake(r, fake, image),
            InnerReceipt::Composite(c)
                if c.assumption_receipts
                    .iter()
                    .any(|a| matches!(a, InnerAssumptionReceipt::Fake(_))) =>
            {
                return Err(ReceiptError::FakeAssumption)
            }
            _ => {}
        }
        match r.verify(id) {
            Ok(()) => Ok(Verified::Current),
            Err(VerificationError::InvalidProof) => r
                .verify_with_context(&verifier_context_pre_1_1_0(), id)
                .map(|()| Verified::Pre110)
                .map_err(|e| ReceiptError::DoesNotVerify {
                    image: *image,
                    error: VerificationError::InvalidProof.to_string(),
                    pre_1_1_0: Some(e.to_string()),
                }),
            Err(e) => Err(ReceiptError::DoesNotVerify {
                image: *image,
                error: e.to_string(),
                pre_1_1_0: None,
            }),
        }
    }
}

/// What `Receipt::verify_with_context` checks of a fake, but the seal it
/// does not have: the verifier parameters, and the claim's digest.
fn verify_fake(
    r: &Receipt,
    fake: &FakeReceipt<ReceiptClaim>,
    image: &BatchImage,
) -> Result<Verified, ReceiptError> {
    let mismatch = |detail: String| ReceiptError::FakeClaimMismatch {
        image: *image,
        detail,
    };
    if r.metadata.verifier_parameters != Digest::ZERO {
        return Err(mismatch(format!(
            "its metadata names verifier parameters {}, a fake's are zero",
            r.metadata.verifier_parameters
        )));
    }
    let expected = fake_claim(image, &r.journal).digest();
    let got = fake.claim.digest();
    if expected != got {
        return Err(mismatch(format!("claim digest {got}, expected {expected}")));
    }
    Ok(Verified::Fake)
}

fn fake_claim(image: &BatchImage, journal: &Journal) -> ReceiptClaim {
    // The journal's digest is SHA-256 of its bytes (risc0's
    // `Digestible for Journal`), taken with ledgerd's own SHA-256: a
    // devnet's journals are padded to `--dev-proof-bytes`, and hashing
    // them was a third of the SHA-256 time of making its blocks.
    ReceiptClaim::ok(
        Digest::from(image.id),
        MaybePruned::Pruned(Digest::from(crate::chain_rules::sha256(&journal.bytes))),
    )
}

/// A fake receipt over `journal` claiming `image`, as bincode: what the
/// devnet serves as a proof's bytes. Its length is the journal's plus a
/// constant ([`fake_receipt_overhead`]).
pub fn make_fake(image: &BatchImage, journal: Vec<u8>) -> Vec<u8> {
    let journal = Journal::new(journal);
    let claim = fake_claim(image, &journal);
    let receipt = Receipt::new(InnerReceipt::Fake(FakeReceipt::new(claim)), journal.bytes);
    // Serialising into a Vec only fails for types serde cannot write; a
    // receipt is not one of them.
    bincode::serialize(&receipt).unwrap_or_default()
}

/// How many bytes a fake receipt adds to its journal.
pub fn fake_receipt_overhead(image: &BatchImage) -> usize {
    make_fake(image, Vec::new()).len()
}

/// Citrea's `verifier_context_pre_1_1_0` (`crates/risc0/src/host.rs`,
/// v0.6.2): risc0's default context with the segment control IDs, the
/// succinct and Groth16 control roots and the BN254 control ID of the
/// prover before risc0 1.1.0.
fn verifier_context_pre_1_1_0() -> VerifierContext {
    const SEGMENT_CONTROL_IDS: [[u8; 32]; 33] = [
        hex_key(b"55ba2d763ec3c016c0f97c298507115c77e0a25215e5771ba501d016edca522c"),
        hex_key(b"c265954c4dcb2155e041286a246bfe400ba9d042d919aa3cb1a299651f84c13e"),
        hex_key(b"467cd61da86f37347b45e64b5d4665308871bc301c67ba6c6d13c9470c3e4840"),
        hex_key(b"57b2031d3881e92b85d73d2d0800a223fdaccd5e7bdd0a569c10556ec138f551"),
        hex_key(b"c1f19103f8376c00fe20f62aa4370f628efe3a4a5eb1a5739466c944cf7dfe31"),
        hex_key(b"548ec1774c6c833b18db2e2a1464cb1923c6c721df87b437509ba87292d20529"),
        hex_key(b"ce535b3b10e4cc212842b90a918553633c4f5375dee51d4788798765df5a8750"),
        hex_key(b"7dea3854a91c906f92f23a291340066ecbd5375669fe752a5047c926e4d56747"),
        hex_key(b"dca31f53c5bf4c67ecdc9f1035cf5934072afc29573a1845100d6140befab657"),
        hex_key(b"12da4520930b1740810a69428c02fb2fcb586763a0e3794c45196608b594dd69"),
        hex_key(b"5c2dce7226ff9073b8e38919583c01375f11395111e9ae3bfd519b57f84a5e00"),
        hex_key(b"6d0ed860e3effc3cc00114075cb29630b583d227b5654adaf0e9a4e4926144a4"),
        hex_key(b"8f4880393dbb0dccf06e78081ca4f81b56e57ca5a0d056d927d41d1f19d0eb78"),
        hex_key(b"5461f6a04636ec3e513511de5b324e92ec027de3c3c2d5b56edcf28f21a2797e"),
        hex_key(b"aa0fe87d397a845d6c63b7896a031e2fd9d221e02625741ce631cf060542842d"),
        hex_key(b"fd2551902a296fcdc2d49ecbd7b2140b5b8adfb86023e4e2c1ad433e9d4e5487"),
        hex_key(b"204f8e50713cd5da7a41c128d1dd27b722ea0d6c21c785a9a608df13dcadc108"),
        hex_key(b"90d0d9c5bbb5ad02dd004a83e29a6ede8ed35d33a762bbf14f8fd323a8053fbf"),
        hex_key(b"3b652874501bcbb2d3283f4a6640fbc292f9db0c3353b1b5d058c79ab9e684ed"),
        hex_key(b"23ef25c5d5e356bab81c4905e499de9161596435839366c2b0e8fb3c6d8f2232"),
        hex_key(b"bb795263e615f72c0fb6b8d07c8dba82d1a8b5a53870b106ffe738a4f8943dc0"),
        hex_key(b"55330f0d062c6972bf3f65c4e5055544e20c9f776f6797f4428f7b3a6fbf0573"),
        hex_key(b"1f682e2ecfc82580667b8549ce548310f79f7055195d1f3a70d11565dd7c8311"),
        hex_key(b"66c3c1e1293ec0deea97cd1531a4fb202f7c57c3fa9908598519b12776272f37"),
        hex_key(b"e8a718749c38e77f1a52856568669d38591e5ee3deed15e251b4cd45994e56f7"),
        hex_key(b"3010f3679241489056004ab35e7b0c5feae8a6b45fe46f2c17e65e681e43ef25"),
        hex_key(b"a01d6a57f7aec62ffec3edcc5347c2acb88abdb0460e516d1b7d984f487dfce4"),
        hex_key(b"ba388a957a36a9a514fe5efe738f497fec585e267bcb6fb0a9d79b22f5cb34b1"),
        hex_key(b"e2fba32638e85de83c7ce06c41d48bb159efa0ec58de2e3ed4c172c7fc82b6e5"),
        hex_key(b"d9edf22d1c828087fec2fce4cf46261e8b6e8072b29f4beffbfc36309ae0e9d9"),
        hex_key(b"f04cfc7c358eaa225ee249e88b804a92679b43adf51b5cef1d0fef40c3afbc06"),
        hex_key(b"98b1e437c659b0435b5829a5d2fe697d08fc4b02641747d0f7d6b171b9c83415"),
        hex_key(b"68ada0a6c57d353b2a3645d42854365acd1aa453faebda9988b75c5802f4a1be"),
    ];
    const CONTROL_ROOT: [u8; 32] =
        hex_key(b"a516a057c9fbf5629106300934d48e0e775d4230e41e503347cad96fcbde7e2e");
    const BN254_CONTROL_ID: [u8; 32] =
        hex_key(b"51b54a62f2aa599aef768744c95de8c7d89bf716e11b1179f05d6cf0bcfeb60e");
    let mut ctx = VerifierContext::default();
    ctx.segment_verifier_parameters = Some(SegmentReceiptVerifierParameters {
        control_ids: SEGMENT_CONTROL_IDS.map(Digest::from).into(),
        ..Default::default()
    });
    ctx.succinct_verifier_parameters = Some(SuccinctReceiptVerifierParameters {
        control_root: Digest::from(CONTROL_ROOT),
        ..Default::default()
    });
    ctx.groth16_verifier_parameters = Some(Groth16ReceiptVerifierParameters {
        control_root: Digest::from(CONTROL_ROOT),
        bn254_control_id: Digest::from(BN254_CONTROL_ID),
        ..Default::default()
    });
    ctx
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain_rules::Fork;
    use crate::proof::image_ids::batch_image;

    #[test]
    fn a_fake_claims_journal_digest_is_risc0s_digest_of_the_journal() {
        let image = batch_image(None, Fork::Kumquat).unwrap();
        for len in [0usize, 1, 55, 56, 63, 64, 65, 1000, 4096] {
            let journal = Journal::new((0..len).map(|i| (i * 7 % 251) as u8).collect());
            let ours = fake_claim(&image, &journal);
            let risc0s = ReceiptClaim::ok(
                Digest::from(image.id),
                MaybePruned::Pruned(journal.digest()),
            );
            assert_eq!(ours.digest(), risc0s.digest(), "journal of {len} bytes");
        }
    }

    #[test]
    fn the_pre_1_1_0_context_holds_all_33_segment_control_ids() {
        let segment = verifier_context_pre_1_1_0().segment_verifier_parameters;
        assert_eq!(segment.unwrap().control_ids.len(), 33);
    }

    #[test]
    fn a_fake_verifies_as_fake_for_its_image_only() {
        let devnet = batch_image(None, Fork::Kumquat).unwrap();
        let testnet =
            batch_image(Some(crate::chain_rules::Network::Testnet), Fork::Kumquat).unwrap();
        let bytes = make_fake(&devnet, b"journal".to_vec());
        assert_eq!(bytes.len(), fake_receipt_overhead(&devnet) + 7);
        let r = decode(&bytes).unwrap();
        assert_eq!(r.kind(), ReceiptKind::Fake);
        assert_eq!(r.journal(), b"journal");
        assert_eq!(r.verify(&devnet), Ok(Verified::Fake));
        let e = r.verify(&testnet).unwrap_err().to_string();
        assert!(
            e.contains("is not the testnet batch-proof image (Kumquat era)"),
            "{e}"
        );
    }

    #[test]
    fn garbage_truncations_and_huge_lengths_are_errors() {
        let devnet = batch_image(None, Fork::Kumquat).unwrap();
        let bytes = make_fake(&devnet, vec![7; 100]);
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n]).is_err(), "{n} bytes decoded");
        }
        // A journal length of 2^63 where the journal starts.
        let at = bytes.len() - 100 - 32 - 8;
        let mut huge = bytes.clone();
        huge[at..at + 8].copy_from_slice(&(1u64 << 63).to_le_bytes());
        let e = decode(&huge).unwrap_err().to_string();
        assert!(e.contains("not a risc0 receipt"), "{e}");
        assert!(decode(&[0xff; 64]).is_err());
    }
}
