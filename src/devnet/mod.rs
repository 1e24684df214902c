//! The embedded devnet: a simulated sequencer and DA chain, run as a chain
//! source.
//!
//! It is not a shortcut into the ledger: the sync thread pulls its blocks and
//! slots through [`L2Source`] and [`DaSource`] and verifies them like an
//! upstream node's (`source -> sync thread (verify, write) -> LMDB <- server`).
//!
//! Everything is deterministic from `--dev-seed`: block `h` is a function of
//! the seed, `h` and block `h-1`, so a restart on the same data dir continues
//! the same chain. The devnet keeps no chain of its own: the hashes it needs
//! for Merkle roots and proofs are read back from the ledger it feeds (only
//! what the sync thread has already verified and stored).
//!
//! - [`block`]: where the devnet makes a soft confirmation.
//! - [`da`]: where it makes DA slots, sequencer commitments and batch proofs.
//! - [`schedule`]: which block lands in which slot, and when things land.

pub mod block;
pub mod da;
pub mod schedule;

use std::sync::Arc;
use std::time::Instant;

use crate::chain::{ForkTable, SequencerKey};
use crate::ledger::{Ledger, LedgerError, LedgerRead};
use crate::sync::source::{DaSource, L2Source, SourceError};
use crate::types::{DaSlot, Hash, SoftConfirmation};

/// Devnet settings, from the `--dev-*` flags.
#[derive(Clone, Debug)]
pub struct DevnetConfig {
    /// `--dev-seed`: everything the devnet makes derives from it.
    pub seed: u64,
    /// `--dev-prefill`: heights 1..=N exist before the server listens.
    pub prefill: u64,
    /// `--dev-block-ms`: one new block every this many ms after the prefill (0: none).
    pub block_ms: u64,
    /// `--dev-proof-bytes`: size of each batch proof's proof bytes.
    pub proof_bytes: usize,
}

impl Default for DevnetConfig {
    fn default() -> Self {
        DevnetConfig {
            seed: 1,
            prefill: 0,
            block_ms: 1000,
            proof_bytes: 2048,
        }
    }
}

/// Why the devnet cannot run on a data dir.
#[derive(Debug)]
pub enum DevnetError {
    Ledger(LedgerError),
    /// The data dir holds another chain (another seed, or an upstream's).
    OtherChain(String),
}

