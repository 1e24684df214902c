//! The chain rules: how a soft confirmation is hashed and signed under each
//! fork, and how a sequencer commitment's Merkle root is built.
//!
//! Every place that hashes, signs or verifies a block goes through
//! [`block_hash`], [`signed_message`] / [`verify_block_signature`] and
//! [`SequencerKey::sign_block`] (or [`SequencerKey::sign_blocks`] for a
//! chunk) with the block's [`Fork`] (from a [`ForkTable`]): the sync
//! thread, `ledgerd import`, `ledgerd verify` and the devnet agree by
//! construction.
//!
//! The two forks (Citrea v0.6's rules):
//!
//! - **Kumquat**: hash = SHA-256 over l2Height (u64 big-endian),
//!   daSlotHeight (u64 BE), daSlotHash, daSlotTxsCommitment, every tx blob,
//!   every deposit blob, l1FeeRate (u128 BE), timestamp (u64 BE), all
//!   concatenated without lengths; the Ed25519 signature is over the 32-byte
//!   hash.
//! - **Genesis**: the message is the borsh encoding of (`l2Height u64,
//!   daSlotHeight u64, daSlotHash [u8;32], daSlotTxsCommitment [u8;32],
//!   txs Vec<Vec<u8>>, depositData Vec<Vec<u8>>, l1FeeRate u128, timestamp
//!   u64`): integers little-endian, every list and every blob prefixed by its
//!   length as u32 little-endian, the 32-byte arrays as they are. hash =
//!   SHA-256(message); the signature is over the message itself.
//!
//! Under both, prevHash and stateRoot are not hashed, and signatures are
//! checked strictly (ed25519-dalek's `verify_strict`, as Citrea does).
//! Test vectors made without this module are in `tests/data/chain_vectors.json`.

pub mod args;
mod forks;
mod strict;

use std::borrow::Cow;

use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
// ledgerd's own SHA-256 (block hashes, state and Merkle roots, proof
// journals): sha2, which takes the CPU's SHA extensions at run time where
// it has them (README, Dependencies).
use sha2::{Digest, Sha256};

use crate::types::{Hash, SoftConfirmation};
pub(crate) use forks::hex_key;
pub use forks::{Fork, ForkTable, Network};
pub use strict::first_bad_signature;

/// SHA-256 of `data`.
pub fn sha256(data: &[u8]) -> Hash {
    Sha256::digest(data).into()
}

/// The block's hash by `fork`'s rules (what its `hash` field must be).
pub fn block_hash(sc: &SoftConfirmation, fork: Fork) -> Hash {
    let mut h = Sha256::new();
    match fork {
        Fork::Kumquat => write_kumquat(sc, &mut |bytes| h.update(bytes)),
        Fork::Genesis => write_genesis(sc, &mut |bytes| h.update(bytes)),
    }
    h.finalize().into()
}

/// The Genesis message of a block: the borsh bytes it hashes and signs.
pub fn genesis_message(sc: &SoftConfirmation) -> Vec<u8> {
    let blobs: usize = sc.txs.iter().chain(&sc.deposit_data).map(Vec::len).sum();
    let items = sc.txs.len() + sc.deposit_data.len();
    let mut out = Vec::with_capacity(8 + 8 + 32 + 32 + 4 + 4 + 4 * items + blobs + 16 + 8);
    write_genesis(sc, &mut |bytes| out.extend_from_slice(bytes));
    out
}

/// What the sequencer signs by `fork`'s rules: under Kumquat the block's
/// stated 32-byte hash, under Genesis its borsh message.
pub fn signed_message(sc: &SoftConfirmation, fork: Fork) -> Cow<'_, [u8]> {
    match fork {
        Fork::Kumquat => Cow::Borrowed(&sc.hash),
        Fork::Genesis => Cow::Owned(genesis_message(sc)),
    }
}

/// Checks the block's signature by `fork`'s rules against `key` (the
/// sequencer key; the block's own `pubKey` is the caller's business).
pub fn verify_block_signature(
    sc: &SoftConfirmation,
    fork: Fork,
    key: &[u8; 32],
) -> Result<(), SignatureError> {
    verify_signature(key, &signed_message(sc, fork), &sc.signature)
}

/// Feeds the Kumquat hash input to `out`, field by field.
fn write_kumquat(sc: &SoftConfirmation, out: &mut impl FnMut(&[u8])) {
    out(&sc.l2_height.to_be_bytes());
    out(&sc.da_slot_height.to_be_bytes());
    out(&sc.da_slot_hash);
    out(&sc.da_slot_txs_commitment);
    for tx in &sc.txs {
        out(tx);
    }
    for deposit in &sc.deposit_data {
        out(deposit);
    }
    out(&sc.l1_fee_rate.to_be_bytes());
    out(&sc.timestamp.to_be_bytes());
}

