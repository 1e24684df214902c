//! A batch proof's bytes must prove its output: the risc0 receipt decodes,
//! its journal equals the `proofOutput` beside it, and it verifies against
//! the network's batch-proof image (`src/proof`).
//!
//! Checked on Citrea's real testnet proof (`tests/data`, see its README),
//! through `ledgerd verify-proof`, and on followers of a devnet, whose
//! proofs are fake receipts: accepted with no network named, refused on a
//! named one, and refused when a tampering proxy swaps the bytes.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::process::run;
use common::proxy::{Proxy, Tamper};
use common::rpc::batch;
use common::Ledgerd;
use ledgerd::chain_rules::{ForkTable, Network};
use ledgerd::proof::journal::{self, Journal};
use ledgerd::proof::receipt::{self, ReceiptKind, Verified};
use ledgerd::proof::{check, image_ids, ProofError, ReceiptRules};
use ledgerd::types::ProofOutput;
use serde_json::{json, Value};

const RECEIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/testnet_batch_proof_1686.receipt"
);
const OUTPUT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/testnet_batch_proof_1686_output.json"
);

/// The real proof's bytes, its output as JSON text, and as a record.
fn real_proof() -> (Vec<u8>, String, ProofOutput) {
    let bytes = std::fs::read(RECEIPT).expect("tests/data receipt");
    let text = std::fs::read_to_string(OUTPUT).expect("tests/data output");
    let output = ledgerd::wire::read::proof_output(&text).expect("the output reads");
    (bytes, text, output)
}

fn rules(network: Option<Network>, allow_fake_proofs: bool) -> ReceiptRules {
    ReceiptRules {
        network,
        allow_fake_proofs,
    }
}

fn testnet() -> (ReceiptRules, ForkTable) {
    (
        rules(Some(Network::Testnet), false),
        Network::Testnet.fork_table(),
    )
}

/// Where the journal starts in a receipt: before the 32-byte metadata.
fn journal_offset(bytes: &[u8]) -> usize {
    let decoded = receipt::decode(bytes).expect("a receipt");
    bytes.len() - 32 - decoded.journal().len()
}

#[test]
fn citreas_real_testnet_proof_verifies_against_the_testnet_genesis_image_under_the_pre_1_1_0_context(
) {
    let (bytes, _, output) = real_proof();
    let (rules, forks) = testnet();
    let checked = check(&bytes, Some(&output), &rules, &forks).expect("it verifies");
    assert_eq!(checked.kind, ReceiptKind::Groth16);
    assert_eq!(checked.verified, Verified::Pre110);
    assert!(matches!(checked.journal, Journal::Old(_)));
    assert_eq!(checked.journal.proof_output(), output);
    assert_eq!(
        hex::encode(checked.image.id),
        "3631d90630a3f0deb47f3a3411fe6e7ede1b0d86ad4216c75041e1a2020f009f"
    );
    assert_eq!(
        checked.image.to_string(),
        "the testnet batch-proof image (Genesis era)"
    );
    // Without an output beside it the journal is the output: it verifies too.
    assert!(check(&bytes, None, &rules, &forks).is_ok());
    // devnet's batch-0.elf is the same file as testnet's: the same image.
    let devnet = ReceiptRules {
        network: Some(Network::Devnet),
        ..rules
    };
    assert!(check(&bytes, None, &devnet, &Network::Devnet.fork_table()).is_ok());
}

