//! The L2 part of a sync pass: soft confirmations from the L2 source up to
//! its head, in chunks (several in flight when the source takes them), each
//! verified on top of the stored head and written with its indexes; with
//! them, the DA slots they let be applied, so both layers move in one pass.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use log::debug;

use super::da_pass::{apply_slot, note_skipped};
use super::fetch::{fetch_ahead, CheckAhead, ChunkRanges, Fetching, Flow, Reach, Sink};
use super::pipeline::Pipeline;
use super::{DaSide, SyncConfig, SyncError, Syncer};
use crate::chain_rules::ForkTable;
use crate::checks::{self, Check, Prechecked, VerifyError};
use crate::ledger::{ChainTip, Ledger, LedgerRead, LedgerWriter};
use crate::progress::Progress;
use crate::source::{DaAnchor, DaSource, L2Source, RangeFetch, SourceError};
use crate::stop::Stop;
use crate::types::{DaSlot, SoftConfirmation};

impl<L: L2Source + Send, D: DaSide<L>> Syncer<L, D> {
    pub(super) fn sync_l2(&mut self, stop: &Stop) -> Result<u64, SyncError> {
        let head = self.l2.head()?;
        self.progress.source_ok();
        self.progress.l2_source_head.fetch_max(head, Relaxed);
        self.progress.note_behind();
        // A slow source's blocks come first: its DA slots would take more
        // requests than the blocks, each as slow (the DA part of the pass
        // scans them once the blocks are stored), and the genesis root is
        // not needed before them.
        let slow = self.l2.slow();
        if !slow {
            self.store_genesis_root()?;
        }
        let below = self.ledger.reader()?.tip()?;
        if below.0 >= head || stop.is_stopped() {
            return Ok(0);
        }
        // Where this pass ends (the DA part comes next).
        let head = (self.l2.blocks_per_pass()).map_or(head, |n| head.min(below.0 + n.max(1)));
        let pinned = self.sequencer_key()?;
        let chunk = self.config.chunk.max(1);
        let da_plan = if slow { None } else { self.da_plan()? };
        let (ledger, mut sources, progress, config) = self.parts();
        let (l2, da_side) = (&mut *sources.0, &mut *sources.1);
        let mut sink = L2Sink {
            ledger,
            progress,
            head,
            below,
            key: pinned,
            config,
            key_stored: pinned.is_some() && config.sequencer_pubkey.is_none(),
            stored_total: 0,
            txn: None,
            work_in_txn: Duration::ZERO,
            da_scanned: da_plan.map(|(next, _)| next - 1),
            on_chain: da_side.separate(),
            da_in_txn: 0,
            without_bodies_in_txn: 0,
        };
        // Along with each chunk of blocks, the DA slots before the slot its
        // last block points at (a commitment or proof on a slot covers
        // blocks that point at earlier slots): they are scanned in the same
        // pass, while the blocks are verified, instead of after.
        let mut da = da_plan;
        let slots_per_fetch = config.slots_per_fetch.max(1);
        // With signature threads to spare (an upstream, whose fetch threads
        // mostly wait), the fetch side checks the hashes and signatures of what
        // arrives (each pipeline worker its own answer), while the sync
        // thread writes and commits what came before. (A serving devnet has
        // one: its fetch thread is busy signing, and checks ahead only
        // while the sync thread is behind.)
        let presign = (config.verify_threads >= 2).then_some(config.forks);
        let ahead = presign.is_none().then_some(config.forks);
        // Several range requests in flight when the source can take them
        // and there is more than one range to fetch.
        let mut pipeline = match l2.parallel() {
            Some(fetcher) if config.concurrency > 1 && head - below.0 > chunk => {
                let fetcher = Box::new(Presigning {
                    blocks: fetcher,
                    forks: presign,
                });
                Some(Pipeline::new(fetcher, head, config.concurrency, chunk)?)
            }
            _ => None,
        };
        // The DA slots that come with the blocks, likewise, when the blocks
        // are fetched that way: batches of slots in flight up to the
        // source's last scanned slot, taken in order as the blocks allow.
        let mut slot_pipeline = match (&da, da_side.source(l2).parallel_slots(), &pipeline) {
            (Some((_, da_head)), Some(fetcher), Some(_)) => Some(Pipeline::new(
                fetcher,
                *da_head,
                config.concurrency,
                slots_per_fetch,
            )?),
            _ => None,
        };
        // Slots fetched ahead of the blocks that let them be applied.
        let mut fetched_slots: VecDeque<DaSlot> = VecDeque::new();
        let fetch = move |(l2, da_side): &mut (&mut L, &mut D), (from, to): (u64, u64)| {
            let (blocks, pre) = match pipeline.as_mut().map(|p| p.next_from(from)) {
                Some(Ok(Some((blocks, pre)))) if !blocks.is_empty() => (blocks, pre),
                // A failure or an empty answer: the rest of this pass asks
                // the plain way, so the source sees what went wrong (and can
                // move to another upstream).
                Some(_) => {
                    pipeline = None;
                    (l2.blocks(from, to)?, None)
                }
                None => (l2.blocks(from, to)?, None),
            };
            let anchors = anchors_for(da_side.source(l2), &blocks);
            let mut slots = Vec::new();
            if let Some((_, da_head)) = da.as_mut() {
                // A devnet has made the slots these blocks open.
                if let Some(made) = da_side.source(l2).made_with_blocks() {
                    *da_head = (*da_head).max(made);
                }
            }
            if let (Some((next, da_head)), Some(last)) = (da.as_mut(), blocks.last()) {
                let until = (*da_head).min(last.da_slot_height.saturating_sub(1));
                let gave_up = 'scan: {
                    while *next <= until {
                        if let Some(p) = slot_pipeline.as_mut() {
                            if fetched_slots.front().map(|s| s.number) != Some(*next) {
                                fetched_slots.clear();
                                match p.next_from(*next) {
                                    Ok(Some(got)) if consecutive_from(&got, *next) => {
                                        fetched_slots.extend(got)
                                    }
                                    _ => break 'scan true,
                                }
                            }
                            while let Some(slot) = fetched_slots.pop_front() {
                                if slot.number > until {
                                    fetched_slots.push_front(slot);
                                    break;
                                }
                                *next = slot.number + 1;
                                slots.push(slot);
                            }
                            continue;
                        }
                        let to = until.min(*next + slots_per_fetch - 1);
                        match da_side.source(l2).slots(*next, to) {
                            Ok(mut got) if got.last().is_some_and(|s| s.number == to) => {
                                *next = to + 1;
                                slots.append(&mut got);
                            }
                            // Left to the DA pass, which reports what went wrong.
                            _ => break 'scan true,
                        }
                    }
                    false
                };
                if gave_up {
                    da = None;
                }
            }
            let pre = match (pre, presign) {
                (Some(pre), _) => pre,
                (None, Some(forks)) => Prechecked {
                    hashed: checks::hashed_prefix(&blocks, &forks),
                    signed: checks::signed_prefix(&blocks, &forks, 2),
                },
                // One signature thread (a serving devnet): its fetch thread
                // makes and signs the blocks and makes the DA slots; the
                // sync thread checks what the fetch thread did not check
                // ahead while it waited ([`CheckAhead`]), writes, and
                // applies the slots.
                (None, None) => Prechecked::default(),
            };
            Ok(Fetched {
                blocks,
                slots,
                anchors,
                pre,
                ahead,
            })
        };
        let job = Fetching {
            source: &mut sources,
            ranges: ChunkRanges {
                next: below.0 + 1,
                last: head,
                chunk,
            },
            stop,
            depth: config.prefetch,
        };
        fetch_ahead(job, fetch, &mut sink)?;
        Ok(sink.stored_total)
    }

    /// Where DA scanning would go on: (next slot, the source's last scanned
    /// slot); `None` when there is nothing to scan or the source cannot say
    /// (the DA pass finds out and reports it). A source that makes slots
    /// along with its blocks ([`DaSource::made_with_blocks`]) always gets a
    /// plan: its last scanned slot grows as the pass fetches.
    pub(super) fn da_plan(&mut self) -> Result<Option<(u64, u64)>, SyncError> {
        let scanned = self.ledger.reader()?.last_scanned_l1()?;
        let next = if scanned == 0 {
            match self.l2.first_slot() {
                Ok(Some(first)) => first.max(1),
                _ => return Ok(None),
            }
        } else {
            scanned + 1
        };
        let da_head = match self.da_head() {
            Ok(head) => head,
            // Stops the pass: nothing is scanned from a chain that left a
            // scanned slot out.
            Err(e @ SyncError::Reorg { .. }) => return Err(e),
            Err(_) => return Ok(None),
        };
        // A source that makes slots along with its blocks has more to come
        // in this pass, even when none is due now.
        let more_to_come = self.da.source(&mut self.l2).made_with_blocks().is_some();
        self.progress.l1_source_head.fetch_max(da_head, Relaxed);
        Ok((next <= da_head || more_to_come).then_some((next, da_head)))
    }
}

