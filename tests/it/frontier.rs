//! The finality frontier, over real HTTP on 127.0.0.1: Citrea v0.7's
//! `citrea_getLastCommittedL2Height`, `citrea_getLastProvenL2Height` and
//! `citrea_getL2StatusHeightsByL1Height`, checked against the status of
//! every height and the commitments and proofs of every DA slot, on a
//! devnet driven by `dev_mine` / `dev_commit` / `dev_prove` and on a
//! follower of it; and the same frontier in `/health` and `/metrics`.

use crate::common;

use std::time::Duration;

use common::rpc::batch;
use common::Ledgerd;
use serde_json::{json, Value};

/// The DA slot of L2 height 1 on the devnet.
const FIRST_SLOT: u64 = 1000;

/// What the node says of its frontier, and what its statuses, commitments
/// and proofs say it must be.
fn check_frontier(node: &Ledgerd) -> (Value, Value) {
    let head = node.head();
    let committed = node.result("citrea_getLastCommittedL2Height", "[]");
    let proven = node.result("citrea_getLastProvenL2Height", "[]");
    let calls: Vec<_> = (1..=head)
        .map(|h| ("ledger_getSoftConfirmationStatus", json!([h])))
        .collect();
    let statuses: Vec<String> = if head == 0 {
        Vec::new()
    } else {
        batch(&node.url, &calls)
            .into_iter()
            .map(|s| s.as_str().expect("a status").to_string())
            .collect()
    };
    let status = |h: u64| statuses[(h - 1) as usize].as_str();
    // The highest height of each status, from the statuses of every height.
    let top = |wanted: &[&str]| {
        (1..=head)
            .rev()
            .find(|&h| wanted.contains(&status(h)))
            .unwrap_or(0)
    };
    let finalized = top(&["Finalized", "Proven"]);
    let proven_top = top(&["Proven"]);
    let height = |v: &Value| v.get("height").and_then(Value::as_u64).unwrap_or(0);
    assert_eq!(height(&committed), finalized, "committed {committed}");
    assert_eq!(height(&proven), proven_top, "proven {proven}");
    assert_eq!(committed.is_null(), finalized == 0, "{committed}");
    assert_eq!(proven.is_null(), proven_top == 0, "{proven}");
    if !committed.is_null() {
        assert_eq!(
            committed.as_object().unwrap().len(),
            2,
            "Citrea's shape: {committed}"
        );
    }

    // By L1 height: the highest end of the commitments found on slots up
    // to it, and the highest height proven by proofs found on slots up to it.
    let last = node
        .result("ledger_getLastScannedL1Height", "[]")
        .as_u64()
        .unwrap();
    let mut calls = Vec::new();
    for slot in FIRST_SLOT..=last {
        calls.push((
            "ledger_getSequencerCommitmentsOnSlotByNumber",
            json!([slot]),
        ));
        calls.push(("ledger_getVerifiedBatchProofsBySlotHeight", json!([slot])));
        calls.push(("citrea_getL2StatusHeightsByL1Height", json!([slot])));
    }
    let mut answers = Vec::new();
    for part in calls.chunks(48) {
        answers.extend(batch(&node.url, part));
    }
    let (mut want_committed, mut want_proven, mut commitments) = (0, 0, 0);
    for (i, a) in answers.chunks(3).enumerate() {
        let slot = FIRST_SLOT + i as u64;
        for c in a[0].as_array().into_iter().flatten() {
            commitments += 1;
            want_committed = want_committed.max(c["l2EndBlockNumber"].as_u64().unwrap());
        }
        if let Some(p) = a[1].get("proof") {
            want_proven = want_proven.max(p["proofOutput"]["lastL2Height"].as_u64().unwrap());
        }
        assert_eq!(
            a[2],
            json!({"committed": want_committed, "proven": want_proven}),
            "citrea_getL2StatusHeightsByL1Height at slot {slot}"
        );
    }
    assert_eq!(want_committed, finalized, "the commitments' highest end");
    if !committed.is_null() {
        // Every devnet commitment moved the frontier: the last one's index
        // is their count.
        assert_eq!(committed["commitment_index"], commitments, "{committed}");
    }
    // Before the first slot, nothing; far past the last, the frontier now.
    assert_eq!(
        node.result("citrea_getL2StatusHeightsByL1Height", "[0]"),
        json!({"committed": 0, "proven": 0})
    );
    assert_eq!(
        node.result(
            "citrea_getL2StatusHeightsByL1Height",
            "[18446744073709551615]"
        ),
        json!({"committed": finalized, "proven": proven_top})
    );
    (committed, proven)
}

