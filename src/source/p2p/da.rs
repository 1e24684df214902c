//! The P2P network as a [`DaSource`] (`--bitcoin-peer`): the header chain
//! from the peers, checked by Bitcoin Core's rules ([`crate::headers`]), and
//! the blocks of the most-work chain from its DA start on, each checked
//! against its header and scanned as the RPC source scans them
//! ([`crate::source::bitcoind::scan`]).
//!
//! Each look at the chain ([`DaSource::last_scanned`]) connects the peers
//! that are due, asks every connected peer for the headers after the best
//! chain's locator (in parallel, so one that stalls costs one bound, not
//! one per peer), and accepts what they send: a header that breaks a rule
//! drops its peer (`bad_header`), and a peer whose headers end on a branch
//! with less work than the best chain is dropped from the scan
//! (`less_work`). The best chain's new headers are then stored. A slot is
//! final once the best chain has `--bitcoin-finality-depth` blocks on it,
//! and only while the chain has at least the network's minimum chainwork.
//!
//! Blocks are asked as witness blocks by the hash the header chain has at
//! their height, spread over the peers ([`super::peers`]); a block whose
//! transactions do not hash to its header's Merkle root, or whose witness
//! data does not match its coinbase's commitment, drops the peer that sent
//! it (`bad_block`) and is asked of another.
//!
//! With no peer connected, the source answers as a bitcoind that is down:
//! the sync thread backs off, L1 is reported not synced, and `/health`
//! names why (each peer's last failure).

use std::collections::BTreeMap;
use std::sync::Arc;

use bitcoin::block::Header;
use bitcoin::hashes::Hash as _;
use bitcoin::{Block, BlockHash};
use log::{debug, info, warn};

use super::peer::{PeerError, MAX_HEADERS};
use super::peers::PeerSet;
use crate::headers::{unix_now, HeaderChain};
use crate::progress::Progress;
use crate::source::bitcoind::block::{check_block, DaBlock};
use crate::source::bitcoind::da::BitcoinDaConfig;
use crate::source::bitcoind::envelope::Namespace;
use crate::source::bitcoind::scan::{AnchorCache, ScanPace, SlotScanner};
use crate::source::{DaAnchor, DaSource, SourceError};
use crate::types::{DaSlot, Hash};

/// Header rounds per look at the chain at most (2,000 headers each): a
/// first start syncs a long chain over several looks, reporting as it goes.
const ROUNDS_PER_LOOK: usize = 100;

/// The DA side of a follower, read from Bitcoin peers (module docs).
pub struct PeersDa {
    peers: PeerSet,
    chain: HeaderChain,
    finality_depth: u64,
    scanner: SlotScanner,
    progress: Arc<Progress>,
    anchors: AnchorCache,
    pace: ScanPace,
}

impl PeersDa {
    pub fn new(
        peers: PeerSet,
        chain: HeaderChain,
        config: BitcoinDaConfig,
        progress: Arc<Progress>,
    ) -> Self {
        let names: Vec<String> = (0..peers.len())
            .map(|i| peers.addr(i).to_string())
            .collect();
        let _ = progress
            .bitcoin
            .url
            .set(format!("p2p {}", names.join(", ")));
        progress.bitcoin.headers.note(&chain);
        PeersDa {
            peers,
            chain,
            finality_depth: config.finality_depth.max(1),
            scanner: SlotScanner::new(config, progress.clone()),
            progress,
            anchors: AnchorCache::default(),
            pace: ScanPace::new(),
        }
    }

    /// Proof chunks found on applied slots are read back from `ledger`
    /// (see [`crate::source::bitcoind::scan`]).
    pub fn with_chunks_in(mut self, ledger: Arc<crate::ledger::Ledger>) -> Self {
        self.scanner.set_ledger(ledger);
        self
    }

    /// The header chain followed.
    pub fn chain(&self) -> &HeaderChain {
        &self.chain
    }

