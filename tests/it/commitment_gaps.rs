//! Commitments as Citrea v0.6.2's full node takes them
//! (`crates/fullnode/src/da_block_handler.rs`, `process_sequencer_commitment`):
//! a commitment whose heights are stored and whose Merkle root matches is
//! Finalized whatever came before it. After a gap (a range whose commitment
//! was refused, or never published) the next valid commitment is
//! Finalized, the gap stays Trusted, and methods 7 and 8 list the
//! commitment on its slot; a range committed again is listed on its new
//! slot too.
//!
//! Over every source: a real regtest bitcoind where the commitment over
//! 31..66 is signed by another key (also with bitcoind killed and restarted
//! between the two commitments), `ledgerd import`, and an upstream's DA
//! view (a follower of the imported ledger).

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::bitcoind::Bitcoind;
use common::{call, devnet_ledger, export, hash32, regtest, run, statuses, wait_until, Ledgerd};
use ledgerd::source::bitcoin::body::SequencerCommitment;
use ledgerd::source::bitcoin::inscription::Kind;
use ledgerd::source::bitcoin::keys;
use ledgerd::source::bitcoin::signer::DaSecretKey;
use ledgerd::source::devnet::inscribe::{inscribe, Funding, InscribeOptions};
use serde_json::{json, Value};

/// The commitments of every test here: 1..=30, then 31..=66 refused (or
/// never there), then 75..=86.
const FIRST: (u64, u64) = (1, 30);
const REFUSED: (u64, u64) = (31, 66);
const AFTER_GAP: (u64, u64) = (75, 86);
const HEAD: u64 = 90;

/// The rs_merkle root of the stored hashes of `start..=end` at `url`.
fn root_of(url: &str, (start, end): (u64, u64)) -> [u8; 32] {
    let hashes: Vec<[u8; 32]> = (start..=end)
        .map(|h| {
            hash32(&call(url, "ledger_getSoftConfirmationByNumber", &format!("[{h}]"))["hash"])
        })
        .collect();
    ledgerd::chain_rules::merkle_root(&hashes).expect("a root")
}

/// Heights 1..=30 and 75..=86 Finalized, the rest Trusted.
fn assert_gap_statuses(url: &str) {
    let got = statuses(url, 1..=HEAD);
    for (i, s) in got.iter().enumerate() {
        let h = i as u64 + 1;
        let want = if (FIRST.0..=FIRST.1).contains(&h) || (AFTER_GAP.0..=AFTER_GAP.1).contains(&h) {
            "Finalized"
        } else {
            "Trusted"
        };
        assert_eq!(s, want, "height {h}: {got:?}");
    }
}

/// `{"foundInL1":slot,...}` as methods 7 and 8 answer a commitment.
fn commitment_json(slot: u64, root: [u8; 32], (start, end): (u64, u64)) -> Value {
    json!({
        "foundInL1": slot,
        "merkleRoot": hex::encode(root),
        "l2StartBlockNumber": start,
        "l2EndBlockNumber": end,
    })
}

fn on_slot(url: &str, slot: u64) -> Value {
    call(
        url,
        "ledger_getSequencerCommitmentsOnSlotByNumber",
        &format!("[{slot}]"),
    )
}

fn on_slot_by_hash(url: &str, hash: &str) -> Value {
    call(
        url,
        "ledger_getSequencerCommitmentsOnSlotByHash",
        &format!("[\"{hash}\"]"),
    )
}

// ---- ledgerd import, and a follower of the imported ledger ----

/// The DA slot block `h` of an exported fixture points at, and that slot's hash.
fn slot_of(fixture: &str, h: u64) -> (u64, String) {
    let needle = format!("{{\"softConfirmation\":{{\"l2Height\":{h},");
    let line = fixture
        .lines()
        .find(|l| l.starts_with(&needle))
        .expect("the block's line");
    let v: Value = serde_json::from_str(line).unwrap();
    let sc = &v["softConfirmation"];
    (
        sc["daSlotHeight"].as_u64().unwrap(),
        sc["daSlotHash"].as_str().unwrap().to_string(),
    )
}

