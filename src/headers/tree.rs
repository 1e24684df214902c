//! The header tree: every header checked by [`super::rules`] against its
//! own ancestors, chainwork summed per header, the most-work chain as the
//! best chain, side branches kept while they fork within the headers held
//! in memory.
//!
//! The best chain's last `keep` headers ([`HeaderTree::open`]) are held in memory
//! (the context every rule needs: 2016 headers back for a retarget, 11 for
//! the median time past), and every header of it from genesis in the
//! ledger's `bitcoin_headers` table once [`HeaderTree::save`] wrote it.
//! Side branches live in memory only: a branch that forks below the
//! headers held cannot be checked (its context is gone) and is refused.
//!
//! A branch with more work than the best chain (strictly more: on a tie the
//! first seen stays, as in Core) becomes the best chain at once: a reorg,
//! reported in [`Accepted::reorg`]. Whether a chain may be followed at all
//! is [`HeaderTree::meets_min_chainwork`] (Core's `nMinimumChainWork`).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bitcoin::block::Header;
use bitcoin::pow::Work;
use bitcoin::BlockHash;

use super::file::header_hash;
use super::params::{BitcoinNetwork, ChainParams};
use super::rules::{self, Ancestors, HeaderError, Past, Rule};
use crate::ledger::{BitcoinHeaderRead, Ledger, LedgerError, StoredHeader};

/// Best-chain headers held in memory by default: a retarget's period plus
/// room for forks (about 150 bytes each).
pub const DEFAULT_KEEP: u64 = 2016 + 1008;

/// Headers a locator lists at most (Core disconnects above 101).
pub const MAX_LOCATOR: usize = 101;

/// One checked header and where it sits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub header: Header,
    pub hash: BlockHash,
    pub height: u64,
    /// Total work of the chain up to and including this header.
    pub chainwork: Work,
    /// Testnet's walk-back from this header: the bits of the last header at
    /// or below it where the walk stops ([`rules::walk_back`]), tracked as
    /// headers arrive (`None`: that header is below the headers loaded).
    pub real_bits: Option<u32>,
}

/// What one [`HeaderTree::accept`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Accepted {
    /// Headers checked and added (best chain or a side branch).
    pub added: usize,
    /// Headers already held (skipped).
    pub known: usize,
    /// The best chain changed below its old tip (a reorg), once or more:
    /// the lowest height where it forked.
    pub reorg: Option<Reorg>,
}

/// A change of the best chain below its old tip.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reorg {
    /// The last height both chains share.
    pub fork_height: u64,
    /// The tip before (height, hash).
    pub old_tip: (u64, BlockHash),
}

/// Why the header chain cannot be loaded or saved.
#[derive(Debug)]
pub enum HeaderStoreError {
    Ledger(LedgerError),
    /// The ledger holds the headers of another network.
    OtherChain {
        chain: BitcoinNetwork,
        genesis: BlockHash,
    },
    /// A stored header does not follow the one below it, or fails to decode.
    Corrupt {
        height: u64,
        reason: String,
    },
}

impl std::fmt::Display for HeaderStoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderStoreError::Ledger(e) => e.fmt(f),
            HeaderStoreError::OtherChain { chain, genesis } => write!(
                f,
                "the ledger holds the Bitcoin headers of another chain (genesis {genesis}), \
                 not {chain}'s: use the --bitcoin-chain it was made with, or another --data-dir"
            ),
            HeaderStoreError::Corrupt { height, reason } => write!(
                f,
                "the stored Bitcoin header at height {height} is unusable: {reason}"
            ),
        }
    }
}

impl std::error::Error for HeaderStoreError {}

wrap_errors!(HeaderStoreError {
    Ledger(LedgerError),
});

/// The header tree of one network (see the module docs).
pub struct HeaderTree {
    params: &'static ChainParams,
    /// The best chain's heights `base..=tip`.
    best: VecDeque<Entry>,
    base: u64,
    /// Hash -> height of the entries in `best`.
    index: HashMap<BlockHash, u64>,
    /// Headers not on the best chain, by hash.
    side: HashMap<BlockHash, Entry>,
    keep: u64,
    ledger: Option<Arc<Ledger>>,
    /// The lowest best-chain height not yet written to the ledger.
    dirty_from: Option<u64>,
    /// The highest height the ledger holds.
    saved_tip: Option<u64>,
    /// Headers checked since start.
    verified: u64,
    /// The work of the last bits seen (a division saved per header).
    work_of: (u32, Work),
    pow_limit: bitcoin::pow::Target,
}

impl HeaderTree {
    /// A chain held in memory only, from genesis, keeping every header.
    pub fn in_memory(chain: BitcoinNetwork) -> HeaderTree {
        let mut c = HeaderTree::empty(chain.params(), u64::MAX, None);
        c.push_genesis();
        c
    }

