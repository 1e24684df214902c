//! Every method over real HTTP against a real ledgerd on a devnet ledger:
//! the shapes of `docs/API.md`, the not-found and error rows of
//! `contract.md`, and the chain rules recomputed from what is served.

use crate::common;

use std::collections::BTreeSet;

use common::{hash32, run_to_exit, Ledgerd};
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use serde_json::Value;
use sha2::{Digest, Sha256};

const PREFILL: u64 = 300;

fn devnet(prefill: u64, extra: &[&str]) -> (tempfile::TempDir, Ledgerd) {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Ledgerd::builder()
        .dev(prefill, 0)
        .data_dir(dir.path())
        .args(extra)
        .start();
    (dir, node)
}

fn u64_of(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{v} is not a non-negative integer"))
}

fn assert_hex(v: &Value, bytes: usize) {
    let s = v.as_str().unwrap_or_else(|| panic!("{v} is not a string"));
    assert_eq!(s.len(), bytes * 2, "{s} should be {bytes} bytes of hex");
    assert!(
        s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{s} is lowercase hex without 0x"
    );
}

/// Checks a soft confirmation object has exactly the spec's fields with their types.
fn assert_soft_confirmation_shape(sc: &Value) {
    let keys: BTreeSet<&str> = sc
        .as_object()
        .unwrap_or_else(|| panic!("{sc} is not an object"))
        .keys()
        .map(|k| k.as_str())
        .collect();
    let expected: BTreeSet<&str> = [
        "l2Height",
        "daSlotHeight",
        "daSlotHash",
        "daSlotTxsCommitment",
        "hash",
        "prevHash",
        "txs",
        "stateRoot",
        "softConfirmationSignature",
        "pubKey",
        "depositData",
        "l1FeeRate",
        "timestamp",
    ]
    .into_iter()
    .collect();
    assert_eq!(keys, expected);
    for k in ["l2Height", "daSlotHeight", "timestamp"] {
        u64_of(&sc[k]);
    }
    assert!(sc["l1FeeRate"].is_number(), "{}", sc["l1FeeRate"]);
    for k in [
        "daSlotHash",
        "daSlotTxsCommitment",
        "hash",
        "prevHash",
        "stateRoot",
        "pubKey",
    ] {
        assert_hex(&sc[k], 32);
    }
    assert_hex(&sc["softConfirmationSignature"], 64);
    for k in ["txs", "depositData"] {
        for blob in sc[k]
            .as_array()
            .unwrap_or_else(|| panic!("{k} is an array"))
        {
            let s = blob.as_str().expect("blobs are hex strings");
            assert!(hex::decode(s).is_ok() && s == s.to_lowercase(), "{s}");
        }
    }
}

/// SHA-256 over the contract's field order, computed here, not by ledgerd.
fn recompute_hash(sc: &Value) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(u64_of(&sc["l2Height"]).to_be_bytes());
    h.update(u64_of(&sc["daSlotHeight"]).to_be_bytes());
    h.update(hash32(&sc["daSlotHash"]));
    h.update(hash32(&sc["daSlotTxsCommitment"]));
    for k in ["txs", "depositData"] {
        for blob in sc[k].as_array().expect("array") {
            h.update(hex::decode(blob.as_str().expect("hex")).expect("hex"));
        }
    }
    // l1FeeRate is a u128 JSON number: read it from its text.
    let fee: u128 = sc["l1FeeRate"].to_string().parse().expect("u128 fee");
    h.update(fee.to_be_bytes());
    h.update(u64_of(&sc["timestamp"]).to_be_bytes());
    h.finalize().into()
}

/// The contract's Merkle root: leaves as they are, parent = SHA-256(l || r), odd last promoted.
fn merkle_root(mut level: Vec<[u8; 32]>) -> [u8; 32] {
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|pair| match pair {
                [l, r] => {
                    let mut h = Sha256::new();
                    h.update(l);
                    h.update(r);
                    h.finalize().into()
                }
                [one] => *one,
                _ => unreachable!(),
            })
            .collect();
    }
    level[0]
}

