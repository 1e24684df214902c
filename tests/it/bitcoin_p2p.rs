//! A follower reading its DA layer from Bitcoin's P2P network
//! (`--upstream U --bitcoin-peer HOST:PORT`, no bitcoind RPC), against a real
//! regtest bitcoind listening on 127.0.0.1 (tests/it/common/bitcoind.rs) and
//! peers that lie (tests/it/common/lying_peer.rs):
//!
//! - a devnet on the regtest as the upstream: the peers-only follower ends
//!   with the same answers to methods 2-13 as the `--bitcoin-rpc` follower
//!   and the devnet;
//! - four lying peers beside the honest one (a fork with less work,
//!   headers with wrong bits, blocks whose transactions were altered,
//!   silence after the handshake): nothing served changes, each is dropped
//!   and counted by reason;
//! - bitcoind killed and restarted mid-scan: `/health` names the peers,
//!   the scan resumes;
//! - ledgerd killed (`kill -9`) and started again on its data dir: it ends
//!   with the same answers.

use crate::common;

use std::time::{Duration, Instant};

use common::bitcoind::{Bitcoind, BitcoindOptions};
use common::lying_peer::{Lie, LyingPeer, Snapshot};
use common::regtest::{self, busy_devnet};
use common::Ledgerd;
use serde_json::{json, Value};

/// A regtest bitcoind that listens for peers on 127.0.0.1.
fn p2p_node() -> Bitcoind {
    Bitcoind::start_with(BitcoindOptions {
        p2p: true,
        ..BitcoindOptions::default()
    })
}

/// `ledgerd --upstream <up> --bitcoin-peer P... --bitcoin-finality-depth 1`.
fn peers_follower(up: &Ledgerd, peers: &[String], dir: &std::path::Path) -> Ledgerd {
    let mut args: Vec<String> = vec![
        "--upstream".into(),
        up.url.clone(),
        "--bitcoin-finality-depth".into(),
        "1".into(),
        "--health-max-lag-s".into(),
        "2".into(),
    ];
    for p in peers {
        args.push("--bitcoin-peer".into());
        args.push(p.clone());
    }
    Ledgerd::builder()
        .data_dir(dir)
        .args(&args)
        .log("info")
        .start()
}

/// `ledgerd --upstream <up> --bitcoin-rpc <node> --bitcoin-finality-depth 1`.
fn rpc_follower(up: &Ledgerd, node: &Bitcoind, dir: &std::path::Path) -> Ledgerd {
    regtest::follower_of(up, node, dir, 1).start()
}

/// Everything methods 2-13 answer about the chain, from slot `first` on
/// (slots by hash as `node` names them).
fn view(n: &Ledgerd, first: u64, node: &Bitcoind) -> Value {
    view_upto(n, first, scanned(n).unwrap(), node)
}

/// [`view`] with the slots up to `last` only.
fn view_upto(n: &Ledgerd, first: u64, last: u64, node: &Bitcoind) -> Value {
    let head = n
        .result("ledger_getHeadSoftConfirmationHeight", "[]")
        .as_u64()
        .unwrap();
    let scanned = last;
    let mut blocks = Vec::new();
    for h in 1..=head {
        let by_number = n.result("ledger_getSoftConfirmationByNumber", &format!("[{h}]"));
        let hash = by_number["hash"].as_str().unwrap().to_string();
        blocks.push(json!([
            by_number,
            n.result("ledger_getSoftConfirmationByHash", &format!("[\"{hash}\"]")),
            n.result("ledger_getSoftConfirmationStatus", &format!("[{h}]")),
        ]));
    }
    let ranges = n.result(
        "ledger_getSoftConfirmationRange",
        &format!("[1,{}]", head.min(20)),
    );
    let mut slots = Vec::new();
    for s in first..=scanned {
        // daSlotHash order: the byte-reverse of what bitcoind prints.
        let mut raw = hex::decode(node.block_hash(s)).unwrap();
        raw.reverse();
        slots.push(json!([
            s,
            n.result(
                "ledger_getSequencerCommitmentsOnSlotByNumber",
                &format!("[{s}]")
            ),
            n.result(
                "ledger_getSequencerCommitmentsOnSlotByHash",
                &format!("[\"{}\"]", hex::encode(raw))
            ),
            n.result(
                "ledger_getVerifiedBatchProofsBySlotHeight",
                &format!("[{s}]")
            ),
        ]));
    }
    json!({
        "head": head,
        "scanned": scanned,
        "genesis": n.result("ledger_getL2GenesisStateRoot", "[]"),
        "blocks": blocks,
        "range": ranges,
        "slots": slots,
        "lastProof": n.result("ledger_getLastVerifiedBatchProof", "[]"),
        "headBlock": n.result("ledger_getHeadSoftConfirmation", "[]"),
    })
}

