//! The devnet on a real regtest bitcoind (`--dev --dev-bitcoin-rpc`): its DA
//! slots are blocks it mines, its blocks point at them, and its commitments
//! and proofs are on chain as Citrea reveals signed with the regtest DA keys.
//! Everything is checked against bitcoind's own answers (getblockhash,
//! getblock) and read back with `source::bitcoin::reveal`; a restart on the
//! same data dir and regtest continues, another regtest is refused.

use crate::common;

use std::collections::BTreeMap;

use bitcoin::consensus::deserialize;
use bitcoin::hashes::Hash as _;
use bitcoin::{Block, Transaction};
use common::bitcoind::Bitcoind;
use common::regtest::devnet_on;
use common::Ledgerd;
use ledgerd::source::bitcoin::body::MAX_PROOF_BYTES;
use ledgerd::source::bitcoin::keys::REGTEST;
use ledgerd::source::bitcoin::reveal::{self, LightClientTx};
use serde_json::{json, Value};

/// A hash as bitcoind prints it, in raw byte order (Citrea's daSlotHash).
fn raw_order(printed: &str) -> String {
    let mut bytes = hex::decode(printed).unwrap();
    bytes.reverse();
    hex::encode(bytes)
}

fn block_at(node: &Bitcoind, height: u64) -> Block {
    let hash = node.block_hash(height);
    let raw = node.call("getblock", json!([hash, 0]));
    deserialize(&hex::decode(raw.as_str().unwrap()).unwrap()).unwrap()
}

/// What a block carries for Citrea: commitments signed by the regtest
/// sequencer DA key as (merkle root hex, start, end), and the decompressed
/// bytes of proofs signed by the regtest prover DA key.
#[derive(Debug, Default, PartialEq)]
struct OnChain {
    commitments: Vec<(String, u64, u64)>,
    proofs: Vec<Vec<u8>>,
}

fn on_chain(block: &Block) -> OnChain {
    let sequencer = REGTEST.sequencer_key().unwrap();
    let prover = REGTEST.prover_key().unwrap();
    let mut found = OnChain::default();
    for tx in &block.txdata {
        if let Ok(c) = reveal::read_commitment(tx, &sequencer) {
            found
                .commitments
                .push((hex::encode(c.merkle_root), c.l2_start, c.l2_end));
        }
        match reveal::read_light_client(tx, &prover, MAX_PROOF_BYTES) {
            Ok(LightClientTx::Complete { proof }) => found.proofs.push(proof),
            Ok(LightClientTx::Aggregate { txids, wtxids }) => {
                let chunks: Vec<Option<Transaction>> = txids
                    .iter()
                    .map(|id| {
                        block
                            .txdata
                            .iter()
                            .find(|t| t.compute_txid().to_byte_array() == *id)
                            .cloned()
                    })
                    .collect();
                let proof =
                    reveal::read_chunked_proof(&txids, &wtxids, &chunks, MAX_PROOF_BYTES).unwrap();
                found.proofs.push(proof);
            }
            _ => {}
        }
    }
    found
}

/// What the devnet serves about slot `n`: its commitments and proofs.
fn served(devnet: &Ledgerd, n: u64) -> OnChain {
    let mut out = OnChain::default();
    let commitments = devnet.result(
        "ledger_getSequencerCommitmentsOnSlotByNumber",
        &format!("[{n}]"),
    );
    for c in commitments.as_array().into_iter().flatten() {
        assert_eq!(c["foundInL1"], n, "{c}");
        out.commitments.push((
            c["merkleRoot"].as_str().unwrap().to_string(),
            c["l2StartBlockNumber"].as_u64().unwrap(),
            c["l2EndBlockNumber"].as_u64().unwrap(),
        ));
    }
    let proofs = devnet.result(
        "ledger_getVerifiedBatchProofsBySlotHeight",
        &format!("[{n}]"),
    );
    let list: Vec<Value> = match &proofs {
        Value::Null => Vec::new(),
        Value::Array(a) => a
            .iter()
            .map(|p| p.get("proof").unwrap_or(p).clone())
            .collect(),
        one => vec![one["proof"].clone()],
    };
    for p in list {
        assert_eq!(p["height"], n, "{p}");
        let bytes = p["proof"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap() as u8)
            .collect();
        out.proofs.push(bytes);
    }
    out
}

