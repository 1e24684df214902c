//! `ledgerd rollback`: take a ledger back to an L2 height or a DA slot, in
//! one write transaction (the devnet's `dev_revert` and `dev_reset` use the
//! same primitive, [`rollback_in`]).
//!
//! A rollback removes the L2 blocks above the cut with their hash index and
//! statuses, the DA slots scanned above it with the commitments and proofs
//! found on them, and the slot hashes only they recorded (table by table:
//! `ledger::cut::STEPS`). Then every status is recomputed from the
//! commitments and proofs that remain, by the write rules sync uses
//! (`ledger/apply.rs`): the derived state is cleared and the kept records
//! are applied again in DA order, each slot's proofs before its commitments,
//! as the DA pass applied them. Where the cut falls:
//!
//! - `--to-l2 H`: heights up to H stay. The DA scan goes back to the slot
//!   block H points at, and further back if a commitment on a slot up to
//!   there covers a removed height (a node that only reached H had not
//!   scanned it: a commitment over heights it does not hold waits).
//! - `--to-l1 S`: DA slots up to S stay, and the L2 blocks that point at
//!   them (a block that names a later DA block goes with it: after a
//!   Bitcoin reorg it names a block of the old chain); then as above.
//!
//! LMDB commits a transaction at once or not at all: a crash or `kill -9`
//! in the middle leaves the ledger as it was. A running node's data dir is
//! refused: every process with the LMDB environment open holds a shared
//! `fcntl` lock on byte 0 of its `lock.mdb`, which
//! [`crate::ledger::lock::environment_holder`] asks about.

use std::fmt;
use std::path::Path;

use crate::checks::{self, VerifyError};
use crate::ledger::walk::LedgerWalk;
use crate::ledger::STEPS;
use crate::ledger::{Cut, Ledger, LedgerError, LedgerRead, LedgerWriter, OpenOptions};
use crate::types::{SequencerCommitment, VerifiedBatchProof};

/// Where to take the ledger back to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// `--to-l2 H`: keep heights `1..=H`.
    L2(u64),
    /// `--to-l1 S`: keep DA slots up to S and the blocks that point at them.
    L1(u64),
    /// Both bounds, as a devnet snapshot recorded them: heights up to `l2`,
    /// DA slots up to `l1`.
    Both { l2: u64, l1: u64 },
}

/// Why a rollback was not done.
#[derive(Debug)]
pub enum RollbackError {
    Ledger(LedgerError),
    /// A process has the data dir open (pid, when the lock says it).
    Running {
        dir: String,
        pid: Option<i32>,
    },
    /// A kept proof no longer names kept commitments (a ledger whose
    /// records disagree; nothing was written).
    Replay(String),
}

impl fmt::Display for RollbackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RollbackError::Ledger(e) => write!(f, "{e}"),
            RollbackError::Running { dir, pid } => {
                let who = pid.map_or("another process".to_string(), |p| format!("process {p}"));
                write!(
                    f,
                    "{who} has the ledger in {dir} open (a running ledgerd, a serve-readonly \
                     replica, an export): stop it first; a rollback takes a stopped node's ledger back"
                )
            }
            RollbackError::Replay(why) => write!(
                f,
                "the statuses cannot be recomputed, and nothing was changed: {why}"
            ),
        }
    }
}

impl std::error::Error for RollbackError {}

wrap_errors!(RollbackError {
    Ledger(LedgerError),
});

/// What a rollback removed (or, in a dry run, would remove).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The head height and last scanned DA slot before.
    pub before: (u64, u64),
    /// Where the ledger ends after.
    pub cut: Cut,
    /// Entries removed per table, in [`STEPS`] order.
    pub removed: Vec<(&'static str, u64)>,
    /// Heights `1..=cut.height` per status, [Trusted, Finalized, Proven],
    /// before and after the recompute.
    pub statuses_before: [u64; 3],
    pub statuses_after: [u64; 3],
    /// Whether it was written.
    pub written: bool,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (verb, removed) = if self.written {
            ("rolled back", "removed")
        } else {
            ("dry run, nothing written: would roll back", "would remove")
        };
        writeln!(
            f,
            "{verb}: L2 head {} -> {}, last scanned DA slot {} -> {}",
            self.before.0, self.cut.height, self.before.1, self.cut.slot
        )?;
        let parts: Vec<String> = self
            .removed
            .iter()
            .map(|(table, n)| format!("{table} {n}"))
            .collect();
        writeln!(f, "{removed}: {}", parts.join(", "))?;
        let [t0, f0, p0] = self.statuses_before;
        let [t1, f1, p1] = self.statuses_after;
        write!(
            f,
            "statuses of heights 1..={}: Proven {p0} -> {p1}, Finalized {f0} -> {f1}, Trusted {t0} -> {t1}",
            self.cut.height
        )
    }
}

