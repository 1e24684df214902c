//! Where the sync thread gets blocks from: a chain source.
//!
//! Two traits, one per layer. The embedded devnet implements both, and so
//! does the upstream follower; the sync thread verifies whatever they return
//! before anything is written, so a source is never trusted.

use crate::types::{DaSlot, Hash, SoftConfirmation};

/// A source that could not answer: it is down, slow, or said something we
/// cannot read. The sync thread backs off and asks again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError(pub String);

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SourceError {}

/// The L2 chain: soft confirmations by height.
pub trait L2Source {
    /// The newest height the source has (0: none yet).
    fn head(&mut self) -> Result<u64, SourceError>;
    /// Blocks `from..=to` in height order. May return a shorter prefix (never
    /// an empty list while `from <= head`).
    fn blocks(&mut self, from: u64, to: u64) -> Result<Vec<SoftConfirmation>, SourceError>;
    /// The genesis state root, once the source knows it.
    fn genesis_state_root(&mut self) -> Result<Option<Hash>, SourceError>;
    /// Told when something this source sent failed verification (`why`),
    /// so a source with a choice of nodes can ask another.
    fn rejected(&mut self, _why: &str) {}
    /// A handle that fetches block ranges from other threads, for a source
    /// that can answer several range requests at once (an upstream node);
    /// `None` (the default): ranges are fetched one at a time.
    fn parallel(&self) -> Option<Box<dyn RangeFetch<Vec<SoftConfirmation>>>> {
        None
    }
    /// Whether the source answers slowly (see [`super::pace`]): a pass
    /// then fetches the blocks first and leaves the DA slots to its DA part,
    /// so the head moves at the pace the source can answer.
    fn slow(&self) -> bool {
        false
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
    /// source that answers one at a time: see [`super::pace`]).
    fn in_flight(&self, wanted: usize) -> usize {
        wanted
    }
}

/// The DA (layer-1) chain: slots with the commitments and proofs found on them.
pub trait DaSource {
    /// The newest slot the source has scanned (0: none yet).
    fn last_scanned(&mut self) -> Result<u64, SourceError>;
    /// The first slot worth scanning (the DA slot of L2 height 1, once known).
    fn first_slot(&mut self) -> Result<Option<u64>, SourceError>;
    /// Slot `number` (at most `last_scanned`).
    fn slot(&mut self, number: u64) -> Result<DaSlot, SourceError>;
    /// Slots `from..=to`, in order (a source may fetch them in one round trip).
    fn slots(&mut self, from: u64, to: u64) -> Result<Vec<DaSlot>, SourceError> {
        (from..=to).map(|n| self.slot(n)).collect()
    }
    /// A handle that fetches ranges of slots from other threads (see
    /// [`L2Source::parallel`]); `None` (the default): one at a time.
    fn parallel_slots(&self) -> Option<Box<dyn RangeFetch<Vec<DaSlot>>>> {
        None
    }
}
