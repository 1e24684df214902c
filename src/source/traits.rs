//! The two source traits, one per layer, and how a source fails.

use crate::types::{DaSlot, Hash, SoftConfirmation};

/// What went wrong with a source, in kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceErrorKind {
    /// It could not be reached, broke off, or did not answer in time.
    Unreachable,
    /// It answered something that cannot be read, or not what was asked.
    BadAnswer,
    /// It refused the request with this JSON-RPC error code.
    Refused(i64),
    /// It serves another chain than the one the data dir holds: refused
    /// for good, not retried ([`ChainIdentity`]).
    OtherChain,
}

/// A source that could not answer: it is down, slow, refused, or said
/// something we cannot read. The sync thread backs off and asks again.
///
/// `what` names the failure ("upstream http://a:1 cannot be reached");
/// `detail` is what varies from one try to the next (the OS error), so one
/// outage is one [`SourceError::state`] however its detail changes. It
/// displays as `what: detail`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    pub kind: SourceErrorKind,
    pub what: String,
    pub detail: Option<String>,
}

impl SourceError {
    pub fn new(kind: SourceErrorKind, what: impl Into<String>, detail: Option<String>) -> Self {
        SourceError {
            kind,
            what: what.into(),
            detail,
        }
    }

    /// Could not be reached; `detail` is the OS or HTTP client's reason.
    pub fn unreachable(what: impl Into<String>, detail: impl std::fmt::Display) -> Self {
        SourceError::new(SourceErrorKind::Unreachable, what, Some(detail.to_string()))
    }

    /// Answered something unreadable, or not what was asked.
    pub fn bad_answer(what: impl Into<String>) -> Self {
        SourceError::new(SourceErrorKind::BadAnswer, what, None)
    }

    /// [`SourceError::bad_answer`], with why it cannot be read.
    pub fn unreadable(what: impl Into<String>, detail: impl std::fmt::Display) -> Self {
        SourceError::new(SourceErrorKind::BadAnswer, what, Some(detail.to_string()))
    }

    /// Refused with a JSON-RPC error `code`; `detail` is its data.
    pub fn refused(code: i64, what: impl Into<String>, detail: Option<String>) -> Self {
        SourceError::new(SourceErrorKind::Refused(code), what, detail)
    }

    /// The failure without its detail: repeated tries that fail the same
    /// way (a connection reset, then refused: one outage) share a state,
    /// so the sync thread logs them once.
    pub fn state(&self) -> (SourceErrorKind, &str) {
        (self.kind, &self.what)
    }
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.detail {
            Some(detail) => write!(f, "{}: {detail}", self.what),
            None => f.write_str(&self.what),
        }
    }
}

impl std::error::Error for SourceError {}

/// What tells one L2 chain from another: its genesis state root
/// (`ledger_getL2GenesisStateRoot`) and the hash of its block 1
/// (`ledger_getSoftConfirmationByNumber [1]`), each once known. (The fork
/// table is the data dir's own, pinned when it was made: a node started
/// with another one refuses the data dir.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChainIdentity {
    pub genesis_root: Option<Hash>,
    pub block_one: Option<Hash>,
}

impl ChainIdentity {
    /// Whether both parts are known.
    pub fn complete(&self) -> bool {
        self.genesis_root.is_some() && self.block_one.is_some()
    }

    /// What differs between the chain held (`self`) and the one `served`:
    /// each part both know and that is not the same, as a phrase; `None`
    /// when nothing known differs (a part one side does not know yet, as
    /// on a new data dir or an upstream without block 1, is no difference).
    pub fn differs(&self, served: &ChainIdentity) -> Option<String> {
        let parts = [
            ("genesis state root", self.genesis_root, served.genesis_root),
            ("block 1", self.block_one, served.block_one),
        ];
        let differ: Vec<String> = parts
            .iter()
            .filter_map(|(name, held, theirs)| match (held, theirs) {
                (Some(h), Some(t)) if h != t => Some(format!(
                    "its {name} is {}, the data dir's is {}",
                    hex::encode(t),
                    hex::encode(h)
                )),
                _ => None,
            })
            .collect();
        (!differ.is_empty()).then(|| differ.join("; "))
    }

    /// Takes the parts of `other` this one does not know yet.
    pub fn learn(&mut self, other: &ChainIdentity) {
        self.genesis_root = self.genesis_root.or(other.genesis_root);
        self.block_one = self.block_one.or(other.block_one);
    }
}

/// The L2 chain: soft confirmations by height.
pub trait L2Source {
    /// The newest height the source has (0: none yet).
    fn head(&mut self) -> Result<u64, SourceError>;
    /// Blocks `from..=to` in height order. May return a shorter prefix (never
    /// an empty list while `from <= head`).
    fn blocks(&mut self, from: u64, to: u64) -> Result<Vec<SoftConfirmation>, SourceError>;
    /// The genesis state root, once the source knows it.
    fn genesis_state_root(&mut self) -> Result<Option<Hash>, SourceError>;
    /// The DA slot that L2 height 1 points at, once known: where DA
    /// scanning starts on an empty ledger (Citrea's full node asks its
    /// sequencer the same).
    fn first_slot(&mut self) -> Result<Option<u64>, SourceError>;
    /// Told when something this source sent failed verification (`why`),
    /// so a source with a choice of nodes can ask another.
    fn rejected(&mut self, _why: &str) {}
    /// Told which chain the data dir holds (as much of it as it holds),
    /// before the first request of a pass while it does not hold all of
    /// it: a source of nodes that may serve another chain (upstreams)
    /// refuses those; the default ignores it.
    fn hold_to(&mut self, _held: ChainIdentity) {}
    /// A handle that fetches block ranges from other threads, for a source
    /// that can answer several range requests at once (an upstream node);
    /// `None` (the default): ranges are fetched one at a time.
    fn parallel(&self) -> Option<Box<dyn RangeFetch<Vec<SoftConfirmation>>>> {
        None
    }
    /// Whether the source answers slowly (see [`super::upstream::pace`]): a pass
    /// then fetches the blocks first and leaves the DA slots to its DA part,
    /// so the head moves at the pace the source can answer.
    fn slow(&self) -> bool {
        false
    }
    /// At most this many blocks per sync pass (`None`, the default: up to
    /// the head the pass started with). A source that makes its DA slots
    /// along with its blocks (the devnet) sets it, so its slots are scanned
    /// between passes, not all after one long one.
    fn blocks_per_pass(&self) -> Option<u64> {
        None
    }
}

