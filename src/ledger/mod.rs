//! The ledger: every byte ledgerd keeps, in one LMDB environment.
//!
//! This is the only module that talks to LMDB. The sync thread writes through
//! a [`LedgerWriter`] (one write transaction: nothing is visible until
//! [`LedgerWriter::commit`]); the server thread answers requests from a
//! [`LedgerReader`] (a read snapshot). Both share one [`Ledger`] as an
//! `Arc<Ledger>`. Every read method lives once, on the [`LedgerRead`] trait,
//! so a writer sees its own uncommitted writes through the same calls.
//!
//! Layout: `tables.rs` names the tables with their key and value codecs;
//! [`codec`] holds the byte layouts (compact binary). `apply.rs` holds the
//! write rules every writer shares (a block with its indexes, a commitment
//! with the statuses it raises, a proof with the heights it proves) and
//! [`ChainTip`], where the stored chain ends. The ledger never rewrites a
//! stored block, and a block's status only moves forward. `migrate.rs`
//! upgrades a data dir of the previous layout version at open.
//!
//! Environment choices (see [`Ledger::open`]):
//! - `NO_TLS`: a reader's LMDB slot belongs to its transaction, not to its
//!   thread. Without it a thread may hold only one read transaction at a
//!   time (a second fails with `MDB_BAD_RSLOT`), which would make nested
//!   readers (a batch request, a writer thread peeking at committed state)
//!   fail. With it, any number of readers per thread is fine; the cost is
//!   one uncontended lock on the reader table per snapshot. Readers are
//!   `!Send` anyway, so each is created and dropped on one thread.
//! - `NO_READAHEAD`: lookups are random point reads; OS readahead would only
//!   pull useless pages into memory once the ledger outgrows RAM.
//! - Durable commits: no `NO_SYNC`, `MAP_ASYNC` or `WRITE_MAP`, so every
//!   committed transaction survives `kill -9` and power loss. The one
//!   exception is a ledger nothing outlives: `--ephemeral`'s, removed when
//!   the process stops ([`OpenOptions::no_sync`]), also written through
//!   the map (`WRITE_MAP`); its commits still survive a `kill -9` of the
//!   process (the OS has the pages), not a power loss.

mod apply;
pub mod args;
mod bitcoin_chunks;
mod bitcoin_headers;
mod bitcoin_peers;
pub mod codec;
mod cursor;
mod cut;
mod error;
mod frontier;
pub mod lock;
mod migrate;
mod open;
mod read;
mod tables;
pub mod walk;
mod write;

use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;

use lmdb::{Environment, RoTransaction, RwTransaction};

use crate::types::Hash;
pub use apply::ChainTip;
pub use bitcoin_chunks::BitcoinChunkRead;
pub use bitcoin_headers::{BitcoinHeaderRead, StoredHeader};
pub use bitcoin_peers::{BitcoinPeerRead, BookEntry};
pub use frontier::{FrontierMark, FrontierRead};
pub use tables::Frontier;

/// The ledger's layout version this build writes (`ledgerd_build_info`).
pub const LAYOUT_VERSION: u64 = tables::FORMAT_VERSION;
pub use cut::{Cut, STEPS};
use tables::Dbs;

// LMDB cursor operations (`MDB_cursor_op`, stable C ABI values; the ffi crate
// is not re-exported by lmdb-rkv): the one place the ledger's files take them.
const MDB_LAST: u32 = 6;
const MDB_NEXT: u32 = 8;
const MDB_NEXT_DUP: u32 = 9;
const MDB_PREV: u32 = 12;
const MDB_SET: u32 = 15;
const MDB_SET_RANGE: u32 = 17;

use error::{corrupt, lmdb_err};
pub use error::{LedgerError, ProofCommitmentsError};
pub use open::{LedgerStats, OpenOptions, TableStats};
pub use read::LedgerRead;
use read::{get, meta};

/// One ledger: an LMDB environment and its table handles.
///
/// `Send + Sync`: share it as `Arc<Ledger>`. Within one process open a data
/// directory once and share the handle (LMDB's rule); `read_only` is for
/// another process looking at a ledger a node is writing.
pub struct Ledger {
    env: Environment,
    dbs: Dbs,
    path: PathBuf,
    read_only: bool,
    /// The block key (meta `sc_key`) once a committed read has seen it: it
    /// is written with the first block and never changed, so readers need
    /// not look it up again for every block.
    block_key: OnceLock<Hash>,
    /// The data dir's writer lock, held while a ledger opened for writing
    /// lives (`None` when read-only).
    _writer: Option<lock::WriterLock>,
}

impl fmt::Debug for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ledger")
            .field("path", &self.path)
            .field("read_only", &self.read_only)
            .finish()
    }
}

/// A transaction on the ledger: a read snapshot ([`LedgerReader`]) or the
/// write transaction ([`LedgerWriter`]).
pub struct LedgerTxn<'l, T> {
    txn: T,
    ledger: &'l Ledger,
    /// The ledger's block-key cache, for readers of committed data only
    /// (a writer may see a key its transaction never commits).
    block_key: Option<&'l OnceLock<Hash>>,
}

/// A read snapshot of the ledger. Read through [`LedgerRead`].
pub type LedgerReader<'l> = LedgerTxn<'l, RoTransaction<'l>>;

/// The ledger's write transaction. Reads through [`LedgerRead`] see its own
/// writes. Dropping it without [`commit`](LedgerWriter::commit) writes
/// nothing.
pub type LedgerWriter<'l> = LedgerTxn<'l, RwTransaction<'l>>;

mod sealed {
    /// Access to the transaction under a reader or writer (not public API).
    pub trait Access {
        type Txn: lmdb::Transaction;
        fn txn(&self) -> &Self::Txn;
        fn dbs(&self) -> &super::Dbs;
        /// The ledger's block-key cache, for readers of committed data only.
        fn block_key_cache(&self) -> Option<&std::sync::OnceLock<crate::types::Hash>>;
    }
}

impl<T: lmdb::Transaction> sealed::Access for LedgerTxn<'_, T> {
    type Txn = T;
    fn txn(&self) -> &T {
        &self.txn
    }
    fn dbs(&self) -> &Dbs {
        &self.ledger.dbs
    }
    fn block_key_cache(&self) -> Option<&OnceLock<Hash>> {
        self.block_key
    }
}

impl<T: lmdb::Transaction> LedgerRead for LedgerTxn<'_, T> {}

#[cfg(test)]
mod tests;