#[test]
fn a_flipped_seal_byte_a_changed_journal_byte_and_the_wrong_networks_image_each_fail_with_their_own_reason(
) {
    let (bytes, _, output) = real_proof();
    let (rules, forks) = testnet();

    // The Groth16 seal: after the variant tag (u32) and its length (u64).
    let mut seal = bytes.clone();
    seal[12 + 100] ^= 0x01;
    let e = check(&seal, Some(&output), &rules, &forks)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(
            "receipt does not verify against the testnet batch-proof image (Genesis era): "
        ),
        "{e}"
    );
    // A seal point no longer on its curve: no verifier context would
    // take it, so Citrea does not retry (it retries on InvalidProof only).
    assert!(e.ends_with(": invalid receipt format"), "{e}");

    // A journal byte (in initialStateRoot): the journal no longer says what
    // the proofOutput says; alone, the claim no longer matches the journal.
    let mut changed = bytes.clone();
    changed[journal_offset(&bytes)] ^= 0x01;
    let e = check(&changed, Some(&output), &rules, &forks).unwrap_err();
    let ProofError::Mismatch(m) = &e else {
        panic!("expected a mismatch, got {e}");
    };
    assert_eq!(m.field, "initialStateRoot");
    assert!(
        e.to_string()
            .starts_with("the receipt's journal says initialStateRoot d86fc9c6"),
        "{e}"
    );
    let e = check(&changed, None, &rules, &forks)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(
            "receipt does not verify against the testnet batch-proof image (Genesis era): "
        ) && e.contains("nor under the pre-1.1.0 verifier context: claim digest does not match"),
        "{e}"
    );

    // Another network's image: mainnet's (v0.6.2's placeholder guest).
    let mainnet = rules_for(Network::Mainnet);
    let e = check(
        &bytes,
        Some(&output),
        &mainnet,
        &Network::Mainnet.fork_table(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with(
            "receipt does not verify against the mainnet batch-proof image (Genesis era): "
        ) && e.contains("nor under the pre-1.1.0 verifier context: claim digest does not match"),
        "{e}"
    );
    // nightly's image is not pinned anywhere: no proof of it verifies.
    let nightly = rules_for(Network::Nightly);
    let e = check(&bytes, None, &nightly, &Network::Nightly.fork_table()).unwrap_err();
    assert!(matches!(e, ProofError::NoImage(_)), "{e}");
}

fn rules_for(network: Network) -> ReceiptRules {
    rules(Some(network), false)
}

#[test]
fn garbage_proof_bytes_are_refused_in_a_sentence_never_a_panic() {
    let (bytes, _, output) = real_proof();
    let (rules, forks) = testnet();
    let refuse = |b: &[u8]| {
        check(b, Some(&output), &rules, &forks)
            .unwrap_err()
            .to_string()
    };
    assert!(refuse(&[]).starts_with("the proof bytes are not a risc0 receipt"));
    for cut in [1, 4, 12, 200, 268, bytes.len() / 2, bytes.len() - 1] {
        let e = refuse(&bytes[..cut]);
        assert!(
            e.starts_with("the proof bytes are not a risc0 receipt"),
            "{cut}: {e}"
        );
    }
    // A seal length of 2^63: refused without reserving that much.
    let mut huge = bytes.clone();
    huge[4..12].copy_from_slice(&(1u64 << 63).to_le_bytes());
    assert!(refuse(&huge).starts_with("the proof bytes are not a risc0 receipt"));
    assert!(refuse(&[0xff; 300]).starts_with("the proof bytes are not a risc0 receipt"));
    // A well-formed receipt whose journal is neither layout.
    let image = image_ids::batch_image(None, ledgerd::chain_rules::Fork::Kumquat).unwrap();
    let odd = receipt::make_fake(&image, vec![1, 2, 3]);
    let e = check(&odd, None, &rules, &forks).unwrap_err().to_string();
    assert!(
        e.starts_with("the receipt's journal is neither a BatchProofCircuitOutput"),
        "{e}"
    );
}

#[test]
fn fake_receipts_count_only_on_a_devnet_or_with_allow_fake_proofs() {
    let (_, _, output) = real_proof();
    let forks = Network::Testnet.fork_table();
    let journal = journal::encode(&output, None).expect("journal");
    // Output with lastL2Height 0 in the new layout: testnet's Genesis era.
    let testnet_image =
        image_ids::batch_image(Some(Network::Testnet), ledgerd::chain_rules::Fork::Genesis)
            .unwrap();
    let fake = receipt::make_fake(&testnet_image, journal.clone());
    let e = check(
        &fake,
        Some(&output),
        &rules(Some(Network::Testnet), false),
        &forks,
    )
    .unwrap_err();
    assert!(
        matches!(e, ProofError::FakeRefused(Network::Testnet)),
        "{e}"
    );
    assert!(e.to_string().contains("--allow-fake-proofs"), "{e}");
    let ok = check(
        &fake,
        Some(&output),
        &rules(Some(Network::Testnet), true),
        &forks,
    )
    .expect("allowed");
    assert!(ok.is_fake());
    // A fake must still claim the expected image with this journal.
    let e = check(&fake, None, &rules(None, false), &forks)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the fake receipt's claim is not the devnet's"),
        "{e}"
    );
    let devnet_image = image_ids::batch_image(None, ledgerd::chain_rules::Fork::Genesis).unwrap();
    let devnet_fake = receipt::make_fake(&devnet_image, journal);
    assert!(
        check(&devnet_fake, Some(&output), &rules(None, false), &forks)
            .expect("a devnet accepts its fakes")
            .is_fake()
    );
}