/// Fetches ranges (of blocks, or of DA slots) from any thread (see
/// [`L2Source::parallel`], [`DaSource::parallel_slots`]).
pub trait RangeFetch<T>: Send + Sync {
    /// `from..=to` in order; blocks may come as a shorter prefix.
    fn fetch(&self, from: u64, to: u64) -> Result<T, SourceError>;
    /// How many to ask for per request, at most `wanted` (the source's own
    /// range limit, once known).
    fn preferred_chunk(&self, wanted: u64) -> u64 {
        wanted
    }
    /// How many requests to keep in flight, at most `wanted` (fewer at a
    /// source that answers one at a time: see [`super::upstream::pace`]).
    fn in_flight(&self, wanted: usize) -> usize {
        wanted
    }
}

/// What [`DaSource::slots_each`] hands each slot to: false stops it.
pub type EachSlot<'a> = &'a mut dyn FnMut(DaSlot) -> bool;

/// The DA (layer-1) chain: slots with the commitments and proofs found on them.
pub trait DaSource {
    /// The newest slot the source has scanned (0: none yet).
    fn last_scanned(&mut self) -> Result<u64, SourceError>;
    /// Told when a slot this source sent failed verification (`why`), so a
    /// source with a choice of nodes can ask another.
    fn rejected(&mut self, _why: &str) {}
    /// Slot `number` (at most `last_scanned`).
    fn slot(&mut self, number: u64) -> Result<DaSlot, SourceError>;
    /// Slots `from..=to`, in order (a source may fetch them in one round trip).
    fn slots(&mut self, from: u64, to: u64) -> Result<Vec<DaSlot>, SourceError> {
        (from..=to).map(|n| self.slot(n)).collect()
    }
    /// Slots `from..=to`, in order, each handed to `each` (which returns
    /// false to stop); a source that reads them one by one hands each on as
    /// soon as it has it ([`DaSource::streams_slots`]). The default: the
    /// [`DaSource::slots`] answer, handed on once all came.
    fn slots_each(&mut self, from: u64, to: u64, each: EachSlot<'_>) -> Result<(), SourceError> {
        for slot in self.slots(from, to)? {
            if !each(slot) {
                break;
            }
        }
        Ok(())
    }
    /// Whether [`DaSource::slots_each`] hands slots on one by one as they
    /// are read (the P2P source): the DA pass then stores each as it comes,
    /// committing whenever no next one is waiting, so the scanned height
    /// moves block by block. `false` (the default): slots come a range at a
    /// time, committed as before.
    fn streams_slots(&self) -> bool {
        false
    }
    /// For a source that makes its DA slots along with its blocks (the
    /// devnet): the newest slot it can serve now, whether or not the blocks
    /// that slot's commitments and proofs cover are stored yet. The L2 part
    /// of a pass then applies such a slot after those blocks, in the same
    /// write transaction, instead of leaving it to the DA part. `None` (the
    /// default): slots up to [`DaSource::last_scanned`] when the pass began.
    fn made_with_blocks(&mut self) -> Option<u64> {
        None
    }
    /// A handle that fetches ranges of slots from other threads (see
    /// [`L2Source::parallel`]); `None` (the default): one at a time.
    fn parallel_slots(&self) -> Option<Box<dyn RangeFetch<Vec<DaSlot>>>> {
        None
    }
    /// For a source that reads the DA chain itself (Bitcoin): the block at
    /// each of `heights` (ascending, no repeats), `None` for a height the
    /// chain does not have yet, so soft confirmations can be checked against
    /// the blocks they name before they are stored. `Ok(None)` (the default):
    /// the source cannot tell (an upstream node serves no DA blocks).
    fn anchors(&mut self, _heights: &[u64]) -> Result<Option<Vec<Option<DaAnchor>>>, SourceError> {
        Ok(None)
    }
    /// For a source that reads the DA chain itself: the hash of the chain's
    /// block at `number` as of its last look at the chain
    /// ([`DaSource::last_scanned`]; `None`: the chain is not that long, or
    /// the source cannot tell), to check, after each look, that a slot
    /// already scanned is still on the chain (a reorg deeper than the
    /// finality depth otherwise). The chain must not move between a look
    /// and the next one: slots and anchors are read from it as it was seen.
    fn block_hash(&mut self, _number: u64) -> Result<Option<Hash>, SourceError> {
        Ok(None)
    }
}

/// What a soft confirmation must point at: a DA block's hash (Citrea's
/// `daSlotHash`, raw byte order) and its `daSlotTxsCommitment`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DaAnchor {
    pub hash: Hash,
    pub txs_commitment: Hash,
}
