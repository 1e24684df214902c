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
use std::time::{Duration, Instant};

use bitcoin::secp256k1::{Secp256k1, SecretKey};
use bitcoin::{Address, CompressedPublicKey, Network, OutPoint, Txid};
use common::bitcoind::Bitcoind;
use common::{call, devnet_ledger, export, hash32, run, Ledgerd};
use ledgerd::source::bitcoind::body::SequencerCommitment;
use ledgerd::source::bitcoind::envelope::Kind;
use ledgerd::source::bitcoind::inscribe::{inscribe, Funding, FundingKey, InscribeOptions};
use ledgerd::source::bitcoind::keys;
use ledgerd::source::bitcoind::signer::DaSecretKey;
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
    ledgerd::chain::merkle_root(&hashes).expect("a root")
}

/// The statuses of heights 1..=HEAD at `url`.
fn statuses(url: &str) -> Vec<String> {
    (1..=HEAD)
        .map(|h| {
            call(url, "ledger_getSoftConfirmationStatus", &format!("[{h}]"))
                .as_str()
                .expect("a status")
                .to_string()
        })
        .collect()
}

/// Heights 1..=30 and 75..=86 Finalized, the rest Trusted.
fn assert_gap_statuses(url: &str) {
    let got = statuses(url);
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

fn wait(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
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
    wait(
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

/// A key of this test's that mined coinbases to spend.
fn fund(node: &Bitcoind, seed: u8, n: u64) -> Vec<Funding> {
    let secp = Secp256k1::signing_only();
    let key = SecretKey::from_slice(&[seed; 32]).unwrap();
    let address = Address::p2wpkh(
        &CompressedPublicKey(key.public_key(&secp)),
        Network::Regtest,
    );
    let hashes = node.generate_to_address(n, &address.to_string());
    node.mine(100);
    hashes
        .iter()
        .map(|h| {
            let block = node.call("getblock", json!([h, 2]));
            let cb = &block["tx"][0];
            Funding {
                outpoint: OutPoint {
                    txid: cb["txid"].as_str().unwrap().parse::<Txid>().unwrap(),
                    vout: 0,
                },
                amount_sats: (cb["vout"][0]["value"].as_f64().unwrap() * 1e8).round() as u64,
                key: FundingKey::P2wpkh(key),
            }
        })
        .collect()
}

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
    let hexes: Vec<String> = [&tx.commit, &tx.reveal]
        .iter()
        .map(|t| hex::encode(bitcoin::consensus::serialize(*t)))
        .collect();
    node.call(
        "generateblock",
        json!([common::bitcoind::burn_address().to_string(), hexes]),
    );
    node.block_count()
}

/// A devnet on the regtest with heights 1..=90 and one commitment, 1..=30.
fn devnet_on(node: &Bitcoind, dir: &Path) -> Ledgerd {
    let cookie = node.cookie_path().display().to_string();
    let devnet = Ledgerd::builder()
        .dev(0, 0)
        .data_dir(dir)
        .args(&[
            "--dev-bitcoin-rpc",
            &node.url,
            "--bitcoin-rpc-cookie",
            &cookie,
        ])
        .start();
    devnet.result("dev_setAutoCommit", "[0]");
    devnet.result("dev_setAutoProve", "[0]");
    assert_eq!(devnet.result("dev_mine", "[30]"), 30);
    let c = devnet.result("dev_commit", "[]");
    assert_eq!(c["l2EndBlockNumber"], 30, "{c}");
    assert_eq!(devnet.result("dev_mine", "[60]"), HEAD);
    devnet
}

fn follower_of(up: &Ledgerd, node: &Bitcoind, dir: &Path) -> Ledgerd {
    let cookie = node.cookie_path().display().to_string();
    let args: Vec<String> = [
        "--upstream",
        &up.url,
        "--bitcoin-rpc",
        &node.url,
        "--bitcoin-rpc-cookie",
        &cookie,
        "--bitcoin-finality-depth",
        "1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Ledgerd::builder().data_dir(dir).args(&args).start()
}

fn health(n: &Ledgerd) -> Value {
    let text = match ureq::get(&format!("{}/health", n.url)).call() {
        Ok(r) => r.into_string().unwrap(),
        Err(ureq::Error::Status(_, r)) => r.into_string().unwrap(),
        Err(e) => panic!("/health: {e}"),
    };
    serde_json::from_str(&text).unwrap()
}

fn scanned(n: &Ledgerd) -> u64 {
    n.result("ledger_getLastScannedL1Height", "[]")
        .as_u64()
        .unwrap()
}

/// Bitcoin's printed block hash as ledgerd stores a slot hash (raw byte order).
fn slot_hash(node: &Bitcoind, height: u64) -> String {
    let mut raw = hex::decode(node.block_hash(height)).unwrap();
    raw.reverse();
    hex::encode(raw)
}

/// Publishes 31..=66 signed by a stranger and 75..=86 signed by the
/// sequencer (`between` runs in between, once the follower scanned the
/// first), and checks what the follower makes of them.
fn refused_then_after_the_gap(between: impl FnOnce(&mut Bitcoind, &Ledgerd)) {
    let mut node = Bitcoind::start();
    let dir = tempfile::tempdir().unwrap();
    let mut coins = fund(&node, 0x24, 2).into_iter();
    let devnet = devnet_on(&node, &dir.path().join("devnet"));
    let follower = follower_of(&devnet, &node, &dir.path().join("follower"));
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
    wait(
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
    wait(
        Duration::from_secs(60),
        "the next commitment's block scanned",
        || scanned(&follower) >= after,
    );
    assert_gap_statuses(&follower.url);
    let listed = json!([commitment_json(after, root, AFTER_GAP)]);
    assert_eq!(on_slot(&follower.url, after), listed);
    assert_eq!(
        on_slot_by_hash(&follower.url, &slot_hash(&node, after)),
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
        wait(
            Duration::from_secs(30),
            "the follower to see bitcoind gone",
            || {
                let h = health(follower);
                h["bitcoindReachable"] == false && h["l1Scanned"].as_u64() > Some(0)
            },
        );
        node.restart();
        wait(
            Duration::from_secs(30),
            "the follower to see bitcoind again",
            || health(follower)["bitcoindReachable"] == true,
        );
    });
}