// ------------------------------------------------------------ verify-proof

fn verify_proof(args: &[&str], file: &Path) -> (Option<i32>, String) {
    let mut all = vec!["verify-proof"];
    all.extend_from_slice(args);
    let file = file.to_str().expect("utf-8 path");
    all.push(file);
    let out = run(&all, None);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn verify_proof_reads_rpc_answers_and_raw_bytes_and_exits_zero_only_when_the_proof_verifies() {
    let (bytes, text, _) = real_proof();
    let dir = tempfile::tempdir().expect("temp dir");
    let output: Value = serde_json::from_str(&text).unwrap();
    // Citrea's shape, the proof as hex.
    let rpc_file = dir.path().join("proof.json");
    let answer = json!({"proof": hex::encode(&bytes), "proofOutput": output});
    std::fs::write(&rpc_file, answer.to_string()).unwrap();
    let (code, out) = verify_proof(&["--network", "testnet"], &rpc_file);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("a Groth16 receipt, journal 69944 bytes"),
        "{out}"
    );
    assert!(out.contains("journal: OldBatchProofCircuitOutput"), "{out}");
    assert!(
        out.contains("stateDiff                 1306 entries"),
        "{out}"
    );
    assert!(
        out.contains("proofOutput: matches the journal, field by field"),
        "{out}"
    );
    assert!(
        out.contains("the testnet batch-proof image (Genesis era) 3631d906"),
        "{out}"
    );
    assert!(out.contains("pre-1.1.0 verifier context"), "{out}");

    let (code, out) = verify_proof(&["--network", "mainnet"], &rpc_file);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("verification: REFUSED: receipt does not verify against the mainnet"),
        "{out}"
    );

    // A JSON-RPC answer of method 11 (an array), bytes as numbers, with a
    // proofOutput that is not the journal's.
    let mut wrong = output.clone();
    wrong["finalStateRoot"] = json!("00".repeat(32));
    let array: Vec<u8> = bytes.clone();
    let envelope =
        json!({"jsonrpc": "2.0", "id": 1, "result": [{"proof": array, "proofOutput": wrong}]});
    let env_file = dir.path().join("envelope.json");
    std::fs::write(&env_file, envelope.to_string()).unwrap();
    let (code, out) = verify_proof(&["--network", "testnet"], &env_file);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("proofOutput: DIFFERS: the receipt's journal says finalStateRoot 4a60f5f6"),
        "{out}"
    );

    // Raw receipt bytes: the journal is the output.
    let raw = dir.path().join("proof.bin");
    std::fs::write(&raw, &bytes).unwrap();
    let (code, out) = verify_proof(&["--network=testnet"], &raw);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("none given beside the bytes"), "{out}");

    // Garbage: refused in a sentence; an empty file cannot be read as a proof.
    std::fs::write(&raw, b"not a receipt at all").unwrap();
    let (code, out) = verify_proof(&["--network", "testnet"], &raw);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("receipt: REFUSED: the proof bytes are not a risc0 receipt"),
        "{out}"
    );
    std::fs::write(&raw, b"").unwrap();
    let (code, out) = verify_proof(&[], &raw);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("the input is empty"), "{out}");
}

// ------------------------------------------------------------- followers

fn statuses(url: &str, head: u64) -> Vec<Value> {
    let calls: Vec<_> = (1..=head)
        .map(|h| ("ledger_getSoftConfirmationStatus", json!([h])))
        .collect();
    batch(url, &calls)
}

fn get(url: &str, path: &str) -> String {
    ureq::get(&format!("{url}{path}"))
        .call()
        .map(|r| r.into_string().unwrap_or_default())
        .unwrap_or_else(|e| match e {
            ureq::Error::Status(_, r) => r.into_string().unwrap_or_default(),
            other => panic!("GET {path}: {other}"),
        })
}

fn fake_count_in_metrics(url: &str) -> u64 {
    let metrics = get(url, "/metrics");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("ledgerd_sync_proofs_on_fake_receipts_total "))
        .and_then(|v| v.parse().ok())
        .expect("the fake-receipt counter")
}

const PREFILL: u64 = 300;

