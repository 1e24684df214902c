//! Bitcoin header files for `scripts/verify_headers_speed.sh`: regtest
//! headers mined from genesis (regtest's target is half the hash space: two
//! tries a header), valid by every rule `ledgerd verify-headers` checks.
//!
//! ```text
//! headers_bench N FILE     write genesis and N headers after it, raw 80-byte
//! ```
//!
//! The headers are 60 s apart, so every one takes testnet's walk-back over
//! the pow-limit headers before it (regtest allows min-difficulty blocks),
//! the slowest path of the bits rule.

use std::io::Write;

use bitcoin::block::{Header, Version};
use bitcoin::hashes::Hash as _;
use bitcoin::TxMerkleNode;
use ledgerd::headers::{rules, BitcoinChain};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: headers_bench N FILE");
        std::process::exit(2);
    }
    let n: u64 = args[1].parse()?;
    let params = BitcoinChain::Regtest.params();
    let mut out = std::io::BufWriter::new(std::fs::File::create(&args[2])?);
    let mut prev = BitcoinChain::Regtest.genesis();
    out.write_all(&bitcoin::consensus::serialize(&prev))?;
    for i in 0..n {
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
        out.write_all(&bitcoin::consensus::serialize(&h))?;
        prev = h;
    }
    out.flush()?;
    eprintln!("{} regtest headers (genesis and {n}) in {}", n + 1, args[2]);
    Ok(())
}
