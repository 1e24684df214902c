//! The embedded devnet: a simulated sequencer and DA chain, run as a chain
//! source.
//!
//! It is not a shortcut into the ledger: the sync thread pulls its blocks and
//! slots through [`L2Source`] and [`DaSource`] and verifies them like an
//! upstream node's (`source -> sync thread (verify, write) -> LMDB <- server`).
//!
//! Everything is deterministic from `--dev-seed` and the `dev_*` calls made:
//! block `h` is a function of the seed, `h`, block `h-1` and what a call
//! asked it to carry ([`block::Inputs`]), so a restart on the same data dir
//! continues the same chain. The devnet keeps no chain of its own: the
//! hashes it needs for Merkle roots and proofs are read back from the ledger
//! it feeds (only what the sync thread has already verified and stored), and
//! where its DA chain stands is read back from there on a restart.
//!
//! - [`block`]: where the devnet makes a soft confirmation.
//! - [`da`]: where it makes DA slots, sequencer commitments and batch proofs.
//! - [`schedule`]: the timetable's numbers and the values derived from the seed.
//! - [`timeline`]: which block points at which slot, and what lands on each.
//! - [`crate::sync::devnet`]: `dev_*` calls and [`crate::sync::devnet::DevnetControl`]: mine, commit,
//!   prove and inject now, run on the sync thread.
//! - [`regtest`]: the DA chain as real regtest blocks (`--dev-bitcoin-rpc`):
//!   each slot mined, its commitments and proofs published in Citrea's
//!   format, and read back from bitcoind.

pub mod args;
pub mod block;
pub mod da;
mod grind;
pub mod inscribe;
pub mod regtest;
mod restore;
pub mod schedule;
pub mod snapshot;
pub mod timeline;

use std::sync::Arc;
use std::time::Instant;

use crate::chain_rules::{ForkTable, SequencerKey};
use crate::ledger::walk::LedgerWalk;
use crate::ledger::{Ledger, LedgerError, LedgerRead};
use crate::source::{DaSource, L2Source, SourceError};
use crate::types::{DaSlot, Hash, SoftConfirmation};
use regtest::{RegtestChain, RegtestConfig};
use restore::restore;
use schedule::SlotRef;
use timeline::{Committed, Stored, Timeline};

/// Devnet settings, from the `--dev-*` flags.
#[derive(Clone, Debug)]
pub struct DevnetConfig {
    /// `--dev-seed`: everything the devnet makes derives from it.
    pub seed: u64,
    /// `--dev-prefill`: heights 1..=N exist before the server listens.
    pub prefill: u64,
    /// `--dev-block-ms`: one new block every this many ms after the prefill
    /// (0: only when `dev_mine` asks).
    pub block_ms: u64,
    /// `--dev-proof-bytes`: size of each batch proof's proof bytes.
    pub proof_bytes: usize,
    /// `--dev-allow-remote-control`: answer `dev_*` calls on a node bound to
    /// an address other than loopback.
    pub allow_remote_control: bool,
    /// `--dev-bitcoin-rpc`: DA slots are blocks the devnet mines on this
    /// regtest bitcoind ([`regtest`]); `None`: a simulated DA chain.
    pub bitcoin: Option<RegtestConfig>,
    /// Blocks per sync pass ([`L2Source::blocks_per_pass`]). The timeline
    /// keeps a slot's plan until the slot is scanned, and a pass scans only
    /// the slots that existed when it started: a prefill of 1M blocks in
    /// one pass held 125,000 plans (25 MB) until its end. 50,000 (the
    /// default) is about 2 s of a prefill and 1 MB of plans.
    pub blocks_per_pass: u64,
}

impl Default for DevnetConfig {
    fn default() -> Self {
        DevnetConfig {
            seed: args::DEFAULT_SEED,
            prefill: args::DEFAULT_PREFILL,
            block_ms: args::DEFAULT_BLOCK_MS,
            proof_bytes: args::DEFAULT_PROOF_BYTES,
            allow_remote_control: false,
            bitcoin: None,
            blocks_per_pass: 50_000,
        }
    }
}

