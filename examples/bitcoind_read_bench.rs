//! Raw-block read speed from a bitcoind, through `source::bitcoin`'s block
//! reader (batches of `getblockhash` + `getblock <hash> 0`, several in
//! flight, every block decoded and checked). Run by
//! `scripts/bitcoind/read_bench.sh`, which starts a regtest bitcoind.
//!
//! ```text
//! bitcoind_read_bench URL COOKIE_FILE BLOCKS [RUNS]
//! ```
//!
//! Mines up to BLOCKS blocks if the chain is shorter, then reads blocks
//! 1..=BLOCKS RUNS times (default 5) per configuration (batch size x
//! requests in flight) and prints each run's blocks/s and the median.

use std::time::Instant;

use bitcoin::secp256k1::{Secp256k1, SecretKey};
use bitcoin::{Address, CompressedPublicKey, Network};
use ledgerd::source::bitcoin::rpc::client::BitcoinRpc;
use ledgerd::source::bitcoin::rpc::client::Credentials;
use ledgerd::source::bitcoin::rpc::client::RpcOptions;
use ledgerd::source::bitcoin::rpc::reader::BlockReader;
use ledgerd::source::bitcoin::rpc::reader::ReaderOptions;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: bitcoind_read_bench URL COOKIE_FILE BLOCKS [RUNS]");
        std::process::exit(2);
    }
    let rpc = BitcoinRpc::new(
        &args[1],
        Credentials::CookieFile(args[2].clone().into()),
        RpcOptions::default(),
    );
    let blocks: u64 = args[3].parse()?;
    let runs: usize = args.get(4).map(|r| r.parse()).transpose()?.unwrap_or(5);

    // bitcoind writes its cookie before it finishes loading (-28 meanwhile).
    let deadline = Instant::now() + std::time::Duration::from_secs(60);
    let tip = loop {
        match rpc.get_block_count() {
            Ok(tip) => break tip,
            Err(e) if e.is_transient() && Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(100))
            }
            Err(e) => return Err(e.into()),
        }
    };
    if tip < blocks {
        let key = SecretKey::from_slice(&[0x42; 32])?;
        let public = CompressedPublicKey(key.public_key(&Secp256k1::signing_only()));
        let address = Address::p2wpkh(&public, Network::Regtest).to_string();
        let started = Instant::now();
        let mut left = blocks - tip;
        while left > 0 {
            let n = left.min(1000);
            rpc.generate_to_address(n, &address)?;
            left -= n;
        }
        eprintln!(
            "mined {} blocks in {:.1} s",
            blocks - tip,
            started.elapsed().as_secs_f64()
        );
    }

    println!("blocks 1..={blocks}, {runs} runs each; blocks/s per run, then the median");
    for (batch, in_flight) in [
        (1, 1),
        (10, 1),
        (50, 1),
        (50, 2),
        (100, 2),
        (100, 4),
        (200, 4),
    ] {
        let reader = BlockReader::new(
            &rpc,
            ReaderOptions {
                batch,
                in_flight,
                wtxid_prefixes: None,
            },
        );
        let mut rates = Vec::with_capacity(runs);
        for _ in 0..runs {
            let started = Instant::now();
            let read = reader.read_range(1..=blocks)?;
            let seconds = started.elapsed().as_secs_f64();
            assert_eq!(read.len() as u64, blocks);
            rates.push(blocks as f64 / seconds);
        }
        let shown: Vec<String> = rates.iter().map(|r| format!("{r:.0}")).collect();
        rates.sort_by(|a, b| a.total_cmp(b));
        println!(
            "batch {batch:>3} x {in_flight} in flight: median {:>7.0} blocks/s   (runs: {})",
            rates[rates.len() / 2],
            shown.join(", ")
        );
    }
    Ok(())
}
