//! The devnet's jobs, run by the sync thread: driving the devnet from a
//! test (mine, commit, prove and inject *now*). The devnet itself, the chain
//! source, is [`crate::source::devnet`].
//!
//! A call ([`DevCommand`]) is handed to the sync thread as a [`Job`] through
//! a [`DevnetControl`] (the `dev_*` JSON-RPC methods and [`crate::Node::devnet`]
//! both hold one). The sync thread runs jobs between its own passes
//! ([`run`]): it applies the call to the [`Devnet`], then syncs until the
//! effect is in the ledger, verified like every block, before it answers
//! (read-your-writes). The server loop never waits for this: it keeps the
//! request and answers when the job is done.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use crate::ledger::{LedgerError, LedgerRead};
use crate::source::devnet::snapshot::SnapshotError;
use crate::source::devnet::Devnet;
use crate::source::DaSource;
use crate::stop::Stop;
use crate::sync::{StepReport, Syncer};
use crate::types::{SequencerCommitment, VerifiedBatchProof};

/// The most blocks one `dev_mine` makes.
pub const MAX_MINE: u64 = 1_000_000;

/// One call to the devnet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DevCommand {
    /// `dev_mine`: this many blocks now.
    Mine(u64),
    /// `dev_setBlockInterval`: ms between blocks (0: only when mined).
    SetBlockInterval(u64),
    /// `dev_commit`: commit every block not yet committed, on a new DA slot.
    Commit,
    /// `dev_prove`: prove every commitment not yet proven, on a new DA slot.
    Prove,
    /// `dev_setAutoCommit`: commit every n blocks (0: only when asked).
    SetAutoCommit(u64),
    /// `dev_setAutoProve`: prove every n commitments (0: only when asked).
    SetAutoProve(u64),
    /// `dev_sendTransaction`: a transaction blob for the next block.
    SendTransaction(Vec<u8>),
    /// `dev_addDeposit`: a deposit blob for the next block.
    AddDeposit(Vec<u8>),
    /// `dev_setNextTimestamp`: the next block's timestamp (unix seconds).
    SetNextTimestamp(u64),
    /// `dev_setL1FeeRate`: the l1FeeRate of every block from the next one.
    SetL1FeeRate(u128),
    /// `dev_snapshot`: record the chain and the devnet now; answers an id.
    Snapshot,
    /// `dev_revert`: back to snapshot `id` (dropping it and later ones).
    Revert(u64),
    /// `dev_reset`: back to the `--dev-prefill` chain.
    Reset,
}

/// What a call answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DevOutcome {
    /// A height (the new head; the block that will carry what was sent) or
    /// the setting a call replaced.
    Number(u64),
    /// The commitment `dev_commit` made (`None`: every block was committed).
    Commitment(Option<SequencerCommitment>),
    /// The proof `dev_prove` made (`None`: every commitment was proven).
    Proof(Option<Box<VerifiedBatchProof>>),
    /// Whether `dev_revert` found its snapshot.
    Bool(bool),
}

/// Why a call was not done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DevError {
    /// The call cannot be done as asked; says what to change.
    Invalid(String),
    /// The sync thread could not bring the change into the ledger.
    Failed(String),
    /// The node is stopping (or has stopped).
    Stopped,
}

impl std::fmt::Display for DevError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DevError::Invalid(why) => f.write_str(why),
            DevError::Failed(why) => write!(f, "the devnet could not do it: {why}"),
            DevError::Stopped => f.write_str("the node is stopping; the call was not done"),
        }
    }
}

impl std::error::Error for DevError {}

impl From<LedgerError> for DevError {
    fn from(e: LedgerError) -> Self {
        failed(e)
    }
}

/// Runs calls (the sync thread's side).
pub trait DevExec {
    fn exec(&mut self, cmd: DevCommand) -> Result<DevOutcome, DevError>;
}

/// Work for the sync thread: it is given the [`DevExec`] to run calls with.
pub type Job = Box<dyn FnOnce(&mut dyn DevExec) + Send>;

/// A [`DevExec`] that refuses every call (the sync thread is gone).
pub struct Refuse;

impl DevExec for Refuse {
    fn exec(&mut self, _: DevCommand) -> Result<DevOutcome, DevError> {
        Err(DevError::Stopped)
    }
}

