//! A stand-in for a Citrea v0.6 full node, for follower tests: an
//! in-process HTTP server over a small chain made here.
//!
//! It follows Citrea v0.6.2's source, not ledgerd's, and shares no code with
//! ledgerd's `chain`, `json` or `devnet` modules (blocks are hashed and
//! signed here with sha2 and ed25519-dalek directly):
//!
//! - answer shapes of `sov-ledger-rpc` / `rollup-interface/src/node/rpc`:
//!   statuses lowercase (`SoftConfirmationStatus` is `rename_all =
//!   "camelCase"`), `ledger_getVerifiedBatchProofsBySlotHeight` `null` or an
//!   array of `{proof, proofOutput}` without height,
//!   `ledger_getLastVerifiedBatchProof` `{"proof":{proof, proofOutput},"height":n}`
//!   (the first proof of the highest slot that has one);
//! - `get_soft_confirmations_range`: `start <= end` and `end - start < 20`,
//!   else -32001 `LEDGER_RPC_ERROR` with data `requested batch range too
//!   large. Max: 20`; the status of a height not stored is the error
//!   `Soft confirmation at height N not processed yet.`;
//! - the sync status only as `citrea_syncStatus` (`svc_syncStatus` is not a
//!   method: -32601);
//! - `include_tx_body = false` (optional): blocks answer `txs: []`;
//! - the full node's L1 handling (`da_block_handler.rs`): slot by slot, a
//!   slot's proofs before its commitments; commitments mark their heights
//!   Finalized; a proof's `daSlotHash` names the slot whose commitments it
//!   proves, those are sorted by start, the `preprovenCommitments` positions
//!   dropped, `sequencerCommitmentsRange` indexes the rest, and their heights
//!   become Proven;
//! - blocks by fork: below `kumquat_height` the Genesis rules (hash =
//!   SHA-256 of the borsh message, signature over the message), from it the
//!   Kumquat rules (hash = SHA-256 of the big-endian fields, signature over
//!   the hash); proofs of Genesis-era heights carry zero prev/final hashes
//!   and lastL2Height 0;
//! - proof bytes as a Citrea node stores and serves them: bincode of a
//!   risc0-zkvm 1.2 `Receipt` whose journal is the borsh circuit output
//!   (`BatchProofCircuitOutput`, `OldBatchProofCircuitOutput` for a
//!   Genesis-era proof; `rollup-interface/src/state_machine/zk/mod.rs`),
//!   made as a prover under `RISC0_DEV_MODE` makes them: a Fake receipt
//!   claiming `ReceiptClaim::ok(image, journal)`. The image is ledgerd's
//!   devnet's ([`FAKE_IMAGE`]) or, with [`Options::images`], the ones a
//!   Citrea build of the chain runs.
//!
//! The chain: `blocks` L2 blocks, four per DA slot from slot 500. Every ten
//! blocks make a commitment; commitments land three to a slot, listed out
//! of order (the second first). For each group of three, one proof proves
//! the first commitment (range [0,0]) three slots later, and a second proof
//! proves the other two (preproven [0], range [0,1]) on the slot where the
//! next group's commitments land, so that slot has a proof before its
//! commitments.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::thread::JoinHandle;

use ed25519_dalek::{Signer, SigningKey};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The first DA slot blocks point at.
pub const FIRST_SLOT: u64 = 500;
/// L2 blocks per DA slot.
pub const BLOCKS_PER_SLOT: u64 = 4;
/// Blocks per sequencer commitment.
pub const COMMITMENT_BLOCKS: u64 = 10;
/// Commitments landing on one slot (and proven by two proofs).
pub const GROUP: u64 = 3;
/// Citrea's `MAX_BATCHES_PER_REQUEST`.
pub const MAX_RANGE: u64 = 20;

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// How the stand-in behaves.
#[derive(Clone, Debug)]
pub struct Options {
    pub blocks: u64,
    /// Heights below it follow the Genesis rules (0: Kumquat from the start).
    pub kumquat_height: u64,
    /// `include_tx_body = false`: answer `txs: []`.
    pub withhold_bodies: bool,
    pub seed: u64,
    /// The images its fake receipts claim, (Genesis era, Kumquat): those of
    /// the guests a Citrea build of that chain runs (`bin/citrea/src/guests.rs`);
    /// `None`: [`FAKE_IMAGE`].
    pub images: Option<([u8; 32], [u8; 32])>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            blocks: 400,
            kumquat_height: 0,
            withhold_bodies: false,
            seed: 1,
            images: None,
        }
    }
}

