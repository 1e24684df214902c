//! Following a Citrea-shaped upstream (tests/it/common/citrea_upstream.rs: a
//! stand-in written from Citrea v0.6.2's source), and serving Citrea's
//! shapes with `--wire citrea`.
//!
//! A follower must read Citrea's answers (proofs as arrays without height,
//! the last proof with height outside, lowercase statuses, ranges of at most
//! 20 blocks with Citrea's error text), mark heights Proven by Citrea's
//! proof rule, and end with the same hashes, statuses, commitments and
//! proofs. Blocks answered without their transactions (`include_tx_body =
//! false`) are refused with a sentence that says so, unless
//! `--allow-missing-tx-bodies`, which accepts and counts them.

use crate::common;

use std::time::Duration;

use common::citrea_upstream::{CitreaUpstream, Options, FIRST_SLOT, MAX_RANGE};
use common::http::metric;
use common::rpc::{assert_same_view, batch, call};
use common::Ledgerd;
use serde_json::{json, Value};

/// What these tests read of a chain, in Citrea's shapes: (slot,
/// commitments by number, commitments by the slot's hash, proofs) for every
/// DA slot from the first on.
type View = common::rpc::View<(u64, Value, Value, Value)>;

fn post(url: &str, body: &Value) -> Value {
    let (status, text) = common::post_raw(url, &body.to_string());
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).expect("a JSON answer")
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("{v} is not a number"))
}

/// ledgerd's shapes to Citrea's: lowercase statuses, method 11 as an array
/// without height, method 12 with height outside.
fn proofs_as_citrea(v: &Value) -> Value {
    match v {
        Value::Object(o) if o["proof"].get("height").is_some() => {
            let mut inner = o["proof"].clone();
            inner.as_object_mut().unwrap().remove("height");
            json!([inner])
        }
        other => other.clone(),
    }
}

fn last_proof_as_citrea(v: &Value) -> Value {
    match v["proof"].get("height") {
        Some(h) => {
            let mut inner = v["proof"].clone();
            inner.as_object_mut().unwrap().remove("height");
            json!({"proof": inner, "height": h})
        }
        None => v.clone(),
    }
}

fn view(url: &str) -> View {
    let head = common::head(url);
    let mut blocks = Vec::new();
    let mut from = 1;
    while from <= head {
        let to = head.min(from + MAX_RANGE - 1);
        let part = call(
            url,
            "ledger_getSoftConfirmationRange",
            &format!("[{from},{to}]"),
        );
        blocks.extend(part.as_array().expect("a list").iter().cloned());
        from = to + 1;
    }
    let calls: Vec<_> = (1..=head)
        .map(|h| ("ledger_getSoftConfirmationStatus", json!([h])))
        .collect();
    let statuses = batch(url, &calls)
        .into_iter()
        .map(|s| json!(s.as_str().expect("a status").to_lowercase()))
        .collect();
    let last_scanned = num(&call(url, "ledger_getLastScannedL1Height", "[]"));
    let slot_hash = |n: u64| {
        blocks
            .iter()
            .find(|b| num(&b["daSlotHeight"]) == n)
            .map(|b| b["daSlotHash"].clone())
            .expect("every slot has a block")
    };
    let mut calls = Vec::new();
    for n in FIRST_SLOT..=last_scanned {
        calls.push(("ledger_getSequencerCommitmentsOnSlotByNumber", json!([n])));
        calls.push((
            "ledger_getSequencerCommitmentsOnSlotByHash",
            json!([slot_hash(n)]),
        ));
        calls.push(("ledger_getVerifiedBatchProofsBySlotHeight", json!([n])));
    }
    let answers = batch(url, &calls);
    let slots = (FIRST_SLOT..=last_scanned)
        .zip(answers.chunks(3))
        .map(|(n, a)| (n, a[0].clone(), a[1].clone(), proofs_as_citrea(&a[2])))
        .collect();
    View {
        head,
        genesis: call(url, "ledger_getL2GenesisStateRoot", "[]"),
        blocks,
        statuses,
        last_scanned,
        slots,
        last_proof: last_proof_as_citrea(&call(url, "ledger_getLastVerifiedBatchProof", "[]")),
    }
}

