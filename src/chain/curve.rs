//! The field and point arithmetic of edwards25519 that the devnet's
//! signer needs and curve25519-dalek 4 keeps private: field elements,
//! points in extended coordinates, and multiples of B in affine Niels
//! form (y + x, y − x, 2d·x·y), which [`super::comb`] adds with mixed
//! additions (7 field multiplications instead of the 9 of adding two
//! extended points), and the encoding of many points with one field
//! inversion between them (Montgomery's trick) instead of one each: for
//! 20,000 points, 0.4-0.5 µs a point against 6.1-6.8 µs one by one on the
//! 2-core development machine (curve25519-dalek's `compress`: 6.8-7.5 µs).
//!
//! What this room is for: computing nonce points \[r\]B and their
//! encodings for the devnet's signatures, and for the checks of those
//! signatures, faster than curve25519-dalek's public API can. The field
//! arithmetic itself is fiat-crypto's (generated from proofs, the same
//! code curve25519-dalek's `fiat` backend runs); this module only puts
//! its operations together into the usual formulas (Hisil, Wong, Carter
//! and Dawson 2008, as curve25519-dalek and ref10 write them). Anything
//! else on the curve (keys, verification) goes through curve25519-dalek
//! and ed25519-dalek, and the tests compare every point made here with
//! curve25519-dalek's encoding of the same point.
//!
//! Fiat-crypto's field operations take the same time for every value;
//! the point formulas here branch on whether to subtract, and nothing in
//! this module was reviewed against side channels. It is fit only where
//! variable time is (see [`super::comb`]).

use fiat_crypto::curve25519_64::{
    fiat_25519_add, fiat_25519_carry, fiat_25519_carry_mul, fiat_25519_carry_square,
    fiat_25519_from_bytes, fiat_25519_loose_field_element, fiat_25519_relax, fiat_25519_sub,
    fiat_25519_tight_field_element, fiat_25519_to_bytes,
};

/// An element of GF(2^255 − 19), carried (fiat-crypto's "tight" bounds):
/// fit for every operation.
#[derive(Clone, Copy)]
pub(super) struct Fe(fiat_25519_tight_field_element);

/// A sum or difference of two [`Fe`] not yet carried (fiat-crypto's
/// "loose" bounds): fit only as a factor of a multiplication, or to be
/// carried into an [`Fe`]. The types keep every operation within the
/// bounds fiat-crypto's proofs assume.
#[derive(Clone, Copy)]
pub(super) struct Loose(fiat_25519_loose_field_element);

impl Fe {
    pub(super) const ZERO: Fe = Fe::from_bytes(&[0; 32]);
    pub(super) const ONE: Fe = Fe::from_u64(1);

    /// The element whose little-endian encoding is `bytes`, the top bit
    /// ignored (a value from 2^255 − 19 to 2^255 − 1 is reduced).
    pub(super) const fn from_bytes(bytes: &[u8; 32]) -> Fe {
        let mut bytes = *bytes;
        bytes[31] &= 0x7f;
        let mut out = fiat_25519_tight_field_element([0; 5]);
        fiat_25519_from_bytes(&mut out, &bytes);
        Fe(out)
    }

    pub(super) const fn from_u64(n: u64) -> Fe {
        let mut bytes = [0u8; 32];
        let le = n.to_le_bytes();
        let mut i = 0;
        while i < 8 {
            bytes[i] = le[i];
            i += 1;
        }
        Fe::from_bytes(&bytes)
    }

    /// The canonical little-endian encoding (the value below 2^255 − 19).
    pub(super) fn to_bytes(self) -> [u8; 32] {
        let mut out = [0u8; 32];
        fiat_25519_to_bytes(&mut out, &self.0);
        out
    }

    /// Whether the canonical value is odd: the "sign" of an x coordinate
    /// in a point's encoding (RFC 8032, 5.1.2).
    pub(super) fn is_negative(self) -> bool {
        self.to_bytes()[0] & 1 == 1
    }

