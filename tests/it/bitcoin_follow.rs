//! A follower reading its DA layer from a real regtest bitcoind
//! (`--upstream U --bitcoin-rpc B`), tests/it/common/bitcoind.rs and regtest.rs:
//!
//! - the Bitcoin DA source on its own: reveals published here (the regtest
//!   sequencer's commitment taken; another key's, a wrong prefix, a proof
//!   that is no receipt, skipped and counted);
//! - end to end: a devnet on the regtest (`--dev --dev-bitcoin-rpc`) as the
//!   upstream, the follower ends with the same answers, statuses read from
//!   Bitcoin; a commitment signed by the right key over a root that is not
//!   the chain's never raises a status;
//! - bitcoind killed and restarted mid-scan: `/health` names it, the scan
//!   resumes;
//! - a reorg deeper than the finality depth (`invalidateblock`): one ERROR,
//!   `/health` 503 with the reason, nothing rewritten.

use crate::common;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use common::bitcoind::Bitcoind;
use common::{regtest, wait_until, Ledgerd};
use ledgerd::progress::Progress;
use ledgerd::source::bitcoin::body::SequencerCommitment;
use ledgerd::source::bitcoin::inscription::{wtxid_raw, Kind};
use ledgerd::source::bitcoin::keys;
use ledgerd::source::bitcoin::rpc::client::BitcoinRpc;
use ledgerd::source::bitcoin::rpc::client::Credentials;
use ledgerd::source::bitcoin::rpc::client::RpcOptions;
use ledgerd::source::bitcoin::rpc::da::BitcoinDa;
use ledgerd::source::bitcoin::scan::BitcoinDaConfig;
use ledgerd::source::bitcoin::signer::DaSecretKey;
use ledgerd::source::devnet::inscribe::{
    inscribe, inscribe_proof, inscribe_where, InscribeOptions,
};
use ledgerd::source::DaSource;
use serde_json::{json, Value};

fn rpc_of(node: &Bitcoind) -> Arc<BitcoinRpc> {
    Arc::new(BitcoinRpc::new(
        &node.url,
        Credentials::CookieFile(node.cookie_path()),
        RpcOptions::default(),
    ))
}

