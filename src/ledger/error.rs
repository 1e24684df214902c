//! The ledger's one error type, [`LedgerError`], and the helpers that make
//! its sentences from LMDB's errors and from values that do not decode.

use std::fmt;
use std::io;
use std::path::PathBuf;

use super::codec::DecodeError;
use super::tables::Table;
use crate::chain_rules::ForkTable;
use crate::types::Hash;

/// Why a ledger operation failed.
#[derive(Debug)]
pub enum LedgerError {
    /// The environment could not be opened (or is not a ledger we can read).
    Open { path: PathBuf, reason: String },
    /// The ledger directory could not be created.
    Io { path: PathBuf, source: io::Error },
    /// LMDB failed while doing `context`.
    Lmdb {
        context: String,
        source: lmdb::Error,
    },
    /// A stored value (or key) could not be decoded.
    Corrupt {
        table: &'static str,
        key: String,
        reason: String,
    },
    /// A soft confirmation at this height is already stored.
    AlreadyStored(u64),
    /// A write was attempted on a ledger opened read-only.
    ReadOnly { path: PathBuf },
    /// The chain in the data dir was verified by another fork table.
    OtherForkTable {
        path: PathBuf,
        stored: ForkTable,
        wanted: ForkTable,
    },
    /// Another process holds the data dir's writer lock (its PID, once
    /// it has written it): one process writes a ledger at a time.
    InUse { path: PathBuf, pid: Option<u32> },
}

impl fmt::Display for LedgerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LedgerError::Open { path, reason } => {
                write!(f, "ledger at {} cannot be opened: {reason}", path.display())
            }
            LedgerError::Io { path, source } => write!(
                f,
                "ledger directory {} cannot be created: {source}",
                path.display()
            ),
            LedgerError::Lmdb { context, source } => {
                write!(f, "ledger storage failed while {context}: {source}")
            }
            LedgerError::Corrupt { table, key, reason } => {
                let what = match *table {
                    "soft_confirmations" => "soft confirmation",
                    "sc_by_hash_prefix" => "height of soft confirmation hash",
                    "status" => "status of soft confirmation",
                    "commitments" => "commitment list of DA slot",
                    "da_slots" => "slot number of DA slot hash",
                    "proofs" => "verified batch proof list of DA slot",
                    "meta" => "ledger setting",
                    "status_heights" => "frontier entry",
                    _ => "entry",
                };
                write!(f, "stored {what} {key} is corrupt: {reason}")
            }
            LedgerError::AlreadyStored(h) => write!(
                f,
                "soft confirmation {h} is already stored, and the ledger never rewrites what it stores"
            ),
            LedgerError::ReadOnly { path } => write!(
                f,
                "ledger at {} was opened read-only and cannot be written",
                path.display()
            ),
            LedgerError::OtherForkTable {
                path,
                stored,
                wanted,
            } => write!(
                f,
                "the data dir {} holds a chain verified with {stored}, not {wanted}: \
                 pass --kumquat-height {} (or the --network it was synced with), or use another --data-dir",
                path.display(),
                stored.kumquat_height()
            ),
            LedgerError::InUse { path, pid } => {
                let who = pid.map_or("another process".to_string(), |p| format!("process {p}"));
                write!(
                    f,
                    "the data dir {} is in use: {who} writes the ledger in it, and one process \
                     writes a ledger at a time; stop that process first, or give this one another \
                     --data-dir (`ledgerd serve-readonly` serves a ledger another process writes)",
                    path.display()
                )
            }
        }
    }
}

impl std::error::Error for LedgerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LedgerError::Io { source, .. } => Some(source),
            LedgerError::Lmdb { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Why the commitments a proof proves cannot be picked from the DA slot its
/// `daSlotHash` names ([`super::LedgerRead::proof_commitments`]).
#[derive(Debug)]
pub enum ProofCommitmentsError {
    /// The ledger could not be read.
    Ledger(LedgerError),
    /// The named slot holds no verified commitments.
    NoCommitments { slot: u64, da_slot_hash: Hash },
    /// `sequencerCommitmentsRange` does not index the slot's commitments
    /// left after dropping the preproven ones.
    Range {
        range: (u64, u64),
        left: usize,
        slot: u64,
        preproven: Vec<u64>,
    },
}

impl fmt::Display for ProofCommitmentsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProofCommitmentsError::Ledger(e) => e.fmt(f),
            ProofCommitmentsError::NoCommitments { slot, da_slot_hash } => write!(
                f,
                "daSlotHash {} names DA slot {slot}, which holds no verified commitments",
                hex::encode(da_slot_hash)
            ),
            ProofCommitmentsError::Range {
                range: (a, b),
                left,
                slot,
                preproven,
            } => write!(
                f,
                "sequencerCommitmentsRange [{a}, {b}] does not index the {left} commitments of DA slot \
                 {slot} left after dropping the preproven ones {preproven:?}"
            ),
        }
    }
}

impl std::error::Error for ProofCommitmentsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProofCommitmentsError::Ledger(e) => Some(e),
            _ => None,
        }
    }
}

wrap_errors!(ProofCommitmentsError {
    Ledger(LedgerError),
});

pub(super) fn lmdb_err(
    context: impl FnOnce() -> String,
) -> impl FnOnce(lmdb::Error) -> LedgerError {
    move |source| LedgerError::Lmdb {
        context: context(),
        source,
    }
}

pub(super) fn corrupt<T: Table>(key: &T::Key, e: DecodeError) -> LedgerError {
    LedgerError::Corrupt {
        table: T::NAME,
        key: T::show(key),
        reason: e.to_string(),
    }
}
