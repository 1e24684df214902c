//! Chains across the Kumquat fork: a devnet that makes Genesis-era blocks
//! below `--kumquat-height` and Kumquat blocks from it, a follower that
//! verifies both by the same fork table, import/export across the fork, and
//! a data dir that refuses another fork table.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{call, every_answer, export, run, statuses, wait_until_value, Ledgerd};
use serde_json::{json, Value};

const FORK: u64 = 50;

fn devnet_across_the_fork(dir: &Path, prefill: u64) -> Ledgerd {
    Ledgerd::builder()
        .dev(prefill, 0)
        .data_dir(dir)
        .args(&["--kumquat-height", &FORK.to_string()])
        .start()
}

/// The range `[from, to]` as the RPC answers it (raw text, for `ledgerd verify`).
fn range_answer(url: &str, from: u64, to: u64) -> String {
    common::call_raw(
        url,
        "ledger_getSoftConfirmationRange",
        &format!("[{from},{to}]"),
    )
}

/// Runs `ledgerd verify ARGS -` on `input`: (exit code, stdout).
fn verify(args: &[&str], input: &str) -> (Option<i32>, String) {
    let (code, out, _) = common::process::verify(args, input);
    (code, out)
}

#[test]
fn a_devnet_across_the_fork_makes_genesis_blocks_below_it_and_kumquat_blocks_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let node = devnet_across_the_fork(&dir.path().join("up"), 300);
    let url = &node.url;
    // Each side verifies by its own fork's rules, and only by those.
    let below = range_answer(url, FORK - 20, FORK - 1);
    let across = range_answer(url, FORK - 10, FORK + 9);
    let fork = FORK.to_string();
    let (code, out) = verify(&["--kumquat-height", &fork], &across);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(out.lines().count(), 20);
    assert!(out.lines().all(|l| l.starts_with("ok ")), "{out}");
    let (code, out) = verify(&[], &below);
    assert_eq!(code, Some(1), "Kumquat rules refuse Genesis blocks: {out}");
    assert!(out.lines().all(|l| l.contains("(Kumquat rules)")), "{out}");
    let (code, out) = verify(&["--kumquat-height", "1000"], &across);
    assert_eq!(code, Some(1));
    let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(
        failed.len(),
        10,
        "heights {FORK}.. fail by the Genesis rules: {out}"
    );
    assert!(failed[0].starts_with(&format!("FAIL {FORK}: ")), "{out}");
    // Commitments and proofs over Genesis-era hashes verify as well: every
    // status is reached below the fork, and above it.
    let s = statuses(url, 1..=300);
    assert!(
        s[..(FORK - 1) as usize].iter().all(|x| x == "Proven"),
        "{s:?}"
    );
    for status in ["Proven", "Finalized", "Trusted"] {
        assert!(
            s[(FORK - 1) as usize..].iter().any(|x| x == status),
            "{status} above the fork: {s:?}"
        );
    }
}

#[test]
fn every_status_is_reached_by_genesis_blocks_when_the_fork_is_near_the_head() {
    // With the fork just below the head, the Genesis side holds the newest
    // Trusted blocks too.
    let dir = tempfile::tempdir().unwrap();
    let node = Ledgerd::builder()
        .dev(300, 0)
        .data_dir(&dir.path().join("up"))
        .args(&["--kumquat-height", "296"])
        .start();
    let s = statuses(&node.url, 1..=295);
    for status in ["Proven", "Finalized", "Trusted"] {
        assert!(
            s.iter().any(|x| x == status),
            "{status} below the fork: {s:?}"
        );
    }
    let answer = range_answer(&node.url, 290, 300);
    let (code, out) = verify(&["--kumquat-height", "296"], &answer);
    assert_eq!(code, Some(0), "{out}");
}

#[test]
fn a_follower_with_the_same_fork_table_converges_and_one_without_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = devnet_across_the_fork(&dir.path().join("up"), 300);
    let fork = FORK.to_string();
    let follower = Ledgerd::builder()
        .data_dir(&dir.path().join("f"))
        .args(&[
            "--upstream".into(),
            upstream.url.clone(),
            "--kumquat-height".into(),
            fork,
        ])
        .start();
    let l1 = call(&upstream.url, "ledger_getLastScannedL1Height", "[]");
    let synced = json!({"l1Status":{"Synced":l1},"l2Status":{"Synced":300}});
    follower.wait_for(Duration::from_secs(60), "the follower converges", |f| {
        call(&f.url, "svc_syncStatus", "[]") == synced
    });
    let (f, u) = (every_answer(&follower.url), every_answer(&upstream.url));
    assert_eq!(f.len(), u.len());
    for ((call_f, answer_f), (_, answer_u)) in f.iter().zip(&u) {
        assert_eq!(answer_f, answer_u, "{call_f}");
    }

    // Without the fork table, block 1 is refused by the Kumquat rules and
    // nothing is stored.
    let wrong = Ledgerd::builder()
        .data_dir(&dir.path().join("w"))
        .args(&["--upstream".into(), upstream.url.clone()])
        .start();
    wrong.wait_for_refusal(Duration::from_secs(30), "hash");
    // Which rules refused it is said in the log only.
    let log = wrong.stderr();
    assert!(log.contains("soft confirmation 1: hash"), "{log}");
    assert!(log.contains("by the Kumquat rules"), "{log}");
    assert_eq!(
        call(&wrong.url, "ledger_getHeadSoftConfirmationHeight", "[]"),
        json!(0)
    );
}

