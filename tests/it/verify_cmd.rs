//! `ledgerd verify`: real Citrea testnet blocks (Genesis era) verify with
//! `--network testnet`, and every kind of damage is refused: a changed byte,
//! a broken link, the wrong key, the wrong fork. Input as the RPC answers
//! it: a JSON-RPC response, a bare array, one object per line, stdin.
//!
//! `tests/data/README.md` says where each file comes from.

use crate::common;

use common::process::verify;
use common::run;
use serde_json::Value;

/// Citrea testnet blocks 78 and 79, as `ledger_getSoftConfirmationRange`
/// answered them in Citrea's ledger RPC docs.
const TESTNET_78_79: &str = include_str!("../data/testnet_range_78_79.json");
/// Testnet block 5470829, as `ledger_getHeadSoftConfirmation` answered it
/// in the same docs: `txs` is empty, its hash does not recompute.
const TESTNET_5470829: &str = include_str!("../data/testnet_head_5470829.json");
/// Made by scripts/vectors/make_vectors.py: Genesis 1-4, Kumquat 5-8.
const VECTORS: &str = include_str!("../data/chain_vectors.json");

const DEVNET_KEY: &str = "52f41a5076498d1ae8bdfa57d19e91e3c2c94b6de21985d099cd48cfa7aef174";

fn testnet_blocks() -> Vec<Value> {
    let answer: Value = serde_json::from_str(TESTNET_78_79).unwrap();
    answer["result"].as_array().unwrap().clone()
}

/// The vector chain's blocks as raw JSON text, one per line (l1FeeRate
/// above 2^64 stays exact: the text is cut out, never parsed into `Value`).
fn vector_lines() -> String {
    #[derive(serde::Deserialize)]
    struct Entry<'a> {
        #[serde(borrow)]
        block: &'a serde_json::value::RawValue,
    }
    #[derive(serde::Deserialize)]
    struct Vectors<'a> {
        #[serde(rename = "softConfirmations", borrow)]
        entries: Vec<Entry<'a>>,
    }
    let v: Vectors = serde_json::from_str(VECTORS).unwrap();
    v.entries
        .iter()
        .map(|e| {
            let one_line: String = e.block.get().split('\n').map(str::trim).collect();
            one_line + "\n"
        })
        .collect()
}

/// Changes the hex digit at `at` of field `field` of block `i`.
fn with_digit_changed(blocks: &[Value], i: usize, field: &str, at: usize) -> String {
    let mut blocks = blocks.to_vec();
    let s = blocks[i][field].as_str().unwrap().to_string();
    let mut digits: Vec<char> = s.chars().collect();
    digits[at] = if digits[at] == '0' { '1' } else { '0' };
    blocks[i][field] = Value::String(digits.into_iter().collect());
    serde_json::to_string(&blocks).unwrap()
}

