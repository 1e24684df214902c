//! Bitcoin as a [`DaSource`]: the DA slots a follower scans, read from
//! Bitcoin Core itself (`--bitcoin-rpc`).
//!
//! Nothing about the chain is taken on bitcoind's word. At start bitcoind
//! must be on `--bitcoin-chain`'s network. Its headers are read first
//! (`getblockhash`, then batched `getblockheader HASH false`, from where
//! its chain meets the one stored) and checked by Bitcoin Core's rules into
//! the ledger's header chain ([`crate::headers::HeaderTree`]), which
//! follows the most work; only a chain with the network's minimum
//! chainwork is scanned.
//!
//! Each slot is one block of that header chain with at least the finality
//! depth of confirmations (`--bitcoin-finality-depth`, Citrea's 30: up to
//! the header tip - 29), asked of bitcoind by its hash. Blocks are read raw
//! and checked
//! ([`crate::source::bitcoin::rpc::reader`]: hashes, Merkle roots and wtxids recomputed), keeping
//! only the transactions whose raw wtxid starts with one of Citrea's
//! prefixes, and scanned for Citrea's commitments and proofs as Citrea
//! v0.6.2's full node does ([`crate::source::bitcoin::scan`], shared with the P2P source):
//! chunked proofs are put together from the chunks found in scanned blocks,
//! so bitcoind needs no `-txindex`. The decompressed bytes of a proof are a
//! risc0 receipt, and its journal is the proof's output. The sync thread
//! then checks each proof against the stored chain and its receipt against
//! the network's image, as for any source.
//!
//! A transaction that looks like ours but is not taken is skipped: one WARN
//! naming its txid, counted in `/metrics` by reason
//! ([`crate::progress::REFUSAL_REASONS`]).
//!
//! The source also serves the blocks soft confirmations point at
//! ([`DaSource::anchors`]), cached per height once final, and the chain's
//! hash at a height ([`DaSource::block_hash`]) for the deep-reorg check.

use std::collections::BTreeMap;
use std::sync::Arc;

use bitcoin::hashes::Hash as _;
use log::debug;

use crate::headers::HeaderTree;
use crate::progress::{BitcoinProgress, Progress};
use crate::source::bitcoin::block::DaBlock;
use crate::source::bitcoin::inscription::Namespace;
use crate::source::bitcoin::kept::KeptBlocks;
use crate::source::bitcoin::rpc::client::{BitcoinRpc, RpcError};
use crate::source::bitcoin::rpc::headers::{self, other_network, HeaderSyncError};
use crate::source::bitcoin::rpc::reader::{BlockReader, ReadError, ReaderOptions};
use crate::source::bitcoin::scan::{self, AnchorCache, BitcoinDaConfig, ScanPace, SlotScanner};
use crate::source::{DaAnchor, DaSource, SourceError};
use crate::stop::Stop;
use crate::types::{DaSlot, Hash};

/// Heights per JSON-RPC batch, one batch at a time: short bursts of
/// bitcoind's work, which the server loop shares the cores with (see
/// [`scan::MAX_SCAN_RATE`]).
pub const BATCH: usize = 10;

/// A reader of [`BATCH`] heights at a time, one batch at a time, keeping only
/// the transactions with one of Citrea's wtxid prefixes.
pub fn citrea_reader(rpc: &BitcoinRpc) -> BlockReader<'_> {
    let options = ReaderOptions {
        batch: BATCH,
        in_flight: 1,
        wtxid_prefixes: Some(Namespace::all_prefixes()),
    };
    BlockReader::new(rpc, options)
}

/// The DA side of a follower, read from Bitcoin Core (see the module docs).
pub struct BitcoinDa {
    rpc: Arc<BitcoinRpc>,
    config: BitcoinDaConfig,
    progress: Arc<Progress>,
    /// Final blocks' anchors by height.
    anchors: AnchorCache,
    /// Blocks read for the anchor check, kept for the scan.
    kept: KeptBlocks,
    /// The last `getblockcount` answer.
    tip: u64,
    /// The scan's pace ([`MAX_SCAN_RATE`]).
    pace: ScanPace,
    /// Blocks into slots, chunks remembered.
    scanner: SlotScanner,
    /// The verified header chain the scan follows.
    headers: HeaderTree,
    /// Whether bitcoind was found on the header chain's network.
    chain_checked: bool,
    /// A long header sync ends early once this is set.
    stop: Arc<Stop>,
}

/// Why bitcoind's network could not be confirmed.
#[derive(Debug)]
pub enum ChainCheckError {
    /// bitcoind is on another network: a sentence that says so.
    OtherChain(String),
    /// bitcoind could not be asked.
    Unreachable(SourceError),
}

