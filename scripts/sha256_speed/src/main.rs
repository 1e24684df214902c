//! MB/s of SHA-256 (and SHA-512 for Ed25519's 96-byte inputs) per crate,
//! for 64-byte inputs (a Merkle node, a state root's input) and 1.5 MB
//! inputs (a large proof's journal, a block with big blobs), one thread.
//! Each case runs ROUNDS times, the cases in turn; the median is printed
//! with the spread. Run by scripts/sha256_speed.sh.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bitcoin_hashes::{sha256 as bh256, sha512 as bh512, Hash as _};
use sha2::Digest as _;

/// A digest, in the first 32 or 64 bytes (no allocation in the loop).
type Out = [u8; 64];
type Hasher = fn(&[u8]) -> Out;

fn out(digest: &[u8]) -> Out {
    let mut o = [0u8; 64];
    o[..digest.len()].copy_from_slice(digest);
    o
}

fn ring256(d: &[u8]) -> Out {
    out(ring::digest::digest(&ring::digest::SHA256, d).as_ref())
}
fn sha2_256(d: &[u8]) -> Out {
    out(&sha2::Sha256::digest(d))
}
fn bitcoin256(d: &[u8]) -> Out {
    out(&bh256::Hash::hash(d).to_byte_array())
}
fn ring512(d: &[u8]) -> Out {
    out(ring::digest::digest(&ring::digest::SHA512, d).as_ref())
}
fn sha2_512(d: &[u8]) -> Out {
    out(&sha2::Sha512::digest(d))
}
fn bitcoin512(d: &[u8]) -> Out {
    bh512::Hash::hash(d).to_byte_array()
}

/// MB/s (10^6 bytes) hashing `input` again and again for about `time`.
fn rate(h: Hasher, input: &[u8], time: Duration) -> f64 {
    let mut n = 0u64;
    let start = Instant::now();
    while start.elapsed() < time {
        for _ in 0..16 {
            black_box(h(black_box(input)));
        }
        n += 16;
    }
    (n as f64 * input.len() as f64) / start.elapsed().as_secs_f64() / 1e6
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(5, |a| a.parse().expect("ROUNDS"));
    let sha2_name = if cfg!(feature = "asm") {
        "sha2 0.10 (asm)"
    } else {
        "sha2 0.10 (no asm)"
    };
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    let shani = std::arch::is_x86_feature_detected!("sha");
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    let shani = false;
    println!("CPU SHA extensions (sha_ni): {shani}; {rounds} rounds, median (min-max) MB/s");

    let cases: [(&str, usize, [(&str, Hasher); 3]); 3] = [
        (
            "SHA-256, 64 B",
            64,
            [
                ("ring 0.17", ring256),
                (sha2_name, sha2_256),
                ("bitcoin_hashes 0.14", bitcoin256),
            ],
        ),
        (
            "SHA-256, 1.5 MB",
            1_500_000,
            [
                ("ring 0.17", ring256),
                (sha2_name, sha2_256),
                ("bitcoin_hashes 0.14", bitcoin256),
            ],
        ),
        (
            "SHA-512, 96 B (Ed25519)",
            96,
            [
                ("ring 0.17", ring512),
                (sha2_name, sha2_512),
                ("bitcoin_hashes 0.14", bitcoin512),
            ],
        ),
    ];
    for (title, len, hashers) in &cases {
        let input: Vec<u8> = (0..*len).map(|i| (i * 131 + 7) as u8).collect();
        let want = hashers[0].1(&input);
        for (name, h) in hashers {
            assert_eq!(h(&input), want, "{name} disagrees");
        }
        let mut rates = vec![Vec::new(); hashers.len()];
        for _ in 0..rounds {
            for (i, (_, h)) in hashers.iter().enumerate() {
                rates[i].push(rate(*h, &input, Duration::from_millis(300)));
            }
        }
        println!("{title}:");
        for ((name, _), mut r) in hashers.iter().zip(rates) {
            r.sort_by(f64::total_cmp);
            println!(
                "  {name:<22} {:>7.0} MB/s ({:.0}-{:.0})",
                r[r.len() / 2],
                r[0],
                r[r.len() - 1]
            );
        }
    }
}