#[test]
fn a_devnet_follower_proves_on_fake_receipts_and_counts_them_and_a_named_network_follower_proves_nothing(
) {
    let dir = tempfile::tempdir().expect("temp dir");
    let upstream = Ledgerd::builder()
        .dev(PREFILL, 0)
        .data_dir(&dir.path().join("up"))
        .start();
    let up = statuses(&upstream.url, PREFILL);
    assert!(up.contains(&json!("Proven")), "the devnet proves");
    // --dev-proof-bytes (default 2048) is the size of each receipt.
    let last = common::call(&upstream.url, "ledger_getLastVerifiedBatchProof", "[]");
    assert_eq!(last["proof"]["proof"].as_array().map(Vec::len), Some(2048));

    // No network: the devnet's fakes prove, as they do on the devnet itself.
    let args = ["--upstream", &upstream.url].map(String::from);
    let devnet_follower = Ledgerd::builder()
        .data_dir(&dir.path().join("f1"))
        .args(&args)
        .start();
    devnet_follower.wait_for(Duration::from_secs(60), "the same statuses", |f| {
        f.head() == PREFILL && statuses(&f.url, PREFILL) == up
    });
    let fakes = fake_count_in_metrics(&devnet_follower.url);
    assert!(fakes > 0, "fakes counted in /metrics");
    let health: Value = serde_json::from_str(&get(&devnet_follower.url, "/health")).unwrap();
    assert_eq!(health["proofsOnFakeReceipts"], json!(fakes));
    assert_eq!(fake_count_in_metrics(&upstream.url), fakes);

    // Named network (its fork table and key set to the devnet's, so every
    // block and commitment verifies): fakes prove nothing.
    let key = common::call(&upstream.url, "ledger_getSoftConfirmationByNumber", "[1]")["pubKey"]
        .as_str()
        .expect("pubKey")
        .to_string();
    let args = [
        "--upstream",
        &upstream.url,
        "--network",
        "testnet",
        "--kumquat-height",
        "0",
        "--sequencer-pubkey",
        &key,
    ]
    .map(String::from);
    let testnet_follower = Ledgerd::builder()
        .data_dir(&dir.path().join("f2"))
        .args(&args)
        .start();
    testnet_follower.wait_for_refusal(Duration::from_secs(60), "receipt");
    // Why the receipt was refused is said in the log only.
    let stderr = testnet_follower.stderr();
    assert!(
        stderr.contains("check receipt failed: proof on slot"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the receipt is a fake (InnerReceipt::Fake"),
        "{stderr}"
    );
    testnet_follower.wait_for(Duration::from_secs(30), "all blocks", |f| {
        f.head() == PREFILL
    });
    let got = statuses(&testnet_follower.url, PREFILL);
    assert!(!got.contains(&json!("Proven")), "{got:?}");
    assert!(
        got.contains(&json!("Finalized")),
        "commitments before the proof still finalize"
    );
    assert_eq!(fake_count_in_metrics(&testnet_follower.url), 0);
    let proof = common::call(
        &testnet_follower.url,
        "ledger_getLastVerifiedBatchProof",
        "[]",
    );
    assert_eq!(proof, Value::Null, "no proof stored");
}

#[test]
fn an_upstream_serving_non_receipt_bytes_beside_a_valid_proof_output_gets_nothing_proven() {
    let dir = tempfile::tempdir().expect("temp dir");
    let upstream = Ledgerd::builder()
        .dev(PREFILL, 0)
        .data_dir(&dir.path().join("up"))
        .start();
    let proxy = Proxy::start(&upstream.url);
    proxy.set(Tamper::ProofBytes);
    let args = ["--upstream", &proxy.url].map(String::from);
    let follower = Ledgerd::builder()
        .data_dir(&dir.path().join("f"))
        .args(&args)
        .start();
    follower.wait_for_refusal(Duration::from_secs(60), "receipt");
    assert!(proxy.altered() >= 1);
    // Why the bytes were refused is said in the log only.
    let stderr = follower.stderr();
    assert!(
        stderr.contains("the proof bytes are not a risc0 receipt"),
        "{stderr}"
    );
    let got = statuses(&follower.url, follower.head());
    assert!(!got.contains(&json!("Proven")), "{got:?}");
    let proof = common::call(&follower.url, "ledger_getLastVerifiedBatchProof", "[]");
    assert_eq!(proof, Value::Null, "no proof stored");
    let metrics = get(&follower.url, "/metrics");
    assert!(
        metrics.contains("ledgerd_sync_verification_failures_total{check=\"receipt\"} "),
        "{metrics}"
    );

    // Answered right again, it converges: the same statuses as the devnet.
    proxy.set(Tamper::Nothing);
    let up = statuses(&upstream.url, PREFILL);
    follower.wait_for(Duration::from_secs(60), "the same statuses", |f| {
        statuses(&f.url, PREFILL) == up
    });
}