    pub(super) fn relax(&self) -> Loose {
        let mut out = fiat_25519_loose_field_element([0; 5]);
        fiat_25519_relax(&mut out, &self.0);
        Loose(out)
    }

    pub(super) fn add(&self, other: &Fe) -> Loose {
        let mut out = fiat_25519_loose_field_element([0; 5]);
        fiat_25519_add(&mut out, &self.0, &other.0);
        Loose(out)
    }

    pub(super) fn sub(&self, other: &Fe) -> Loose {
        let mut out = fiat_25519_loose_field_element([0; 5]);
        fiat_25519_sub(&mut out, &self.0, &other.0);
        Loose(out)
    }

    pub(super) fn mul(&self, other: &Fe) -> Fe {
        self.relax().mul(&other.relax())
    }

    pub(super) fn square(&self) -> Fe {
        self.relax().square()
    }

    /// self^(2^k), k ≥ 1.
    fn pow2k(&self, k: u32) -> Fe {
        let mut out = self.square();
        for _ in 1..k {
            out = out.square();
        }
        out
    }

    /// 1/self, as self^(p − 2) by ref10's addition chain (254 squarings
    /// and 11 multiplications); 0 for 0.
    pub(super) fn invert(&self) -> Fe {
        let t0 = self.square(); // 2
        let t1 = t0.pow2k(2); // 8
        let t2 = self.mul(&t1); // 9
        let t3 = t0.mul(&t2); // 11
        let t4 = t3.square(); // 22
        let t5 = t2.mul(&t4); // 2^5 - 1
        let t6 = t5.pow2k(5).mul(&t5); // 2^10 - 1
        let t7 = t6.pow2k(10).mul(&t6); // 2^20 - 1
        let t8 = t7.pow2k(20).mul(&t7); // 2^40 - 1
        let t9 = t8.pow2k(10).mul(&t6); // 2^50 - 1
        let t10 = t9.pow2k(50).mul(&t9); // 2^100 - 1
        let t11 = t10.pow2k(100).mul(&t10); // 2^200 - 1
        let t12 = t11.pow2k(50).mul(&t9); // 2^250 - 1
        t12.pow2k(5).mul(&t3) // 2^255 - 2^5 + 11 = p - 2
    }

    /// Replaces each element by its inverse with one inversion and three
    /// multiplications an element (Montgomery's trick). An element that is
    /// 0 turns every one into 0 (none of the Z coordinates this is used on
    /// is ever 0: the addition formulas are complete).
    pub(super) fn batch_invert(elements: &mut [Fe]) {
        // before[i] = elements[0]·…·elements[i - 1].
        let mut before = Vec::with_capacity(elements.len());
        let mut product = Fe::ONE;
        for e in elements.iter() {
            before.push(product);
            product = product.mul(e);
        }
        // Walking back, inverse = 1/(elements[0]·…·elements[i]).
        let mut inverse = product.invert();
        for (e, before) in elements.iter_mut().zip(before).rev() {
            let next = inverse.mul(e);
            *e = inverse.mul(&before);
            inverse = next;
        }
    }
}

impl Loose {
    pub(super) fn carry(&self) -> Fe {
        let mut out = fiat_25519_tight_field_element([0; 5]);
        fiat_25519_carry(&mut out, &self.0);
        Fe(out)
    }

    pub(super) fn mul(&self, other: &Loose) -> Fe {
        let mut out = fiat_25519_tight_field_element([0; 5]);
        fiat_25519_carry_mul(&mut out, &self.0, &other.0);
        Fe(out)
    }

    pub(super) fn square(&self) -> Fe {
        let mut out = fiat_25519_tight_field_element([0; 5]);
        fiat_25519_carry_square(&mut out, &self.0);
        Fe(out)
    }
}

/// 2d, with d = −121665/121666 the curve's constant (−x² + y² = 1 + d·x²·y²).
const EDWARDS_D2: Fe = Fe::from_bytes(&[
    0x59, 0xf1, 0xb2, 0x26, 0x94, 0x9b, 0xd6, 0xeb, 0x56, 0xb1, 0x83, 0x82, 0x9a, 0x14, 0xe0, 0x00,
    0x30, 0xd1, 0xf3, 0xee, 0xf2, 0x80, 0x8e, 0x19, 0xe7, 0xfc, 0xdf, 0x56, 0xdc, 0xd9, 0x06, 0x24,
]);

