//! `Rpc::handle` end to end over a real ledger in a temp dir: every method's
//! answers, not-found and error rows on ledger contents a test writes itself.
//! The envelope rows of the contract (parse errors, batches, ids,
//! notifications, members) have their one home over real HTTP in
//! `tests/it/protocol.rs`, and deep nesting in `tests/it/hostile.rs`.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{Rpc, RpcConfig};
use crate::ledger::{Ledger, OpenOptions};
use crate::progress::Progress;
use crate::types::{
    diff_sorted, sample_block, sample_commitment, sample_proof, Hash, SoftConfirmation, Status,
    VerifiedBatchProof,
};

struct Node {
    rpc: Rpc,
    progress: Arc<Progress>,
    ledger: Arc<Ledger>,
    _dir: tempfile::TempDir,
}

fn node_with(config: RpcConfig) -> Node {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = Arc::new(Ledger::open(dir.path(), &OpenOptions::default()).expect("open ledger"));
    let progress = Arc::new(Progress::default());
    Node {
        rpc: Rpc::new(ledger.clone(), progress.clone(), config),
        progress,
        ledger,
        _dir: dir,
    }
}

fn node() -> Node {
    node_with(RpcConfig::default())
}

fn h(n: u8) -> Hash {
    [n; 32]
}

/// A block whose hash is `h(height)`, linked to the one before, its fee
/// above `u64::MAX`.
fn sc(height: u64) -> SoftConfirmation {
    SoftConfirmation {
        hash: h(height as u8),
        prev_hash: h(height as u8 - 1),
        l1_fee_rate: u128::MAX - height as u128,
        ..sample_block(height)
    }
}

/// The proof verified on slot 6: 300 bytes, proving up to height 2.
fn proof() -> VerifiedBatchProof {
    VerifiedBatchProof {
        proof: (0..300).map(|i| i as u8).collect(),
        ..sample_proof(6, 2)
    }
}

/// Heights 1..=3 (1-2 finalized by a commitment on slot 4, proven on slot 6),
/// DA slots 4 and 6 with hashes, genesis root, last scanned slot 7.
fn filled() -> Node {
    let n = node();
    {
        let mut w = n.ledger.writer().expect("writer");
        w.set_genesis_state_root(&h(0x99)).expect("genesis");
        for height in 1..=3 {
            w.put_soft_confirmation(&sc(height)).expect("put");
        }
        w.put_da_slot_hash(4, &h(0xa4)).expect("slot hash");
        w.add_commitments(4, &[sample_commitment(4, 1, 2)])
            .expect("commitments");
        w.raise_status(1, 2, Status::Finalized).expect("finalize");
        w.put_da_slot_hash(5, &h(0xa5)).expect("slot hash");
        w.put_da_slot_hash(6, &h(0xa6)).expect("slot hash");
        w.put_proof(6, &proof()).expect("proof");
        w.raise_status(1, 2, Status::Proven).expect("prove");
        w.set_last_scanned_l1(7).expect("scanned");
        w.commit().expect("commit");
    }
    n
}

fn call(n: &Node, body: &str) -> Value {
    let out = n.rpc.handle(body.as_bytes()).expect("a response");
    serde_json::from_slice(&out)
        .unwrap_or_else(|e| panic!("invalid JSON ({e}): {}", String::from_utf8_lossy(&out)))
}

fn req(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params, "id": 1}).to_string()
}

fn result(n: &Node, method: &str, params: Value) -> Value {
    let v = call(n, &req(method, params));
    assert_eq!(v["jsonrpc"], "2.0");
    assert_eq!(v["id"], 1);
    assert!(v.get("error").is_none(), "{method}: {v}");
    v["result"].clone()
}

fn error(n: &Node, body: &str) -> (i64, String, String, Value) {
    let v = call(n, body);
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert!(v.get("result").is_none(), "{v}");
    let e = &v["error"];
    let data = e["data"].as_str().expect("data is a string").to_string();
    assert!(!data.is_empty());
    (
        e["code"].as_i64().expect("code"),
        e["message"].as_str().expect("message").to_string(),
        data,
        v["id"].clone(),
    )
}

fn method_error(n: &Node, method: &str, params: Value) -> (i64, String, String) {
    let (code, message, data, id) = error(n, &req(method, params));
    assert_eq!(id, 1);
    (code, message, data)
}

