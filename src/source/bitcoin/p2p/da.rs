//! The P2P network as a [`DaSource`] (`--bitcoin-peer`), with bitcoind's
//! RPC beside it or not (`--bitcoin-rpc` too: [`crate::source::bitcoin::p2p::bitcoind`]): the header
//! chain from every source, checked by Bitcoin Core's rules
//! ([`crate::headers`]), and the blocks of the most-work chain from its DA
//! start on, each checked against its header and scanned as the RPC source
//! scans them ([`crate::source::bitcoin::scan`]).
//!
//! Each look at the chain ([`DaSource::last_scanned`]) brings bitcoind's
//! headers in (when it is given and not backing off), connects the peers
//! that are due, asks every connected peer for the headers after the best
//! chain's locator (in parallel, so one that stalls costs one bound, not
//! one per peer), and accepts what they send: a header that breaks a rule
//! drops its peer (`bad_header`). Whoever sent them, the header chain
//! follows the most work. A source whose chain has less work than the best
//! one (another branch, or not up to its tip) stays connected and is asked
//! for headers at each look, but for no block its own chain does not hold:
//! none at all while it is on another branch. `/health` shows it behind.
//! The best chain's new headers are then stored. A slot is final once the
//! best chain has `--bitcoin-finality-depth` blocks on it, and only while
//! the chain has at least the network's minimum chainwork.
//!
//! Blocks are asked by the hash the header chain has at their height: of
//! bitcoind first, for the heights its chain holds, then of the peers
//! whose chains hold them, spread over them ([`crate::source::bitcoin::p2p::peers`]); a block
//! whose transactions do not hash to its header's Merkle root, or whose
//! witness data does not match its coinbase's commitment, drops the peer
//! that sent it (`bad_block`) and is asked of another. bitcoind that fails
//! hands its blocks to the peers.
//!
//! Every block is fetched and checked in one place (`Sources::blocks_each`),
//! for the L2 anchor check and the DA scan alike: a block fetched for an
//! anchor is kept, checked, until the scan takes it, so it is downloaded
//! once. Nothing a peer sent is kept before it passed the check.
//!
//! The header chain moves only at a look ([`DaSource::last_scanned`]);
//! right after each, the sync checks that the last slot scanned is still on
//! the chain ([`DaSource::block_hash`]), so a reorg deeper than the
//! finality depth stops the scan as over bitcoind's RPC (`/health` 503
//! `reorg`), whichever peer showed it.
//!
//! With no peer connected and no bitcoind answering, the source answers as
//! a bitcoind that is down: the sync thread backs off, L1 is reported not
//! synced, and `/health` names why (each source's last failure).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use bitcoin::block::Header;
use bitcoin::hashes::Hash as _;
use bitcoin::BlockHash;
use log::{debug, info, warn};

use crate::headers::{unix_now, HeaderTree};
use crate::progress::Progress;
use crate::source::bitcoin::block::{parse_block_keeping, DaBlock};
use crate::source::bitcoin::inscription::Namespace;
use crate::source::bitcoin::kept::KeptBlocks;
use crate::source::bitcoin::p2p::bitcoind::RpcSide;
use crate::source::bitcoin::p2p::peer::{PeerError, MAX_HEADERS};
use crate::source::bitcoin::p2p::peers::{PeerChain, PeerSet, OLD_CHAIN_AFTER};
use crate::source::bitcoin::scan::{self, AnchorCache, BitcoinDaConfig, ScanPace, SlotScanner};
use crate::source::{DaAnchor, DaSource, EachSlot, SourceError};
use crate::types::{DaSlot, Hash};

/// Header rounds per look at the chain at most (2,000 headers each): a
/// first start syncs a long chain over several looks, reporting as it goes.
const ROUNDS_PER_LOOK: usize = 100;

/// The DA side of a follower, read from Bitcoin peers (module docs).
pub struct PeersDa {
    src: Sources,
    finality_depth: u64,
    scanner: SlotScanner,
    anchors: AnchorCache,
    /// Checked blocks fetched for an anchor and not scanned yet.
    kept: KeptBlocks,
    pace: ScanPace,
}