    /// The chain stored in `ledger` (from genesis when it holds none yet,
    /// written at the next [`save`](Self::save)); its last `keep` headers
    /// (at least [`DEFAULT_KEEP`]) loaded.
    pub fn open(
        chain: BitcoinNetwork,
        ledger: Arc<Ledger>,
        keep: u64,
    ) -> Result<HeaderTree, HeaderStoreError> {
        let params = chain.params();
        let keep = keep.max(DEFAULT_KEEP);
        let r = ledger.reader()?;
        let tip = r.bitcoin_header_tip()?;
        let stored: Vec<StoredHeader> = match tip {
            None => Vec::new(),
            Some(tip) => {
                let genesis = r
                    .bitcoin_header(0)?
                    .ok_or_else(|| HeaderStoreError::Corrupt {
                        height: 0,
                        reason: "the genesis header is missing".into(),
                    })?;
                let hash = genesis.header.block_hash();
                if hash != params.genesis_block_hash() {
                    return Err(HeaderStoreError::OtherChain {
                        chain,
                        genesis: hash,
                    });
                }
                r.bitcoin_headers(tip.saturating_sub(keep - 1), tip)?
            }
        };
        drop(r);
        let mut c = HeaderTree::empty(params, keep, Some(ledger));
        if stored.is_empty() {
            c.push_genesis();
            return Ok(c);
        }
        c.base = stored[0].height;
        for s in stored {
            let hash = header_hash(&s.header);
            let parent_real_bits = c.best.back().and_then(|prev| prev.real_bits);
            let bits = s.header.bits.to_consensus();
            let real_bits = rules::real_bits(s.height, bits, parent_real_bits, params);
            if let Some(prev) = c.best.back() {
                if s.header.prev_blockhash != prev.hash || s.height != prev.height + 1 {
                    return Err(HeaderStoreError::Corrupt {
                        height: s.height,
                        reason: format!("it does not follow the header at height {}", prev.height),
                    });
                }
            }
            c.index.insert(hash, s.height);
            c.best.push_back(Entry {
                header: s.header,
                hash,
                height: s.height,
                chainwork: s.chainwork,
                real_bits,
            });
        }
        c.saved_tip = Some(c.tip().height);
        Ok(c)
    }

    fn empty(params: &'static ChainParams, keep: u64, ledger: Option<Arc<Ledger>>) -> HeaderTree {
        HeaderTree {
            params,
            best: VecDeque::new(),
            base: 0,
            index: HashMap::new(),
            side: HashMap::new(),
            keep,
            ledger,
            dirty_from: None,
            saved_tip: None,
            verified: 0,
            work_of: (0, Work::from_be_bytes([0; 32])),
            pow_limit: params.pow_limit(),
        }
    }

    fn push_genesis(&mut self) {
        let header = self.params.chain.genesis();
        let hash = header_hash(&header);
        self.index.insert(hash, 0);
        self.best.push_back(Entry {
            header,
            hash,
            height: 0,
            chainwork: header.work(),
            real_bits: Some(header.bits.to_consensus()),
        });
        self.dirty_from = Some(0);
    }

    /// The network.
    pub fn chain(&self) -> BitcoinNetwork {
        self.params.chain
    }

    /// The best chain's tip.
    pub fn tip(&self) -> &Entry {
        // Never empty: genesis at least.
        &self.best[self.best.len() - 1]
    }

    /// The best chain's total work.
    pub fn best_chainwork(&self) -> Work {
        self.tip().chainwork
    }

    /// Whether the best chain has at least the network's minimum chainwork
    /// (Core's `nMinimumChainWork`): below it, it is not followed.
    pub fn meets_min_chainwork(&self) -> bool {
        self.best_chainwork() >= self.params.min_chainwork()
    }

    /// Headers checked (and added) since start.
    pub fn verified(&self) -> u64 {
        self.verified
    }

    /// The best chain's header at `height`, when held in memory.
    pub fn entry_at(&self, height: u64) -> Option<&Entry> {
        let i = height.checked_sub(self.base)?;
        self.best.get(usize::try_from(i).ok()?)
    }

    /// The best chain's header at `height` (from memory or the ledger).
    pub fn header_at(&self, height: u64) -> Result<Option<Header>, LedgerError> {
        if height > self.tip().height {
            return Ok(None);
        }
        if let Some(e) = self.entry_at(height) {
            return Ok(Some(e.header));
        }
        let Some(l) = &self.ledger else {
            return Ok(None);
        };
        Ok(l.reader()?.bitcoin_header(height)?.map(|s| s.header))
    }

