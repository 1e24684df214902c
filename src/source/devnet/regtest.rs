//! The devnet's DA chain on a real regtest bitcoind (`--dev-bitcoin-rpc`).
//!
//! Every devnet DA slot is one regtest block the devnet mines itself, so
//! slot number = regtest height, and a soft confirmation's `daSlotHash` /
//! `daSlotTxsCommitment` are that block's hash (raw byte order) and Citrea's
//! witness root ([`crate::source::bitcoin::block`]). The devnet must be the
//! only miner of its regtest: before it mines slot `n` the tip must be
//! `n - 1`.
//!
//! - A fresh devnet mines [`MATURITY_BLOCKS`] blocks to its own key (their
//!   coinbases fund it once mature) and one more, its first DA slot.
//! - A slot's sequencer commitments and proofs go on chain as Citrea-format
//!   commit/reveal pairs ([`crate::source::devnet::inscribe`]) signed with
//!   Citrea's regtest sequencer and prover DA keys
//!   ([`crate::source::bitcoin::keys`]), funded from the largest mature
//!   output of the devnet's key (found with `scantxoutset`: no wallet, no
//!   state to keep), sent with `sendrawtransaction` and mined into the
//!   slot's block with `generateblock`.
//! - What the devnet serves as its DA chain is read back from bitcoind
//!   ([`RegtestChain::read_slots`]): each block checked, each reveal's
//!   signature checked, proofs decompressed and their journals decoded,
//!   exactly as a follower reads them.

use std::cell::RefCell;
use std::collections::BTreeMap;

use bitcoin::consensus::serialize;
use bitcoin::hashes::Hash as _;
use bitcoin::secp256k1::{Secp256k1, SecretKey};
use bitcoin::{Address, BlockHash, CompressedPublicKey, Network, OutPoint, Txid};
use serde::Deserialize;

use crate::proof::{journal, receipt};
use crate::source::bitcoin::block::{parse_block, DaBlock};
use crate::source::bitcoin::body::{self, SequencerCommitment as BodyCommitment};
use crate::source::bitcoin::inscription::Namespace;
use crate::source::bitcoin::keys;
use crate::source::bitcoin::reveal::{self, display_hash, LightClientTx};
use crate::source::bitcoin::rpc::client::{BitcoinRpc, Credentials, RpcError, RpcOptions};
use crate::source::bitcoin::rpc::reader::{BlockReader, ReaderOptions};
use crate::source::bitcoin::signer::DaSecretKey;
use crate::source::devnet::inscribe::{
    inscribe_commitment, inscribe_proof, Funding, FundingKey, InscribeOptions,
};
use crate::source::devnet::schedule::{self, SlotRef};
use crate::source::SourceError;
use crate::types::{DaSlot, Hash, SequencerCommitment, VerifiedBatchProof};

/// Blocks a fresh devnet mines to its key before its first slot: a coinbase
/// may be spent 100 blocks after its own.
pub const MATURITY_BLOCKS: u64 = 100;

/// Outputs below this are not worth funding a commit with.
const MIN_FUNDING_SATS: u64 = 100_000;

/// Where the devnet's bitcoind is (`--dev-bitcoin-rpc` and the shared
/// `--bitcoin-rpc-*` credentials).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegtestConfig {
    pub url: String,
    pub credentials: Credentials,
}

/// The devnet's side of a regtest bitcoind.
pub struct RegtestChain {
    rpc: BitcoinRpc,
    funding: FundingKey,
    address: String,
    sequencer: DaSecretKey,
    prover: DaSecretKey,
    /// Slots whose hash and witness root are known, by height.
    refs: RefCell<BTreeMap<u64, SlotRef>>,
}

fn rpc_err(what: impl Into<String>) -> impl FnOnce(RpcError) -> SourceError {
    let what = what.into();
    move |e| {
        if e.is_transient() {
            SourceError::unreachable(what, e)
        } else {
            SourceError::unreadable(what, e)
        }
    }
}

/// One output `scantxoutset` found.
#[derive(Deserialize)]
struct Unspent {
    txid: String,
    vout: u32,
    /// BTC.
    amount: f64,
    #[serde(default)]
    coinbase: bool,
    height: u64,
}

#[derive(Deserialize)]
struct Scan {
    unspents: Vec<Unspent>,
}

