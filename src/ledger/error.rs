//! The ledger's one error type, [`LedgerError`], and the helpers that make
//! its sentences from LMDB's errors and from values that do not decode.

use std::fmt;
use std::io;
use std::path::PathBuf;

use super::codec::DecodeError;
use super::tables::Table;
use crate::chain::ForkTable;

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
        reason: e.0,
    }
}