/// What [`PeersDa`] reads from: the peers, bitcoind beside them, and the
/// header chain both are held to.
struct Sources {
    peers: PeerSet,
    /// bitcoind's RPC beside the peers (`--bitcoin-rpc` too).
    rpc: Option<RpcSide>,
    chain: HeaderTree,
    progress: Arc<Progress>,
}

impl PeersDa {
    pub fn new(
        peers: PeerSet,
        chain: HeaderTree,
        config: BitcoinDaConfig,
        progress: Arc<Progress>,
    ) -> Self {
        let names = peers.addrs();
        let named = match names.is_empty() {
            true => "(peers found)".to_string(),
            false => names.join(", "),
        };
        let _ = progress.bitcoin.url.set(format!("p2p {named}"));
        progress.bitcoin.headers.note(&chain);
        PeersDa {
            finality_depth: config.finality_depth.max(1),
            scanner: SlotScanner::new(config, progress.clone()),
            src: Sources {
                peers,
                rpc: None,
                chain,
                progress,
            },
            anchors: AnchorCache::default(),
            kept: KeptBlocks::default(),
            pace: ScanPace::default(),
        }
    }

    /// Proof chunks found on applied slots are read back from `ledger`
    /// (see [`crate::source::bitcoin::scan`]).
    pub fn with_chunks_in(mut self, ledger: Arc<crate::ledger::Ledger>) -> Self {
        self.scanner.set_ledger(ledger);
        self
    }

    /// Reads bitcoind's RPC beside the peers ([`crate::source::bitcoin::p2p::bitcoind`]).
    pub fn with_rpc(mut self, rpc: Option<RpcSide>) -> Self {
        self.src.rpc = rpc;
        self
    }

    /// The header chain followed.
    pub fn chain(&self) -> &HeaderTree {
        &self.src.chain
    }

    /// The newest final height of the best chain (0 while it has less than
    /// the network's minimum chainwork).
    fn final_height(&self) -> u64 {
        if !self.src.chain.meets_min_chainwork() {
            return 0;
        }
        self.src
            .chain
            .tip()
            .height
            .saturating_sub(self.finality_depth - 1)
    }
}

impl Sources {
    /// Asks every connected peer for the headers after the best chain, and
    /// accepts what they send (module docs), until no peer has more; then
    /// notes what each peer's chain is.
    fn sync_headers(&mut self) -> Result<(), SourceError> {
        for _ in 0..ROUNDS_PER_LOOK {
            let locator = self.chain.locator().map_err(|e| {
                SourceError::unreadable("the Bitcoin header chain cannot be read", e)
            })?;
            let answers = self.peers.ask_all(|peer| peer.get_headers(locator.clone()));
            let tip_before = self.chain.tip().clone();
            let mut full = false;
            let mut shown = Vec::with_capacity(answers.len());
            for (i, answer) in answers {
                match answer {
                    Ok(headers) => {
                        full |= headers.len() == MAX_HEADERS;
                        if self.take_headers(i, &headers) {
                            shown.push((i, headers.last().map(|h| h.block_hash())));
                        }
                    }
                    Err(e) => self.peers.fail(i, &e),
                }
            }
            // Once every answer is in (a later one may have moved the tip).
            for (i, last) in shown {
                let chain = match last {
                    // Nothing after the locator's first hash: it is at the
                    // tip the locator started from.
                    None => PeerChain::On(tip_before.height, tip_before.hash),
                    Some(hash) => match self.chain.height_of(&hash) {
                        Some(height) => PeerChain::On(height, hash),
                        None => PeerChain::Branch(hash),
                    },
                };
                self.peers.set_chain(i, chain);
            }
            if !full || self.chain.tip().hash == tip_before.hash {
                break;
            }
        }
        Ok(())
    }