impl RegtestChain {
    /// A client for the devnet of `seed` (its funding key derives from the
    /// seed; its DA keys are Citrea's regtest keys). Nothing is sent yet.
    pub fn new(config: &RegtestConfig, seed: u64) -> Result<RegtestChain, SourceError> {
        let key_err = |e: crate::source::bitcoin::signer::KeyError| {
            SourceError::bad_answer(format!("devnet cannot read Citrea's regtest DA keys: {e}"))
        };
        let secret =
            SecretKey::from_slice(&schedule::derive("ledgerd-devnet/regtest-funding", seed, 0))
                .map_err(|e| SourceError::bad_answer(format!("devnet funding key: {e}")))?;
        let public = CompressedPublicKey(secret.public_key(&Secp256k1::signing_only()));
        let sequencer = keys::regtest_sequencer_secret().map_err(key_err)?;
        let prover = keys::regtest_prover_secret().map_err(key_err)?;
        Ok(RegtestChain {
            rpc: BitcoinRpc::new(
                &config.url,
                config.credentials.clone(),
                RpcOptions::default(),
            ),
            funding: FundingKey::P2wpkh(secret),
            address: Address::p2wpkh(&public, Network::Regtest).to_string(),
            sequencer,
            prover,
            refs: RefCell::new(BTreeMap::new()),
        })
    }

    /// The regtest sequencer DA public key (what proofs' outputs name).
    pub fn sequencer_da_key(&self) -> Vec<u8> {
        self.sequencer.public_key().as_bytes().to_vec()
    }

    /// bitcoind's URL, for messages.
    pub fn url(&self) -> &str {
        self.rpc.url()
    }

    /// The regtest tip's height.
    pub fn tip(&self) -> Result<u64, SourceError> {
        self.rpc
            .get_block_count()
            .map_err(rpc_err("devnet cannot read its regtest's height"))
    }

    /// A fresh devnet's start: [`MATURITY_BLOCKS`] blocks to its key, then
    /// its first DA slot; returns that slot's number (the new tip).
    pub fn start_fresh(&self) -> Result<u64, SourceError> {
        let before = self.tip()?;
        let last = self.generate(
            MATURITY_BLOCKS + 1,
            "devnet cannot mine its first regtest blocks".into(),
        )?;
        let genesis = before + MATURITY_BLOCKS + 1;
        self.remember(coinbase_only(genesis, &last));
        log::info!(
            "devnet on regtest {}: mined {} blocks to {} after height {before}; DA slots start at {genesis}",
            self.url(),
            MATURITY_BLOCKS + 1,
            self.address
        );
        Ok(genesis)
    }

    /// Mines `blocks` coinbase-only blocks to the devnet's key; the last
    /// one's hash (`what` says what failed).
    fn generate(&self, blocks: u64, what: String) -> Result<BlockHash, SourceError> {
        let hashes = self
            .rpc
            .generate_to_address(blocks, &self.address)
            .map_err(rpc_err(what))?;
        let last = hashes.last().copied();
        last.ok_or_else(|| SourceError::bad_answer("generatetoaddress mined no block"))
    }

    fn remember(&self, r: SlotRef) -> SlotRef {
        self.refs.borrow_mut().insert(r.number, r);
        r
    }

    /// Forgets the hashes of slots below `n` (they are read again if needed).
    pub fn forget_below(&self, n: u64) {
        let mut refs = self.refs.borrow_mut();
        *refs = refs.split_off(&n);
    }

    /// Slot `n`'s hash and witness root: remembered, or read from bitcoind.
    pub fn slot_ref(&self, n: u64) -> Result<SlotRef, SourceError> {
        if let Some(r) = self.refs.borrow().get(&n) {
            return Ok(*r);
        }
        let hash = self
            .rpc
            .get_block_hash(n)
            .map_err(rpc_err(format!("devnet cannot find regtest block {n}")))?;
        Ok(self.remember(block_ref(&self.read_block_by_hash(n, &hash)?)))
    }

    fn read_block_by_hash(&self, n: u64, hash: &BlockHash) -> Result<DaBlock, SourceError> {
        let raw = self
            .rpc
            .get_raw_block(hash)
            .map_err(rpc_err(format!("devnet cannot read regtest block {n}")))?;
        parse_block(n, hash, &raw).map_err(|e| SourceError::unreadable("devnet's regtest", e))
    }