fn range(node: &Ledgerd, from: u64, to: u64) -> Vec<Value> {
    let mut out = Vec::new();
    let mut start = from;
    while start <= to {
        let end = to.min(start + 999);
        let part = node.result(
            "ledger_getSoftConfirmationRange",
            &format!("[{start},{end}]"),
        );
        out.extend(part.as_array().expect("range is an array").iter().cloned());
        start = end + 1;
    }
    out
}

#[test]
fn every_served_block_recomputes_its_hash_verifies_its_signature_and_links() {
    let (_dir, node) = devnet(PREFILL, &[]);
    let blocks = range(&node, 1, PREFILL);
    assert_eq!(blocks.len() as u64, PREFILL);
    let mut prev = [0u8; 32];
    let key = hash32(&blocks[0]["pubKey"]);
    let verifier = VerifyingKey::from_bytes(&key).expect("pubKey is an Ed25519 key");
    for (i, sc) in blocks.iter().enumerate() {
        assert_soft_confirmation_shape(sc);
        assert_eq!(u64_of(&sc["l2Height"]), i as u64 + 1);
        let hash = hash32(&sc["hash"]);
        assert_eq!(recompute_hash(sc), hash, "hash of {}", i + 1);
        assert_eq!(hash32(&sc["prevHash"]), prev, "prevHash of {}", i + 1);
        assert_eq!(hash32(&sc["pubKey"]), key, "one sequencer key");
        let sig: [u8; 64] = hex::decode(sc["softConfirmationSignature"].as_str().expect("hex"))
            .expect("hex")
            .try_into()
            .expect("64 bytes");
        verifier
            .verify(&hash, &Signature::from_bytes(&sig))
            .unwrap_or_else(|e| panic!("signature of {}: {e}", i + 1));
        prev = hash;
    }
    // The devnet's blocks carry txs and deposits sometimes, so the hash covers them.
    assert!(blocks
        .iter()
        .any(|b| !b["txs"].as_array().unwrap().is_empty()));
    assert!(blocks
        .iter()
        .any(|b| !b["depositData"].as_array().unwrap().is_empty()));
}