impl std::fmt::Display for DevnetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DevnetError::Ledger(e) => write!(f, "{e}"),
            DevnetError::OtherChain(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for DevnetError {}

impl From<LedgerError> for DevnetError {
    fn from(e: LedgerError) -> Self {
        DevnetError::Ledger(e)
    }
}

const SEED_META_KEY: &str = "devnet_seed";

/// The devnet chain source.
pub struct Devnet {
    config: DevnetConfig,
    /// Which fork's rules make which height.
    forks: ForkTable,
    key: SequencerKey,
    ledger: Arc<Ledger>,
    /// The newest block made so far: (height, hash, state root).
    tip: (u64, Hash, Hash),
    /// Height the chain had when this process started (blocks above it are
    /// made on the clock).
    start_height: u64,
    started: Instant,
}

impl Devnet {
    /// A devnet over `ledger`, continuing the chain stored there, making
    /// each height by its fork's rules in `forks` (Genesis-era blocks below
    /// the Kumquat height). Refuses a data dir that holds a chain from
    /// another seed or another source. (The node pins `forks` in the ledger
    /// before this, so a data dir is never continued by other rules.)
    pub fn open(
        config: DevnetConfig,
        forks: ForkTable,
        ledger: Arc<Ledger>,
    ) -> Result<Devnet, DevnetError> {
        let key = SequencerKey::from_secret(&schedule::sequencer_secret(config.seed));
        let (tip, start_height) = {
            let mut w = ledger.writer()?;
            match w.meta_bytes(SEED_META_KEY)? {
                Some(stored) if stored != config.seed.to_be_bytes() => {
                    let stored = stored
                        .try_into()
                        .map(u64::from_be_bytes)
                        .map(|s| s.to_string())
                        .unwrap_or_else(|_| "?".to_string());
                    return Err(DevnetError::OtherChain(format!(
                        "the data dir {} holds the devnet chain of seed {stored}, not {}: \
                         pass --dev-seed {stored} or use another --data-dir",
                        ledger.path().display(),
                        config.seed
                    )));
                }
                Some(_) => {}
                None => {
                    if w.head_height()? > 0 {
                        return Err(DevnetError::OtherChain(format!(
                            "the data dir {} holds a chain that the devnet did not make: \
                             use another --data-dir for --dev",
                            ledger.path().display()
                        )));
                    }
                    w.set_meta_bytes(SEED_META_KEY, &config.seed.to_be_bytes())?;
                    w.commit()?;
                    w = ledger.writer()?;
                }
            }
            let head = w.head_height()?;
            let tip = if head == 0 {
                (
                    0,
                    crate::types::ZERO_HASH,
                    schedule::genesis_state_root(config.seed),
                )
            } else {
                let sc = w.soft_confirmation(head)?.ok_or_else(|| {
                    DevnetError::OtherChain(format!("stored head {head} cannot be read"))
                })?;
                (head, sc.hash, sc.state_root)
            };
            drop(w);
            (tip, head)
        };
        Ok(Devnet {
            config,
            forks,
            key,
            ledger,
            tip,
            start_height,
            started: Instant::now(),
        })
    }

    /// The sequencer's public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.public_key()
    }

    /// The height the chain should have reached now: the prefill at once,
    /// then one block per `block_ms`.
    pub fn target_height(&self) -> u64 {
        let base = self.start_height.max(self.config.prefill);
        if self.config.block_ms == 0 {
            return base;
        }
        let elapsed = self.started.elapsed().as_millis() as u64;
        base + elapsed / self.config.block_ms
    }

    fn source_err(e: LedgerError) -> SourceError {
        SourceError(format!("devnet cannot read the ledger: {e}"))
    }
}

impl L2Source for Devnet {
    fn head(&mut self) -> Result<u64, SourceError> {
        Ok(self.target_height())
    }

    fn blocks(&mut self, from: u64, to: u64) -> Result<Vec<SoftConfirmation>, SourceError> {
        let head = self.target_height();
        let to = to.min(head);
        if from > to {
            return Ok(Vec::new());
        }
        // The devnet makes blocks in order: a request that starts below its
        // tip is answered from the ledger (a sync thread retrying after a
        // failed write), one above its tip makes the blocks in between first.
        if from <= self.tip.0 {
            let reader = self.ledger.reader().map_err(Self::source_err)?;
            let stored = reader
                .soft_confirmation_range(from, to.min(self.tip.0))
                .map_err(Self::source_err)?;
            let blocks: Vec<SoftConfirmation> = stored.into_iter().map_while(|b| b).collect();
            if !blocks.is_empty() {
                return Ok(blocks);
            }
            // Made but not stored (the sync thread rejected them): make again
            // from the stored head.
            let head = reader.head_height().map_err(Self::source_err)?;
            self.tip = match reader.soft_confirmation(head).map_err(Self::source_err)? {
                Some(sc) => (head, sc.hash, sc.state_root),
                None => (
                    0,
                    crate::types::ZERO_HASH,
                    schedule::genesis_state_root(self.config.seed),
                ),
            };
        }
        let first = self.tip.0 + 1;
        let made = block::make_blocks(
            &self.key,
            self.config.seed,
            &self.forks,
            self.tip,
            first,
            to,
        );
        if let Some(last) = made.last() {
            self.tip = (last.l2_height, last.hash, last.state_root);
        }
        Ok(made.into_iter().filter(|b| b.l2_height >= from).collect())
    }

    fn genesis_state_root(&mut self) -> Result<Option<Hash>, SourceError> {
        Ok(Some(schedule::genesis_state_root(self.config.seed)))
    }
}

