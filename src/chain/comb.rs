//! \[x\]B, the base point times a scalar, in variable time from a table of
//! 23,552 precomputed points: 23 mixed additions (7 field multiplications
//! each, [`super::curve`]) instead of the 64 additions and 64 constant-time
//! table scans of ed25519-dalek's `ED25519_BASEPOINT_TABLE`.
//!
//! Variable time: how long it takes depends on x. It is used only where x
//! is no secret worth keeping from a timing attacker: the nonces of the
//! devnet's signatures (its key comes from a seed anyone can choose, so
//! its signatures stand for nothing outside the devnet) and the checks of
//! those signatures.
//!
//! x is written in signed base-2^11 digits, x = Σ d_j·2^(11j) with d_j in
//! \[-1023, 1024\] (j = 0..23; a canonical scalar is below 2^253, so 23
//! digits hold it and none is left over), and \[x\]B =
//! Σ ±T\[j\]\[|d_j|\] with T\[j\]\[d\] = \[d·2^(11j)\]B, each kept in
//! affine Niels form (y + x, y − x, 2d·x·y). The digits are read first and
//! the entries they pick are prefetched, so the table's 2.8 MB, more than
//! a core's L2 cache, is read at the cost of about one miss, not 23 in a
//! row. The result is the same point as the constant-time table's product,
//! so its encoding is byte for byte the same (the tests compare both).
//!
//! The size of a digit trades the table's memory against additions: base
//! 2^8 (the table before, 4,096 points, 491 KB) took 32 additions, base
//! 2^11 takes 23. On the 2-core development machine, signing took
//! 7.0-13.0 µs a block against 8.7-16.7 µs with base 2^8, five runs in turn
//! (`cargo run --release --example mine_floor 10000 3`); base 2^12 (5.5 MB)
//! was no faster. The table is made on first use, only in a process that
//! signs (the devnet): a follower never holds it.

use std::sync::OnceLock;

use curve25519_dalek::scalar::Scalar;

use super::curve::{Affine, AffineNiels, Extended};

/// Bits per digit.
const BITS: usize = 11;
/// Full digits of a scalar below 2^253.
const FULL_DIGITS: usize = 253usize.div_ceil(BITS);
/// Multiples per digit: 1..=2^(BITS-1).
const MULTIPLES: usize = 1 << (BITS - 1);
/// The table's entries: every multiple of each digit.
const ENTRIES: usize = FULL_DIGITS * MULTIPLES;

/// T\[j\]\[d - 1\] = \[d·2^(11j)\]B at index j·MULTIPLES + d - 1
/// (23,552 entries of 120 bytes, 2.8 MB, made on first use in 16-30 ms
/// on the development machine; see [`build_table`]).
static TABLE: OnceLock<Vec<AffineNiels>> = OnceLock::new();

fn table() -> &'static [AffineNiels] {
    TABLE.get_or_init(build_table)
}

/// Each row's multiples by mixed additions of its \[2^(11j)\]B, in
/// extended coordinates, then all made affine with one inversion; the next
/// row's \[2^(11(j+1))\]B is twice the row's last, \[1024·2^(11j)\]B,
/// which costs two more inversions a row.
fn build_table() -> Vec<AffineNiels> {
    let mut points = Vec::with_capacity(ENTRIES);
    let mut base = Affine::BASEPOINT;
    for _ in 0..FULL_DIGITS {
        let step = AffineNiels::from_affine(&base);
        let mut multiple = Extended::from_affine(&base);
        for d in 1..=MULTIPLES {
            points.push(multiple);
            if d < MULTIPLES {
                multiple = multiple.add_niels(&step, false);
            }
        }
        // multiple is [1024·2^(11j)]B.
        let half = AffineNiels::from_affine(&multiple.to_affine());
        base = multiple.add_niels(&half, false).to_affine();
    }
    Extended::batch_to_affine(&points)
        .iter()
        .map(AffineNiels::from_affine)
        .collect()
}

