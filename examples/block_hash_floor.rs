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
//! (64 bytes each, padding included): each transaction's stripped bytes
//! (txid), its whole bytes when it has witnesses (wtxid), the second
//! SHA-256 of each id, the two Merkle trees (txids; wtxids, BIP 141), the
//! header. Not the v1 message checksum: a block is checked against its
//! header, which covers every byte, so ledgerd hashes the checksum only
//! when that check fails (`src/source/bitcoin/p2p/message.rs`); its cost
//! is printed beside.
//!
//! Over BIP324's v2 transport (the default with a Bitcoin Core 27+ peer)
//! every byte is also decrypted and authenticated (ChaCha20-Poly1305, the
//! `bip324` crate's); its single-core throughput on this machine is
//! measured too, and the blocks/s it allows on one core.

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

    let (mut must, mut bytes, mut checksums) = (0usize, 0usize, 0usize);
    for raw in &raws {
        let walked = walk_block(raw)?;
        must += sha256d(80);
        checksums += sha256d(raw.len());
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
    let block_bytes = bytes as f64 / blocks;
    let decrypt = v2_decrypt_speed(block_bytes as usize)?;

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
        "floor: sha2 SHA-256 {:.0} MB/s on one core / {:.2} MB a block must have hashed \
         ({:.2} passes over its {:.2} MB) = {:.0} blocks/s ({:.2} ms a block); half of it {:.0} \
         blocks/s (a v1 checksum would add {:.2} ms a block)",
        speed / 1e6,
        per_block / 1e6,
        per_block / block_bytes,
        block_bytes / 1e6,
        floor,
        1e3 / floor,
        floor / 2.0,
        checksums as f64 / blocks / speed * 1e3
    );
    println!(
        "v2 (BIP324) decryption: bip324's ChaCha20-Poly1305 {:.0} MB/s on one core = {:.0} \
         blocks/s of {:.2} MB ({:.2} ms a block), on the thread that reads the peer",
        decrypt / 1e6,
        decrypt / block_bytes,
        block_bytes / 1e6,
        block_bytes / decrypt * 1e3
    );
    println!(
        "parse_block alone, one thread: {:.2} ms a block ({:.0} blocks/s; its hashing {:.2} ms)",
        parse * 1e3,
        1.0 / parse,
        per_block / speed * 1e3
    );
    Ok(())
}

/// The `bip324` crate's packet decryption on one core, bytes a second:
/// packets of `len` bytes (a block's), the best of 5 rounds of 10, over a
/// session whose handshake ran over a local socket pair.
fn v2_decrypt_speed(len: usize) -> Result<f64, Box<dyn std::error::Error>> {
    use bip324::{PacketType, Role};
    use std::io::BufReader;
    use std::os::unix::net::UnixStream;
    let (ours, theirs) = UnixStream::pair()?;
    let responder = std::thread::spawn(move || -> Result<_, String> {
        let reader = BufReader::new(theirs.try_clone().map_err(|e| e.to_string())?);
        let mut writer = theirs;
        bip324::io::handshake(
            bitcoin::Network::Regtest,
            Role::Responder,
            None,
            None,
            reader,
            &mut writer,
        )
        .map_err(|e| e.to_string())
    });
    let reader = BufReader::new(ours.try_clone()?);
    let mut writer = ours;
    let (mut inbound, _, _) = bip324::io::handshake(
        bitcoin::Network::Regtest,
        Role::Initiator,
        None,
        None,
        reader,
        &mut writer,
    )?;
    let (_, mut outbound, _) = responder.join().map_err(|_| "the responder panicked")??;
    let plain = vec![0x5au8; len];
    let mut best = 0f64;
    for _ in 0..5 {
        let mut packets: Vec<Vec<u8>> = (0..10)
            .map(|_| outbound.encrypt_to_vec(&plain, PacketType::Genuine, None))
            .collect();
        let t = Instant::now();
        for p in &mut packets {
            let length = [p[0], p[1], p[2]];
            inbound.decrypt_packet_len(length);
            inbound
                .decrypt_in_place(&mut p[3..], None)
                .map_err(|e| e.to_string())?;
        }
        best = best.max(10.0 * len as f64 / t.elapsed().as_secs_f64());
    }
    Ok(best)
}

/// A segwit transaction's length without its marker, flag and witnesses.
fn stripped_len(tx: &[u8]) -> usize {
    let tx: bitcoin::Transaction = match bitcoin::consensus::deserialize(tx) {
        Ok(tx) => tx,
        Err(_) => return tx.len(),
    };
    tx.base_size()
}