/// Sends calls to the devnet's sync thread; cheap to clone.
///
/// Each method waits until the change is readable in the ledger, e.g.
/// `devnet.mine(5)?` returns once the five blocks are stored.
#[derive(Clone, Debug)]
pub struct DevnetControl {
    tx: Sender<Job>,
}

fn number(outcome: DevOutcome) -> Result<u64, DevError> {
    match outcome {
        DevOutcome::Number(n) => Ok(n),
        other => Err(unexpected(other)),
    }
}

fn unexpected(other: DevOutcome) -> DevError {
    DevError::Failed(format!("unexpected answer {other:?}"))
}

/// The devnet or the sync thread could not do a call: `why`.
fn failed(why: impl std::fmt::Display) -> DevError {
    DevError::Failed(why.to_string())
}

impl DevnetControl {
    /// A control and the receiving end its jobs arrive on (for [`run`]).
    pub fn channel() -> (DevnetControl, Receiver<Job>) {
        let (tx, rx) = mpsc::channel();
        (DevnetControl { tx }, rx)
    }

    /// Hands `job` to the sync thread; gives it back if that has stopped.
    pub fn submit(&self, job: Job) -> Result<(), Job> {
        self.tx.send(job).map_err(|e| e.0)
    }

    /// Runs one call and waits for its outcome.
    pub fn call(&self, cmd: DevCommand) -> Result<DevOutcome, DevError> {
        let (tx, rx) = mpsc::channel();
        let job: Job = Box::new(move |exec| {
            let _ = tx.send(exec.exec(cmd));
        });
        self.submit(job).map_err(|_| DevError::Stopped)?;
        rx.recv().unwrap_or(Err(DevError::Stopped))
    }

    /// Makes `n` blocks now (at most [`MAX_MINE`]); returns the new head height.
    pub fn mine(&self, n: u64) -> Result<u64, DevError> {
        number(self.call(DevCommand::Mine(n))?)
    }

    /// One block per `ms` from now on (0: only when mined); returns the previous interval.
    pub fn set_block_interval(&self, ms: u64) -> Result<u64, DevError> {
        number(self.call(DevCommand::SetBlockInterval(ms))?)
    }

    /// Commits every stored block not yet committed, on a new DA slot; those
    /// heights read Finalized. `None` when there is nothing to commit.
    pub fn commit(&self) -> Result<Option<SequencerCommitment>, DevError> {
        match self.call(DevCommand::Commit)? {
            DevOutcome::Commitment(c) => Ok(c),
            other => Err(unexpected(other)),
        }
    }

    /// Proves every commitment not yet proven, on a new DA slot; those
    /// heights read Proven. `None` when there is nothing to prove.
    pub fn prove(&self) -> Result<Option<VerifiedBatchProof>, DevError> {
        match self.call(DevCommand::Prove)? {
            DevOutcome::Proof(p) => Ok(p.map(|p| *p)),
            other => Err(unexpected(other)),
        }
    }

    /// Commit every `blocks` blocks (0: only when asked); returns the previous setting.
    pub fn set_auto_commit(&self, blocks: u64) -> Result<u64, DevError> {
        number(self.call(DevCommand::SetAutoCommit(blocks))?)
    }

    /// Prove every `commitments` commitments (0: only when asked); returns the previous setting.
    pub fn set_auto_prove(&self, commitments: u64) -> Result<u64, DevError> {
        number(self.call(DevCommand::SetAutoProve(commitments))?)
    }

    /// Puts a transaction blob in the next block; returns that block's height.
    pub fn send_tx(&self, tx: &[u8]) -> Result<u64, DevError> {
        number(self.call(DevCommand::SendTransaction(tx.to_vec()))?)
    }

    /// Puts a deposit blob in the next block; returns that block's height.
    pub fn add_deposit(&self, deposit: &[u8]) -> Result<u64, DevError> {
        number(self.call(DevCommand::AddDeposit(deposit.to_vec()))?)
    }

    /// The next block's timestamp (unix seconds; not before the newest
    /// block's); later blocks count on from it. Returns the next block's height.
    pub fn set_next_timestamp(&self, t: u64) -> Result<u64, DevError> {
        number(self.call(DevCommand::SetNextTimestamp(t))?)
    }

    /// The l1FeeRate of every block from the next one; returns the next block's height.
    pub fn set_l1_fee_rate(&self, rate: u128) -> Result<u64, DevError> {
        number(self.call(DevCommand::SetL1FeeRate(rate))?)
    }