    /// Stores the best chain's new headers and shows which sources are
    /// behind it.
    fn save_headers(&mut self) -> Result<(), SourceError> {
        self.chain
            .save()
            .map_err(|e| SourceError::unreadable("the Bitcoin header chain cannot be stored", e))?;
        self.progress.bitcoin.headers.note(&self.chain);
        self.peers
            .save_book()
            .map_err(|e| SourceError::unreadable("the Bitcoin address book cannot be stored", e))?;
        let tip = self.chain.tip().clone();
        // As shown before this look (each peer's entry changes only in its turn).
        let shown = self.progress.bitcoin.peers.snapshot();
        for i in self.peers.connected_indexes() {
            let addr = self.peers.addr(i).to_string();
            let chain = self.peers.chain(i);
            let behind = match chain {
                PeerChain::On(_, hash) if hash == tip.hash => None,
                PeerChain::Unknown => None,
                PeerChain::On(height, _) => Some(format!(
                    "bitcoin peer {addr}: its chain ends at height {height}, below the best \
                     chain's tip at {}: asked for no block above it",
                    tip.height
                )),
                PeerChain::Branch(hash) => Some(format!(
                    "bitcoin peer {addr}: its chain (ending at {hash}) has less work than the \
                     best one (tip {} at height {}); asked for headers, not for blocks",
                    tip.hash, tip.height
                )),
            };
            let was_behind = shown.get(i).is_some_and(|p| p.behind);
            if let (Some(why), PeerChain::Branch(_)) = (&behind, chain) {
                if self.peers.rotate_out(i, why) {
                    continue;
                }
            }
            let height = match chain {
                PeerChain::On(height, _) => height,
                _ => tip.height,
            };
            if self.peers.old_chain(i, height, tip.height) {
                let why = format!(
                    "bitcoin peer {addr}: its chain (height {height}) stayed below the best \
                     chain's tip for {} minutes, as Bitcoin Core allows an outbound peer",
                    OLD_CHAIN_AFTER.as_secs() / 60
                );
                info!("{why}: rotated out for another from the address book");
                self.peers.rotate_out(i, &why);
                continue;
            }
            match (&behind, chain) {
                (Some(why), PeerChain::Branch(_)) if !was_behind => info!("{why}"),
                (Some(why), _) => debug!("{why}"),
                (None, _) if was_behind => debug!("bitcoin peer {addr} is on the best chain's tip"),
                (None, _) => {}
            }
            self.progress.bitcoin.peers.set_behind(i, behind.as_deref());
        }
        if let Some(rpc) = &self.rpc {
            let behind = match rpc.chain() {
                PeerChain::On(_, hash) => hash != tip.hash,
                PeerChain::Branch(_) => true,
                PeerChain::Unknown => false,
            };
            let was = self.progress.bitcoin.rpc.behind.swap(behind, Relaxed);
            if let (PeerChain::Branch(hash), false) = (rpc.chain(), was) {
                info!(
                    "bitcoind at {}: its chain (ending at {hash}) has less work than the best \
                     one (tip {} at height {}); its blocks above the fork are asked of the peers",
                    rpc.url(),
                    tip.hash,
                    tip.height
                );
            }
        }
        Ok(())
    }

