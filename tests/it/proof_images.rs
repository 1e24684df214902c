//! Which batch-proof image a receipt must claim (`src/proof`): the
//! `--network`'s, the devnet's own, the ones pinned with
//! `--batch-proof-image FORK=HEX`, or, on a chain without a network name
//! or pins, the one the receipt claims, whose seal must still hold.
//!
//! Checked on Citrea's real testnet proof (`tests/data`), on fake receipts,
//! through `ledgerd verify-proof`, and on followers of a ledgerd devnet
//! pinned to the image its `/health` names.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::process::run;
use common::Ledgerd;
use ledgerd::chain_rules::{Fork, ForkTable, Network};
use ledgerd::proof::image_ids::{
    BatchImage, ImageOrigin, ImagePins, DEVNET_BATCH_1, DEVNET_FAKE_IMAGE, TESTNET_BATCH_0,
    TESTNET_BATCH_1,
};
use ledgerd::proof::receipt::{self, Verified};
use ledgerd::proof::{check, journal, Images, ProofError, ProofRules};
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

fn real_proof() -> (Vec<u8>, ProofOutput) {
    let bytes = std::fs::read(RECEIPT).expect("tests/data receipt");
    let text = std::fs::read_to_string(OUTPUT).expect("tests/data output");
    (
        bytes,
        ledgerd::wire::read::proof_output(&text).expect("the output reads"),
    )
}

fn unpinned() -> ProofRules {
    ProofRules::new(None, ImagePins::default(), false, false)
}

fn pinned(genesis: Option<[u8; 32]>, kumquat: Option<[u8; 32]>) -> ProofRules {
    ProofRules::new(None, ImagePins { genesis, kumquat }, false, false)
}

#[test]
fn without_pins_citreas_real_proof_verifies_against_the_image_it_claims_and_a_broken_seal_still_fails(
) {
    let (bytes, output) = real_proof();
    let forks = Network::Testnet.fork_table();
    let checked = check(&bytes, Some(&output), &unpinned(), &forks).expect("it verifies");
    assert_eq!(checked.image.origin, ImageOrigin::Claimed);
    assert_eq!(
        checked.image.id, TESTNET_BATCH_0,
        "it claims testnet's batch-0"
    );
    assert_eq!(checked.verified, Verified::Pre110);
    assert!(!checked.is_fake());
    // The seal is checked all the same.
    let mut seal = bytes.clone();
    seal[12 + 100] ^= 0x01;
    let e = check(&seal, Some(&output), &unpinned(), &forks)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(
            "receipt does not verify against the batch-proof image the receipt claims (Genesis era; images not pinned)"
        ),
        "{e}"
    );

    // Pinned: the right image verifies, another is refused; a fork not
    // pinned names the flag to add.
    let right = check(
        &bytes,
        Some(&output),
        &pinned(Some(TESTNET_BATCH_0), None),
        &forks,
    )
    .expect("the pinned image");
    assert_eq!(right.image.origin, ImageOrigin::Pinned);
    let e = check(
        &bytes,
        Some(&output),
        &pinned(Some(TESTNET_BATCH_1), None),
        &forks,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("receipt does not verify against the batch-proof image pinned for the Genesis era (--batch-proof-image genesis=50757c7c"),
        "{e}"
    );
    let e = check(&bytes, None, &pinned(None, Some(TESTNET_BATCH_1)), &forks).unwrap_err();
    assert!(matches!(e, ProofError::NoImage(_)), "{e}");
    assert!(
        e.to_string()
            .contains("add --batch-proof-image genesis=HEX"),
        "{e}"
    );
}

#[test]
fn fakes_count_whatever_image_they_claim_without_pins_and_must_claim_the_pinned_one_with_them() {
    let (_, mut output) = real_proof();
    output.state_diff.truncate(3);
    output.last_l2_height = 40;
    output.prev_soft_confirmation_hash = [1; 32];
    output.final_soft_confirmation_hash = [2; 32];
    let forks = ForkTable::KUMQUAT_ONLY;
    let claiming = |id: [u8; 32]| {
        let image = BatchImage {
            origin: ImageOrigin::Pinned,
            fork: Fork::Kumquat,
            id,
        };
        receipt::make_fake(&image, journal::encode(&output, None).expect("a journal"))
    };
    let citrea = claiming(TESTNET_BATCH_1);
    let ok = check(&citrea, Some(&output), &unpinned(), &forks).expect("no pins: any image");
    assert!(ok.is_fake());
    assert_eq!(ok.image.id, TESTNET_BATCH_1);
    assert!(check(
        &citrea,
        Some(&output),
        &pinned(None, Some(TESTNET_BATCH_1)),
        &forks
    )
    .is_ok());
    let e = check(
        &citrea,
        Some(&output),
        &pinned(None, Some(DEVNET_BATCH_1)),
        &forks,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            "the fake receipt's claim is not the batch-proof image pinned for the Kumquat era"
        ),
        "{e}"
    );
    // Still refused on a named network, and a fake must still claim what
    // its journal says (another journal under the same claim fails).
    let testnet = ProofRules::new(Some(Network::Testnet), ImagePins::default(), false, false);
    assert!(matches!(
        check(&citrea, Some(&output), &testnet, &forks),
        Err(ProofError::FakeRefused(Network::Testnet))
    ));
    let mut other = citrea.clone();
    let at = other.len() - 32 - 1;
    other[at] ^= 1;
    assert!(check(&other, None, &unpinned(), &forks).is_err());
    // The devnet keeps its own image.
    assert_eq!(
        ProofRules::new(None, ImagePins::default(), false, true).images,
        Images::Devnet
    );
}