    /// Records the chain, every status and the devnet's state (clock,
    /// schedule, what is queued for the next block); returns the id to
    /// [`revert`](Self::revert) to.
    pub fn snapshot(&self) -> Result<u64, DevError> {
        number(self.call(DevCommand::Snapshot)?)
    }

    /// Takes the chain and the devnet back to snapshot `id`, and drops it
    /// and every later snapshot; false when there is no such snapshot.
    pub fn revert(&self, id: u64) -> Result<bool, DevError> {
        match self.call(DevCommand::Revert(id))? {
            DevOutcome::Bool(found) => Ok(found),
            other => Err(unexpected(other)),
        }
    }

    /// Takes the chain back to the `--dev-prefill` height and the devnet to
    /// a fresh start's state; drops every snapshot. Returns the head height.
    pub fn reset(&self) -> Result<u64, DevError> {
        number(self.call(DevCommand::Reset)?)
    }
}

/// The sync thread's [`DevExec`]: applies a call to the devnet and syncs
/// until its effect is stored.
struct Exec<'a> {
    syncer: &'a mut Syncer<Devnet>,
    stop: &'a Stop,
}

/// Passes in a row that may store nothing before a call gives up.
const IDLE_PASSES: u32 = 3;

impl Exec<'_> {
    /// The ledger's head height and last scanned DA slot.
    fn stored(&self) -> Result<(u64, u64), DevError> {
        let r = self.syncer.ledger().reader()?;
        Ok((r.head_height()?, r.last_scanned_l1()?))
    }

    /// After a revert or reset: the progress reads where the ledger is now
    /// (the source heads too; the next pass reads them again); returns it.
    fn moved(&self) -> Result<(u64, u64), DevError> {
        use std::sync::atomic::Ordering::Relaxed;
        let (head, slot) = self.stored()?;
        let progress = self.syncer.progress();
        progress.stored_l2(head, 0);
        progress.scanned_l1(slot, 0);
        progress.l2_source_head.store(head, Relaxed);
        progress.l1_source_head.store(slot, Relaxed);
        Ok((head, slot))
    }

    /// Syncs until the ledger holds every block the devnet should have made
    /// by now and every DA slot it can scan.
    fn settle(&mut self) -> Result<(), DevError> {
        let goal = self.syncer.source_mut().target_height();
        let mut idle = 0;
        loop {
            if self.stop.is_stopped() {
                return Err(DevError::Stopped);
            }
            let (head, scanned) = self.stored()?;
            let devnet = self.syncer.source_mut();
            let scannable = devnet.last_scanned().map_err(failed)?;
            if head >= goal && head >= devnet.made_height() && scanned >= scannable {
                return Ok(());
            }
            let report = self.syncer.step(self.stop).map_err(failed)?;
            idle = if report == StepReport::default() {
                idle + 1
            } else {
                0
            };
            if idle >= IDLE_PASSES {
                return Err(DevError::Failed(format!(
                    "the sync thread stopped at height {head} and DA slot {scanned}, \
                     short of height {goal} and slot {scannable}; see the node's log"
                )));
            }
        }
    }
}