    /// Mines slot `n` with `slot`'s commitments and proofs published in it.
    pub fn mine_slot(&self, n: u64, slot: &DaSlot) -> Result<SlotRef, SourceError> {
        let tip = self.tip()?;
        if tip + 1 != n {
            return Err(SourceError::bad_answer(format!(
                "devnet's next DA slot is {n} but its regtest at {} is at height {tip}: \
                 something else mined on (or reorganised) the devnet's regtest; the devnet \
                 must be its only miner",
                self.url()
            )));
        }
        if slot.commitments.is_empty() && slot.proofs.is_empty() {
            let hash = self.generate(1, format!("devnet cannot mine DA slot {n}"))?;
            return Ok(self.remember(coinbase_only(n, &hash)));
        }
        let txs = self.inscriptions(n, slot)?;
        let mut txids = Vec::with_capacity(txs.len());
        for tx in &txs {
            let txid = self
                .rpc
                .send_raw_transaction(&serialize(tx))
                .map_err(rpc_err(format!(
                    "bitcoind refused a transaction of devnet DA slot {n}"
                )))?;
            txids.push(txid.to_string());
        }
        let hash = self
            .rpc
            .generate_block(&self.address, &txids)
            .map_err(rpc_err(format!("devnet cannot mine DA slot {n}")))?;
        let r = self.remember(block_ref(&self.read_block_by_hash(n, &hash)?));
        log::debug!(
            "devnet DA slot {n}: regtest block {hash} with {} commitments, {} proofs ({} txs)",
            slot.commitments.len(),
            slot.proofs.len(),
            txs.len()
        );
        Ok(r)
    }

    /// The signed transactions that publish `slot`'s commitments, then its
    /// proofs, each pair funded by the change of the one before.
    fn inscriptions(
        &self,
        n: u64,
        slot: &DaSlot,
    ) -> Result<Vec<bitcoin::Transaction>, SourceError> {
        let options = InscribeOptions::default();
        let failed = |e: crate::source::devnet::inscribe::InscribeError| {
            SourceError::bad_answer(format!("devnet cannot publish DA slot {n}: {e}"))
        };
        let broke = || {
            SourceError::bad_answer(format!(
                "devnet cannot publish DA slot {n}: its funding output ran out of change"
            ))
        };
        let mut funding = self.funding(n)?;
        let mut txs = Vec::new();
        for c in &slot.commitments {
            let body = BodyCommitment {
                merkle_root: c.merkle_root,
                l2_start: c.l2_start_block_number,
                l2_end: c.l2_end_block_number,
            };
            let pair =
                inscribe_commitment(&funding, &self.sequencer, &body, &options).map_err(failed)?;
            funding = pair.change.ok_or_else(broke)?;
            txs.push(pair.commit);
            txs.push(pair.reveal);
        }
        for p in &slot.proofs {
            let proof =
                inscribe_proof(&funding, &self.prover, &p.proof, &options).map_err(failed)?;
            txs.extend(proof.transactions().into_iter().cloned());
            funding = proof.main.change.ok_or_else(broke)?;
        }
        Ok(txs)
    }

    /// The largest output of the devnet's key that a transaction in block
    /// `n` may spend (coinbases 100 blocks old).
    fn funding(&self, n: u64) -> Result<Funding, SourceError> {
        let descriptor = format!("addr({})", self.address);
        let scan: Scan = self
            .rpc
            .call(
                "scantxoutset",
                &["start".into(), serde_json::json!([descriptor])],
            )
            .map_err(rpc_err("devnet cannot look up its funding outputs"))?;
        let best = scan
            .unspents
            .iter()
            .filter(|u| !u.coinbase || u.height + MATURITY_BLOCKS <= n)
            .map(|u| (u, (u.amount * 1e8).round() as u64))
            .filter(|(_, sats)| *sats >= MIN_FUNDING_SATS)
            .max_by_key(|(_, sats)| *sats);
        let Some((u, sats)) = best else {
            return Err(SourceError::bad_answer(format!(
                "devnet has no spendable output at {} on its regtest to publish DA slot {n} with",
                self.address
            )));
        };
        let txid: Txid = u.txid.parse().map_err(|e| {
            SourceError::bad_answer(format!("scantxoutset named txid {:?}: {e}", u.txid))
        })?;
        Ok(Funding {
            outpoint: OutPoint { txid, vout: u.vout },
            amount_sats: sats,
            key: self.funding,
        })
    }