    /// Peer `i`'s answer to `getheaders`: accepted (true), or the peer
    /// dropped.
    fn take_headers(&mut self, i: usize, headers: &[Header]) -> bool {
        if headers.is_empty() {
            return true;
        }
        match self.chain.accept(headers, unix_now()) {
            Ok(accepted) => {
                if let Some(reorg) = accepted.reorg {
                    info!(
                        "bitcoin: the best chain now forks from the old one at height {} \
                         (old tip {} at {}; new tip {} at {}, from peer {})",
                        reorg.fork_height,
                        reorg.old_tip.1,
                        reorg.old_tip.0,
                        self.chain.tip().hash,
                        self.chain.tip().height,
                        self.peers.addr(i)
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
                true
            }
            Err(e) => {
                let why = format!(
                    "it sent a header that breaks a rule ({}): {e}",
                    e.rule.name()
                );
                self.peers
                    .fail(i, &PeerError::misbehaved("bad_header", why));
                false
            }
        }
    }

    /// Blocks `wanted`, checked, each handed to `emit` in the order asked
    /// as soon as it and those before it are (`emit` returning false stops
    /// it), keeping only the transactions with one of Citrea's wtxid
    /// prefixes: the one place the P2P source takes blocks, for the anchor
    /// check and the scan alike. A block in `kept` since an earlier call is
    /// not fetched again (`take`: and is forgotten, the scan has it; else
    /// it is kept, for the scan). The others: of bitcoind first (the
    /// heights its chain holds), the rest of the peers whose chains hold
    /// them, each checked against its header
    /// ([`crate::source::bitcoin::block::parse_block`]) before anything
    /// reads it. A peer whose block fails is dropped (`bad_block`), the
    /// refusal counted by Core's reason, and the block asked of another;
    /// nothing of it is kept.
    fn blocks_each(
        &mut self,
        kept: &mut KeptBlocks,
        wanted: &[(u64, BlockHash)],
        take: bool,
        emit: &mut dyn FnMut(DaBlock) -> bool,
    ) -> Result<(), SourceError> {
        let mut got: Vec<Option<DaBlock>> = wanted
            .iter()
            .map(|(_, hash)| {
                if take {
                    kept.take(hash)
                } else {
                    kept.get(hash).cloned()
                }
            })
            .collect();
        let missing: Vec<usize> = (0..wanted.len()).filter(|k| got[*k].is_none()).collect();
        let asked: Vec<(u64, BlockHash)> = missing.iter().map(|k| wanted[*k]).collect();
        // The next position of `wanted` to hand on.
        let mut at = 0;
        let mut more = true;
        // Hands on the kept blocks before position `upto`, then `block`.
        let mut hand_on = |upto: usize, block: Option<DaBlock>, got: &mut [Option<DaBlock>]| {
            while at < upto {
                if let Some(kept) = got[at].take() {
                    if !emit(kept) {
                        return false;
                    }
                }
                at += 1;
            }
            match block {
                Some(block) => {
                    at = upto + 1;
                    emit(block)
                }
                None => true,
            }
        };
        if !asked.is_empty() {
            self.fetch_each(&asked, &mut |j, block| {
                if !take {
                    kept.keep(&block);
                }
                more = hand_on(missing[j], Some(block), &mut got);
                more
            })?;
        }
        if more {
            hand_on(wanted.len(), None, &mut got);
        }
        Ok(())
    }

    /// The error when no source can be read: why each is not.
    fn none_usable(&self) -> SourceError {
        let from_peers = self.peers.none_usable();
        let err = match &self.rpc {
            None => from_peers,
            Some(rpc) => SourceError::unreachable(
                "neither bitcoind nor any Bitcoin peer can be read",
                format!(
                    "{}; {from_peers}",
                    rpc.problem().unwrap_or_else(|| format!(
                        "bitcoind at {} does not hold the blocks asked (its chain is behind the \
                         best one)",
                        rpc.url()
                    ))
                ),
            ),
        };
        self.progress.bitcoin.failed(&err.to_string());
        err
    }

    /// Downloads and checks blocks `wanted`, each handed to `emit` with its
    /// index in `wanted`, in that order (see [`Sources::blocks_each`]):
    /// bitcoind's first (the heights its chain holds: a prefix of `wanted`,
    /// which is in ascending order), then the peers', each as it is checked.
    fn fetch_each(
        &mut self,
        wanted: &[(u64, BlockHash)],
        emit: &mut dyn FnMut(usize, DaBlock) -> bool,
    ) -> Result<(), SourceError> {
        let mut from_rpc = 0;
        if let Some(side) = &mut self.rpc {
            if let Some(limit) = side.holds_up_to(&self.chain) {
                let mine = wanted.iter().take_while(|w| w.0 <= limit).count();
                if mine > 0 {
                    if let Some(blocks) = side.blocks(&wanted[..mine]) {
                        for (k, block) in blocks.into_iter().enumerate() {
                            if !emit(k, block) {
                                self.progress.bitcoin.answered();
                                return Ok(());
                            }
                        }
                        from_rpc = mine;
                    }
                }
            }
        }
        let rest = &wanted[from_rpc..];
        if !rest.is_empty() {
            let top = rest.iter().map(|w| w.0).max().unwrap_or(0);
            // The connected peers whose chains hold the best chain's blocks
            // up to `top`.
            let serving: Vec<usize> = self
                .peers
                .connected_indexes()
                .into_iter()
                .filter(|i| {
                    self.peers
                        .chain(*i)
                        .holds(&self.chain)
                        .is_some_and(|h| h >= top)
                })
                .collect();
            let citreas =
                |w: &Hash| Namespace::BatchProof.matches(w) || Namespace::LightClient.matches(w);
            let check = move |height: u64, expected: &BlockHash, raw: &[u8]| {
                parse_block_keeping(height, expected, raw, &citreas)
            };
            let mut emit_rest = |j: usize, block: DaBlock| emit(from_rpc + j, block);
            if let Err(e) = self
                .peers
                .fetch_blocks(rest, &serving, &check, &mut emit_rest)
            {
                return Err(match &self.rpc {
                    None => {
                        self.progress.bitcoin.failed(&e.to_string());
                        e
                    }
                    Some(_) => self.none_usable(),
                });
            }
        }
        self.progress.bitcoin.answered();
        Ok(())
    }

    /// A look at the chain (module docs): bitcoind's headers, the peers
    /// due connected and asked for theirs, the best chain stored.
    fn look(&mut self) -> Result<(), SourceError> {
        let rpc = self.rpc.as_mut();
        let rpc_answered = rpc.is_some_and(|rpc| rpc.sync_headers(&mut self.chain));
        if self.peers.connect_due() > 0 {
            self.sync_headers()?;
        }
        self.save_headers()?;
        if self.peers.connected() == 0 && !rpc_answered {
            return Err(self.none_usable());
        }
        self.progress.bitcoin.answered();
        if !self.chain.meets_min_chainwork() {
            debug!(
                "bitcoin: the best header chain (tip {}) has less than the network's minimum \
                 chainwork; nothing is scanned yet",
                self.chain.tip().height
            );
        }
        Ok(())
    }
}

impl DaSource for PeersDa {
    fn last_scanned(&mut self) -> Result<u64, SourceError> {
        self.src.look()?;
        Ok(self.final_height())
    }

    fn rejected(&mut self, why: &str) {
        warn!("bitcoin: a slot read from Bitcoin was refused: {why}");
    }

    fn slot(&mut self, number: u64) -> Result<DaSlot, SourceError> {
        let mut slots = self.slots(number, number)?;
        slots
            .pop()
            .ok_or_else(|| SourceError::bad_answer("no Bitcoin source sent the block"))
    }

    fn slots(&mut self, from: u64, to: u64) -> Result<Vec<DaSlot>, SourceError> {
        let mut slots = Vec::with_capacity((to + 1).saturating_sub(from) as usize);
        self.slots_each(from, to, &mut |slot| {
            slots.push(slot);
            true
        })?;
        Ok(slots)
    }

    /// Each slot as soon as its block and those before it are checked: the
    /// DA pass stores it while the next ones download (the scanned height
    /// moves block by block).
    fn slots_each(&mut self, from: u64, to: u64, each: EachSlot<'_>) -> Result<(), SourceError> {
        self.kept.forget_below(from);
        let wanted = scan::hashes(&self.src.chain, from, to)?;
        let final_height = self.final_height();
        self.src
            .blocks_each(&mut self.kept, &wanted, true, &mut |block| {
                crate::os::give_way();
                self.anchors.remember(&block, final_height);
                let slot = self.scanner.slot_of(&block);
                self.pace.keep(1);
                each(slot)
            })
    }

    fn streams_slots(&self) -> bool {
        true
    }

    fn anchors(&mut self, heights: &[u64]) -> Result<Option<Vec<Option<DaAnchor>>>, SourceError> {
        let missing = self.anchors.missing(heights, self.src.chain.tip().height);
        let mut wanted = Vec::with_capacity(missing.len());
        for h in missing {
            if let Some(hash) = scan::hash_at(&self.src.chain, h)? {
                wanted.push((h, hash));
            }
        }
        let final_height = self.final_height();
        // Checked, in the order asked, and kept for the scan ([`Sources::blocks_each`]).
        let (mut fresh, mut got) = (BTreeMap::new(), 0);
        self.src
            .blocks_each(&mut self.kept, &wanted, false, &mut |block| {
                fresh.insert(block.height, self.anchors.remember(&block, final_height));
                got += 1;
                true
            })?;
        if got != wanted.len() {
            return Err(SourceError::bad_answer("a block asked is missing"));
        }
        Ok(Some(self.anchors.answer(heights, &fresh)))
    }

    /// The best chain's block at `number`, as of the last look (whichever
    /// source showed it): the sync checks the last scanned slot against it
    /// right after each look, as with bitcoind's RPC.
    fn block_hash(&mut self, number: u64) -> Result<Option<Hash>, SourceError> {
        Ok(scan::hash_at(&self.src.chain, number)?.map(|h| h.to_byte_array()))
    }
}