impl DaSource for Devnet {
    fn last_scanned(&mut self) -> Result<u64, SourceError> {
        // The DA chain moves with the L2 chain: its tip is the slot of the
        // newest stored block, so every commitment and proof that lands on a
        // slot refers to blocks the ledger already holds.
        let stored = self
            .ledger
            .reader()
            .and_then(|r| r.head_height())
            .map_err(Self::source_err)?;
        let head = stored.min(self.target_height());
        Ok(if head == 0 {
            0
        } else {
            schedule::slot_of(head)
        })
    }

    fn first_slot(&mut self) -> Result<Option<u64>, SourceError> {
        Ok(Some(schedule::DA_GENESIS_SLOT))
    }

    fn slot(&mut self, number: u64) -> Result<DaSlot, SourceError> {
        self.slots(number, number)?
            .pop()
            .ok_or_else(|| SourceError(format!("devnet made no DA slot {number}")))
    }

    fn slots(&mut self, from: u64, to: u64) -> Result<Vec<DaSlot>, SourceError> {
        let reader = self.ledger.reader().map_err(Self::source_err)?;
        let pub_key = self.key.public_key();
        (from..=to)
            .map(|n| da::make_slot(&self.config, &self.forks, &pub_key, &reader, n))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::OpenOptions;
    use crate::stop::Stop;
    use crate::sync::progress::Progress;
    use crate::sync::{SyncConfig, Syncer};
    use crate::types::Status;

    fn prefilled(dir: &std::path::Path, prefill: u64) -> Arc<Ledger> {
        let ledger = Arc::new(Ledger::open(dir, &OpenOptions::default()).unwrap());
        let config = DevnetConfig {
            prefill,
            block_ms: 0,
            ..DevnetConfig::default()
        };
        let devnet = Devnet::open(config, ForkTable::default(), ledger.clone()).unwrap();
        let sync = SyncConfig {
            sequencer_pubkey: Some(devnet.public_key()),
            ..SyncConfig::default()
        };
        let mut syncer = Syncer::new(ledger.clone(), devnet, Arc::new(Progress::default()), sync);
        syncer.catch_up(&Stop::new()).unwrap();
        ledger
    }

    #[test]
    fn a_prefill_of_300_has_proven_then_finalized_then_trusted_heights() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = prefilled(dir.path(), 300);
        let r = ledger.reader().unwrap();
        assert_eq!(r.head_height().unwrap(), 300);
        let statuses: Vec<Status> = (1..=300).map(|h| r.status(h).unwrap().unwrap()).collect();
        assert_eq!(statuses[0], Status::Proven);
        assert_eq!(statuses[299], Status::Trusted);
        assert!(statuses.contains(&Status::Finalized));
        assert!(
            statuses.windows(2).all(|w| w[0] >= w[1]),
            "statuses fall with height"
        );
        assert!(r.last_proof().unwrap().is_some());
        assert_eq!(r.last_scanned_l1().unwrap(), schedule::slot_of(300));
        assert!(r
            .commitments_on_slot(schedule::commitment_slot(0))
            .unwrap()
            .is_some());
    }

    #[test]
    fn reopening_with_another_seed_is_refused_and_the_same_seed_continues() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = prefilled(dir.path(), 120);
        let other = DevnetConfig {
            seed: 99,
            ..DevnetConfig::default()
        };
        let e = Devnet::open(other, ForkTable::default(), ledger.clone())
            .err()
            .unwrap();
        assert!(e.to_string().contains("--dev-seed 1"), "{e}");
        let head_hash = ledger.reader().unwrap().hash_at(120).unwrap().unwrap();
        drop(ledger);
        let ledger = prefilled(dir.path(), 150);
        let r = ledger.reader().unwrap();
        assert_eq!(r.head_height().unwrap(), 150);
        assert_eq!(r.hash_at(120).unwrap().unwrap(), head_hash);
        assert_eq!(
            r.soft_confirmation(121).unwrap().unwrap().prev_hash,
            head_hash
        );
    }
}