    /// Slots `from..=to` as they are on chain: each block checked, the
    /// commitments signed by the regtest sequencer DA key and the proofs
    /// signed by the regtest prover DA key, in block order.
    pub fn read_slots(&self, from: u64, to: u64) -> Result<Vec<DaSlot>, SourceError> {
        if from > to {
            return Ok(Vec::new());
        }
        let options = ReaderOptions {
            batch: 50,
            in_flight: 1,
            wtxid_prefixes: Some(Namespace::all_prefixes()),
        };
        let blocks = BlockReader::new(&self.rpc, options)
            .read_range(from..=to)
            .map_err(|e| SourceError::unreachable("devnet cannot read its regtest", e))?;
        blocks.iter().map(|b| self.slot_of_block(b)).collect()
    }

    fn slot_of_block(&self, block: &DaBlock) -> Result<DaSlot, SourceError> {
        let n = block.height;
        let (sequencer, prover) = (self.sequencer.public_key(), self.prover.public_key());
        self.remember(block_ref(block));
        let mut slot = DaSlot {
            number: n,
            hash: Some(block.hash),
            ..DaSlot::default()
        };
        for tx in &block.txs {
            let skipped = |what: &str, e: &dyn std::fmt::Display| {
                let id = display_hash(&tx.txid);
                log::warn!("regtest block {n}: {what} {id} skipped: {e}")
            };
            match reveal::read_commitment(&tx.tx, &sequencer) {
                Ok(c) => {
                    slot.commitments.push(SequencerCommitment {
                        found_in_l1: n,
                        merkle_root: c.merkle_root,
                        l2_start_block_number: c.l2_start,
                        l2_end_block_number: c.l2_end,
                    });
                    continue;
                }
                Err(e) if !e.is_not_ours() => {
                    skipped("tx", &e);
                    continue;
                }
                Err(_) => {}
            }
            let read = reveal::read_light_client(&tx.tx, &prover, body::MAX_PROOF_BYTES);
            let proof = match read {
                Ok(LightClientTx::Complete { proof }) => proof,
                Ok(LightClientTx::Aggregate { txids, wtxids }) => {
                    let find = |id: &Hash| block.txs.iter().find(|t| t.txid == *id);
                    let chunks: Vec<_> = txids
                        .iter()
                        .map(|id| find(id).map(|t| t.tx.clone()))
                        .collect();
                    let max = body::MAX_PROOF_BYTES;
                    match reveal::read_chunked_proof(&txids, &wtxids, &chunks, max) {
                        Ok(proof) => proof,
                        Err(e) => {
                            skipped("aggregate", &e);
                            continue;
                        }
                    }
                }
                Err(e) if !e.is_not_ours() => {
                    skipped("tx", &e);
                    continue;
                }
                Ok(_) | Err(_) => continue,
            };
            slot.proofs.push(verified_proof(n, proof)?);
        }
        Ok(slot)
    }
}

/// A proof read from chain as the ledger stores it: its output is its
/// journal's.
fn verified_proof(n: u64, proof: Vec<u8>) -> Result<VerifiedBatchProof, SourceError> {
    let bad = |e: String| {
        SourceError::bad_answer(format!(
            "a proof on devnet DA slot {n} does not decode: {e}"
        ))
    };
    let decoded = receipt::decode(&proof).map_err(|e| bad(e.to_string()))?;
    let journal = journal::decode(decoded.journal()).map_err(|e| bad(e.to_string()))?;
    Ok(VerifiedBatchProof {
        height: n,
        proof_output: journal.proof_output(),
        proof,
    })
}

/// The slot a regtest block is: its height, hash and witness root.
fn block_ref(block: &DaBlock) -> SlotRef {
    SlotRef {
        number: block.height,
        hash: block.hash,
        txs_commitment: block.txs_commitment,
    }
}

/// A coinbase-only block's slot: its witness root is 32 zero bytes.
fn coinbase_only(n: u64, hash: &BlockHash) -> SlotRef {
    SlotRef {
        number: n,
        hash: hash.to_byte_array(),
        txs_commitment: [0; 32],
    }
}
