//! A follower reading its DA layer from Bitcoin's P2P network
//! (`--upstream U --bitcoin-peer HOST:PORT`), with no bitcoind RPC or with
//! one beside the peers (`--bitcoin-rpc` too), against a real regtest
//! bitcoind listening on 127.0.0.1 (tests/it/common/bitcoind.rs) and peers
//! that lie (tests/it/common/lying_peer.rs):
//!
//! - a devnet on the regtest as the upstream: the peers-only follower, and
//!   the follower with both bitcoind's RPC and its P2P port, end with the
//!   same answers to methods 2-13 as the `--bitcoin-rpc` follower and the
//!   devnet;
//! - four lying peers beside the honest one (a fork with less work,
//!   headers with wrong bits, blocks whose transactions were altered,
//!   silence after the handshake): nothing served changes, each liar is
//!   dropped and counted by reason, but the less-work one, which stays
//!   connected, behind, and is asked for no block;
//! - the same liars beside an honest bitcoind RPC: nothing changes;
//! - both bitcoind's RPC and another bitcoind's P2P port: the RPC one
//!   killed mid-scan, the follower goes on through the peer;
//! - bitcoind killed and restarted mid-scan: `/health` names the peers,
//!   the scan resumes;
//! - ledgerd killed (`kill -9`) and started again on its data dir: it ends
//!   with the same answers;
//! - a peer that strips the witnesses of the block carrying a commitment
//!   and proofs, the only peer until it has sent it (the honest bitcoind
//!   reachable only then), run after run: each time it is dropped and the
//!   refusal counted by Core's reason, the block fetched from bitcoind, and
//!   the answers are the devnet's;
//! - a reorg deeper than the finality depth seen over P2P: one ERROR,
//!   `/health` 503 `reorg`, nothing scanned or rewritten; `ledgerd rollback
//!   --to-l1` and a restart bring it onto the new chain.

use crate::common;

use std::time::{Duration, Instant};

use common::bitcoind::{Bitcoind, BitcoindOptions};
use common::lying_peer::{LateForward, Lie, LyingPeer, Snapshot};
use common::process::LedgerdBuilder;
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
    peers_follower_at(up, peers, dir, 1)
}

/// [`peers_follower`] with `--bitcoin-finality-depth depth`.
fn peers_follower_at(up: &Ledgerd, peers: &[String], dir: &std::path::Path, depth: u64) -> Ledgerd {
    peers_follower_builder(up, peers, dir, depth).start()
}

/// [`peers_follower_at`], not started yet (add flags, then `.start()`).
pub(crate) fn peers_follower_builder(
    up: &Ledgerd,
    peers: &[String],
    dir: &std::path::Path,
    depth: u64,
) -> LedgerdBuilder {
    let mut args: Vec<String> = vec![
        "--upstream".into(),
        up.url.clone(),
        "--bitcoin-finality-depth".into(),
        depth.to_string(),
        "--health-max-lag-s".into(),
        "2".into(),
    ];
    for p in peers {
        args.push("--bitcoin-peer".into());
        args.push(p.clone());
    }
    Ledgerd::builder().data_dir(dir).args(&args).log("info")
}

/// `ledgerd --upstream <up> --bitcoin-rpc <node> --bitcoin-finality-depth 1`.
fn rpc_follower(up: &Ledgerd, node: &Bitcoind, dir: &std::path::Path) -> Ledgerd {
    regtest::follower_of(up, node, dir, 1).start()
}