/// One signed block.
#[derive(Clone, Debug)]
pub struct Block {
    pub l2_height: u64,
    pub da_slot_height: u64,
    pub da_slot_hash: [u8; 32],
    pub da_slot_txs_commitment: [u8; 32],
    pub hash: [u8; 32],
    pub prev_hash: [u8; 32],
    pub txs: Vec<Vec<u8>>,
    pub state_root: [u8; 32],
    pub signature: [u8; 64],
    pub pub_key: [u8; 32],
    pub deposit_data: Vec<Vec<u8>>,
    pub l1_fee_rate: u128,
    pub timestamp: u64,
}

/// Kumquat: SHA-256 over the fields, integers big-endian, blobs as they are.
pub fn kumquat_hash(b: &Block) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b.l2_height.to_be_bytes());
    h.update(b.da_slot_height.to_be_bytes());
    h.update(b.da_slot_hash);
    h.update(b.da_slot_txs_commitment);
    for tx in &b.txs {
        h.update(tx);
    }
    for d in &b.deposit_data {
        h.update(d);
    }
    h.update(b.l1_fee_rate.to_be_bytes());
    h.update(b.timestamp.to_be_bytes());
    h.finalize().into()
}

/// Genesis: the borsh encoding of `UnsignedSoftConfirmationV1`.
pub fn genesis_message(b: &Block) -> Vec<u8> {
    fn blobs(out: &mut Vec<u8>, list: &[Vec<u8>]) {
        out.extend_from_slice(&(list.len() as u32).to_le_bytes());
        for blob in list {
            out.extend_from_slice(&(blob.len() as u32).to_le_bytes());
            out.extend_from_slice(blob);
        }
    }
    let mut m = Vec::new();
    m.extend_from_slice(&b.l2_height.to_le_bytes());
    m.extend_from_slice(&b.da_slot_height.to_le_bytes());
    m.extend_from_slice(&b.da_slot_hash);
    m.extend_from_slice(&b.da_slot_txs_commitment);
    blobs(&mut m, &b.txs);
    blobs(&mut m, &b.deposit_data);
    m.extend_from_slice(&b.l1_fee_rate.to_le_bytes());
    m.extend_from_slice(&b.timestamp.to_le_bytes());
    m
}

/// rs_merkle's SHA-256 root: leaves as they are, an odd last node promoted.
pub fn merkle_root(leaves: &[[u8; 32]]) -> [u8; 32] {
    let mut level = leaves.to_vec();
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|p| match p {
                [l, r] => sha256(&[l, r]),
                [one] => *one,
                _ => unreachable!(),
            })
            .collect();
    }
    level[0]
}

#[derive(Clone, Debug)]
pub struct Commitment {
    pub found_in_l1: u64,
    pub merkle_root: [u8; 32],
    pub start: u64,
    pub end: u64,
}

/// The image ID ledgerd's devnet proofs claim, which a follower without
/// `--network` checks fakes against (32 ASCII bytes, no guest's).
pub const FAKE_IMAGE: [u8; 32] = *b"ledgerd devnet: fake batch proof";

/// Citrea's `BatchProofCircuitOutput` (v0.6.2), as its guest commits it.
#[derive(borsh::BorshSerialize)]
struct BatchProofCircuitOutput {
    initial_state_root: [u8; 32],
    final_state_root: [u8; 32],
    prev_soft_confirmation_hash: [u8; 32],
    final_soft_confirmation_hash: [u8; 32],
    state_diff: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    da_slot_hash: [u8; 32],
    sequencer_commitments_range: (u32, u32),
    sequencer_public_key: Vec<u8>,
    sequencer_da_public_key: Vec<u8>,
    last_l2_height: u64,
    preproven_commitments: Vec<usize>,
}

