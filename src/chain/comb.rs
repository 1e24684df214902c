//! \[x\]B, the base point times a scalar, in variable time from a table of
//! 4,096 precomputed points: 32 mixed additions (7 field multiplications
//! each, [`super::curve`]) instead of the 64 additions and 64 constant-time
//! table scans of ed25519-dalek's `ED25519_BASEPOINT_TABLE`. On the 2-core
//! development machine, with another build on one core (20,000 hashed
//! scalars, three runs, each in turn with the others): 11.3-13.7 µs a
//! multiplication, against 15.0-17.3 µs for the comb of curve25519-dalek
//! `EdwardsPoint`s it replaced (extended + extended, 9 multiplications an
//! addition) and 30.3-33.8 µs for the constant-time table. The result is
//! left in extended coordinates, so that a signer can encode many nonce
//! points with one inversion between them ([`Extended::compress_batch`]).
//!
//! Variable time: how long it takes depends on x. It is used only where x
//! is no secret worth keeping from a timing attacker: the nonces of the
//! devnet's signatures (its key comes from a seed anyone can choose, so
//! its signatures stand for nothing outside the devnet) and the checks of
//! those signatures.
//!
//! x is written in signed base-256 digits, x = Σ d_j·256^j with d_j in
//! \[-127, 128\] (j = 0..32; a canonical scalar is below 2^253, so no
//! digit is left over), and \[x\]B = Σ ±T\[j\]\[|d_j|\] with T\[j\]\[d\] =
//! \[d·256^j\]B, each kept in affine Niels form (y + x, y − x, 2d·x·y).
//! The result is the same point as the table's product, so its encoding is
//! byte for byte the same (the tests compare both).

use std::sync::OnceLock;

use curve25519_dalek::scalar::Scalar;

use super::curve::{Affine, AffineNiels, Extended};

/// Digits per scalar (base 256).
const DIGITS: usize = 32;
/// Multiples per digit: 1..=128.
const MULTIPLES: usize = 128;

/// T\[j\]\[d - 1\] = \[d·256^j\]B at index j·MULTIPLES + d - 1 (4,096
/// entries of 120 bytes, 491 KB, made on first use in about 5 ms; see
/// [`build_table`]).
static TABLE: OnceLock<Vec<AffineNiels>> = OnceLock::new();

fn table() -> &'static [AffineNiels] {
    TABLE.get_or_init(build_table)
}

/// Each row's multiples by mixed additions of its \[256^j\]B, in extended
/// coordinates, then all 4,096 made affine with one inversion; the next
/// row's \[256^(j+1)\]B is twice the row's last, \[128·256^j\]B, which
/// costs two more inversions a row.
fn build_table() -> Vec<AffineNiels> {
    let mut points = Vec::with_capacity(DIGITS * MULTIPLES);
    let mut base = Affine::BASEPOINT;
    for _ in 0..DIGITS {
        let step = AffineNiels::from_affine(&base);
        let mut multiple = Extended::from_affine(&base);
        for d in 1..=MULTIPLES {
            points.push(multiple);
            if d < MULTIPLES {
                multiple = multiple.add_niels(&step, false);
            }
        }
        // multiple is [128·256^j]B.
        let half = AffineNiels::from_affine(&multiple.to_affine());
        base = multiple.add_niels(&half, false).to_affine();
    }
    Extended::batch_to_affine(&points)
        .iter()
        .map(AffineNiels::from_affine)
        .collect()
}

/// \[x\]B in variable time (see the module docs for when that is fit).
pub fn mul_base_vartime(x: &Scalar) -> Extended {
    let table = table();
    let bytes = x.as_bytes();
    let mut acc: Option<Extended> = None;
    let mut carry = 0i32;
    for (j, byte) in bytes.iter().enumerate() {
        let mut digit = i32::from(*byte) + carry;
        carry = 0;
        if digit > MULTIPLES as i32 {
            digit -= 256;
            carry = 1;
        }
        if digit == 0 {
            continue;
        }
        let row = &table[j * MULTIPLES..(j + 1) * MULTIPLES];
        let entry = &row[digit.unsigned_abs() as usize - 1];
        let negate = digit < 0;
        acc = Some(match acc {
            Some(acc) => acc.add_niels(entry, negate),
            // The first term costs one multiplication, not an addition.
            None => Extended::from_niels(entry, negate),
        });
    }
    // A Scalar is kept reduced below l < 2^253: its top byte is at most
    // 0x10, so its digit takes the carry and gives none.
    debug_assert_eq!(carry, 0);
    acc.unwrap_or(Extended::IDENTITY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::constants::ED25519_BASEPOINT_TABLE;
    use curve25519_dalek::edwards::CompressedEdwardsY;
    use sha2::{Digest, Sha512};

    fn tables_encoding(x: &Scalar) -> [u8; 32] {
        (ED25519_BASEPOINT_TABLE * x).compress().to_bytes()
    }

    fn hashed(i: u32) -> Scalar {
        Scalar::from_hash(Sha512::new().chain_update(i.to_le_bytes()))
    }

    fn same_as_the_table(x: Scalar) {
        assert_eq!(
            mul_base_vartime(&x).compress(),
            tables_encoding(&x),
            "[x]B differs for x = {:02x?}",
            x.as_bytes()
        );
    }

    #[test]
    fn small_and_edge_scalars_give_the_tables_point() {
        for n in [
            0u64, 1, 2, 127, 128, 129, 255, 256, 257, 32_768, 65_535, 65_536,
        ] {
            same_as_the_table(Scalar::from(n));
        }
        // l - 1, l - 128, and every byte 0x80 or 0x81 (the digits at the
        // edge of [-127, 128], with carries running through every digit).
        same_as_the_table(-Scalar::ONE);
        same_as_the_table(-Scalar::from(128u64));
        for byte in [0x7f, 0x80, 0x81, 0xff] {
            same_as_the_table(Scalar::from_bytes_mod_order([byte; 32]));
            let mut top_small = [byte; 32];
            top_small[31] = 0x0f;
            same_as_the_table(Scalar::from_bytes_mod_order(top_small));
        }
    }

    #[test]
    fn hashed_scalars_give_the_tables_point() {
        for i in 0u32..300 {
            same_as_the_table(hashed(i));
        }
    }

    #[test]
    fn hashed_scalars_compressed_together_give_the_tables_points() {
        let scalars: Vec<Scalar> = (1000u32..1300).map(hashed).collect();
        let points: Vec<Extended> = scalars.iter().map(mul_base_vartime).collect();
        let encodings = Extended::compress_batch(&points);
        assert_eq!(encodings.len(), scalars.len());
        for ((x, encoding), point) in scalars.iter().zip(&encodings).zip(&points) {
            assert_eq!(*encoding, tables_encoding(x));
            assert_eq!(*encoding, point.compress());
        }
    }

    #[test]
    fn the_sum_of_two_products_is_the_product_of_the_sum() {
        let x = Scalar::from_bytes_mod_order([0x9c; 32]);
        let y = Scalar::from_bytes_mod_order([0x63; 32]);
        let point = |x: &Scalar| {
            CompressedEdwardsY(mul_base_vartime(x).compress())
                .decompress()
                .expect("[x]B encodes a point")
        };
        assert_eq!(
            (point(&x) + point(&y)).compress(),
            point(&(x + y)).compress()
        );
    }
}
