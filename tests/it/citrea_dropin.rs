//! A client written against Citrea's full node keeps working against
//! ledgerd, over real HTTP on 127.0.0.1: `ledger_getBatchProofsBySlotHeight`
//! and `..BySlotHash` answer `null` as a Citrea v0.6 full node does,
//! `health_check` passes while the head moves and fails with Citrea's
//! words when it does not, and a browser's CORS preflight gets the headers
//! it asks for.

use crate::common;

use std::time::Duration;

use common::http::request as http;
use common::Ledgerd;
use serde_json::Value;

#[test]
fn batch_proofs_by_slot_answer_null_as_a_citrea_full_node_does() {
    let node = Ledgerd::builder().dev(200, 0).start();
    // Slot 1039 holds a verified proof (docs/API.md): a full node still
    // answers null here, its verified proofs are method 11's.
    assert!(!node
        .result("ledger_getVerifiedBatchProofsBySlotHeight", "[1039]")
        .is_null());
    for wire in ["[1039]", "[\"0x40f\"]", "[1]"] {
        assert_eq!(
            node.result("ledger_getBatchProofsBySlotHeight", wire),
            Value::Null
        );
    }
    let hash = node.result("ledger_getSoftConfirmationByNumber", "[1]")["daSlotHash"].clone();
    let params = format!("[{hash}]");
    assert_eq!(
        node.result("ledger_getBatchProofsBySlotHash", &params),
        Value::Null
    );
    // Parameters are still checked, with a sentence.
    let e = node.error("ledger_getBatchProofsBySlotHash", "[\"0x12\"]");
    assert_eq!(e["code"], -32602, "{e}");
    let e = node.error("ledger_getBatchProofsBySlotHeight", "[]");
    assert_eq!(e["code"], -32602, "{e}");
    assert!(e["data"].as_str().unwrap().contains("height"), "{e}");
}

#[test]
fn health_check_passes_while_blocks_come_and_fails_as_citrea_when_they_stop() {
    // A block every 200 ms: the head moves.
    let node = Ledgerd::builder().dev(5, 200).start();
    node.wait_for(Duration::from_secs(20), "a live block", |n| n.head() > 6);
    assert_eq!(node.result("health_check", "[]"), Value::Null);
    node.stop();

    // A follower whose upstream is gone: its head stops.
    let upstream = Ledgerd::builder().dev(30, 0).start();
    let follower = Ledgerd::builder()
        .args(&["--upstream", upstream.url.as_str()])
        .start();
    follower.wait_for(Duration::from_secs(30), "the catch-up", |f| f.head() == 30);
    drop(upstream);
    // Blocks are 1 s apart (devnet timestamps): failing after 1.5 s.
    let e = follower.wait_for_value(
        Duration::from_secs(10),
        "health_check to fail",
        |f| f.call("health_check", "[]"),
        |a| a.get("error").is_some(),
    )["error"]
        .clone();
    assert_eq!(e["code"], -32603, "{e}");
    assert_eq!(e["message"], "Internal error", "{e}");
    let data = e["data"].as_str().unwrap();
    assert!(
        data.starts_with("Block number is not increasing"),
        "Citrea's words first: {data}"
    );
    assert!(data.contains("the head is 30"), "{data}");

    // A devnet that makes blocks only when asked is not stuck.
    let quiet = Ledgerd::builder().dev(30, 0).start();
    std::thread::sleep(Duration::from_millis(1600));
    assert_eq!(quiet.result("health_check", "[]"), Value::Null);
    // Fewer than 2 blocks: Citrea passes without looking (a node serving
    // an empty ledger, no source: a data dir that exists, with nothing in it).
    let stored = tempfile::tempdir().unwrap();
    let empty = Ledgerd::builder().data_dir(stored.path()).start();
    assert_eq!(empty.result("health_check", "[]"), Value::Null);
}

#[test]
fn a_preflight_allows_the_headers_it_asks_for() {
    let node = Ledgerd::builder().dev(3, 0).start();
    let preflight = |asked: &str| {
        http(
            node.addr,
            "OPTIONS",
            "/",
            &[
                ("Origin", "http://explorer.test"),
                ("Access-Control-Request-Method", "POST"),
                ("Access-Control-Request-Headers", asked),
            ],
            "",
        )
    };
    let a = preflight("authorization, content-type, x-api-key");
    assert_eq!(a.status, 204);
    assert_eq!(
        a.header("access-control-allow-headers"),
        Some("authorization, content-type, x-api-key")
    );
    assert_eq!(a.header("access-control-allow-origin"), Some("*"));
    assert_eq!(
        a.header("vary"),
        Some("Access-Control-Request-Headers"),
        "caches must key on what was asked"
    );
    // What is not a list of header names is not echoed.
    let a = preflight("x-ok, <script>");
    assert_eq!(a.status, 204);
    assert_eq!(
        a.header("access-control-allow-headers"),
        Some("Content-Type")
    );
}
