//! The contract's chain rules: how a soft confirmation is hashed and signed,
//! and how a sequencer commitment's Merkle root is built.
//!
//! The sync thread checks blocks with these functions and the devnet makes
//! blocks with them, so both sides agree by construction. Test vectors come
//! from `tests/data/chain_vectors.json`, made by an independent Python
//! implementation of the same rules (see the tests at the bottom).

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::types::{Hash, SoftConfirmation};

/// SHA-256 of `data`.
pub fn sha256(data: &[u8]) -> Hash {
    Sha256::digest(data).into()
}

/// The soft-confirmation hash: SHA-256 over l2Height (u64 BE), daSlotHeight
/// (u64 BE), daSlotHash, daSlotTxsCommitment, every tx blob, every deposit
/// blob, l1FeeRate (u128 BE), timestamp (u64 BE). `prevHash` and `stateRoot`
/// are not hashed.
pub fn soft_confirmation_hash(sc: &SoftConfirmation) -> Hash {
    let mut h = Sha256::new();
    h.update(sc.l2_height.to_be_bytes());
    h.update(sc.da_slot_height.to_be_bytes());
    h.update(sc.da_slot_hash);
    h.update(sc.da_slot_txs_commitment);
    for tx in &sc.txs {
        h.update(tx);
    }
    for deposit in &sc.deposit_data {
        h.update(deposit);
    }
    h.update(sc.l1_fee_rate.to_be_bytes());
    h.update(sc.timestamp.to_be_bytes());
    h.finalize().into()
}

/// Binary Merkle root over `leaves` (used as they are): parent =
/// SHA-256(left || right), an odd last node is promoted unchanged, a single
/// leaf is its own root. `None` for no leaves.
pub fn merkle_root(leaves: &[Hash]) -> Option<Hash> {
    if leaves.is_empty() {
        return None;
    }
    let mut level: Vec<Hash> = leaves.to_vec();
    while level.len() > 1 {
        let mut next = Vec::with_capacity(level.len().div_ceil(2));
        for pair in level.chunks(2) {
            match pair {
                [left, right] => {
                    let mut h = Sha256::new();
                    h.update(left);
                    h.update(right);
                    next.push(h.finalize().into());
                }
                [odd] => next.push(*odd),
                _ => unreachable!("chunks(2) yields one or two items"),
            }
        }
        level = next;
    }
    Some(level[0])
}