fn verify_proof(args: &[&str], file: &Path) -> (Option<i32>, String) {
    let mut all = vec!["verify-proof"];
    all.extend_from_slice(args);
    all.push(file.to_str().expect("utf-8 path"));
    let out = run(&all, None);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn verify_proof_takes_the_pins_and_without_them_says_the_image_is_the_claimed_one() {
    let (bytes, _) = real_proof();
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("proof.bin");
    std::fs::write(&raw, &bytes).unwrap();
    let (code, out) = verify_proof(&["--kumquat-height", "5546000"], &raw);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(
            "the batch-proof image the receipt claims (Genesis era; images not pinned) 3631d906"
        ),
        "{out}"
    );
    let g = format!("genesis={}", hex::encode(TESTNET_BATCH_0));
    let (code, out) = verify_proof(&["--batch-proof-image", &g], &raw);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("pinned for the Genesis era"), "{out}");
    let wrong = format!("genesis={}", hex::encode(DEVNET_BATCH_1));
    let (code, out) = verify_proof(&["--batch-proof-image", &wrong], &raw);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("verification: REFUSED: receipt does not verify"),
        "{out}"
    );
    let (code, out) = verify_proof(&["--batch-proof-image", "genesis=12"], &raw);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("64 hex digits"), "{out}");
}

fn health(url: &str) -> Value {
    let text = match ureq::get(&format!("{url}/health")).call() {
        Ok(r) => r.into_string().unwrap(),
        Err(ureq::Error::Status(_, r)) => r.into_string().unwrap(),
        Err(e) => panic!("/health: {e}"),
    };
    serde_json::from_str(&text).unwrap()
}

fn statuses(url: &str, head: u64) -> Vec<Value> {
    (1..=head)
        .map(|h| common::call(url, "ledger_getSoftConfirmationStatus", &format!("[{h}]")))
        .collect()
}

#[test]
fn a_devnet_names_its_image_in_health_and_a_follower_pinned_to_it_checks_it() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = Ledgerd::builder()
        .dev(200, 0)
        .data_dir(&dir.path().join("up"))
        .start();
    let h = health(&upstream.url);
    let own = hex::encode(DEVNET_FAKE_IMAGE);
    assert_eq!(
        h["batchProofImages"],
        json!({"pinnedBy": "devnet", "genesis": own, "kumquat": own}),
        "{h}"
    );
    assert_eq!(h["proofsOnUnpinnedImages"], 0);
    let up = statuses(&upstream.url, 200);
    assert!(up.contains(&json!("Proven")));

    // Pinned to what /health says: the same statuses, nothing unpinned.
    let pin = format!("kumquat={own}");
    let args = ["--upstream", &upstream.url, "--batch-proof-image", &pin].map(String::from);
    let f = Ledgerd::builder()
        .data_dir(&dir.path().join("pinned"))
        .args(&args)
        .start();
    f.wait_for(Duration::from_secs(60), "the same statuses", |f| {
        f.head() == 200 && statuses(&f.url, 200) == up
    });
    let fh = health(&f.url);
    assert_eq!(fh["batchProofImages"]["pinnedBy"], "--batch-proof-image");
    assert_eq!(fh["proofsOnUnpinnedImages"], 0);
    assert!(fh["proofsOnFakeReceipts"].as_u64() > Some(0), "{fh}");

    // Pinned to Citrea's testnet guest: the devnet's proofs prove nothing.
    let pin = format!("kumquat={}", hex::encode(TESTNET_BATCH_1));
    let args = ["--upstream", &upstream.url, "--batch-proof-image", &pin].map(String::from);
    let wrong = Ledgerd::builder()
        .data_dir(&dir.path().join("wrong"))
        .args(&args)
        .start();
    wrong.wait_for_refusal(Duration::from_secs(60), "receipt");
    wrong.wait_for(Duration::from_secs(30), "all blocks", |f| f.head() == 200);
    let got = statuses(&wrong.url, 200);
    assert!(!got.contains(&json!("Proven")), "{got:?}");
    let wh = health(&wrong.url);
    assert_eq!(wh["waitingOn"]["check"], "receipt", "{wh}");
    let why = wh["waitingOn"]["why"].as_str().expect("why");
    assert!(
        why.contains(
            "the fake receipt's claim is not the batch-proof image pinned for the Kumquat era"
        ),
        "{wh}"
    );
}