/// Why the devnet cannot run on a data dir.
#[derive(Debug)]
pub enum DevnetError {
    Ledger(LedgerError),
    /// The data dir holds another chain (another seed, or an upstream's).
    OtherChain(String),
    /// The regtest bitcoind cannot be used (down, or not the devnet's chain).
    Bitcoin(SourceError),
}

impl std::fmt::Display for DevnetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DevnetError::Ledger(e) => write!(f, "{e}"),
            DevnetError::OtherChain(why) => f.write_str(why),
            DevnetError::Bitcoin(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DevnetError {}

wrap_errors!(DevnetError {
    Ledger(LedgerError),
    Bitcoin(SourceError),
});

/// The height the chain should have: a base, then one block per interval.
#[derive(Clone, Debug)]
struct Clock {
    /// 0: the chain stays at `base` until `dev_mine`.
    interval_ms: u64,
    base: u64,
    since: Instant,
}

impl Clock {
    /// At `base` now, one block per `interval_ms` from here.
    fn new(interval_ms: u64, base: u64) -> Clock {
        Clock {
            interval_ms,
            base,
            since: Instant::now(),
        }
    }

    fn target(&self) -> u64 {
        if self.interval_ms == 0 {
            return self.base;
        }
        let ticks = self.since.elapsed().as_millis() / u128::from(self.interval_ms);
        self.base
            .saturating_add(u64::try_from(ticks).unwrap_or(u64::MAX))
    }

    /// Counts on from `base`, now.
    fn restart(&mut self, base: u64) {
        self.base = base;
        self.since = Instant::now();
    }
}

/// Transactions and deposits a call queued for block `at`.
#[derive(Clone, Debug, Default)]
struct Queued {
    at: u64,
    txs: Vec<Vec<u8>>,
    deposits: Vec<Vec<u8>>,
}

/// The devnet chain source.
pub struct Devnet {
    config: DevnetConfig,
    /// Which fork's rules make which height.
    forks: ForkTable,
    key: SequencerKey,
    ledger: Arc<Ledger>,
    /// What blocks and calls change (read back from the ledger at start).
    state: State,
    /// The regtest the DA slots are mined on (`--dev-bitcoin-rpc`).
    chain: Option<RegtestChain>,
    /// The DA slot height 1 points at.
    genesis: u64,
    /// A failed call left the timeline ahead of the ledger and the chain:
    /// read both again before making anything.
    dirty: bool,
    /// `dev_snapshot`s not reverted past ([`snapshot`]).
    snapshots: snapshot::Snapshots,
    /// The hashes and state roots of the newest blocks made, for the DA
    /// slots made before those blocks are stored.
    made: Made,
}

/// The devnet's own state: what a `dev_snapshot` keeps, and what
/// [`restore`] reads back from the ledger.
#[derive(Clone, Debug)]
struct State {
    /// The newest block made so far: (height, hash, state root).
    tip: (u64, Hash, Hash),
    clock: Clock,
    timeline: Timeline,
    queued: Queued,
    /// Seconds added to every new block's timestamp (`dev_setNextTimestamp`).
    timestamp_offset: i64,
    /// Every new block's l1FeeRate (`dev_setL1FeeRate`); `None`: random.
    l1_fee_rate: Option<u128>,
}

/// The hash and state root of each of the newest blocks made, at most
/// [`Made::KEPT`]: the DA slots that open along with the blocks are made on
/// the sync thread's fetch thread, ahead of the writes (and on a regtest,
/// mined between the blocks of one request), from what the ledger holds
/// and from this.
#[derive(Debug, Default)]
struct Made {
    /// The height of the first entry.
    first: u64,
    blocks: std::collections::VecDeque<(Hash, Hash)>,
}

impl Made {
    /// More than a sync pass holds made and not yet stored (the fetch
    /// thread's 4 chunks ahead, the one it makes, and a write transaction:
    /// about 2,000 blocks of 300-block chunks, each made in one request);
    /// 4,096 entries are 256 KB. A slot that needs an older block not yet
    /// stored is left to the DA part of the pass, which makes it from the
    /// ledger.
    const KEPT: usize = 4096;

    /// Block `h` was made with `hash` and `state_root`: it replaces what was
    /// kept from its height up (made before a revert, or before a failed
    /// write was made again).
    fn push(&mut self, h: u64, hash: Hash, state_root: Hash) {
        match h.checked_sub(self.first) {
            Some(at) if at <= self.blocks.len() as u64 => {
                self.blocks.truncate(at as usize);
            }
            _ => {
                self.blocks.clear();
                self.first = h;
            }
        }
        if self.blocks.len() == Self::KEPT {
            self.blocks.pop_front();
            self.first += 1;
        }
        self.blocks.push_back((hash, state_root));
    }

    fn get(&self, h: u64) -> Option<&(Hash, Hash)> {
        self.blocks
            .get(usize::try_from(h.checked_sub(self.first)?).ok()?)
    }

    /// Every block made is stored: the ledger answers for them, and the
    /// 256 KB a full window holds go back to the allocator (a served devnet
    /// after a prefill or a long mine keeps them otherwise).
    fn release(&mut self) {
        *self = Made::default();
    }
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
        let chain = (config.bitcoin.as_ref())
            .map(|b| RegtestChain::new(b, config.seed))
            .transpose()?;
        {
            let mut w = ledger.writer()?;
            match w.devnet_seed()? {
                Some(stored) if stored != config.seed => {
                    return Err(DevnetError::OtherChain(format!(
                        "the data dir {} holds the devnet chain of seed {stored}, not {}: \
                         pass --dev-seed {stored} or use another --data-dir",
                        ledger.path().display(),
                        config.seed
                    )));
                }
                Some(_) => {}
                None if w.head_height()? > 0 => {
                    return Err(DevnetError::OtherChain(format!(
                        "the data dir {} holds a chain that the devnet did not make: \
                         use another --data-dir for --dev",
                        ledger.path().display()
                    )));
                }
                None => {
                    w.set_devnet_seed(config.seed)?;
                    w.commit()?;
                }
            }
        }
        let first_block = ledger.reader()?.soft_confirmation(1)?;
        let genesis = match (&first_block, &chain) {
            (Some(sc), None)
                if sc.da_slot_hash != schedule::slot_hash(config.seed, sc.da_slot_height) =>
            {
                return Err(DevnetError::OtherChain(format!(
                    "the data dir {} holds a devnet whose DA slots are regtest blocks: \
                     pass --dev-bitcoin-rpc with the bitcoind it ran on, or use another --data-dir",
                    ledger.path().display()
                )));
            }
            (Some(sc), _) => sc.da_slot_height,
            (None, Some(chain)) => chain.start_fresh()?,
            (None, None) => schedule::DA_GENESIS_SLOT,
        };
        let state = restore(&ledger, &config, genesis, chain.as_ref())?;
        Ok(Devnet {
            forks,
            key,
            ledger,
            state,
            config,
            chain,
            genesis,
            dirty: false,
            snapshots: snapshot::Snapshots::default(),
            made: Made::default(),
        })
    }

    /// The sequencer's public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.public_key()
    }

    /// The height the chain should have reached now: the prefill at once,
    /// then one block per block interval, and the blocks `dev_mine` asked for.
    pub fn target_height(&self) -> u64 {
        self.state.clock.target()
    }

    /// The newest height made (stored, or on its way to the sync thread).
    pub fn made_height(&self) -> u64 {
        self.state.tip.0
    }

    /// `dev_mine`: `n` more blocks now; returns the height they reach.
    pub fn mine(&mut self, n: u64) -> u64 {
        let goal = self.target_height().max(self.state.tip.0).saturating_add(n);
        self.state.clock.restart(goal);
        goal
    }

    /// `dev_setBlockInterval`: one block per `ms` from now on (0: only
    /// `dev_mine`); returns the previous interval.
    pub fn set_block_interval(&mut self, ms: u64) -> u64 {
        let now = self.target_height();
        self.state.clock.restart(now);
        std::mem::replace(&mut self.state.clock.interval_ms, ms)
    }

    /// `dev_setAutoCommit`: returns the previous setting.
    pub fn set_auto_commit(&mut self, blocks: u64) -> u64 {
        std::mem::replace(&mut self.state.timeline.auto_commit, blocks)
    }

    /// `dev_setAutoProve`: returns the previous setting.
    pub fn set_auto_prove(&mut self, commitments: u64) -> u64 {
        std::mem::replace(&mut self.state.timeline.auto_prove, commitments)
    }

    /// `dev_commit`: opens a DA slot with a commitment of every block made
    /// and not yet committed; its number, or `None` when there is none. On
    /// a regtest the slot is mined at once (every block made must be stored).
    pub fn commit_now(&mut self) -> Result<Option<u64>, SourceError> {
        self.reload_if_dirty()?;
        let before = self.state.timeline.tip();
        let slot = self.state.timeline.commit_now(self.state.tip.0);
        self.mine_opened(before)?;
        Ok(slot)
    }

    /// `dev_prove`: opens a DA slot with a proof of every commitment not yet
    /// proven; its number, or `None` when there is none. On a regtest the
    /// slots are mined at once.
    pub fn prove_now(&mut self) -> Result<Option<u64>, SourceError> {
        self.reload_if_dirty()?;
        let before = self.state.timeline.tip();
        let slot = self.state.timeline.prove_now();
        self.mine_opened(before)?;
        Ok(slot)
    }

    /// What blocks pointing at slot `n` say about it.
    fn slot_ref(&self, n: u64) -> Result<SlotRef, SourceError> {
        match &self.chain {
            Some(chain) => chain.slot_ref(n),
            None => Ok(schedule::simulated_slot(self.config.seed, n)),
        }
    }

    /// On a regtest: mines the slots the timeline opened above `before`,
    /// each with what its plan puts on it (from the ledger, and from
    /// [`Made`] for blocks not stored yet). A failure leaves the devnet to
    /// be read again.
    fn mine_opened(&mut self, before: u64) -> Result<(), SourceError> {
        let Some(chain) = &self.chain else {
            return Ok(());
        };
        for n in before + 1..=self.state.timeline.tip() {
            let mined = (|| {
                let reader = self.ledger.reader().map_err(Self::source_err)?;
                let slot = da::make_slot(&View::new(&reader, self), n)?;
                drop(reader);
                chain.mine_slot(n, &slot)
            })();
            mined.inspect_err(|_| self.dirty = true)?;
        }
        Ok(())
    }

    /// Reads the timeline again from the ledger (and the regtest), keeping
    /// the automatic rules' settings.
    fn reload(&mut self) -> Result<(), SourceError> {
        let mut restored = restore(
            &self.ledger,
            &self.config,
            self.genesis,
            self.chain.as_ref(),
        )?;
        let (t, old) = (&mut restored.timeline, &self.state.timeline);
        (t.auto_commit, t.auto_prove) = (old.auto_commit, old.auto_prove);
        self.state.tip = restored.tip;
        self.state.timeline = restored.timeline;
        self.dirty = false;
        Ok(())
    }

    fn reload_if_dirty(&mut self) -> Result<(), SourceError> {
        if self.dirty {
            self.reload()?;
        }
        Ok(())
    }

    /// Makes blocks `first..=to` on the tip; on a regtest, each slot the
    /// timeline opens on the way is mined before the first block that
    /// points at it is made (its commitments cover the blocks before).
    fn make(&mut self, first: u64, to: u64) -> Result<Vec<SoftConfirmation>, SourceError> {
        let mut made: Vec<SoftConfirmation> = Vec::new();
        let mut pending: Vec<u64> = Vec::new();
        for h in first..=to {
            let before = self.state.timeline.tip();
            let slot = self.state.timeline.next_block(h);
            if self.chain.is_some() && self.state.timeline.tip() > before {
                self.make_pending(&mut made, &mut pending)?;
                self.mine_opened(before)?;
            }
            pending.push(slot);
        }
        self.make_pending(&mut made, &mut pending)?;
        Ok(made)
    }

    /// Makes the blocks after `made` (or the tip) that point at `pending`,
    /// and keeps their hashes and state roots in [`Made`].
    fn make_pending(
        &mut self,
        made: &mut Vec<SoftConfirmation>,
        pending: &mut Vec<u64>,
    ) -> Result<(), SourceError> {
        if pending.is_empty() {
            return Ok(());
        }
        let tip = made
            .last()
            .map_or(self.state.tip, |b| (b.l2_height, b.hash, b.state_root));
        // Blocks point at slots in runs (two blocks a slot): each slot's
        // hashes are derived once.
        let mut refs: Vec<SlotRef> = Vec::with_capacity(pending.len());
        for &n in pending.iter() {
            let known = refs.last().filter(|r| r.number == n).copied();
            refs.push(match known {
                Some(r) => r,
                None => self.slot_ref(n)?,
            });
        }
        let inputs = block::Inputs {
            at: self.state.queued.at,
            txs: &self.state.queued.txs,
            deposits: &self.state.queued.deposits,
            timestamp_offset: self.state.timestamp_offset,
            l1_fee_rate: self.state.l1_fee_rate,
        };
        let new = block::make_blocks(
            &self.key,
            self.config.seed,
            &self.forks,
            tip,
            tip.0 + 1,
            &refs,
            &inputs,
        );
        for sc in &new {
            self.made.push(sc.l2_height, sc.hash, sc.state_root);
        }
        made.extend(new);
        pending.clear();
        Ok(())
    }

    /// The queue of the next block, started afresh once that block is made.
    fn queue(&mut self) -> &mut Queued {
        let next = self.state.tip.0 + 1;
        if self.state.queued.at != next {
            self.state.queued = Queued {
                at: next,
                ..Queued::default()
            };
        }
        &mut self.state.queued
    }

    /// `dev_sendTransaction`: `tx` goes into the next block; returns its height.
    pub fn queue_tx(&mut self, tx: Vec<u8>) -> u64 {
        let q = self.queue();
        q.txs.push(tx);
        q.at
    }

    /// `dev_addDeposit`: `deposit` goes into the next block; returns its height.
    pub fn queue_deposit(&mut self, deposit: Vec<u8>) -> u64 {
        let q = self.queue();
        q.deposits.push(deposit);
        q.at
    }

    /// `dev_setNextTimestamp`: the next block has timestamp `t` and the ones
    /// after it count on from there; returns the next block's height. Refuses
    /// a time before the newest block's.
    pub fn set_next_timestamp(&mut self, t: u64) -> Result<u64, String> {
        let newest = block::timestamp(self.state.tip.0, self.state.timestamp_offset);
        if t < newest {
            return Err(format!(
                "`timestamp` {t} is before the newest block's timestamp {newest} (height {}); \
                 give {newest} or later",
                self.state.tip.0
            ));
        }
        let next = self.state.tip.0 + 1;
        let offset = i128::from(t) - i128::from(schedule::GENESIS_TIMESTAMP) - i128::from(next);
        self.state.timestamp_offset = i64::try_from(offset).map_err(|_| {
            format!("`timestamp` {t} is too far in the future; give a unix time in seconds")
        })?;
        Ok(next)
    }

    /// `dev_setL1FeeRate`: every block from the next one on carries `rate`;
    /// returns the next block's height.
    pub fn set_l1_fee_rate(&mut self, rate: u128) -> u64 {
        self.state.l1_fee_rate = Some(rate);
        self.state.tip.0 + 1
    }

    fn source_err(e: LedgerError) -> SourceError {
        SourceError::unreachable("devnet cannot read the ledger", e)
    }
}

