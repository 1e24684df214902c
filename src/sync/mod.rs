//! The sync thread: pulls from a chain source, verifies, writes the ledger.
//!
//! One pass ([`Syncer::step`]) first follows the L2 chain up to the head the
//! source reports, in chunks, each chunk verified ([`verify`]) and committed
//! with its indexes in one LMDB write transaction; then it scans the DA
//! slots the source has scanned, checking each commitment and proof before
//! it raises statuses. Nothing is written that did not verify, and nothing is
//! skipped: a failure is logged, counted, backed off from and fetched again.
//!
//! - [`source`]: the chain-source traits (devnet, upstream).
//! - [`upstream`]: the follower's source: another node over JSON-RPC.
//! - [`upstreams`]: failover over several upstreams (which one is asked).
//! - [`pipeline`]: several range requests in flight, answered in order.
//! - [`pace`]: how many of them an upstream can take (it may answer one at
//!   a time, slowly), and how long to wait for an answer.
//! - [`verify`]: where a block, a commitment and a proof are verified.
//! - [`progress`]: the counters shared with the server.
//! - [`report`]: the few INFO lines an operator reads (caught up, fell
//!   behind, a summary at most every 30 s); per-chunk progress is DEBUG.

pub mod pace;
pub mod pipeline;
pub mod progress;
pub mod report;
pub mod source;
pub mod upstream;
pub mod upstreams;
pub mod verify;

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::{Duration, Instant};

use log::{debug, error, info, warn};

use crate::chain::ForkTable;
use crate::ledger::{Ledger, LedgerError, LedgerRead, LedgerWriter};
use crate::stop::Stop;
use crate::types::{DaSlot, SoftConfirmation, Status};
use progress::Progress;
use report::Reporter;
use source::{DaSource, L2Source, SourceError};
use verify::{BlockRules, Check, CommitmentVerdict, ProofVerdict, VerifyError};

/// Sync settings.
#[derive(Clone, Debug)]
pub struct SyncConfig {
    /// Blocks asked for per request (`--sync-chunk`).
    pub chunk: u64,
    /// DA slots scanned per write transaction.
    pub slots_per_commit: u64,
    /// DA slots asked for per request.
    pub slots_per_fetch: u64,
    /// How long to wait between polls when caught up.
    pub poll: Duration,
    /// The sequencer key blocks must carry (`--sequencer-pubkey`); else the
    /// key of the first block, pinned in the ledger.
    pub sequencer_pubkey: Option<[u8; 32]>,
    /// Which fork's rules verify which height (`--network`, `--kumquat-height`).
    pub forks: ForkTable,
    /// Longest back-off after repeated failures.
    pub max_backoff: Duration,
    /// Answers fetched ahead of the one being verified and written (0: no
    /// fetch thread).
    pub prefetch: usize,
    /// A write transaction of blocks commits once it holds this many
    /// (500: LMDB keeps the dirty pages of its largest write transaction
    /// cached for the life of the process, about a page per block, as the
    /// hash index takes each block's entry on another page; 2000 kept 9 MB
    /// after a 1M-block catch-up)...
    pub commit_blocks: u64,
    /// ...or has been open this long (and at the end of each pass).
    pub commit_every: Duration,
    /// Range requests kept in flight at once, for a source that can answer
    /// several (`--sync-concurrency`; 1: one at a time).
    pub concurrency: usize,
    /// What a block may lack and still be accepted (`--allow-missing-tx-bodies`).
    pub block_rules: BlockRules,
    /// Threads that check a chunk's signatures (1 or 2). 2 for an upstream,
    /// whose fetch thread mostly waits for answers; 1 for the devnet, whose
    /// fetch thread signs the next chunk meanwhile: more busy threads than
    /// cores kept the server's reads waiting during `dev_mine`.
    pub verify_threads: usize,
}

impl Default for SyncConfig {
    fn default() -> Self {
        SyncConfig {
            chunk: 100,
            slots_per_commit: 512,
            slots_per_fetch: 16,
            poll: Duration::from_millis(200),
            sequencer_pubkey: None,
            forks: ForkTable::default(),
            max_backoff: Duration::from_secs(5),
            prefetch: 4,
            commit_blocks: 500,
            commit_every: Duration::from_millis(100),
            concurrency: 8,
            block_rules: BlockRules::default(),
            verify_threads: 2,
        }
    }
}