impl BitcoinDa {
    /// The DA source over `rpc`, following `headers` (opened on the
    /// ledger, or in memory in tests).
    pub fn new(
        rpc: Arc<BitcoinRpc>,
        config: BitcoinDaConfig,
        progress: Arc<Progress>,
        headers: HeaderTree,
    ) -> Self {
        let _ = progress.bitcoin.url.set(rpc.url().to_string());
        progress.bitcoin.headers.note(&headers);
        BitcoinDa {
            headers,
            chain_checked: false,
            stop: Arc::new(Stop::new()),
            rpc,
            scanner: SlotScanner::new(config.clone(), progress.clone()),
            config: BitcoinDaConfig {
                finality_depth: config.finality_depth.max(1),
                ..config
            },
            progress,
            anchors: AnchorCache::default(),
            kept: KeptBlocks::default(),
            tip: 0,
            pace: ScanPace::default(),
        }
    }

    /// Proof chunks found on applied slots are read back from `ledger`
    /// (see [`crate::source::bitcoin::scan`]).
    pub fn with_chunks_in(mut self, ledger: Arc<crate::ledger::Ledger>) -> Self {
        self.scanner.set_ledger(ledger);
        self
    }

    /// Ends a long header sync early once `stop` is set.
    pub fn with_stop(mut self, stop: Arc<Stop>) -> Self {
        self.stop = stop;
        self
    }

    /// The verified header chain.
    pub fn headers(&self) -> &HeaderTree {
        &self.headers
    }

    /// Asks bitcoind which network it is on (`getblockchaininfo`): it
    /// must be the header chain's.
    pub fn check_chain(&mut self) -> Result<(), ChainCheckError> {
        let other = other_network(&self.rpc, self.headers.chain())
            .map_err(|e| ChainCheckError::Unreachable(self.rpc_error(e)))?;
        self.status().answered();
        if let Some(sentence) = other {
            self.status().failed(&sentence);
            return Err(ChainCheckError::OtherChain(sentence));
        }
        self.chain_checked = true;
        Ok(())
    }

    /// Reads bitcoind's headers the header chain lacks, from where the two
    /// chains meet up to bitcoind's tip, checks them by Bitcoin Core's rules
    /// and stores them; the headers added.
    pub fn sync_headers(&mut self) -> Result<u64, SourceError> {
        if !self.chain_checked {
            match self.check_chain() {
                Ok(()) => {}
                Err(ChainCheckError::Unreachable(e)) => return Err(e),
                Err(ChainCheckError::OtherChain(s)) => return Err(SourceError::bad_answer(s)),
            }
        }
        let count = self.block_count()?;
        let progress = self.progress.clone();
        let result =
            headers::sync_headers(&self.rpc, count, &mut self.headers, &self.stop, |chain| {
                progress.bitcoin.answered();
                progress.bitcoin.headers.note(chain);
            });
        let added = match result {
            Ok(sync) => sync.added,
            Err(HeaderSyncError::Rpc(e)) => return Err(self.rpc_error(e)),
            Err(HeaderSyncError::Store(e)) => {
                let what = "the Bitcoin headers cannot be stored";
                return Err(SourceError::unreadable(what, e));
            }
            Err(e) => {
                let err = match e {
                    HeaderSyncError::Rule(e) => SourceError::unreadable(
                        format!(
                            "bitcoind at {} sent a header that breaks Bitcoin's rules",
                            self.rpc.url()
                        ),
                        &e,
                    ),
                    other => SourceError::bad_answer(other.to_string()),
                };
                self.status().failed(&err.to_string());
                return Err(err);
            }
        };
        if added > 0 {
            debug!(
                "bitcoin headers: {added} verified, best {} at height {}",
                self.headers.tip().hash,
                self.headers.tip().height
            );
        }
        Ok(added)
    }

    /// The best chain's hashes at `from..=to` (all held: `to` is at most
    /// the tip).
    fn chain_hashes(&self, from: u64, to: u64) -> Result<Vec<bitcoin::BlockHash>, SourceError> {
        Ok(scan::hashes(&self.headers, from, to)?
            .into_iter()
            .map(|(_, h)| h)
            .collect())
    }

    fn status(&self) -> &BitcoinProgress {
        &self.progress.bitcoin
    }

    /// The newest final height for a tip.
    fn final_height(&self, tip: u64) -> u64 {
        tip.saturating_sub(self.config.finality_depth - 1)
    }