#[test]
fn a_commitment_after_a_gap_is_finalized_by_import_and_over_an_upstreams_da_view() {
    let tmp = tempfile::tempdir().unwrap();
    let (devnet, imported) = (tmp.path().join("devnet"), tmp.path().join("imported"));
    devnet_ledger(&devnet, HEAD);
    let full = export(&devnet, &[]);
    // Its blocks (and slot hashes) only: the commitments are this test's.
    let mut fixture: String = full
        .lines()
        .filter(|l| {
            l.starts_with("{\"softConfirmation\"")
                || l.starts_with("{\"genesisStateRoot\"")
                || l.starts_with("{\"daSlot\"")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let reader = Ledgerd::builder().readonly().data_dir(&devnet).start();
    let (first_root, after_root) = (root_of(&reader.url, FIRST), root_of(&reader.url, AFTER_GAP));
    drop(reader);
    // 1..=30 on the slot of block 40; 75..=86 and 1..=30 again on the slot
    // of block 90 (both slots hold blocks, so method 8 finds them by hash).
    let (s1, s1_hash) = slot_of(&fixture, 40);
    let (s2, s2_hash) = slot_of(&fixture, HEAD);
    assert!(s1 < s2, "{s1} {s2}");
    for (slot, root, range) in [
        (s1, first_root, FIRST),
        (s2, after_root, AFTER_GAP),
        (s2, first_root, FIRST),
    ] {
        fixture.push_str(&json!({ "commitment": commitment_json(slot, root, range) }).to_string());
        fixture.push('\n');
    }
    fixture.push_str(&format!("{{\"lastScannedL1Height\":{s2}}}\n"));

    let out = run(
        &["import", "-", "--data-dir", imported.to_str().unwrap()],
        Some(fixture.as_bytes()),
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");

    // The imported ledger, served as it is, is the upstream of a follower.
    let upstream = Ledgerd::builder().data_dir(&imported).start();
    assert_gap_statuses(&upstream.url);
    let listed = json!([
        commitment_json(s2, after_root, AFTER_GAP),
        commitment_json(s2, first_root, FIRST)
    ]);
    assert_eq!(on_slot(&upstream.url, s2), listed);
    let args = ["--upstream".to_string(), upstream.url.clone()];
    let follower = Ledgerd::builder()
        .data_dir(&tmp.path().join("follower"))
        .args(&args)
        .start();
    wait_until(
        Duration::from_secs(60),
        "the follower to scan the last slot",
        || call(&follower.url, "ledger_getLastScannedL1Height", "[]").as_u64() == Some(s2),
    );
    assert_gap_statuses(&follower.url);
    for url in [&upstream.url, &follower.url] {
        assert_eq!(on_slot(url, s2), listed);
        assert_eq!(on_slot_by_hash(url, &s2_hash), listed);
        assert_eq!(
            on_slot_by_hash(url, &s1_hash),
            json!([commitment_json(s1, first_root, FIRST)])
        );
    }
    let log = follower.stderr();
    assert!(!log.contains("commitment_range"), "{log}");
}

// ---- a real regtest bitcoind ----

/// Publishes a commitment over `range` with `root`, signed by `key`, in a
/// block of its own; that block's height.
fn publish(
    node: &Bitcoind,
    coin: &Funding,
    key: &DaSecretKey,
    range: (u64, u64),
    root: [u8; 32],
) -> u64 {
    let body = SequencerCommitment {
        merkle_root: root,
        l2_start: range.0,
        l2_end: range.1,
    };
    let tx = inscribe(
        coin,
        key,
        Kind::SequencerCommitment,
        &body.encode(),
        &InscribeOptions::default(),
    )
    .unwrap();
    regtest::mine_txs(node, &[&tx.commit, &tx.reveal])
}

/// A devnet on the regtest with heights 1..=90 and one commitment, 1..=30.
fn devnet_on(node: &Bitcoind, dir: &Path) -> Ledgerd {
    let devnet = regtest::devnet_on(node, dir, &[]);
    devnet.result("dev_setAutoCommit", "[0]");
    devnet.result("dev_setAutoProve", "[0]");
    assert_eq!(devnet.result("dev_mine", "[30]"), 30);
    let c = devnet.result("dev_commit", "[]");
    assert_eq!(c["l2EndBlockNumber"], 30, "{c}");
    assert_eq!(devnet.result("dev_mine", "[60]"), HEAD);
    devnet
}

fn scanned(n: &Ledgerd) -> u64 {
    n.result("ledger_getLastScannedL1Height", "[]")
        .as_u64()
        .unwrap()
}

fn refused_then_after_the_gap(between: impl FnOnce(&mut Bitcoind, &Ledgerd)) {
    let mut node = Bitcoind::start();
    let dir = tempfile::tempdir().unwrap();
    let mut coins = regtest::fund(&node, 0x24, 2).into_iter();
    let devnet = devnet_on(&node, &dir.path().join("devnet"));
    let follower = regtest::follower_of(&devnet, &node, &dir.path().join("follower"), 1).start();
    let stranger = DaSecretKey::from_bytes(&[0x35; 32]).unwrap();
    let sequencer = keys::regtest_sequencer_secret().unwrap();

    // A right root, but another key: never a commitment of this chain.
    let refused = publish(
        &node,
        &coins.next().unwrap(),
        &stranger,
        REFUSED,
        root_of(&devnet.url, REFUSED),
    );
    wait_until(
        Duration::from_secs(60),
        "the stranger's block scanned",
        || scanned(&follower) >= refused && follower.head() == HEAD,
    );
    assert_eq!(on_slot(&follower.url, refused), Value::Null);
    assert_eq!(
        follower.metric(
            "ledgerd_bitcoin_reveals_refused_total",
            &[("reason", "other_key")]
        ),
        1
    );

    between(&mut node, &follower);

    let root = root_of(&devnet.url, AFTER_GAP);
    let after = publish(&node, &coins.next().unwrap(), &sequencer, AFTER_GAP, root);
    wait_until(
        Duration::from_secs(60),
        "the next commitment's block scanned",
        || scanned(&follower) >= after,
    );
    assert_gap_statuses(&follower.url);
    let listed = json!([commitment_json(after, root, AFTER_GAP)]);
    assert_eq!(on_slot(&follower.url, after), listed);
    assert_eq!(
        on_slot_by_hash(&follower.url, &regtest::slot_hash(&node, after)),
        listed
    );
    let log = follower.stderr();
    assert!(!log.contains("commitment_range"), "{log}");
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn over_bitcoin_a_commitment_after_one_signed_by_another_key_is_finalized_and_the_gap_stays_trusted(
) {
    refused_then_after_the_gap(|_, _| {});
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn over_bitcoin_killed_and_restarted_between_the_two_commitments_the_one_after_the_gap_is_finalized(
) {
    refused_then_after_the_gap(|node, follower| {
        node.flush();
        node.kill9();
        wait_until(
            Duration::from_secs(30),
            "the follower to see bitcoind gone",
            || {
                let h = follower.health().1;
                h["bitcoindReachable"] == false && h["l1Scanned"].as_u64() > Some(0)
            },
        );
        node.restart();
        wait_until(
            Duration::from_secs(30),
            "the follower to see bitcoind again",
            || follower.health().1["bitcoindReachable"] == true,
        );
    });
}
