//! A checked Bitcoin block scanned for Citrea's transactions: the one place
//! both Bitcoin sources (bitcoind's RPC, the P2P network) turn a block into
//! a DA slot.
//!
//! As Citrea v0.6.2's full node: namespace `0101` holds sequencer
//! commitments signed by the sequencer DA key; namespace `0202` proofs
//! signed by the prover DA key, complete or chunked. A chunked proof is a
//! run of chunk transactions and then an aggregate that names them by txid
//! and wtxid; the chunks are taken from the blocks scanned before (and the
//! aggregate's own block, earlier in it), remembered for their aggregate
//! (in memory, and in the ledger's `bitcoin_chunks` table with the slot
//! they were found on, kept after their aggregate is applied), so neither
//! source needs bitcoind's transaction index, and neither a restart nor a
//! rollback between the chunks and their aggregate loses anything. A transaction that is
//! not taken is skipped: one WARN naming its txid, counted in `/metrics` by
//! reason; wrong prefixes and scripts that are no envelope at all are
//! routine and logged at debug.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bitcoin::consensus::{deserialize, serialize};
use bitcoin::{BlockHash, Transaction};
use log::{debug, warn};

use crate::headers::HeaderTree;
use crate::ledger::{BitcoinChunkRead, Ledger};
use crate::progress::{BitcoinProgress, Progress};
use crate::proof::{journal, receipt};
use crate::source::bitcoin::block::DaBlock;
use crate::source::bitcoin::body::{BodyError, MAX_PROOF_BYTES};
use crate::source::bitcoin::inscription::{EnvelopeError, Namespace};
use crate::source::bitcoin::reveal::{self, display_hash, LightClientTx, Refusal};
use crate::source::bitcoin::signer::{DaPublicKey, SignatureError};
use crate::source::SourceError;
use crate::types::{DaSlot, Hash, SequencerCommitment, VerifiedBatchProof};

/// Citrea's `FINALITY_DEPTH`: a block is scanned once it has this many
/// confirmations (itself included).
pub const DEFAULT_FINALITY_DEPTH: u64 = 30;

/// How the Bitcoin DA source reads and whom it believes.
#[derive(Clone, Debug)]
pub struct BitcoinDaConfig {
    /// Confirmations a block needs before it is scanned (at least 1).
    pub finality_depth: u64,
    /// Signs sequencer commitments (`--sequencer-da-pubkey`, else the network's).
    pub sequencer_key: DaPublicKey,
    /// Signs proofs (`--prover-da-pubkey`, else the network's).
    pub prover_key: DaPublicKey,
    /// Most bytes a proof may decompress to.
    pub proof_bound: usize,
}

impl BitcoinDaConfig {
    /// Citrea's defaults with these keys.
    pub fn new(sequencer_key: DaPublicKey, prover_key: DaPublicKey) -> Self {
        BitcoinDaConfig {
            finality_depth: DEFAULT_FINALITY_DEPTH,
            sequencer_key,
            prover_key,
            proof_bound: MAX_PROOF_BYTES,
        }
    }
}

/// At most this many Bitcoin blocks a second while a follower catches up:
/// 2,500 times Citrea's pace of one a second, five times the 500 a follower
/// is asked to keep, and it leaves a small host's cores to the server loop
/// (a bitcoind serving raw blocks at full speed competes with it for them,
/// and reads served meanwhile lose their p99). 2,500 rather than 2,000 since
/// the sync threads give way every 0.2 ms (`os::give_way`): measured on a
/// 2-core host, the reads' p99 during a P2P scan was the same at either pace.
pub const MAX_SCAN_RATE: u64 = 2_500;

/// The header chain's hash at `height`, if it holds one there.
pub fn hash_at(chain: &HeaderTree, height: u64) -> Result<Option<BlockHash>, SourceError> {
    chain
        .hash_at(height)
        .map_err(|e| SourceError::unreadable("the Bitcoin header chain cannot be read", e))
}