    /// The blocks of `hashes`, from height `from` on, each checked against
    /// its header, keeping only the transactions Citrea's could be.
    fn read(&self, from: u64, hashes: &[bitcoin::BlockHash]) -> Result<Vec<DaBlock>, SourceError> {
        let blocks = citrea_reader(&self.rpc)
            .read_hashes(from, hashes)
            .map_err(|e| self.read_error(e))?;
        self.status()
            .blocks_fetched
            .fetch_add(blocks.len() as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(blocks)
    }

    /// `getblockcount`, noting whether bitcoind answered.
    fn block_count(&mut self) -> Result<u64, SourceError> {
        let count = self.rpc.get_block_count().map_err(|e| self.rpc_error(e))?;
        self.status().answered();
        // A restarted bitcoind may count fewer blocks for a moment (it
        // reconnects blocks while it loads): nothing to do but ask again.
        if count < self.tip {
            debug!("bitcoind now counts {count} blocks, {} before", self.tip);
        }
        self.tip = count;
        Ok(count)
    }

    fn rpc_error(&self, e: RpcError) -> SourceError {
        let what = format!("bitcoind at {}", self.rpc.url());
        let err = match &e {
            RpcError::Refused { code, .. } if !e.is_warming_up() => {
                SourceError::refused(*code, format!("{what} refused a call"), Some(e.to_string()))
            }
            RpcError::BadAnswer { .. } | RpcError::TooLarge { .. } => {
                SourceError::unreadable(format!("{what} sent an answer we cannot read"), &e)
            }
            _ => SourceError::unreachable(format!("{what} cannot be asked"), &e),
        };
        self.status().failed(&err.to_string());
        err
    }

    fn read_error(&self, e: ReadError) -> SourceError {
        match e {
            ReadError::Rpc(e) => self.rpc_error(e),
            other => {
                self.status().answered();
                SourceError::unreadable(
                    format!("bitcoind at {} sent a block we refuse", self.rpc.url()),
                    other,
                )
            }
        }
    }

    /// `block`'s anchor, kept if it is final.
    fn remember(&mut self, block: &DaBlock) -> DaAnchor {
        let final_height = self.final_height(self.headers.tip().height);
        self.anchors.remember(block, final_height)
    }
}

impl DaSource for BitcoinDa {
    fn last_scanned(&mut self) -> Result<u64, SourceError> {
        self.sync_headers()?;
        if !self.headers.meets_min_chainwork() {
            let why = format!(
                "the best Bitcoin header chain (height {}) has less work than {}'s minimum \
                 chainwork: nothing is scanned until it has it",
                self.headers.tip().height,
                self.headers.chain()
            );
            debug!("{why}");
            return Ok(0);
        }
        Ok(self.final_height(self.headers.tip().height))
    }

    fn slot(&mut self, number: u64) -> Result<DaSlot, SourceError> {
        let mut slots = self.slots(number, number)?;
        slots
            .pop()
            .ok_or_else(|| SourceError::bad_answer("bitcoind read no block"))
    }

    fn slots(&mut self, from: u64, to: u64) -> Result<Vec<DaSlot>, SourceError> {
        let hashes = self.chain_hashes(from, to)?;
        self.kept.forget_below(from);
        // The blocks the anchor check read already are taken from there;
        // the runs between them are read.
        let mut blocks = Vec::with_capacity(hashes.len());
        let mut i = 0;
        while i < hashes.len() {
            if let Some(block) = self.kept.take(&hashes[i]) {
                blocks.push(block);
                i += 1;
                continue;
            }
            let end = (i..hashes.len())
                .find(|j| self.kept.get(&hashes[*j]).is_some())
                .unwrap_or(hashes.len());
            blocks.extend(self.read(from + i as u64, &hashes[i..end])?);
            i = end;
        }
        self.status().answered();
        let mut slots = Vec::with_capacity(blocks.len());
        for block in &blocks {
            self.remember(block);
            slots.push(self.scanner.slot_of(block));
        }
        self.pace.keep(blocks.len() as u64);
        Ok(slots)
    }

    fn anchors(&mut self, heights: &[u64]) -> Result<Option<Vec<Option<DaAnchor>>>, SourceError> {
        // Named blocks beyond the header tip wait for the next look at the
        // chain ([`DaSource::last_scanned`], each pass): the chain moves
        // only there, where the sync checks the last scanned slot against
        // it before anything is scanned.
        let missing = self.anchors.missing(heights, self.headers.tip().height);
        let mut fresh = BTreeMap::new();
        // Consecutive runs (a chunk of soft confirmations names a few
        // neighbouring blocks), each read in one go.
        for run in missing.chunk_by(|a, b| *b <= a + 8) {
            let (from, to) = (run[0], run[run.len() - 1]);
            let hashes = self.chain_hashes(from, to)?;
            for block in self.read(from, &hashes)? {
                fresh.insert(block.height, self.remember(&block));
                self.kept.keep(&block);
            }
        }
        Ok(Some(self.anchors.answer(heights, &fresh)))
    }

    /// The best header chain's block at `number` as of the last look at
    /// bitcoind's chain ([`DaSource::last_scanned`], which the sync calls
    /// just before, so a reorg bitcoind made shows here).
    fn block_hash(&mut self, number: u64) -> Result<Option<Hash>, SourceError> {
        Ok(scan::hash_at(&self.headers, number)?.map(|h| h.to_byte_array()))
    }
}
