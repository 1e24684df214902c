//! The embedded devnet as a person watching with curl sees it: heads move,
//! statuses climb Trusted -> Finalized -> Proven, a stop and a restart on
//! the same data dir keep everything and continue the chain.

use crate::common;

use std::time::{Duration, Instant};

use common::{run_to_exit, Ledgerd};
use serde_json::Value;

fn status_rank(s: &Value) -> u8 {
    match s.as_str() {
        Some("Trusted") => 0,
        Some("Finalized") => 1,
        Some("Proven") => 2,
        _ => panic!("{s} is not a status"),
    }
}

#[test]
fn statuses_climb_from_trusted_to_finalized_to_proven_as_the_devnet_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Ledgerd::builder().dev(0, 20).data_dir(dir.path()).start();
    node.wait_for(Duration::from_secs(20), "height 1", |n| n.head() >= 1);
    let mut seen: Vec<Value> = Vec::new();
    let mut heads = Vec::new();
    let start = Instant::now();
    while seen.last().and_then(Value::as_str) != Some("Proven") {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "height 1 is not Proven after 30 s; saw {seen:?}"
        );
        let s = node.result("ledger_getSoftConfirmationStatus", "[1]");
        if seen.last() != Some(&s) {
            if let Some(last) = seen.last() {
                assert!(
                    status_rank(&s) > status_rank(last),
                    "{last} -> {s} moved backwards"
                );
            }
            seen.push(s);
        }
        heads.push(node.head());
        std::thread::sleep(Duration::from_millis(10));
    }
    // Seen by polling, the climb may skip a step: on a loaded machine the
    // first look can come after height 1's commitment landed, and the slot
    // with the commitment and the one with the proof can land in one write
    // transaction. The ledger's frontier keeps every step: height 1's own
    // DA slot had nothing committed (it was Trusted), and some DA slot left
    // it Finalized and not yet Proven.
    if seen.first().and_then(Value::as_str) != Some("Trusted") {
        let anchor = node.result("ledger_getSoftConfirmationByNumber", "[1]")["daSlotHeight"]
            .as_u64()
            .expect("a DA slot");
        let at = node.result(
            "citrea_getL2StatusHeightsByL1Height",
            &format!("[{anchor}]"),
        );
        assert!(
            at["committed"].as_u64() < Some(1),
            "height 1 was never Trusted: at its DA slot {anchor}, {at}; polled {seen:?}"
        );
    }
    assert!(
        seen.iter()
            .all(|s| ["Trusted", "Finalized", "Proven"].contains(&s.as_str().unwrap_or(""))),
        "{seen:?}"
    );
    let scanned = node
        .result("ledger_getLastScannedL1Height", "[]")
        .as_u64()
        .expect("a slot");
    let finalized_then = (0..=scanned).find(|slot| {
        let at = node.result("citrea_getL2StatusHeightsByL1Height", &format!("[{slot}]"));
        at["committed"].as_u64() >= Some(1) && at["proven"].as_u64() < Some(1)
    });
    assert!(
        finalized_then.is_some(),
        "no DA slot up to {scanned} left height 1 Finalized before Proven; polled {seen:?}"
    );
    assert!(
        heads.windows(2).all(|w| w[0] <= w[1]),
        "the head never goes down"
    );
    assert!(heads.last() > heads.first(), "the head moved: {heads:?}");
    // The proof that made it Proven is served, and covers height 1.
    let proof = node.result("ledger_getLastVerifiedBatchProof", "[]");
    assert!(proof["proof"]["proofOutput"]["lastL2Height"].as_u64() >= Some(1));
    let (status, _) = node.stop();
    assert!(status.success());
}

#[test]
fn sync_status_moves_with_the_live_chain() {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Ledgerd::builder().dev(50, 20).data_dir(dir.path()).start();
    let first = node.result("svc_syncStatus", "[]");
    node.wait_for(Duration::from_secs(20), "the L2 head to move", |n| {
        let now = n.result("svc_syncStatus", "[]");
        let synced = |v: &Value| v["l2Status"]["Synced"].as_u64();
        synced(&now).is_some() && synced(&now) > synced(&first).or(Some(50))
    });
    let l1 = |v: &Value| v["l1Status"]["Synced"].as_u64().unwrap_or(0);
    node.wait_for(Duration::from_secs(20), "the L1 head to move", |n| {
        l1(&n.result("svc_syncStatus", "[]")) > l1(&first)
    });
}