    /// The newest final height of the best chain (0 while it has less than
    /// the network's minimum chainwork).
    fn final_height(&self) -> u64 {
        if !self.chain.meets_min_chainwork() {
            return 0;
        }
        self.chain
            .tip()
            .height
            .saturating_sub(self.finality_depth - 1)
    }

    /// Connects the peers that are due; an error when none is connected.
    fn ensure_peers(&mut self) -> Result<(), SourceError> {
        if self.peers.connect_due() == 0 {
            let err = self.peers.none_usable();
            self.progress.bitcoin.failed(&err.to_string());
            return Err(err);
        }
        Ok(())
    }

    /// Asks every connected peer for the headers after the best chain, and
    /// accepts what they send (module docs), until no peer has more.
    fn sync_headers(&mut self) -> Result<(), SourceError> {
        for _ in 0..ROUNDS_PER_LOOK {
            let locator = self.chain.locator().map_err(|e| {
                SourceError::unreadable("the Bitcoin header chain cannot be read", e)
            })?;
            let answers = self.peers.ask_all(|peer| peer.get_headers(locator.clone()));
            let tip_before = self.chain.tip().hash;
            let mut full = false;
            for (i, answer) in answers {
                match answer {
                    Ok(headers) => {
                        full |= headers.len() == MAX_HEADERS;
                        self.take_headers(i, &headers);
                    }
                    Err(e) => self.peers.fail(i, &e),
                }
            }
            if !full || self.chain.tip().hash == tip_before {
                break;
            }
        }
        self.chain
            .save()
            .map_err(|e| SourceError::unreadable("the Bitcoin header chain cannot be stored", e))?;
        self.progress.bitcoin.headers.note(&self.chain);
        Ok(())
    }

    /// Peer `i`'s answer to `getheaders`: accepted, or the peer dropped.
    fn take_headers(&mut self, i: usize, headers: &[Header]) {
        let Some(last) = headers.last() else {
            return;
        };
        match self.chain.accept(headers, unix_now()) {
            Ok(accepted) => {
                if let Some(reorg) = accepted.reorg {
                    info!(
                        "bitcoin: the best chain now forks from the old one at height {} \
                         (old tip {} at {}; new tip {} at {})",
                        reorg.fork_height,
                        reorg.old_tip.1,
                        reorg.old_tip.0,
                        self.chain.tip().hash,
                        self.chain.tip().height
                    );
                }
                if accepted.added > 0 {
                    self.peers.succeeded(i);
                    debug!(
                        "bitcoin peer {}: {} headers added, tip {}",
                        self.peers.addr(i),
                        accepted.added,
                        self.chain.tip().height
                    );
                }
                let last = last.block_hash();
                if self.chain.height_of(&last).is_none() {
                    self.peers.fail(
                        i,
                        &PeerError::misbehaved(
                            "less_work",
                            format!(
                                "its chain (ending at {last}) has less work than the best one \
                                 (tip {} at height {}); not followed",
                                self.chain.tip().hash,
                                self.chain.tip().height
                            ),
                        ),
                    );
                }
            }
            Err(e) => self.peers.fail(
                i,
                &PeerError::misbehaved(
                    "bad_header",
                    format!(
                        "it sent a header that breaks a rule ({}): {e}",
                        e.rule.name()
                    ),
                ),
            ),
        }
    }

    /// The best chain's hash at each of `from..=to`.
    fn hashes(&self, from: u64, to: u64) -> Result<Vec<(u64, BlockHash)>, SourceError> {
        (from..=to)
            .map(|h| match self.chain.hash_at(h) {
                Ok(Some(hash)) => Ok((h, hash)),
                Ok(None) => Err(SourceError::bad_answer(format!(
                    "the Bitcoin header chain has no block at height {h} (tip {})",
                    self.chain.tip().height
                ))),
                Err(e) => Err(SourceError::unreadable(
                    "the Bitcoin header chain cannot be read",
                    e,
                )),
            })
            .collect()
    }

