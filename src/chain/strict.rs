//! Checking many block signatures, each exactly as Citrea checks one
//! (ed25519-dalek's `verify_strict`), at about 1.5 times the speed of
//! calling `verify_strict` on each.
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
//! A sequencer signs every block with one key A. When A is in the
//! prime-order subgroup (every key made the ordinary way, \[a\]B, is), the
//! checks of `verify_strict` reduce to:
//!
//! 1. s is canonical (below l);
//! 2. the canonical encoding of R' = \[s\]B + \[k\](-A) equals R's 32 bytes;
//! 3. R is not the identity's canonical encoding (01 00 … 00).
//!
//! Why: if 2 holds, R's bytes are R''s canonical encoding, so R decompresses
//! to R'; R' lies in the prime-order subgroup (B and A do), where the only
//! point of small order is the identity, hence 3 is `verify_strict`'s
//! small-order check of R. If 2 fails, `verify_strict` fails too (it
//! compares the same encodings). The key's own check (not of small order)
//! is done once, when the key is prepared.
//!
//! \[k\](-A) is computed from a table of precomputed multiples of -A, built
//! once per key (about as long as 20 verifications), the way ed25519-dalek
//! computes \[s\]B from its table of B; R' is the same point either way. A
//! key outside the prime-order subgroup (which only a deliberately made
//! key is) goes through `verify_strict` itself. The tests compare both
//! paths on crafted and mutated signatures.
//!
//! # A key whose secret the process holds
//!
//! The devnet signs its blocks with a key it made, and its sync thread
//! checks them like any other source's. For such a key the devnet hands
//! its secret scalar a to the checks ([`hold_secret`]); the key's bytes
//! are then those of \[a\]B, computed here, so A is in the prime-order
//! subgroup and not the identity. Then R' = \[s\]B - \[k\]A =
//! \[s - k·a\]B, since B has order l: the same point from one
//! fixed-base multiplication instead of two, so check 2 gives the same
//! verdict on every input (a forged or mangled signature is refused
//! exactly as before; nothing is skipped). Every other key, and every
//! other process (`ledgerd import`, `verify`, a follower), checks with the
//! public key only.
//!
//! # The nonces it signed with
//!
//! For a valid signature s - k·a is the signer's nonce r, so R' is the
//! point \[r\]B the signer computed a moment before on the fetch thread.
//! While a secret is held, the signer remembers the encoding of \[r\]B for
//! each nonce it used ([`remember_nonce`], the last [`NONCES_MAX`]), and a
//! check looks up the encoding of \[s - k·a\]B there before computing it
//! ([`super::comb`]). The lookup is a cache of a pure function: an entry
//! holds the encoding of \[r\]B for its r, whoever asks, so check 2 gives
//! the same verdict with or without it (a forged or mangled signature
//! gives an s - k·a no signature used, and that point is computed). What
//! the check still does for each block: parse s, hash R || A || message
//! for k (the message as the checker encodes it from the block), compute
//! s - k·a, and compare the encodings.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};

use curve25519_dalek::constants::ED25519_BASEPOINT_TABLE;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsBasepointTable};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::BasepointTable;
use ed25519_dalek::{Signature, VerifyingKey};

/// The canonical encoding of the identity point (x = 0, y = 1).
const IDENTITY: [u8; 32] = {
    let mut b = [0u8; 32];
    b[0] = 1;
    b
};

/// A key in the prime-order subgroup, prepared for checking many
/// signatures under it.
struct PreparedKey {
    bytes: [u8; 32],
    equation: Equation,
}

/// How a prepared key computes R' = \[s\]B - \[k\]A.
enum Equation {
    /// \[s\]B + \[k\](-A), from a table of multiples of -A.
    Table(Box<EdwardsBasepointTable>),
    /// \[s - k·a\]B, from the key's secret scalar a (the key is \[a\]B).
    Secret(Scalar),
}

impl PreparedKey {
    /// `None` for bytes that are not a point, and for a key of small order
    /// or with a small-order component: those go through `verify_strict`.
    /// A key whose secret is held ([`hold_secret`]) is prepared with it.
    fn new(bytes: &[u8; 32]) -> Option<PreparedKey> {
        if let Some(a) = held_secret(bytes) {
            return Some(PreparedKey {
                bytes: *bytes,
                equation: Equation::Secret(a),
            });
        }
        let a = CompressedEdwardsY(*bytes).decompress()?;
        if a.is_small_order() || !a.is_torsion_free() {
            return None;
        }
        Some(PreparedKey {
            bytes: *bytes,
            equation: Equation::Table(Box::new(EdwardsBasepointTable::create(&-a))),
        })
    }

