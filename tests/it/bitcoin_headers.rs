//! The header path against a real regtest bitcoind: its headers are read
//! in batches, checked by Bitcoin Core's rules into a ledger-backed header
//! chain, stored, followed through a reorg it makes, and read back after a
//! restart; a bitcoind on another network is refused at start.
//!
//! Needs the bitcoind of `scripts/bitcoind/build.sh` (`cargo test --
//! --ignored`).

use crate::common;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use common::bitcoind::Bitcoind;
use ledgerd::headers::{BitcoinNetwork, HeaderTree};
use ledgerd::ledger::{BitcoinHeaderRead, Ledger, OpenOptions};
use ledgerd::progress::Progress;
use ledgerd::source::bitcoin::keys;
use ledgerd::source::bitcoin::rpc::client::BitcoinRpc;
use ledgerd::source::bitcoin::rpc::client::Credentials;
use ledgerd::source::bitcoin::rpc::client::RpcOptions;
use ledgerd::source::bitcoin::rpc::da::BitcoinDa;
use ledgerd::source::bitcoin::scan::BitcoinDaConfig;
use ledgerd::source::DaSource;

fn da_on(node: &Bitcoind, ledger: Arc<Ledger>, progress: Arc<Progress>) -> BitcoinDa {
    let rpc = Arc::new(BitcoinRpc::new(
        &node.url,
        Credentials::CookieFile(node.cookie_path()),
        RpcOptions::default(),
    ));
    let config = BitcoinDaConfig {
        finality_depth: 6,
        ..BitcoinDaConfig::new(
            keys::REGTEST.sequencer_key().unwrap(),
            keys::REGTEST.prover_key().unwrap(),
        )
    };
    let headers = HeaderTree::open(BitcoinNetwork::Regtest, ledger, 0).unwrap();
    BitcoinDa::new(rpc, config, progress, headers)
}

fn hash_of(da: &BitcoinDa, height: u64) -> String {
    da.headers().hash_at(height).unwrap().unwrap().to_string()
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn bitcoinds_headers_are_checked_stored_and_followed_through_a_reorg() {
    let node = Bitcoind::start();
    node.mine(3100);
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(Ledger::open(dir.path(), &OpenOptions::default()).unwrap());
    let progress = Arc::new(Progress::default());
    let mut da = da_on(&node, ledger.clone(), progress.clone());

    // The scan may go up to the header tip less the finality depth.
    assert_eq!(da.last_scanned().unwrap(), 3100 - 5);
    assert_eq!(da.headers().tip().height, 3100);
    for h in [0, 1, 2016, 3099, 3100] {
        assert_eq!(hash_of(&da, h), node.block_hash(h), "height {h}");
    }
    let p = &progress.bitcoin.headers;
    assert_eq!(p.height.load(Relaxed), 3100);
    assert_eq!(p.verified.load(Relaxed), 3100);
    assert_eq!(p.tip().unwrap().hash, node.block_hash(3100));
    // Regtest's headers are worth 2 each: genesis and 3,100 more.
    assert_eq!(p.tip().unwrap().chainwork, format!("{:x}", 2 * 3101));
    assert_eq!(
        ledger.reader().unwrap().bitcoin_header_tip().unwrap(),
        Some(3100)
    );

    // bitcoind leaves its last 10 blocks for a longer branch: followed.
    node.invalidate_block(&node.block_hash(3091));
    // Paid elsewhere, so the new blocks are not the invalidated ones again.
    node.call("generatetodescriptor", serde_json::json!([15, "raw(51)"]));
    assert_eq!(node.block_count(), 3105);
    assert_eq!(da.last_scanned().unwrap(), 3105 - 5);
    for h in [3090, 3091, 3105] {
        assert_eq!(hash_of(&da, h), node.block_hash(h), "height {h}");
    }
    // The DA source's view of the chain is the header chain's.
    let h3091 = da.block_hash(3091).unwrap().unwrap();
    let mut shown = h3091;
    shown.reverse();
    assert_eq!(hex::encode(shown), node.block_hash(3091));

    // A restart reads the stored chain back and asks only for what is new.
    drop(da);
    node.mine(2);
    let progress = Arc::new(Progress::default());
    let mut da = da_on(&node, ledger.clone(), progress.clone());
    assert_eq!(da.headers().tip().height, 3105);
    assert_eq!(da.last_scanned().unwrap(), 3107 - 5);
    assert_eq!(progress.bitcoin.headers.verified.load(Relaxed), 2);
    assert_eq!(hash_of(&da, 3107), node.block_hash(3107));
    // Blocks are read by the header chain's hashes and checked against them.
    let slots = da.slots(3000, 3010).unwrap();
    assert_eq!(slots.len(), 11);
    let mut h = slots[10].hash.unwrap();
    h.reverse();
    assert_eq!(hex::encode(h), node.block_hash(3010));
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn a_bitcoind_on_another_network_is_refused_at_start_with_a_sentence() {
    let node = Bitcoind::start();
    let dir = tempfile::tempdir().unwrap();
    common::regtest::assert_refused_as_another_network(&node, dir.path(), &[]);
    // Started right, the same node is taken: the DA source confirms it.
    let ledger = Arc::new(Ledger::open(&dir.path().join("ok"), &OpenOptions::default()).unwrap());
    let mut da = da_on(&node, ledger, Arc::new(Progress::default()));
    da.check_chain().unwrap();
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn a_follower_shows_its_header_chain_in_health_and_metrics() {
    use std::time::{Duration, Instant};
    let node = Bitcoind::start();
    node.mine(250);
    let dir = tempfile::tempdir().unwrap();
    // An upstream whose DA view is simulated: the follower's L2 blocks wait
    // for Bitcoin blocks the regtest lacks, while its headers sync.
    let upstream = common::Ledgerd::builder()
        .dev(5, 0)
        .data_dir(&dir.path().join("up"))
        .start();
    let cookie = node.cookie_path().display().to_string();
    let follower = common::Ledgerd::builder()
        .data_dir(&dir.path().join("follower"))
        .args(&[
            "--upstream",
            &upstream.url,
            "--bitcoin-rpc",
            &node.url,
            "--bitcoin-rpc-cookie",
            &cookie,
            "--bitcoin-chain",
            "regtest",
        ])
        .start();
    let health = || -> serde_json::Value {
        let text = match ureq::get(&format!("{}/health", follower.url)).call() {
            Ok(r) => r.into_string().unwrap(),
            Err(ureq::Error::Status(_, r)) => r.into_string().unwrap(),
            Err(e) => panic!("/health: {e}"),
        };
        serde_json::from_str(&text).unwrap()
    };
    let started = Instant::now();
    while health()["bitcoinHeaders"]["height"] != 250 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "headers not synced: {}",
            health()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let h = health()["bitcoinHeaders"].clone();
    assert_eq!(h["chain"], "regtest", "{h}");
    assert_eq!(h["hash"], node.block_hash(250), "{h}");
    assert_eq!(h["chainwork"], format!("{:x}", 2 * 251), "{h}");
    assert_eq!(h["minimumChainworkMet"], true, "{h}");
    assert_eq!(h["verified"], 250, "{h}");
    let metrics = ureq::get(&format!("{}/metrics", follower.url))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    assert!(
        metrics.contains("\nledgerd_bitcoin_header_height 250\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("\nledgerd_bitcoin_headers_verified_total 250\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("\nledgerd_bitcoin_header_min_chainwork_met 1\n"),
        "{metrics}"
    );
}
