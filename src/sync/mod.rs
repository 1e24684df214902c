//! The sync thread: pulls from its chain sources (an L2 source and a DA
//! source, [`crate::source`]), verifies, writes the ledger.
//!
//! One pass ([`Syncer::step`]) first follows the L2 chain up to the head the
//! source reports, in chunks, each chunk verified ([`crate::checks`]) and committed
//! with its indexes in one LMDB write transaction; then it scans the DA
//! slots the DA source has scanned, checking each commitment and proof
//! before it raises statuses. Nothing is written that did not verify, and
//! nothing is skipped: a failure is logged, counted, backed off from and
//! fetched again.
//!
//! - this file: the [`Syncer`], its run loop, back-off and failure counts.
//! - `l2_pass.rs`: the L2 part of a pass (blocks, and the DA slots that
//!   come along with them).
//! - `da_pass.rs`: the DA part of a pass, and how one slot is applied.
//! - `fetch.rs`: chunked ranges fetched ahead on a fetch thread.
//! - [`pipeline`]: several range requests in flight, answered in order.
//! - [`crate::checks`] (a module of its own, below the sync thread: `ledgerd import`, `verify`, proofs and rollback use it too): where a block, a commitment and a proof are verified.
//! - [`crate::progress`] (below the sync thread, beside the sources, which
//!   update it too): the counters shared with the server, and the refused
//!   record the DA scan waits on.
//! - [`report`]: the few INFO lines an operator reads (caught up, fell
//!   behind, a summary at most every 30 s); per-chunk progress is DEBUG.

pub mod args;
mod da_pass;
pub mod devnet;
mod fetch;
mod l2_pass;
pub mod pipeline;
pub mod report;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use log::{error, info, warn};

use crate::chain_rules::ForkTable;
use crate::checks::{BlockRules, Check, VerifyError};
use crate::ledger::{Ledger, LedgerError, LedgerRead};
use crate::progress::Progress;
use crate::proof::ProofRules;
use crate::source::bitcoin::reveal::display_hash;
use crate::source::{ChainIdentity, DaSource, L2Source, SourceError, SourceErrorKind};
use crate::stop::Stop;
use crate::types::Hash;
use report::Reporter;

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
    /// Which batch-proof receipts prove heights (`--network`, `--allow-fake-proofs`).
    pub receipts: ProofRules,
    /// Longest back-off after repeated failures.
    pub max_backoff: Duration,
    /// Answers fetched ahead of the one being verified and written (0: no
    /// fetch thread).
    pub prefetch: usize,
    /// A write transaction of blocks commits once it holds this many
    /// (300: LMDB keeps the dirty pages of its largest write transaction
    /// cached for the life of the process, about 1.5 pages per block, as the
    /// hash indexes take each entry on another page; 2000 kept 9.5 MB more
    /// than 500 after a 1M-block catch-up, and 300 keeps the follower within
    /// 2x of a fresh server; the commits' waits overlap the signature checks
    /// of the fetch side, see `checks::signed_prefix`)...
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
    /// fetch thread signs the next chunk meanwhile (and checks ahead only
    /// while the sync thread is behind): more busy threads than cores kept
    /// the server's reads waiting during `dev_mine`.
    pub verify_threads: usize,
}