/// The header chain's hashes at `from..=to`, with their heights; each must
/// be held (`to` at most the tip).
pub fn hashes(
    chain: &HeaderTree,
    from: u64,
    to: u64,
) -> Result<Vec<(u64, BlockHash)>, SourceError> {
    (from..=to)
        .map(|h| match hash_at(chain, h)? {
            Some(hash) => Ok((h, hash)),
            None => Err(SourceError::bad_answer(format!(
                "the Bitcoin header chain has no block at height {h} (its tip is {})",
                chain.tip().height
            ))),
        })
        .collect()
}

/// Proof bytes from Bitcoin (a risc0 receipt) as a proof found on slot
/// `height` whose output is the receipt's journal; refused (with the
/// `/metrics` reason and why) when the bytes are no receipt, the journal does
/// not read, or it names another sequencer DA key than `sequencer` (Citrea's
/// full node checks the same). The sync thread then checks it against the
/// chain and the receipt against the network's image.
pub fn proof_from_receipt(
    bytes: Vec<u8>,
    height: u64,
    sequencer: &DaPublicKey,
) -> Result<VerifiedBatchProof, (&'static str, String)> {
    let decoded = receipt::decode(&bytes)
        .map_err(|e| ("receipt", format!("the bytes are not a risc0 receipt: {e}")))?;
    let output = journal::decode(decoded.journal())
        .map_err(|e| {
            (
                "journal",
                format!("the receipt's journal does not read: {e}"),
            )
        })?
        .proof_output();
    if output.sequencer_da_public_key != sequencer.as_bytes() {
        return Err((
            "journal_key",
            format!(
                "the journal names sequencer DA key {}, not {sequencer}",
                hex::encode(&output.sequencer_da_public_key),
            ),
        ));
    }
    Ok(VerifiedBatchProof {
        proof: bytes,
        proof_output: output,
        height,
    })
}

/// The `/metrics` reason of a refusal.
pub fn reason_of(r: &Refusal) -> &'static str {
    match r {
        Refusal::Envelope(EnvelopeError::UnknownKind { .. }) | Refusal::Kind { .. } => "kind",
        Refusal::Envelope(_) => "envelope",
        Refusal::Signature(SignatureError::OtherSigner { .. }) => "other_key",
        Refusal::Signature(_) => "signature",
        Refusal::Body(BodyError::Brotli(_)) => "brotli",
        Refusal::Body(BodyError::TooLarge { .. }) => "bound",
        Refusal::Body(_) => "borsh",
        Refusal::BadAggregate { .. }
        | Refusal::TooManyChunks { .. }
        | Refusal::MissingChunk { .. }
        | Refusal::ChunkMismatch { .. } => "chunk",
    }
}

/// Bytes of chunk transactions remembered at most: chunk parts are not
/// signed, so anyone can publish them; the earliest found are forgotten
/// past this (8 MiB: a Citrea proof is split into chunks of about 400 KB
/// after compression, and ledgerd refuses any that expands past 8 MiB).
pub const MAX_CHUNK_BYTES: usize = 8 << 20;

/// Turns checked blocks into DA slots (module docs).
pub struct SlotScanner {
    config: BitcoinDaConfig,
    progress: Arc<Progress>,
    /// Chunk transactions seen in scanned blocks, by txid (raw byte order),
    /// with the height they were found at. Kept after their aggregate was
    /// read (a slot may be scanned again: a pass that gave up, a reorg), up
    /// to [`MAX_CHUNK_BYTES`], the earliest found forgotten first.
    chunks: BTreeMap<Hash, (u64, Transaction)>,
    /// Their serialized size in all.
    chunk_bytes: usize,
    /// Where chunks found on slots already applied are kept (the sync
    /// thread stores each slot's [`crate::types::DaSlot::chunks`]): read
    /// when an aggregate names a chunk not in memory (after a restart).
    ledger: Option<Arc<Ledger>>,
}

impl SlotScanner {
    pub fn new(config: BitcoinDaConfig, progress: Arc<Progress>) -> Self {
        SlotScanner {
            config,
            progress,
            chunks: BTreeMap::new(),
            chunk_bytes: 0,
            ledger: None,
        }
    }

    /// Chunks not in memory are looked up in `ledger` too.
    pub fn set_ledger(&mut self, ledger: Arc<Ledger>) {
        self.ledger = Some(ledger);
    }

