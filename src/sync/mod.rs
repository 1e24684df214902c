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
//! - [`verify`]: where a block, a commitment and a proof are verified.
//! - [`progress`]: the counters shared with the server.

pub mod progress;
pub mod source;
pub mod upstream;
pub mod verify;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use log::{error, info, warn};

use crate::ledger::{Ledger, LedgerError, LedgerRead};
use crate::stop::Stop;
use crate::types::Status;
use progress::Progress;
use source::{DaSource, L2Source, SourceError};
use verify::{Check, CommitmentVerdict, VerifyError};

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
    /// Longest back-off after repeated failures.
    pub max_backoff: Duration,
}

impl Default for SyncConfig {
    fn default() -> Self {
        SyncConfig {
            chunk: 100,
            slots_per_commit: 512,
            slots_per_fetch: 16,
            poll: Duration::from_millis(200),
            sequencer_pubkey: None,
            max_backoff: Duration::from_secs(5),
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
}

impl<S: L2Source + DaSource> Syncer<S> {
    pub fn new(
        ledger: Arc<Ledger>,
        source: S,
        progress: Arc<Progress>,
        config: SyncConfig,
    ) -> Self {
        Syncer {
            ledger,
            source,
            progress,
            config,
            last_failure: None,
        }
    }

    /// Loads what the ledger already holds into the shared progress.
    pub fn load_progress(&self) -> Result<(), LedgerError> {
        let r = self.ledger.reader()?;
        let head = r.head_height()?;
        let scanned = r.last_scanned_l1()?;
        self.progress.l2_synced.store(head, Relaxed);
        self.progress.l1_synced.store(scanned, Relaxed);
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
        if self.step(stop)? == StepReport::default() {
            stop.sleep(self.config.poll);
        }
        Ok(())
    }

    /// Runs until stopped: step, sleep while caught up, back off on failure.
    pub fn run(mut self, stop: &Stop) {
        if let Err(e) = self.load_progress() {
            error!("sync cannot read the ledger: {e}");
        }
        let mut backoff = Duration::ZERO;
        while !stop.is_stopped() {
            match self.step(stop) {
                Ok(report) => {
                    if self.last_failure.take().is_some() {
                        info!("sync resumed");
                    }
                    backoff = Duration::ZERO;
                    if report == StepReport::default() && stop.sleep(self.config.poll) {
                        break;
                    }
                }
                Err(e) => {
                    self.record_failure(&e);
                    backoff = (backoff * 2)
                        .max(Duration::from_millis(100))
                        .min(self.config.max_backoff);
                    if stop.sleep(backoff) {
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
            SyncError::Verify(VerifyError::Failed { check, .. }) => {
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
        let text = e.to_string();
        if self.last_failure.as_deref() != Some(text.as_str()) {
            match e {
                SyncError::Source(_) => warn!("{text}; retrying with back-off"),
                _ => error!("{text}; nothing of it was stored; retrying with back-off"),
            }
            self.last_failure = Some(text);
        }
    }

    /// One pass: L2 up to the source's head, then DA slots.
    pub fn step(&mut self, stop: &Stop) -> Result<StepReport, SyncError> {
        let blocks = self.sync_l2(stop)?;
        let slots = self.sync_da(stop)?;
        self.progress.note_behind();
        Ok(StepReport { blocks, slots })
    }

    fn sequencer_key(&mut self, first: &[u8; 32]) -> Result<[u8; 32], SyncError> {
        if let Some(k) = self.config.sequencer_pubkey {
            return Ok(k);
        }
        Ok(self.ledger.reader()?.sequencer_pubkey()?.unwrap_or(*first))
    }

    fn sync_l2(&mut self, stop: &Stop) -> Result<u64, SyncError> {
        let head = self.source.head()?;
        self.progress.source_ok();
        self.progress.l2_source_head.fetch_max(head, Relaxed);
        self.progress.note_behind();
        if self.ledger.reader()?.genesis_state_root()?.is_none() {
            if let Some(root) = self.source.genesis_state_root()? {
                let mut w = self.ledger.writer()?;
                w.set_genesis_state_root(&root)?;
                w.commit()?;
            }
        }
        let mut stored_total = 0;
        loop {
            let (below, stored) = {
                let r = self.ledger.reader()?;
                let h = r.head_height()?;
                let hash = if h == 0 {
                    crate::types::ZERO_HASH
                } else {
                    r.hash_at(h)?.unwrap_or_default()
                };
                ((h, hash), h)
            };
            if stored >= head || stop.is_stopped() {
                return Ok(stored_total);
            }
            let to = head.min(stored + self.config.chunk.max(1));
            let blocks = self.source.blocks(stored + 1, to)?;
            let Some(first) = blocks.first() else {
                return Ok(stored_total);
            };
            let key = self.sequencer_key(&first.pub_key)?;
            let (good, failure) = verify::verify_blocks(&blocks, below, &key);
            if good > 0 {
                let mut w = self.ledger.writer()?;
                if w.sequencer_pubkey()?.is_none() {
                    w.set_sequencer_pubkey(&key)?;
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
                w.commit()?;
                let new_head = blocks[good - 1].l2_height;
                self.progress.stored_l2(new_head, good as u64);
                stored_total += good as u64;
                if new_head % 10_000 < (good as u64) || new_head == head {
                    info!("L2 synced to {new_head} of {head}");
                }
            }
            if let Some(e) = failure {
                return Err(e.into());
            }
        }
    }

    fn sync_da(&mut self, stop: &Stop) -> Result<u64, SyncError> {
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
        let mut total = 0;
        while scanned < da_head && !stop.is_stopped() {
            let mut w = self.ledger.writer()?;
            let mut in_txn = 0;
            let mut waiting = false;
            while scanned < da_head && in_txn < self.config.slots_per_commit {
                let to = da_head.min(scanned + self.config.slots_per_fetch.max(1));
                let slots = self.source.slots(scanned + 1, to)?;
                if slots.is_empty() {
                    break;
                }
                for slot in &slots {
                    if slot.number != scanned + 1 {
                        return Err(SourceError(format!(
                            "asked for DA slot {}, got slot {}",
                            scanned + 1,
                            slot.number
                        ))
                        .into());
                    }
                    if !apply_slot(&mut w, slot)? {
                        waiting = true;
                        break;
                    }
                    scanned = slot.number;
                    w.set_last_scanned_l1(scanned)?;
                    in_txn += 1;
                }
                if waiting {
                    break;
                }
            }
            w.commit()?;
            self.progress.scanned_l1(scanned, in_txn);
            total += in_txn;
            if waiting || in_txn == 0 {
                break;
            }
        }
        if total > 0 {
            info!("L1 scanned to {scanned} of {da_head}");
        }
        Ok(total)
    }
}

/// Applies one DA slot inside the caller's write transaction. Returns false
/// (and writes nothing of the slot) when a commitment covers heights not
/// stored yet: the slot is scanned again after the L2 chain catches up.
fn apply_slot(
    w: &mut crate::ledger::LedgerWriter<'_>,
    slot: &crate::types::DaSlot,
) -> Result<bool, VerifyError> {
    let mut finalized = w.finalized_height()?;
    let mut checked = Vec::with_capacity(slot.commitments.len());
    for c in &slot.commitments {
        match verify::verify_commitment(&*w, c, finalized)? {
            CommitmentVerdict::Valid => {
                checked.push(*c);
                finalized = c.l2_end_block_number;
            }
            CommitmentVerdict::NotYet => return Ok(false),
        }
    }
    let proof_start = match &slot.proof {
        Some(p) => Some(verify::verify_proof(&*w, p, w.proven_height()?)?),
        None => None,
    };
    if let Some(hash) = &slot.hash {
        w.put_da_slot_hash(slot.number, hash)?;
    }
    if !checked.is_empty() {
        for c in &checked {
            w.raise_status(
                c.l2_start_block_number,
                c.l2_end_block_number,
                Status::Finalized,
            )?;
        }
        w.add_commitments(slot.number, &checked)?;
    }
    if let (Some(p), Some(start)) = (&slot.proof, proof_start) {
        w.raise_status(start, p.proof_output.last_l2_height, Status::Proven)?;
        w.put_proof(slot.number, p)?;
    }
    Ok(true)
}