#[test]
fn a_data_dir_refuses_another_fork_table_with_one_line_and_keeps_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let node = devnet_across_the_fork(&data, 100);
    let head_hash = call(&node.url, "ledger_getSoftConfirmationByNumber", "[100]")["hash"].clone();
    node.kill();
    let data_arg = data.to_str().unwrap();
    let refused = |extra: &[&str]| {
        let mut args = vec!["--dev", "--dev-block-ms", "0", "--bind", "127.0.0.1:0"];
        args.extend_from_slice(&["--data-dir", data_arg]);
        args.extend_from_slice(extra);
        let (status, stdout, stderr) = common::run_to_exit(&args);
        assert!(!status.success(), "{args:?} started: {stdout}");
        assert_eq!(stdout, "", "nothing listens");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one line: {stderr}");
        assert!(
            lines[0].contains("Kumquat from height 50") && lines[0].contains("--kumquat-height 50"),
            "{stderr}"
        );
    };
    refused(&[]);
    refused(&["--kumquat-height", "60"]);
    // Import refuses it too, and writes nothing.
    let out = run(
        &[
            "import",
            "-",
            "--data-dir",
            data_arg,
            "--kumquat-height",
            "7",
        ],
        Some(b""),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--kumquat-height 50"), "{err}");
    // With its own table it continues the same chain.
    let node = Ledgerd::builder()
        .dev(120, 0)
        .data_dir(&data)
        .args(&["--kumquat-height", "50"])
        .start();
    assert_eq!(
        call(&node.url, "ledger_getSoftConfirmationByNumber", "[100]")["hash"],
        head_hash
    );
    assert_eq!(
        call(&node.url, "ledger_getHeadSoftConfirmationHeight", "[]"),
        json!(120)
    );
}

#[test]
fn an_export_across_the_fork_imports_with_its_fork_table_and_not_without() {
    let dir = tempfile::tempdir().unwrap();
    let up = dir.path().join("up");
    let node = devnet_across_the_fork(&up, 120);
    node.kill();
    let fixture = export(&up, &[]);
    let import = |data: &Path, extra: &[&str]| {
        let mut args = vec!["import", "-", "--data-dir", data.to_str().unwrap()];
        args.extend_from_slice(extra);
        run(&args, Some(fixture.as_bytes()))
    };
    let refused = import(&dir.path().join("a"), &[]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("soft confirmation 1: hash") && err.contains("Kumquat rules"),
        "{err}"
    );
    let copy = dir.path().join("b");
    let done = import(&copy, &["--kumquat-height", "50"]);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(export(&copy, &[]), fixture);
    let head: Value = serde_json::from_str(
        fixture
            .lines()
            .rfind(|l| l.starts_with("{\"softConfirmation\""))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(head["softConfirmation"]["l2Height"], 120);
}

#[test]
fn the_devnet_refuses_a_public_network_whose_key_it_does_not_hold() {
    let dir = tempfile::tempdir().unwrap();
    let (status, stdout, stderr) = common::run_to_exit(&[
        "--dev",
        "--network",
        "testnet",
        "--bind",
        "127.0.0.1:0",
        "--data-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert!(!status.success(), "{stdout}");
    assert!(stderr.contains("--kumquat-height"), "{stderr}");
}

#[test]
fn node_builders_take_the_fork_table_and_the_sequencer_key() {
    use ledgerd::ledger::LedgerRead;
    use ledgerd::source::devnet::DevnetConfig;
    use ledgerd::Node;
    let dir = tempfile::tempdir().unwrap();
    let upstream = Node::builder()
        .data_dir(dir.path().join("up"))
        .dev(DevnetConfig {
            prefill: 120,
            block_ms: 0,
            ..DevnetConfig::default()
        })
        .kumquat_height(FORK)
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let r = upstream.ledger().reader().unwrap();
    let key = r.soft_confirmation(1).unwrap().unwrap().pub_key;
    assert_eq!(
        r.fork_table().unwrap(),
        Some(ledgerd::chain_rules::ForkTable::kumquat_from(FORK))
    );
    drop(r);
    let follow = |dir: &Path, key: [u8; 32]| {
        Node::builder()
            .data_dir(dir)
            .upstream(&upstream.url())
            .kumquat_height(FORK)
            .sequencer_pubkey(key)
            .bind("127.0.0.1:0")
            .start()
            .unwrap()
    };
    let follower = follow(&dir.path().join("f"), key);
    let head = || follower.ledger().reader().unwrap().head_height().unwrap();
    wait_until_value(Duration::from_secs(30), "the follower at 120", head, |h| {
        *h >= 120
    });
    assert_eq!(head(), 120);
    let hash_at = |node: &Node, h: u64| node.ledger().reader().unwrap().hash_at(h).unwrap();
    assert_eq!(hash_at(&follower, FORK - 1), hash_at(&upstream, FORK - 1));
    assert_eq!(hash_at(&follower, 120), hash_at(&upstream, 120));
    // Another key than the sequencer's: nothing is stored.
    let mut other = key;
    other[0] ^= 1;
    let stranger = follow(&dir.path().join("s"), other);
    let refused = || {
        stranger
            .progress()
            .failures
            .pub_key
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    wait_until_value(
        Duration::from_secs(30),
        "the wrong key to be counted as a pubKey failure",
        refused,
        |n| *n > 0,
    );
    assert_eq!(
        stranger.ledger().reader().unwrap().head_height().unwrap(),
        0
    );
}