    /// The key \[a\]B prepared with its secret `a`; `None` for a = 0
    /// (the identity, a small-order key).
    fn from_secret(a: Scalar) -> Option<PreparedKey> {
        if a == Scalar::ZERO {
            return None;
        }
        Some(PreparedKey {
            bytes: (ED25519_BASEPOINT_TABLE * &a).compress().to_bytes(),
            equation: Equation::Secret(a),
        })
    }

    /// Whether `verify_strict` accepts `signature` over `message` under
    /// this key (the three checks of the module docs).
    fn verifies(&self, message: &[u8], signature: &[u8; 64]) -> bool {
        let signature = Signature::from_bytes(signature);
        let r_bytes = signature.r_bytes();
        let Some(s) = Option::<Scalar>::from(Scalar::from_canonical_bytes(*signature.s_bytes()))
        else {
            return false;
        };
        if r_bytes == &IDENTITY {
            return false;
        }
        let k = super::sha512_scalar(&[r_bytes, &self.bytes, message]);
        let r = match &self.equation {
            Equation::Table(minus_a) => ED25519_BASEPOINT_TABLE * &s + &**minus_a * &k,
            Equation::Secret(a) => return &nonce_point(&(s - k * a)) == r_bytes,
        };
        r.compress().as_bytes() == r_bytes
    }
}

/// A key's bytes and the key prepared (`None`: it cannot be).
type Slot = ([u8; 32], Option<Arc<PreparedKey>>);

/// The last key asked for. Shared by the sync thread and its helper
/// thread, and kept between chunks: a sequencer's key is prepared once per
/// process. (Signatures by keys that alternate would prepare each key
/// again at each change; the sync thread and `import` check only blocks
/// that carry the one sequencer key.)
static PREPARED: Mutex<Option<Slot>> = Mutex::new(None);

/// The secret scalars of keys this process signs with ([`hold_secret`]),
/// each with its key's bytes; at most [`HELD_MAX`], the newest last.
static HELD: Mutex<Vec<([u8; 32], Scalar)>> = Mutex::new(Vec::new());

/// How many held secrets are kept, 64 bytes each (a process runs one
/// devnet; the tests run many, on several seeds).
const HELD_MAX: usize = 64;

/// The encodings of \[r\]B for the nonces r signed with lately, while a
/// secret is held (see the module docs), at most [`NONCES_MAX`]; each is
/// taken out when a check uses it.
static NONCES: Mutex<Nonces> = Mutex::new(Nonces {
    points: None,
    order: VecDeque::new(),
});

/// Whether a secret is held: only then are nonces remembered.
static REMEMBER: AtomicBool = AtomicBool::new(false);

/// How many nonces are remembered (64 bytes each, and the map's own): the
/// devnet's fetch thread signs at most its prefetch depth of 300-block
/// chunks ahead of the checks.
pub(crate) const NONCES_MAX: usize = 4096;

struct Nonces {
    /// Nonce r's bytes -> the encoding of \[r\]B.
    points: Option<HashMap<[u8; 32], [u8; 32]>>,
    /// The nonces in `points`, oldest first.
    order: VecDeque<[u8; 32]>,
}

/// Remembers that the encoding of \[r\]B is `point`, for a check of the
/// signature soon (nothing while no secret is held).
pub(crate) fn remember_nonce(r: &Scalar, point: [u8; 32]) {
    if !REMEMBER.load(Relaxed) {
        return;
    }
    let mut nonces = NONCES.lock().unwrap_or_else(PoisonError::into_inner);
    let Nonces { points, order } = &mut *nonces;
    let points = points.get_or_insert_with(HashMap::new);
    if order.len() == NONCES_MAX {
        if let Some(oldest) = order.pop_front() {
            points.remove(&oldest);
        }
    }
    if points.insert(r.to_bytes(), point).is_none() {
        order.push_back(r.to_bytes());
    }
}

/// The encoding of \[r\]B: remembered by the signer, or computed.
fn nonce_point(r: &Scalar) -> [u8; 32] {
    let remembered = {
        let mut nonces = NONCES.lock().unwrap_or_else(PoisonError::into_inner);
        nonces
            .points
            .as_mut()
            .and_then(|points| points.remove(r.as_bytes()))
    };
    // (Its place in `order` stays until it comes first: removing an absent
    // key then is harmless.)
    remembered.unwrap_or_else(|| super::comb::mul_base_vartime(r).compress())
}