/// A proof as `dev_prove` answers it: {proof, proofOutput, height}.
fn proof_object(answer: Value) -> Value {
    if answer["proofOutput"].is_null() && !answer["proof"].is_null() {
        answer["proof"].clone()
    } else {
        answer
    }
}

fn head(devnet: &Ledgerd) -> u64 {
    devnet
        .result("ledger_getHeadSoftConfirmationHeight", "[]")
        .as_u64()
        .unwrap()
}

/// Every block's daSlotHash and daSlotTxsCommitment are those of the regtest
/// block at its daSlotHeight (the witness root as rust-bitcoin computes it),
/// and every slot's commitments and proofs are exactly what is on chain.
/// Returns the slot each height points at.
fn check_against_bitcoind(devnet: &Ledgerd, node: &Bitcoind) -> BTreeMap<u64, u64> {
    let mut slots = BTreeMap::new();
    let mut blocks = BTreeMap::new();
    for h in 1..=head(devnet) {
        let sc = devnet.result("ledger_getSoftConfirmationByNumber", &format!("[{h}]"));
        let n = sc["daSlotHeight"].as_u64().unwrap();
        let block = blocks.entry(n).or_insert_with(|| block_at(node, n));
        assert_eq!(
            sc["daSlotHash"].as_str().unwrap(),
            raw_order(&node.block_hash(n)),
            "height {h}"
        );
        let witness_root = block
            .witness_root()
            .map(|r| hex::encode(r.to_byte_array()))
            .unwrap_or_else(|| hex::encode([0u8; 32]));
        assert_eq!(
            sc["daSlotTxsCommitment"].as_str().unwrap(),
            witness_root,
            "height {h}"
        );
        slots.insert(h, n);
    }
    let first = slots[&1];
    let scanned = devnet
        .result("ledger_getLastScannedL1Height", "[]")
        .as_u64()
        .unwrap();
    assert!(scanned <= node.block_count());
    for n in first..=scanned {
        assert_eq!(served(devnet, n), on_chain(&block_at(node, n)), "slot {n}");
    }
    slots
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn a_regtest_devnet_mines_its_slots_and_publishes_commitments_and_proofs_on_chain() {
    let node = Bitcoind::start();
    node.mine(7); // a regtest with blocks of its own before the devnet
    let dir = tempfile::tempdir().unwrap();
    let devnet = devnet_on(&node, &dir.path().join("data"), &[]);
    // 100 maturity blocks to its key, then its first slot.
    let genesis = 7 + 100 + 1;
    assert_eq!(node.block_count(), genesis);
    assert_eq!(devnet.result("dev_mine", "[60]"), 60);
    let c = devnet.result("dev_commit", "[]");
    assert_eq!(c["l2EndBlockNumber"], 60, "{c}");
    let p = proof_object(devnet.result("dev_prove", "[]"));
    assert!(!p.is_null());
    assert_eq!(devnet.result("dev_mine", "[6]"), 66);
    assert_eq!(
        devnet.result("ledger_getSoftConfirmationStatus", "[60]"),
        "Proven"
    );
    assert_eq!(
        devnet.result("ledger_getSoftConfirmationStatus", "[61]"),
        "Trusted"
    );

    let slots = check_against_bitcoind(&devnet, &node);
    assert_eq!(slots[&1], genesis, "height 1 points at the first slot");
    // Two blocks per slot, every slot a regtest block, the devnet its only miner.
    assert_eq!(node.block_count(), slots[&66]);
    // What landed where: automatic commitments of 16 blocks, the explicit
    // one, one proof per slot of commitments.
    let mut commitments = Vec::new();
    let mut proofs = 0;
    for n in genesis..=node.block_count() {
        let found = on_chain(&block_at(&node, n));
        commitments.extend(found.commitments.iter().map(|c| (c.1, c.2)));
        proofs += found.proofs.len();
    }
    assert_eq!(commitments, vec![(1, 16), (17, 32), (33, 48), (49, 60)]);
    assert_eq!(proofs, 4, "every commitment proven");
    // The served proof of dev_prove is the one on chain, signed by the prover key.
    let proof_slot = p["height"].as_u64().unwrap();
    let chain = on_chain(&block_at(&node, proof_slot));
    let served_bytes: Vec<u8> = p["proof"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap() as u8)
        .collect();
    assert_eq!(chain.proofs, vec![served_bytes]);
    // The proof's output names the commitments' slot by its real hash and
    // the regtest sequencer DA key.
    let commit_slot = c["foundInL1"].as_u64().unwrap();
    assert_eq!(
        p["proofOutput"]["daSlotHash"].as_str().unwrap(),
        raw_order(&node.block_hash(commit_slot))
    );
    assert_eq!(
        p["proofOutput"]["sequencerDaPublicKey"].as_str().unwrap(),
        REGTEST.sequencer
    );
    let status = devnet.result("svc_syncStatus", "[]");
    assert_eq!(
        status["l1Status"]["Synced"].as_u64(),
        Some(node.block_count()),
        "{status}"
    );

    // Another miner: the next call that needs a slot fails saying so; the
    // one after takes the foreign blocks as empty slots and goes on.
    node.mine(2);
    let tip = node.block_count();
    let answer = devnet.post(&common::rpc::request("dev_mine", "[4]"));
    let why = answer["error"]["data"].as_str().unwrap_or_default();
    assert!(why.contains("must be its only miner"), "{answer}");
    // (The failed call's blocks are still owed: the next call makes them too.)
    let now = head(&devnet);
    let after = devnet.result("dev_mine", "[8]").as_u64().unwrap();
    assert_eq!(after, now + 4 + 8);
    assert_eq!(head(&devnet), after);
    assert!(node.block_count() > tip);
    check_against_bitcoind(&devnet, &node);
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn a_restarted_regtest_devnet_continues_and_another_regtest_is_refused() {
    let node = Bitcoind::start();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let devnet = devnet_on(&node, &data, &[]);
    assert_eq!(devnet.result("dev_mine", "[21]"), 21);
    let c = devnet.result("dev_commit", "[]");
    assert_eq!(
        (
            c["l2StartBlockNumber"].as_u64(),
            c["l2EndBlockNumber"].as_u64()
        ),
        (Some(17), Some(21))
    );
    let tip = node.block_count();
    devnet.kill();

    let devnet = devnet_on(&node, &data, &[]);
    assert_eq!(head(&devnet), 21);
    assert_eq!(node.block_count(), tip, "a restart mines nothing by itself");
    assert_eq!(devnet.result("dev_mine", "[30]"), 51);
    let p = proof_object(devnet.result("dev_prove", "[]"));
    assert!(!p.is_null());
    for h in [1, 16, 17, 21] {
        assert_eq!(
            devnet.result("ledger_getSoftConfirmationStatus", &format!("[{h}]")),
            "Proven",
            "height {h}"
        );
    }
    let slots = check_against_bitcoind(&devnet, &node);
    // Slots follow one another across the restart.
    assert!(slots
        .values()
        .zip(slots.values().skip(1))
        .all(|(a, b)| b - a <= 1));
    assert_eq!(
        Some(node.block_count()),
        p["height"].as_u64(),
        "dev_prove mined the tip"
    );
    devnet.kill();

    // The same data dir on another regtest: refused, saying why.
    let other = Bitcoind::start();
    let cookie = other.cookie_path().display().to_string();
    let (status, _, stderr) = common::process::run_to_exit(&[
        "--dev",
        "--dev-block-ms",
        "0",
        "--dev-bitcoin-rpc",
        &other.url,
        "--bitcoin-rpc-cookie",
        &cookie,
        "--bind",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
    ]);
    assert!(!status.success());
    assert!(
        stderr.contains("is not the one this devnet mined"),
        "{stderr}"
    );
    // ... and without --dev-bitcoin-rpc.
    let (status, _, stderr) = common::process::run_to_exit(&[
        "--dev",
        "--dev-block-ms",
        "0",
        "--bind",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
    ]);
    assert!(!status.success());
    assert!(stderr.contains("pass --dev-bitcoin-rpc"), "{stderr}");
}