/// Everything a client can read about heights 1..=n and the slots they touch.
fn snapshot(node: &Ledgerd, n: u64) -> Vec<Value> {
    let mut out = vec![node.result("ledger_getSoftConfirmationRange", &format!("[1,{n}]"))];
    for h in 1..=n {
        out.push(node.result("ledger_getSoftConfirmationStatus", &format!("[{h}]")));
    }
    out.push(node.result("ledger_getL2GenesisStateRoot", "[]"));
    let last_slot = out[0][n as usize - 1]["daSlotHeight"]
        .as_u64()
        .expect("slot");
    for slot in 1000..=last_slot {
        out.push(node.result(
            "ledger_getSequencerCommitmentsOnSlotByNumber",
            &format!("[{slot}]"),
        ));
        out.push(node.result(
            "ledger_getVerifiedBatchProofsBySlotHeight",
            &format!("[{slot}]"),
        ));
    }
    out
}

#[test]
fn a_restart_on_the_same_data_dir_keeps_everything_and_continues_the_chain() {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Ledgerd::builder().dev(150, 0).data_dir(dir.path()).start();
    let before = snapshot(&node, 150);
    let scanned = node.result("ledger_getLastScannedL1Height", "[]");
    let (status, stderr) = node.stop();
    assert!(status.success(), "clean stop: {stderr}");
    // A clean stop logs no error (tiny_http's accept on the shut listener is expected).
    assert!(
        !stderr.contains(" ERROR "),
        "a clean stop logged an error: {stderr}"
    );

    // The same flags: nothing changes, nothing is rewritten.
    let node = Ledgerd::builder().dev(150, 0).data_dir(dir.path()).start();
    assert_eq!(snapshot(&node, 150), before);
    assert_eq!(node.result("ledger_getLastScannedL1Height", "[]"), scanned);
    // Ctrl-C stops it cleanly too.
    let (status, stderr) = node.stop_with(libc::SIGINT);
    assert!(status.success(), "clean stop on SIGINT: {stderr}");

    // A larger prefill continues the chain on top of what is stored.
    let node = Ledgerd::builder().dev(220, 0).data_dir(dir.path()).start();
    assert_eq!(
        node.result("ledger_getHeadSoftConfirmationHeight", "[]"),
        220
    );
    let after = snapshot(&node, 150);
    assert_eq!(after[0], before[0], "stored blocks are not rewritten");
    for (h, (a, b)) in after[1..151].iter().zip(&before[1..151]).enumerate() {
        assert!(
            status_rank(a) >= status_rank(b),
            "status of {} went back",
            h + 1
        );
    }
    let b151 = node.result("ledger_getSoftConfirmationByNumber", "[151]");
    assert_eq!(b151["prevHash"], before[0][149]["hash"]);
    drop(node.stop());

    // Another seed on this data dir is refused, with one line that says what to do.
    let path = dir.path().to_str().expect("utf-8 path");
    let (status, out, err) = run_to_exit(&[
        "--dev",
        "--dev-seed",
        "7",
        "--bind",
        "127.0.0.1:0",
        "--data-dir",
        path,
    ]);
    assert!(!status.success());
    assert!(out.is_empty());
    let last = err.trim().lines().last().unwrap_or_default();
    assert!(last.contains("--dev-seed 1"), "{err}");
}

/// The INFO lines an operator reads: what changed, never one per block.
/// A devnet making a block every 2 ms for 3 s stores ~1,500 blocks; the log
/// says it started, caught up and is serving, and nothing per block (the
/// per-block lines are DEBUG; a summary comes at most every 30 s).
#[test]
fn a_fast_devnet_logs_what_changed_not_every_block() {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Ledgerd::builder().dev(0, 2).data_dir(dir.path()).start();
    std::thread::sleep(Duration::from_secs(3));
    let head = node.head();
    assert!(head >= 300, "the devnet made only {head} blocks in 3 s");
    let (status, stderr) = node.stop();
    assert!(status.success(), "{stderr}");
    let info: Vec<&str> = stderr.lines().filter(|l| l.contains(" INFO ")).collect();
    assert!(
        info.len() <= 12,
        "{} INFO lines for {head} blocks:\n{}",
        info.len(),
        info.join("\n")
    );
    assert!(
        info.iter().any(|l| l.contains("caught up")),
        "the log says when the node caught up:\n{stderr}"
    );
    assert!(
        !info
            .iter()
            .any(|l| l.contains("synced to") || l.contains("scanned to")),
        "per-chunk progress is DEBUG:\n{stderr}"
    );
    // At DEBUG the per-block progress is there for whoever asks.
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Ledgerd::builder()
        .dev(50, 0)
        .data_dir(dir.path())
        .log("debug")
        .start();
    let (_, stderr) = node.stop();
    assert!(
        stderr.contains("DEBUG ledgerd::sync] L2 synced to 50"),
        "{stderr}"
    );
}