    /// The best chain's block hash at `height`: what the DA scan asks
    /// ("which block is at height h").
    pub fn hash_at(&self, height: u64) -> Result<Option<BlockHash>, LedgerError> {
        if let Some(e) = self.entry_at(height) {
            return Ok(Some(e.hash));
        }
        Ok(self.header_at(height)?.map(|h| h.block_hash()))
    }

    /// The height of `hash` when it is on the best chain's headers held in
    /// memory.
    pub fn height_of(&self, hash: &BlockHash) -> Option<u64> {
        self.index.get(hash).copied()
    }

    /// Whether `hash` is a header held (best chain in memory, or a side
    /// branch).
    pub fn contains(&self, hash: &BlockHash) -> bool {
        self.index.contains_key(hash) || self.side.contains_key(hash)
    }

    /// A block locator of the best chain (Core's `LocatorEntries`): the tip,
    /// the 10 before it, then doubling steps back, and genesis; at most
    /// `MAX_LOCATOR` hashes.
    pub fn locator(&self) -> Result<Vec<BlockHash>, LedgerError> {
        let mut out = Vec::with_capacity(32);
        let mut height = self.tip().height;
        let mut step = 1u64;
        loop {
            if let Some(hash) = self.hash_at(height)? {
                out.push(hash);
            }
            if height == 0 || out.len() >= MAX_LOCATOR - 1 {
                break;
            }
            if out.len() > 10 {
                step *= 2;
            }
            height = height.saturating_sub(step);
        }
        if out.last() != Some(&self.params.genesis_block_hash()) {
            out.push(self.params.genesis_block_hash());
        }
        Ok(out)
    }

    /// Checks `headers` (each against its own ancestors) and adds them: the
    /// best chain follows the most work. `now` is the local clock (Unix
    /// seconds) for the two-hour rule. Headers already held are skipped.
    /// Stops at the first header that breaks a rule (those before it stay
    /// added); a header whose parent is not held is refused under
    /// [`Rule::Link`].
    pub fn accept(&mut self, headers: &[Header], now: i64) -> Result<Accepted, HeaderError> {
        let mut out = Accepted::default();
        for header in headers {
            let hash = header_hash(header);
            if self.contains(&hash) {
                out.known += 1;
                continue;
            }
            let tip = self.tip();
            let (tip_height, tip_hash) = (tip.height, tip.hash);
            let (branch, fork_height) = self.branch_to(header, hash)?;
            let (height, parent_work, parent_real_bits) =
                self.check(header, hash, &branch, fork_height, now)?;
            let bits = header.bits.to_consensus();
            if self.work_of.0 != bits {
                self.work_of = (bits, header.work());
            }
            let entry = Entry {
                header: *header,
                hash,
                height,
                chainwork: parent_work + self.work_of.1,
                real_bits: rules::real_bits(height, bits, parent_real_bits, self.params),
            };
            self.verified += 1;
            out.added += 1;
            if entry.header.prev_blockhash == tip_hash {
                self.push_best(entry);
            } else if entry.chainwork > self.best_chainwork() {
                let fork = self.switch_to(entry);
                let reorg = Reorg {
                    fork_height: fork,
                    old_tip: (tip_height, tip_hash),
                };
                out.reorg = match out.reorg.take() {
                    Some(r) if r.fork_height <= fork => Some(r),
                    _ => Some(reorg),
                };
            } else {
                self.side.insert(entry.hash, entry);
            }
        }
        self.prune();
        Ok(out)
    }

    /// The side-branch entries from the best chain up to `header`'s parent
    /// (ascending), and the height where they leave the best chain.
    fn branch_to(
        &self,
        header: &Header,
        hash: BlockHash,
    ) -> Result<(Vec<Entry>, u64), HeaderError> {
        let mut branch = Vec::new();
        let mut prev = header.prev_blockhash;
        loop {
            if let Some(h) = self.height_of(&prev) {
                branch.reverse();
                return Ok((branch, h));
            }
            match self.side.get(&prev) {
                Some(e) => {
                    prev = e.header.prev_blockhash;
                    branch.push(e.clone());
                }
                None => {
                    // Its height is unknown: the one it would have on the tip.
                    return Err(HeaderError {
                        height: self.tip().height + 1,
                        hash,
                        rule: Rule::Link,
                        detail: format!(
                            "its parent {prev} is no header held: unknown, or a fork below the \
                             {} headers of the best chain kept (tip {})",
                            self.best.len(),
                            self.tip().height
                        ),
                    });
                }
            }
        }
    }