/// [`method_error`]'s code and data.
fn code_and_data(n: &Node, method: &str, params: Value) -> (i64, String) {
    let (code, _, data) = method_error(n, method, params);
    (code, data)
}

// ---- methods over a real ledger -------------------------------------------

#[test]
fn empty_ledger_answers_null_and_zero() {
    let n = node();
    for (method, want) in [
        ("ledger_getHeadSoftConfirmation", Value::Null),
        ("ledger_getHeadSoftConfirmationHeight", json!(0)),
        ("ledger_getLastScannedL1Height", json!(0)),
        ("ledger_getL2GenesisStateRoot", Value::Null),
        ("ledger_getLastVerifiedBatchProof", Value::Null),
    ] {
        assert_eq!(result(&n, method, json!([])), want, "{method}");
    }
    for (method, height) in [
        ("ledger_getSoftConfirmationByNumber", 1),
        ("ledger_getSoftConfirmationStatus", 0),
    ] {
        assert_eq!(result(&n, method, json!([height])), Value::Null, "{method}");
    }
    let status = code_and_data(&n, "ledger_getSoftConfirmationStatus", json!([1]));
    let want = "Soft confirmation at height 1 not processed yet.";
    assert_eq!(status, (-32001, want.into()));
}

#[test]
fn soft_confirmations_by_number_hash_and_head() {
    let n = filled();
    let by_number = |params| result(&n, "ledger_getSoftConfirmationByNumber", params);
    let by_hash = |params| result(&n, "ledger_getSoftConfirmationByHash", params);
    // The raw text answer (a serde_json Value would turn the u128 fee into a float).
    let raw = |height: u64| {
        let body = req("ledger_getSoftConfirmationByNumber", json!([height]));
        String::from_utf8(n.rpc.handle(body.as_bytes()).expect("answer")).expect("utf-8")
    };
    let two = by_number(json!([2]));
    let raw_two = raw(2);
    let sc_text = raw_two
        .strip_prefix(r#"{"jsonrpc":"2.0","id":1,"result":"#)
        .and_then(|t| t.strip_suffix('}'))
        .expect("envelope");
    let back = crate::wire::read::soft_confirmation(sc_text).expect("shape");
    assert_eq!(back, sc(2));
    assert_eq!(by_number(json!(["0x2"])), two);
    assert_eq!(by_number(json!({"number": "2"})), two);
    assert_eq!(by_hash(json!([hex::encode(h(2))])), two);
    let upper = format!("0x{}", hex::encode_upper(h(2)));
    assert_eq!(by_hash(json!({ "hash": upper })), two);
    for height in [4, 0] {
        assert_eq!(by_number(json!([height])), Value::Null, "{height}");
    }
    assert_eq!(by_hash(json!([hex::encode(h(0x77))])), Value::Null);
    let head = |method| result(&n, method, json!([]));
    assert_eq!(head("ledger_getHeadSoftConfirmation")["l2Height"], 3);
    assert_eq!(head("ledger_getHeadSoftConfirmationHeight"), 3);
    // l1FeeRate keeps all 128 bits on the wire.
    let (text, fee) = (raw(1), u128::MAX - 1);
    assert!(text.contains(&format!("\"l1FeeRate\":{fee},")), "{text}");
}

#[test]
fn ranges() {
    let n = filled();
    let m = "ledger_getSoftConfirmationRange";
    let two = result(&n, m, json!([1, 2]));
    let items = two.as_array().expect("array");
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["l2Height"], 1);
    assert_eq!(items[1]["prevHash"], items[0]["hash"]);
    let holes = result(&n, m, json!({"start": 2, "end": "0x6"}));
    let items = holes.as_array().expect("array");
    assert_eq!(items.len(), 5);
    assert_eq!(items[1]["l2Height"], 3);
    assert!(items[2..].iter().all(Value::is_null));
    let one = result(&n, m, json!([3, 3]));
    assert_eq!(one.as_array().map(Vec::len), Some(1));

    let (code, message, data) = method_error(&n, m, json!([3, 2]));
    let what = (code, message.as_str(), data.as_str());
    assert_eq!(what, (-32001, "LEDGER_RPC_ERROR", "start must be <= end"));
    let too_large = (-32001, "requested range too large. Max: 1000".to_string());
    assert_eq!(code_and_data(&n, m, json!([1, 1001])), too_large);
    let ok = result(&n, m, json!([1, 1000]));
    assert_eq!(ok.as_array().map(Vec::len), Some(1000));
    assert_eq!(code_and_data(&n, m, json!([0, u64::MAX])), too_large);
    let (code, _, data) = method_error(&n, m, json!([1]));
    assert_eq!(code, -32602);
    assert!(data.contains("`end`"), "{data}");
}