    /// Chunk `txid`: from memory, else from the ledger (a chunk stored
    /// there that does not decode counts as missing).
    fn chunk(&self, txid: &Hash) -> Option<Transaction> {
        if let Some((_, tx)) = self.chunks.get(txid) {
            return Some(tx.clone());
        }
        let ledger = self.ledger.as_ref()?;
        let stored = ledger.reader().and_then(|r| r.bitcoin_chunk(txid));
        match stored {
            Ok(Some((_, raw))) => deserialize(&raw).ok(),
            Ok(None) => None,
            Err(e) => {
                warn!("the proof chunks stored cannot be read: {e}");
                None
            }
        }
    }

    fn status(&self) -> &BitcoinProgress {
        &self.progress.bitcoin
    }

    /// Chunks remembered now.
    pub fn chunks_remembered(&self) -> usize {
        self.chunks.len()
    }

    /// One checked block as a DA slot: its commitments and proofs, each
    /// transaction that is not taken skipped and counted.
    pub fn slot_of(&mut self, block: &DaBlock) -> DaSlot {
        let mut slot = DaSlot {
            number: block.height,
            hash: Some(block.hash),
            ..Default::default()
        };
        for tx in &block.txs {
            if Namespace::BatchProof.matches(&tx.wtxid) {
                match reveal::read_commitment(&tx.tx, &self.config.sequencer_key) {
                    Ok(c) => {
                        debug!(
                            "bitcoin block {}: commitment {}..={} in {}",
                            block.height,
                            c.l2_start,
                            c.l2_end,
                            display_hash(&tx.txid)
                        );
                        self.status().commitments_found.fetch_add(1, Relaxed);
                        slot.commitments.push(SequencerCommitment {
                            found_in_l1: block.height,
                            merkle_root: c.merkle_root,
                            l2_start_block_number: c.l2_start,
                            l2_end_block_number: c.l2_end,
                        });
                    }
                    Err(r) => self.refuse(block.height, &tx.txid, "commitment", &r),
                }
            } else if Namespace::LightClient.matches(&tx.wtxid) {
                let bound = self.config.proof_bound;
                let read = match reveal::read_light_client(&tx.tx, &self.config.prover_key, bound) {
                    Ok(LightClientTx::Complete { proof }) => Ok(proof),
                    Ok(LightClientTx::Aggregate { txids, wtxids }) => {
                        let chunks: Vec<Option<Transaction>> =
                            txids.iter().map(|t| self.chunk(t)).collect();
                        let read = reveal::read_chunked_proof(&txids, &wtxids, &chunks, bound);
                        if read.is_ok() {
                            slot.chunks.used.extend_from_slice(&txids);
                        }
                        read
                    }
                    Ok(LightClientTx::Chunk) => {
                        self.remember_chunk(block.height, tx.txid, &tx.tx);
                        slot.chunks.found.push((tx.txid, serialize(&tx.tx)));
                        continue;
                    }
                    // Method ids change nothing a full node serves.
                    Ok(LightClientTx::MethodId(_)) => continue,
                    Err(r) => Err(r),
                };
                let bytes = match read {
                    Ok(bytes) => bytes,
                    Err(r) => {
                        self.refuse(block.height, &tx.txid, "proof", &r);
                        continue;
                    }
                };
                match proof_from_receipt(bytes, block.height, &self.config.sequencer_key) {
                    Ok(p) => {
                        self.status().proofs_found.fetch_add(1, Relaxed);
                        slot.proofs.push(p);
                    }
                    Err((reason, why)) => {
                        self.status().refused(reason);
                        warn!(
                            "bitcoin block {} tx {}: proof not taken: {why}",
                            block.height,
                            display_hash(&tx.txid)
                        );
                    }
                }
            }
        }
        slot
    }