/// Citrea's `OldBatchProofCircuitOutput`: the Genesis-era guest's.
#[derive(borsh::BorshSerialize)]
struct OldBatchProofCircuitOutput {
    initial_state_root: [u8; 32],
    final_state_root: [u8; 32],
    initial_batch_hash: [u8; 32],
    state_diff: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    da_slot_hash: [u8; 32],
    sequencer_commitments_range: (u32, u32),
    sequencer_public_key: Vec<u8>,
    sequencer_da_public_key: Vec<u8>,
    /// `OldChainValidityCondition { prev_hash, block_hash }`.
    validity_condition: ([u8; 32], [u8; 32]),
    /// `SpecId::Genesis`.
    last_active_spec_id: u8,
    preproven_commitments: Vec<usize>,
}

/// The sequencer's DA key this chain's proofs name.
const SEQUENCER_DA_KEY: [u8; 2] = [0x02, 0xaa];

#[derive(Clone, Debug)]
pub struct Proof {
    /// The receipt's bytes (see the module docs).
    pub proof: Vec<u8>,
    /// Four bytes that make this proof's state diff its own.
    pub salt: [u8; 4],
    pub initial_state_root: [u8; 32],
    pub final_state_root: [u8; 32],
    pub prev_hash: [u8; 32],
    pub final_hash: [u8; 32],
    pub da_slot_hash: [u8; 32],
    pub range: (u64, u64),
    pub preproven: Vec<u64>,
    pub last_l2_height: u64,
}

/// The chain and what a Citrea full node that scanned it would hold.
pub struct Chain {
    pub options: Options,
    pub key: [u8; 32],
    pub genesis_root: [u8; 32],
    pub blocks: Vec<Block>,
    /// Commitments and proofs by the slot they land on, as listed there.
    pub commitments: BTreeMap<u64, Vec<Commitment>>,
    pub proofs: BTreeMap<u64, Vec<Proof>>,
    pub last_scanned: u64,
    /// Status of each height (index h-1) after scanning to `last_scanned`.
    pub statuses: Vec<&'static str>,
}

pub fn slot_of(h: u64) -> u64 {
    FIRST_SLOT + (h - 1) / BLOCKS_PER_SLOT
}

fn slot_hash(seed: u64, slot: u64) -> [u8; 32] {
    sha256(&[
        b"citrea-stand-in/l1",
        &seed.to_le_bytes(),
        &slot.to_le_bytes(),
    ])
}