/// `ledgerd --upstream <up> --bitcoin-rpc <node> --bitcoin-peer P...
/// --bitcoin-finality-depth 1`: bitcoind's RPC beside the peers.
fn both_follower(
    up: &Ledgerd,
    node: &Bitcoind,
    peers: &[String],
    dir: &std::path::Path,
) -> Ledgerd {
    let cookie = node.cookie_path().display().to_string();
    let mut args: Vec<String> = vec![
        "--upstream".into(),
        up.url.clone(),
        "--bitcoin-rpc".into(),
        node.url.clone(),
        "--bitcoin-rpc-cookie".into(),
        cookie,
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

/// Everything methods 2-13 answer about the chain, from slot `first` on
/// (slots by hash as `node` names them).
pub(crate) fn view(n: &Ledgerd, first: u64, node: &Bitcoind) -> Value {
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

pub(crate) fn health(n: &Ledgerd) -> (u16, Value) {
    let resp = ureq::get(&format!("{}/health", n.url)).call();
    let (status, text) = match resp {
        Ok(r) => (r.status(), r.into_string().unwrap()),
        Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap()),
        Err(e) => panic!("/health: {e}"),
    };
    (status, serde_json::from_str(&text).unwrap())
}

pub(crate) fn metrics(n: &Ledgerd) -> String {
    ureq::get(&format!("{}/metrics", n.url))
        .call()
        .unwrap()
        .into_string()
        .unwrap()
}

/// The value of one metrics line (`name{labels}`), 0 when absent.
pub(crate) fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0)
}

/// One lying peer of each kind, each serving `node`'s chain as it stands.
fn every_liar(node: &Bitcoind) -> Vec<LyingPeer> {
    let snapshot = Snapshot::of(node);
    [
        Lie::LessWorkFork { back: 10 },
        Lie::WrongBits,
        Lie::AlteredBlocks,
        Lie::Silent,
    ]
    .into_iter()
    .map(|lie| LyingPeer::start(lie, snapshot.clone()))
    .collect()
}

/// The peers the follower dropped for `reason`, from its `/metrics` text.
fn dropped(metrics_text: &str, reason: &str) -> u64 {
    metric(
        metrics_text,
        &format!("ledgerd_bitcoin_peers_dropped_total{{reason=\"{reason}\"}}"),
    )
}

/// The blocks the follower refused for Core's `reason`, from its `/metrics` text.
fn refused(metrics_text: &str, reason: &str) -> u64 {
    metric(
        metrics_text,
        &format!("ledgerd_bitcoin_blocks_refused_total{{reason=\"{reason}\"}}"),
    )
}

