//! Block signatures, each checked exactly as ed25519-dalek's `verify_strict`
//! checks one (as Citrea does), never as a batch (which accepts what it
//! refuses: docs/CITREA.md, "Signatures"). A run under one key A in the
//! prime-order subgroup (a sequencer's) uses a *prepared key*, a table of
//! multiples of -A kept for the next runs, and `verify_strict`'s checks for
//! such a key: s is below l, R is not the identity's encoding, and R' =
//! \[s\]B + \[k\](-A), k = SHA-512(R || A || message), encodes to R's 32 bytes
//! (why that is all it checks: docs/CITREA.md). Other keys, and short runs
//! under a key not prepared, go through `verify_strict`; tests compare both.

use std::sync::{Arc, Mutex, PoisonError};

use curve25519_dalek::constants::ED25519_BASEPOINT_TABLE;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsBasepointTable};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{BasepointTable, Identity};
use ed25519_dalek::{Signature, VerifyingKey};
use sha2::{Digest, Sha512};

/// A run this long prepares its key (the table costs about 40 checks).
const PREPARE_MIN: usize = 64;
/// The key last prepared (public data), kept for the next runs on any thread.
static PREPARED: Mutex<Option<Arc<PreparedKey>>> = Mutex::new(None);

/// The prepared `key` kept, or one made and kept if `run` is long enough.
fn prepared(key: &[u8; 32], run: usize) -> Option<Arc<PreparedKey>> {
    // The slot holds plain data: a panic elsewhere cannot leave it half-made.
    let mut slot = PREPARED.lock().unwrap_or_else(PoisonError::into_inner);
    if run >= PREPARE_MIN && slot.as_ref().is_none_or(|p| p.bytes != *key) {
        if let Some(p) = PreparedKey::new(key) {
            *slot = Some(Arc::new(p));
        }
    }
    slot.clone().filter(|p| p.bytes == *key)
}

/// A key in the prime-order subgroup, prepared for many checks.
struct PreparedKey {
    bytes: [u8; 32],
    /// Multiples of -A.
    minus_a: Box<EdwardsBasepointTable>,
}

impl PreparedKey {
    /// `None` for a key that is not a point, of small order or with a small-order part.
    fn new(bytes: &[u8; 32]) -> Option<PreparedKey> {
        let a = CompressedEdwardsY(*bytes).decompress()?;
        let minus_a = (!a.is_small_order() && a.is_torsion_free()).then(|| -a)?;
        let minus_a = Box::new(EdwardsBasepointTable::create(&minus_a));
        let bytes = *bytes;
        Some(PreparedKey { bytes, minus_a })
    }

    /// Whether `verify_strict` accepts `signature` over `message` (module docs).
    fn verifies(&self, message: &[u8], signature: &[u8; 64]) -> bool {
        let signature = Signature::from_bytes(signature);
        let r_bytes = signature.r_bytes();
        let s = Option::<Scalar>::from(Scalar::from_canonical_bytes(*signature.s_bytes()));
        let Some(s) = s.filter(|_| r_bytes != CompressedEdwardsY::identity().as_bytes()) else {
            return false;
        };
        let hash = Sha512::new().chain_update(r_bytes).chain_update(self.bytes);
        let k = Scalar::from_hash(hash.chain_update(message));
        let r = ED25519_BASEPOINT_TABLE * &s + &*self.minus_a * &k;
        r.compress().as_bytes() == r_bytes
    }
}