#[test]
fn real_testnet_genesis_blocks_verify_with_network_testnet() {
    let (code, out, err) = verify(&["--network", "testnet"], TESTNET_78_79);
    assert_eq!((code, out.as_str()), (Some(0), "ok 78\nok 79\n"), "{err}");
    assert!(err.contains("2 block(s): 2 ok, 0 failed"), "{err}");
    // The same blocks from a file, and under the explicit fork table and key.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("range.json");
    std::fs::write(&path, TESTNET_78_79).unwrap();
    let out = run(
        &["verify", "--network", "testnet", path.to_str().unwrap()],
        None,
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok 78\nok 79\n");
    assert!(out.status.success());
    let key = "4682a70af1d3fae53a5a26b682e2e75f7a1de21ad5fc8d61794ca889880d39d1";
    let (code, out, _) = verify(
        &["--kumquat-height", "5546000", "--sequencer-pubkey", key],
        TESTNET_78_79,
    );
    assert_eq!((code, out.as_str()), (Some(0), "ok 78\nok 79\n"));
}

#[test]
fn a_testnet_block_with_any_hashed_or_signed_byte_changed_fails() {
    let blocks = testnet_blocks();
    let mut cases = 0;
    for (field, digits) in [
        ("daSlotHash", 64),
        ("daSlotTxsCommitment", 64),
        ("hash", 64),
        ("softConfirmationSignature", 128),
    ] {
        // First, a middle and the last digit of each field.
        for at in [0, digits / 2 + 1, digits - 1] {
            let input = with_digit_changed(&blocks, 0, field, at);
            let (code, out, _) = verify(&["--network", "testnet"], &input);
            assert_eq!(code, Some(1), "{field}[{at}]: {out}");
            assert!(out.starts_with("FAIL 78: "), "{field}[{at}]: {out}");
            cases += 1;
        }
    }
    assert_eq!(cases, 12);
    // Numbers are hashed and signed too.
    for (field, value) in [
        ("timestamp", 1726584753u64),
        ("l1FeeRate", 2500000001),
        ("daSlotHeight", 45497),
    ] {
        let mut changed = blocks.clone();
        changed[1][field] = value.into();
        let (code, out, _) = verify(
            &["--network", "testnet"],
            &serde_json::to_string(&changed).unwrap(),
        );
        assert_eq!(code, Some(1), "{field}");
        assert_eq!(
            out,
            "ok 78\nFAIL 79: hash does not recompute from the fields (Genesis rules); \
             its txs are empty: the node may withhold transaction bodies (include_tx_body = false); \
             signature does not verify (Genesis rules, testnet key)\n",
            "{field}"
        );
    }
}

#[test]
fn a_changed_signature_says_which_rules_and_key_it_was_checked_by() {
    let input = with_digit_changed(&testnet_blocks(), 1, "softConfirmationSignature", 5);
    let (code, out, _) = verify(&["--network", "testnet"], &input);
    assert_eq!(code, Some(1));
    assert_eq!(
        out,
        "ok 78\nFAIL 79: signature does not verify (Genesis rules, testnet key)\n"
    );
}

#[test]
fn a_broken_link_fails_the_block_that_does_not_link() {
    // prevHash is not hashed nor signed: only the link catches it.
    let input = with_digit_changed(&testnet_blocks(), 1, "prevHash", 0);
    let (code, out, _) = verify(&["--network", "testnet"], &input);
    assert_eq!(code, Some(1));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "ok 78");
    assert!(
        lines[1].starts_with("FAIL 79: prevHash 0a0ff107")
            && lines[1].ends_with("does not link to the hash 3a0ff107c1605867e0d9b87e9d9e20141903957c9bd6ebeec96a63711936fdc2 of 78"),
        "{out}"
    );
    // Out of order is refused too.
    let mut blocks = testnet_blocks();
    blocks.reverse();
    let (code, out, _) = verify(
        &["--network", "testnet"],
        &serde_json::to_string(&blocks).unwrap(),
    );
    assert_eq!(code, Some(1));
    assert_eq!(
        out,
        "ok 79\nFAIL 78: comes after 79 in the input: heights must increase\n"
    );
}

#[test]
fn the_wrong_key_or_the_wrong_fork_fails_every_block() {
    let (code, out, _) = verify(&["--network", "devnet"], TESTNET_78_79);
    assert_eq!(code, Some(1));
    for (line, h) in out.lines().zip([78, 79]) {
        assert!(
            line.starts_with(&format!("FAIL {h}: pubKey 4682a70a"))
                && line.contains(&format!("is not the devnet key {DEVNET_KEY}"))
                && line.ends_with("signature does not verify (Genesis rules, devnet key)"),
            "{line}"
        );
    }
    let (code, out, _) = verify(
        &["--network", "testnet", "--sequencer-pubkey", DEVNET_KEY],
        TESTNET_78_79,
    );
    assert_eq!(code, Some(1));
    assert!(
        out.contains("(Genesis rules, --sequencer-pubkey key)"),
        "{out}"
    );
    // No network: Kumquat rules for every height; the report says which would do.
    let (code, out, _) = verify(&[], TESTNET_78_79);
    assert_eq!(code, Some(1));
    assert!(
        out.starts_with(
            "FAIL 78: hash does not recompute from the fields (Kumquat rules); \
             it does by the Genesis rules: check --network / --kumquat-height; \
             signature does not verify (Kumquat rules, key of the first block)\n"
        ),
        "{out}"
    );
}