impl Chain {
    pub fn new(options: Options) -> Chain {
        let seed = options.seed;
        let signing =
            SigningKey::from_bytes(&sha256(&[b"citrea-stand-in/key", &seed.to_le_bytes()]));
        let key = signing.verifying_key().to_bytes();
        let genesis_root = sha256(&[b"citrea-stand-in/genesis", &seed.to_le_bytes()]);
        let mut blocks: Vec<Block> = Vec::new();
        let (mut prev_hash, mut prev_root) = ([0u8; 32], genesis_root);
        for h in 1..=options.blocks {
            let slot = slot_of(h);
            let noise = sha256(&[
                b"citrea-stand-in/block",
                &seed.to_le_bytes(),
                &h.to_le_bytes(),
            ]);
            let txs = (0..h % 3)
                .map(|i| noise[..8 + 8 * i as usize].to_vec())
                .collect();
            let deposit_data = if h % 7 == 0 {
                vec![noise[20..].to_vec()]
            } else {
                Vec::new()
            };
            let mut b = Block {
                l2_height: h,
                da_slot_height: slot,
                da_slot_hash: slot_hash(seed, slot),
                da_slot_txs_commitment: sha256(&[b"txs", &slot.to_le_bytes()]),
                hash: [0; 32],
                prev_hash,
                txs,
                state_root: sha256(&[&prev_root, &h.to_le_bytes()]),
                signature: [0; 64],
                pub_key: key,
                deposit_data,
                // Above 2^53: a JSON number no double holds exactly.
                l1_fee_rate: (1u128 << 60) + u128::from(h),
                timestamp: 1_700_000_000 + h,
            };
            if h < options.kumquat_height {
                let message = genesis_message(&b);
                b.hash = sha256(&[&message]);
                b.signature = signing.sign(&message).to_bytes();
            } else {
                b.hash = kumquat_hash(&b);
                b.signature = signing.sign(&b.hash).to_bytes();
            }
            prev_hash = b.hash;
            prev_root = b.state_root;
            blocks.push(b);
        }

        let mut commitments: BTreeMap<u64, Vec<Commitment>> = BTreeMap::new();
        let mut proofs: BTreeMap<u64, Vec<Proof>> = BTreeMap::new();
        let commitment = |i: u64, slot: u64| {
            let (start, end) = (i * COMMITMENT_BLOCKS + 1, (i + 1) * COMMITMENT_BLOCKS);
            let leaves: Vec<[u8; 32]> =
                (start..=end).map(|h| blocks[h as usize - 1].hash).collect();
            Commitment {
                found_in_l1: slot,
                merkle_root: merkle_root(&leaves),
                start,
                end,
            }
        };
        let group_blocks = GROUP * COMMITMENT_BLOCKS;
        let group_slot = |g: u64| slot_of((g + 1) * group_blocks) + 1;
        let groups = options.blocks / group_blocks;
        for g in 0..groups {
            let slot = group_slot(g);
            let listed = [GROUP * g + 1, GROUP * g, GROUP * g + 2];
            commitments.insert(slot, listed.iter().map(|&i| commitment(i, slot)).collect());
        }
        let root_at = |h: u64| {
            if h == 0 {
                genesis_root
            } else {
                blocks[h as usize - 1].state_root
            }
        };
        let hash_at = |h: u64| {
            if h == 0 {
                [0u8; 32]
            } else {
                blocks[h as usize - 1].hash
            }
        };
        let kumquat = options.kumquat_height;
        let make_proof = |g: u64, first: u64, last: u64, range, preproven: Vec<u64>| {
            let (start, end) = (
                first * COMMITMENT_BLOCKS + 1,
                (last + 1) * COMMITMENT_BLOCKS,
            );
            let genesis_era = end < kumquat;
            let salt = sha256(&[b"proof", &g.to_le_bytes(), &first.to_le_bytes()]);
            let mut p = Proof {
                proof: Vec::new(),
                salt: [salt[0], salt[1], salt[2], salt[3]],
                initial_state_root: root_at(start - 1),
                final_state_root: root_at(end),
                prev_hash: if genesis_era {
                    [0; 32]
                } else {
                    hash_at(start - 1)
                },
                final_hash: if genesis_era { [0; 32] } else { hash_at(end) },
                da_slot_hash: slot_hash(seed, group_slot(g)),
                range,
                preproven,
                last_l2_height: if genesis_era { 0 } else { end },
            };
            let image = match options.images {
                None => FAKE_IMAGE,
                Some((genesis, _)) if genesis_era => genesis,
                Some((_, kumquat)) => kumquat,
            };
            p.proof = receipt_of(&p, &key, image, genesis_era.then(|| hash_at(start - 1)));
            p
        };
        for g in 0..groups {
            let first = GROUP * g;
            proofs
                .entry(group_slot(g) + 3)
                .or_default()
                .push(make_proof(g, first, first, (0, 0), vec![]));
            proofs
                .entry(group_slot(g + 1))
                .or_default()
                .push(make_proof(g, first + 1, first + 2, (0, 1), vec![0]));
        }

        let last_scanned = slot_of(options.blocks);
        let mut chain = Chain {
            options,
            key,
            genesis_root,
            blocks,
            commitments,
            proofs,
            last_scanned,
            statuses: Vec::new(),
        };
        chain.statuses = chain.scan();
        chain
    }