/// Checks many signatures, each exactly as [`super::verify_signature`]
/// does (ed25519-dalek's `verify_strict`), in order. Items are (key,
/// message, signature). Returns the index of the first signature that
/// fails, or `None` when all verify.
pub fn first_bad_signature(items: &[(&[u8; 32], &[u8], &[u8; 64])]) -> Option<usize> {
    let mut start = 0;
    while let Some((key, _, _)) = items.get(start) {
        let same_key = items[start..].iter().take_while(|(k, _, _)| k == key);
        let run = same_key.count();
        let prepared = prepared(key, run);
        // Else verify_strict: a key that is not a point fails every signature.
        let strict = prepared
            .is_none()
            .then(|| VerifyingKey::from_bytes(key).ok());
        let bad = items[start..start + run].iter().position(|(_, m, s)| {
            crate::os::give_way();
            match &prepared {
                Some(p) => !p.verifies(m, s),
                None => strict
                    .flatten()
                    .is_none_or(|k| k.verify_strict(m, &Signature::from_bytes(s)).is_err()),
            }
        });
        if let Some(i) = bad {
            return Some(start + i);
        }
        start += run;
    }
    None
}

#[cfg(test)]
mod tests {
    //! Signatures made by hand that `verify_strict` refuses and
    //! `verify_batch` lets through: the batch would have stored the block,
    //! [`first_bad_signature`] must not.

    use super::*;
    use crate::chain_rules::tests::first_bad;
    use crate::chain_rules::{verify_signature, Network};