    /// Keeps a chunk for its aggregate; past [`MAX_CHUNK_BYTES`], the ones
    /// found earliest are forgotten (an aggregate that names one later is
    /// refused as missing a chunk).
    fn remember_chunk(&mut self, height: u64, txid: Hash, tx: &Transaction) {
        debug!(
            "bitcoin block {height}: proof chunk {} remembered",
            display_hash(&txid)
        );
        if let Some((_, old)) = self.chunks.insert(txid, (height, tx.clone())) {
            self.chunk_bytes -= old.total_size();
        }
        self.chunk_bytes += tx.total_size();
        while self.chunk_bytes > MAX_CHUNK_BYTES {
            let oldest = self
                .chunks
                .iter()
                .min_by_key(|(_, (h, _))| *h)
                .map(|(t, _)| *t);
            let Some((_, old)) = oldest.and_then(|t| self.chunks.remove(&t)) else {
                break;
            };
            self.chunk_bytes -= old.total_size();
        }
    }

    /// Logs and counts one transaction not taken.
    fn refuse(&self, height: u64, txid: &[u8; 32], what: &str, r: &Refusal) {
        if r.is_not_ours() {
            debug!(
                "bitcoin block {height} tx {}: not a {what}: {r}",
                display_hash(txid)
            );
            return;
        }
        self.status().refused(reason_of(r));
        warn!(
            "bitcoin block {height} tx {}: {what} not taken: {r}",
            display_hash(txid)
        );
    }
}

/// A catch-up's pace: at most [`MAX_SCAN_RATE`] blocks a second, whichever
/// source reads them.
#[derive(Debug)]
pub struct ScanPace {
    /// Since when, and blocks read since.
    since: Instant,
    count: u64,
}

impl Default for ScanPace {
    fn default() -> Self {
        ScanPace {
            since: Instant::now(),
            count: 0,
        }
    }
}

impl ScanPace {
    /// Waits, after reading `read` blocks, as long as keeps the scan at
    /// [`MAX_SCAN_RATE`]. A scan that fell a second behind that pace (a
    /// caught-up follower reads a block now and then) starts it afresh.
    pub fn keep(&mut self, read: u64) {
        let spent = |blocks: u64| Duration::from_secs_f64(blocks as f64 / MAX_SCAN_RATE as f64);
        let now = Instant::now();
        if now > self.since + spent(self.count) + Duration::from_secs(1) {
            self.since = now;
            self.count = 0;
        }
        self.count += read;
        let due = self.since + spent(self.count);
        if due > now {
            std::thread::sleep(due - now);
        }
    }
}

/// The most final blocks' anchors a Bitcoin source keeps (about 100 bytes each).
const ANCHOR_CACHE: usize = 20_000; // the doc of AnchorCache says this number

/// Final Bitcoin blocks' anchors (hash and `daSlotTxsCommitment`) by
/// height, the newest 20,000 kept: what both Bitcoin sources
/// answer [`crate::source::DaSource::anchors`] from before reading blocks.
#[derive(Debug, Default)]
pub struct AnchorCache {
    by_height: BTreeMap<u64, crate::source::DaAnchor>,
}

impl AnchorCache {
    /// `block`'s anchor, kept if it is final (at or below `final_height`).
    pub fn remember(&mut self, block: &DaBlock, final_height: u64) -> crate::source::DaAnchor {
        let anchor = crate::source::DaAnchor {
            hash: block.hash,
            txs_commitment: block.txs_commitment,
        };
        if block.height <= final_height {
            self.by_height.insert(block.height, anchor);
            while self.by_height.len() > ANCHOR_CACHE {
                self.by_height.pop_first();
            }
        }
        anchor
    }

    /// The heights of `heights` up to `tip` whose anchors are not kept.
    pub fn missing(&self, heights: &[u64], tip: u64) -> Vec<u64> {
        let missing = heights.iter().copied();
        missing
            .filter(|h| *h <= tip && !self.by_height.contains_key(h))
            .collect()
    }

    /// The anchor of each of `heights`: kept, else from `fresh` (blocks
    /// just read), else none.
    pub fn answer(
        &self,
        heights: &[u64],
        fresh: &BTreeMap<u64, crate::source::DaAnchor>,
    ) -> Vec<Option<crate::source::DaAnchor>> {
        heights
            .iter()
            .map(|h| self.by_height.get(h).or_else(|| fresh.get(h)).copied())
            .collect()
    }
}