impl Default for SyncConfig {
    fn default() -> Self {
        SyncConfig {
            chunk: args::DEFAULT_SYNC_CHUNK,
            slots_per_commit: 512,
            slots_per_fetch: 16,
            poll: Duration::from_millis(200),
            sequencer_pubkey: None,
            forks: ForkTable::default(),
            receipts: ProofRules::default(),
            max_backoff: Duration::from_secs(5),
            prefetch: 4,
            commit_blocks: 300,
            commit_every: Duration::from_millis(100),
            concurrency: args::DEFAULT_SYNC_CONCURRENCY,
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
    /// The DA source of its own (bitcoind) could not answer.
    Da(SourceError),
    /// A DA slot already scanned is no longer the DA chain's block at its
    /// height: the chain reorganized deeper than the finality depth.
    Reorg {
        slot: u64,
        stored: Hash,
        chain: Option<Hash>,
    },
    /// What the source sent broke a chain rule; nothing of it was stored.
    Verify(VerifyError),
    /// The ledger could not be read or written.
    Ledger(LedgerError),
}

impl std::fmt::Display for SyncError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // Said as what it was: no answer, or an answer not taken.
            SyncError::Source(e) => match e.kind {
                SourceErrorKind::Unreachable => write!(f, "the chain source did not answer: {e}"),
                _ => write!(f, "the chain source's answer was not taken: {e}"),
            },
            SyncError::Da(e) => match e.kind {
                SourceErrorKind::Unreachable => write!(f, "the DA source did not answer: {e}"),
                _ => write!(f, "the DA source's answer was not taken: {e}"),
            },
            SyncError::Reorg {
                slot,
                stored,
                chain,
            } => {
                let chain =
                    chain.map_or("no block".into(), |h| format!("block {}", display_hash(&h)));
                write!(
                    f,
                    "DA slot {slot} was scanned as block {}, but the chain now has {chain} there: \
                     a reorganization deeper than the finality depth; nothing is rewritten, the \
                     node waits for the chain to come back or for an operator",
                    display_hash(stored)
                )
            }
            SyncError::Verify(e) => write!(f, "rejected what the source sent: {e}"),
            SyncError::Ledger(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SyncError {}

wrap_errors!(SyncError {
    Source(SourceError),
    Ledger(LedgerError),
});

impl From<VerifyError> for SyncError {
    fn from(e: VerifyError) -> Self {
        match e {
            VerifyError::Ledger(e) => SyncError::Ledger(e),
            other => SyncError::Verify(other),
        }
    }
}

/// The `/metrics` counter of a failed check.
pub(super) fn failure_counter(
    counters: &crate::progress::FailureCounts,
    check: Check,
) -> &std::sync::atomic::AtomicU64 {
    match check {
        Check::PrevHash | Check::Height => &counters.prev_hash,
        Check::Hash => &counters.hash,
        Check::Signature => &counters.signature,
        Check::PubKey => &counters.pub_key,
        Check::MerkleRoot | Check::CommitmentRange => &counters.merkle_root,
        Check::Proof => &counters.proof,
        Check::Receipt => &counters.receipt,
        Check::DaSlot => &counters.da_slot,
    }
}

/// A commit of this many blocks (or slots) or more is part of a catch-up:
/// the heap it used is handed back now and then ([`crate::memory`]).
pub(super) const TRIM_AFTER: u64 = 100;

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StepReport {
    pub blocks: u64,
    pub slots: u64,
}

/// Follows an L2 source and a DA source into one ledger.
///
/// `L` gives the soft confirmations; `D` says where the DA slots come from:
/// [`SameSource`] (the L2 source serves them too: the devnet, an upstream
/// node) or [`Separate`] (a DA source of its own, such as Bitcoin).
pub struct Syncer<L: L2Source, D: DaSide<L> = SameSource> {
    ledger: Arc<Ledger>,
    l2: L,
    da: D,
    progress: Arc<Progress>,
    config: SyncConfig,
    /// The last failure logged, so a repeated failure is logged once.
    last_failure: Option<String>,
    /// The last pass failed on a DA slot refused for the same reason
    /// before ([`waiting`]): counted, not logged again.
    repeated_refusal: bool,
    /// Whether the L2 source has been told the whole chain the data dir
    /// holds (its genesis state root and block 1): [`Syncer::hold_chain`].
    chain_held: bool,
    report: Reporter,
}

/// A pass's two sources, lent to its fetch thread together.
type Sources<'a, L, D> = (&'a mut L, &'a mut D);

/// Where a [`Syncer`] gets its DA slots, given its L2 source.
pub trait DaSide<L>: Send {
    /// The DA source, which may be the L2 source itself.
    fn source<'a>(&'a mut self, l2: &'a mut L) -> &'a mut dyn DaSource;
    /// Whether the DA source is not the L2 source (its failures are its own).
    fn separate(&self) -> bool {
        false
    }
}

/// The L2 source serves the DA slots too (the devnet, an upstream node).
#[derive(Clone, Copy, Debug, Default)]
pub struct SameSource;

impl<L: DaSource> DaSide<L> for SameSource {
    fn source<'a>(&'a mut self, l2: &'a mut L) -> &'a mut dyn DaSource {
        l2
    }
}

/// A DA source of its own, beside the L2 source (Bitcoin beside an upstream).
pub struct Separate<D>(pub D);

impl<L, D: DaSource + Send> DaSide<L> for Separate<D> {
    fn source<'a>(&'a mut self, _l2: &'a mut L) -> &'a mut dyn DaSource {
        &mut self.0
    }
    fn separate(&self) -> bool {
        true
    }
}

impl<L: L2Source + DaSource + Send> Syncer<L, SameSource> {
    /// A syncer whose source serves both layers.
    pub fn new(
        ledger: Arc<Ledger>,
        source: L,
        progress: Arc<Progress>,
        config: SyncConfig,
    ) -> Self {
        Syncer::with_da(ledger, source, SameSource, progress, config)
    }
}

impl<L: L2Source + Send, D: DaSide<L>> Syncer<L, D> {
    /// A syncer with its L2 source and where its DA slots come from.
    pub fn with_da(
        ledger: Arc<Ledger>,
        l2: L,
        da: D,
        progress: Arc<Progress>,
        config: SyncConfig,
    ) -> Self {
        let report = Reporter::new(&progress);
        Syncer {
            ledger,
            l2,
            da,
            progress,
            config,
            last_failure: None,
            repeated_refusal: false,
            chain_held: false,
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
            .store(r.blocks_without_bodies()?, Relaxed);
        Ok(())
    }

    /// Syncs until the ledger holds everything the source had when this was
    /// called (the devnet prefill), or until stopped.
    pub fn catch_up(&mut self, stop: &Stop) -> Result<(), SyncError> {
        self.load_progress()?;
        let l2_target = self.l2.head()?;
        if self.pass_until(stop, |p| p.l2_synced.load(Relaxed) >= l2_target)? {
            let l1_target = self.da.source(&mut self.l2).last_scanned()?;
            self.pass_until(stop, |p| p.l1_synced.load(Relaxed) >= l1_target)?;
        }
        Ok(())
    }

    /// Passes (a sleep after one that found nothing new) until `reached`
    /// (true), or until stopped (false).
    fn pass_until(
        &mut self,
        stop: &Stop,
        reached: impl Fn(&Progress) -> bool,
    ) -> Result<bool, SyncError> {
        while !reached(&self.progress) {
            let report = self.step(stop)?;
            self.report.after_step(&self.progress);
            if report == StepReport::default() {
                stop.sleep(self.config.poll);
            }
            if stop.is_stopped() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Sets [`SyncConfig::verify_threads`] (the devnet prefills with 2, as
    /// nothing is served yet, then makes blocks with 1).
    pub fn set_verify_threads(&mut self, threads: usize) {
        self.config.verify_threads = threads;
    }

    /// The L2 source (for a devnet, the devnet itself).
    pub fn source_mut(&mut self) -> &mut L {
        &mut self.l2
    }

    /// What a pass lends out at once: the ledger and progress to its sink,
    /// the two sources to its fetch thread, the settings to both.
    fn parts(&mut self) -> (&Arc<Ledger>, Sources<'_, L, D>, &Arc<Progress>, &SyncConfig) {
        (
            &self.ledger,
            (&mut self.l2, &mut self.da),
            &self.progress,
            &self.config,
        )
    }

    /// The ledger it writes.
    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }

    /// The progress it reports.
    pub fn progress(&self) -> &Arc<Progress> {
        &self.progress
    }

    /// Runs until stopped: step, sleep while caught up, back off on failure.
    pub fn run(self, stop: &Stop) {
        self.run_with(stop, |_, wait| stop.sleep(wait));
    }

    /// [`Syncer::run`], waiting between passes with `wait(self, how_long)`
    /// (true when stopped), which may use the syncer meanwhile (the devnet
    /// runs `dev_*` calls there).
    pub fn run_with(mut self, stop: &Stop, mut wait: impl FnMut(&mut Self, Duration) -> bool) {
        crate::os::yield_to_the_server();
        if let Err(e) = self.load_progress() {
            error!("sync cannot read the ledger: {e}");
        }
        let mut backoff = crate::source::backoff::Backoff::new(self.config.max_backoff);
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
                    backoff.reset();
                    let poll = self.config.poll;
                    if report == StepReport::default() && wait(&mut self, poll) {
                        break;
                    }
                }
                Err(e) => {
                    self.record_failure(&e);
                    let pause = backoff.fail();
                    if wait(&mut self, pause) {
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
            SyncError::Source(s) => {
                self.progress.upstream_errors.fetch_add(1, Relaxed);
                self.progress.source_failed(s.to_string());
            }
            SyncError::Da(_) => {}
            SyncError::Reorg { .. } => self.progress.bitcoin.reorg.set(Some(e.to_string())),
            SyncError::Verify(failed @ VerifyError::Failed { check, .. }) => {
                let why = failed.to_string();
                match check {
                    Check::MerkleRoot | Check::CommitmentRange | Check::Proof | Check::Receipt => {
                        self.da.source(&mut self.l2).rejected(&why)
                    }
                    _ => self.l2.rejected(&why),
                }
                failure_counter(counters, *check).fetch_add(1, Relaxed);
            }
            SyncError::Verify(VerifyError::Ledger(_)) | SyncError::Ledger(_) => {
                counters.other.fetch_add(1, Relaxed);
            }
        }
        // One log line per state, not per try: a source failure's state is
        // what went wrong without its detail (a connection reset, then
        // refused, is one outage: `SourceError::state`); a rejected
        // record's is the whole message (the same block failing the same
        // check).
        // The source said it once, as an ERROR, and asks it no more.
        if matches!(e, SyncError::Source(s) if s.kind == SourceErrorKind::OtherChain) {
            self.last_failure = Some(e.to_string());
            return;
        }
        let text = e.to_string();
        let state = match e {
            SyncError::Source(s) | SyncError::Da(s) => {
                let (kind, what) = s.state();
                format!("{kind:?} {what}")
            }
            _ => text.clone(),
        };
        let repeated = std::mem::take(&mut self.repeated_refusal)
            && matches!(e, SyncError::Verify(VerifyError::Failed { .. }));
        if repeated {
            // Logged when first refused; `/health` shows it (`waitingOn`).
            self.last_failure = Some(state);
        } else if self.last_failure.as_deref() != Some(state.as_str()) {
            match e {
                SyncError::Source(_) | SyncError::Da(_) => {
                    warn!("{text}; retrying with back-off")
                }
                SyncError::Reorg { .. } => error!("{text}"),
                SyncError::Verify(VerifyError::Failed {
                    check:
                        Check::MerkleRoot | Check::CommitmentRange | Check::Proof | Check::Receipt,
                    ..
                }) => error!(
                    "{text}; nothing of it was stored; retrying with back-off (said once for \
                     this slot and reason; /health shows it as waitingOn while the scan waits)"
                ),
                _ => error!("{text}; nothing of it was stored; retrying with back-off"),
            }
            self.last_failure = Some(state);
        }
    }

    /// One pass: L2 up to the source's head, then DA slots.
    pub fn step(&mut self, stop: &Stop) -> Result<StepReport, SyncError> {
        self.hold_chain()?;
        self.check_da_chain()?;
        let blocks = self.sync_l2(stop)?;
        let slots = self.sync_da(stop)?;
        self.progress.note_behind();
        Ok(StepReport { blocks, slots })
    }

    /// Tells the L2 source which chain the data dir holds (its genesis state
    /// root and block 1's hash), until it holds both: a source of upstreams
    /// refuses one that serves another chain. The source only reads this;
    /// the sync thread stores the chain as it verifies it.
    fn hold_chain(&mut self) -> Result<(), SyncError> {
        if self.chain_held {
            return Ok(());
        }
        let held = {
            let r = self.ledger.reader()?;
            ChainIdentity {
                genesis_root: r.genesis_state_root()?,
                block_one: r.hash_at(1)?,
            }
        };
        self.chain_held = held.complete();
        self.l2.hold_to(held);
        Ok(())
    }

    /// The key blocks must carry: `--sequencer-pubkey`, else the key pinned
    /// in the ledger, else (first sync) the key of the first block.
    fn sequencer_key(&self) -> Result<Option<[u8; 32]>, SyncError> {
        if let Some(k) = self.config.sequencer_pubkey {
            return Ok(Some(k));
        }
        Ok(self.ledger.reader()?.sequencer_pubkey()?)
    }

    /// Stores the source's genesis state root, once it knows one (a proof
    /// from height 1 on is checked against it).
    fn store_genesis_root(&mut self) -> Result<(), SyncError> {
        if self.ledger.reader()?.genesis_state_root()?.is_none() {
            if let Some(root) = self.l2.genesis_state_root()? {
                let mut w = self.ledger.writer()?;
                w.set_genesis_state_root(&root)?;
                w.commit()?;
            }
        }
        Ok(())
    }
}