#[test]
fn range_limit_is_configurable() {
    let n = node_with(RpcConfig {
        max_range: 2,
        max_batch: 50,
        ..RpcConfig::default()
    });
    let m = "ledger_getSoftConfirmationRange";
    assert_eq!(result(&n, m, json!([5, 6])), json!([null, null]));
    let too_large = (-32001, "requested range too large. Max: 2".into());
    assert_eq!(code_and_data(&n, m, json!([5, 7])), too_large);
}

#[test]
fn statuses() {
    let n = filled();
    let m = "ledger_getSoftConfirmationStatus";
    assert_eq!(result(&n, m, json!([1])), "Proven");
    assert_eq!(result(&n, m, json!(["2"])), "Proven");
    assert_eq!(result(&n, m, json!({"number": 3})), "Trusted");
    assert_eq!(result(&n, m, json!([0])), Value::Null);
    let (code, message, data) = method_error(&n, m, json!([4]));
    let want = "Soft confirmation at height 4 not processed yet.";
    let what = (code, message.as_str(), data.as_str());
    assert_eq!(what, (-32001, "LEDGER_RPC_ERROR", want));
}

#[test]
fn commitments() {
    let n = filled();
    let want = json!([{"foundInL1": 4, "merkleRoot": hex::encode(h(1)),
                       "l2StartBlockNumber": 1, "l2EndBlockNumber": 2}]);
    let m = "ledger_getSequencerCommitmentsOnSlotByNumber";
    assert_eq!(result(&n, m, json!([4])), want);
    assert_eq!(result(&n, m, json!({"height": "0x4"})), want);
    assert_eq!(result(&n, m, json!([5])), Value::Null);
    assert_eq!(result(&n, m, json!([999])), Value::Null);
    let m = "ledger_getSequencerCommitmentsOnSlotByHash";
    assert_eq!(result(&n, m, json!([hex::encode(h(0xa4))])), want);
    let prefixed = format!("0x{}", hex::encode(h(0xa4)));
    assert_eq!(result(&n, m, json!({ "hash": prefixed })), want);
    assert_eq!(result(&n, m, json!([hex::encode(h(0xa5))])), Value::Null);
    assert_eq!(result(&n, m, json!([hex::encode(h(0x01))])), Value::Null);
}

#[test]
fn proofs() {
    let n = filled();
    let by_slot = result(&n, "ledger_getVerifiedBatchProofsBySlotHeight", json!([6]));
    let back = crate::wire::read::verified_batch_proof(&by_slot.to_string()).expect("shape");
    assert_eq!(diff_sorted(back.expect("some")), diff_sorted(proof()));
    assert_eq!(by_slot["proof"]["height"], 6);
    let state_diff = &by_slot["proof"]["proofOutput"]["stateDiff"];
    assert_eq!(state_diff["01"], Value::Null);
    let last = result(&n, "ledger_getLastVerifiedBatchProof", json!([]));
    assert_eq!(last, by_slot);
    let m = "ledger_getVerifiedBatchProofsBySlotHeight";
    assert_eq!(result(&n, m, json!({"height": 4})), Value::Null);
    assert_eq!(result(&n, m, json!([7])), Value::Null);
}

#[test]
fn counters() {
    let n = filled();
    let root = result(&n, "ledger_getL2GenesisStateRoot", json!([]));
    assert_eq!(root, json!(vec![0x99u8; 32]));
    assert_eq!(result(&n, "ledger_getLastScannedL1Height", json!([])), 7);
}