#[test]
fn the_frontier_methods_agree_with_every_status_on_a_devnet_as_it_commits_and_proves() {
    let node = Ledgerd::builder().dev(0, 0).start();
    // Nothing yet: null, and zeros by L1 height.
    assert_eq!(
        node.result("citrea_getLastCommittedL2Height", "[]"),
        Value::Null
    );
    assert_eq!(
        node.result("citrea_getLastProvenL2Height", "[]"),
        Value::Null
    );
    node.result("dev_setAutoCommit", "[0]");
    node.result("dev_setAutoProve", "[0]");
    check_frontier(&node);

    node.result("dev_mine", "[30]");
    let (c, p) = check_frontier(&node);
    assert!(c.is_null() && p.is_null(), "{c} {p}");

    node.result("dev_commit", "[]");
    let (c, p) = check_frontier(&node);
    assert_eq!(c, json!({"height": 30, "commitment_index": 1}));
    assert!(p.is_null(), "{p}");

    node.result("dev_mine", "[7]");
    node.result("dev_commit", "[]");
    node.result("dev_mine", "[5]");
    let (c, p) = check_frontier(&node);
    assert_eq!(c, json!({"height": 37, "commitment_index": 2}));
    assert!(p.is_null(), "{p}");

    node.result("dev_prove", "[]");
    node.result("dev_mine", "[2]");
    let (c, p) = check_frontier(&node);
    assert_eq!(c["height"], 37);
    assert_eq!(p, json!({"height": 37, "commitment_index": 2}));

    // The automatic rules too: a commitment every 8 blocks, each proven.
    node.result("dev_setAutoCommit", "[8]");
    node.result("dev_setAutoProve", "[1]");
    node.result("dev_mine", "[40]");
    let (c, p) = check_frontier(&node);
    assert!(c["height"].as_u64().unwrap() > 37, "{c}");
    assert!(p["height"].as_u64().unwrap() > 37, "{p}");
}

#[test]
fn a_follower_answers_the_frontier_as_its_upstream_does() {
    let upstream = Ledgerd::builder().dev(300, 0).start();
    let (c, p) = check_frontier(&upstream);
    assert!(c["height"].as_u64().unwrap() > 200, "{c}");
    assert!(p["height"].as_u64().unwrap() > 100, "{p}");
    let last = upstream.result("ledger_getLastScannedL1Height", "[]");
    let follower = Ledgerd::builder()
        .args(&["--upstream", upstream.url.as_str()])
        .start();
    follower.wait_for(Duration::from_secs(60), "the follower's DA scan", |f| {
        f.result("ledger_getLastScannedL1Height", "[]") == last
    });
    let (fc, fp) = check_frontier(&follower);
    assert_eq!((fc, fp), (c, p));
    for slot in [FIRST_SLOT, 1010, 1040, 1080, 1100, 1200] {
        let params = format!("[{slot}]");
        assert_eq!(
            follower.result("citrea_getL2StatusHeightsByL1Height", &params),
            upstream.result("citrea_getL2StatusHeightsByL1Height", &params),
            "slot {slot}"
        );
    }
}