/// What [`da::make_slot`] reads: the devnet (its settings, its plans, the
/// hashes and state roots of the blocks made in the batch being made, its
/// DA chain) and the ledger it feeds (the blocks stored).
struct View<'a, R: LedgerRead> {
    reader: &'a R,
    devnet: &'a Devnet,
}

impl<'a, R: LedgerRead> View<'a, R> {
    fn new(reader: &'a R, devnet: &'a Devnet) -> Self {
        View { reader, devnet }
    }

    /// `pick` of the block made at `h` while it is in the window, else
    /// what `stored` reads of it from the ledger (`what` names it).
    fn made_or_stored(
        &self,
        h: u64,
        what: &str,
        pick: fn(&(Hash, Hash)) -> Hash,
        stored: impl FnOnce(&R) -> Result<Option<Hash>, LedgerError>,
    ) -> Result<Hash, SourceError> {
        match self.devnet.made.get(h) {
            Some(made) => Ok(pick(made)),
            None => stored(self.reader)
                .map_err(Devnet::source_err)?
                .ok_or_else(|| da::missing(what, h)),
        }
    }

    /// The hash of block `h` (>= 1).
    fn hash(&self, h: u64) -> Result<Hash, SourceError> {
        self.made_or_stored(h, "hash", |m| m.0, |r| r.hash_at(h))
    }