fn follower(data: &std::path::Path, upstream: &str, extra: &[&str]) -> Ledgerd {
    let mut args = vec!["--upstream".to_string(), upstream.to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    Ledgerd::builder().data_dir(data).args(&args).start()
}

fn wait_synced(f: &Ledgerd, head: u64, l1: u64) {
    let synced = json!({"l1Status":{"Synced":l1},"l2Status":{"Synced":head}});
    f.wait_for_value(
        Duration::from_secs(60),
        &format!("the follower to reach head {head} and slot {l1}"),
        Ledgerd::sync_status,
        |now| *now == synced,
    );
}

fn get(url: &str, path: &str) -> String {
    ureq::get(&format!("{url}{path}"))
        .call()
        .map(|r| r.into_string().expect("a body"))
        .unwrap_or_else(|e| match e {
            ureq::Error::Status(_, r) => r.into_string().expect("a body"),
            other => panic!("GET {path}: {other}"),
        })
}

#[test]
fn a_follower_syncs_a_citrea_shaped_upstream_to_the_same_hashes_statuses_commitments_and_proofs() {
    let upstream = CitreaUpstream::start(Options::default());
    let chain = &upstream.chain;
    let dir = tempfile::tempdir().unwrap();
    let f = follower(&dir.path().join("f"), &upstream.url, &[]);
    wait_synced(&f, chain.options.blocks, chain.last_scanned);

    let u = view(&upstream.url);
    // The stand-in holds what the test needs: every status, slots with
    // several commitments, proofs with preproven commitments, a slot with a
    // proof and commitments.
    for s in ["trusted", "finalized", "proven"] {
        assert!(
            u.statuses.contains(&json!(s)),
            "the upstream has {s} heights"
        );
    }
    assert!(u
        .slots
        .iter()
        .any(|s| s.1.as_array().is_some_and(|l| l.len() == 3)));
    assert!(u
        .slots
        .iter()
        .any(|s| s.3.to_string().contains("\"preprovenCommitments\":[0]")));
    assert!(u.slots.iter().any(|s| !s.1.is_null() && !s.3.is_null()));

    let fv = view(&f.url);
    assert_same_view(&fv, &u);
    // By-hash commitment lookups answer on every slot with commitments, also
    // those a later proof named (the upstream never serves a slot's hash:
    // the follower learnt it from the blocks, not from the proofs).
    let with_commitments = fv.slots.iter().filter(|s| !s.1.is_null()).count();
    assert!(with_commitments >= 4, "{with_commitments}");
    assert!(fv.slots.iter().all(|s| s.1 == s.2));

    let log = f.stderr();
    assert!(
        log.contains("upstream serves at most 20 blocks per range"),
        "the follower read Citrea's range limit text:\n{log}"
    );
    assert!(!log.contains("ERROR"), "{log}");
}

#[test]
fn heights_become_proven_by_the_commitments_a_proof_names_not_by_where_it_was_found() {
    // Against the stand-in's own reckoning, height by height: a proof with
    // preprovenCommitments [0] and range [0,1] proves the second and third
    // commitments of its slot (sorted by start), not the first.
    let upstream = CitreaUpstream::start(Options {
        blocks: 200,
        seed: 2,
        ..Options::default()
    });
    let chain = &upstream.chain;
    let dir = tempfile::tempdir().unwrap();
    let f = follower(
        &dir.path().join("f"),
        &upstream.url,
        &["--sync-concurrency", "3"],
    );
    wait_synced(&f, 200, chain.last_scanned);
    let (slot, proof) = chain
        .proofs
        .iter()
        .flat_map(|(s, list)| list.iter().map(move |p| (*s, p)))
        .find(|(s, p)| !p.preproven.is_empty() && *s <= chain.last_scanned)
        .expect("a proof with preproven commitments");
    let proven = chain.proven_by(proof);
    assert_eq!(proven.len(), 2);
    assert_eq!(proven[0].end + 1, proven[1].start);
    for c in &proven {
        for h in c.start..=c.end {
            assert_eq!(
                call(
                    &f.url,
                    "ledger_getSoftConfirmationStatus",
                    &format!("[{h}]")
                ),
                json!("Proven"),
                "height {h}, proven by the proof on slot {slot}"
            );
        }
    }
    let statuses: Vec<String> = (1..=200)
        .map(|h| {
            call(
                &f.url,
                "ledger_getSoftConfirmationStatus",
                &format!("[{h}]"),
            )
            .as_str()
            .unwrap()
            .to_lowercase()
        })
        .collect();
    assert_eq!(statuses, chain.statuses);
}

#[test]
fn withheld_bodies_are_refused_saying_why_and_accepted_and_counted_with_the_flag() {
    let upstream = CitreaUpstream::start(Options {
        blocks: 120,
        withhold_bodies: true,
        seed: 3,
        ..Options::default()
    });
    let chain = &upstream.chain;
    let first_with_txs = chain
        .blocks
        .iter()
        .find(|b| !b.txs.is_empty())
        .map(|b| b.l2_height)
        .unwrap();
    let without_bodies = chain.blocks.iter().filter(|b| !b.txs.is_empty()).count() as u64;
    assert!(without_bodies > 10);
    let dir = tempfile::tempdir().unwrap();

    // Default: refused, with the reason and the flag, and nothing of it stored.
    let strict = follower(&dir.path().join("strict"), &upstream.url, &[]);
    strict.wait_for_refusal(Duration::from_secs(30), "hash");
    // Which block, and what the operator can do, is said in the log only.
    let log = strict.stderr();
    assert!(log.contains("include_tx_body = false"), "{log}");
    assert!(
        log.contains(&format!("soft confirmation {first_with_txs}")),
        "{log}"
    );
    assert!(log.contains("--allow-missing-tx-bodies"), "{log}");
    assert_eq!(
        num(&call(
            &strict.url,
            "ledger_getHeadSoftConfirmationHeight",
            "[]"
        )),
        first_with_txs - 1
    );
    let metrics = get(&strict.url, "/metrics");
    assert_eq!(
        metric(&metrics, "ledgerd_sync_blocks_without_bodies_total"),
        0
    );
    assert!(
        metric(
            &metrics,
            "ledgerd_sync_verification_failures_total{check=\"hash\"}"
        ) >= 1
    );
    drop(strict);

    // With the flag: accepted on the signature over the stated hash, counted.
    let lenient = follower(
        &dir.path().join("lenient"),
        &upstream.url,
        &["--allow-missing-tx-bodies"],
    );
    wait_synced(&lenient, 120, chain.last_scanned);
    assert_same_view(&view(&lenient.url), &view(&upstream.url));
    let metrics = get(&lenient.url, "/metrics");
    assert_eq!(
        metric(&metrics, "ledgerd_sync_blocks_without_bodies_total"),
        without_bodies
    );
    let health: Value = serde_json::from_str(&get(&lenient.url, "/health")).unwrap();
    assert_eq!(
        health["blocksWithoutBodies"],
        json!(without_bodies),
        "{health}"
    );
    // The count is the ledger's: a restart reads it back.
    let data = lenient.data_dir.clone();
    drop(lenient);
    let again = follower(&data, &upstream.url, &["--allow-missing-tx-bodies"]);
    let health: Value = serde_json::from_str(&get(&again.url, "/health")).unwrap();
    assert_eq!(
        health["blocksWithoutBodies"],
        json!(without_bodies),
        "{health}"
    );
}

#[test]
fn a_follower_with_the_fork_table_syncs_genesis_blocks_below_the_fork_and_kumquat_above() {
    // Genesis rules below 150 (borsh message, signed as it is), Kumquat from
    // 150; proofs that end below 150 carry zero hashes and lastL2Height 0.
    let upstream = CitreaUpstream::start(Options {
        blocks: 300,
        kumquat_height: 150,
        seed: 4,
        ..Options::default()
    });
    let chain = &upstream.chain;
    let genesis_era_proofs = chain
        .proofs
        .range(..=chain.last_scanned)
        .flat_map(|(_, l)| l)
        .filter(|p| p.last_l2_height == 0)
        .count();
    assert!(genesis_era_proofs >= 2, "{genesis_era_proofs}");
    let key = hex::encode(chain.key);
    let dir = tempfile::tempdir().unwrap();
    let f = follower(
        &dir.path().join("f"),
        &upstream.url,
        &["--kumquat-height", "150", "--sequencer-pubkey", &key],
    );
    wait_synced(&f, 300, chain.last_scanned);
    let fv = view(&f.url);
    assert_same_view(&fv, &view(&upstream.url));
    // Heights below the fork were proven by Genesis-era proofs.
    assert!(fv.statuses[..149].iter().all(|s| s == "proven"));
    for s in ["trusted", "finalized", "proven"] {
        assert!(fv.statuses[149..].contains(&json!(s)), "{s} above the fork");
    }

    // Without the fork table, the first block is refused by the Kumquat rules.
    let wrong = follower(
        &dir.path().join("wrong"),
        &upstream.url,
        &["--sequencer-pubkey", &key],
    );
    wrong.wait_for_refusal(Duration::from_secs(30), "hash");
    let log = wrong.stderr();
    assert!(log.contains("soft confirmation 1: hash"), "{log}");
    assert_eq!(
        num(&call(
            &wrong.url,
            "ledger_getHeadSoftConfirmationHeight",
            "[]"
        )),
        0
    );
}

#[test]
fn withheld_bodies_across_the_fork_are_accepted_on_links_below_it_and_signatures_above() {
    let upstream = CitreaUpstream::start(Options {
        blocks: 200,
        kumquat_height: 100,
        withhold_bodies: true,
        seed: 5,
        ..Options::default()
    });
    let chain = &upstream.chain;
    let key = hex::encode(chain.key);
    let dir = tempfile::tempdir().unwrap();
    let strict = follower(
        &dir.path().join("strict"),
        &upstream.url,
        &["--kumquat-height", "100", "--sequencer-pubkey", &key],
    );
    strict.wait_for_refusal(Duration::from_secs(30), "hash");
    let log = strict.stderr();
    assert!(log.contains("include_tx_body = false"), "{log}");
    assert!(
        log.contains("on their links to the blocks around them"),
        "{log}"
    );
    drop(strict);
    let f = follower(
        &dir.path().join("f"),
        &upstream.url,
        &[
            "--kumquat-height",
            "100",
            "--sequencer-pubkey",
            &key,
            "--allow-missing-tx-bodies",
        ],
    );
    wait_synced(&f, 200, chain.last_scanned);
    assert_same_view(&view(&f.url), &view(&upstream.url));
    let without: u64 = chain.blocks.iter().filter(|b| !b.txs.is_empty()).count() as u64;
    let metrics = get(&f.url, "/metrics");
    assert_eq!(
        metric(&metrics, "ledgerd_sync_blocks_without_bodies_total"),
        without
    );
}

#[test]
fn a_forged_block_without_bodies_is_refused_even_with_the_flag() {
    // A Kumquat block whose txs were emptied and whose stated hash was
    // changed: the sequencer never signed that hash.
    let upstream = CitreaUpstream::start(Options {
        blocks: 60,
        withhold_bodies: true,
        seed: 6,
        ..Options::default()
    });
    let target = upstream
        .chain
        .blocks
        .iter()
        .find(|b| !b.txs.is_empty() && b.l2_height > 10)
        .map(|b| b.l2_height)
        .unwrap();
    upstream.forge_hash_at(target);
    let dir = tempfile::tempdir().unwrap();
    let f = follower(
        &dir.path().join("f"),
        &upstream.url,
        &["--allow-missing-tx-bodies"],
    );
    let refused = |f: &Ledgerd| {
        let failed = |check| {
            f.metric(
                "ledgerd_sync_verification_failures_total",
                &[("check", check)],
            )
        };
        failed("signature") + failed("prev_hash")
    };
    f.wait_for(Duration::from_secs(30), "the refusal", |f| refused(f) >= 1);
    // Which block was refused is said in the log only.
    let log = f.stderr();
    assert!(
        log.contains(&format!(
            "check signature failed: soft confirmation {target}"
        )) || log.contains(&format!("soft confirmation {}: prevHash", target + 1)),
        "{log}"
    );
    let head = common::head(&f.url);
    assert!(
        head < target,
        "nothing at or above the forged block is stored (head {head})"
    );
}

#[test]
fn a_follower_of_a_ledgerd_with_wire_citrea_serves_what_it_serves() {
    // A ledgerd devnet answering in Citrea's shapes is followed like a
    // Citrea node: range limit 20 from Citrea's error text, proofs as arrays.
    let dir = tempfile::tempdir().unwrap();
    let upstream = Ledgerd::builder()
        .dev(300, 0)
        .data_dir(&dir.path().join("up"))
        .args(&["--wire", "citrea"])
        .start();
    let f = follower(&dir.path().join("f"), &upstream.url, &["--wire", "citrea"]);
    let l1 = num(&call(&upstream.url, "ledger_getLastScannedL1Height", "[]"));
    wait_synced(&f, 300, l1);
    let (fv, uv) = (view_from(&f.url, 1000), view_from(&upstream.url, 1000));
    assert_eq!(fv, uv);
    let statuses = &fv.0;
    assert!(statuses.contains(&json!("finalized")) && statuses.contains(&json!("proven")));
    assert!(
        fv.1.iter().any(|p| p.is_array()),
        "proofs answered as arrays"
    );
    assert!(f
        .stderr()
        .contains("upstream serves at most 20 blocks per range"));
}

#[test]
fn a_follower_of_a_wire_citrea_devnet_keeps_every_proof_of_a_slot() {
    // Two proofs land on one slot of the upstream; Citrea's array carries
    // both, and the follower verifies and stores each, in order.
    let dir = tempfile::tempdir().unwrap();
    let upstream = Ledgerd::builder()
        .dev(0, 0)
        .data_dir(&dir.path().join("up"))
        .args(&["--dev-proof-bytes", "16", "--wire", "citrea"])
        .start();
    let slot = common::rpc::two_proofs_on_one_slot(&upstream);
    let head = num(&call(
        &upstream.url,
        "ledger_getHeadSoftConfirmationHeight",
        "[]",
    ));
    let l1 = num(&call(&upstream.url, "ledger_getLastScannedL1Height", "[]"));
    let f = follower(&dir.path().join("f"), &upstream.url, &["--wire", "citrea"]);
    wait_synced(&f, head, l1);

    let on_slot = format!("[{slot}]");
    let theirs = call(
        &upstream.url,
        "ledger_getVerifiedBatchProofsBySlotHeight",
        &on_slot,
    );
    let ours = call(
        &f.url,
        "ledger_getVerifiedBatchProofsBySlotHeight",
        &on_slot,
    );
    assert_eq!(theirs.as_array().map(Vec::len), Some(2), "{theirs}");
    assert_eq!(ours, theirs);
    // Every slot, every status and the last proof agree too; heights 1..=6
    // are Proven by the two proofs.
    let (fv, uv) = (view_from(&f.url, 1000), view_from(&upstream.url, 1000));
    assert_eq!(fv, uv);
    for h in 0..6 {
        assert_eq!(fv.0[h], "proven", "height {}", h + 1);
    }
    assert_eq!(
        fv.2["proof"], theirs[0],
        "the last proof is the highest slot's first, as Citrea answers it"
    );
    assert!(!f.stderr().contains("ERROR"), "{}", f.stderr());
}

/// [`view`] for a ledgerd devnet (its first DA slot is 1000).
fn view_from(url: &str, first_slot: u64) -> (Vec<Value>, Vec<Value>, Value) {
    let head = common::head(url);
    let statuses = batch(
        url,
        &(1..=head)
            .map(|h| ("ledger_getSoftConfirmationStatus", json!([h])))
            .collect::<Vec<_>>(),
    );
    let l1 = num(&call(url, "ledger_getLastScannedL1Height", "[]"));
    let mut calls = Vec::new();
    for n in first_slot..=l1 {
        calls.push(("ledger_getSequencerCommitmentsOnSlotByNumber", json!([n])));
        calls.push(("ledger_getVerifiedBatchProofsBySlotHeight", json!([n])));
    }
    (
        statuses,
        batch(url, &calls),
        call(url, "ledger_getLastVerifiedBatchProof", "[]"),
    )
}

#[test]
fn wire_citrea_answers_in_the_shapes_of_a_citrea_node() {
    // The same questions to the Citrea stand-in and to a ledgerd devnet with
    // --wire citrea: the answers have the same shapes (keys, types, case).
    let stand_in = CitreaUpstream::start(Options::default());
    let node = Ledgerd::builder()
        .dev(300, 0)
        .args(&["--wire", "citrea"])
        .start();
    let ours = |m: &str, p: &str| node.post(&common::rpc::request(m, p));
    let theirs = |m: &str, p: &str| {
        post(
            &stand_in.url,
            &serde_json::from_str(&common::rpc::request(m, p)).unwrap(),
        )
    };

    // Statuses lowercase; a height not stored is Citrea's error.
    for h in [1, 150, 300] {
        let s = ours("ledger_getSoftConfirmationStatus", &format!("[{h}]"))["result"].clone();
        assert!(
            ["trusted", "finalized", "proven"].contains(&s.as_str().unwrap()),
            "{s}"
        );
    }
    let statuses: Vec<String> = (1..=300)
        .map(|h| {
            ours("ledger_getSoftConfirmationStatus", &format!("[{h}]"))["result"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    for s in ["trusted", "finalized", "proven"] {
        assert!(statuses.iter().any(|x| x == s), "{s}");
    }
    let a = ours("ledger_getSoftConfirmationStatus", "[301]");
    let b = theirs("ledger_getSoftConfirmationStatus", "[401]");
    assert_eq!(a["error"]["code"], b["error"]["code"]);
    assert_eq!(a["error"]["message"], b["error"]["message"]);
    assert_eq!(
        a["error"]["data"],
        json!("Soft confirmation at height 301 not processed yet.")
    );
    assert!(ours("ledger_getSoftConfirmationStatus", "[0]")["error"].is_object());

    // Ranges: 20 blocks, not 21, with Citrea's code, message and text.
    let a = ours("ledger_getSoftConfirmationRange", "[1,20]");
    assert_eq!(a["result"].as_array().map(Vec::len), Some(20));
    let a = ours("ledger_getSoftConfirmationRange", "[1,21]");
    let b = theirs("ledger_getSoftConfirmationRange", "[1,21]");
    assert_eq!(a["error"], b["error"]);
    assert_eq!(
        a["error"]["data"],
        json!("requested batch range too large. Max: 20")
    );

    // Method 11: an array of {proof, proofOutput}, no height; null elsewhere.
    let slot = (1000..1200)
        .find(|n| {
            !ours(
                "ledger_getVerifiedBatchProofsBySlotHeight",
                &format!("[{n}]"),
            )["result"]
                .is_null()
        })
        .expect("a slot with a proof");
    let a = ours(
        "ledger_getVerifiedBatchProofsBySlotHeight",
        &format!("[{slot}]"),
    )["result"]
        .clone();
    let their_slot = *stand_in.chain.proofs.keys().next().unwrap();
    let b = theirs(
        "ledger_getVerifiedBatchProofsBySlotHeight",
        &format!("[{their_slot}]"),
    )["result"]
        .clone();
    assert_eq!(shape(&a), shape(&b), "{a}\n{b}");
    assert_eq!(a.as_array().map(Vec::len), Some(1));
    assert!(a[0].get("height").is_none());
    assert!(ours("ledger_getVerifiedBatchProofsBySlotHeight", "[1001]")["result"].is_null());

    // Method 12: height outside the nested proof.
    let a = ours("ledger_getLastVerifiedBatchProof", "[]")["result"].clone();
    let b = theirs("ledger_getLastVerifiedBatchProof", "[]")["result"].clone();
    assert_eq!(shape(&a), shape(&b), "{a}\n{b}");
    assert!(num(&a["height"]) >= slot);

    // Sync status answers under Citrea's name (and the seed's).
    let a = ours("citrea_syncStatus", "[]")["result"].clone();
    assert_eq!(
        shape(&a),
        shape(&theirs("citrea_syncStatus", "[]")["result"])
    );
    assert_eq!(ours("svc_syncStatus", "[]")["result"], a);
    assert_eq!(
        theirs("svc_syncStatus", "[]")["error"]["code"],
        json!(-32601)
    );

    // Blocks and commitments: the same shapes as the stand-in's.
    assert_eq!(
        shape(&ours("ledger_getSoftConfirmationByNumber", "[10]")["result"]),
        shape(&theirs("ledger_getSoftConfirmationByNumber", "[10]")["result"])
    );
    let their_slot = stand_in.chain.commitments.keys().next().unwrap();
    assert_eq!(
        shape(&ours("ledger_getSequencerCommitmentsOnSlotByNumber", "[1008]")["result"]),
        shape(
            &theirs(
                "ledger_getSequencerCommitmentsOnSlotByNumber",
                &format!("[{their_slot}]")
            )["result"]
        )
    );
}

/// A value's shape: the same JSON with every string and number replaced by
/// its type (arrays of objects by the shape of their first item).
fn shape(v: &Value) -> Value {
    match v {
        Value::Null => json!("null"),
        Value::Bool(_) => json!("bool"),
        Value::Number(_) => json!("number"),
        Value::String(s) if s.chars().all(|c| c.is_ascii_hexdigit()) => json!("hex"),
        Value::String(_) => json!("string"),
        // Arrays of objects by their first item's shape; others (bytes,
        // index lists, possibly empty) are just arrays.
        Value::Array(a) => match a.first() {
            Some(first @ Value::Object(_)) => json!([shape(first)]),
            _ => json!("array"),
        },
        Value::Object(o) => Value::Object(
            o.iter()
                // Keys of state diffs are data, not shape.
                .map(|(k, v)| match k.as_str() {
                    "stateDiff" => (k.clone(), json!("map")),
                    _ => (k.clone(), shape(v)),
                })
                .collect(),
        ),
    }
}

#[test]
fn the_upstream_client_reads_the_sync_status_of_a_citrea_node_and_of_a_ledgerd() {
    use ledgerd::source::upstream::{Upstream, UpstreamConfig};
    // Citrea answers only citrea_syncStatus.
    let stand_in = CitreaUpstream::start(Options {
        blocks: 100,
        seed: 7,
        ..Options::default()
    });
    let client = Upstream::new(UpstreamConfig::new(&stand_in.url));
    let l1 = stand_in.chain.last_scanned;
    let got = client.sync_status().unwrap();
    assert_eq!((got.l1.synced, got.l1.head), (l1, l1));
    assert_eq!((got.l2.synced, got.l2.head), (100, 100));
    // A ledgerd answers both names.
    let node = Ledgerd::builder().dev(40, 0).start();
    let client = Upstream::new(UpstreamConfig::new(&node.url));
    let got = client.sync_status().unwrap();
    assert_eq!((got.l2.synced, got.l2.head), (40, 40));
    assert_eq!(got.l1.synced, got.l1.head);
    assert!(got.l1.synced >= 1000);
}

/// The stand-in as a Citrea chain without a network name whose prover ran
/// Citrea's testnet guests (v0.6.2's `batch-0.elf`, `batch-1.elf`): Genesis
/// rules below 150, Kumquat from it, so proofs of both eras claim images.
fn testnet_guest_upstream() -> CitreaUpstream {
    use ledgerd::proof::image_ids::{TESTNET_BATCH_0, TESTNET_BATCH_1};
    CitreaUpstream::start(Options {
        blocks: 300,
        kumquat_height: 150,
        seed: 6,
        images: Some((TESTNET_BATCH_0, TESTNET_BATCH_1)),
        ..Options::default()
    })
}

fn health_of(url: &str) -> Value {
    serde_json::from_str(&get(url, "/health")).expect("/health is JSON")
}

#[test]
fn a_follower_without_a_network_name_accepts_fakes_claiming_citreas_testnet_images_and_ends_the_same(
) {
    let upstream = testnet_guest_upstream();
    let chain = &upstream.chain;
    let key = hex::encode(chain.key);
    let dir = tempfile::tempdir().unwrap();
    let rules = ["--kumquat-height", "150", "--sequencer-pubkey", &key];
    let f = follower(&dir.path().join("f"), &upstream.url, &rules);
    wait_synced(&f, 300, chain.last_scanned);
    let fv = view(&f.url);
    assert_same_view(&fv, &view(&upstream.url));
    assert!(fv.statuses[..149].iter().all(|s| s == "proven"));
    assert!(
        fv.statuses.contains(&json!("proven")) && fv.statuses[149..].contains(&json!("proven"))
    );

    // Not pinned: said once at start, shown and counted.
    let log = f.stderr();
    assert_eq!(
        log.matches("batch-proof images are not pinned").count(),
        1,
        "{log}"
    );
    assert!(log.contains("--batch-proof-image genesis=HEX"), "{log}");
    let proofs: usize = chain
        .proofs
        .range(..=chain.last_scanned)
        .map(|(_, l)| l.len())
        .sum();
    let h = health_of(&f.url);
    assert_eq!(h["batchProofImages"]["pinnedBy"], Value::Null, "{h}");
    assert_eq!(h["batchProofImages"]["kumquat"], Value::Null, "{h}");
    assert_eq!(h["proofsOnUnpinnedImages"], json!(proofs), "{h}");
    assert_eq!(h["proofsOnFakeReceipts"], json!(proofs), "{h}");
    let m = get(&f.url, "/metrics");
    assert_eq!(
        metric(&m, "ledgerd_sync_proofs_on_unpinned_images_total"),
        proofs as u64
    );
    assert_eq!(metric(&m, "ledgerd_sync_batch_proof_images_pinned"), 0);

    // Pinned to the images the chain's guests have: the same, nothing
    // counted as unpinned, nothing said about it.
    use ledgerd::proof::image_ids::{TESTNET_BATCH_0, TESTNET_BATCH_1};
    let g = format!("genesis={}", hex::encode(TESTNET_BATCH_0));
    let k = format!("kumquat={}", hex::encode(TESTNET_BATCH_1));
    let mut args = rules.to_vec();
    args.extend(["--batch-proof-image", &g, "--batch-proof-image", &k]);
    let pinned = follower(&dir.path().join("pinned"), &upstream.url, &args);
    wait_synced(&pinned, 300, chain.last_scanned);
    assert_same_view(&view(&pinned.url), &fv);
    let h = health_of(&pinned.url);
    assert_eq!(
        h["batchProofImages"]["pinnedBy"], "--batch-proof-image",
        "{h}"
    );
    assert_eq!(
        h["batchProofImages"]["genesis"],
        json!(hex::encode(TESTNET_BATCH_0)),
        "{h}"
    );
    assert_eq!(h["proofsOnUnpinnedImages"], 0, "{h}");
    assert!(!pinned.stderr().contains("not pinned"));
}

#[test]
fn pins_that_are_not_the_chains_images_prove_nothing_and_the_refusal_is_logged_once_and_shown_in_health(
) {
    use ledgerd::proof::image_ids::{DEVNET_BATCH_1, TESTNET_BATCH_0};
    let upstream = testnet_guest_upstream();
    let chain = &upstream.chain;
    let key = hex::encode(chain.key);
    let dir = tempfile::tempdir().unwrap();
    // devnet's Kumquat guest, not testnet's: every Kumquat-era proof's
    // claim differs from the pin. Genesis pinned right.
    let g = format!("genesis={}", hex::encode(TESTNET_BATCH_0));
    let k = format!("kumquat={}", hex::encode(DEVNET_BATCH_1));
    let f = follower(
        &dir.path().join("f"),
        &upstream.url,
        &[
            "--kumquat-height",
            "150",
            "--sequencer-pubkey",
            &key,
            "--batch-proof-image",
            &g,
            "--batch-proof-image",
            &k,
        ],
    );
    // Retried again and again (with back-off), counted every time.
    f.wait_for_metric(
        Duration::from_secs(60),
        "ledgerd_sync_verification_failures_total",
        &[("check", "receipt")],
        4,
    );
    f.wait_for(Duration::from_secs(30), "all blocks", |f| f.head() == 300);
    let h = health_of(&f.url);
    let waiting = &h["waitingOn"];
    assert_eq!(waiting["check"], "receipt", "{h}");
    let why = waiting["why"].as_str().expect("why");
    let slot = num(&waiting["slot"]);
    assert!(
        why.starts_with(&format!("check receipt failed: proof on slot {slot}: ")),
        "{why}"
    );
    assert!(
        why.contains("is not the batch-proof image pinned for the Kumquat era"),
        "{why}"
    );
    assert!(why.contains("check the pins"), "{why}");
    assert!(num(&waiting["refusals"]) >= 4, "{h}");
    // The first Kumquat-era proof stops the scan: nothing above the fork
    // is Proven; what the Genesis-era proofs proved before it is.
    let statuses = view(&f.url).statuses;
    assert!(!statuses[149..].contains(&json!("proven")), "{statuses:?}");
    assert_eq!(
        num(&call(&f.url, "ledger_getLastScannedL1Height", "[]")),
        slot - 1
    );
    // Logged once, not once per retry.
    let log = f.stderr();
    assert_eq!(log.matches("check receipt failed").count(), 1, "{log}");
    assert_eq!(
        h["batchProofImages"]["kumquat"],
        json!(hex::encode(DEVNET_BATCH_1))
    );
}
