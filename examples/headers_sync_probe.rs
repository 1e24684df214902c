//! How fast a follower's first start syncs Bitcoin's headers from a local
//! bitcoind, against the link itself. Run by `scripts/bitcoin_headers_sync.sh`,
//! which starts a regtest bitcoind and mines its blocks.
//!
//! ```text
//! headers_sync_probe URL COOKIE_FILE DATA_DIR [RUNS]
//! ```
//!
//! Per run (default 3): first the link alone (the same batches of 2,000
//! `getblockhash` then `getblockheader HASH false`, decoded, nothing
//! checked or stored), then `BitcoinDa::sync_headers` into a new ledger
//! under DATA_DIR (every header checked by Core's rules, chainwork summed,
//! stored); headers/s of each and their ratio.

use std::sync::Arc;
use std::time::Instant;

use ledgerd::headers::{BitcoinChain, HeaderChain};
use ledgerd::ledger::{Ledger, OpenOptions};
use ledgerd::progress::Progress;
use ledgerd::source::bitcoind::da::HEADERS_PER_BATCH;
use ledgerd::source::bitcoind::{
    keys, BitcoinDa, BitcoinDaConfig, BitcoinRpc, Credentials, RpcOptions,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: headers_sync_probe URL COOKIE_FILE DATA_DIR [RUNS]");
        std::process::exit(2);
    }
    let runs: usize = args.get(4).map_or(Ok(3), |r| r.parse())?;
    let rpc = || {
        Arc::new(BitcoinRpc::new(
            &args[1],
            Credentials::CookieFile(args[2].clone().into()),
            RpcOptions::default(),
        ))
    };
    let tip = rpc().get_block_count()?;
    println!("bitcoind at {} holds {tip} blocks", args[1]);
    let (mut links, mut syncs) = (Vec::new(), Vec::new());
    for run in 0..runs {
        // The link alone.
        let r = rpc();
        let started = Instant::now();
        let mut next = 1;
        let mut got = 0usize;
        while next <= tip {
            let to = (next + HEADERS_PER_BATCH - 1).min(tip);
            let hashes = r.get_block_hashes(next..to + 1)?;
            got += r.get_block_headers(&hashes)?.len();
            next = to + 1;
        }
        let link = got as f64 / started.elapsed().as_secs_f64();
        // The header path: checked and stored.
        let dir = std::path::Path::new(&args[3]).join(format!("run{run}"));
        let ledger = Arc::new(Ledger::open(&dir, &OpenOptions::default())?);
        let headers = HeaderChain::open(BitcoinChain::Regtest, ledger.clone(), 0)?;
        let config =
            BitcoinDaConfig::new(keys::REGTEST.sequencer_key()?, keys::REGTEST.prover_key()?);
        let mut da = BitcoinDa::new(rpc(), config, Arc::new(Progress::default()), headers);
        let started = Instant::now();
        let added = da.sync_headers()?;
        let secs = started.elapsed().as_secs_f64();
        let sync = added as f64 / secs;
        assert_eq!(da.headers().tip().height, tip, "synced to the tip");
        println!(
            "run {run}: link {link:.0} headers/s; synced {added} headers in {secs:.2} s: {sync:.0} headers/s \
             ({:.0}% of the link); ledger {} B",
            100.0 * sync / link,
            ledger.disk_size()
        );
        links.push(link);
        syncs.push(sync);
        drop(da);
        drop(ledger);
        std::fs::remove_dir_all(&dir)?;
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (l, s) = (median(&mut links), median(&mut syncs));
    println!(
        "median of {runs}: link {l:.0} headers/s, header sync {s:.0} headers/s ({:.0}% of the link)",
        100.0 * s / l
    );
    Ok(())
}