/// A point (x, y).
#[derive(Clone, Copy)]
pub(super) struct Affine {
    x: Fe,
    y: Fe,
}

impl Affine {
    /// B, RFC 8032's base point: x = 151122213495354007725011514095885315114
    /// 54012693041857206046113283949847762202, y = 4/5 = 463168356949264781
    /// 69428394003475163141307993866256225615783033603165251855960.
    pub(super) const BASEPOINT: Affine = Affine {
        x: Fe::from_bytes(&[
            0x1a, 0xd5, 0x25, 0x8f, 0x60, 0x2d, 0x56, 0xc9, 0xb2, 0xa7, 0x25, 0x95, 0x60, 0xc7,
            0x2c, 0x69, 0x5c, 0xdc, 0xd6, 0xfd, 0x31, 0xe2, 0xa4, 0xc0, 0xfe, 0x53, 0x6e, 0xcd,
            0xd3, 0x36, 0x69, 0x21,
        ]),
        y: Fe::from_bytes(&[
            0x58, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
            0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
            0x66, 0x66, 0x66, 0x66,
        ]),
    };

    /// The point's 32-byte encoding: y, with the sign of x in the top bit.
    pub(super) fn to_bytes(self) -> [u8; 32] {
        let mut bytes = self.y.to_bytes();
        bytes[31] |= u8::from(self.x.is_negative()) << 7;
        bytes
    }
}

/// A point in extended coordinates (X : Y : Z : T): x = X/Z, y = Y/Z,
/// x·y = T/Z, Z ≠ 0.
#[derive(Clone, Copy)]
pub(super) struct Extended {
    x: Fe,
    y: Fe,
    z: Fe,
    t: Fe,
}

impl Extended {
    pub(super) fn from_affine(p: &Affine) -> Extended {
        Extended {
            x: p.x,
            y: p.y,
            z: Fe::ONE,
            t: p.x.mul(&p.y),
        }
    }

    /// (x, y) = (0, 1).
    pub(super) const IDENTITY: Extended = Extended {
        x: Fe::ZERO,
        y: Fe::ONE,
        z: Fe::ONE,
        t: Fe::ZERO,
    };

    /// The point of `n` (`negate`: of −n), with one multiplication:
    /// (4x : 4y : 4 : 4xy).
    pub(super) fn from_niels(n: &AffineNiels, negate: bool) -> Extended {
        const FOUR: Fe = Fe::from_u64(4);
        let x2 = if negate {
            n.y_minus_x.sub(&n.y_plus_x).carry() // −2x
        } else {
            n.y_plus_x.sub(&n.y_minus_x).carry() // 2x
        };
        let y2 = n.y_plus_x.add(&n.y_minus_x).carry(); // 2y
        Extended {
            x: x2.add(&x2).carry(),
            y: y2.add(&y2).carry(),
            z: FOUR,
            t: x2.mul(&y2),
        }
    }

    /// self + n (`negate`: self − n), a mixed addition: the sum in
    /// completed coordinates with 3 multiplications, then back to extended
    /// coordinates with 4.
    pub(super) fn add_niels(&self, n: &AffineNiels, negate: bool) -> Extended {
        // −(x, y) = (−x, y): y + x and y − x swap, 2d·x·y changes sign.
        let (plus, minus) = if negate {
            (&n.y_minus_x, &n.y_plus_x)
        } else {
            (&n.y_plus_x, &n.y_minus_x)
        };
        let pp = self.y.add(&self.x).mul(&plus.relax());
        let mm = self.y.sub(&self.x).mul(&minus.relax());
        let txy2d = self.t.mul(&n.xy2d);
        let z2 = self.z.add(&self.z).carry();
        // Completed: x = X/Z, y = Y/T.
        let (x, y) = (pp.sub(&mm), pp.add(&mm));
        let (z, t) = if negate {
            (z2.sub(&txy2d), z2.add(&txy2d))
        } else {
            (z2.add(&txy2d), z2.sub(&txy2d))
        };
        Extended {
            x: x.mul(&t),
            y: y.mul(&z),
            z: z.mul(&t),
            t: x.mul(&y),
        }
    }