fn regtest_da(node: &Bitcoind, progress: Arc<Progress>, depth: u64) -> BitcoinDa {
    let config = BitcoinDaConfig {
        finality_depth: depth,
        ..BitcoinDaConfig::new(
            keys::REGTEST.sequencer_key().unwrap(),
            keys::REGTEST.prover_key().unwrap(),
        )
    };
    let headers =
        ledgerd::headers::HeaderTree::in_memory(ledgerd::headers::BitcoinNetwork::Regtest);
    BitcoinDa::new(rpc_of(node), config, progress, headers)
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn the_bitcoin_da_source_takes_the_sequencers_commitment_and_skips_the_rest_counted() {
    let node = Bitcoind::start();
    let mut coins = regtest::fund(&node, 0x21, 5).into_iter();
    let sequencer = keys::regtest_sequencer_secret().unwrap();
    let prover = keys::regtest_prover_secret().unwrap();
    let stranger = DaSecretKey::from_bytes(&[0x33; 32]).unwrap();
    let options = InscribeOptions::default();
    let commitment = |start, end, root: u8| SequencerCommitment {
        merkle_root: [root; 32],
        l2_start: start,
        l2_end: end,
    };

    let good = inscribe(
        &coins.next().unwrap(),
        &sequencer,
        Kind::SequencerCommitment,
        &commitment(1, 10, 0xaa).encode(),
        &options,
    )
    .unwrap();
    let other_key = inscribe(
        &coins.next().unwrap(),
        &stranger,
        Kind::SequencerCommitment,
        &commitment(11, 20, 0xbb).encode(),
        &options,
    )
    .unwrap();
    let wrong_prefix = inscribe_where(
        &coins.next().unwrap(),
        &sequencer,
        Kind::SequencerCommitment,
        &commitment(21, 30, 0xcc).encode(),
        &options,
        |w| !w.starts_with(&[1, 1]) && !w.starts_with(&[2, 2]),
    )
    .unwrap();
    assert!(!wtxid_raw(&wrong_prefix.reveal).starts_with(&[1, 1]));
    // Signed by the prover, but the bytes are no risc0 receipt.
    let not_a_receipt = inscribe_proof(
        &coins.next().unwrap(),
        &prover,
        b"these bytes are not a receipt",
        &options,
    )
    .unwrap();
    // A proof signed by another key.
    let stranger_proof = inscribe_proof(
        &coins.next().unwrap(),
        &stranger,
        b"a stranger's proof",
        &options,
    )
    .unwrap();
    let height = regtest::mine_txs(
        &node,
        &[
            &good.commit,
            &good.reveal,
            &other_key.commit,
            &other_key.reveal,
            &wrong_prefix.commit,
            &wrong_prefix.reveal,
            &not_a_receipt.main.commit,
            &not_a_receipt.main.reveal,
            &stranger_proof.main.commit,
            &stranger_proof.main.reveal,
        ],
    );
    node.mine(2);

    let progress = Arc::new(Progress::default());
    let mut da = regtest_da(&node, progress.clone(), 3);
    assert_eq!(da.last_scanned().unwrap(), height, "3 confirmations");
    let slot = da.slot(height).unwrap();
    assert_eq!(slot.number, height);
    let mut printed = hex::decode(node.block_hash(height)).unwrap();
    printed.reverse();
    assert_eq!(slot.hash.map(|h| h.to_vec()), Some(printed.clone()));
    assert_eq!(slot.commitments.len(), 1, "{:?}", slot.commitments);
    let c = slot.commitments[0];
    assert_eq!(
        (
            c.found_in_l1,
            c.merkle_root,
            c.l2_start_block_number,
            c.l2_end_block_number
        ),
        (height, [0xaa; 32], 1, 10)
    );
    assert!(slot.proofs.is_empty());
    let b = &progress.bitcoin;
    assert_eq!(b.refused_count("other_key"), 2, "a commitment and a proof");
    assert_eq!(b.refused_count("receipt"), 1);
    assert_eq!(b.commitments_found.load(Relaxed), 1);
    assert_eq!(b.proofs_found.load(Relaxed), 0);
    // The anchors and the chain's hash are the block's.
    let anchors = da
        .anchors(&[height, height + 2, height + 3])
        .unwrap()
        .unwrap();
    assert_eq!(anchors[0].unwrap().hash.to_vec(), printed);
    assert!(anchors[1].is_some() && anchors[2].is_none(), "{anchors:?}");
    assert_eq!(
        da.block_hash(height).unwrap().map(|h| h.to_vec()),
        Some(printed)
    );
    assert_eq!(da.block_hash(height + 50).unwrap(), None);
}

// ---- end to end, through ledgerd processes ----

/// A follower of `up` reading `node`, `/health` 503 after 2 s behind.
fn follower_of(up: &Ledgerd, node: &Bitcoind, dir: &std::path::Path, depth: u64) -> Ledgerd {
    regtest::follower_of(up, node, dir, depth)
        .args(&["--health-max-lag-s", "2"])
        .start()
}

/// Everything methods 2-13 answer about the chain, from slot `first` on.
fn view(n: &Ledgerd, first: u64) -> Value {
    let head = n
        .result("ledger_getHeadSoftConfirmationHeight", "[]")
        .as_u64()
        .unwrap();
    let scanned = n
        .result("ledger_getLastScannedL1Height", "[]")
        .as_u64()
        .unwrap();
    let mut blocks = Vec::new();
    let mut statuses = Vec::new();
    for h in 1..=head {
        blocks.push(n.result("ledger_getSoftConfirmationByNumber", &format!("[{h}]")));
        statuses.push(n.result("ledger_getSoftConfirmationStatus", &format!("[{h}]")));
    }
    let mut slots = Vec::new();
    for s in first..=scanned {
        let by_number = n.result(
            "ledger_getSequencerCommitmentsOnSlotByNumber",
            &format!("[{s}]"),
        );
        let proofs = n.result(
            "ledger_getVerifiedBatchProofsBySlotHeight",
            &format!("[{s}]"),
        );
        slots.push(json!([s, by_number, proofs]));
    }
    json!({
        "head": head,
        "scanned": scanned,
        "genesis": n.result("ledger_getL2GenesisStateRoot", "[]"),
        "blocks": blocks,
        "statuses": statuses,
        "slots": slots,
        "lastProof": n.result("ledger_getLastVerifiedBatchProof", "[]"),
    })
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn a_follower_reading_bitcoin_ends_with_the_devnets_answers_and_statuses_from_the_chain() {
    let node = Bitcoind::start();
    let dir = tempfile::tempdir().unwrap();
    let devnet = regtest::busy_devnet(&node, &dir.path().join("devnet"));
    let first = devnet.result("ledger_getSoftConfirmationByNumber", "[1]")["daSlotHeight"]
        .as_u64()
        .unwrap();
    let follower = follower_of(&devnet, &node, &dir.path().join("follower"), 1);
    let tip = node.block_count();
    wait_until(Duration::from_secs(60), "the follower to catch up", || {
        follower
            .result("ledger_getLastScannedL1Height", "[]")
            .as_u64()
            == Some(tip)
            && follower
                .result("ledger_getHeadSoftConfirmationHeight", "[]")
                .as_u64()
                == Some(66)
    });
    let theirs = view(&devnet, first);
    let ours = view(&follower, first);
    assert_eq!(ours["statuses"][59], "Proven", "{}", ours["statuses"]);
    assert_eq!(ours["statuses"][60], "Trusted");
    assert_eq!(ours, theirs);
    assert_eq!(
        follower.result("svc_syncStatus", "[]")["l1Status"],
        json!({ "Synced": tip })
    );
    let (status, h) = follower.health();
    assert_eq!(status, 200, "{h}");
    assert_eq!(h["source"], "upstream");
    assert_eq!(h["bitcoind"], node.url.as_str());
    assert_eq!(h["bitcoindReachable"], true);
    let m = follower.metrics_text();
    assert!(
        m.contains("ledgerd_bitcoin_commitments_found_total 4"),
        "{m}"
    );
    // Each block read once: those the L2 blocks name were read for their
    // check and kept for the scan, not read again.
    assert_eq!(
        follower.metric("ledgerd_bitcoin_blocks_fetched_total", &[]),
        tip - first + 1,
        "{m}"
    );

    // Signed by the regtest sequencer, on chain, but over a root that is not
    // the stored chain's: skipped, counted, never a status.
    let coin = regtest::fund(&node, 0x22, 1).remove(0);
    let forged = inscribe(
        &coin,
        &keys::regtest_sequencer_secret().unwrap(),
        Kind::SequencerCommitment,
        &SequencerCommitment {
            merkle_root: [0xee; 32],
            l2_start: 61,
            l2_end: 66,
        }
        .encode(),
        &InscribeOptions::default(),
    )
    .unwrap();
    let at = regtest::mine_txs(&node, &[&forged.commit, &forged.reveal]);
    wait_until(
        Duration::from_secs(30),
        "the forged commitment's block scanned",
        || {
            follower
                .result("ledger_getLastScannedL1Height", "[]")
                .as_u64()
                >= Some(at)
        },
    );
    for h in 61..=66 {
        assert_eq!(
            follower.result("ledger_getSoftConfirmationStatus", &format!("[{h}]")),
            "Trusted"
        );
    }
    assert_eq!(
        follower.result(
            "ledger_getSequencerCommitmentsOnSlotByNumber",
            &format!("[{at}]")
        ),
        Value::Null
    );
    let m = follower.metrics_text();
    assert!(
        m.contains(r#"ledgerd_sync_verification_failures_total{check="merkle_root"} 1"#),
        "{m}"
    );
    assert!(follower.stderr().contains("left out, never stored"));
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn bitcoind_killed_and_restarted_mid_scan_is_named_by_health_and_the_scan_resumes() {
    let mut node = Bitcoind::start();
    let dir = tempfile::tempdir().unwrap();
    let devnet = regtest::busy_devnet(&node, &dir.path().join("devnet"));
    // Blocks of no one's beyond the devnet's: a longer scan.
    node.mine(300);
    node.flush();
    let tip = node.block_count();
    let follower = follower_of(&devnet, &node, &dir.path().join("follower"), 1);
    wait_until(Duration::from_secs(30), "a first slot scanned", || {
        follower
            .result("ledger_getLastScannedL1Height", "[]")
            .as_u64()
            > Some(0)
    });
    node.kill9();
    wait_until(Duration::from_secs(30), "health to name bitcoind", || {
        let (status, h) = follower.health();
        status == 503 && h["reason"] == "bitcoind" && h["bitcoindReachable"] == false
    });
    let (_, h) = follower.health();
    assert!(
        h["bitcoindProblem"]
            .as_str()
            .unwrap()
            .contains("bitcoind at"),
        "{h}"
    );
    let l1 = follower.result("svc_syncStatus", "[]")["l1Status"].clone();
    assert!(
        l1.get("Syncing").is_some(),
        "not synced while bitcoind is down: {l1}"
    );
    node.restart();
    wait_until(
        Duration::from_secs(60),
        "the scan to resume to the tip",
        || {
            follower
                .result("ledger_getLastScannedL1Height", "[]")
                .as_u64()
                == Some(tip)
        },
    );
    wait_until(Duration::from_secs(10), "health again", || {
        follower.health().0 == 200
    });
    assert_eq!(
        follower.result("ledger_getSoftConfirmationStatus", "[60]"),
        "Proven"
    );
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn a_reorg_deeper_than_the_finality_depth_is_one_error_a_503_and_nothing_rewritten() {
    let node = Bitcoind::start();
    let dir = tempfile::tempdir().unwrap();
    let devnet = regtest::busy_devnet(&node, &dir.path().join("devnet"));
    node.mine(5);
    let tip = node.block_count();
    let follower = follower_of(&devnet, &node, &dir.path().join("follower"), 3);
    wait_until(
        Duration::from_secs(30),
        "the follower to scan its final blocks",
        || {
            follower
                .result("ledger_getLastScannedL1Height", "[]")
                .as_u64()
                == Some(tip - 2)
        },
    );
    let before = view(&follower, tip - 20);
    // Ten blocks back, deeper than 3: the scanned slot leaves the chain.
    node.invalidate_block(&node.block_hash(tip - 10));
    node.mine(15);
    wait_until(
        Duration::from_secs(30),
        "health to report the reorg",
        || {
            let (status, h) = follower.health();
            status == 503 && h["reason"] == "reorg"
        },
    );
    let (_, h) = follower.health();
    assert!(
        h["problem"]
            .as_str()
            .unwrap()
            .contains("deeper than the finality depth"),
        "{h}"
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(view(&follower, tip - 20), before, "nothing rewritten");
    let errors = follower
        .stderr()
        .lines()
        .filter(|l| l.contains("ERROR") && l.contains("finality depth"))
        .count();
    assert_eq!(errors, 1, "{}", follower.stderr());
    let l1 = follower.result("svc_syncStatus", "[]")["l1Status"].clone();
    assert!(l1.get("Syncing").is_some(), "{l1}");
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn l2_blocks_wait_for_the_bitcoin_block_they_name_and_are_refused_when_it_is_another() {
    // A simulated devnet: its blocks name DA heights from 1000 on, with
    // hashes of its own making, not regtest's.
    let node = Bitcoind::start();
    let dir = tempfile::tempdir().unwrap();
    let devnet = Ledgerd::builder()
        .dev(30, 0)
        .data_dir(&dir.path().join("devnet"))
        .start();
    let named = devnet.result("ledger_getSoftConfirmationByNumber", "[1]")["daSlotHeight"]
        .as_u64()
        .unwrap();
    node.mine(named - 5);
    let follower = follower_of(&devnet, &node, &dir.path().join("follower"), 1);
    // The regtest does not have that height yet: the blocks wait, no failure.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        follower.result("ledger_getHeadSoftConfirmationHeight", "[]"),
        0
    );
    let m = follower.metrics_text();
    assert!(
        m.contains(r#"ledgerd_sync_verification_failures_total{check="da_slot"} 0"#),
        "{m}"
    );
    // Now it has a block there, another than the one named: refused.
    node.mine(10);
    wait_until(Duration::from_secs(30), "the da_slot refusal", || {
        follower.metrics_text().lines().any(|l| {
            l.starts_with(r#"ledgerd_sync_verification_failures_total{check="da_slot"}"#)
                && !l.ends_with(" 0")
        })
    });
    assert_eq!(
        follower.result("ledger_getHeadSoftConfirmationHeight", "[]"),
        0,
        "nothing stored"
    );
    assert!(
        follower
            .stderr()
            .contains("check da_slot failed: L2 block 1 names DA block"),
        "{}",
        follower.stderr()
    );
}