    /// Blocks `wanted` from the peers, checked; with `filtered`, keeping only
    /// the transactions with one of Citrea's wtxid prefixes.
    fn blocks(
        &mut self,
        wanted: &[(u64, BlockHash)],
        filtered: bool,
    ) -> Result<Vec<DaBlock>, SourceError> {
        let check = move |height: u64, expected: &BlockHash, block: Block| {
            let mut checked = check_block(height, expected, block).map_err(|e| e.to_string())?;
            checked.txs.retain(|t| {
                filtered
                    && (Namespace::BatchProof.matches(&t.wtxid)
                        || Namespace::LightClient.matches(&t.wtxid))
            });
            Ok(checked)
        };
        let result = self.peers.fetch_blocks(wanted, &check);
        match &result {
            Ok(_) => self.progress.bitcoin.answered(),
            Err(e) => self.progress.bitcoin.failed(&e.to_string()),
        }
        result
    }

    fn remember(&mut self, block: &DaBlock) {
        let final_height = self.final_height();
        self.anchors.remember(block, final_height);
    }
}

impl DaSource for PeersDa {
    fn last_scanned(&mut self) -> Result<u64, SourceError> {
        self.ensure_peers()?;
        self.sync_headers()?;
        if self.peers.connected() == 0 {
            let err = self.peers.none_usable();
            self.progress.bitcoin.failed(&err.to_string());
            return Err(err);
        }
        self.progress.bitcoin.answered();
        if !self.chain.meets_min_chainwork() {
            debug!(
                "bitcoin: the best header chain (tip {}) has less than the network's minimum \
                 chainwork; nothing is scanned yet",
                self.chain.tip().height
            );
        }
        Ok(self.final_height())
    }

    fn rejected(&mut self, why: &str) {
        warn!("bitcoin: a slot read from the peers was refused: {why}");
    }

    fn slot(&mut self, number: u64) -> Result<DaSlot, SourceError> {
        let mut slots = self.slots(number, number)?;
        slots
            .pop()
            .ok_or_else(|| SourceError::bad_answer("the peers sent no block"))
    }

    fn slots(&mut self, from: u64, to: u64) -> Result<Vec<DaSlot>, SourceError> {
        let wanted = self.hashes(from, to)?;
        let blocks = self.blocks(&wanted, true)?;
        let mut slots = Vec::with_capacity(blocks.len());
        for block in &blocks {
            self.remember(block);
            slots.push(self.scanner.slot_of(block));
        }
        self.pace.keep(blocks.len() as u64);
        Ok(slots)
    }

    fn anchors(&mut self, heights: &[u64]) -> Result<Option<Vec<Option<DaAnchor>>>, SourceError> {
        let tip = self.chain.tip().height;
        let missing: Vec<u64> = heights
            .iter()
            .copied()
            .filter(|h| *h <= tip && !self.anchors.has(*h))
            .collect();
        let mut fresh = BTreeMap::new();
        if !missing.is_empty() {
            let mut wanted = Vec::with_capacity(missing.len());
            for h in missing {
                if let Some(hash) = self.chain.hash_at(h).map_err(|e| {
                    SourceError::unreadable("the Bitcoin header chain cannot be read", e)
                })? {
                    wanted.push((h, hash));
                }
            }
            for block in self.blocks(&wanted, false)? {
                self.remember(&block);
                fresh.insert(block.height, AnchorCache::anchor_of(&block));
            }
        }
        Ok(Some(self.anchors.answer(heights, &fresh)))
    }

    fn block_hash(&mut self, number: u64) -> Result<Option<Hash>, SourceError> {
        self.chain
            .hash_at(number)
            .map(|h| h.map(|h| h.to_byte_array()))
            .map_err(|e| SourceError::unreadable("the Bitcoin header chain cannot be read", e))
    }
}