    /// The canonical encoding of the identity point (x = 0, y = 1).
    const IDENTITY: [u8; 32] = {
        let mut b = [0u8; 32];
        b[0] = 1;
        b
    };
    use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};
    use curve25519_dalek::edwards::EdwardsPoint;
    use curve25519_dalek::traits::Identity;

    /// A key whose secret scalar the test knows: A = \[a\]B + `torsion`.
    struct Signer {
        a: Scalar,
        public: [u8; 32],
    }

    impl Signer {
        fn new(seed: u8, torsion: EdwardsPoint) -> Signer {
            let a = Scalar::from_bytes_mod_order([seed; 32]);
            let public = (ED25519_BASEPOINT_POINT * a + torsion)
                .compress()
                .to_bytes();
            Signer { a, public }
        }

        /// k = SHA-512(R || A || message), as both verifiers compute it.
        fn challenge(&self, r_bytes: &[u8; 32], message: &[u8]) -> Scalar {
            let mut h = Sha512::new();
            h.update(r_bytes);
            h.update(self.public);
            h.update(message);
            Scalar::from_hash(h)
        }

        /// A signature whose R is `r_bytes`, with s = r + k * a.
        fn sign_with(&self, r_bytes: [u8; 32], r: Scalar, message: &[u8]) -> [u8; 64] {
            let s = r + self.challenge(&r_bytes, message) * self.a;
            let mut sig = [0u8; 64];
            sig[..32].copy_from_slice(&r_bytes);
            sig[32..].copy_from_slice(s.as_bytes());
            sig
        }

        /// The ordinary signature with nonce `r` (R = \[r\]B).
        fn sign(&self, r: u64, message: &[u8]) -> [u8; 64] {
            let r = Scalar::from(r) + Scalar::from_bytes_mod_order([0x5a; 32]);
            let r_bytes = (ED25519_BASEPOINT_POINT * r).compress().to_bytes();
            self.sign_with(r_bytes, r, message)
        }
    }

    fn strict_accepts(key: &[u8; 32], message: &[u8], sig: &[u8; 64]) -> bool {
        verify_signature(key, message, sig).is_ok()
    }

    /// What ed25519-dalek's `verify_batch` says of one signature alone.
    fn batch_accepts(key: &[u8; 32], message: &[u8], sig: &[u8; 64]) -> bool {
        VerifyingKey::from_bytes(key).is_ok_and(|k| {
            ed25519_dalek::verify_batch(&[message], &[Signature::from_bytes(sig)], &[k]).is_ok()
        })
    }

    /// The first message `block N` for which `make` gives a signature that
    /// `verify_batch` accepts (its weight happens to cancel the small-order
    /// part; the weights are derived from the inputs, so this is
    /// reproducible).
    fn message_the_batch_lets_through(
        key: &[u8; 32],
        make: impl Fn(&[u8]) -> Option<[u8; 64]>,
    ) -> (Vec<u8>, [u8; 64]) {
        (0..256)
            .map(|i| format!("block {i}").into_bytes())
            .find_map(|m| {
                let sig = make(&m)?;
                batch_accepts(key, &m, &sig).then_some((m, sig))
            })
            .expect("a batch weight cancels a small-order part at least 1 time in 8")
    }

    /// Puts `bad` among good signatures by the same key (a long run and a
    /// short one) and checks that exactly it is found.
    fn found_among_good_ones(signer: &Signer, message: &[u8], bad: &[u8; 64]) {
        for (len, at) in [(100, 70), (3, 1)] {
            let mut messages: Vec<Vec<u8>> =
                (0..len).map(|i| format!("good {i}").into_bytes()).collect();
            messages[at] = message.to_vec();
            let mut sigs: Vec<[u8; 64]> = messages
                .iter()
                .enumerate()
                .map(|(i, m)| signer.sign(i as u64, m))
                .collect();
            let keys = vec![signer.public; len];
            assert_eq!(
                first_bad(&keys, &messages, &sigs),
                None,
                "the good signatures verify"
            );
            sigs[at] = *bad;
            assert_eq!(first_bad(&keys, &messages, &sigs), Some(at), "run of {len}");
        }
    }

    #[test]
    fn an_identity_r_passes_any_batch_and_is_refused() {
        let signer = Signer::new(11, EdwardsPoint::identity());
        let sig = signer.sign_with(IDENTITY, Scalar::ZERO, b"block 1");
        assert!(batch_accepts(&signer.public, b"block 1", &sig));
        assert!(!strict_accepts(&signer.public, b"block 1", &sig));
        found_among_good_ones(&signer, b"block 1", &sig);
    }

    #[test]
    fn a_small_order_r_that_a_batch_lets_through_is_refused() {
        let signer = Signer::new(12, EdwardsPoint::identity());
        for t in &EIGHT_TORSION[1..] {
            let r_bytes = t.compress().to_bytes();
            let (m, sig) = message_the_batch_lets_through(&signer.public, |m| {
                Some(signer.sign_with(r_bytes, Scalar::ZERO, m))
            });
            assert!(!strict_accepts(&signer.public, &m, &sig));
            found_among_good_ones(&signer, &m, &sig);
        }
    }

    #[test]
    fn an_r_with_a_small_order_component_is_refused_though_r_is_not_small_order() {
        // R = [r]B + T: not of small order, so verify_strict's order check
        // passes it; its exact equation refuses it. A batch lets it through
        // when its weight is a multiple of T's order.
        let signer = Signer::new(13, EdwardsPoint::identity());
        let r = Scalar::from_bytes_mod_order([0x33; 32]);
        for t in &EIGHT_TORSION[1..] {
            let point = ED25519_BASEPOINT_POINT * r + t;
            assert!(!point.is_small_order());
            let r_bytes = point.compress().to_bytes();
            let (m, sig) = message_the_batch_lets_through(&signer.public, |m| {
                Some(signer.sign_with(r_bytes, r, m))
            });
            assert!(!strict_accepts(&signer.public, &m, &sig));
            found_among_good_ones(&signer, &m, &sig);
        }
    }

    #[test]
    fn non_canonical_encodings_of_r_pass_a_batch_and_are_refused() {
        let signer = Signer::new(14, EdwardsPoint::identity());
        // y = 1 + (2^255 - 19), and y = 1 with the sign bit of x = 0 set:
        // both decompress to the identity.
        let mut y_above_p = [0xff; 32];
        y_above_p[0] = 0xee;
        y_above_p[31] = 0x7f;
        let mut negative_zero = IDENTITY;
        negative_zero[31] = 0x80;
        for r_bytes in [y_above_p, negative_zero] {
            let sig = signer.sign_with(r_bytes, Scalar::ZERO, b"block 2");
            assert!(batch_accepts(&signer.public, b"block 2", &sig));
            assert!(!strict_accepts(&signer.public, b"block 2", &sig));
            found_among_good_ones(&signer, b"block 2", &sig);
        }
    }

    #[test]
    fn a_small_order_key_passes_a_batch_and_is_refused() {
        // a = 0: the key is the torsion point itself, and s = r makes
        // [s]B - [k]A = R - [k]T.
        for t in &EIGHT_TORSION {
            let weak = Signer {
                a: Scalar::ZERO,
                public: t.compress().to_bytes(),
            };
            let (m, sig) = message_the_batch_lets_through(&weak.public, |m| Some(weak.sign(7, m)));
            assert!(!strict_accepts(&weak.public, &m, &sig));
            assert_eq!(first_bad(&[weak.public], &[&m], &[sig]), Some(0));
        }
    }

    #[test]
    fn a_key_with_a_small_order_component_verifies_only_what_verify_strict_does() {
        // A = [a]B + T8 is not of small order, so verify_strict takes it;
        // an ordinary signature under it verifies exactly when k is a
        // multiple of 8 ([k]T8 = 0). A batch also lets through some of the
        // others.
        let signer = Signer::new(15, EIGHT_TORSION[1]);
        let k_mod_8 = |m: &[u8], sig: &[u8; 64]| {
            let r: [u8; 32] = sig[..32].try_into().unwrap();
            signer.challenge(&r, m).as_bytes()[0] & 7
        };
        let (m, sig) = message_the_batch_lets_through(&signer.public, |m| {
            let sig = signer.sign(3, m);
            (k_mod_8(m, &sig) != 0).then_some(sig)
        });
        assert!(!strict_accepts(&signer.public, &m, &sig));
        assert_eq!(first_bad(&[signer.public], &[&m], &[sig]), Some(0));
        // ...and one that verify_strict accepts is accepted.
        let (sig, m) = (0..256)
            .map(|i| format!("block {i}").into_bytes())
            .map(|m| (signer.sign(3, &m), m))
            .find(|(sig, m)| k_mod_8(m, sig) == 0)
            .unwrap();
        assert!(strict_accepts(&signer.public, &m, &sig));
        assert_eq!(first_bad(&[signer.public], &[&m], &[sig]), None);
    }

    #[test]
    fn a_non_canonical_s_is_refused_by_both() {
        // s + l: the same s modulo the group order l, 253 bits, so its top
        // three bits are clear (the old, looser check would take it).
        let signer = Signer::new(16, EdwardsPoint::identity());
        let sig = signer.sign(1, b"block 3");
        assert!(strict_accepts(&signer.public, b"block 3", &sig));
        let l: [u8; 32] = {
            let mut minus_one = (-Scalar::ONE).to_bytes();
            minus_one[0] += 1;
            minus_one
        };
        let mut high = sig;
        let mut carry = 0u16;
        for i in 0..32 {
            let v = u16::from(sig[32 + i]) + u16::from(l[i]) + carry;
            high[32 + i] = v as u8;
            carry = v >> 8;
        }
        assert_eq!((carry, high[63] & 0xe0), (0, 0));
        assert!(!batch_accepts(&signer.public, b"block 3", &high));
        assert!(!strict_accepts(&signer.public, b"block 3", &high));
        found_among_good_ones(&signer, b"block 3", &high);
    }

    #[test]
    fn keys_verify_strict_refuses_fail_each_of_their_signatures_and_no_others() {
        let good = Signer::new(18, EdwardsPoint::identity());
        let not_a_point = (2u8..)
            .map(|y| {
                let mut b = [0u8; 32];
                b[0] = y;
                b
            })
            .find(|b| CompressedEdwardsY(*b).decompress().is_none())
            .unwrap();
        let mut refused: Vec<[u8; 32]> = EIGHT_TORSION
            .iter()
            .map(|t| t.compress().to_bytes())
            .collect();
        refused.push(not_a_point);
        let m = b"block 9".as_slice();
        let ok = good.sign(9, m);
        assert!(PreparedKey::new(&good.public).is_some());
        for key in &refused {
            assert!(PreparedKey::new(key).is_none());
            // A run under the good key, then one under the refused key
            // (with a signature the good key made), then the good key again.
            let items = [
                (&good.public, m, &ok),
                (&good.public, m, &ok),
                (key, m, &ok),
                (&good.public, m, &ok),
            ];
            assert_eq!(first_bad_signature(&items), Some(2), "{}", hex::encode(key));
            assert_eq!(first_bad_signature(&[items[0], items[3]]), None);
        }
        // A key with a small-order component is a key to verify_strict: it is
        // parsed, and what it refuses is shown by the test above.
        for t in &EIGHT_TORSION[1..] {
            let mixed = Signer::new(18, *t).public;
            assert!(VerifyingKey::from_bytes(&mixed).is_ok_and(|k| !k.is_weak()));
            assert!(
                PreparedKey::new(&mixed).is_none(),
                "goes through verify_strict"
            );
        }
        // The public networks' sequencer keys take the prepared path.
        for network in [Network::Testnet, Network::Devnet] {
            let key = network.sequencer_key().unwrap();
            assert!(PreparedKey::new(&key).is_some(), "{network}");
        }
    }

    #[test]
    fn the_prepared_key_accepts_exactly_what_verify_strict_accepts() {
        let signer = Signer::new(17, EdwardsPoint::identity());
        let key = VerifyingKey::from_bytes(&signer.public).unwrap();
        let prepared = PreparedKey::new(&signer.public).unwrap();
        let messages: Vec<Vec<u8>> = (0..4)
            .map(|i| format!("block {i}").into_bytes())
            .chain([Vec::new(), vec![0xa5; 3000]])
            .collect();
        let r = Scalar::from_bytes_mod_order([0x44; 32]);
        // Encodings of y = p + 0 ..= p + 18 (p = 2^255 - 19), both signs of x.
        let above_p = (0u8..19).flat_map(|y| {
            let mut b = [0xff; 32];
            b[0] = 0xed + y;
            b[31] = 0x7f;
            let mut negative = b;
            negative[31] |= 0x80;
            [b, negative]
        });
        let mut odd_rs: Vec<([u8; 32], Scalar)> = above_p.map(|b| (b, Scalar::ZERO)).collect();
        for t in &EIGHT_TORSION {
            let small = t.compress().to_bytes();
            let mut flipped = small;
            flipped[31] ^= 0x80;
            odd_rs.push((small, Scalar::ZERO));
            odd_rs.push((flipped, Scalar::ZERO));
        }
        for t in &EIGHT_TORSION[1..] {
            odd_rs.push(((ED25519_BASEPOINT_POINT * r + t).compress().to_bytes(), r));
        }
        let mut cases: Vec<(&[u8], [u8; 64])> = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            let good = signer.sign(i as u64, m);
            cases.push((m, good));
            // Every single-bit change of the signature.
            for bit in 0..512 {
                let mut bad = good;
                bad[bit / 8] ^= 1 << (bit % 8);
                cases.push((m, bad));
            }
            // The good signature over another message.
            cases.push((&messages[(i + 1) % messages.len()], good));
            // s = 0, s = l - 1, s = 2^256 - 1.
            for s in [[0u8; 32], (-Scalar::ONE).to_bytes(), [0xff; 32]] {
                let mut bad = good;
                bad[32..].copy_from_slice(&s);
                cases.push((m, bad));
            }
            for (r_bytes, r) in &odd_rs {
                cases.push((m, signer.sign_with(*r_bytes, *r, m)));
            }
        }
        let mut accepted = 0;
        for (m, sig) in &cases {
            let strict = key.verify_strict(m, &Signature::from_bytes(sig)).is_ok();
            let ours = first_bad_signature(&[(&signer.public, m, sig)]).is_none();
            assert_eq!(ours, strict, "{}", hex::encode(sig));
            assert_eq!(prepared.verifies(m, sig), strict, "{}", hex::encode(sig));
            accepted += usize::from(strict);
        }
        // Each good signature, and nothing else.
        assert_eq!(accepted, messages.len(), "of {}", cases.len());
    }
}