impl DevExec for Exec<'_> {
    fn exec(&mut self, cmd: DevCommand) -> Result<DevOutcome, DevError> {
        use DevCommand::*;
        if let Mine(n) = cmd {
            if n > MAX_MINE {
                return Err(DevError::Invalid(format!(
                    "`blocks` {n} is more than {MAX_MINE}, the most one dev_mine makes: \
                     mine in several calls"
                )));
            }
        }
        // Every call starts from a ledger that holds all the devnet made,
        // so "the next block" and "not yet committed" mean what they say.
        self.settle()?;
        let started = Instant::now();
        let devnet = self.syncer.source_mut();
        Ok(match cmd {
            Mine(n) => {
                let goal = devnet.mine(n);
                self.settle()?;
                log::info!("dev_mine {n}: head {goal} after {:.2?}", started.elapsed());
                DevOutcome::Number(goal)
            }
            SetBlockInterval(ms) => {
                // The old interval may have owed a block by the time it was
                // replaced: store it before answering, so the head read
                // after the answer stays put under an interval of 0.
                let previous = devnet.set_block_interval(ms);
                self.settle()?;
                DevOutcome::Number(previous)
            }
            Commit => {
                let Some(slot) = devnet.commit_now().map_err(failed)? else {
                    return Ok(DevOutcome::Commitment(None));
                };
                self.settle()?;
                let stored = self.syncer.ledger().reader()?.commitments_on_slot(slot)?;
                let last = stored.and_then(|list| list.last().copied());
                let c = last.ok_or_else(|| not_stored("commitment", slot))?;
                log::info!(
                    target: module_path!(),
                    "dev_commit: heights {}..={} on DA slot {slot}",
                    c.l2_start_block_number,
                    c.l2_end_block_number
                );
                DevOutcome::Commitment(Some(c))
            }
            Prove => {
                let Some(slot) = devnet.prove_now().map_err(failed)? else {
                    return Ok(DevOutcome::Proof(None));
                };
                self.settle()?;
                let stored = self.syncer.ledger().reader()?.last_proof_on_slot(slot)?;
                let p = stored.ok_or_else(|| not_stored("proof", slot))?;
                log::info!(
                    target: module_path!(),
                    "dev_prove: up to height {} on DA slot {slot}",
                    p.proof_output.last_l2_height
                );
                DevOutcome::Proof(Some(Box::new(p)))
            }
            SetAutoCommit(n) => DevOutcome::Number(devnet.set_auto_commit(n)),
            SetAutoProve(n) => DevOutcome::Number(devnet.set_auto_prove(n)),
            SendTransaction(tx) => DevOutcome::Number(devnet.queue_tx(tx)),
            AddDeposit(d) => DevOutcome::Number(devnet.queue_deposit(d)),
            SetNextTimestamp(t) => {
                DevOutcome::Number(devnet.set_next_timestamp(t).map_err(DevError::Invalid)?)
            }
            SetL1FeeRate(r) => DevOutcome::Number(devnet.set_l1_fee_rate(r)),
            Snapshot => {
                let (head, scanned) = self.stored()?;
                let devnet = self.syncer.source_mut();
                DevOutcome::Number(devnet.snapshot(head, scanned).map_err(snapshot_error)?)
            }
            Revert(id) => {
                if !devnet.revert(id).map_err(snapshot_error)? {
                    return Ok(DevOutcome::Bool(false));
                }
                let at = self.moved()?;
                log_moved(&format!("dev_revert {id}"), at, started);
                DevOutcome::Bool(true)
            }
            Reset => {
                devnet.reset().map_err(snapshot_error)?;
                let at = self.moved()?;
                self.settle()?;
                log_moved("dev_reset", at, started);
                DevOutcome::Number(self.syncer.ledger().reader()?.head_height()?)
            }
        })
    }
}

fn snapshot_error(e: SnapshotError) -> DevError {
    match e {
        SnapshotError::Refused(why) => DevError::Invalid(why),
        SnapshotError::Failed(why) => DevError::Failed(why),
    }
}

/// What `dev_commit` or `dev_prove` put on `slot` did not reach the ledger.
fn not_stored(what: &str, slot: u64) -> DevError {
    failed(format!("the {what} on DA slot {slot} was not stored"))
}

/// The info line of a revert or reset (`call`) that took the ledger to
/// `(head, slot)`.
fn log_moved(call: &str, (head, slot): (u64, u64), started: Instant) {
    log::info!(
        target: module_path!(),
        "{call}: head {head}, DA slot {slot} after {:.2?}",
        started.elapsed()
    );
}

/// How often a sync thread waiting for jobs looks at the stop signal.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// Runs the devnet's sync thread until stopped: the sync passes of
/// [`Syncer::run_with`], and between them the jobs that arrive on `jobs`.
pub fn run(syncer: Syncer<Devnet>, jobs: Receiver<Job>, stop: &Stop) {
    syncer.run_with(stop, |syncer, wait| {
        let end = Instant::now() + wait;
        loop {
            if stop.is_stopped() {
                return true;
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            match jobs.recv_timeout(left.min(STOP_CHECK)) {
                Ok(job) => {
                    let mut exec = Exec { syncer, stop };
                    for job in std::iter::once(job).chain(jobs.try_iter()) {
                        job(&mut exec);
                    }
                    return stop.is_stopped();
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return stop.sleep(left),
            }
        }
    });
}

#[cfg(test)]
mod tests;
