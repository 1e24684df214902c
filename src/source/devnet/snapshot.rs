//! Devnet snapshots: `dev_snapshot`, `dev_revert`, `dev_reset` (anvil's
//! `evm_snapshot` / `evm_revert` / `anvil_reset`).
//!
//! A snapshot is small: where the ledger stood (its head height and last
//! scanned DA slot) and the devnet's own state at that moment (its tip, its
//! clock, the DA timeline with its plans and automatic rules, what calls
//! queued for the next block, the timestamp offset and fee rate). A revert
//! takes the ledger back with the rollback primitive ([`crate::rollback`],
//! one write transaction, statuses recomputed by the write rules) and puts
//! the devnet's state back, so the chain made after a revert is the one
//! made after the snapshot (the devnet is deterministic). Reverting drops
//! that snapshot and every later one, as anvil does.
//!
//! `dev_reset` takes the ledger back to the `--dev-prefill` height and
//! reads the devnet's state back from there, as a restart does (the chain
//! continues as a fresh node's would); the settings calls changed go back
//! to the flags', and every snapshot is dropped.
//!
//! Not on a regtest (`--dev-bitcoin-rpc`): its DA slots are Bitcoin blocks,
//! which a revert would have to take back too.

use super::{Devnet, State};
use crate::rollback::{self, Target};

/// One snapshot: its id, the ledger's (head, last scanned slot), the state.
#[derive(Clone, Debug)]
struct Snapshot {
    id: u64,
    height: u64,
    slot: u64,
    state: State,
}

/// The snapshots taken and not yet reverted past, oldest first.
#[derive(Debug, Default)]
pub struct Snapshots {
    list: Vec<Snapshot>,
    /// The next id handed out (ids are never reused within a run).
    next: u64,
}

/// Why a snapshot call was not done.
#[derive(Debug)]
pub enum SnapshotError {
    /// The call cannot be done on this devnet; says why.
    Refused(String),
    Failed(String),
}

fn failed(e: impl std::fmt::Display) -> SnapshotError {
    SnapshotError::Failed(e.to_string())
}

impl Devnet {
    fn refuse_on_regtest(&self, call: &str) -> Result<(), SnapshotError> {
        if self.chain.is_some() {
            return Err(SnapshotError::Refused(format!(
                "{call} is not available on a devnet whose DA slots are regtest blocks \
                 (--dev-bitcoin-rpc): Bitcoin blocks cannot be taken back with it"
            )));
        }
        Ok(())
    }

    /// `dev_snapshot`: records the devnet and where the ledger stands
    /// (`height`, `slot`: its head and last scanned DA slot, with every
    /// block made stored); returns the snapshot's id.
    pub fn snapshot(&mut self, height: u64, slot: u64) -> Result<u64, SnapshotError> {
        self.refuse_on_regtest("dev_snapshot")?;
        let id = self.snapshots.next;
        self.snapshots.next += 1;
        // The clock counts on from where it is now once reverted to.
        let mut state = self.state.clone();
        state.clock.restart(state.clock.target());
        self.snapshots.list.push(Snapshot {
            id,
            height,
            slot,
            state,
        });
        Ok(id)
    }

    /// `dev_revert`: takes the ledger and the devnet back to snapshot `id`
    /// and drops it and every later snapshot. `Ok(false)` when there is no
    /// such snapshot (never taken, or dropped by an earlier revert).
    pub fn revert(&mut self, id: u64) -> Result<bool, SnapshotError> {
        self.refuse_on_regtest("dev_revert")?;
        let Some(at) = self.snapshots.list.iter().position(|s| s.id == id) else {
            return Ok(false);
        };
        let snap = self.snapshots.list[at].clone();
        self.roll_back(Target::Both {
            l2: snap.height,
            l1: snap.slot,
        })?;
        self.snapshots.list.truncate(at);
        self.state = snap.state;
        self.state.clock.restart(self.state.clock.base);
        self.dirty = false;
        Ok(true)
    }

    /// `dev_reset`: takes the ledger back to the `--dev-prefill` height and
    /// the devnet to the state a fresh start there has; drops every snapshot.
    pub fn reset(&mut self) -> Result<(), SnapshotError> {
        self.refuse_on_regtest("dev_reset")?;
        self.roll_back(Target::L2(self.config.prefill))?;
        self.snapshots.list.clear();
        self.state =
            super::restore(&self.ledger, &self.config, self.genesis, None).map_err(failed)?;
        self.dirty = false;
        Ok(())
    }

    /// Takes the ledger back to `target` in one write transaction.
    fn roll_back(&mut self, target: Target) -> Result<(), SnapshotError> {
        let report = rollback::rollback(&self.ledger, target, false).map_err(failed)?;
        log::debug!(target: "ledgerd::sync::devnet", "{report}");
        Ok(())
    }
}