/// Whether `slots` are numbered `from`, `from + 1`, ... with none missing.
fn consecutive_from(slots: &[DaSlot], from: u64) -> bool {
    !slots.is_empty() && slots.iter().zip(from..).all(|(s, n)| s.number == n)
}

/// The DA blocks a chunk's blocks point at, by height (`None`: not on the
/// chain yet), when the DA source reads the chain itself; `Ok(None)` when it
/// cannot tell.
type Anchors = Result<Option<Vec<(u64, Option<DaAnchor>)>>, SourceError>;

/// Asks the DA source for the blocks `blocks` point at.
fn anchors_for(da: &mut dyn DaSource, blocks: &[SoftConfirmation]) -> Anchors {
    if blocks.is_empty() {
        return Ok(None);
    }
    let mut heights: Vec<u64> = blocks.iter().map(|b| b.da_slot_height).collect();
    heights.sort_unstable();
    heights.dedup();
    Ok(da
        .anchors(&heights)?
        .map(|found| heights.into_iter().zip(found).collect()))
}

/// How many of `blocks` point at the DA chain's blocks as they are, and
/// why the next one is not taken: `None` (all are, or the source cannot
/// tell), `Some(Ok(()))` (it names a block the chain does not have yet:
/// wait), `Some(Err(_))` (it names another block than the chain's).
fn check_anchors(
    blocks: &[SoftConfirmation],
    anchors: Option<&[(u64, Option<DaAnchor>)]>,
) -> (usize, Option<Result<(), VerifyError>>) {
    let Some(anchors) = anchors else {
        return (blocks.len(), None);
    };
    for (i, b) in blocks.iter().enumerate() {
        let found = anchors
            .binary_search_by_key(&b.da_slot_height, |(h, _)| *h)
            .ok()
            .and_then(|at| anchors[at].1);
        let Some(a) = found else {
            return (i, Some(Ok(())));
        };
        if a.hash != b.da_slot_hash || a.txs_commitment != b.da_slot_txs_commitment {
            let what = format!(
                "L2 block {} names DA block {} (txs commitment {}) at height {}; the chain has \
                 block {} (txs commitment {}) there",
                b.l2_height,
                hex::encode(b.da_slot_hash),
                hex::encode(b.da_slot_txs_commitment),
                b.da_slot_height,
                hex::encode(a.hash),
                hex::encode(a.txs_commitment),
            );
            return (
                i,
                Some(Err(VerifyError::Failed {
                    check: Check::DaSlot,
                    what,
                })),
            );
        }
    }
    (blocks.len(), None)
}