    /// The statuses a Citrea full node reaches scanning to `last_scanned`.
    fn scan(&self) -> Vec<&'static str> {
        let mut statuses = vec!["trusted"; self.blocks.len()];
        let mut set = |from: u64, to: u64, s: &'static str| {
            for h in from..=to {
                statuses[h as usize - 1] = s;
            }
        };
        for slot in FIRST_SLOT..=self.last_scanned {
            for p in self.proofs.get(&slot).into_iter().flatten() {
                for c in self.proven_by(p) {
                    set(c.start, c.end, "proven");
                }
            }
            for c in self.commitments.get(&slot).into_iter().flatten() {
                set(c.start, c.end, "finalized");
            }
        }
        statuses
    }

    /// The commitments a proof proves, by `process_zk_proof`.
    pub fn proven_by(&self, p: &Proof) -> Vec<Commitment> {
        let slot = (FIRST_SLOT..=self.last_scanned)
            .find(|s| slot_hash(self.options.seed, *s) == p.da_slot_hash)
            .expect("a proof names a scanned slot");
        let mut on_slot = self.commitments[&slot].clone();
        on_slot.sort_by_key(|c| c.start);
        let left: Vec<Commitment> = on_slot
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !p.preproven.contains(&(*i as u64)))
            .map(|(_, c)| c)
            .collect();
        left[p.range.0 as usize..=p.range.1 as usize].to_vec()
    }

    pub fn slot_hash(&self, slot: u64) -> [u8; 32] {
        slot_hash(self.options.seed, slot)
    }

    fn block_json(&self, b: &Block) -> Value {
        let txs: Vec<String> = if self.options.withhold_bodies {
            Vec::new()
        } else {
            b.txs.iter().map(hex::encode).collect()
        };
        json!({
            "l2Height": b.l2_height,
            "daSlotHeight": b.da_slot_height,
            "daSlotHash": hex::encode(b.da_slot_hash),
            "daSlotTxsCommitment": hex::encode(b.da_slot_txs_commitment),
            "hash": hex::encode(b.hash),
            "prevHash": hex::encode(b.prev_hash),
            "txs": txs,
            "stateRoot": hex::encode(b.state_root),
            "softConfirmationSignature": hex::encode(b.signature),
            "pubKey": hex::encode(b.pub_key),
            "depositData": b.deposit_data.iter().map(hex::encode).collect::<Vec<_>>(),
            "l1FeeRate": b.l1_fee_rate,
            "timestamp": b.timestamp,
        })
    }

    fn proof_json(&self, p: &Proof) -> Value {
        json!({
            "proof": p.proof,
            "proofOutput": {
                "initialStateRoot": hex::encode(p.initial_state_root),
                "finalStateRoot": hex::encode(p.final_state_root),
                "prevSoftConfirmationHash": hex::encode(p.prev_hash),
                "finalSoftConfirmationHash": hex::encode(p.final_hash),
                "stateDiff": {"0a0b": hex::encode(p.salt), "0c": null},
                "daSlotHash": hex::encode(p.da_slot_hash),
                "sequencerCommitmentsRange": [p.range.0, p.range.1],
                "sequencerPublicKey": hex::encode(self.key),
                "sequencerDaPublicKey": hex::encode(SEQUENCER_DA_KEY),
                "preprovenCommitments": p.preproven,
                "lastL2Height": p.last_l2_height,
            }
        })
    }

    fn commitments_json(&self, slot: u64) -> Value {
        if slot > self.last_scanned {
            return Value::Null;
        }
        match self.commitments.get(&slot) {
            None => Value::Null,
            Some(list) => list
                .iter()
                .map(|c| {
                    json!({
                        "foundInL1": c.found_in_l1,
                        "merkleRoot": hex::encode(c.merkle_root),
                        "l2StartBlockNumber": c.start,
                        "l2EndBlockNumber": c.end,
                    })
                })
                .collect(),
        }
    }

    fn head(&self) -> u64 {
        self.blocks.len() as u64
    }

    fn block(&self, h: u64) -> Value {
        match h.checked_sub(1).and_then(|i| self.blocks.get(i as usize)) {
            Some(b) => self.block_json(b),
            None => Value::Null,
        }
    }

    /// One call's `Ok(result)` or `Err((code, message, data))`.
    fn answer(&self, method: &str, params: &Value) -> Result<Value, (i64, &'static str, String)> {
        let num = |i: usize| -> Result<u64, (i64, &'static str, String)> {
            let v = &params[i];
            v.as_u64()
                .or_else(|| {
                    v.as_str()
                        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
                })
                .ok_or((
                    -32602,
                    "Invalid params",
                    format!("parameter {i} is not a number"),
                ))
        };
        let hash = |i: usize| -> Result<[u8; 32], (i64, &'static str, String)> {
            params[i]
                .as_str()
                .and_then(|s| hex::decode(s.trim_start_matches("0x")).ok())
                .and_then(|b| b.try_into().ok())
                .ok_or((-32602, "Invalid params", "not a 32-byte hex hash".into()))
        };
        let ledger = |data: String| (-32001, "LEDGER_RPC_ERROR", data);
        Ok(match method {
            "citrea_syncStatus" => json!({
                "l1Status": {"Synced": self.last_scanned},
                "l2Status": {"Synced": self.head()},
            }),
            "ledger_getHeadSoftConfirmationHeight" => json!(self.head()),
            "ledger_getHeadSoftConfirmation" => self.block(self.head()),
            "ledger_getSoftConfirmationByNumber" => self.block(num(0)?),
            "ledger_getSoftConfirmationByHash" => {
                let want = hash(0)?;
                match self.blocks.iter().find(|b| b.hash == want) {
                    Some(b) => self.block_json(b),
                    None => Value::Null,
                }
            }
            "ledger_getSoftConfirmationRange" => {
                let (start, end) = (num(0)?, num(1)?);
                if start > end {
                    return Err(ledger("start must be <= end".into()));
                }
                if end - start >= MAX_RANGE {
                    return Err(ledger(format!(
                        "requested batch range too large. Max: {MAX_RANGE}"
                    )));
                }
                (start..=end).map(|h| self.block(h)).collect()
            }
            "ledger_getSoftConfirmationStatus" => {
                let h = num(0)?;
                match h.checked_sub(1).and_then(|i| self.statuses.get(i as usize)) {
                    Some(s) => json!(s),
                    None => {
                        return Err(ledger(format!(
                            "Soft confirmation at height {h} not processed yet."
                        )))
                    }
                }
            }
            "ledger_getL2GenesisStateRoot" => json!(self.genesis_root.to_vec()),
            "ledger_getLastScannedL1Height" => json!(self.last_scanned),
            "ledger_getSequencerCommitmentsOnSlotByNumber" => self.commitments_json(num(0)?),
            "ledger_getSequencerCommitmentsOnSlotByHash" => {
                let want = hash(0)?;
                match (FIRST_SLOT..=self.last_scanned).find(|s| self.slot_hash(*s) == want) {
                    Some(slot) => self.commitments_json(slot),
                    None => Value::Null,
                }
            }
            "ledger_getVerifiedBatchProofsBySlotHeight" => {
                let slot = num(0)?;
                match self.proofs.get(&slot) {
                    Some(list) if slot <= self.last_scanned => {
                        list.iter().map(|p| self.proof_json(p)).collect()
                    }
                    _ => Value::Null,
                }
            }
            "ledger_getLastVerifiedBatchProof" => {
                match self.proofs.range(..=self.last_scanned).next_back() {
                    Some((slot, list)) => {
                        json!({"proof": self.proof_json(&list[0]), "height": slot})
                    }
                    None => Value::Null,
                }
            }
            _ => return Err((-32601, "Method not found", String::new())),
        })
    }

    fn respond(&self, request: &Value) -> Value {
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let method = request["method"].as_str().unwrap_or_default();
        let params = request.get("params").cloned().unwrap_or(json!([]));
        match self.answer(method, &params) {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message, data)) if data.is_empty() => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            }
            Err((code, message, data)) => json!({
                "jsonrpc": "2.0", "id": id,
                "error": {"code": code, "message": message, "data": data}
            }),
        }
    }

    /// The answer to a request body (one call or a batch, as jsonrpsee).
    pub fn handle(&self, body: &[u8]) -> Value {
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Array(calls)) => calls.iter().map(|c| self.respond(c)).collect(),
            Ok(call) => self.respond(&call),
            Err(_) => json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": -32700, "message": "Parse error"}}),
        }
    }
}