/// The `problem` of each Bitcoin peer `/health` lists that has one.
fn peer_problems(h: &Value) -> Vec<String> {
    h["bitcoinPeers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["problem"].as_str().map(str::to_string))
        .collect()
}

fn wait(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub(crate) fn scanned(n: &Ledgerd) -> Option<u64> {
    n.result("ledger_getLastScannedL1Height", "[]").as_u64()
}

pub(crate) fn caught_up(n: &Ledgerd, tip: u64, head: u64) -> bool {
    scanned(n) == Some(tip)
        && n.result("ledger_getHeadSoftConfirmationHeight", "[]")
            .as_u64()
            == Some(head)
}

pub(crate) fn first_slot(devnet: &Ledgerd) -> u64 {
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
fn lying_peers_beside_an_honest_one_change_nothing_and_the_less_work_one_stays_connected_unasked_for_blocks(
) {
    // Each starts a bitcoind, a devnet and followers: one at a time on a small host.
    let _one = common::one_at_a_time();
    let node = p2p_node();
    let dir = tempfile::tempdir().unwrap();
    let devnet = busy_devnet(&node, &dir.path().join("devnet"));
    let first = first_slot(&devnet);
    let liars = every_liar(&node);
    let mut peers: Vec<String> = liars.iter().map(|l| l.addr.clone()).collect();
    peers.push(node.p2p_addr());
    let follower = peers_follower(&devnet, &peers, &dir.path().join("follower"));
    let tip = node.block_count();
    // The header liar's problem shows from its drop until it reconnects
    // after its back-off (and lies, and is dropped, again): looked for at
    // each look, not once at the end.
    let mut diffbits_shown = false;
    wait(
        Duration::from_secs(120),
        "the follower to catch up, every other liar to be dropped, the less-work one behind",
        || {
            diffbits_shown |= peer_problems(&health(&follower).1)
                .iter()
                .any(|p| p.contains("bad-diffbits"));
            let m = metrics(&follower);
            caught_up(&follower, tip, 66)
                && ["bad_header", "bad_block", "stalled"]
                    .iter()
                    .all(|r| dropped(&m, r) >= 1)
                && refused(&m, "bad-txnmrklroot") >= 1
                && metric(&m, "ledgerd_bitcoin_peers_behind") == 1
                && diffbits_shown
        },
    );
    assert_eq!(view(&follower, first, &node), view(&devnet, first, &node));
    // The less-work peer: connected all along, asked for headers at each
    // look, never for a block; never dropped.
    let less_work = &liars[0];
    assert_eq!(less_work.asked("getdata"), 0);
    assert!(
        less_work.asked("getheaders") >= 2,
        "asked again at each look"
    );
    let (_, h) = health(&follower);
    assert_eq!(h["bitcoinPeersBehind"], 1, "{h}");
    assert_eq!(h["bitcoinPeers"][0]["connected"], true, "{h}");
    assert_eq!(h["bitcoinPeers"][0]["behind"], true, "{h}");
    assert_eq!(h["bitcoinPeers"][4]["behind"], false, "{h}");
    let log = follower.stderr();
    assert!(
        !log.lines()
            .any(|l| l.contains(less_work.addr.as_str()) && l.contains("disconnected")),
        "{log}"
    );
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
    let problems = peer_problems(&health(&follower).1);
    assert!(
        problems.iter().any(|p| p.contains("less work")),
        "{problems:?}"
    );
    assert!(diffbits_shown, "a bad-diffbits problem in /health");
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

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn a_follower_with_bitcoind_rpc_and_its_peer_port_ends_with_the_same_answers_as_the_rpc_follower() {
    // Each starts a bitcoind, a devnet and followers: one at a time on a small host.
    let _one = common::one_at_a_time();
    let node = p2p_node();
    let dir = tempfile::tempdir().unwrap();
    let devnet = busy_devnet(&node, &dir.path().join("devnet"));
    let first = first_slot(&devnet);
    let both = both_follower(&devnet, &node, &[node.p2p_addr()], &dir.path().join("both"));
    let by_rpc = rpc_follower(&devnet, &node, &dir.path().join("rpc"));
    let tip = node.block_count();
    wait(
        Duration::from_secs(90),
        "both followers to catch up",
        || caught_up(&both, tip, 66) && caught_up(&by_rpc, tip, 66),
    );
    let ours = view(&both, first, &node);
    assert_eq!(ours["blocks"][59][2], "Proven", "{}", ours["blocks"][59]);
    assert_eq!(ours["blocks"][60][2], "Trusted");
    assert_eq!(ours, view(&by_rpc, first, &node));
    assert_eq!(ours, view(&devnet, first, &node));
    assert_eq!(
        both.result("svc_syncStatus", "[]")["l1Status"],
        json!({ "Synced": tip })
    );
    let (status, h) = health(&both);
    assert_eq!(status, 200, "{h}");
    assert_eq!(h["bitcoinPeersConnected"], 1, "{h}");
    assert_eq!(h["bitcoinPeersBehind"], 0, "{h}");
    assert_eq!(h["bitcoind"], node.url.as_str(), "{h}");
    assert_eq!(h["bitcoindReachable"], true, "{h}");
    assert_eq!(h["bitcoindBehind"], false, "{h}");
    assert!(h.get("bitcoindProblem").is_none(), "{h}");
    assert_eq!(h["bitcoinHeaders"]["height"], tip, "{h}");
    // bitcoind is asked first while it answers: it sent the blocks.
    let m = metrics(&both);
    assert_eq!(metric(&m, "ledgerd_bitcoin_rpc_reachable"), 1, "{m}");
    assert!(
        metric(&m, "ledgerd_bitcoin_rpc_blocks_fetched_total") >= tip - first,
        "{m}"
    );
    assert!(
        !both.stderr().contains("is not read beside"),
        "the RPC is read: {}",
        both.stderr()
    );
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn with_both_the_scan_goes_on_through_a_peer_when_bitcoind_rpc_is_killed() {
    // Each starts bitcoinds, a devnet and a follower: one at a time on a small host.
    let _one = common::one_at_a_time();
    // The devnet's node, read by the follower over P2P only; a second
    // node, connected to it, read over RPC only.
    let peer_node = p2p_node();
    let mut rpc_node = Bitcoind::start();
    let dir = tempfile::tempdir().unwrap();
    let devnet = busy_devnet(&peer_node, &dir.path().join("devnet"));
    peer_node.mine(300);
    peer_node.flush();
    rpc_node.call("addnode", json!([peer_node.p2p_addr(), "onetry"]));
    let tip = peer_node.block_count();
    wait(
        Duration::from_secs(60),
        "the RPC node to have the peer node's chain",
        || rpc_node.block_count() == tip,
    );
    let follower = both_follower(
        &devnet,
        &rpc_node,
        &[peer_node.p2p_addr()],
        &dir.path().join("follower"),
    );
    wait(Duration::from_secs(30), "a first slot scanned", || {
        scanned(&follower) > Some(0)
    });
    rpc_node.kill9();
    // Blocks bitcoind never had: only the peer can serve them.
    peer_node.mine(5);
    let tip = peer_node.block_count();
    wait(
        Duration::from_secs(90),
        "the scan to reach the peer's tip",
        || scanned(&follower) == Some(tip),
    );
    let (status, h) = health(&follower);
    assert_eq!(status, 200, "a peer still answers: {h}");
    assert_eq!(h["bitcoindReachable"], false, "{h}");
    assert!(
        h["bitcoindProblem"]
            .as_str()
            .unwrap_or_default()
            .contains("cannot be asked"),
        "{h}"
    );
    assert_eq!(h["bitcoinPeersConnected"], 1, "{h}");
    let m = metrics(&follower);
    let by_peer = metric(
        &m,
        &format!(
            "ledgerd_bitcoin_peer_blocks_fetched_total{{peer=\"{}\"}}",
            peer_node.p2p_addr()
        ),
    );
    assert!(
        by_peer >= 5,
        "the peer served the blocks past the kill: {m}"
    );
    assert_eq!(metric(&m, "ledgerd_bitcoin_rpc_reachable"), 0, "{m}");
    assert_eq!(
        follower.result("ledger_getSoftConfirmationStatus", "[60]"),
        "Proven"
    );
    let first = first_slot(&devnet);
    let theirs = view(&devnet, first, &peer_node);
    let last = theirs["scanned"].as_u64().unwrap();
    assert_eq!(view_upto(&follower, first, last, &peer_node), theirs);
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn lying_peers_beside_an_honest_bitcoind_rpc_change_nothing() {
    // Each starts a bitcoind, a devnet and a follower: one at a time on a small host.
    let _one = common::one_at_a_time();
    let node = Bitcoind::start();
    let dir = tempfile::tempdir().unwrap();
    let devnet = busy_devnet(&node, &dir.path().join("devnet"));
    let first = first_slot(&devnet);
    let liars = every_liar(&node);
    let peers: Vec<String> = liars.iter().map(|l| l.addr.clone()).collect();
    let follower = both_follower(&devnet, &node, &peers, &dir.path().join("follower"));
    let tip = node.block_count();
    wait(
        Duration::from_secs(120),
        "the follower to catch up, the liars to be dropped or behind",
        || {
            let m = metrics(&follower);
            caught_up(&follower, tip, 66)
                && dropped(&m, "bad_header") >= 1
                && dropped(&m, "stalled") >= 1
                && metric(&m, "ledgerd_bitcoin_peers_behind") == 1
        },
    );
    assert_eq!(view(&follower, first, &node), view(&devnet, first, &node));
    assert_eq!(
        follower.result("svc_syncStatus", "[]")["l1Status"],
        json!({ "Synced": tip })
    );
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
    assert_eq!(liars[0].asked("getdata"), 0);
    assert!(
        metric(&m, "ledgerd_bitcoin_rpc_blocks_fetched_total") >= tip - first,
        "{m}"
    );
    assert_eq!(
        metric(&m, "ledgerd_bitcoin_header_height"),
        tip,
        "the wrong-bits headers above the tip were not taken: {m}"
    );
    let (status, h) = health(&follower);
    assert_eq!(status, 200, "{h}");
    assert_eq!(h["bitcoindReachable"], true, "{h}");
    assert_eq!(h["bitcoindBehind"], false, "{h}");
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn with_both_a_bitcoind_on_another_network_is_refused_at_start_with_a_sentence() {
    let node = Bitcoind::start();
    let dir = tempfile::tempdir().unwrap();
    common::regtest::assert_refused_as_another_network(
        &node,
        dir.path(),
        &["--bitcoin-peer", "127.0.0.1:9"],
    );
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn with_both_a_bitcoind_on_a_chain_with_less_work_than_the_peers_is_not_followed() {
    // Each starts bitcoinds, a devnet and a follower: one at a time on a small host.
    let _one = common::one_at_a_time();
    // The devnet's node, read over P2P; another node, never connected to
    // it, with a short chain of its own, read over RPC.
    let peer_node = p2p_node();
    let dir = tempfile::tempdir().unwrap();
    let devnet = busy_devnet(&peer_node, &dir.path().join("devnet"));
    let first = first_slot(&devnet);
    let rpc_node = Bitcoind::start();
    rpc_node.mine(5);
    let follower = both_follower(
        &devnet,
        &rpc_node,
        &[peer_node.p2p_addr()],
        &dir.path().join("follower"),
    );
    let tip = peer_node.block_count();
    wait(Duration::from_secs(90), "the follower to catch up", || {
        caught_up(&follower, tip, 66)
    });
    assert_eq!(
        view(&follower, first, &peer_node),
        view(&devnet, first, &peer_node)
    );
    let (status, h) = health(&follower);
    assert_eq!(status, 200, "{h}");
    assert_eq!(h["bitcoindReachable"], true, "{h}");
    assert_eq!(h["bitcoindBehind"], true, "its chain has less work: {h}");
    assert_eq!(h["bitcoinPeersBehind"], 0, "{h}");
    assert_eq!(
        h["bitcoinHeaders"]["hash"],
        peer_node.block_hash(tip),
        "{h}"
    );
    let m = metrics(&follower);
    assert_eq!(
        metric(&m, "ledgerd_bitcoin_rpc_blocks_fetched_total"),
        0,
        "no block of its chain is read: {m}"
    );
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn a_peer_stripping_one_blocks_witnesses_is_dropped_counted_and_changes_nothing_run_after_run() {
    // Starts a bitcoind, a devnet and followers: one at a time on a small host.
    let _one = common::one_at_a_time();
    let node = p2p_node();
    let dir = tempfile::tempdir().unwrap();
    let devnet = busy_devnet(&node, &dir.path().join("devnet"));
    let first = first_slot(&devnet);
    let tip = node.block_count();
    let theirs = view(&devnet, first, &node);
    // The block that carries the commitment (and proofs): its reveals have
    // witnesses, which the liar strips.
    let stripped = theirs["slots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| !s[1].is_null())
        .expect("a slot with a commitment")[0]
        .as_u64()
        .unwrap();
    let snapshot = Snapshot::of(&node);
    let block: bitcoin::Block =
        bitcoin::consensus::deserialize(&snapshot.blocks[stripped as usize]).unwrap();
    let with_witness = block
        .txdata
        .iter()
        .skip(1)
        .filter(|t| t.input.iter().any(|i| !i.witness.is_empty()))
        .count();
    assert!(with_witness >= 2, "block {stripped}: {with_witness}");
    let mut stripped_copy = block.clone();
    common::lying_peer::strip_witnesses(&mut stripped_copy, false);
    assert_eq!(stripped_copy.block_hash(), block.block_hash());
    assert!(
        stripped_copy.check_merkle_root(),
        "the header still matches"
    );
    // Some L2 blocks name it: the anchor check takes it as well as the scan.
    let naming = (1..=66)
        .filter(|h| {
            devnet.result("ledger_getSoftConfirmationByNumber", &format!("[{h}]"))["daSlotHeight"]
                == stripped
        })
        .count();
    let started = Instant::now();
    let mut runs = 0;
    while runs < 20 && started.elapsed() < Duration::from_secs(60) {
        let keep_coinbase = runs % 2 == 1;
        let liar = LyingPeer::start(
            Lie::StrippedWitness {
                height: stripped as usize,
                keep_coinbase,
            },
            snapshot.clone(),
        );
        // The honest bitcoind, reachable only once the liar has sent the
        // stripped block: the follower asks the liar for it each run.
        let honest = LateForward::start(&node.p2p_addr(), liar.has_stripped());
        let follower = peers_follower(
            &devnet,
            &[liar.addr.clone(), honest.addr.clone()],
            &dir.path().join(format!("follower-{runs}")),
        );
        wait(
            Duration::from_secs(60),
            "the follower to catch up through the honest peer",
            || caught_up(&follower, tip, 66),
        );
        assert!(honest.is_open(), "run {runs}: the liar sent its block");
        assert_eq!(
            view(&follower, first, &node),
            theirs,
            "run {runs}: the answers are the devnet's"
        );
        let m = metrics(&follower);
        let (reason, other) = if keep_coinbase {
            ("bad-witness-merkle-match", "bad-witness-nonce-size")
        } else {
            ("bad-witness-nonce-size", "bad-witness-merkle-match")
        };
        assert!(refused(&m, reason) >= 1, "run {runs}: {m}");
        assert_eq!(refused(&m, other), 0, "run {runs}: {m}");
        assert_eq!(
            refused(&m, "bad-txnmrklroot"),
            0,
            "run {runs}: the txids are intact: {m}"
        );
        assert!(dropped(&m, "bad_block") >= 1, "run {runs}: {m}");
        let log = follower.stderr();
        assert!(
            log.lines().any(|l| l.contains(liar.addr.as_str())
                && l.contains(reason)
                && l.contains("disconnected")),
            "run {runs}: {log}"
        );
        let (status, h) = health(&follower);
        assert_eq!(status, 200, "run {runs}: {h}");
        runs += 1;
    }
    assert!(runs >= 3, "only {runs} runs in {:?}", started.elapsed());
    eprintln!(
        "{runs} runs in {:?} (block {stripped}, {with_witness} transactions with witnesses, \
         named by {naming} L2 blocks)",
        started.elapsed()
    );
}

/// What a follower serves of blocks and slots `first..=last`, by number
/// (the same after a reorg, whose chain has other hashes), and how far it
/// scanned.
fn by_number(n: &Ledgerd, first: u64, last: u64) -> Value {
    let mut served = n.served(first, last);
    served["scanned"] = json!(scanned(n));
    served
}

/// A regtest address of another key than the burn address (blocks mined
/// to it after `invalidateblock` are not the invalidated ones again).
fn other_address() -> String {
    use bitcoin::secp256k1::{Secp256k1, SecretKey};
    let secp = Secp256k1::signing_only();
    let key = SecretKey::from_slice(&[0x44; 32]).expect("a valid key");
    let public = bitcoin::CompressedPublicKey(key.public_key(&secp));
    bitcoin::Address::p2wpkh(&public, bitcoin::Network::Regtest).to_string()
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn a_reorg_deeper_than_the_finality_depth_over_p2p_stops_the_scan_loudly_until_rolled_back() {
    // Starts a bitcoind, a devnet and a follower: one at a time on a small host.
    let _one = common::one_at_a_time();
    let node = p2p_node();
    let dir = tempfile::tempdir().unwrap();
    let devnet = busy_devnet(&node, &dir.path().join("devnet"));
    let first = first_slot(&devnet);
    let devnet_tip = node.block_count();
    // Blocks of no one's above the devnet's: the reorg replaces only those
    // (the L2 blocks name none of them, so the way back ends on all 66).
    node.mine(10);
    let tip = node.block_count();
    let data = dir.path().join("follower");
    let follower = peers_follower_at(&devnet, &[node.p2p_addr()], &data, 3);
    wait(
        Duration::from_secs(60),
        "the follower to scan its final blocks",
        || caught_up(&follower, tip - 2, 66),
    );
    let before = by_number(&follower, first, devnet_tip);
    assert_eq!(
        follower.result("ledger_getSoftConfirmationStatus", "[60]"),
        "Proven"
    );
    // A 5-block reorg: blocks tip-4..=tip replaced, the scanned slot tip-2
    // among them, deeper than the finality depth of 3.
    let fork = tip - 4;
    node.invalidate_block(&node.block_hash(fork));
    node.generate_to_address(6, &other_address());
    let new_tip = node.block_count();
    assert!(new_tip > tip);
    wait(
        Duration::from_secs(30),
        "health to report the reorg",
        || {
            let (status, h) = health(&follower);
            status == 503 && h["reason"] == "reorg"
        },
    );
    let (_, h) = health(&follower);
    assert!(
        h["problem"]
            .as_str()
            .unwrap_or_default()
            .contains("deeper than the finality depth"),
        "{h}"
    );
    // It keeps looking at the chain (it follows a block mined now), and
    // scans nothing of it, rewrites nothing, says it once.
    node.generate_to_address(1, &other_address());
    wait(
        Duration::from_secs(30),
        "the header chain to reach the new tip",
        || health(&follower).1["bitcoinHeaders"]["height"] == new_tip + 1,
    );
    let (status, h) = health(&follower);
    assert_eq!((status, &h["reason"]), (503, &json!("reorg")), "{h}");
    assert_eq!(
        by_number(&follower, first, devnet_tip),
        before,
        "nothing rewritten"
    );
    assert_eq!(scanned(&follower), Some(tip - 2), "nothing scanned");
    let l1 = follower.result("svc_syncStatus", "[]")["l1Status"].clone();
    assert!(l1.get("Syncing").is_some(), "{l1}");
    let log = follower.stderr();
    let errors = log
        .lines()
        .filter(|l| l.contains("ERROR") && l.contains("finality depth"))
        .count();
    assert_eq!(errors, 1, "{log}");
    assert!(
        log.contains(&format!("DA slot {} was scanned as block", tip - 2)),
        "{log}"
    );
    let (status, _) = follower.stop();
    assert!(status.success());

    // The way back: to the last block both chains share, then the new chain.
    let shared = fork - 1;
    let out = common::run(
        &[
            "rollback",
            "--data-dir",
            data.to_str().unwrap(),
            "--to-l1",
            &shared.to_string(),
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let follower = peers_follower_at(&devnet, &[node.p2p_addr()], &data, 3);
    let final_slot = new_tip + 1 - 2;
    wait(
        Duration::from_secs(60),
        "the follower on the new chain",
        || caught_up(&follower, final_slot, 66) && health(&follower).0 == 200,
    );
    let mut after = by_number(&follower, first, devnet_tip);
    after["scanned"] = before["scanned"].clone();
    assert_eq!(after, before);
    assert_eq!(
        follower.result("svc_syncStatus", "[]")["l1Status"],
        json!({ "Synced": final_slot })
    );
    let errors = follower
        .stderr()
        .lines()
        .filter(|l| l.contains("ERROR"))
        .count();
    assert_eq!(errors, 0, "{}", follower.stderr());
}
