//! Checking many block signatures, each with ed25519-dalek's
//! `verify_strict`, exactly as Citrea checks one.
//!
//! # Why not batch verification
//!
//! The sync thread and `ledgerd import` verify blocks by the chunk. They
//! used to check a chunk's signatures with ed25519-dalek's `verify_batch`,
//! which accepts more than `verify_strict` does:
//!
//! - `verify_strict` refuses an R that does not decompress, a small-order R
//!   and a small-order key, then recomputes R' = \[s\]B - \[k\]A
//!   (k = SHA-512(R || A || message)) and accepts when the canonical
//!   encoding of R' is the 32 bytes of R: the equation holds exactly
//!   (cofactorless) and R's encoding is canonical.
//! - `verify_batch` checks one random combination of all the equations:
//!   sum z_i (R_i + \[k_i\]A_i - \[s_i\]B) = 0 with 128-bit z_i derived from
//!   the inputs. It does not look at R's order, decompresses R from any
//!   encoding (a y at or above 2^255 - 19, a "negative" x = 0), and a term
//!   that is not zero but a point of order 2, 4 or 8 vanishes when z_i is a
//!   multiple of that order. So it lets through, always or with
//!   probability 1/2 to 1/8: an R of small order, an R with a small-order
//!   component, a non-canonical encoding of a small-order R, a small-order
//!   key, and with a key that has a small-order component, signatures
//!   whose k is not a multiple of that component's order.
//!
//! Both parse s the same way (it must be below the group order l) and
//! hash the same bytes. What a batch cannot see is the small-order part of
//! each R, and finding it costs a scalar multiplication per R, more than a
//! batch saves. So every signature is checked on its own.
//!
//! # The prepared key
//!
//! A run of signatures under one key A (a sequencer signs every block
//! with one) is checked with a *prepared key* when A is in the prime-order
//! subgroup (every key made the ordinary way, \[a\]B, is): a table of
//! multiples of -A (curve25519-dalek's `EdwardsBasepointTable`, built once
//! and kept for the next runs, about as long as 40 checks), and then per signature
//! `verify_strict`'s checks written out for such a key:
//!
//! 1. s is canonical (below l);
//! 2. the canonical encoding of R' = \[s\]B + \[k\](-A)
//!    (k = SHA-512(R || A || message)) equals R's 32 bytes;
//! 3. R is not the identity's canonical encoding (01 00 … 00).
//!
//! Why these are `verify_strict`'s: if 2 holds, R's bytes are R''s
//! canonical encoding, so R decompresses to R'; R' lies in the prime-order
//! subgroup (B and A do), where the only point of small order is the
//! identity, so 3 is `verify_strict`'s small-order check of R. If 2 fails,
//! `verify_strict` fails too (it compares the same encodings). The key's
//! own check (not of small order) is made when it is prepared. This takes
//! about 0.6 times as long as `verify_strict` (two constant-time table
//! multiplications instead of decompressing R and a double-base
//! multiplication). Any other key goes through `verify_strict` itself; the
//! tests compare both on crafted and mutated signatures.

use std::sync::{Arc, Mutex, PoisonError};

use curve25519_dalek::constants::ED25519_BASEPOINT_TABLE;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsBasepointTable};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::BasepointTable;
use ed25519_dalek::{Signature, VerifyingKey};
use sha2::{Digest, Sha512};

/// The canonical encoding of the identity point (x = 0, y = 1).
const IDENTITY: [u8; 32] = {
    let mut b = [0u8; 32];
    b[0] = 1;
    b
};

/// A run this long prepares its key (the table costs about 40 checks);
/// a shorter one uses the key last prepared if it is the same, else
/// `verify_strict`.
const PREPARE_MIN: usize = 64;

/// The key last prepared: public data, shared by the sync thread and its
/// helper thread and kept between chunks, so a sequencer's key is prepared
/// once per process.
static PREPARED: Mutex<Option<Arc<PreparedKey>>> = Mutex::new(None);