#[test]
fn the_l1_height_is_checked_as_every_height_parameter_is() {
    let node = Ledgerd::builder().dev(3, 0).start();
    let e = node.error("citrea_getL2StatusHeightsByL1Height", "[]");
    assert_eq!(e["code"], -32602, "{e}");
    assert!(e["data"].as_str().unwrap().contains("l1_height"), "{e}");
    let e = node.error("citrea_getL2StatusHeightsByL1Height", "[-1]");
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(
        node.result(
            "citrea_getL2StatusHeightsByL1Height",
            r#"{"l1_height":"0x0"}"#
        ),
        json!({"committed": 0, "proven": 0})
    );
}

#[test]
fn health_and_metrics_show_the_frontier_and_when_it_last_moved() {
    let node = Ledgerd::builder().dev(0, 0).start();
    node.result("dev_setAutoCommit", "[0]");
    node.result("dev_setAutoProve", "[0]");
    let health = || -> Value {
        let text = ureq::get(&format!("{}/health", node.url))
            .call()
            .expect("/health")
            .into_string()
            .unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let h = health();
    assert_eq!(h["l2Finalized"], 0, "{h}");
    assert_eq!(h["l2Proven"], 0, "{h}");
    for field in [
        "lastCommitmentL1Height",
        "lastCommitmentTime",
        "lastProofL1Height",
        "lastProofTime",
    ] {
        assert_eq!(h[field], Value::Null, "{field}: {h}");
    }
    assert_eq!(
        node.metric("ledgerd_l2_height", &[("status", "finalized")]),
        0
    );

    node.result("dev_mine", "[12]");
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let commitment = node.result("dev_commit", "[]");
    let proof = node.result("dev_prove", "[]");
    let commit_slot = commitment["foundInL1"].as_u64().unwrap();
    let proof_slot = proof["proof"]["height"].as_u64().unwrap();
    let h = health();
    assert_eq!(h["l2Finalized"], 12, "{h}");
    assert_eq!(h["l2Proven"], 12, "{h}");
    assert_eq!(h["lastCommitmentL1Height"], commit_slot, "{h}");
    assert_eq!(h["lastProofL1Height"], proof_slot, "{h}");
    for field in ["lastCommitmentTime", "lastProofTime"] {
        let t = h[field].as_u64().unwrap();
        assert!(t >= before && t <= before + 60, "{field}: {h}");
    }
    for (status, l1, time) in [
        ("finalized", commit_slot, &h["lastCommitmentTime"]),
        ("proven", proof_slot, &h["lastProofTime"]),
    ] {
        let labels = [("status", status)];
        assert_eq!(node.metric("ledgerd_l2_height", &labels), 12);
        assert_eq!(node.metric("ledgerd_frontier_l1_height", &labels), l1);
        assert_eq!(
            node.metric("ledgerd_frontier_timestamp_seconds", &labels),
            time.as_u64().unwrap()
        );
    }
}

#[test]
fn a_devnet_revert_takes_the_frontier_back_with_the_chain() {
    let node = Ledgerd::builder().dev(0, 0).start();
    node.result("dev_setAutoCommit", "[0]");
    node.result("dev_setAutoProve", "[0]");
    node.result("dev_mine", "[20]");
    node.result("dev_commit", "[]");
    node.result("dev_prove", "[]");
    let (c, p) = check_frontier(&node);
    let id = node.result("dev_snapshot", "[]");
    node.result("dev_mine", "[15]");
    node.result("dev_commit", "[]");
    node.result("dev_prove", "[]");
    let (later, _) = check_frontier(&node);
    assert_eq!(later["height"], 35, "{later}");
    assert_eq!(node.result("dev_revert", &format!("[{id}]")), true);
    // Rolled back by the write rules: the index holds no entry of a removed slot.
    assert_eq!(check_frontier(&node), (c, p));
    let far = node.result(
        "citrea_getL2StatusHeightsByL1Height",
        "[18446744073709551615]",
    );
    assert_eq!(far, json!({"committed": 20, "proven": 20}));
}