/// The highest stored height whose block points at a DA slot up to `slot`
/// (blocks point at non-decreasing slots: a binary search).
fn last_height_on_or_before(w: &impl LedgerRead, slot: u64) -> Result<u64, LedgerError> {
    let (mut lo, mut hi) = (0u64, w.head_height()?);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        let on = w
            .soft_confirmation(mid)?
            .map_or(u64::MAX, |sc| sc.da_slot_height);
        if on <= slot {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Ok(lo)
}

/// Where `target` cuts the ledger `w` holds.
pub fn plan(w: &impl LedgerWalk, target: Target) -> Result<Cut, LedgerError> {
    let head = w.head_height()?;
    let scanned = w.last_scanned_l1()?;
    let (height, slot) = match target {
        Target::L2(h) => {
            let height = h.min(head);
            let pointed = if height == 0 {
                0
            } else {
                w.soft_confirmation(height)?
                    .map_or(0, |sc| sc.da_slot_height)
            };
            (height, pointed)
        }
        Target::L1(s) => (last_height_on_or_before(w, s)?, s),
        Target::Both { l2, l1 } => (l2.min(head).min(last_height_on_or_before(w, l1)?), l1),
    };
    let mut slot = slot.min(scanned);
    // Below the lowest DA slot holding a commitment that covers a cut height.
    let covers = |list: &[SequencerCommitment]| list.iter().any(|c| c.l2_end_block_number > height);
    if let Some((first, _)) = w.all_commitments()?.into_iter().find(|(_, l)| covers(l)) {
        slot = slot.min(first.saturating_sub(1));
    }
    Ok(Cut { height, slot })
}

/// Takes the ledger back to `target` inside the caller's write transaction
/// (nothing is visible until it commits): removes what the cut drops, table
/// by table, then recomputes the statuses by the write rules.
pub fn rollback_in(w: &mut LedgerWriter<'_>, target: Target) -> Result<Report, RollbackError> {
    let before = (w.head_height()?, w.last_scanned_l1()?);
    let cut = plan(&*w, target)?;
    let statuses_before = w.status_counts(cut.height)?;
    let mut removed = Vec::with_capacity(STEPS.len());
    for (table, step) in STEPS {
        removed.push((table, step(w, &cut)?));
    }
    w.cut_last_slot_hash(cut.slot)?;
    recompute(w, cut.height)?;
    Ok(Report {
        before,
        cut,
        removed,
        statuses_before,
        statuses_after: w.status_counts(cut.height)?,
        written: false,
    })
}

/// Clears the derived state and applies the kept commitments and proofs
/// again, in DA order (a slot's proofs before its commitments, as the DA
/// pass applies them), with the write rules of `ledger/apply.rs`.
fn recompute(w: &mut LedgerWriter<'_>, height: u64) -> Result<(), RollbackError> {
    let commitments: Vec<(u64, Vec<SequencerCommitment>)> = w.all_commitments()?;
    let mut proofs: Vec<(u64, Vec<VerifiedBatchProof>)> = Vec::new();
    for (slot, p) in w.all_proofs()? {
        match proofs.last_mut() {
            Some((s, list)) if *s == slot => list.push(p),
            _ => proofs.push((slot, vec![p])),
        }
    }
    let fakes = proofs
        .iter()
        .flat_map(|(_, list)| list)
        .filter(|p| crate::proof::is_fake_receipt(&p.proof))
        .count() as u64;
    w.reset_derived(height)?;
    let mut slots: Vec<u64> = commitments
        .iter()
        .map(|(s, _)| *s)
        .chain(proofs.iter().map(|(s, _)| *s))
        .collect();
    slots.sort_unstable();
    slots.dedup();
    let (mut c, mut p) = (commitments.iter().peekable(), proofs.iter().peekable());
    for slot in slots {
        if let Some((_, list)) = p.next_if(|(s, _)| *s == slot) {
            for proof in list {
                let ranges = proven_ranges(w, proof)?;
                w.apply_proof(slot, proof, &ranges)?;
            }
        }
        if let Some((_, list)) = c.next_if(|(s, _)| *s == slot) {
            w.apply_commitments(slot, list)?;
        }
    }
    crate::proof::set_fake_proof_count(w, fakes)?;
    Ok(())
}

/// The heights a kept proof proves, by the rule the sync thread used when
/// it stored it (`checks::proof_ranges`).
fn proven_ranges(
    w: &LedgerWriter<'_>,
    proof: &VerifiedBatchProof,
) -> Result<Vec<(u64, u64)>, RollbackError> {
    match checks::proof_ranges(w, proof) {
        Ok(Some(ranges)) => Ok(ranges),
        Ok(None) => Err(RollbackError::Replay(format!(
            "the proof stored on DA slot {} names DA slot hash {}, which the ledger no longer records",
            proof.height,
            hex::encode(proof.proof_output.da_slot_hash)
        ))),
        Err(VerifyError::Ledger(e)) => Err(e.into()),
        Err(e) => Err(RollbackError::Replay(format!(
            "the proof stored on DA slot {}: {e}",
            proof.height
        ))),
    }
}

/// Takes the ledger back to `target` in one transaction; with `dry_run`
/// the transaction is dropped, and the report says what it would remove.
pub fn rollback(ledger: &Ledger, target: Target, dry_run: bool) -> Result<Report, RollbackError> {
    let mut w = ledger.writer()?;
    let mut report = rollback_in(&mut w, target)?;
    if !dry_run {
        w.commit()?;
        report.written = true;
    }
    Ok(report)
}

/// `ledgerd rollback`: refuses a data dir a process has open, then rolls
/// back (or, with `dry_run`, reports what it would remove).
pub fn run(dir: &Path, target: Target, dry_run: bool) -> Result<Report, RollbackError> {
    let refused = |reason: String| {
        let path = dir.to_path_buf();
        RollbackError::Ledger(LedgerError::Open { path, reason })
    };
    if !dir.join("data.mdb").exists() {
        let no_ledger = "there is no ledger there (no data.mdb): give the --data-dir of the node";
        return Err(refused(no_ledger.into()));
    }
    let holder = crate::ledger::lock::environment_holder(dir)
        .map_err(|e| refused(format!("its lock file cannot be read: {e}")))?;
    if let Some(pid) = holder {
        let dir = dir.display().to_string();
        return Err(RollbackError::Running { dir, pid });
    }
    let ledger = Ledger::open(dir, &OpenOptions::default())?;
    rollback(&ledger, target, dry_run)
}