    /// The state root after block `h` (the genesis state root for 0).
    fn state_root(&self, h: u64) -> Result<Hash, SourceError> {
        if h == 0 {
            return Ok(schedule::genesis_state_root(self.devnet.config.seed));
        }
        self.made_or_stored(h, "state root", |m| m.1, |r| r.state_root_at(h))
    }

    /// The hash of DA slot `n`.
    fn slot_hash(&self, n: u64) -> Result<Hash, SourceError> {
        Ok(self.devnet.slot_ref(n)?.hash)
    }

    /// The sequencer's DA public key (33 bytes).
    fn sequencer_da_key(&self) -> Vec<u8> {
        match &self.devnet.chain {
            Some(chain) => chain.sequencer_da_key(),
            None => schedule::sequencer_da_public_key(self.devnet.config.seed),
        }
    }
}

impl L2Source for Devnet {
    fn first_slot(&mut self) -> Result<Option<u64>, SourceError> {
        Ok(Some(self.genesis))
    }

    fn head(&mut self) -> Result<u64, SourceError> {
        Ok(self.target_height())
    }

    fn blocks(&mut self, from: u64, to: u64) -> Result<Vec<SoftConfirmation>, SourceError> {
        self.reload_if_dirty()?;
        let head = self.target_height();
        let to = to.min(head);
        if from > to {
            return Ok(Vec::new());
        }
        // The devnet makes blocks in order: a request that starts below its
        // tip is answered from the ledger (a sync thread retrying after a
        // failed write), one above its tip makes the blocks in between first.
        if from <= self.state.tip.0 {
            let reader = self.ledger.reader().map_err(Self::source_err)?;
            let stored = reader
                .soft_confirmation_range(from, to.min(self.state.tip.0))
                .map_err(Self::source_err)?;
            let blocks: Vec<SoftConfirmation> = stored.into_iter().map_while(|b| b).collect();
            if !blocks.is_empty() {
                return Ok(blocks);
            }
            drop(reader);
            // Made but not stored (the sync thread rejected them): make again
            // from the stored head, with the DA timeline as the ledger has it.
            self.reload()?;
        }
        let first = self.state.tip.0 + 1;
        let made = self.make(first, to).inspect_err(|_| self.dirty = true)?;
        if let Some(last) = made.last() {
            self.state.tip = (last.l2_height, last.hash, last.state_root);
        }
        Ok(made.into_iter().filter(|b| b.l2_height >= from).collect())
    }

