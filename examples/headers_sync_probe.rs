//! How fast a follower's first start syncs Bitcoin's headers from a local
//! bitcoind, against the link itself. Run by `scripts/bitcoin_headers_sync.sh`,
//! which starts a regtest bitcoind and mines its blocks.
//!
//! ```text
//! headers_sync_probe URL COOKIE_FILE DATA_DIR [RUNS] [PEER]
//! ```
//!
//! Per run (default 3): first the link alone (the same batches of 2,000
//! `getblockhash` then `getblockheader HASH false`, decoded, nothing
//! checked or stored), then `BitcoinDa::sync_headers` into a new ledger
//! under DATA_DIR (every header checked by Core's rules, chainwork summed,
//! stored); headers/s of each and their ratio. With PEER (bitcoind's P2P
//! address), the same over Bitcoin's P2P protocol: the link alone
//! (`getheaders` rounds of 2,000 on one connection, decoded, nothing
//! checked), then a `--bitcoin-peer` follower's first look at the chain
//! (`PeersDa`: connect, headers from genesis checked and stored).

use std::sync::Arc;
use std::time::Instant;

use ledgerd::headers::{BitcoinNetwork, HeaderTree};
use ledgerd::ledger::{Ledger, OpenOptions};
use ledgerd::progress::Progress;
use ledgerd::source::bitcoin::keys;
use ledgerd::source::bitcoin::p2p::da::PeersDa;
use ledgerd::source::bitcoin::p2p::peer::Peer;
use ledgerd::source::bitcoin::p2p::peer::PeerOptions;
use ledgerd::source::bitcoin::p2p::peers::PeerSet;
use ledgerd::source::bitcoin::rpc::client::BitcoinRpc;
use ledgerd::source::bitcoin::rpc::client::Credentials;
use ledgerd::source::bitcoin::rpc::client::RpcOptions;
use ledgerd::source::bitcoin::rpc::da::BitcoinDa;
use ledgerd::source::bitcoin::rpc::headers::HEADERS_PER_BATCH;
use ledgerd::source::bitcoin::scan::BitcoinDaConfig;
use ledgerd::source::DaSource;

/// One P2P run against `peer`: (link headers/s, header sync headers/s).
fn p2p_run(
    peer: &str,
    tip: u64,
    dir: &std::path::Path,
) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let magic = bitcoin::p2p::Magic::from(BitcoinNetwork::Regtest.network());
    // The link alone: getheaders from genesis, each answer's last hash the next locator.
    let mut conn = Peer::connect(peer, PeerOptions::new(magic))?;
    let started = Instant::now();
    let mut last = bitcoin::blockdata::constants::genesis_block(BitcoinNetwork::Regtest.network())
        .block_hash();
    let mut got = 0u64;
    loop {
        let headers = conn.get_headers(vec![last])?;
        let Some(h) = headers.last() else { break };
        last = h.block_hash();
        got += headers.len() as u64;
    }
    let link = got as f64 / started.elapsed().as_secs_f64();
    assert_eq!(got, tip, "the link alone read every header");
    drop(conn);
    // A follower's first look: connect, every header checked and stored.
    let ledger = Arc::new(Ledger::open(dir, &OpenOptions::default())?);
    let chain = HeaderTree::open(BitcoinNetwork::Regtest, ledger.clone(), 0)?;
    let progress = Arc::new(Progress::default());
    let peers = PeerSet::new(
        &[peer.to_string()],
        PeerOptions::new(magic),
        progress.clone(),
    );
    let config = BitcoinDaConfig {
        finality_depth: 1,
        ..BitcoinDaConfig::new(keys::REGTEST.sequencer_key()?, keys::REGTEST.prover_key()?)
    };
    let mut da = PeersDa::new(peers, chain, config, progress);
    let started = Instant::now();
    // Each look takes up to 200,000 headers; a long chain takes several.
    while da.chain().tip().height < tip {
        da.last_scanned()?;
    }
    let sync = tip as f64 / started.elapsed().as_secs_f64();
    drop(da);
    drop(ledger);
    std::fs::remove_dir_all(dir)?;
    Ok((link, sync))
}

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
    let peer = args.get(5).cloned();
    let (mut links, mut syncs) = (Vec::new(), Vec::new());
    let (mut p2p_links, mut p2p_syncs) = (Vec::new(), Vec::new());
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
        let headers = HeaderTree::open(BitcoinNetwork::Regtest, ledger.clone(), 0)?;
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
        if let Some(peer) = &peer {
            let (link, sync) = p2p_run(peer, tip, &dir)?;
            println!(
                "run {run} (p2p {peer}): link {link:.0} headers/s; header sync {sync:.0} headers/s \
                 ({:.0}% of the link)",
                100.0 * sync / link
            );
            p2p_links.push(link);
            p2p_syncs.push(sync);
        }
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
    if peer.is_some() {
        let (l, s) = (median(&mut p2p_links), median(&mut p2p_syncs));
        println!(
            "median of {runs} (p2p): link {l:.0} headers/s, header sync {s:.0} headers/s ({:.0}% of the link)",
            100.0 * s / l
        );
    }
    Ok(())
}
