//! The hashing floor of checking Bitcoin blocks on this machine, and how
//! close `parse_block` comes to it, single-threaded, on the blocks of a
//! bitcoind. Run by `scripts/bitcoin_catchup.sh` with `BLOCK_TXS` (the
//! mainnet-shaped blocks of `scripts/bitcoin_big_blocks.py`).
//!
//! ```text
//! block_hash_floor URL COOKIE_FILE FROM TO
//! ```
//!
//! The floor is the single-core throughput of the SHA-256 ledgerd uses
//! (`sha2`, SHA extensions picked at run time), over 1.5 MB inputs, divided
//! by the bytes a block must have hashed, counted in SHA-256 compressions
//! (64 bytes each, padding included): over P2P the v1 message checksum
//! (SHA-256d of the payload), then each transaction's stripped bytes (txid),
//! its whole bytes when it has witnesses (wtxid), the second SHA-256 of each
//! id, the two Merkle trees (txids; wtxids, BIP 141), the header.

use std::time::Instant;

use bitcoin::BlockHash;
use ledgerd::source::bitcoin::block::parse_block_keeping;
use ledgerd::source::bitcoin::rpc::client::{BitcoinRpc, Credentials, RpcOptions};
use ledgerd::source::bitcoin::walk::walk_block;
use sha2::{Digest, Sha256};

/// Bytes SHA-256 compresses for an input of `n` bytes.
fn compressed(n: usize) -> usize {
    (n + 9).div_ceil(64) * 64
}

/// Compressed bytes of SHA-256d over `n` bytes.
fn sha256d(n: usize) -> usize {
    compressed(n) + compressed(32)
}

/// Compressed bytes of a Merkle tree over `leaves` (odd levels duplicate the last).
fn merkle(mut leaves: usize) -> usize {
    let mut total = 0;
    while leaves > 1 {
        leaves = leaves.div_ceil(2);
        total += leaves * sha256d(64);
    }
    total
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let [_, url, cookie, from, to]: [String; 5] =
        std::env::args()
            .collect::<Vec<_>>()
            .try_into()
            .map_err(|_| "usage: block_hash_floor URL COOKIE_FILE FROM TO")?;
    let cookie = Credentials::CookieFile(cookie.into());
    let rpc = BitcoinRpc::new(&url, cookie, RpcOptions::default());
    let (from, to): (u64, u64) = (from.parse()?, to.parse()?);
    let hashes: Vec<BlockHash> = rpc.get_block_hashes(from..to + 1)?;
    let mut raws = Vec::new();
    for chunk in hashes.chunks(10) {
        raws.extend(rpc.get_raw_blocks(chunk)?);
    }

    // sha2's throughput on one core: 1.5 MB inputs, the best of 7 rounds of 20.
    let input = vec![0x5au8; 1_500_000];
    let mut rounds = Vec::new();
    for _ in 0..7 {
        let t = Instant::now();
        let mut acc = 0u8;
        for _ in 0..20 {
            acc ^= Sha256::digest(&input)[0];
        }
        std::hint::black_box(acc);
        rounds.push(20.0 * input.len() as f64 / t.elapsed().as_secs_f64());
    }
    let speed = rounds.iter().cloned().fold(0.0, f64::max);

    let (mut must, mut bytes) = (0usize, 0usize);
    for raw in &raws {
        let walked = walk_block(raw)?;
        must += sha256d(raw.len()) + sha256d(80);
        for t in &walked.txs {
            let whole = t.range.len();
            if t.txid == t.wtxid {
                must += sha256d(whole);
            } else {
                // Stripped: the whole less the marker, flag and witnesses.
                let stripped = stripped_len(&raw[t.range.clone()]);
                must += sha256d(stripped) + sha256d(whole);
            }
        }
        must += 2 * merkle(walked.txs.len());
        bytes += raw.len();
    }
    let blocks = raws.len().max(1) as f64;
    let per_block = must as f64 / blocks;
    let floor = speed / per_block;

    // parse_block as the P2P source calls it (Citrea's transactions kept), one thread.
    let keep = |w: &[u8; 32]| w.starts_with(&[1, 1]) || w.starts_with(&[2, 2]);
    // The best of 5 passes, as for the throughput (the host is shared).
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        for (i, (raw, hash)) in raws.iter().zip(&hashes).enumerate() {
            parse_block_keeping(from + i as u64, hash, raw, &keep)?;
        }
        times.push(t.elapsed().as_secs_f64() / blocks);
    }
    let parse = times.iter().cloned().fold(f64::MAX, f64::min);
    println!(
        "floor: sha2 SHA-256 {:.0} MB/s on one core x {:.2} MB a block must have hashed \
         ({:.2} passes over its {:.2} MB, the P2P checksum included) = {:.0} blocks/s \
         ({:.2} ms a block); half of it {:.0} blocks/s",
        speed / 1e6,
        per_block / 1e6,
        per_block / (bytes as f64 / blocks),
        bytes as f64 / blocks / 1e6,
        floor,
        1e3 / floor,
        floor / 2.0
    );
    println!(
        "parse_block alone, one thread: {:.2} ms a block ({:.0} blocks/s; its hashing without \
         the checksum {:.2} ms)",
        parse * 1e3,
        1.0 / parse,
        (per_block - sha256d((bytes as f64 / blocks) as usize) as f64) / speed * 1e3
    );
    Ok(())
}

/// A segwit transaction's length without its marker, flag and witnesses.
fn stripped_len(tx: &[u8]) -> usize {
    let tx: bitcoin::Transaction = match bitcoin::consensus::deserialize(tx) {
        Ok(tx) => tx,
        Err(_) => return tx.len(),
    };
    tx.base_size()
}