/// The stand-in, serving on 127.0.0.1 until dropped.
pub struct CitreaUpstream {
    pub url: String,
    pub chain: Arc<Chain>,
    /// A height whose stated hash is answered altered (a forgery), 0: none.
    forged: Arc<AtomicU64>,
    server: Arc<tiny_http::Server>,
    threads: Vec<JoinHandle<()>>,
}

impl CitreaUpstream {
    pub fn start(options: Options) -> CitreaUpstream {
        let chain = Arc::new(Chain::new(options));
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1:0"));
        let url = format!(
            "http://{}",
            server.server_addr().to_ip().expect("an IP address")
        );
        let forged = Arc::new(AtomicU64::new(0));
        let threads = (0..4)
            .map(|_| {
                let (server, chain) = (server.clone(), chain.clone());
                let forged = forged.clone();
                std::thread::spawn(move || {
                    while let Ok(mut request) = server.recv() {
                        let mut body = Vec::new();
                        if std::io::Read::read_to_end(request.as_reader(), &mut body).is_err() {
                            continue;
                        }
                        let mut answer = chain.handle(&body).to_string();
                        let h = forged.load(SeqCst);
                        if h > 0 {
                            // The forged block's hash, wherever it is answered
                            // (also as the next block's prevHash).
                            let real = hex::encode(chain.blocks[h as usize - 1].hash);
                            let fake = hex::encode(sha256(&[b"forged", real.as_bytes()]));
                            answer = answer.replace(&real, &fake);
                        }
                        let header =
                            tiny_http::Header::from_bytes("Content-Type", "application/json")
                                .expect("a valid header");
                        let _ = request
                            .respond(tiny_http::Response::from_string(answer).with_header(header));
                    }
                })
            })
            .collect();
        CitreaUpstream {
            url,
            chain,
            forged,
            server,
            threads,
        }
    }
}

