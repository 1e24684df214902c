//! The bytes -> response path without sockets, shared by the cargo-fuzz
//! target (`fuzz/fuzz_targets/rpc_body.rs` includes this file) and the
//! bounded property test in `tests/it/fuzz_regressions.rs`: a devnet-prefilled
//! LMDB ledger in a temp dir, and the checks every answer must pass.

use std::sync::Arc;

use ledgerd::ledger::{Ledger, OpenOptions};
use ledgerd::progress::Progress;
use ledgerd::rpc::{Rpc, RpcConfig};
use ledgerd::source::devnet::{Devnet, DevnetConfig};
use ledgerd::stop::Stop;
use ledgerd::sync::{SyncConfig, Syncer};
use serde_json::Value;

/// An [`Rpc`] over a real ledger with `prefill` devnet heights (the devnet
/// also writes DA slots, commitments and proofs), with small limits so that
/// fuzzed inputs reach them.
pub fn devnet_rpc(prefill: u64) -> (Rpc, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = Arc::new(Ledger::open(dir.path(), &OpenOptions::default()).expect("open ledger"));
    let progress = Arc::new(Progress::default());
    let dev = DevnetConfig {
        prefill,
        block_ms: 0,
        proof_bytes: 64,
        ..DevnetConfig::default()
    };
    let devnet = Devnet::open(
        dev,
        ledgerd::chain_rules::ForkTable::default(),
        ledger.clone(),
    )
    .expect("devnet");
    let config = SyncConfig {
        chunk: 2000,
        sequencer_pubkey: Some(devnet.public_key()),
        ..SyncConfig::default()
    };
    let mut syncer = Syncer::new(ledger.clone(), devnet, progress.clone(), config);
    syncer.catch_up(&Stop::new()).expect("devnet prefill");
    let rpc = Rpc::new(
        ledger,
        progress,
        RpcConfig {
            max_range: 50,
            max_batch: 20,
            ..RpcConfig::default()
        },
    );
    (rpc, dir)
}

fn check_response_object(v: &Value) {
    let o = v
        .as_object()
        .unwrap_or_else(|| panic!("not a response object: {v}"));
    assert_eq!(o.get("jsonrpc"), Some(&Value::from("2.0")), "{v}");
    assert!(o.contains_key("id"), "no id: {v}");
    assert!(
        o.contains_key("result") ^ o.contains_key("error"),
        "not exactly one of result and error: {v}"
    );
    assert_eq!(o.len(), 3, "extra members: {v}");
    if let Some(e) = o.get("error") {
        assert!(e["code"].is_i64(), "error code: {v}");
        assert!(e["message"].is_string(), "error message: {v}");
        assert!(
            e["data"].as_str().is_some_and(|d| !d.is_empty()),
            "error data: {v}"
        );
    }
}

/// Checks one answer of `Rpc::handle`: `None` (nothing to send), or JSON that
/// serde_json reads back, being one response object or a non-empty array of them.
pub fn check_answer(out: Option<&[u8]>) {
    let Some(out) = out else { return };
    let v: Value = serde_json::from_slice(out).unwrap_or_else(|e| {
        panic!(
            "the answer is not JSON ({e}): {:?}",
            String::from_utf8_lossy(out)
        )
    });
    match &v {
        Value::Array(items) => {
            assert!(!items.is_empty(), "an empty array answer");
            items.iter().for_each(check_response_object);
        }
        other => check_response_object(other),
    }
}