#[test]
fn every_method_answers_with_the_shapes_and_values_of_the_spec() {
    let (_dir, node) = devnet(PREFILL, &[]);

    // 1: sync status, under both names.
    let status = node.result("svc_syncStatus", "[]");
    assert_eq!(status, node.result("citrea_syncStatus", "[]"));
    assert_eq!(status["l2Status"]["Synced"], PREFILL);
    let scanned = u64_of(&status["l1Status"]["Synced"]);

    // 10, 13: counters.
    assert_eq!(
        node.result("ledger_getHeadSoftConfirmationHeight", "[]"),
        PREFILL
    );
    assert_eq!(node.result("ledger_getLastScannedL1Height", "[]"), scanned);

    // 2, 3, 9: one block by number, by hash (any spelling), the head.
    let first = node.result("ledger_getSoftConfirmationByNumber", "[1]");
    assert_soft_confirmation_shape(&first);
    let hash = first["hash"].as_str().unwrap().to_string();
    for spelled in [
        hash.clone(),
        format!("0x{hash}"),
        hash.to_uppercase(),
        format!("0x{}", hash.to_uppercase()),
    ] {
        assert_eq!(
            node.result(
                "ledger_getSoftConfirmationByHash",
                &format!("[\"{spelled}\"]")
            ),
            first
        );
    }
    for params in ["[\"1\"]", "[\"0x1\"]", "{\"number\":1}"] {
        assert_eq!(
            node.result("ledger_getSoftConfirmationByNumber", params),
            first
        );
    }
    let head = node.result("ledger_getHeadSoftConfirmation", "[]");
    assert_eq!(head["l2Height"], PREFILL);
    assert_eq!(
        head,
        node.result(
            "ledger_getSoftConfirmationByNumber",
            &format!("[{PREFILL}]")
        )
    );

    // 4: a range is every block, in order, both ends included.
    let blocks = range(&node, 1, PREFILL);
    assert_eq!(blocks[0], first);
    assert_eq!(blocks[PREFILL as usize - 1], head);
    let two = node.result("ledger_getSoftConfirmationRange", "[10,11]");
    assert_eq!(two.as_array().unwrap(), &blocks[9..11]);
    assert_eq!(two[1]["prevHash"], two[0]["hash"]);
    assert_eq!(
        node.result(
            "ledger_getSoftConfirmationRange",
            "{\"start\":\"0xa\",\"end\":\"11\"}"
        ),
        two
    );

    // 6: the genesis state root is 32 byte values.
    let root = node.result("ledger_getL2GenesisStateRoot", "[]");
    let root: Vec<u8> = root
        .as_array()
        .expect("array")
        .iter()
        .map(|b| u8::try_from(u64_of(b)).expect("a byte"))
        .collect();
    assert_eq!(root.len(), 32);

    // 7, 8, 11: every DA slot from the first block's slot to the last scanned.
    let first_slot = u64_of(&first["daSlotHeight"]);
    let slot_hashes: std::collections::HashMap<u64, String> = blocks
        .iter()
        .map(|b| {
            (
                u64_of(&b["daSlotHeight"]),
                b["daSlotHash"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut commitments = Vec::new();
    let mut proofs = Vec::new();
    for slot in first_slot..=scanned {
        let on_slot = node.result(
            "ledger_getSequencerCommitmentsOnSlotByNumber",
            &format!("[{slot}]"),
        );
        if let Some(list) = on_slot.as_array() {
            assert!(!list.is_empty(), "a slot without commitments answers null");
            if let Some(h) = slot_hashes.get(&slot) {
                assert_eq!(
                    node.result(
                        "ledger_getSequencerCommitmentsOnSlotByHash",
                        &format!("[\"{h}\"]")
                    ),
                    on_slot
                );
            }
            for c in list {
                let keys: BTreeSet<&str> =
                    c.as_object().unwrap().keys().map(|k| k.as_str()).collect();
                assert_eq!(
                    keys,
                    BTreeSet::from([
                        "foundInL1",
                        "merkleRoot",
                        "l2StartBlockNumber",
                        "l2EndBlockNumber"
                    ])
                );
                assert_eq!(u64_of(&c["foundInL1"]), slot);
                commitments.push(c.clone());
            }
        } else {
            assert!(on_slot.is_null(), "{on_slot}");
        }
        let proof = node.result(
            "ledger_getVerifiedBatchProofsBySlotHeight",
            &format!("[{slot}]"),
        );
        if !proof.is_null() {
            assert_eq!(proof["proof"]["height"], slot);
            proofs.push(proof);
        }
    }
    assert!(commitments.len() >= 4, "{} commitments", commitments.len());
    assert!(!proofs.is_empty(), "a 300-block devnet has a proof");

    // Commitments are contiguous from 1 and their roots recompute from served hashes.
    let hash_at = |h: u64| hash32(&blocks[h as usize - 1]["hash"]);
    let mut next = 1;
    for c in &commitments {
        let (s, e) = (
            u64_of(&c["l2StartBlockNumber"]),
            u64_of(&c["l2EndBlockNumber"]),
        );
        assert_eq!(s, next, "commitments are contiguous");
        let leaves = (s..=e).map(hash_at).collect();
        assert_eq!(
            merkle_root(leaves),
            hash32(&c["merkleRoot"]),
            "root of {s}..={e}"
        );
        next = e + 1;
    }
    let finalized = next - 1;

    // Proofs by Citrea's rule: daSlotHash names the slot whose commitments
    // the proof proves; sequencerCommitmentsRange indexes that slot's
    // commitments sorted by start (without the preproven ones). In the
    // devnet each proof proves the next slot's commitments, in order.
    let genesis: [u8; 32] = root.try_into().unwrap();
    let slot_of_hash: std::collections::HashMap<&String, u64> =
        slot_hashes.iter().map(|(n, h)| (h, *n)).collect();
    let mut proven = 0;
    for p in &proofs {
        let out = &p["proof"]["proofOutput"];
        assert!(p["proof"]["proof"]
            .as_array()
            .is_some_and(|b| !b.is_empty()));
        let named = out["daSlotHash"].as_str().expect("hex").to_string();
        let slot = slot_of_hash[&named];
        assert!(
            slot < u64_of(&p["proof"]["height"]),
            "proves an earlier slot"
        );
        let mut on_slot: Vec<&Value> = commitments
            .iter()
            .filter(|c| u64_of(&c["foundInL1"]) == slot)
            .collect();
        on_slot.sort_by_key(|c| u64_of(&c["l2StartBlockNumber"]));
        let preproven: Vec<u64> = out["preprovenCommitments"]
            .as_array()
            .expect("array")
            .iter()
            .map(u64_of)
            .collect();
        let left: Vec<&Value> = on_slot
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !preproven.contains(&(*i as u64)))
            .map(|(_, c)| c)
            .collect();
        let range = out["sequencerCommitmentsRange"].as_array().expect("pair");
        assert_eq!(range.len(), 2);
        let (ci, cj) = (u64_of(&range[0]) as usize, u64_of(&range[1]) as usize);
        let start = u64_of(&left[ci]["l2StartBlockNumber"]);
        let last = u64_of(&left[cj]["l2EndBlockNumber"]);
        assert_eq!(start, proven + 1, "the devnet proves in order");
        assert!(last <= finalized);
        let (prev_hash, prev_root) = if proven == 0 {
            ([0u8; 32], genesis)
        } else {
            (
                hash_at(proven),
                hash32(&blocks[proven as usize - 1]["stateRoot"]),
            )
        };
        assert_eq!(hash32(&out["initialStateRoot"]), prev_root);
        // Kumquat-era fields: the stored chain at both ends.
        assert_eq!(u64_of(&out["lastL2Height"]), last);
        assert_eq!(hash32(&out["prevSoftConfirmationHash"]), prev_hash);
        assert_eq!(hash32(&out["finalSoftConfirmationHash"]), hash_at(last));
        assert_eq!(
            hash32(&out["finalStateRoot"]),
            hash32(&blocks[last as usize - 1]["stateRoot"])
        );
        assert_eq!(out["sequencerPublicKey"], first["pubKey"]);
        assert!(out["stateDiff"].is_object());
        proven = last;
    }
    // 12: the last verified proof is the newest one.
    assert_eq!(
        &node.result("ledger_getLastVerifiedBatchProof", "[]"),
        proofs.last().unwrap()
    );

    // 5: statuses follow the commitments and proofs: Proven, Finalized, Trusted.
    assert!(proven > 0 && proven < finalized && finalized < PREFILL);
    for h in 1..=PREFILL {
        let want = if h <= proven {
            "Proven"
        } else if h <= finalized {
            "Finalized"
        } else {
            "Trusted"
        };
        assert_eq!(
            node.result("ledger_getSoftConfirmationStatus", &format!("[{h}]")),
            want,
            "status of {h}"
        );
    }
}

fn assert_error(error: &Value, code: i64, data: &str) {
    assert_eq!(error["code"], code, "{error}");
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
    let got = error["data"]
        .as_str()
        .unwrap_or_else(|| panic!("data is a string: {error}"));
    assert!(got.contains(data), "data {got:?} should say {data:?}");
}

#[test]
fn every_not_found_and_error_row_of_the_contract_over_http() {
    let (_dir, node) = devnet(PREFILL, &["--max-range", "50"]);
    let unknown = "ab".repeat(32);
    // Not stored: null.
    assert!(node
        .result("ledger_getSoftConfirmationByNumber", "[301]")
        .is_null());
    assert!(node
        .result(
            "ledger_getSoftConfirmationByHash",
            &format!("[\"{unknown}\"]")
        )
        .is_null());
    // Heights in a range that are not stored: null at their places.
    let tail = node.result("ledger_getSoftConfirmationRange", "[298,310]");
    let tail = tail.as_array().expect("array");
    assert_eq!(tail.len(), 13);
    assert!(tail[..3].iter().all(|b| b.is_object()));
    assert!(tail[3..].iter().all(Value::is_null));
    // Range errors.
    assert_eq!(
        node.error("ledger_getSoftConfirmationRange", "[5,1]")["data"],
        "start must be <= end"
    );
    assert_eq!(
        node.error("ledger_getSoftConfirmationRange", "[1,51]")["data"],
        "requested range too large. Max: 50"
    );
    assert_eq!(
        node.result("ledger_getSoftConfirmationRange", "[1,50]")
            .as_array()
            .map(Vec::len),
        Some(50)
    );
    let e = node.error("ledger_getSoftConfirmationRange", "[5,1]");
    assert_eq!(
        (e["code"].clone(), e["message"].clone()),
        (Value::from(-32001), Value::from("LEDGER_RPC_ERROR"))
    );
    // Status above the head.
    assert_eq!(
        node.error("ledger_getSoftConfirmationStatus", "[301]")["data"],
        "Soft confirmation at height 301 not processed yet."
    );
    // Slots without commitments or proofs, unknown slot hashes.
    assert!(node
        .result("ledger_getSequencerCommitmentsOnSlotByNumber", "[1000]")
        .is_null());
    assert!(node
        .result(
            "ledger_getSequencerCommitmentsOnSlotByNumber",
            "[999999999]"
        )
        .is_null());
    assert!(node
        .result(
            "ledger_getSequencerCommitmentsOnSlotByHash",
            &format!("[\"{unknown}\"]")
        )
        .is_null());
    assert!(node
        .result("ledger_getVerifiedBatchProofsBySlotHeight", "[1000]")
        .is_null());
    // Unknown method.
    assert_error(&node.error("ledger_nope", "[]"), -32601, "ledger_nope");
    // Bad params: each a -32602 whose data names the problem.
    for (method, params) in [
        ("ledger_getSoftConfirmationByNumber", "[-1]"),
        ("ledger_getSoftConfirmationByNumber", "[1.5]"),
        ("ledger_getSoftConfirmationByNumber", "[\"abc\"]"),
        ("ledger_getSoftConfirmationByNumber", "[true]"),
        (
            "ledger_getSoftConfirmationByNumber",
            "[18446744073709551616]",
        ),
        (
            "ledger_getSoftConfirmationByNumber",
            "[\"0x10000000000000000\"]",
        ),
        ("ledger_getSoftConfirmationByNumber", "[]"),
        ("ledger_getSoftConfirmationStatus", "{}"),
        ("ledger_getSoftConfirmationRange", "[1]"),
        ("ledger_getSoftConfirmationByHash", "[\"abcd\"]"),
        (
            "ledger_getSoftConfirmationByHash",
            &format!("[\"{unknown}00\"]"),
        ),
        (
            "ledger_getSoftConfirmationByHash",
            &format!("[\"0x{}\"]", "zz".repeat(32)),
        ),
        ("ledger_getSequencerCommitmentsOnSlotByHash", "[7]"),
        ("ledger_getVerifiedBatchProofsBySlotHeight", "[null]"),
    ] {
        let e = node.error(method, params);
        assert_eq!(e["code"], -32602, "{method} {params}: {e}");
        assert_eq!(e["message"], "Invalid params");
        let data = e["data"].as_str().expect("data string");
        assert!(
            data.len() > 10,
            "{method} {params}: data {data:?} says what to fix"
        );
    }
}

#[test]
fn an_empty_ledger_answers_null_and_zero() {
    let dir = tempfile::tempdir().expect("temp dir");
    // No chain source: it serves the (empty) stored ledger.
    let node = Ledgerd::builder().data_dir(dir.path()).start();
    assert!(node
        .result("ledger_getHeadSoftConfirmation", "[]")
        .is_null());
    assert_eq!(node.result("ledger_getHeadSoftConfirmationHeight", "[]"), 0);
    assert_eq!(node.result("ledger_getLastScannedL1Height", "[]"), 0);
    assert!(node.result("ledger_getL2GenesisStateRoot", "[]").is_null());
    assert!(node
        .result("ledger_getLastVerifiedBatchProof", "[]")
        .is_null());
    assert!(node
        .result("ledger_getSoftConfirmationByNumber", "[1]")
        .is_null());
    assert_eq!(
        node.result("ledger_getSoftConfirmationRange", "[1,2]"),
        serde_json::json!([null, null])
    );
    assert_eq!(
        node.error("ledger_getSoftConfirmationStatus", "[1]")["data"],
        "Soft confirmation at height 1 not processed yet."
    );
    assert_eq!(
        node.result("svc_syncStatus", "[]"),
        serde_json::json!({"l1Status":{"Synced":0},"l2Status":{"Synced":0}})
    );
    let (status, _) = node.stop();
    assert!(status.success());
}

#[test]
fn the_command_line_prints_help_and_version_and_names_a_bad_flag() {
    let (status, out, _) = run_to_exit(&["--help"]);
    assert!(status.success());
    for flag in [
        "--dev",
        "--dev-prefill",
        "--bind",
        "--data-dir",
        "--max-range",
        "--upstream",
    ] {
        assert!(out.contains(flag), "--help mentions {flag}");
    }
    let (status, out, _) = run_to_exit(&["--version"]);
    assert!(status.success());
    assert_eq!(out.trim(), format!("ledgerd {}", env!("CARGO_PKG_VERSION")));
    let (status, out, err) = run_to_exit(&["--frobnicate"]);
    assert_eq!(status.code(), Some(2));
    assert!(out.is_empty());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--frobnicate"), "{err}");
    let (status, _, err) = run_to_exit(&["--dev", "--dev-prefill", "ten"]);
    assert_eq!(status.code(), Some(2));
    assert!(
        err.contains("--dev-prefill") && err.contains("ten"),
        "{err}"
    );
}

#[test]
fn an_address_in_use_is_one_line_on_stderr_and_a_failed_exit() {
    let (dir, node) = devnet(0, &[]);
    let addr = node.url.trim_start_matches("http://").to_string();
    let other = tempfile::tempdir().expect("temp dir");
    let other_dir = other.path().to_str().expect("utf-8 path");
    let (status, out, err) = run_to_exit(&["--bind", &addr, "--data-dir", other_dir]);
    assert!(!status.success());
    assert!(out.is_empty(), "nothing on stdout: {out}");
    let last = err.trim().lines().last().unwrap_or_default().to_string();
    assert!(last.contains(&addr), "{err}");
    drop(node);
    drop(dir);
}

#[test]
fn every_proof_of_a_slot_is_served_with_wire_citrea_and_the_last_one_with_wire_ledgerd() {
    let (dir, node) = devnet(0, &["--dev-proof-bytes", "16", "--wire", "citrea"]);
    let slot = common::rpc::two_proofs_on_one_slot(&node);
    let on_slot = format!("[{slot}]");

    // --wire citrea: Citrea's array, every proof, in the order verified.
    let all = node.result("ledger_getVerifiedBatchProofsBySlotHeight", &on_slot);
    let list = all
        .as_array()
        .unwrap_or_else(|| panic!("{all} is not an array"));
    assert_eq!(list.len(), 2, "{all}");
    let ends: Vec<&Value> = list
        .iter()
        .map(|p| &p["proofOutput"]["lastL2Height"])
        .collect();
    assert_eq!(ends, [3, 6], "{all}");
    for p in list {
        let keys: BTreeSet<&str> = p.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, BTreeSet::from(["proof", "proofOutput"]), "{p}");
    }
    // Method 12 as Citrea v0.6.2 answers it: the first proof of the highest
    // slot (`item.value[0]`), height outside.
    let last = node.result("ledger_getLastVerifiedBatchProof", "[]");
    assert_eq!(last, serde_json::json!({"proof": list[0], "height": slot}));
    let (status, _) = node.stop();
    assert!(status.success());

    // --wire ledgerd (the default) on the same ledger: the spec's one object,
    // the proof verified last on the slot, height inside; method 12 alike.
    let ro = Ledgerd::builder().readonly().data_dir(dir.path()).start();
    let one = ro.result("ledger_getVerifiedBatchProofsBySlotHeight", &on_slot);
    let mut inner = list[1].clone();
    inner["height"] = slot.into();
    assert_eq!(one, serde_json::json!({ "proof": inner }));
    assert_eq!(ro.result("ledger_getLastVerifiedBatchProof", "[]"), one);
    // The slots before it hold one proof or none, served alike by both wires.
    assert!(ro
        .result(
            "ledger_getVerifiedBatchProofsBySlotHeight",
            &format!("[{}]", slot - 1)
        )
        .is_null());
}