    fn genesis_state_root(&mut self) -> Result<Option<Hash>, SourceError> {
        Ok(Some(schedule::genesis_state_root(self.config.seed)))
    }

    fn blocks_per_pass(&self) -> Option<u64> {
        Some(self.config.blocks_per_pass)
    }
}

impl DaSource for Devnet {
    fn last_scanned(&mut self) -> Result<u64, SourceError> {
        // A slot's commitments and proof cover blocks made before it opened:
        // every slot up to the newest can be scanned once every block made
        // is stored; until then, the slots up to the stored head's.
        self.reload_if_dirty()?;
        let reader = self.ledger.reader().map_err(Self::source_err)?;
        let scanned = reader.last_scanned_l1().map_err(Self::source_err)?;
        self.state.timeline.forget_below(scanned + 1);
        if let Some(chain) = &self.chain {
            // Proofs name slots up to a proof gap back (read again if older).
            chain.forget_below(scanned.saturating_sub(4 * timeline::PROOF_GAP));
        }
        let stored = reader.head_height().map_err(Self::source_err)?;
        if self.state.tip.0 == 0 || stored == 0 {
            return Ok(0);
        }
        if stored >= self.state.tip.0 {
            self.made.release();
            return Ok(self.state.timeline.tip());
        }
        let head = reader.soft_confirmation(stored).map_err(Self::source_err)?;
        Ok(head.map_or(0, |sc| sc.da_slot_height))
    }