/// Why a sync pass stopped short.
#[derive(Debug)]
pub enum SyncError {
    /// The source could not answer.
    Source(SourceError),
    /// What the source sent broke a chain rule; nothing of it was stored.
    Verify(VerifyError),
    /// The ledger could not be read or written.
    Ledger(LedgerError),
}

impl std::fmt::Display for SyncError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SyncError::Source(e) => write!(f, "the chain source did not answer: {e}"),
            SyncError::Verify(e) => write!(f, "rejected what the source sent: {e}"),
            SyncError::Ledger(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SyncError {}

impl From<SourceError> for SyncError {
    fn from(e: SourceError) -> Self {
        SyncError::Source(e)
    }
}

impl From<LedgerError> for SyncError {
    fn from(e: LedgerError) -> Self {
        SyncError::Ledger(e)
    }
}

impl From<VerifyError> for SyncError {
    fn from(e: VerifyError) -> Self {
        match e {
            VerifyError::Ledger(e) => SyncError::Ledger(e),
            other => SyncError::Verify(other),
        }
    }
}

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StepReport {
    pub blocks: u64,
    pub slots: u64,
}

/// Follows one chain source into one ledger.
pub struct Syncer<S: L2Source + DaSource> {
    ledger: Arc<Ledger>,
    source: S,
    progress: Arc<Progress>,
    config: SyncConfig,
    /// The last failure logged, so a repeated failure is logged once.
    last_failure: Option<String>,
    report: Reporter,
}

impl<S: L2Source + DaSource + Send> Syncer<S> {
    pub fn new(
        ledger: Arc<Ledger>,
        source: S,
        progress: Arc<Progress>,
        config: SyncConfig,
    ) -> Self {
        let report = Reporter::new(&progress);
        Syncer {
            ledger,
            source,
            progress,
            config,
            last_failure: None,
            report,
        }
    }

    /// Loads what the ledger already holds into the shared progress.
    pub fn load_progress(&self) -> Result<(), LedgerError> {
        let r = self.ledger.reader()?;
        let head = r.head_height()?;
        let scanned = r.last_scanned_l1()?;
        self.progress.l2_synced.store(head, Relaxed);
        self.progress.l1_synced.store(scanned, Relaxed);
        self.progress
            .blocks_without_bodies
            .store(blocks_without_bodies(&r)?, Relaxed);
        Ok(())
    }

    /// Syncs until the ledger holds everything the source had when this was
    /// called (the devnet prefill), or until stopped.
    pub fn catch_up(&mut self, stop: &Stop) -> Result<(), SyncError> {
        self.load_progress()?;
        let l2_target = self.source.head()?;
        while self.progress.l2_synced.load(Relaxed) < l2_target {
            self.step_or_wait(stop)?;
            if stop.is_stopped() {
                return Ok(());
            }
        }
        let l1_target = self.source.last_scanned()?;
        while self.progress.l1_synced.load(Relaxed) < l1_target {
            self.step_or_wait(stop)?;
            if stop.is_stopped() {
                return Ok(());
            }
        }
        Ok(())
    }

    fn step_or_wait(&mut self, stop: &Stop) -> Result<(), SyncError> {
        let report = self.step(stop)?;
        self.report.after_step(&self.progress);
        if report == StepReport::default() {
            stop.sleep(self.config.poll);
        }
        Ok(())
    }

    /// The chain source.
    pub fn source_mut(&mut self) -> &mut S {
        &mut self.source
    }

    /// The ledger it writes.
    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }

    /// Runs until stopped: step, sleep while caught up, back off on failure.
    pub fn run(self, stop: &Stop) {
        self.run_with(stop, |_, wait| stop.sleep(wait));
    }

    /// [`Syncer::run`], waiting between passes with `wait(self, how_long)`
    /// (true when stopped), which may use the syncer meanwhile (the devnet
    /// runs `dev_*` calls there).
    pub fn run_with(mut self, stop: &Stop, mut wait: impl FnMut(&mut Self, Duration) -> bool) {
        yield_to_the_server();
        if let Err(e) = self.load_progress() {
            error!("sync cannot read the ledger: {e}");
        }
        let mut backoff = Duration::ZERO;
        // Stored since the last pass that found nothing new.
        let mut stored = 0;
        while !stop.is_stopped() {
            match self.step(stop) {
                Ok(report) => {
                    if self.last_failure.take().is_some() {
                        info!("sync resumed");
                    }
                    stored += report.blocks + report.slots;
                    if report == StepReport::default() && stored > 0 {
                        // Caught up: what the catch-up used goes back.
                        if stored >= TRIM_AFTER {
                            crate::memory::trim();
                        }
                        stored = 0;
                    }
                    self.report.after_step(&self.progress);
                    backoff = Duration::ZERO;
                    let poll = self.config.poll;
                    if report == StepReport::default() && wait(&mut self, poll) {
                        break;
                    }
                }
                Err(e) => {
                    self.record_failure(&e);
                    backoff = (backoff * 2)
                        .max(Duration::from_millis(100))
                        .min(self.config.max_backoff);
                    if wait(&mut self, backoff) {
                        break;
                    }
                }
            }
        }
        info!("sync thread stopped");
    }

    fn record_failure(&mut self, e: &SyncError) {
        let counters = &self.progress.failures;
        match e {
            SyncError::Source(_) => {
                self.progress.upstream_errors.fetch_add(1, Relaxed);
                self.progress.source_reachable.store(false, Relaxed);
            }
            SyncError::Verify(failed @ VerifyError::Failed { check, .. }) => {
                self.source.rejected(&failed.to_string());
                let counter = match check {
                    Check::PrevHash | Check::Height => &counters.prev_hash,
                    Check::Hash => &counters.hash,
                    Check::Signature => &counters.signature,
                    Check::PubKey => &counters.pub_key,
                    Check::MerkleRoot | Check::CommitmentRange => &counters.merkle_root,
                    Check::Proof => &counters.proof,
                };
                counter.fetch_add(1, Relaxed);
            }
            SyncError::Verify(VerifyError::Ledger(_)) | SyncError::Ledger(_) => {
                counters.other.fetch_add(1, Relaxed);
            }
        }
        // One log line per state, not per try: a source failure's state is
        // what went wrong without the OS detail after the first ": " (a
        // connection reset, then refused, is one outage); a rejected
        // record's is the whole message (the same block failing the same
        // check).
        let text = e.to_string();
        let state = match e {
            SyncError::Source(s) => s.0.split(": ").next().unwrap_or_default().to_string(),
            _ => text.clone(),
        };
        if self.last_failure.as_deref() != Some(state.as_str()) {
            match e {
                SyncError::Source(_) => warn!("{text}; retrying with back-off"),
                _ => error!("{text}; nothing of it was stored; retrying with back-off"),
            }
            self.last_failure = Some(state);
        }
    }

    /// One pass: L2 up to the source's head, then DA slots.
    pub fn step(&mut self, stop: &Stop) -> Result<StepReport, SyncError> {
        let blocks = self.sync_l2(stop)?;
        let slots = self.sync_da(stop)?;
        self.progress.note_behind();
        Ok(StepReport { blocks, slots })
    }

    /// The key blocks must carry: `--sequencer-pubkey`, else the key pinned
    /// in the ledger, else (first sync) the key of the first block.
    fn sequencer_key(&self) -> Result<Option<[u8; 32]>, SyncError> {
        if let Some(k) = self.config.sequencer_pubkey {
            return Ok(Some(k));
        }
        Ok(self.ledger.reader()?.sequencer_pubkey()?)
    }

    fn sync_l2(&mut self, stop: &Stop) -> Result<u64, SyncError> {
        let head = self.source.head()?;
        self.progress.source_ok();
        self.progress.l2_source_head.fetch_max(head, Relaxed);
        self.progress.note_behind();
        // A slow source's blocks come first: its DA slots would take more
        // requests than the blocks, each as slow (the DA part of the pass
        // scans them once the blocks are stored), and the genesis root is
        // not needed before them.
        let slow = self.source.slow();
        if !slow {
            self.store_genesis_root()?;
        }
        let below = {
            let r = self.ledger.reader()?;
            let h = r.head_height()?;
            let hash = if h == 0 {
                crate::types::ZERO_HASH
            } else {
                r.hash_at(h)?.unwrap_or_default()
            };
            (h, hash)
        };
        if below.0 >= head || stop.is_stopped() {
            return Ok(0);
        }
        let pinned = self.sequencer_key()?;
        let chunk = self.config.chunk.max(1);
        let da_plan = if slow { None } else { self.da_plan()? };
        let Syncer {
            ledger,
            source,
            progress,
            config,
            ..
        } = self;
        let mut sink = L2Sink {
            ledger,
            progress,
            head,
            below,
            key: pinned,
            forks: config.forks,
            key_stored: pinned.is_some() && config.sequencer_pubkey.is_none(),
            commit_blocks: config.commit_blocks,
            commit_every: config.commit_every,
            stored_total: 0,
            txn: None,
            da_scanned: da_plan.map(|(next, _)| next - 1),
            da_in_txn: 0,
            rules: config.block_rules,
            verify_threads: config.verify_threads,
            without_bodies_in_txn: 0,
        };
        let ranges = ChunkRanges {
            next: below.0 + 1,
            last: head,
            chunk,
        };
        // Along with each chunk of blocks, the DA slots before the slot its
        // last block points at (a commitment or proof on a slot covers
        // blocks that point at earlier slots): they are scanned in the same
        // pass, while the blocks are verified, instead of after.
        let mut da = da_plan;
        let slots_per_fetch = config.slots_per_fetch.max(1);
        // Several range requests in flight when the source can take them
        // and there is more than one range to fetch.
        let mut pipeline = match source.parallel() {
            Some(fetcher) if config.concurrency > 1 && head - below.0 > chunk => Some(
                pipeline::Pipeline::new(fetcher, head, config.concurrency, chunk)?,
            ),
            _ => None,
        };
        // The DA slots that come with the blocks, likewise, when the blocks
        // are fetched that way: batches of slots in flight up to the
        // source's last scanned slot, taken in order as the blocks allow.
        let mut slot_pipeline = match (&da, source.parallel_slots(), &pipeline) {
            (Some((_, da_head)), Some(fetcher), Some(_)) => Some(pipeline::Pipeline::new(
                fetcher,
                *da_head,
                config.concurrency,
                slots_per_fetch,
            )?),
            _ => None,
        };
        // Slots fetched ahead of the blocks that let them be applied.
        let mut fetched_slots: VecDeque<DaSlot> = VecDeque::new();
        let fetch = move |source: &mut S, (from, to): (u64, u64)| {
            let blocks = match pipeline.as_mut().map(|p| p.next_from(from)) {
                Some(Ok(Some(blocks))) if !blocks.is_empty() => blocks,
                // A failure or an empty answer: the rest of this pass asks
                // the plain way, so the source sees what went wrong (and can
                // move to another upstream).
                Some(_) => {
                    pipeline = None;
                    source.blocks(from, to)?
                }
                None => source.blocks(from, to)?,
            };
            let mut slots = Vec::new();
            if let (Some((next, da_head)), Some(last)) = (da.as_mut(), blocks.last()) {
                let until = (*da_head).min(last.da_slot_height.saturating_sub(1));
                let mut give_up = false;
                while *next <= until {
                    if let Some(p) = slot_pipeline.as_mut() {
                        if fetched_slots.front().map(|s| s.number) != Some(*next) {
                            fetched_slots.clear();
                            match p.next_from(*next) {
                                Ok(Some(got)) if consecutive_from(&got, *next) => {
                                    fetched_slots.extend(got)
                                }
                                _ => {
                                    give_up = true;
                                    break;
                                }
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
                    match source.slots(*next, to) {
                        Ok(mut got) if got.last().is_some_and(|s| s.number == to) => {
                            *next = to + 1;
                            slots.append(&mut got);
                        }
                        // Left to the DA pass, which reports what went wrong.
                        _ => {
                            give_up = true;
                            break;
                        }
                    }
                }
                if give_up {
                    da = None;
                }
            }
            Ok(Fetched { blocks, slots })
        };
        let result = fetch_ahead(source, ranges, stop, config.prefetch, fetch, &mut sink);
        result.map(|()| sink.stored_total)
    }

    /// Where DA scanning would go on: (next slot, the source's last scanned
    /// slot); `None` when there is nothing to scan or the source cannot say
    /// (the DA pass finds out and reports it).
    fn da_plan(&mut self) -> Result<Option<(u64, u64)>, SyncError> {
        let scanned = self.ledger.reader()?.last_scanned_l1()?;
        let next = if scanned == 0 {
            match self.source.first_slot() {
                Ok(Some(first)) => first.max(1),
                _ => return Ok(None),
            }
        } else {
            scanned + 1
        };
        let Ok(da_head) = self.source.last_scanned() else {
            return Ok(None);
        };
        self.progress.l1_source_head.fetch_max(da_head, Relaxed);
        Ok((next <= da_head).then_some((next, da_head)))
    }

    /// Stores the source's genesis state root, once it knows one (a proof
    /// from height 1 on is checked against it).
    fn store_genesis_root(&mut self) -> Result<(), SyncError> {
        if self.ledger.reader()?.genesis_state_root()?.is_none() {
            if let Some(root) = self.source.genesis_state_root()? {
                let mut w = self.ledger.writer()?;
                w.set_genesis_state_root(&root)?;
                w.commit()?;
            }
        }
        Ok(())
    }

    fn sync_da(&mut self, stop: &Stop) -> Result<u64, SyncError> {
        self.store_genesis_root()?;
        let da_head = self.source.last_scanned()?;
        self.progress.l1_source_head.fetch_max(da_head, Relaxed);
        self.progress.note_behind();
        let mut scanned = self.ledger.reader()?.last_scanned_l1()?;
        if scanned == 0 {
            match self.source.first_slot()? {
                Some(first) => scanned = first.saturating_sub(1),
                None => return Ok(0),
            }
        }
        if scanned >= da_head || stop.is_stopped() {
            return Ok(0);
        }
        let Syncer {
            ledger,
            source,
            progress,
            config,
            ..
        } = self;
        let mut sink = DaSink {
            forks: config.forks,
            ledger,
            progress,
            scanned,
            in_txn: 0,
            slots_per_commit: config.slots_per_commit.max(1),
            commit_every: config.commit_every,
            total: 0,
            txn: None,
        };
        let ranges = ChunkRanges {
            next: scanned + 1,
            last: da_head,
            chunk: config.slots_per_fetch.max(1),
        };
        let fetch = |source: &mut S, (from, to): (u64, u64)| source.slots(from, to);
        let result = fetch_ahead(source, ranges, stop, config.prefetch, fetch, &mut sink);
        if sink.total > 0 {
            debug!(
                "L1 scanned to {} of {da_head}",
                progress.l1_synced.load(Relaxed)
            );
        }
        result.map(|()| sink.total)
    }
}

/// Whether `slots` are numbered `from`, `from + 1`, ... with none missing.
fn consecutive_from(slots: &[DaSlot], from: u64) -> bool {
    !slots.is_empty() && slots.iter().zip(from..).all(|(s, n)| s.number == n)
}

/// Lowers the calling thread's CPU priority (nice 10, and a 0.1 ms
/// scheduler slice where the kernel has them; the fetch and verify threads
/// it starts inherit both), so that on a busy machine the server thread
/// answers queries first and a catch-up only slows itself down.
///
/// Nice alone gives the server its share, not its turn: Linux's EEVDF
/// scheduler (6.6 and later) lets a running thread finish its slice
/// (about 1.5 ms on two cores, then up to a 4 ms tick) before a woken one
/// gets the core. With a 0.1 ms slice a sync thread gives way at once.
fn yield_to_the_server() {
    const NICE: i32 = 10;
    /// `struct sched_attr` of sched_setattr(2).
    #[repr(C)]
    struct SchedAttr {
        size: u32,
        policy: u32,
        flags: u64,
        nice: i32,
        priority: u32,
        runtime: u64,
        deadline: u64,
        period: u64,
    }
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        flags: 0,
        nice: NICE,
        priority: 0,
        // The slice, for SCHED_OTHER (kernels before 6.12 ignore it).
        runtime: 100_000,
        deadline: 0,
        period: 0,
    };
    // SAFETY: gettid reads nothing; sched_setattr reads `attr`, which
    // lives until it returns; setpriority only reads its integer arguments.
    let result = unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        if libc::syscall(libc::SYS_sched_setattr, tid, &attr as *const SchedAttr, 0) == 0 {
            0
        } else {
            libc::setpriority(libc::PRIO_PROCESS, tid, NICE)
        }
    };
    if result != 0 {
        log::debug!(
            "sync thread keeps its CPU priority: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Whether the consumer of fetched items wants more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    More,
    /// Commit what is in the transaction and stop this pass (a failure is
    /// returned as an error instead).
    Stop,
}

/// `next..=last` cut into ranges of `chunk`.
struct ChunkRanges {
    next: u64,
    last: u64,
    chunk: u64,
}

impl Iterator for ChunkRanges {
    type Item = (u64, u64);
    fn next(&mut self) -> Option<(u64, u64)> {
        if self.next > self.last {
            return None;
        }
        let to = self.last.min(self.next.saturating_add(self.chunk - 1));
        let range = (self.next, to);
        self.next = to + 1;
        Some(range)
    }
}

/// Something fetched with how far it reached, so the fetcher knows where
/// to ask next (a source may answer a shorter prefix than asked).
trait Reach {
    /// The last height (or slot) in this answer; `None` when it is empty.
    fn reach(&self) -> Option<u64>;
}

impl Reach for Vec<SoftConfirmation> {
    fn reach(&self) -> Option<u64> {
        self.last().map(|b| b.l2_height)
    }
}

/// A chunk of blocks, and the DA slots fetched along with it.
struct Fetched {
    blocks: Vec<SoftConfirmation>,
    slots: Vec<DaSlot>,
}

impl Reach for Fetched {
    fn reach(&self) -> Option<u64> {
        self.blocks.reach()
    }
}

impl Reach for Vec<DaSlot> {
    fn reach(&self) -> Option<u64> {
        self.last().map(|s| s.number)
    }
}

/// Takes what a fetch thread fetched: verifies and writes it inside one
/// open write transaction that it commits now and then, and at the end.
trait Sink<T> {
    /// Verifies and writes one answer. A failure is returned after what
    /// verified before it is written (and later committed).
    fn take(&mut self, item: T) -> Result<Flow, SyncError>;
    /// Commits the open write transaction, if any, and publishes progress.
    fn commit(&mut self) -> Result<(), SyncError>;
    /// When the open write transaction is to be committed if nothing more
    /// arrives by then (`None`: none is open).
    fn due(&self) -> Option<Instant>;
}

/// Fetches `ranges` from `source` on a fetch thread, up to `depth` answers
/// ahead, while the calling thread verifies and writes them through `sink`.
/// With a depth of 0, or a single range, everything runs on the calling
/// thread. What verified before a failure is committed.
///
/// What was written is committed once the sink says it is due (100 ms
/// after the transaction opened) and nothing more has arrived: behind a
/// slow source a verified chunk is stored while the next is still on its
/// way, not when it arrives.
///
/// The fetch thread stops as soon as the sink stops taking (a failure, or
/// a slot to come back to), or on `stop`; nothing it fetched beyond that is
/// used.
fn fetch_ahead<S, T, F>(
    source: &mut S,
    mut ranges: ChunkRanges,
    stop: &Stop,
    depth: usize,
    mut fetch: F,
    sink: &mut impl Sink<T>,
) -> Result<(), SyncError>
where
    S: Send,
    T: Reach + Send,
    F: FnMut(&mut S, (u64, u64)) -> Result<T, SourceError> + Send,
{
    fn consume<T: Reach>(
        sink: &mut impl Sink<T>,
        item: Result<T, SourceError>,
    ) -> Result<Flow, SyncError> {
        let item = item?;
        if item.reach().is_none() {
            return Ok(Flow::Stop);
        }
        sink.take(item)
    }
    let outcome = if depth == 0 || ranges.last - ranges.next < ranges.chunk {
        let mut outcome = Ok(());
        while let Some(range) = ranges.next() {
            if stop.is_stopped() {
                break;
            }
            if sink.due().is_some_and(|due| Instant::now() >= due) {
                if let Err(e) = sink.commit() {
                    outcome = Err(e);
                    break;
                }
            }
            let fetched = fetch(source, range);
            let reach = fetched.as_ref().ok().and_then(Reach::reach);
            match consume(&mut *sink, fetched) {
                Ok(Flow::More) => {}
                Ok(Flow::Stop) => break,
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
            // Ask next from just above what was answered.
            if let Some(n) = reach {
                ranges.next = n + 1;
            }
        }
        outcome
    } else {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<T, SourceError>>(depth);
        std::thread::scope(|s| {
            s.spawn(move || {
                while let Some(range) = ranges.next() {
                    if stop.is_stopped() {
                        break;
                    }
                    let fetched = fetch(source, range);
                    let reach = fetched.as_ref().ok().and_then(Reach::reach);
                    if tx.send(fetched).is_err() {
                        break;
                    }
                    match reach {
                        Some(n) => ranges.next = n + 1,
                        None => break,
                    }
                }
            });
            let mut outcome = Ok(());
            loop {
                let fetched = match sink.due() {
                    None => match rx.recv() {
                        Ok(fetched) => fetched,
                        Err(_) => break,
                    },
                    Some(due) => {
                        match rx.recv_timeout(due.saturating_duration_since(Instant::now())) {
                            Ok(fetched) => fetched,
                            // Nothing more yet: store what verified meanwhile.
                            Err(RecvTimeoutError::Timeout) => match sink.commit() {
                                Ok(()) => continue,
                                Err(e) => {
                                    outcome = Err(e);
                                    break;
                                }
                            },
                            Err(RecvTimeoutError::Disconnected) => break,
                        }
                    }
                };
                match consume(&mut *sink, fetched) {
                    Ok(Flow::More) => {}
                    Ok(Flow::Stop) => break,
                    Err(e) => {
                        outcome = Err(e);
                        break;
                    }
                }
                if stop.is_stopped() {
                    break;
                }
            }
            // Dropping the receiver stops the fetch thread at its next send.
            drop(rx);
            outcome
        })
    };
    let committed = sink.commit();
    outcome.and(committed)
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
    /// Which fork's rules verify which height.
    forks: ForkTable,
    /// Whether the key is pinned in the ledger already.
    key_stored: bool,
    commit_blocks: u64,
    commit_every: Duration,
    stored_total: u64,
    /// The open write transaction: blocks in it, and since when.
    txn: Option<(LedgerWriter<'a>, u64, Instant)>,
    /// The last DA slot applied, while slots come with the blocks (`None`
    /// once one could not be applied: the DA pass takes over from there).
    da_scanned: Option<u64>,
    /// DA slots in the open transaction.
    da_in_txn: u64,
    rules: BlockRules,
    /// Threads that check signatures ([`SyncConfig::verify_threads`]).
    verify_threads: usize,
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
        for slot in slots {
            let applied =
                slot.number == *scanned + 1 && matches!(apply_slot(w, slot, &self.forks), Ok(true));
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
        let Fetched { blocks, slots } = fetched;
        let Some(first) = blocks.first() else {
            return Ok(Flow::Stop);
        };
        let key = *self.key.get_or_insert(first.pub_key);
        let verdict = verify::verify_blocks_on(
            &blocks,
            self.below,
            &key,
            &self.forks,
            self.rules,
            self.verify_threads,
        );
        let (good, failure) = (verdict.good, verdict.failure);
        if good > 0 {
            if self.txn.is_none() {
                self.txn = Some((self.ledger.writer()?, 0, Instant::now()));
            }
            if let Some((w, count, _)) = self.txn.as_mut() {
                if !self.key_stored {
                    if w.sequencer_pubkey()?.is_none() {
                        w.set_sequencer_pubkey(&key)?;
                    }
                    self.key_stored = true;
                }
                let mut last_slot = None;
                for sc in &blocks[..good] {
                    w.put_soft_confirmation(sc)?;
                    // The slot hash a signed block points at is verified
                    // with it: index it for ..OnSlotByHash.
                    if last_slot != Some(sc.da_slot_height) {
                        w.put_da_slot_hash(sc.da_slot_height, &sc.da_slot_hash)?;
                        last_slot = Some(sc.da_slot_height);
                    }
                }
                *count += good as u64;
                if verdict.without_bodies > 0 {
                    let total = blocks_without_bodies(&*w)? + verdict.without_bodies;
                    w.set_meta_bytes(WITHOUT_BODIES_KEY, &total.to_be_bytes())?;
                    self.without_bodies_in_txn += verdict.without_bodies;
                }
            }
            let last = &blocks[good - 1];
            self.below = (last.l2_height, last.hash);
        }
        if let Some(e) = failure {
            return Err(e.into());
        }
        self.take_slots(&slots)?;
        let full = self.txn.as_ref().is_some_and(|(_, count, opened)| {
            *count >= self.commit_blocks || opened.elapsed() >= self.commit_every
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
        w.commit()?;
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
        if count >= TRIM_AFTER {
            crate::memory::trim_now_and_then();
        }
        debug!("L2 synced to {new_head} of {}", self.head);
        Ok(())
    }

    fn due(&self) -> Option<Instant> {
        self.txn
            .as_ref()
            .map(|(_, _, opened)| *opened + self.commit_every)
    }
}

/// The DA side of a pass: checks each fetched slot's proofs and commitments
/// against the stored chain and applies it, many slots per write transaction.
struct DaSink<'a> {
    /// The chain rules per height (which proofs carry Kumquat's fields).
    forks: ForkTable,
    ledger: &'a Ledger,
    progress: &'a Progress,
    /// The newest slot applied (committed, or in the open transaction).
    scanned: u64,
    in_txn: u64,
    slots_per_commit: u64,
    /// How long a transaction stays open while no slots arrive.
    commit_every: Duration,
    total: u64,
    /// The open write transaction, and since when.
    txn: Option<(LedgerWriter<'a>, Instant)>,
}

impl Sink<Vec<DaSlot>> for DaSink<'_> {
    fn take(&mut self, slots: Vec<DaSlot>) -> Result<Flow, SyncError> {
        if self.txn.is_none() {
            self.txn = Some((self.ledger.writer()?, Instant::now()));
        }
        let Some((w, _)) = self.txn.as_mut() else {
            return Ok(Flow::Stop);
        };
        for slot in &slots {
            if slot.number != self.scanned + 1 {
                return Err(SourceError(format!(
                    "asked for DA slot {}, got slot {}",
                    self.scanned + 1,
                    slot.number
                ))
                .into());
            }
            if !apply_slot(w, slot, &self.forks)? {
                // A commitment over heights not stored yet, or a proof that
                // names a slot no stored block points at yet: come back later.
                return Ok(Flow::Stop);
            }
            self.scanned = slot.number;
            w.set_last_scanned_l1(self.scanned)?;
            self.in_txn += 1;
        }
        if self.in_txn >= self.slots_per_commit {
            self.commit()?;
        }
        Ok(Flow::More)
    }

    fn commit(&mut self) -> Result<(), SyncError> {
        let Some((w, _)) = self.txn.take() else {
            return Ok(());
        };
        w.commit()?;
        self.progress.scanned_l1(self.scanned, self.in_txn);
        if self.in_txn >= TRIM_AFTER {
            crate::memory::trim_now_and_then();
        }
        self.total += self.in_txn;
        self.in_txn = 0;
        Ok(())
    }

    fn due(&self) -> Option<Instant> {
        self.txn
            .as_ref()
            .map(|(_, opened)| *opened + self.commit_every)
    }
}

/// A commit of this many blocks (or slots) or more is part of a catch-up:
/// the heap it used is handed back now and then ([`crate::memory`]).
const TRIM_AFTER: u64 = 100;

/// The ledger's free meta entry counting blocks accepted without bodies.
const WITHOUT_BODIES_KEY: &str = "blocks_without_bodies";

/// How many stored blocks were accepted without their transaction bodies.
pub fn blocks_without_bodies(r: &impl LedgerRead) -> Result<u64, LedgerError> {
    Ok(r.meta_bytes(WITHOUT_BODIES_KEY)?
        .and_then(|b| <[u8; 8]>::try_from(b.as_slice()).ok())
        .map_or(0, u64::from_be_bytes))
}

/// The DA slot the newest stored block points at (0 when none is stored).
fn head_slot(w: &LedgerWriter<'_>) -> Result<u64, LedgerError> {
    let head = w.head_height()?;
    Ok(if head == 0 {
        0
    } else {
        w.soft_confirmation(head)?.map_or(0, |sc| sc.da_slot_height)
    })
}

/// Applies one DA slot inside the caller's write transaction: first its
/// proofs, then its commitments (the order Citrea handles them in). Returns
/// false (and writes nothing of the slot) when a commitment covers heights
/// not stored yet, or a proof names a DA slot whose hash is not known yet:
/// the slot is scanned again after the L2 chain catches up.
fn apply_slot(
    w: &mut LedgerWriter<'_>,
    slot: &DaSlot,
    forks: &ForkTable,
) -> Result<bool, VerifyError> {
    let mut proven = Vec::with_capacity(slot.proofs.len());
    if !slot.proofs.is_empty() {
        let head_slot = head_slot(w)?;
        for p in &slot.proofs {
            match verify::verify_proof(&*w, p, head_slot, forks)? {
                ProofVerdict::Valid(ranges) => proven.push(ranges),
                ProofVerdict::NotYet => return Ok(false),
            }
        }
    }
    // Checked in height order (a slot may list them in any order), stored
    // in the order the source lists them.
    let mut sorted = slot.commitments.clone();
    sorted.sort_by_key(|c| c.l2_start_block_number);
    let mut finalized = w.finalized_height()?;
    for c in &sorted {
        match verify::verify_commitment(&*w, c, finalized)? {
            CommitmentVerdict::Valid => finalized = finalized.max(c.l2_end_block_number),
            CommitmentVerdict::NotYet => return Ok(false),
        }
    }
    if let Some(hash) = &slot.hash {
        w.put_da_slot_hash(slot.number, hash)?;
    }
    for (p, ranges) in slot.proofs.iter().zip(&proven) {
        for &(start, end) in ranges {
            w.raise_status(start, end, Status::Proven)?;
        }
        w.put_proof(slot.number, p)?;
    }
    if !slot.commitments.is_empty() {
        for c in &sorted {
            w.raise_status(
                c.l2_start_block_number,
                c.l2_end_block_number,
                Status::Finalized,
            )?;
        }
        w.add_commitments(slot.number, &slot.commitments)?;
    }
    Ok(true)
}
