//! Devnet snapshots over JSON-RPC on a real `ledgerd --dev` and through
//! `Node::devnet()` in-process: `dev_revert` brings back the chain, every
//! status and the devnet's own state (so the same calls make the same chain
//! again), later snapshots are dropped as anvil drops them, `dev_reset`
//! goes back to the prefill chain, and `--ephemeral` starts a fresh chain
//! on a data dir that is gone at exit.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{every_answer, Ledgerd};
use ledgerd::ledger::LedgerRead;
use ledgerd::source::devnet::DevnetConfig;
use ledgerd::types::Status;
use ledgerd::Node;

fn devnet(prefill: u64) -> Ledgerd {
    Ledgerd::builder()
        .dev(prefill, 0)
        .args(&["--dev-proof-bytes", "16"])
        .start()
}

/// Calls that change everything a devnet has: blocks with injected
/// transactions, deposits, a timestamp and a fee rate, an explicit
/// commitment and proof, and an automatic rule changed.
fn script(node: &Ledgerd) {
    node.result("dev_addDeposit", r#"["0xd0d0"]"#);
    node.result("dev_setNextTimestamp", "[2000000000]");
    node.result("dev_setL1FeeRate", "[77]");
    node.result("dev_mine", "[37]");
    node.result("dev_commit", "[]");
    node.result("dev_mine", "[5]");
    node.result("dev_prove", "[]");
    node.result("dev_setAutoCommit", "[4]");
    node.result("dev_sendTransaction", r#"["0xbeef"]"#);
    node.result("dev_mine", "[20]");
}

#[test]
fn dev_revert_brings_back_the_chain_every_status_and_the_devnets_state() {
    let node = devnet(100);
    // Queued before the snapshot: it belongs to the next block, then too.
    assert_eq!(node.result("dev_sendTransaction", r#"["0xaa"]"#), 101);
    let id = node.result("dev_snapshot", "[]");
    assert_eq!(id, 0, "the first snapshot's id");
    let at_snapshot = every_answer(&node.url);
    script(&node);
    let after_script = every_answer(&node.url);
    assert_ne!(at_snapshot, after_script);
    assert_eq!(node.head(), 162);

    assert_eq!(node.result("dev_revert", "[0]"), true);
    assert_eq!(node.head(), 100);
    assert_eq!(
        every_answer(&node.url),
        at_snapshot,
        "after the revert / at the snapshot"
    );

    // The same calls make the same chain: the clock, the DA schedule and
    // the queued transaction came back with it.
    script(&node);
    let b101 = node.result("ledger_getSoftConfirmationByNumber", "[101]");
    let txs = b101["txs"].as_array().unwrap();
    assert_eq!(txs.last().unwrap(), "aa", "after the devnet's own: {b101}");
    assert_eq!(
        every_answer(&node.url),
        after_script,
        "made again / made first"
    );

    assert_eq!(
        node.result("dev_revert", "[0]"),
        false,
        "a snapshot reverted to is dropped"
    );
}

#[test]
fn snapshots_taken_after_the_one_reverted_to_are_dropped_and_ids_are_not_reused() {
    let node = devnet(20);
    let first = node.result("dev_snapshot", "[]");
    node.result("dev_mine", "[3]");
    let second = node.result("dev_snapshot", "[]");
    assert_eq!((first.clone(), second.clone()), (0.into(), 1.into()));
    node.result("dev_mine", "[3]");
    assert_eq!(node.result("dev_revert", &format!("[{first}]")), true);
    assert_eq!(node.head(), 20);
    assert_eq!(node.result("dev_revert", &format!("[{second}]")), false);
    assert_eq!(node.result("dev_snapshot", "[]"), 2);
    assert_eq!(
        node.result("dev_revert", r#"{"id":"0x63"}"#),
        false,
        "never taken"
    );
    let e = node.error("dev_revert", r#"["soon"]"#);
    assert_eq!(e["code"], -32602, "{e}");
    assert!(e["data"].as_str().unwrap().contains("id"), "{e}");
}

#[test]
fn dev_reset_goes_back_to_the_prefill_chain_and_goes_on_as_a_fresh_node() {
    let node = devnet(30);
    let fresh = devnet(30);
    script(&node);
    node.result("dev_snapshot", "[]");
    assert_eq!(node.result("dev_reset", "[]"), 30);
    assert_eq!(every_answer(&node.url), every_answer(&fresh.url));
    assert_eq!(
        node.result("dev_revert", "[0]"),
        false,
        "reset drops snapshots"
    );
    script(&node);
    script(&fresh);
    assert_eq!(every_answer(&node.url), every_answer(&fresh.url));
}

#[test]
fn snapshot_revert_and_reset_through_node_on_an_ephemeral_data_dir() {
    let node = Node::builder()
        .ephemeral()
        .dev(DevnetConfig {
            prefill: 10,
            block_ms: 0,
            ..DevnetConfig::default()
        })
        .bind("127.0.0.1:0")
        .start()
        .expect("node");
    let dir: PathBuf = node.ledger().path().to_path_buf();
    assert!(dir.join("data.mdb").exists(), "{}", dir.display());
    let devnet = node.devnet().expect("a devnet");
    let status = |h| node.ledger().reader().and_then(|r| r.status(h)).unwrap();
    let id = devnet.snapshot().unwrap();
    devnet.mine(5).unwrap();
    devnet.commit().unwrap();
    devnet.prove().unwrap();
    assert_eq!(status(15), Some(Status::Proven));
    assert!(devnet.revert(id).unwrap());
    assert_eq!(node.ledger().reader().unwrap().head_height().unwrap(), 10);
    assert_eq!(status(15), None);
    assert_eq!(status(10), Some(Status::Trusted));
    assert!(!devnet.revert(id).unwrap());
    devnet.mine(30).unwrap();
    assert_eq!(devnet.reset().unwrap(), 10);
    assert_eq!(node.ledger().reader().unwrap().head_height().unwrap(), 10);
    node.shutdown();
    assert!(!dir.exists(), "{} is removed at exit", dir.display());
}

#[test]
fn an_ephemeral_node_starts_a_fresh_chain_and_removes_its_data_dir_at_exit() {
    let start = || {
        Ledgerd::builder()
            .dev(5, 0)
            .arg("--ephemeral")
            .data_dir_from_args()
            .start()
    };
    let node = start();
    let line = node.wait_for_value(
        Duration::from_secs(5),
        "the --ephemeral log line",
        |n| n.stderr(),
        |s| s.contains("--ephemeral: data dir "),
    );
    let dir = line
        .split("--ephemeral: data dir ")
        .nth(1)
        .and_then(|rest| rest.split(", removed").next())
        .map(PathBuf::from)
        .expect("the data dir in the log line");
    assert!(dir.join("data.mdb").exists(), "{}", dir.display());
    assert_eq!(node.result("dev_mine", "[3]"), 8);
    let (status, _) = node.stop();
    assert!(status.success());
    assert!(!dir.exists(), "{} is removed at exit", dir.display());
    let again = start();
    assert_eq!(again.head(), 5, "a new chain, not the last run's");
}