    /// The point in affine coordinates, with one inversion.
    pub(super) fn to_affine(self) -> Affine {
        let z_inverse = self.z.invert();
        Affine {
            x: self.x.mul(&z_inverse),
            y: self.y.mul(&z_inverse),
        }
    }

    /// Each point in affine coordinates, with one inversion for all.
    pub(super) fn batch_to_affine(points: &[Extended]) -> Vec<Affine> {
        let mut z_inverses: Vec<Fe> = points.iter().map(|p| p.z).collect();
        Fe::batch_invert(&mut z_inverses);
        points
            .iter()
            .zip(&z_inverses)
            .map(|(p, z_inverse)| Affine {
                x: p.x.mul(z_inverse),
                y: p.y.mul(z_inverse),
            })
            .collect()
    }

    /// The point's 32-byte encoding, with one inversion.
    pub(super) fn compress(&self) -> [u8; 32] {
        self.to_affine().to_bytes()
    }

    /// Each point's 32-byte encoding, with one inversion for all.
    pub(super) fn compress_batch(points: &[Extended]) -> Vec<[u8; 32]> {
        Extended::batch_to_affine(points)
            .into_iter()
            .map(Affine::to_bytes)
            .collect()
    }
}

/// A point in affine Niels form (y + x, y − x, 2d·x·y), ready to be added
/// to an extended point.
#[derive(Clone, Copy)]
pub(super) struct AffineNiels {
    y_plus_x: Fe,
    y_minus_x: Fe,
    xy2d: Fe,
}