/// Feeds the Genesis (borsh) message to `out`, field by field.
fn write_genesis(sc: &SoftConfirmation, out: &mut impl FnMut(&[u8])) {
    // borsh writes a length as u32; a list or blob of 4 GiB cannot be
    // received in a JSON answer, so the cast never truncates in practice.
    let len = |n: usize| (n as u32).to_le_bytes();
    out(&sc.l2_height.to_le_bytes());
    out(&sc.da_slot_height.to_le_bytes());
    out(&sc.da_slot_hash);
    out(&sc.da_slot_txs_commitment);
    for list in [&sc.txs, &sc.deposit_data] {
        out(&len(list.len()));
        for blob in list {
            out(&len(blob.len()));
            out(blob);
        }
    }
    out(&sc.l1_fee_rate.to_le_bytes());
    out(&sc.timestamp.to_le_bytes());
}

/// Binary Merkle root over `leaves` (used as they are): parent =
/// SHA-256(left || right), an odd last node is promoted unchanged, a single
/// leaf is its own root. `None` for no leaves.
pub fn merkle_root(leaves: &[Hash]) -> Option<Hash> {
    let mut level: Vec<Hash> = leaves.to_vec();
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|pair| match pair {
                [left, right] => Sha256::new()
                    .chain_update(left)
                    .chain_update(right)
                    .finalize()
                    .into(),
                // An odd last node is promoted unchanged.
                _ => pair[0],
            })
            .collect();
    }
    level.first().copied()
}

/// The sequencer's key, as the devnet holds it: ed25519-dalek's
/// `SigningKey`, which signs (RFC 8032, deterministic nonces).
pub struct SequencerKey {
    key: SigningKey,
}

impl SequencerKey {
    /// A key from 32 secret bytes (the devnet derives them from its seed).
    pub fn from_secret(secret: &Hash) -> SequencerKey {
        SequencerKey {
            key: SigningKey::from_bytes(secret),
        }
    }

    /// The 32-byte public key (`pubKey` on the wire).
    pub fn public_key(&self) -> [u8; 32] {
        self.key.verifying_key().to_bytes()
    }

    /// Ed25519 signature over `message` (ed25519-dalek's `SigningKey::sign`).
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }

    /// The signatures of `blocks`, each by its own fork's rules in `forks`
    /// (their `hash` must be set), in order. Between signatures the
    /// server's threads may take the core (`os::give_way`): a chunk is
    /// milliseconds of signing.
    pub fn sign_blocks(&self, blocks: &[SoftConfirmation], forks: &ForkTable) -> Vec<[u8; 64]> {
        blocks
            .iter()
            .map(|sc| {
                crate::os::give_way();
                self.sign_block(sc, forks.fork_at(sc.l2_height))
            })
            .collect()
    }

    /// The block's signature by `fork`'s rules (its `hash` must be set).
    pub fn sign_block(&self, sc: &SoftConfirmation, fork: Fork) -> [u8; 64] {
        self.sign(&signed_message(sc, fork))
    }
}

/// Why a signature did not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureError {
    /// The 32 bytes are not a valid Ed25519 public key.
    BadPublicKey,
    /// The signature does not verify under the public key.
    Mismatch,
}

impl std::fmt::Display for SignatureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignatureError::BadPublicKey => f.write_str("pubKey is not a valid Ed25519 public key"),
            SignatureError::Mismatch => {
                f.write_str("softConfirmationSignature does not verify under pubKey")
            }
        }
    }
}

impl std::error::Error for SignatureError {}