/// A chunk of blocks, the DA slots fetched along with it, and the DA blocks
/// its blocks point at.
struct Fetched {
    blocks: Vec<SoftConfirmation>,
    slots: Vec<DaSlot>,
    anchors: Anchors,
    /// What the fetch side checked already of its leading blocks.
    pre: Prechecked,
    /// The fork table to check more of them with while the sync thread is
    /// behind ([`CheckAhead`]); `None`: nothing more is checked ahead.
    ahead: Option<ForkTable>,
}

impl CheckAhead for Fetched {
    /// The hashes and signatures of the next few blocks after those checked
    /// already, as [`checks::hashed_prefix`] and [`checks::signed_prefix`]
    /// check them; after a failure nothing more (the sync thread finds it
    /// again and reports it).
    fn check_more(&mut self) -> bool {
        /// About 0.2-0.4 ms of signature checks: the fetch thread looks at
        /// the sync thread's queue again after each step.
        const STEP: usize = 8;
        let Some(forks) = self.ahead else {
            return false;
        };
        let from = self.pre.signed;
        let part = &self.blocks[from.min(self.blocks.len())..];
        let part = &part[..part.len().min(STEP)];
        if part.is_empty() {
            return false;
        }
        if self.pre.hashed == from {
            self.pre.hashed += checks::hashed_prefix(part, &forks);
        }
        let signed = checks::signed_prefix(part, &forks, 1);
        self.pre.signed += signed;
        if signed < part.len() {
            self.ahead = None;
        }
        true
    }
}