impl AffineNiels {
    pub(super) fn from_affine(p: &Affine) -> AffineNiels {
        AffineNiels {
            y_plus_x: p.y.add(&p.x).carry(),
            y_minus_x: p.y.sub(&p.x).carry(),
            xy2d: p.x.mul(&p.y).mul(&EDWARDS_D2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::constants::{
        ED25519_BASEPOINT_COMPRESSED, ED25519_BASEPOINT_POINT, ED25519_BASEPOINT_TABLE,
    };
    use curve25519_dalek::edwards::EdwardsPoint;
    use curve25519_dalek::scalar::Scalar;
    use curve25519_dalek::traits::Identity;
    use sha2::{Digest, Sha512};

    /// A field element from SHA-512 of `i` (its first 255 bits).
    fn hashed(i: u32) -> Fe {
        let digest = Sha512::digest(i.to_le_bytes());
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(&digest[..32]);
        Fe::from_bytes(&bytes)
    }

    fn same(a: &Fe, b: &Fe) -> bool {
        a.to_bytes() == b.to_bytes()
    }

    #[test]
    fn an_element_times_its_inverse_is_one() {
        for i in 0..200 {
            let a = hashed(i);
            assert!(same(&a.mul(&a.invert()), &Fe::ONE), "element {i}");
        }
        assert!(same(
            &Fe::from_u64(2).invert().mul(&Fe::from_u64(2)),
            &Fe::ONE
        ));
        assert!(same(&Fe::ZERO.invert(), &Fe::ZERO));
    }

    #[test]
    fn a_batch_inversion_gives_each_elements_own_inverse() {
        for n in [0usize, 1, 2, 3, 300] {
            let elements: Vec<Fe> = (0..n as u32).map(hashed).collect();
            let mut inverses = elements.clone();
            Fe::batch_invert(&mut inverses);
            for (e, inverse) in elements.iter().zip(&inverses) {
                assert!(same(&e.invert(), inverse), "{n} elements");
            }
        }
    }

    #[test]
    fn encodings_are_canonical_and_the_sign_is_the_low_bit() {
        // p = 2^255 - 19 and p + 1 are read as 0 and 1 and written canonically.
        let mut p = [0xff; 32];
        p[0] = 0xed;
        p[31] = 0x7f;
        assert_eq!(Fe::from_bytes(&p).to_bytes(), [0; 32]);
        p[0] = 0xee;
        assert_eq!(Fe::from_bytes(&p).to_bytes(), Fe::ONE.to_bytes());
        assert!(Fe::ONE.is_negative());
        assert!(!Fe::ZERO.is_negative());
        // -1 = p - 1 is even.
        assert!(!Fe::ZERO.sub(&Fe::ONE).carry().is_negative());
        let a = hashed(7);
        assert!(same(&a.add(&Fe::ZERO.sub(&a).carry()).carry(), &Fe::ZERO));
        assert!(same(&a.sub(&a).carry(), &Fe::ZERO));
        assert!(same(&a.square(), &a.mul(&a)));
    }

    #[test]
    fn the_constants_are_the_curves() {
        // 2d·121666 = -2·121665.
        assert!(same(
            &EDWARDS_D2.mul(&Fe::from_u64(121_666)),
            &Fe::ZERO.sub(&Fe::from_u64(2 * 121_665)).carry()
        ));
        // B is on the curve: 2·(−x² + y²) = 2 + 2d·x²·y².
        let Affine { x, y } = Affine::BASEPOINT;
        let (xx, yy) = (x.square(), y.square());
        let left = yy.sub(&xx).carry();
        let right = Fe::ONE.add(&EDWARDS_D2.mul(&xx).mul(&yy)).carry();
        assert!(same(&left.add(&left).carry(), &right.add(&Fe::ONE).carry()));
        // ...and encodes as curve25519-dalek's B.
        assert_eq!(
            Affine::BASEPOINT.to_bytes(),
            ED25519_BASEPOINT_COMPRESSED.to_bytes()
        );
    }

    /// \[n\]B by n − 1 mixed additions of B, and \[n\]B by subtracting.
    #[test]
    fn mixed_additions_give_curve25519_daleks_points() {
        let b = AffineNiels::from_affine(&Affine::BASEPOINT);
        let mut sum = Extended::from_affine(&Affine::BASEPOINT);
        assert_eq!(
            Extended::from_niels(&b, false).compress(),
            ED25519_BASEPOINT_COMPRESSED.to_bytes()
        );
        assert_eq!(
            Extended::from_niels(&b, true).compress(),
            (-ED25519_BASEPOINT_POINT).compress().to_bytes()
        );
        assert_eq!(
            Extended::IDENTITY.compress(),
            EdwardsPoint::identity().compress().to_bytes()
        );
        assert_eq!(
            Extended::IDENTITY.add_niels(&b, true).compress(),
            (-ED25519_BASEPOINT_POINT).compress().to_bytes()
        );
        for n in 2u64..40 {
            sum = sum.add_niels(&b, false);
            let expected = (ED25519_BASEPOINT_TABLE * &Scalar::from(n)).compress();
            assert_eq!(sum.compress(), expected.to_bytes(), "[{n}]B");
        }
        // [39]B − 41·B = [−2]B, through the identity.
        for _ in 0..41 {
            sum = sum.add_niels(&b, true);
        }
        let expected = (ED25519_BASEPOINT_TABLE * &-Scalar::from(2u64)).compress();
        assert_eq!(sum.compress(), expected.to_bytes());
    }

    #[test]
    fn a_batch_compression_gives_each_points_own_encoding() {
        let b = AffineNiels::from_affine(&Affine::BASEPOINT);
        let mut points = Vec::new();
        let mut p = Extended::from_affine(&Affine::BASEPOINT);
        for i in 0..50 {
            points.push(p);
            p = p.add_niels(&b, i % 3 == 0);
        }
        for n in [0, 1, 2, 50] {
            let batch = Extended::compress_batch(&points[..n]);
            let one_by_one: Vec<[u8; 32]> = points[..n].iter().map(Extended::compress).collect();
            assert_eq!(batch, one_by_one, "{n} points");
        }
    }
}