/// The signed digits of `x` as table entries: (index, negate) for each
/// digit that is not 0, in order, and how many there are.
fn digits(x: &Scalar) -> ([(usize, bool); FULL_DIGITS], usize) {
    let mut limbs = [0u64; 4];
    for (limb, bytes) in limbs.iter_mut().zip(x.as_bytes().chunks_exact(8)) {
        let mut le = [0u8; 8];
        le.copy_from_slice(bytes);
        *limb = u64::from_le_bytes(le);
    }
    let bits_at = |at: usize| -> i32 {
        let (i, shift) = (at / 64, at % 64);
        let mut v = limbs[i] >> shift;
        if shift + BITS > 64 && i + 1 < limbs.len() {
            v |= limbs[i + 1] << (64 - shift);
        }
        (v & ((1 << BITS) - 1)) as i32
    };
    let mut entries = [(0, false); FULL_DIGITS];
    let mut n = 0;
    let mut carry = 0;
    for j in 0..FULL_DIGITS {
        let mut digit = bits_at(j * BITS) + carry;
        carry = 0;
        if digit > MULTIPLES as i32 {
            digit -= 1 << BITS;
            carry = 1;
        }
        if digit != 0 {
            entries[n] = (j * MULTIPLES + digit.unsigned_abs() as usize - 1, digit < 0);
            n += 1;
        }
    }
    // A Scalar is kept reduced below l = 2^252 + (a 125-bit number): from
    // 2^252 up, bits 231 to 251 are 0, so the top digit is at most 1024
    // and gives no carry; nor is any bit from 253 up set.
    debug_assert_eq!(carry, 0);
    debug_assert!(x.as_bytes()[31] < 0x20);
    (entries, n)
}

/// Asks for the cache lines of `entry` ahead of its use (a hint: no effect
/// on the result).
#[inline(always)]
fn prefetch(entry: &AffineNiels) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let at = (entry as *const AffineNiels).cast::<i8>();
        // SAFETY: a prefetch is a hint that never faults, and both
        // addresses lie inside the entry (120 bytes), which lives as long
        // as the table.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(at);
            _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(64));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = entry;
}

/// \[x\]B in variable time (see the module docs for when that is fit).
pub fn mul_base_vartime(x: &Scalar) -> Extended {
    let table = table();
    let (entries, n) = digits(x);
    let entries = &entries[..n];
    for &(index, _) in entries {
        prefetch(&table[index]);
    }
    let mut acc: Option<Extended> = None;
    for &(index, negate) in entries {
        let entry = &table[index];
        acc = Some(match acc {
            Some(acc) => acc.add_niels(entry, negate),
            // The first term costs one multiplication, not an addition.
            None => Extended::from_niels(entry, negate),
        });
    }
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

    /// The scalar whose every 11-bit window below bit 242 is `window`
    /// (reduced mod l).
    fn every_window(window: u64) -> Scalar {
        let mut bytes = [0u8; 32];
        for j in 0..22 {
            for bit in 0..BITS {
                if window >> bit & 1 == 1 {
                    let at = j * BITS + bit;
                    bytes[at / 8] |= 1 << (at % 8);
                }
            }
        }
        Scalar::from_bytes_mod_order(bytes)
    }

    #[test]
    fn digits_at_the_edges_of_a_window_give_the_tables_point() {
        // 1024 is the largest digit kept as it is; 1025 and 2047 turn
        // negative and carry into the next window, through every window.
        for window in [1, 1023, 1024, 1025, 1026, 2046, 2047] {
            same_as_the_table(every_window(window));
        }
        // The largest scalar, and 2^252 (the top window's largest digit).
        same_as_the_table(-Scalar::ONE);
        let mut top = [0u8; 32];
        top[31] = 0x10;
        same_as_the_table(Scalar::from_bytes_mod_order(top));
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