#[test]
fn sync_status_under_both_names() {
    let n = node();
    let synced = json!({"l1Status": {"Synced": 0}, "l2Status": {"Synced": 0}});
    assert_eq!(result(&n, "svc_syncStatus", json!([])), synced);
    n.progress.l1_source_head.store(8, Relaxed);
    n.progress.l1_synced.store(8, Relaxed);
    n.progress.l2_source_head.store(10, Relaxed);
    n.progress.stored_l2(4, 4);
    let syncing = json!({"l1Status": {"Synced": 8},
                         "l2Status": {"Syncing": {"headBlockNumber": 10, "syncedBlockNumber": 4}}});
    assert_eq!(result(&n, "svc_syncStatus", json!([])), syncing);
    assert_eq!(result(&n, "citrea_syncStatus", json!({})), syncing);
}

#[test]
fn bad_params_are_invalid_params() {
    let n = filled();
    let cases = [
        ("ledger_getSoftConfirmationByNumber", json!([])),
        ("ledger_getSoftConfirmationByNumber", json!([-1])),
        ("ledger_getSoftConfirmationByNumber", json!([1.5])),
        ("ledger_getSoftConfirmationByNumber", json!(["abc"])),
        ("ledger_getSoftConfirmationByNumber", json!([true])),
        ("ledger_getSoftConfirmationByNumber", json!({"height": 1})),
        ("ledger_getSoftConfirmationByHash", json!(["abcd"])),
        ("ledger_getSoftConfirmationByHash", json!([7])),
        ("ledger_getSoftConfirmationStatus", json!([])),
        (
            "ledger_getSequencerCommitmentsOnSlotByNumber",
            json!([null]),
        ),
        (
            "ledger_getSequencerCommitmentsOnSlotByHash",
            json!({"number": 1}),
        ),
        (
            "ledger_getVerifiedBatchProofsBySlotHeight",
            json!(["18446744073709551616"]),
        ),
    ];
    for (method, params) in cases {
        let (code, message, data) = method_error(&n, method, params.clone());
        let what = (code, message.as_str());
        assert_eq!(what, (-32602, "Invalid params"), "{method} {params}");
        assert!(data.len() > 20, "{data}");
    }
    // Big integer beyond u64 in the raw text.
    let body = r#"{"jsonrpc":"2.0","method":"ledger_getSoftConfirmationByNumber","params":[18446744073709551616],"id":1}"#;
    assert_eq!(error(&n, body).0, -32602);
}

#[test]
fn a_batch_mixes_results_and_errors_in_order() {
    let n = filled();
    let body = format!(
        "[{},{},{},{}]",
        req("ledger_getHeadSoftConfirmationHeight", json!([])),
        json!({"jsonrpc": "2.0", "method": "ledger_getSoftConfirmationRange", "params": [2, 1], "id": "b"}),
        json!({"jsonrpc": "2.0", "method": "ledger_getSoftConfirmationStatus", "params": [1], "id": null}),
        json!({"jsonrpc": "2.0", "method": "nope", "params": [], "id": 4}),
    );
    let v = call(&n, &body);
    let items = v.as_array().expect("array");
    assert_eq!(items.len(), 4);
    let result = |i: usize| (items[i]["id"].clone(), items[i]["result"].clone());
    let code = |i: usize| (items[i]["id"].clone(), items[i]["error"]["code"].clone());
    assert_eq!(result(0), (json!(1), json!(3)));
    assert_eq!(code(1), (json!("b"), json!(-32001)));
    assert_eq!(result(2), (Value::Null, json!("Proven")));
    assert_eq!(code(3), (json!(4), json!(-32601)));
}

#[test]
fn arbitrary_bytes_never_panic() {
    let n = filled();
    // A tiny deterministic fuzz pass over mutations of valid requests.
    let by_hash = req(
        "ledger_getSoftConfirmationByHash",
        json!([hex::encode(h(2))]),
    );
    let by_slot = req(
        "ledger_getVerifiedBatchProofsBySlotHeight",
        json!({"height": 6}),
    );
    let range = req("ledger_getSoftConfirmationRange", json!([1, 3]));
    let seeds = [range, by_hash, format!("[{by_slot}]")];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for seed in &seeds {
        for _ in 0..2000 {
            let mut bytes = seed.clone().into_bytes();
            for _ in 0..3 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let at = (state as usize) % bytes.len();
                bytes[at] = (state >> 32) as u8;
            }
            if let Some(out) = n.rpc.handle(&bytes) {
                serde_json::from_slice::<Value>(&out).expect("always valid JSON");
            }
        }
    }
}
