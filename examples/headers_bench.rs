//! Bitcoin header files for `scripts/verify_headers_speed.sh`: regtest
//! headers mined from genesis (regtest's target is half the hash space: two
//! tries a header), valid by every rule `ledgerd verify-headers` checks.
//!
//! ```text
//! headers_bench N FILE     write genesis and N headers after it, raw 80-byte
//! headers_bench store N DIR
//!                          N headers through the header chain into a new
//!                          ledger in DIR (2,000 a batch, each saved): the
//!                          rate, and the bitcoin_headers table's size
//! ```
//!
//! The headers are 60 s apart, so every one takes testnet's walk-back over
//! the pow-limit headers before it (regtest allows min-difficulty blocks),
//! the slowest path of the bits rule.

use std::io::Write;

use bitcoin::block::{Header, Version};
use bitcoin::hashes::Hash as _;
use bitcoin::TxMerkleNode;
use std::sync::Arc;
use std::time::Instant;

use ledgerd::headers::{rules, unix_now, BitcoinNetwork, HeaderTree};
use ledgerd::ledger::{Ledger, OpenOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 4 && args[1] == "store" {
        return store(args[2].parse()?, std::path::Path::new(&args[3]));
    }
    if args.len() != 3 {
        eprintln!("usage: headers_bench N FILE | headers_bench store N DIR");
        std::process::exit(2);
    }
    let n: u64 = args[1].parse()?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(&args[2])?);
    let mut prev = BitcoinNetwork::Regtest.genesis();
    out.write_all(&bitcoin::consensus::serialize(&prev))?;
    for i in 0..n {
        let h = mine(&prev, i);
        out.write_all(&bitcoin::consensus::serialize(&h))?;
        prev = h;
    }
    out.flush()?;
    eprintln!("{} regtest headers (genesis and {n}) in {}", n + 1, args[2]);
    Ok(())
}

/// The regtest header after `prev`, 60 s later.
fn mine(prev: &Header, i: u64) -> Header {
    let params = BitcoinNetwork::Regtest.params();
    let mut h = Header {
        version: Version::from_consensus(0x2000_0000),
        prev_blockhash: prev.block_hash(),
        merkle_root: TxMerkleNode::from_byte_array([(i % 251) as u8; 32]),
        time: prev.time + 60,
        bits: prev.bits,
        nonce: 0,
    };
    while rules::check_pow(h.block_hash(), params.pow_limit_bits, params).is_err() {
        h.nonce += 1;
    }
    h
}

/// N headers through a ledger-backed header chain, 2,000 a batch.
fn store(n: u64, dir: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let mut headers = Vec::with_capacity(n as usize);
    let mut prev = BitcoinNetwork::Regtest.genesis();
    for i in 0..n {
        prev = mine(&prev, i);
        headers.push(prev);
    }
    let ledger = Arc::new(Ledger::open(dir, &OpenOptions::default())?);
    let mut chain = HeaderTree::open(BitcoinNetwork::Regtest, ledger.clone(), 0)?;
    let started = Instant::now();
    for batch in headers.chunks(2000) {
        chain.accept(batch, unix_now())?;
        chain.save()?;
    }
    let secs = started.elapsed().as_secs_f64();
    let stats = ledger.table_stats()?;
    let t = stats
        .tables
        .iter()
        .find(|t| t.name == "bitcoin_headers")
        .ok_or("no bitcoin_headers table")?;
    let pages = t.branch_pages + t.leaf_pages + t.overflow_pages;
    let bytes = pages * u64::from(stats.page_size);
    println!(
        "stored {} headers (tip {}) in {secs:.2} s: {:.0} headers/s checked and stored",
        t.entries,
        chain.tip().height,
        n as f64 / secs
    );
    println!(
        "bitcoin_headers: {} pages of {} B = {bytes} B, {:.1} B a header, {:.2} MB per 100,000 headers; data.mdb {} B",
        pages,
        stats.page_size,
        bytes as f64 / t.entries as f64,
        bytes as f64 / t.entries as f64 * 100_000.0 / 1e6,
        ledger.disk_size()
    );
    Ok(())
}
