//! Driving the devnet from a test: every `dev_*` method over HTTP on a real
//! `ledgerd --dev --dev-block-ms 0`, the same calls through `Node::devnet()`
//! in-process, the refusals (bad params, a node without `--dev`, a node on a
//! non-loopback address), determinism, a follower that sees what explicit
//! calls made, the curl examples of docs/DEVNET.md and its Python example.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::rpc::{post_raw, request, wait_synced_with};
use common::{every_answer, Ledgerd};
use ledgerd::ledger::LedgerRead;
use ledgerd::source::devnet::DevnetConfig;
use ledgerd::sync::devnet::DevError;
use ledgerd::types::Status;
use ledgerd::Node;
use serde_json::{json, Value};

/// A devnet node with no blocks, no timer and 16-byte proofs.
fn devnet() -> Ledgerd {
    Ledgerd::builder()
        .dev(0, 0)
        .args(&["--dev-proof-bytes", "16"])
        .start()
}

/// Turns both automatic rules off (checking the defaults they had).
fn explicit_only(node: &Ledgerd) {
    assert_eq!(node.result("dev_setAutoCommit", "[0]"), 16);
    assert_eq!(node.result("dev_setAutoProve", "[0]"), 1);
}

#[test]
fn dev_mine_makes_blocks_now_and_answers_the_new_head() {
    let node = devnet();
    assert_eq!(node.head(), 0);
    assert_eq!(node.result("dev_mine", "[]"), 1, "one block by default");
    assert_eq!(node.result("dev_mine", "[4]"), 5);
    assert_eq!(node.head(), 5, "readable as soon as it is answered");
    assert_eq!(node.result("dev_mine", r#"{"blocks":"0x2"}"#), 7);
    assert_eq!(
        node.result("dev_mine", "[0]"),
        7,
        "0 blocks: the head as it is"
    );
    assert_eq!(node.status(7), "Trusted");
    // In a batch, a read after dev_mine sees its blocks.
    let answers = node.post(
        r#"[{"jsonrpc":"2.0","id":1,"method":"dev_mine","params":[3]},
            {"jsonrpc":"2.0","id":2,"method":"ledger_getHeadSoftConfirmationHeight","params":[]}]"#,
    );
    assert_eq!(answers[0]["result"], 10, "{answers}");
    assert_eq!(answers[1]["result"], 10, "{answers}");
    // A notification mines too; it is not answered.
    let (code, text) = node.post_raw(r#"{"jsonrpc":"2.0","method":"dev_mine","params":[2]}"#);
    assert_eq!((code, text.as_str()), (200, ""));
    assert_eq!(node.head(), 12);
    // The blocks are the chain's: linked, and the sync status follows.
    let b12 = node.result("ledger_getSoftConfirmationByNumber", "[12]");
    let b11 = node.result("ledger_getSoftConfirmationByNumber", "[11]");
    assert_eq!(b12["prevHash"], b11["hash"]);
    assert_eq!(
        node.result("svc_syncStatus", "[]")["l2Status"]["Synced"],
        12
    );
    // Answered on the sync thread, counted by /metrics all the same.
    let metrics = common::exchange(node.addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").text();
    let count = |outcome: &str| {
        let series =
            format!(r#"ledgerd_rpc_requests_total{{method="dev_mine",outcome="{outcome}"}}"#);
        common::http::metric(&metrics, &series)
    };
    assert_eq!((count("ok"), count("notification")), (5, 1), "{metrics}");
}

#[test]
fn dev_commit_finalizes_every_uncommitted_block_on_a_new_slot_then_answers_null() {
    let node = devnet();
    explicit_only(&node);
    assert_eq!(
        node.result("dev_commit", "[]"),
        Value::Null,
        "nothing to commit"
    );
    node.result("dev_mine", "[5]");
    let scanned = node
        .result("ledger_getLastScannedL1Height", "[]")
        .as_u64()
        .unwrap();
    let c = node.result("dev_commit", "[]");
    assert_eq!(c["l2StartBlockNumber"], 1, "{c}");
    assert_eq!(c["l2EndBlockNumber"], 5, "{c}");
    let slot = c["foundInL1"].as_u64().expect("a slot");
    assert_eq!(slot, scanned + 1, "a new DA slot");
    assert_eq!(node.result("ledger_getLastScannedL1Height", "[]"), slot);
    assert_eq!(
        node.result(
            "ledger_getSequencerCommitmentsOnSlotByNumber",
            &format!("[{slot}]")
        ),
        json!([c])
    );
    for h in 1..=5 {
        assert_eq!(node.status(h), "Finalized", "height {h}");
    }
    assert_eq!(
        node.result("dev_commit", "[]"),
        Value::Null,
        "all committed"
    );
    node.result("dev_mine", "[2]");
    let b6 = node.result("ledger_getSoftConfirmationByNumber", "[6]");
    assert_eq!(
        b6["daSlotHeight"], slot,
        "the next block points at the new slot"
    );
    let c2 = node.result("dev_commit", "[]");
    assert_eq!(
        (
            c2["l2StartBlockNumber"].as_u64(),
            c2["l2EndBlockNumber"].as_u64()
        ),
        (Some(6), Some(7))
    );
    assert_eq!(c2["foundInL1"], slot + 1);
    assert_eq!(node.status(7), "Finalized");
}

#[test]
fn dev_prove_proves_every_unproven_commitment_then_answers_null() {
    let node = devnet();
    explicit_only(&node);
    node.result("dev_mine", "[3]");
    assert_eq!(
        node.result("dev_prove", "[]"),
        Value::Null,
        "nothing committed"
    );
    node.result("dev_commit", "[]");
    node.result("dev_mine", "[3]");
    node.result("dev_commit", "[]");
    // Two slots hold the commitments: two proofs (Citrea's rule: a proof
    // proves one slot's), each on a new slot; the answer is the last.
    let p = node.result("dev_prove", "[]");
    let out = &p["proof"]["proofOutput"];
    assert_eq!(out["lastL2Height"], 6, "{p}");
    assert_eq!(out["sequencerCommitmentsRange"], json!([0, 0]));
    // 16 bytes is less than a bare receipt: the proof is one, with no
    // padding, and its journal is the proof's output.
    let bytes: Vec<u8> = p["proof"]["proof"]
        .as_array()
        .expect("proof bytes")
        .iter()
        .filter_map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
        .collect();
    let output = ledgerd::wire::read::proof_output(&out.to_string()).expect("proofOutput");
    assert_eq!(output.state_diff.len(), 4, "no padding entry");
    let checked = ledgerd::proof::check(
        &bytes,
        Some(&output),
        &ledgerd::proof::ReceiptRules::default(),
        &ledgerd::chain_rules::ForkTable::default(),
    )
    .expect("the devnet's proof is a receipt of its output");
    assert!(checked.is_fake());
    let slot = p["proof"]["height"].as_u64().expect("a slot");
    assert_eq!(node.result("ledger_getLastVerifiedBatchProof", "[]"), p);
    assert_eq!(
        node.result(
            "ledger_getVerifiedBatchProofsBySlotHeight",
            &format!("[{slot}]")
        ),
        p
    );
    let first = node.result(
        "ledger_getVerifiedBatchProofsBySlotHeight",
        &format!("[{}]", slot - 1),
    );
    assert_eq!(first["proof"]["proofOutput"]["lastL2Height"], 3, "{first}");
    for h in 1..=6 {
        assert_eq!(node.status(h), "Proven", "height {h}");
    }
    assert_eq!(node.result("dev_prove", "[]"), Value::Null, "all proven");
    node.result("dev_mine", "[1]");
    assert_eq!(node.status(7), "Trusted");
}

#[test]
fn automatic_commits_and_proofs_follow_their_settings() {
    let node = devnet();
    assert_eq!(node.result("dev_setAutoCommit", "[4]"), 16);
    assert_eq!(node.result("dev_setAutoProve", "[2]"), 1);
    node.result("dev_mine", "[40]");
    // Commitments of exactly 4 blocks, the first one proven by now.
    let mut commitments = Vec::new();
    let last = node
        .result("ledger_getLastScannedL1Height", "[]")
        .as_u64()
        .unwrap();
    for slot in 1000..=last {
        let on = node.result(
            "ledger_getSequencerCommitmentsOnSlotByNumber",
            &format!("[{slot}]"),
        );
        commitments.extend(on.as_array().cloned().unwrap_or_default());
    }
    assert!(commitments.len() >= 8, "{commitments:?}");
    for (i, c) in commitments.iter().enumerate() {
        assert_eq!(c["l2StartBlockNumber"], 4 * i as u64 + 1, "{c}");
        assert_eq!(c["l2EndBlockNumber"], 4 * i as u64 + 4, "{c}");
    }
    assert_eq!(node.status(1), "Proven");
    assert_eq!(node.status(8), "Proven", "proven two commitments at a time");
    // By Citrea's rule: a proof names the slot of its commitments (one
    // each here) and indexes that slot's list.
    let proof = node.result("ledger_getLastVerifiedBatchProof", "[]");
    let out = &proof["proof"]["proofOutput"];
    assert_eq!(out["sequencerCommitmentsRange"], json!([0, 0]), "{proof}");
    let named = node.result(
        "ledger_getSequencerCommitmentsOnSlotByHash",
        &format!("[{}]", out["daSlotHash"]),
    );
    assert_eq!(named[0]["l2EndBlockNumber"], out["lastL2Height"], "{named}");
    // Off: blocks mined now stay Trusted.
    assert_eq!(node.result("dev_setAutoCommit", "[0]"), 4);
    assert_eq!(node.result("dev_setAutoProve", "[0]"), 2);
    let before = node.head();
    node.result("dev_mine", "[30]");
    assert_eq!(node.status(before + 1), "Trusted");
    assert_eq!(node.status(before + 30), "Trusted");
}

#[test]
fn sent_transactions_and_deposits_land_in_the_next_block() {
    let node = devnet();
    node.result("dev_mine", "[2]");
    assert_eq!(node.result("dev_sendTransaction", r#"["0xdeadbeef"]"#), 3);
    assert_eq!(node.result("dev_sendTransaction", r#"{"tx":"CAFE"}"#), 3);
    assert_eq!(node.result("dev_addDeposit", r#"["0x00ff"]"#), 3);
    assert_eq!(node.result("dev_mine", "[2]"), 4);
    let b3 = node.result("ledger_getSoftConfirmationByNumber", "[3]");
    let txs = b3["txs"].as_array().expect("txs");
    assert_eq!(
        txs[txs.len() - 2..],
        [json!("deadbeef"), json!("cafe")],
        "{b3}"
    );
    assert_eq!(
        b3["depositData"].as_array().and_then(|d| d.last()),
        Some(&json!("00ff"))
    );
    let b4 = node.result("ledger_getSoftConfirmationByNumber", "[4]");
    assert!(
        !b4["txs"].to_string().contains("deadbeef"),
        "only block 3 carries it: {b4}"
    );
    // What comes next goes into block 5.
    assert_eq!(node.result("dev_sendTransaction", r#"["01"]"#), 5);
}

#[test]
fn timestamps_and_fee_rates_apply_from_the_next_block() {
    let node = devnet();
    node.result("dev_mine", "[1]");
    let t1 = node.result("ledger_getSoftConfirmationByNumber", "[1]")["timestamp"]
        .as_u64()
        .unwrap();
    assert_eq!(
        node.result("dev_setNextTimestamp", &format!("[{}]", t1 + 1000)),
        2
    );
    assert_eq!(node.result("dev_setL1FeeRate", r#"["777"]"#), 2);
    node.result("dev_mine", "[2]");
    for (h, t) in [(2, t1 + 1000), (3, t1 + 1001)] {
        let b = node.result("ledger_getSoftConfirmationByNumber", &format!("[{h}]"));
        assert_eq!(b["timestamp"], t, "{b}");
        assert_eq!(b["l1FeeRate"], 777, "{b}");
    }
    let e = node.error("dev_setNextTimestamp", &format!("[{t1}]"));
    assert_eq!(e["code"], -32602);
    assert!(
        e["data"]
            .as_str()
            .unwrap()
            .contains("before the newest block's timestamp"),
        "{e}"
    );
}

#[test]
fn dev_set_block_interval_starts_and_stops_the_clock() {
    let node = devnet();
    assert_eq!(node.result("dev_setBlockInterval", "[20]"), 0);
    node.wait_for(Duration::from_secs(20), "blocks on the clock", |n| {
        n.head() >= 3
    });
    assert_eq!(node.result("dev_setBlockInterval", "[0]"), 20);
    let stopped_at = node.head();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(node.head(), stopped_at, "no block without a timer");
    assert_eq!(node.result("dev_mine", "[1]"), stopped_at + 1);
}

#[test]
fn bad_params_answer_32602_with_a_sentence_naming_the_parameter() {
    let node = devnet();
    let cases = [
        ("dev_mine", "[-1]", "blocks"),
        ("dev_mine", "[1000001]", "1000000"),
        ("dev_mine", r#"["many"]"#, "blocks"),
        ("dev_setBlockInterval", "[]", "ms"),
        ("dev_setAutoCommit", "[1.5]", "blocks"),
        ("dev_setAutoProve", "[true]", "commitments"),
        ("dev_sendTransaction", r#"["0xabc"]"#, "tx"),
        ("dev_sendTransaction", "[]", "tx"),
        ("dev_addDeposit", r#"["xyz"]"#, "deposit"),
        ("dev_setNextTimestamp", r#"["soon"]"#, "timestamp"),
        ("dev_setL1FeeRate", "[-5]", "rate"),
    ];
    for (method, params, names) in cases {
        let e = node.error(method, params);
        assert_eq!(e["code"], -32602, "{method}{params}: {e}");
        assert_eq!(e["message"], "Invalid params");
        let data = e["data"].as_str().expect("data");
        assert!(data.contains(names), "{method}{params}: {data}");
    }
    assert_eq!(node.head(), 0, "nothing was mined");
}

#[test]
fn a_node_without_dev_answers_32601_saying_the_methods_need_dev() {
    // A node serving a stored ledger (a data dir that exists), no chain source.
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let node = Ledgerd::builder().data_dir(&data).start();
    for method in ledgerd::rpc::dev::NAMES {
        let e = node.error(method, "[1]");
        assert_eq!(e["code"], -32601, "{method}: {e}");
        let data = e["data"].as_str().expect("data");
        assert!(data.contains("--dev"), "{method}: {data}");
        assert!(data.starts_with(method), "{method}: {data}");
    }
}

#[test]
fn a_node_on_a_non_loopback_address_refuses_dev_calls_unless_allowed() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (allow, name) in [(false, "refused"), (true, "allowed")] {
        let data = dir.path().join(name);
        let mut args = vec!["--dev", "--dev-block-ms", "0"];
        if allow {
            args.push("--dev-allow-remote-control");
        }
        let node = Ledgerd::builder()
            .args(&args)
            .bind("0.0.0.0:0")
            .data_dir(&data)
            .start();
        // Called on loopback: the refusal is about where the node listens.
        let url = format!("http://127.0.0.1:{}", node.port());
        let (code, text) = post_raw(&url, &request("dev_mine", "[1]"));
        assert_eq!(code, 200);
        let answer: Value = serde_json::from_str(&text).expect("json");
        if allow {
            assert_eq!(answer["result"], 1, "{answer}");
        } else {
            assert_eq!(answer["error"]["code"], -32601, "{answer}");
            let data = answer["error"]["data"].as_str().unwrap();
            assert!(data.contains("--dev-allow-remote-control"), "{data}");
            assert!(data.contains("0.0.0.0"), "{data}");
            let (_, text) = post_raw(&url, &request("ledger_getHeadSoftConfirmationHeight", "[]"));
            assert!(text.contains(r#""result":0"#), "reads still work: {text}");
        }
    }
}

/// The calls of the determinism test, as raw request bodies.
const SCRIPT: [&str; 12] = [
    r#"{"jsonrpc":"2.0","id":1,"method":"dev_setAutoCommit","params":[3]}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"dev_mine","params":[10]}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"dev_sendTransaction","params":["0x0102"]}"#,
    r#"{"jsonrpc":"2.0","id":4,"method":"dev_setNextTimestamp","params":[1900000000]}"#,
    r#"{"jsonrpc":"2.0","id":5,"method":"dev_mine","params":[5]}"#,
    r#"{"jsonrpc":"2.0","id":6,"method":"dev_commit","params":[]}"#,
    r#"{"jsonrpc":"2.0","id":7,"method":"dev_prove","params":[]}"#,
    r#"{"jsonrpc":"2.0","id":8,"method":"dev_setAutoCommit","params":[0]}"#,
    r#"{"jsonrpc":"2.0","id":9,"method":"dev_addDeposit","params":["ff"]}"#,
    r#"{"jsonrpc":"2.0","id":10,"method":"dev_setL1FeeRate","params":[5]}"#,
    r#"{"jsonrpc":"2.0","id":11,"method":"dev_mine","params":[40]}"#,
    r#"{"jsonrpc":"2.0","id":12,"method":"dev_commit","params":[]}"#,
];

fn run_script(seed: &str) -> Vec<String> {
    let node = Ledgerd::builder()
        .dev(0, 0)
        .args(&["--dev-seed", seed, "--dev-proof-bytes", "64"])
        .start();
    let mut answers: Vec<String> = SCRIPT.iter().map(|body| node.post_raw(body).1).collect();
    answers.extend(
        every_answer(&node.url)
            .into_iter()
            .map(|(call, a)| format!("{call} {a}")),
    );
    answers
}

#[test]
fn the_same_calls_from_the_same_seed_give_byte_identical_answers() {
    let (a, b) = (run_script("7"), run_script("7"));
    assert!(a.len() > 300, "{} answers", a.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y);
    }
    assert_eq!(a.len(), b.len());
    assert!(
        a[5].contains("l2EndBlockNumber"),
        "dev_commit made one: {}",
        a[5]
    );
    let other = run_script("8");
    assert_ne!(a[5], other[5], "another seed makes another chain");
}

#[test]
fn one_height_walks_trusted_finalized_proven_by_explicit_calls_and_a_follower_shows_the_same() {
    let node = devnet();
    explicit_only(&node);
    let dir = tempfile::tempdir().expect("temp dir");
    let follower = Ledgerd::builder()
        .data_dir(&dir.path().join("follower"))
        .args(&["--upstream".to_string(), node.url.clone()])
        .start();
    node.result("dev_mine", "[3]");
    assert_eq!(node.status(2), "Trusted");
    wait_synced_with(&follower, &node);
    assert_eq!(follower.status(2), "Trusted");

    let c = node.result("dev_commit", "[]");
    assert_eq!(node.status(2), "Finalized");
    wait_synced_with(&follower, &node);
    assert_eq!(follower.status(2), "Finalized");
    let slot = c["foundInL1"].as_u64().unwrap();
    let on_slot = format!("[{slot}]");
    assert_eq!(
        follower.result("ledger_getSequencerCommitmentsOnSlotByNumber", &on_slot),
        json!([c])
    );

    let p = node.result("dev_prove", "[]");
    assert_eq!(node.status(2), "Proven");
    // A follower learns a DA slot's hash from the blocks that point at it:
    // it checks the proof (which names the commitment's slot by hash) once
    // blocks point at the slots the two calls opened.
    assert_eq!(node.result("dev_mine", "[2]"), 5);
    assert_eq!(node.status(5), "Trusted");
    wait_synced_with(&follower, &node);
    assert_eq!(follower.status(2), "Proven");
    assert_eq!(follower.result("ledger_getLastVerifiedBatchProof", "[]"), p);
    for h in 1..=5 {
        assert_eq!(follower.status(h), node.status(h), "height {h}");
    }
}

#[test]
fn reads_on_other_connections_are_answered_while_a_large_mine_runs() {
    let node = devnet();
    let url = node.url.clone();
    let mining = Arc::new(AtomicBool::new(true));
    let done = mining.clone();
    let miner = std::thread::spawn(move || {
        let (_, text) = post_raw(&url, &request("dev_mine", "[20000]"));
        done.store(false, Ordering::SeqCst);
        text
    });
    // Reads answered while the mine is still outstanding, with what they saw.
    let mut during = Vec::new();
    let start = Instant::now();
    while mining.load(Ordering::SeqCst) && start.elapsed() < Duration::from_secs(120) {
        let h = node.head();
        if mining.load(Ordering::SeqCst) {
            during.push(h);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let answer = miner.join().expect("miner");
    assert!(answer.contains(r#""result":20000"#), "{answer}");
    assert!(
        during.len() >= 3,
        "only {} reads were answered during the mine: {during:?}",
        during.len()
    );
    assert!(during.windows(2).all(|w| w[0] <= w[1]), "{during:?}");
    assert_eq!(node.head(), 20000);
}

#[test]
fn the_curl_examples_in_docs_devnet_md_answer_as_shown() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/DEVNET.md"))
        .expect("docs/DEVNET.md");
    let node = Ledgerd::builder()
        .dev(0, 0)
        .args(&["--dev-proof-bytes", "16"])
        .start();
    let lines: Vec<&str> = doc.lines().collect();
    let mut checked = 0;
    for (i, line) in lines.iter().enumerate() {
        let Some(body) = line
            .strip_prefix("$ curl -s localhost:12346 -d '")
            .and_then(|b| b.strip_suffix('\''))
        else {
            continue;
        };
        let want = lines.get(i + 1).copied().unwrap_or_default();
        let (_, got) = node.post_raw(body);
        assert_eq!(got, want, "docs/DEVNET.md line {}: {body}", i + 1);
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} curl examples found");
}

#[test]
fn the_python_example_in_docs_runs_and_passes() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/examples/test_devnet.py"
    );
    let out = std::process::Command::new("python3")
        .arg(script)
        .env("LEDGERD", common::process::BIN)
        .output()
        .expect("python3 runs (CI has it)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stdout.contains("3 passed"),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
}

// ------------------------------------------------------------- in-process

fn in_process(dir: &std::path::Path) -> Node {
    Node::builder()
        .data_dir(dir)
        .dev(DevnetConfig {
            block_ms: 0,
            proof_bytes: 16,
            ..DevnetConfig::default()
        })
        .bind("127.0.0.1:0")
        .start()
        .expect("node starts")
}

#[test]
fn node_devnet_calls_do_what_the_methods_do() {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = in_process(dir.path());
    let dev = node.devnet().expect("a --dev node has controls");
    assert_eq!(dev.set_auto_commit(0), Ok(16));
    assert_eq!(dev.set_auto_prove(0), Ok(1));
    assert_eq!(dev.mine(3), Ok(3));
    assert_eq!(dev.send_tx(&[1, 2]), Ok(4));
    assert_eq!(dev.add_deposit(&[3]), Ok(4));
    assert_eq!(dev.set_l1_fee_rate(99), Ok(4));
    assert_eq!(dev.set_next_timestamp(2_000_000_000), Ok(4));
    assert_eq!(dev.mine(1), Ok(4));
    let b4 = node
        .ledger()
        .reader()
        .unwrap()
        .soft_confirmation(4)
        .unwrap()
        .unwrap();
    assert_eq!(b4.txs.last(), Some(&vec![1, 2]));
    assert_eq!(b4.deposit_data.last(), Some(&vec![3]));
    assert_eq!((b4.l1_fee_rate, b4.timestamp), (99, 2_000_000_000));

    let c = dev.commit().unwrap().expect("a commitment");
    assert_eq!((c.l2_start_block_number, c.l2_end_block_number), (1, 4));
    assert_eq!(dev.commit(), Ok(None));
    let r = node.ledger().reader().unwrap();
    assert_eq!(r.status(4).unwrap(), Some(Status::Finalized));
    drop(r);
    let p = dev.prove().unwrap().expect("a proof");
    assert_eq!(p.proof_output.last_l2_height, 4);
    assert_eq!(dev.prove(), Ok(None));
    assert_eq!(
        node.ledger().reader().unwrap().status(1).unwrap(),
        Some(Status::Proven)
    );
    assert_eq!(dev.set_block_interval(10), Ok(0));
    common::wait_until_value(
        Duration::from_secs(20),
        "blocks on the clock (head 6)",
        || node.ledger().reader().unwrap().head_height().unwrap(),
        |h| *h >= 6,
    );
    assert_eq!(dev.set_block_interval(0), Ok(10));
    let stopped_at = dev.mine(0).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(dev.mine(0), Ok(stopped_at), "no block without a timer");

    assert!(matches!(dev.mine(1_000_001), Err(DevError::Invalid(why)) if why.contains("1000000")));
    assert!(
        matches!(dev.set_next_timestamp(5), Err(DevError::Invalid(why)) if why.contains("before"))
    );
    // The same controls answer over HTTP for other languages.
    let (_, text) = post_raw(&node.url(), &request("dev_mine", "[1]"));
    assert_eq!(
        text,
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#, stopped_at + 1)
    );

    let kept = dev.clone();
    node.shutdown();
    assert_eq!(kept.mine(1), Err(DevError::Stopped));
}

#[test]
fn a_node_without_dev_has_no_devnet_controls() {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Node::builder()
        .data_dir(dir.path())
        .bind("127.0.0.1:0")
        .start()
        .expect("node starts");
    assert!(node.devnet().is_none());
    let (_, text) = post_raw(&node.url(), &request("dev_commit", "[]"));
    assert!(text.contains("-32601") && text.contains("--dev"), "{text}");
}