#[test]
fn a_block_whose_txs_were_withheld_fails_and_the_report_says_why_it_may() {
    let (code, out, _) = verify(&["--network", "testnet"], TESTNET_5470829);
    assert_eq!(code, Some(1));
    assert_eq!(
        out,
        "FAIL 5470829: hash does not recompute from the fields (Genesis rules); \
         its txs are empty: the node may withhold transaction bodies (include_tx_body = false); \
         signature does not verify (Genesis rules, testnet key)\n"
    );
}

#[test]
fn json_lines_arrays_and_rpc_answers_are_all_read() {
    let lines = vector_lines();
    assert_eq!(lines.lines().count(), 8);
    let all_ok: String = (1..=8).map(|h| format!("ok {h}\n")).collect();
    // One object per line, across the fork.
    let (code, out, err) = verify(&["--kumquat-height", "5"], &lines);
    assert_eq!((code, out.as_str()), (Some(0), all_ok.as_str()), "{err}");
    // A bare array, with a null where the node holds nothing.
    let array = format!("[{},null]", lines.trim_end().replace('\n', ","));
    let (code, out, err) = verify(&["--kumquat-height", "5"], &array);
    assert_eq!((code, out.as_str()), (Some(0), all_ok.as_str()));
    assert!(err.contains("1 null entr(ies) skipped"), "{err}");
    // A batch of JSON-RPC answers, one by number each.
    let batch: Vec<String> = lines
        .lines()
        .enumerate()
        .map(|(i, b)| format!(r#"{{"jsonrpc":"2.0","id":{i},"result":{b}}}"#))
        .collect();
    let (code, out, _) = verify(
        &["--kumquat-height", "5"],
        &format!("[{}]", batch.join(",")),
    );
    assert_eq!((code, out.as_str()), (Some(0), all_ok.as_str()));
    // Under one fork's rules only, the other fork's heights fail.
    let (code, out, _) = verify(&[], &lines);
    assert_eq!(code, Some(1));
    let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(failed.len(), 4, "{out}");
    assert!(
        failed
            .iter()
            .all(|l| l.contains("it does by the Genesis rules")),
        "{out}"
    );
    // A gap is not a failure, but the report says links across it were not checked.
    let gapped: String = lines
        .lines()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let (code, out, err) = verify(&["--kumquat-height", "5"], &gapped);
    assert_eq!(code, Some(0), "{out}");
    assert!(err.contains("skips heights after 2"), "{err}");
}

#[test]
fn input_that_is_not_soft_confirmations_is_refused_with_exit_2() {
    for (input, says) in [
        ("", "holds no soft confirmation"),
        ("{\"l2Height\":", "not JSON"),
        ("[1,2]", "value 1 of the input is not a soft confirmation"),
        ("{\"hello\":1}", "has no l2Height"),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"LEDGER_RPC_ERROR","data":"start must be <= end"}}"#,
            "is a JSON-RPC error answer",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":null}"#,
            "holds no soft confirmation",
        ),
    ] {
        let (code, out, err) = verify(&["--network", "testnet"], input);
        assert_eq!(code, Some(2), "{input}: {out}");
        assert_eq!(out, "", "{input}");
        assert!(err.contains(says), "{input}: {err}");
    }
    let out = run(&["verify", "/nonexistent/blocks.json"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent/blocks.json"));
    let out = run(&["verify"], None);
    assert_eq!(out.status.code(), Some(2), "no FILE is a usage error");
    let out = run(&["verify", "--network", "regtest", "-"], None);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--network: unknown network \"regtest\""));
}