/// The sequencer's key, as the devnet holds it.
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

    /// Ed25519 signature over the 32-byte soft-confirmation hash.
    pub fn sign(&self, hash: &Hash) -> [u8; 64] {
        self.key.sign(hash).to_bytes()
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

/// Checks that `signature` is `pub_key`'s Ed25519 signature over `message`
/// (for a soft confirmation: its 32-byte hash).
pub fn verify_signature(
    pub_key: &[u8; 32],
    message: &[u8],
    signature: &[u8; 64],
) -> Result<(), SignatureError> {
    let key = VerifyingKey::from_bytes(pub_key).map_err(|_| SignatureError::BadPublicKey)?;
    let sig = Signature::from_bytes(signature);
    key.verify(message, &sig)
        .map_err(|_| SignatureError::Mismatch)
}

/// Verifies many soft-confirmation signatures at once with ed25519-dalek's
/// batch verification (random 128-bit weights; about twice as fast per
/// signature as one by one). Returns the index of the first signature that
/// fails, or `None` when all verify.
///
/// A sequencer signs every block with the same key, and decompressing a key
/// costs about as much as a verification: each distinct key is decompressed
/// once. The batch equation itself is ed25519-dalek's, not ours.
pub fn first_bad_signature(items: &[(&[u8; 32], &Hash, &[u8; 64])]) -> Option<usize> {
    if items.is_empty() || batch_verifies(items) {
        return None;
    }
    // The batch failed: find the first culprit one by one.
    items
        .iter()
        .position(|(k, m, s)| verify_signature(k, m.as_slice(), s).is_err())
}

/// True when every signature of `items` verifies as a batch; false when any
/// key is malformed or the batch does not hold.
fn batch_verifies(items: &[(&[u8; 32], &Hash, &[u8; 64])]) -> bool {
    let mut keys: Vec<VerifyingKey> = Vec::with_capacity(items.len());
    let mut last: Option<(&[u8; 32], VerifyingKey)> = None;
    for (pub_key, _, _) in items {
        let key = match last {
            Some((bytes, key)) if bytes == *pub_key => key,
            _ => match VerifyingKey::from_bytes(pub_key) {
                Ok(k) => k,
                Err(_) => return false,
            },
        };
        last = Some((pub_key, key));
        keys.push(key);
    }
    let messages: Vec<&[u8]> = items.iter().map(|(_, m, _)| m.as_slice()).collect();
    let signatures: Vec<Signature> = items
        .iter()
        .map(|(_, _, s)| Signature::from_bytes(s))
        .collect();
    ed25519_dalek::verify_batch(&messages, &signatures, &keys).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The vectors file, part of the project (its `about` says how it was made).
    const VECTORS: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/chain_vectors.json"
    ));

    fn vectors() -> Value {
        serde_json::from_str(VECTORS).expect("chain_vectors.json is JSON")
    }

    fn h32(v: &Value) -> Hash {
        crate::wire::hash("test vector", v.as_str().expect("hex string")).expect("32-byte hex")
    }

    #[test]
    fn soft_confirmation_hashes_and_signatures_match_the_vectors() {
        // Parse from the file's text, not from a `Value`: l1FeeRate needs 128 bits.
        #[derive(serde::Deserialize)]
        struct Vectors<'a> {
            #[serde(rename = "softConfirmations", borrow)]
            scs: Vec<&'a serde_json::value::RawValue>,
        }
        let v: Vectors = serde_json::from_str(VECTORS).unwrap();
        assert!(!v.scs.is_empty());
        let mut saw_big_fee = false;
        for item in v.scs {
            let sc = crate::wire::soft_confirmation(item.get()).unwrap();
            saw_big_fee |= sc.l1_fee_rate > u64::MAX as u128;
            assert_eq!(
                soft_confirmation_hash(&sc),
                sc.hash,
                "hash of {}",
                sc.l2_height
            );
            verify_signature(&sc.pub_key, &sc.hash, &sc.signature).unwrap();
            let mut bad = sc.signature;
            bad[0] ^= 1;
            assert_eq!(
                verify_signature(&sc.pub_key, &sc.hash, &bad),
                Err(SignatureError::Mismatch)
            );
        }
        assert!(saw_big_fee, "the vectors include an l1FeeRate above u64");
    }

    #[test]
    fn merkle_roots_match_the_vectors() {
        let v = vectors();
        let cases = v["merkle"].as_array().unwrap();
        assert!(!cases.is_empty());
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
    fn batch_verification_finds_the_first_bad_signature() {
        let key = SequencerKey::from_secret(&[4u8; 32]);
        let pk = key.public_key();
        let hashes: Vec<Hash> = (0u8..20).map(|i| sha256(&[i])).collect();
        let mut sigs: Vec<[u8; 64]> = hashes.iter().map(|h| key.sign(h)).collect();
        let items = |sigs: &[[u8; 64]]| -> Option<usize> {
            let v: Vec<_> = hashes.iter().zip(sigs).map(|(h, s)| (&pk, h, s)).collect();
            first_bad_signature(&v)
        };
        assert_eq!(items(&sigs), None);
        sigs[13][5] ^= 1;
        sigs[17][5] ^= 1;
        assert_eq!(items(&sigs), Some(13));
    }

    #[test]
    fn batches_with_several_keys_verify_and_a_swapped_or_malformed_signature_does_not() {
        let (k1, k2) = (
            SequencerKey::from_secret(&[1u8; 32]),
            SequencerKey::from_secret(&[2u8; 32]),
        );
        let (p1, p2) = (k1.public_key(), k2.public_key());
        let hashes: Vec<Hash> = (0u8..9).map(|i| sha256(&[i])).collect();
        let mut keys = Vec::new();
        let mut sigs = Vec::new();
        for (i, h) in hashes.iter().enumerate() {
            let (k, p) = if i % 3 == 0 { (&k2, p2) } else { (&k1, p1) };
            keys.push(p);
            sigs.push(k.sign(h));
        }
        let check = |keys: &[[u8; 32]], sigs: &[[u8; 64]]| {
            let v: Vec<_> = keys
                .iter()
                .zip(&hashes)
                .zip(sigs)
                .map(|((k, h), s)| (k, h, s))
                .collect();
            first_bad_signature(&v)
        };
        assert_eq!(check(&keys, &sigs), None);
        // Signed by the other key than the one it names.
        let mut wrong_key = keys.clone();
        wrong_key[4] = p2;
        assert_eq!(check(&wrong_key, &sigs), Some(4));
        // Two signatures swapped: each is valid for the other message.
        let mut swapped = sigs.clone();
        swapped.swap(1, 2);
        assert_eq!(check(&keys, &swapped), Some(1));
        // s not below the group order.
        let mut high_s = sigs.clone();
        high_s[7][63] |= 0xf0;
        assert_eq!(check(&keys, &high_s), Some(7));
        // R not a point.
        let mut bad_r = sigs.clone();
        bad_r[5][..32].copy_from_slice(&[0xff; 32]);
        assert_eq!(check(&keys, &bad_r), Some(5));
    }

    #[test]
    fn a_devnet_key_signs_what_verify_accepts() {
        let key = SequencerKey::from_secret(&[9u8; 32]);
        let hash = sha256(b"block");
        let sig = key.sign(&hash);
        verify_signature(&key.public_key(), &hash, &sig).unwrap();
        assert!(verify_signature(&key.public_key(), &sha256(b"other"), &sig).is_err());
    }

    #[test]
    fn merkle_root_of_no_leaves_is_none_and_of_one_is_the_leaf() {
        assert_eq!(merkle_root(&[]), None);
        assert_eq!(merkle_root(&[[7u8; 32]]), Some([7u8; 32]));
    }
}