/// An upstream's block ranges, each with how many of its leading blocks'
/// hashes and signatures verified ([`Prechecked`], checked on the pipeline
/// worker that fetched it; `None` without `forks`).
struct Presigning {
    blocks: Box<dyn RangeFetch<Vec<SoftConfirmation>>>,
    forks: Option<ForkTable>,
}

impl RangeFetch<(Vec<SoftConfirmation>, Option<Prechecked>)> for Presigning {
    fn fetch(
        &self,
        from: u64,
        to: u64,
    ) -> Result<(Vec<SoftConfirmation>, Option<Prechecked>), SourceError> {
        let blocks = self.blocks.fetch(from, to)?;
        let pre = self.forks.map(|forks| Prechecked {
            hashed: checks::hashed_prefix(&blocks, &forks),
            signed: checks::signed_prefix(&blocks, &forks, 1),
        });
        Ok((blocks, pre))
    }

    fn preferred_chunk(&self, wanted: u64) -> u64 {
        self.blocks.preferred_chunk(wanted)
    }

    fn in_flight(&self, wanted: usize) -> usize {
        self.blocks.in_flight(wanted)
    }
}

impl Reach for Fetched {
    fn reach(&self) -> Option<u64> {
        self.blocks.reach()
    }
}

/// The L2 side of a pass: verifies fetched blocks on top of the stored head
/// and writes them, several chunks per write transaction.
struct L2Sink<'a> {
    ledger: &'a Ledger,
    progress: &'a Progress,
    /// The source's head this pass follows up to.
    head: u64,
    /// (height, hash) of the newest block verified (stored, or in the open transaction).
    below: (u64, crate::types::Hash),
    /// The sequencer key, once known.
    key: Option<[u8; 32]>,
    /// The fork table, the proof rules, the block rules, the signature
    /// threads and when to commit.
    config: &'a SyncConfig,
    /// Whether the key is pinned in the ledger already.
    key_stored: bool,
    stored_total: u64,
    /// The open write transaction: blocks in it, and since when.
    txn: Option<(LedgerWriter<'a>, u64, Instant)>,
    /// Time spent verifying and writing the blocks of the open transaction
    /// (for `ledgerd_sync_block_seconds`; the wait for chunks is not in it).
    work_in_txn: Duration,
    /// The last DA slot applied, while slots come with the blocks (`None`
    /// once one could not be applied: the DA pass takes over from there).
    da_scanned: Option<u64>,
    /// DA slots in the open transaction.
    da_in_txn: u64,
    /// Slots come from the DA chain itself: what fails a check is left out.
    on_chain: bool,
    /// Blocks accepted without their bodies in the open transaction.
    without_bodies_in_txn: u64,
}