    /// All rules for `header` on `branch` (side entries above the best
    /// chain's `fork_height`, ascending; empty: on the best chain at
    /// `fork_height`); the new header's height, its parent's chainwork and
    /// its parent's [`Entry::real_bits`].
    fn check(
        &self,
        header: &Header,
        hash: BlockHash,
        branch: &[Entry],
        fork_height: u64,
        now: i64,
    ) -> Result<(u64, Work, Option<u32>), HeaderError> {
        let parent = branch.last().or_else(|| self.entry_at(fork_height));
        let parent = parent.ok_or_else(|| HeaderError {
            height: fork_height + 1,
            hash,
            rule: Rule::Link,
            detail: "its parent is no longer held".into(),
        })?;
        let height = parent.height + 1;
        let view = View {
            chain: self,
            branch,
            fork_height,
        };
        let checked = rules::check_header(
            self.params,
            self.pow_limit,
            height,
            header,
            hash,
            &view,
            now,
        )?;
        if let Some(rule) = Rule::ALL.into_iter().find(|r| checked.lacks(*r)) {
            return Err(HeaderError {
                height,
                hash,
                rule,
                detail: "the headers this rule needs are no longer held (a fork too deep)".into(),
            });
        }
        Ok((height, parent.chainwork, parent.real_bits))
    }

    fn push_best(&mut self, entry: Entry) {
        self.dirty_from = Some(entry.height.min(self.dirty_from.unwrap_or(u64::MAX)));
        self.index.insert(entry.hash, entry.height);
        self.best.push_back(entry);
    }

    /// Makes the branch ending in `entry` the best chain; the fork height.
    fn switch_to(&mut self, entry: Entry) -> u64 {
        let mut branch = vec![entry];
        let mut prev = branch[0].header.prev_blockhash;
        while let Some(e) = self.side.remove(&prev) {
            prev = e.header.prev_blockhash;
            branch.push(e);
        }
        let fork = self.height_of(&prev).unwrap_or(self.base);
        while self.tip().height > fork {
            if let Some(old) = self.best.pop_back() {
                self.index.remove(&old.hash);
                self.side.insert(old.hash, old);
            }
        }
        for e in branch.into_iter().rev() {
            self.push_best(e);
        }
        fork
    }

    /// Drops side branches that fork below the headers held, and (when the
    /// ledger has them) best-chain headers beyond `keep`.
    fn prune(&mut self) {
        let saved_below = self.dirty_from.unwrap_or(u64::MAX);
        while self.best.len() as u64 > self.keep && self.base < saved_below {
            if let Some(old) = self.best.pop_front() {
                self.index.remove(&old.hash);
                self.base += 1;
            }
        }
        self.side.retain(|_, e| e.height > self.base);
    }

    /// Writes the best-chain headers not yet in the ledger (and removes
    /// stored heights above a shorter new best chain) in one write
    /// transaction. A chain held in memory only has nothing to write.
    pub fn save(&mut self) -> Result<(), LedgerError> {
        let (Some(ledger), Some(from)) = (self.ledger.clone(), self.dirty_from) else {
            return Ok(());
        };
        let tip = self.tip().height;
        let mut w = ledger.writer()?;
        for h in from..=tip {
            if let Some(e) = self.entry_at(h) {
                w.put_bitcoin_header(&StoredHeader {
                    height: e.height,
                    header: e.header,
                    chainwork: e.chainwork,
                })?;
            }
        }
        if self.saved_tip.is_some_and(|saved| saved > tip) {
            w.delete_bitcoin_headers_above(tip)?;
        }
        w.commit()?;
        self.saved_tip = Some(tip);
        self.dirty_from = None;
        self.prune();
        Ok(())
    }
}

/// The local clock, Unix seconds.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A candidate's ancestors: its branch above the fork, the best chain below.
struct View<'a> {
    chain: &'a HeaderTree,
    branch: &'a [Entry],
    fork_height: u64,
}

impl View<'_> {
    fn entry(&self, height: u64) -> Option<&Entry> {
        if height > self.fork_height {
            let i = usize::try_from(height - self.fork_height - 1).ok()?;
            self.branch.get(i)
        } else {
            self.chain.entry_at(height)
        }
    }
}

impl Ancestors for View<'_> {
    fn at(&self, height: u64) -> Option<Past> {
        self.entry(height).map(|e| Past::of(&e.header))
    }

    fn last_real_bits(&self, prev_height: u64, params: &ChainParams) -> Option<u32> {
        // Tracked on each entry as it was added; walked for the first
        // headers loaded, whose walk would leave the headers held.
        match self.entry(prev_height)?.real_bits {
            Some(bits) if std::ptr::eq(params, self.chain.params) => Some(bits),
            _ => rules::walk_back(self, prev_height, params),
        }
    }
}

#[cfg(test)]
mod tests;