    fn made_with_blocks(&mut self) -> Option<u64> {
        // A regtest's slots are read back from bitcoind once mined: the
        // DA part of the pass scans them as a follower would.
        if self.chain.is_some() || self.dirty {
            return None;
        }
        Some(self.state.timeline.tip())
    }

    fn slot(&mut self, number: u64) -> Result<DaSlot, SourceError> {
        self.slots(number, number)?
            .pop()
            .ok_or_else(|| SourceError::bad_answer(format!("devnet made no DA slot {number}")))
    }

    fn slots(&mut self, from: u64, to: u64) -> Result<Vec<DaSlot>, SourceError> {
        // On a regtest, what is on chain, read as a follower reads it.
        if let Some(chain) = &self.chain {
            return chain.read_slots(from, to);
        }
        let reader = self.ledger.reader().map_err(Self::source_err)?;
        let view = View::new(&reader, self);
        (from..=to)
            .map(|n| {
                crate::os::give_way();
                let mut slot = da::make_slot(&view, n)?;
                slot.hash = Some(schedule::slot_hash(self.config.seed, n));
                Ok(slot)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Block `h` as `Made` keeps it: hash `[tag; 32]`, root `[!tag; 32]`.
    fn push(made: &mut Made, h: u64, tag: u8) {
        made.push(h, [tag; 32], [!tag; 32]);
    }

    #[test]
    fn made_keeps_the_newest_blocks_and_forgets_the_oldest() {
        let mut made = Made::default();
        let n = Made::KEPT as u64 + 10;
        for h in 1..=n {
            push(&mut made, h, (h % 251) as u8);
        }
        assert_eq!(made.get(10), None, "older than the window");
        assert_eq!(made.get(11), Some(&([11; 32], [!11; 32])));
        assert_eq!(made.get(n).map(|e| e.0), Some([(n % 251) as u8; 32]));
        assert_eq!(made.get(n + 1), None, "not made yet");
    }

    /// Blocks `1..=n`, each with tag 1.
    fn made_up_to(n: u64) -> Made {
        let mut made = Made::default();
        for h in 1..=n {
            push(&mut made, h, 1);
        }
        made
    }

    #[test]
    fn released_it_holds_nothing_and_is_filled_again() {
        let mut made = made_up_to(5000);
        made.release();
        assert_eq!((made.blocks.capacity(), made.get(5000)), (0, None));
        push(&mut made, 5001, 2);
        assert_eq!(made.get(5001).map(|e| e.0), Some([2; 32]));
    }

    #[test]
    fn a_block_made_again_replaces_what_was_kept_from_its_height_up() {
        let mut made = made_up_to(20);
        // Made again from height 15 (after a revert, or a failed write).
        push(&mut made, 15, 2);
        assert_eq!(made.get(14).map(|e| e.0), Some([1; 32]));
        assert_eq!(made.get(15).map(|e| e.0), Some([2; 32]));
        assert_eq!(made.get(16), None, "16..=20 of the old chain are gone");
        // A height past a gap starts the window afresh.
        push(&mut made, 40, 3);
        assert_eq!(made.get(15), None);
        assert_eq!(made.get(40).map(|e| e.0), Some([3; 32]));
    }
}