impl CitreaUpstream {
    /// From now on, answers block `h` (and the next block's prevHash) with
    /// another hash than the one the sequencer signed.
    pub fn forge_hash_at(&self, h: u64) {
        self.forged.store(h, SeqCst);
    }
}

impl Drop for CitreaUpstream {
    fn drop(&mut self) {
        self.server.unblock();
        for _ in 1..self.threads.len() {
            self.server.unblock();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The receipt of `p` as a dev-mode prover makes it: a Fake receipt over
/// the borsh circuit output (the old layout, with `initial_batch_hash`,
/// for a Genesis-era proof), claiming `image` with that journal.
fn receipt_of(
    p: &Proof,
    key: &[u8; 32],
    image: [u8; 32],
    genesis_era_below: Option<[u8; 32]>,
) -> Vec<u8> {
    use risc0_zkvm::{FakeReceipt, InnerReceipt, Receipt, ReceiptClaim};
    let state_diff: BTreeMap<Vec<u8>, Option<Vec<u8>>> = [
        (vec![0x0a, 0x0b], Some(p.salt.to_vec())),
        (vec![0x0c], None),
    ]
    .into_iter()
    .collect();
    let range = (p.range.0 as u32, p.range.1 as u32);
    let preproven: Vec<usize> = p.preproven.iter().map(|&i| i as usize).collect();
    let journal = match genesis_era_below {
        None => borsh::to_vec(&BatchProofCircuitOutput {
            initial_state_root: p.initial_state_root,
            final_state_root: p.final_state_root,
            prev_soft_confirmation_hash: p.prev_hash,
            final_soft_confirmation_hash: p.final_hash,
            state_diff,
            da_slot_hash: p.da_slot_hash,
            sequencer_commitments_range: range,
            sequencer_public_key: key.to_vec(),
            sequencer_da_public_key: SEQUENCER_DA_KEY.to_vec(),
            last_l2_height: p.last_l2_height,
            preproven_commitments: preproven,
        }),
        Some(below) => borsh::to_vec(&OldBatchProofCircuitOutput {
            initial_state_root: p.initial_state_root,
            final_state_root: p.final_state_root,
            initial_batch_hash: below,
            state_diff,
            da_slot_hash: p.da_slot_hash,
            sequencer_commitments_range: range,
            sequencer_public_key: key.to_vec(),
            sequencer_da_public_key: SEQUENCER_DA_KEY.to_vec(),
            validity_condition: ([0; 32], p.da_slot_hash),
            last_active_spec_id: 0,
            preproven_commitments: preproven,
        }),
    }
    .expect("borsh writes a journal");
    let claim = ReceiptClaim::ok(risc0_zkvm::sha::Digest::from(image), journal.clone());
    let receipt = Receipt::new(InnerReceipt::Fake(FakeReceipt::new(claim)), journal);
    bincode::serialize(&receipt).expect("bincode writes a receipt")
}