fn health(n: &Ledgerd) -> (u16, Value) {
    let resp = ureq::get(&format!("{}/health", n.url)).call();
    let (status, text) = match resp {
        Ok(r) => (r.status(), r.into_string().unwrap()),
        Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap()),
        Err(e) => panic!("/health: {e}"),
    };
    (status, serde_json::from_str(&text).unwrap())
}

fn metrics(n: &Ledgerd) -> String {
    ureq::get(&format!("{}/metrics", n.url))
        .call()
        .unwrap()
        .into_string()
        .unwrap()
}

/// The value of one metrics line (`name{labels}`), 0 when absent.
fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0)
}

fn wait(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn scanned(n: &Ledgerd) -> Option<u64> {
    n.result("ledger_getLastScannedL1Height", "[]").as_u64()
}

fn caught_up(n: &Ledgerd, tip: u64, head: u64) -> bool {
    scanned(n) == Some(tip)
        && n.result("ledger_getHeadSoftConfirmationHeight", "[]")
            .as_u64()
            == Some(head)
}

fn first_slot(devnet: &Ledgerd) -> u64 {
    devnet.result("ledger_getSoftConfirmationByNumber", "[1]")["daSlotHeight"]
        .as_u64()
        .unwrap()
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn a_follower_with_only_peers_ends_with_the_same_answers_as_the_bitcoind_rpc_follower() {
    // Each starts a bitcoind, a devnet and followers: one at a time on a small host.
    let _one = common::one_at_a_time();
    let node = p2p_node();
    let dir = tempfile::tempdir().unwrap();
    let devnet = busy_devnet(&node, &dir.path().join("devnet"));
    let first = first_slot(&devnet);
    let by_peers = peers_follower(&devnet, &[node.p2p_addr()], &dir.path().join("peers"));
    let by_rpc = rpc_follower(&devnet, &node, &dir.path().join("rpc"));
    let tip = node.block_count();
    wait(
        Duration::from_secs(90),
        "both followers to catch up",
        || caught_up(&by_peers, tip, 66) && caught_up(&by_rpc, tip, 66),
    );
    let theirs = view(&devnet, first, &node);
    let ours = view(&by_peers, first, &node);
    assert_eq!(ours["blocks"][59][2], "Proven", "{}", ours["blocks"][59]);
    assert_eq!(ours["blocks"][60][2], "Trusted");
    // Commitments are found by slot hash too (the comparison is not of nulls).
    let by_hash = ours["slots"].as_array().unwrap().iter();
    assert_eq!(by_hash.filter(|s| !s[2].is_null()).count(), 4);
    assert_eq!(ours, view(&by_rpc, first, &node));
    assert_eq!(ours, theirs);
    assert_eq!(
        by_peers.result("svc_syncStatus", "[]")["l1Status"],
        json!({ "Synced": tip })
    );
    let (status, h) = health(&by_peers);
    assert_eq!(status, 200, "{h}");
    assert_eq!(h["bitcoinPeersConnected"], 1, "{h}");
    assert_eq!(h["bitcoinPeers"][0]["addr"], node.p2p_addr().as_str());
    assert!(h.get("bitcoind").is_none(), "no bitcoind RPC: {h}");
    assert_eq!(h["bitcoinHeaders"]["height"], tip, "{h}");
    assert_eq!(h["bitcoinHeaders"]["chain"], "regtest", "{h}");
    let m = metrics(&by_peers);
    assert_eq!(metric(&m, "ledgerd_bitcoin_peers_connected"), 1, "{m}");
    let fetched = metric(
        &m,
        &format!(
            "ledgerd_bitcoin_peer_blocks_fetched_total{{peer=\"{}\"}}",
            node.p2p_addr()
        ),
    );
    assert!(fetched >= tip - first, "{m}");
    assert_eq!(
        metric(&m, "ledgerd_bitcoin_commitments_found_total"),
        4,
        "{m}"
    );
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn lying_peers_beside_an_honest_one_change_nothing_and_are_dropped_by_reason() {
    // Each starts a bitcoind, a devnet and followers: one at a time on a small host.
    let _one = common::one_at_a_time();
    let node = p2p_node();
    let dir = tempfile::tempdir().unwrap();
    let devnet = busy_devnet(&node, &dir.path().join("devnet"));
    let first = first_slot(&devnet);
    let snapshot = Snapshot::of(&node);
    let liars: Vec<LyingPeer> = [
        Lie::LessWorkFork { back: 10 },
        Lie::WrongBits,
        Lie::AlteredBlocks,
        Lie::Silent,
    ]
    .into_iter()
    .map(|lie| LyingPeer::start(lie, snapshot.clone()))
    .collect();
    let mut peers: Vec<String> = liars.iter().map(|l| l.addr.clone()).collect();
    peers.push(node.p2p_addr());
    let follower = peers_follower(&devnet, &peers, &dir.path().join("follower"));
    let tip = node.block_count();
    let dropped = |m: &str, reason: &str| {
        metric(
            m,
            &format!("ledgerd_bitcoin_peers_dropped_total{{reason=\"{reason}\"}}"),
        )
    };
    wait(
        Duration::from_secs(120),
        "the follower to catch up and every liar to be dropped",
        || {
            let m = metrics(&follower);
            caught_up(&follower, tip, 66)
                && ["less_work", "bad_header", "bad_block", "stalled"]
                    .iter()
                    .all(|r| dropped(&m, r) >= 1)
        },
    );
    assert_eq!(view(&follower, first, &node), view(&devnet, first, &node));
    // The honest peer delivered the blocks; no liar's block was taken.
    let m = metrics(&follower);
    for liar in &liars {
        let fetched = metric(
            &m,
            &format!(
                "ledgerd_bitcoin_peer_blocks_fetched_total{{peer=\"{}\"}}",
                liar.addr
            ),
        );
        assert_eq!(fetched, 0, "{}: {m}", liar.addr);
    }
    let (_, h) = health(&follower);
    let problems: Vec<&str> = h["bitcoinPeers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["problem"].as_str())
        .collect();
    assert!(
        problems.iter().any(|p| p.contains("less work")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("bad-diffbits")),
        "{problems:?}"
    );
    // The peer that altered blocks reconnects after its back-off (its
    // problem is cleared then); its drop is in the log.
    let log = follower.stderr();
    let altered = liars[2].addr.as_str();
    assert!(
        log.lines().any(|l| l.contains(altered)
            && l.contains("do not hash to its header's Merkle root")
            && l.contains("disconnected")),
        "{log}"
    );
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn bitcoind_killed_and_restarted_mid_scan_is_named_by_health_and_the_peer_scan_resumes() {
    // Each starts a bitcoind, a devnet and followers: one at a time on a small host.
    let _one = common::one_at_a_time();
    let mut node = p2p_node();
    let dir = tempfile::tempdir().unwrap();
    let devnet = busy_devnet(&node, &dir.path().join("devnet"));
    // Blocks of no one's beyond the devnet's: a longer scan.
    node.mine(300);
    node.flush();
    let tip = node.block_count();
    let follower = peers_follower(&devnet, &[node.p2p_addr()], &dir.path().join("follower"));
    wait(Duration::from_secs(30), "a first slot scanned", || {
        scanned(&follower) > Some(0)
    });
    node.kill9();
    wait(Duration::from_secs(30), "health to name the peers", || {
        let (status, h) = health(&follower);
        status == 503 && h["reason"] == "bitcoin_peers" && h["bitcoinPeersConnected"] == 0
    });
    let (_, h) = health(&follower);
    assert!(
        h["problem"]
            .as_str()
            .unwrap_or_default()
            .contains("no Bitcoin peer"),
        "{h}"
    );
    let l1 = follower.result("svc_syncStatus", "[]")["l1Status"].clone();
    assert!(
        l1.get("Syncing").is_some(),
        "not synced while no peer answers: {l1}"
    );
    node.restart();
    wait(
        Duration::from_secs(90),
        "the scan to resume to the tip",
        || scanned(&follower) == Some(tip),
    );
    wait(Duration::from_secs(10), "health again", || {
        health(&follower).0 == 200
    });
    assert_eq!(
        follower.result("ledger_getSoftConfirmationStatus", "[60]"),
        "Proven"
    );
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn a_peers_follower_killed_mid_scan_ends_with_the_same_answers_after_a_restart() {
    // Each starts a bitcoind, a devnet and followers: one at a time on a small host.
    let _one = common::one_at_a_time();
    let node = p2p_node();
    let dir = tempfile::tempdir().unwrap();
    let devnet = busy_devnet(&node, &dir.path().join("devnet"));
    node.mine(300);
    node.flush();
    let first = first_slot(&devnet);
    let tip = node.block_count();
    let data = dir.path().join("follower");
    let follower = peers_follower(&devnet, &[node.p2p_addr()], &data);
    wait(Duration::from_secs(30), "a first slot scanned", || {
        scanned(&follower) > Some(0)
    });
    follower.kill();
    let follower = peers_follower(&devnet, &[node.p2p_addr()], &data);
    wait(Duration::from_secs(90), "the follower to catch up", || {
        caught_up(&follower, tip, 66)
    });
    // The devnet scans its own blocks only, not the 300 mined after them.
    let theirs = view(&devnet, first, &node);
    let last = theirs["scanned"].as_u64().unwrap();
    assert_eq!(view_upto(&follower, first, last, &node), theirs);
    assert_eq!(
        follower.result("ledger_getSoftConfirmationStatus", "[60]"),
        "Proven"
    );
}