/// Lets this process's checks of signatures under the key \[a\]B use
/// `a` (see the module docs): one fixed-base multiplication per signature
/// instead of two, the same verdict. Returns the key's 32 bytes, or `None`
/// (nothing held) for a = 0.
pub(crate) fn hold_secret(a: Scalar) -> Option<[u8; 32]> {
    let key = PreparedKey::from_secret(a)?;
    let bytes = key.bytes;
    {
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        held.retain(|(b, _)| *b != bytes);
        if held.len() == HELD_MAX {
            held.remove(0);
        }
        held.push((bytes, a));
    }
    REMEMBER.store(true, Relaxed);
    // A table prepared before for this key gives way to the secret.
    let mut slot = PREPARED.lock().unwrap_or_else(PoisonError::into_inner);
    if slot.as_ref().is_some_and(|(b, _)| *b == bytes) {
        *slot = Some((bytes, Some(Arc::new(key))));
    }
    Some(bytes)
}

/// The held secret of `key`, if any.
fn held_secret(key: &[u8; 32]) -> Option<Scalar> {
    let held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    held.iter().find(|(b, _)| b == key).map(|(_, a)| *a)
}

/// The prepared `key` (`None`: it cannot be prepared).
fn prepared(key: &[u8; 32]) -> Option<Arc<PreparedKey>> {
    // The slot holds plain data: a panic elsewhere cannot leave it half-made.
    let mut slot = PREPARED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((bytes, p)) = &*slot {
        if bytes == key {
            return p.clone();
        }
    }
    let p = PreparedKey::new(key).map(Arc::new);
    *slot = Some((*key, p.clone()));
    p
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
        let bad = match prepared(key) {
            Some(p) => part.iter().position(|(_, m, s)| {
                crate::os::give_way();
                !p.verifies(m, s)
            }),
            None => {
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
    use crate::chain::{verify_signature, Network};
    use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};
    use curve25519_dalek::edwards::EdwardsPoint;
    use curve25519_dalek::scalar::Scalar;
    use curve25519_dalek::traits::Identity;
    use sha2::{Digest, Sha512};

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
    fn only_keys_in_the_prime_order_subgroup_are_prepared() {
        assert!(PreparedKey::new(&Signer::new(18, EdwardsPoint::identity()).public).is_some());
        for t in &EIGHT_TORSION {
            assert!(PreparedKey::new(&t.compress().to_bytes()).is_none());
        }
        for t in &EIGHT_TORSION[1..] {
            let mixed = Signer::new(18, *t).public;
            assert!(VerifyingKey::from_bytes(&mixed).is_ok_and(|k| !k.is_weak()));
            assert!(PreparedKey::new(&mixed).is_none());
        }
        let not_a_point = (2u8..)
            .map(|y| {
                let mut b = [0u8; 32];
                b[0] = y;
                b
            })
            .find(|b| CompressedEdwardsY(*b).decompress().is_none())
            .unwrap();
        assert!(PreparedKey::new(&not_a_point).is_none());
        // The public networks' sequencer keys take the fast path.
        for network in [Network::Testnet, Network::Devnet] {
            let key = network.sequencer_key().unwrap();
            assert!(PreparedKey::new(&key).is_some(), "{network}");
        }
    }

    #[test]
    fn the_prepared_key_accepts_exactly_what_verify_strict_accepts() {
        let signer = Signer::new(17, EdwardsPoint::identity());
        let table = PreparedKey::new(&signer.public).unwrap();
        assert!(matches!(table.equation, Equation::Table(_)));
        // The same key checked with its secret: [s - k·a]B.
        let secret = PreparedKey::from_secret(signer.a).unwrap();
        assert_eq!(secret.bytes, signer.public);
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
            let strict = strict_accepts(&signer.public, m, sig);
            assert_eq!(table.verifies(m, sig), strict, "{}", hex::encode(sig));
            assert_eq!(secret.verifies(m, sig), strict, "{}", hex::encode(sig));
            accepted += usize::from(strict);
        }
        // Each good signature, and nothing else.
        assert_eq!(accepted, messages.len(), "of {}", cases.len());
    }

    #[test]
    fn a_held_secret_is_used_for_its_key_only_and_finds_the_same_bad_signatures() {
        let signer = Signer::new(19, EdwardsPoint::identity());
        let other = Signer::new(20, EdwardsPoint::identity());
        // Prepared before the secret is held: the table, then the secret.
        assert!(matches!(
            prepared(&signer.public).map(|p| matches!(p.equation, Equation::Table(_))),
            Some(true)
        ));
        assert_eq!(hold_secret(signer.a), Some(signer.public));
        let p = prepared(&signer.public).unwrap();
        assert!(matches!(p.equation, Equation::Secret(a) if a == signer.a));
        assert!(matches!(
            prepared(&other.public).unwrap().equation,
            Equation::Table(_)
        ));
        assert_eq!(hold_secret(Scalar::ZERO), None, "the identity is no key");

        // The crafted signatures of the tests above, under the held key.
        let identity_r = signer.sign_with(IDENTITY, Scalar::ZERO, b"block 1");
        found_among_good_ones(&signer, b"block 1", &identity_r);
        let r = Scalar::from_bytes_mod_order([0x33; 32]);
        for t in &EIGHT_TORSION[1..] {
            let small = signer.sign_with(t.compress().to_bytes(), Scalar::ZERO, b"block 2");
            found_among_good_ones(&signer, b"block 2", &small);
            let mixed = (ED25519_BASEPOINT_POINT * r + t).compress().to_bytes();
            let mixed = signer.sign_with(mixed, r, b"block 3");
            assert!(!strict_accepts(&signer.public, b"block 3", &mixed));
            found_among_good_ones(&signer, b"block 3", &mixed);
        }
        let mut y_above_p = [0xff; 32];
        y_above_p[0] = 0xee;
        y_above_p[31] = 0x7f;
        let above = signer.sign_with(y_above_p, Scalar::ZERO, b"block 4");
        found_among_good_ones(&signer, b"block 4", &above);
        // Another key's good signature under this key.
        let foreign = other.sign(1, b"block 5");
        found_among_good_ones(&signer, b"block 5", &foreign);
    }

    /// The signer remembers \[r\]B for its nonce r; a signature that uses r
    /// with another R (the point plus a torsion point, or another point)
    /// is still refused, and the honest one still passes.
    #[test]
    fn a_remembered_nonce_vouches_for_no_other_r() {
        let key = crate::chain::SequencerKey::from_secret(&[0x77; 32]);
        key.hold_for_checks();
        let signer = Signer {
            a: key.scalar,
            public: key.public_key(),
        };
        let message = b"block 6";
        let honest = key.sign(message);
        let mut honest_r = [0u8; 32];
        honest_r.copy_from_slice(&honest[..32]);
        let mut s = [0u8; 32];
        s.copy_from_slice(&honest[32..]);
        let s = Option::<Scalar>::from(Scalar::from_canonical_bytes(s)).unwrap();
        let r = s - signer.challenge(&honest_r, message) * signer.a;
        let point = ED25519_BASEPOINT_POINT * r;
        assert_eq!(
            point.compress().to_bytes(),
            honest_r,
            "s - k·a is the nonce"
        );
        for other in [point + EIGHT_TORSION[1], point + ED25519_BASEPOINT_POINT] {
            let forged = signer.sign_with(other.compress().to_bytes(), r, message);
            assert!(!strict_accepts(&signer.public, message, &forged));
            remember_nonce(&r, honest_r);
            assert_eq!(
                first_bad_signature(&[(&signer.public, message, &forged)]),
                Some(0)
            );
        }
        remember_nonce(&r, honest_r);
        assert!(strict_accepts(&signer.public, message, &honest));
        assert_eq!(
            first_bad_signature(&[(&signer.public, message, &honest)]),
            None
        );
    }

    #[test]
    fn remembered_nonces_stay_within_their_bound() {
        let key = crate::chain::SequencerKey::from_secret(&[0x78; 32]);
        key.hold_for_checks();
        for i in 0..NONCES_MAX as u64 + 100 {
            // True entries: other tests share the cache.
            let r = Scalar::from(i);
            remember_nonce(&r, (ED25519_BASEPOINT_TABLE * &r).compress().to_bytes());
        }
        let nonces = NONCES.lock().unwrap();
        assert!(nonces.order.len() <= NONCES_MAX);
        assert!(nonces.points.as_ref().unwrap().len() <= NONCES_MAX);
    }
}