impl L2Sink<'_> {
    /// Applies the slots that came with a chunk, in order, inside the open
    /// transaction; stops at the first that cannot be applied yet or fails
    /// a check (the DA pass fetches it again and reports why).
    fn take_slots(&mut self, slots: &[DaSlot]) -> Result<(), SyncError> {
        let (Some(scanned), Some((w, _, _))) = (self.da_scanned.as_mut(), self.txn.as_mut()) else {
            return Ok(());
        };
        let (forks, receipts) = (&self.config.forks, &self.config.receipts);
        for slot in slots {
            let mut skipped = Vec::new();
            let on_chain = self.on_chain.then_some(&mut skipped);
            let applied = slot.number == *scanned + 1
                && matches!(apply_slot(w, slot, forks, receipts, on_chain), Ok(true));
            note_skipped(self.progress, slot.number, &mut skipped);
            if !applied {
                self.da_scanned = None;
                return Ok(());
            }
            *scanned = slot.number;
            w.set_last_scanned_l1(slot.number)?;
            self.da_in_txn += 1;
        }
        Ok(())
    }
}

impl Sink<Fetched> for L2Sink<'_> {
    fn take(&mut self, fetched: Fetched) -> Result<Flow, SyncError> {
        let (blocks, slots, pre) = (fetched.blocks, fetched.slots, fetched.pre);
        let Some(first) = blocks.first() else {
            return Ok(Flow::Stop);
        };
        let anchors = fetched.anchors.map_err(SyncError::Da)?;
        // Only blocks that point at the DA chain's blocks as they are.
        let (anchored, not_anchored) = check_anchors(&blocks, anchors.as_deref());
        if anchored == 0 {
            if let Some(Err(e)) = not_anchored {
                return Err(e.into());
            }
            debug!(
                "L2 block {} names DA height {}, which the DA chain does not have yet: waiting",
                first.l2_height, first.da_slot_height
            );
            return Ok(Flow::Stop);
        }
        let key = *self.key.get_or_insert(first.pub_key);
        let working = Instant::now();
        let verdict = checks::verify_blocks_on(
            &blocks[..anchored],
            self.below,
            &key,
            &self.config.forks,
            self.config.block_rules,
            self.config.verify_threads,
            pre,
        );
        let (good, failure) = (verdict.good, verdict.failure);
        if good > 0 {
            let txn = match self.txn.take() {
                Some(txn) => txn,
                None => (self.ledger.writer()?, 0, Instant::now()),
            };
            let (w, count, _) = self.txn.insert(txn);
            if !self.key_stored {
                if w.sequencer_pubkey()?.is_none() {
                    w.set_sequencer_pubkey(&key)?;
                }
                self.key_stored = true;
            }
            w.store_blocks(&blocks[..good])?;
            *count += good as u64;
            if verdict.without_bodies > 0 {
                w.add_blocks_without_bodies(verdict.without_bodies)?;
                self.without_bodies_in_txn += verdict.without_bodies;
            }
            let last = &blocks[good - 1];
            self.below = (last.l2_height, last.hash);
            self.work_in_txn += working.elapsed();
        }
        if let Some(e) = failure {
            return Err(e.into());
        }
        if let Some(Err(e)) = not_anchored {
            return Err(e.into());
        }
        self.take_slots(&slots)?;
        if not_anchored.is_some() {
            debug!(
                "L2 block {} names a DA height the DA chain does not have yet: waiting",
                blocks[anchored].l2_height
            );
            return Ok(Flow::Stop);
        }
        let full = self.txn.as_ref().is_some_and(|(_, count, opened)| {
            *count >= self.config.commit_blocks || opened.elapsed() >= self.config.commit_every
        });
        if full {
            self.commit()?;
        }
        Ok(Flow::More)
    }

    fn commit(&mut self) -> Result<(), SyncError> {
        let Some((w, count, _)) = self.txn.take() else {
            return Ok(());
        };
        let committing = Instant::now();
        w.commit()?;
        let work = std::mem::take(&mut self.work_in_txn) + committing.elapsed();
        self.progress.block_time.observe(count, work);
        let new_head = self.below.0;
        self.progress.stored_l2(new_head, count);
        if self.without_bodies_in_txn > 0 {
            self.progress
                .blocks_without_bodies
                .fetch_add(self.without_bodies_in_txn, Relaxed);
            self.without_bodies_in_txn = 0;
        }
        if let (Some(scanned), true) = (self.da_scanned, self.da_in_txn > 0) {
            self.progress.scanned_l1(scanned, self.da_in_txn);
            self.da_in_txn = 0;
        }
        self.stored_total += count;
        if count >= super::TRIM_AFTER {
            crate::memory::trim_now_and_then();
        }
        debug!(target: "ledgerd::sync", "L2 synced to {new_head} of {}", self.head);
        Ok(())
    }

    fn due(&self) -> Option<Instant> {
        self.txn
            .as_ref()
            .map(|(_, _, opened)| *opened + self.config.commit_every)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::BlockRules;
    use crate::source::devnet::block::tests::seed_chain;

    /// 30 devnet blocks, Genesis rules below height 12, Kumquat from it.
    fn chain() -> (ForkTable, Vec<SoftConfirmation>) {
        seed_chain(5, 12, 30)
    }

    /// `blocks` fetched, to be checked ahead by `ahead`'s rules.
    fn fetched(blocks: Vec<SoftConfirmation>, ahead: Option<ForkTable>) -> Fetched {
        Fetched {
            blocks,
            slots: Vec::new(),
            anchors: Ok(None),
            pre: Prechecked::default(),
            ahead,
        }
    }

    /// Checks ahead as a fetch thread would with a full queue, to the end.
    fn checked_ahead(blocks: &[SoftConfirmation], forks: ForkTable) -> Prechecked {
        let mut fetched = fetched(blocks.to_vec(), Some(forks));
        let mut steps = 0;
        while fetched.check_more() {
            steps += 1;
            assert!(steps <= blocks.len(), "checking ahead ends");
        }
        fetched.pre
    }

    #[test]
    fn checking_ahead_stops_at_the_first_bad_signature_and_changes_no_verdict() {
        let (forks, good) = chain();
        let key = good[0].pub_key;
        let below = (0, crate::types::ZERO_HASH);
        let rules = BlockRules::default();
        let pre = checked_ahead(&good, forks);
        assert_eq!((pre.hashed, pre.signed), (30, 30));
        // A bad signature (in a Genesis block, in a Kumquat one) and a bad
        // hash: the prefixes stop there, and the sync thread's verdict with
        // them is its verdict without them.
        for (bad_sig, bad_hash) in [(Some(9), None), (Some(21), Some(4)), (None, Some(17))] {
            let mut broken = good.clone();
            if let Some(i) = bad_sig {
                broken[i].signature[33] ^= 1;
            }
            if let Some(i) = bad_hash {
                broken[i].timestamp += 1;
            }
            let pre = checked_ahead(&broken, forks);
            assert_eq!(pre.signed, checks::signed_prefix(&broken, &forks, 1));
            assert_eq!(pre.hashed.min(pre.signed), {
                let hashed = checks::hashed_prefix(&broken, &forks);
                hashed.min(pre.signed)
            });
            let all = checks::verify_blocks(&broken, below, &key, &forks, rules);
            let with = checks::verify_blocks_on(&broken, below, &key, &forks, rules, 1, pre);
            let first_bad = bad_sig.into_iter().chain(bad_hash).min();
            assert_eq!(all.good, first_bad.unwrap_or(30));
            assert_eq!(with.good, all.good);
            assert_eq!(
                with.failure.map(|e| e.to_string()),
                all.failure.map(|e| e.to_string())
            );
        }
    }

    #[test]
    fn nothing_is_checked_ahead_without_a_fork_table() {
        let mut fetched = fetched(chain().1, None);
        assert!(!fetched.check_more());
        assert_eq!(fetched.pre, Prechecked::default());
    }
}