/// Checks that `signature` is `pub_key`'s Ed25519 signature over `message`,
/// strictly: a small-order key or R is refused (`verify_strict`).
pub fn verify_signature(
    pub_key: &[u8; 32],
    message: &[u8],
    signature: &[u8; 64],
) -> Result<(), SignatureError> {
    let key = VerifyingKey::from_bytes(pub_key).map_err(|_| SignatureError::BadPublicKey)?;
    let sig = Signature::from_bytes(signature);
    key.verify_strict(message, &sig)
        .map_err(|_| SignatureError::Mismatch)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::value::RawValue;
    use serde_json::Value;

    #[test]
    fn sequencer_key_signs_the_bytes_ed25519_dalek_signs() {
        for seed in 0u8..8 {
            let secret = [seed.wrapping_mul(37) ^ 0x5c; 32];
            let ours = SequencerKey::from_secret(&secret);
            let theirs = SigningKey::from_bytes(&secret);
            assert_eq!(ours.public_key(), theirs.verifying_key().to_bytes());
            for len in [0usize, 1, 32, 33, 200, 3000] {
                let message: Vec<u8> = (0..len).map(|i| (i as u8) ^ seed).collect();
                let sig = ours.sign(&message);
                assert_eq!(
                    sig,
                    ed25519_dalek::Signer::sign(&theirs, &message).to_bytes(),
                    "seed {seed}, {len} bytes"
                );
                verify_signature(&ours.public_key(), &message, &sig).unwrap();
            }
        }
    }

    /// Made by `scripts/vectors/make_vectors.py` (Python, independent of this module).
    const VECTORS: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/chain_vectors.json"
    ));

    fn vectors() -> Value {
        serde_json::from_str(VECTORS).expect("chain_vectors.json is JSON")
    }

    fn h32(v: &Value) -> Hash {
        crate::wire::read::hash("test vector", v.as_str().expect("hex string"))
            .expect("32-byte hex")
    }

    /// One soft confirmation of the vectors. The block is kept as raw text:
    /// l1FeeRate needs 128 bits, which `Value` does not keep.
    #[derive(serde::Deserialize)]
    struct Entry<'a> {
        fork: String,
        #[serde(rename = "signedMessage")]
        signed_message: String,
        #[serde(borrow)]
        block: &'a RawValue,
    }

    #[derive(serde::Deserialize)]
    struct Vectors<'a> {
        #[serde(rename = "kumquatHeight")]
        kumquat_height: u64,
        #[serde(rename = "softConfirmations", borrow)]
        entries: Vec<Entry<'a>>,
    }

    /// The blocks of `tests/data/chain_vectors.json`, with the fork of each
    /// and its signed message, and the vectors' fork table.
    pub(crate) fn vector_blocks() -> (ForkTable, Vec<(Fork, Vec<u8>, SoftConfirmation)>) {
        let v: Vectors = serde_json::from_str(VECTORS).unwrap();
        let blocks = v
            .entries
            .iter()
            .map(|e| {
                let fork = match e.fork.as_str() {
                    "Genesis" => Fork::Genesis,
                    "Kumquat" => Fork::Kumquat,
                    other => panic!("unknown fork {other}"),
                };
                let sc = crate::wire::read::soft_confirmation(e.block.get()).unwrap();
                (fork, hex::decode(&e.signed_message).unwrap(), sc)
            })
            .collect();
        (ForkTable::kumquat_from(v.kumquat_height), blocks)
    }

    /// [`first_bad_signature`] over the i-th key, message and signature.
    pub(crate) fn first_bad<M: AsRef<[u8]>>(
        keys: &[[u8; 32]],
        messages: &[M],
        sigs: &[[u8; 64]],
    ) -> Option<usize> {
        let items: Vec<_> = (keys.iter().zip(messages).zip(sigs))
            .map(|((k, m), s)| (k, m.as_ref(), s))
            .collect();
        first_bad_signature(&items)
    }

    fn other(fork: Fork) -> Fork {
        match fork {
            Fork::Genesis => Fork::Kumquat,
            Fork::Kumquat => Fork::Genesis,
        }
    }

    #[test]
    fn each_forks_blocks_hash_and_sign_as_the_vectors_say() {
        let (forks, blocks) = vector_blocks();
        assert_eq!(blocks.len(), 8);
        for (fork, message, sc) in &blocks {
            let h = sc.l2_height;
            assert_eq!(forks.fork_at(h), *fork, "fork of {h}");
            assert_eq!(block_hash(sc, *fork), sc.hash, "hash of {h}");
            assert_eq!(
                signed_message(sc, *fork).as_ref(),
                &message[..],
                "message of {h}"
            );
            verify_block_signature(sc, *fork, &sc.pub_key).unwrap();
            // The other fork's rules refuse the block.
            assert_ne!(block_hash(sc, other(*fork)), sc.hash, "{h}");
            assert_eq!(
                verify_block_signature(sc, other(*fork), &sc.pub_key),
                Err(SignatureError::Mismatch)
            );
            let mut bad = sc.clone();
            bad.signature[0] ^= 1;
            assert_eq!(
                verify_block_signature(&bad, *fork, &sc.pub_key),
                Err(SignatureError::Mismatch)
            );
        }
        let (_, _, two) = &blocks[1];
        assert_eq!(
            genesis_message(two),
            blocks[1].1,
            "the Genesis message is the borsh bytes"
        );
        // What the vectors are there to pin.
        let has = |f: &dyn Fn(&SoftConfirmation) -> bool, fork: Fork| {
            blocks.iter().any(|(k, _, sc)| *k == fork && f(sc))
        };
        for fork in [Fork::Genesis, Fork::Kumquat] {
            assert!(has(
                &|sc| sc.txs.len() > 1 && !sc.deposit_data.is_empty(),
                fork
            ));
            assert!(has(&|sc| sc.deposit_data.iter().any(Vec::is_empty), fork));
            assert!(has(&|sc| sc.l1_fee_rate > u128::from(u64::MAX), fork));
        }
    }

    #[test]
    fn an_empty_deposit_blob_counts_under_genesis_and_not_under_kumquat() {
        let (_, blocks) = vector_blocks();
        let empty_blob: Vec<_> = blocks
            .iter()
            .filter(|(_, _, sc)| sc.deposit_data == [Vec::<u8>::new()])
            .collect();
        assert_eq!(empty_blob.len(), 2, "one block per fork");
        for (fork, _, sc) in empty_blob {
            let mut without = sc.clone();
            without.deposit_data.clear();
            match fork {
                Fork::Genesis => assert_ne!(block_hash(&without, *fork), sc.hash),
                Fork::Kumquat => assert_eq!(block_hash(&without, *fork), sc.hash),
            }
        }
    }

    #[test]
    fn merkle_roots_match_the_vectors() {
        let v = vectors();
        let cases = v["merkle"].as_array().unwrap();
        assert_eq!(cases.len(), 7);
        for case in cases {
            let leaves: Vec<Hash> = case["leaves"].as_array().unwrap().iter().map(h32).collect();
            assert_eq!(merkle_root(&leaves), Some(h32(&case["root"])));
        }
    }

    #[test]
    fn ed25519_rfc8032_test1_verifies_and_a_flipped_bit_does_not() {
        let v = vectors();
        let t = &v["ed25519_rfc8032_test1"];
        let public = h32(&t["publicKey"]);
        let message = hex::decode(t["message"].as_str().unwrap()).unwrap();
        let sig: [u8; 64] = hex::decode(t["signature"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        verify_signature(&public, &message, &sig).unwrap();
        let mut bad = sig;
        bad[63] ^= 0x40;
        assert!(verify_signature(&public, &message, &bad).is_err());
    }

    #[test]
    fn a_devnet_key_signs_each_fork_so_that_only_that_fork_verifies() {
        let (forks, blocks) = vector_blocks();
        let key = SequencerKey::from_secret(&[9u8; 32]);
        for (fork, _, sc) in blocks {
            let mut sc = sc;
            sc.pub_key = key.public_key();
            sc.signature = key.sign_block(&sc, fork);
            assert_eq!(forks.fork_at(sc.l2_height), fork);
            verify_block_signature(&sc, fork, &key.public_key()).unwrap();
            assert!(verify_block_signature(&sc, other(fork), &key.public_key()).is_err());
        }
    }

    #[test]
    fn many_signatures_are_checked_in_order_and_the_first_bad_one_found() {
        let key = SequencerKey::from_secret(&[4u8; 32]);
        let keys = [key.public_key(); 20];
        let hashes: Vec<Hash> = (0u8..20).map(|i| sha256(&[i])).collect();
        let mut sigs: Vec<[u8; 64]> = hashes.iter().map(|h| key.sign(h)).collect();
        assert_eq!(first_bad(&keys, &hashes, &sigs), None);
        sigs[13][5] ^= 1;
        sigs[17][5] ^= 1;
        assert_eq!(first_bad(&keys, &hashes, &sigs), Some(13));
    }

    #[test]
    fn batches_with_several_keys_verify_and_a_swapped_or_malformed_signature_does_not() {
        let [k1, k2] = [1u8, 2].map(|b| SequencerKey::from_secret(&[b; 32]));
        let p2 = k2.public_key();
        let hashes: Vec<Hash> = (0u8..9).map(|i| sha256(&[i])).collect();
        let signer = |i: usize| if i.is_multiple_of(3) { &k2 } else { &k1 };
        let keys: Vec<[u8; 32]> = (0..9).map(|i| signer(i).public_key()).collect();
        let sigs: Vec<[u8; 64]> = (0..9).map(|i| signer(i).sign(&hashes[i])).collect();
        assert_eq!(first_bad(&keys, &hashes, &sigs), None);
        // Signed by the other key than the one it names.
        let mut wrong_key = keys.clone();
        wrong_key[4] = p2;
        assert_eq!(first_bad(&wrong_key, &hashes, &sigs), Some(4));
        // Two signatures swapped: each is valid for the other message.
        let mut swapped = sigs.clone();
        swapped.swap(1, 2);
        assert_eq!(first_bad(&keys, &hashes, &swapped), Some(1));
        // s not below the group order.
        let mut high_s = sigs.clone();
        high_s[7][63] |= 0xf0;
        assert_eq!(first_bad(&keys, &hashes, &high_s), Some(7));
        // R not a point.
        let mut bad_r = sigs.clone();
        bad_r[5][..32].copy_from_slice(&[0xff; 32]);
        assert_eq!(first_bad(&keys, &hashes, &bad_r), Some(5));
    }

    #[test]
    fn merkle_root_of_no_leaves_is_none_and_of_one_is_the_leaf() {
        assert_eq!(merkle_root(&[]), None);
        assert_eq!(merkle_root(&[[7u8; 32]]), Some([7u8; 32]));
    }
}