/// The prepared `key`, if it is the one kept or `run` is long enough to
/// prepare it (then it is kept); `None`: `verify_strict`.
fn prepared(key: &[u8; 32], run: usize) -> Option<Arc<PreparedKey>> {
    // The slot holds plain data: a panic elsewhere cannot leave it half-made.
    let mut slot = PREPARED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(p) = slot.as_ref().filter(|p| p.bytes == *key) {
        return Some(Arc::clone(p));
    }
    if run < PREPARE_MIN {
        return None;
    }
    let p = Arc::new(PreparedKey::new(key)?);
    *slot = Some(Arc::clone(&p));
    Some(p)
}

/// A key in the prime-order subgroup, prepared for many checks.
struct PreparedKey {
    bytes: [u8; 32],
    /// Multiples of -A.
    minus_a: Box<EdwardsBasepointTable>,
}

impl PreparedKey {
    /// `None` for bytes that are not a point, and for a key of small order
    /// or with a small-order component: those go through `verify_strict`.
    fn new(bytes: &[u8; 32]) -> Option<PreparedKey> {
        let a = CompressedEdwardsY(*bytes).decompress()?;
        if a.is_small_order() || !a.is_torsion_free() {
            return None;
        }
        Some(PreparedKey {
            bytes: *bytes,
            minus_a: Box::new(EdwardsBasepointTable::create(&-a)),
        })
    }

    /// Whether `verify_strict` accepts `signature` over `message` under
    /// this key (the three checks of the module docs).
    fn verifies(&self, message: &[u8], signature: &[u8; 64]) -> bool {
        let signature = Signature::from_bytes(signature);
        let r_bytes = signature.r_bytes();
        let s = Scalar::from_canonical_bytes(*signature.s_bytes());
        let Some(s) = Option::<Scalar>::from(s) else {
            return false;
        };
        if r_bytes == &IDENTITY {
            return false;
        }
        let hash = Sha512::new()
            .chain_update(r_bytes)
            .chain_update(self.bytes)
            .chain_update(message);
        let k = Scalar::from_hash(hash);
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
        let run = items[start..]
            .iter()
            .take_while(|(k, _, _)| k == key)
            .count();
        let part = &items[start..start + run];
        let bad = match prepared(key, run) {
            Some(p) => part.iter().position(|(_, m, s)| {
                crate::os::give_way();
                !p.verifies(m, s)
            }),
            None => {
                // A key that is not a point fails every signature under it.
                let vk = VerifyingKey::from_bytes(key).ok();
                part.iter().position(|(_, m, s)| {
                    crate::os::give_way();
                    vk.is_none_or(|vk| vk.verify_strict(m, &Signature::from_bytes(s)).is_err())
                })
            }
        };
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
    use crate::chain_rules::{verify_signature, Network};
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
            let messages: Vec<Vec<u8>> = (0..len)
                .map(|i| {
                    if i == at {
                        message.to_vec()
                    } else {
                        format!("good {i}").into_bytes()
                    }
                })
                .collect();
            let mut sigs: Vec<[u8; 64]> = messages
                .iter()
                .enumerate()
                .map(|(i, m)| signer.sign(i as u64, m))
                .collect();
            let items = |sigs: &[[u8; 64]]| -> Option<usize> {
                let v: Vec<_> = messages
                    .iter()
                    .zip(sigs)
                    .map(|(m, s)| (&signer.public, m.as_slice(), s))
                    .collect();
                first_bad_signature(&v)
            };
            assert_eq!(items(&sigs), None, "the good signatures verify");
            sigs[at] = *bad;
            assert_eq!(items(&sigs), Some(at), "run of {len}");
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
            assert_eq!(
                first_bad_signature(&[(&weak.public, m.as_slice(), &sig)]),
                Some(0)
            );
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
        assert_eq!(
            first_bad_signature(&[(&signer.public, m.as_slice(), &sig)]),
            Some(0)
        );
        // ...and one that verify_strict accepts is accepted.
        let (m, sig) = (0..256)
            .map(|i| format!("block {i}").into_bytes())
            .map(|m| {
                let sig = signer.sign(3, &m);
                (m, sig)
            })
            .find(|(m, sig)| k_mod_8(m, sig) == 0)
            .unwrap();
        assert!(strict_accepts(&signer.public, &m, &sig));
        assert_eq!(
            first_bad_signature(&[(&signer.public, m.as_slice(), &sig)]),
            None
        );
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
