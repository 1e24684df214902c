//! The ledger: every byte ledgerd keeps, in one LMDB environment.
//!
//! This is the only module that talks to LMDB. The sync thread writes through
//! a [`LedgerWriter`] (one write transaction: nothing is visible until
//! [`LedgerWriter::commit`]); the server thread answers requests from a
//! [`LedgerReader`] (a read snapshot). Both share one [`Ledger`] as an
//! `Arc<Ledger>`. Every read method lives once, on the [`LedgerRead`] trait,
//! so a writer sees its own uncommitted writes through the same calls.
//!
//! Layout: [`tables`] names the tables with their key and value codecs;
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
//!   the process stops ([`OpenOptions::no_sync`]); its commits still
//!   survive a `kill -9` of the process (the OS has the pages), not a
//!   power loss.

mod apply;
pub mod args;
pub mod bitcoin_chunks;
pub mod bitcoin_headers;
pub mod codec;
pub mod frontier;
mod migrate;
pub mod rollback;
pub mod tables;
pub mod walk;

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use lmdb::{
    Cursor, DatabaseFlags, Environment, EnvironmentFlags, RoTransaction, RwTransaction,
    Transaction, WriteFlags,
};

use crate::chain::ForkTable;
use crate::types::{Hash, SequencerCommitment, SoftConfirmation, Status, VerifiedBatchProof};
pub use apply::ChainTip;
pub use bitcoin_chunks::BitcoinChunkRead;
pub use bitcoin_headers::{BitcoinHeaderRead, StoredHeader};
pub use frontier::{Frontier, FrontierMark, FrontierRead};

/// The ledger's layout version this build writes (`ledgerd_build_info`).
pub const LAYOUT_VERSION: u64 = tables::FORMAT_VERSION;
use codec::DecodeError;
pub use rollback::Cut;
use tables::{
    Commitments, DaSlots, Dbs, Meta, MetaKey, MetaValue, Proofs, ScByHashPrefix, SoftConfirmations,
    StatusHeights, StatusTable, Table, ValueTable,
};

// LMDB cursor operations (`MDB_cursor_op`, stable C ABI values; the ffi crate
// is not re-exported by lmdb-rkv).
const MDB_LAST: u32 = 6;
const MDB_NEXT: u32 = 8;
const MDB_NEXT_DUP: u32 = 9;
const MDB_SET: u32 = 15;
const MDB_SET_RANGE: u32 = 17;

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

fn lmdb_err(context: impl FnOnce() -> String) -> impl FnOnce(lmdb::Error) -> LedgerError {
    move |source| LedgerError::Lmdb {
        context: context(),
        source,
    }
}

fn corrupt<T: Table>(key: &T::Key, e: DecodeError) -> LedgerError {
    LedgerError::Corrupt {
        table: T::NAME,
        key: T::show(key),
        reason: e.0,
    }
}

/// How to open a ledger.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// Open without ever writing (another process may be writing).
    pub read_only: bool,
    /// The LMDB map size: the most the ledger can grow to. Address space
    /// only; the file grows as data is written.
    pub map_size: usize,
    /// Commit without waiting for the disk (`MDB_NOSYNC`): for a ledger
    /// that is removed when the process stops (`--ephemeral`), where
    /// surviving a power loss is of no use and every fsync only waits.
    pub no_sync: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            read_only: false,
            no_sync: false,
            map_size: if cfg!(target_pointer_width = "64") {
                1 << 40 // 1 TiB
            } else {
                1 << 30 // 1 GiB
            },
        }
    }
}

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
}

impl fmt::Debug for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ledger")
            .field("path", &self.path)
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl Ledger {
    /// Opens (creating it unless `read_only`) the ledger in `dir`, and every
    /// table in it.
    pub fn open(dir: &Path, opts: &OpenOptions) -> Result<Ledger, LedgerError> {
        let open_err = |reason: String| LedgerError::Open {
            path: dir.to_path_buf(),
            reason,
        };
        if !opts.read_only {
            fs::create_dir_all(dir).map_err(|source| LedgerError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let mut flags = EnvironmentFlags::NO_TLS | EnvironmentFlags::NO_READAHEAD;
        if opts.read_only {
            flags |= EnvironmentFlags::READ_ONLY;
        }
        if opts.no_sync {
            flags |= EnvironmentFlags::NO_SYNC;
        }
        let env = Environment::new()
            .set_flags(flags)
            .set_max_dbs((tables::ALL.len() + tables::OLD_TABLES.len()) as u32 + 1)
            .set_map_size(opts.map_size)
            .open(dir)
            .map_err(|e| open_err(e.to_string()))?;
        let db = |name: &str, flags: DatabaseFlags| {
            if opts.read_only {
                env.open_db(Some(name)).map_err(|e| match e {
                    lmdb::Error::NotFound => open_err(format!(
                        "table {name} is missing (was the ledger ever opened for writing?)"
                    )),
                    e => open_err(format!("table {name}: {e}")),
                })
            } else {
                env.create_db(Some(name), flags)
                    .map_err(|e| open_err(format!("table {name}: {e}")))
            }
        };
        // The layout version first, before any other table is created: a
        // data dir of another layout is refused untouched.
        let meta = db(Meta::NAME, Meta::FLAGS)?;
        let layout = check_layout(&env, meta, opts.read_only)
            .map_err(|reason| open_err(reason.to_string()))?;
        let dbs = Dbs {
            soft_confirmations: db(SoftConfirmations::NAME, SoftConfirmations::FLAGS)?,
            sc_by_hash_prefix: db(ScByHashPrefix::NAME, ScByHashPrefix::FLAGS)?,
            status: db(StatusTable::NAME, StatusTable::FLAGS)?,
            commitments: db(Commitments::NAME, Commitments::FLAGS)?,
            da_slots: db(DaSlots::NAME, DaSlots::FLAGS)?,
            proofs: db(Proofs::NAME, Proofs::FLAGS)?,
            meta,
            bitcoin_headers: db(tables::BitcoinHeaders::NAME, tables::BitcoinHeaders::FLAGS)?,
            bitcoin_chunks: db(tables::BitcoinChunks::NAME, tables::BitcoinChunks::FLAGS)?,
            status_heights: db(StatusHeights::NAME, StatusHeights::FLAGS)?,
        };
        let ledger = Ledger {
            env,
            dbs,
            path: dir.to_path_buf(),
            read_only: opts.read_only,
            block_key: OnceLock::new(),
        };
        match layout {
            Layout::Fresh if !opts.read_only => {
                let mut w = ledger.writer().map_err(|e| open_err(e.to_string()))?;
                w.put_meta(tables::META_FORMAT, &tables::FORMAT_VERSION)
                    .and_then(|()| w.commit())
                    .map_err(|e| open_err(e.to_string()))?;
            }
            Layout::Migrate(from) => migrate::upgrade(&ledger, from).map_err(|e| {
                open_err(format!(
                    "upgrading the data dir from layout version {from} to {} failed, \
                     and it was left as it was: {e}",
                    tables::FORMAT_VERSION
                ))
            })?,
            Layout::Fresh | Layout::Current => {}
        }
        Ok(ledger)
    }

    /// A read snapshot: sees everything committed before this call, nothing
    /// after.
    pub fn reader(&self) -> Result<LedgerReader<'_>, LedgerError> {
        let txn = self
            .env
            .begin_ro_txn()
            .map_err(lmdb_err(|| "beginning a read transaction".into()))?;
        Ok(LedgerReader { txn, ledger: self })
    }

    /// The one write transaction (a second `writer()` waits until the first
    /// is committed or dropped; do not ask for two on one thread).
    pub fn writer(&self) -> Result<LedgerWriter<'_>, LedgerError> {
        if self.read_only {
            return Err(LedgerError::ReadOnly {
                path: self.path.clone(),
            });
        }
        let txn = self
            .env
            .begin_rw_txn()
            .map_err(lmdb_err(|| "beginning a write transaction".into()))?;
        Ok(LedgerWriter { txn, ledger: self })
    }

    /// Bytes of `data.mdb` on disk (0 if it cannot be read).
    pub fn disk_size(&self) -> u64 {
        fs::metadata(self.path.join("data.mdb")).map_or(0, |m| m.len())
    }

    /// The data directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Entries and pages of every table, and the pages on LMDB's free list
    /// (for size reports such as `examples/ledger_stats`).
    pub fn table_stats(&self) -> Result<LedgerStats, LedgerError> {
        let r = self.reader()?;
        let dbs = &self.dbs;
        let handles = [
            (SoftConfirmations::NAME, dbs.soft_confirmations),
            (ScByHashPrefix::NAME, dbs.sc_by_hash_prefix),
            (StatusTable::NAME, dbs.status),
            (Commitments::NAME, dbs.commitments),
            (DaSlots::NAME, dbs.da_slots),
            (Proofs::NAME, dbs.proofs),
            (Meta::NAME, dbs.meta),
            (tables::BitcoinHeaders::NAME, dbs.bitcoin_headers),
            (tables::BitcoinChunks::NAME, dbs.bitcoin_chunks),
            (StatusHeights::NAME, dbs.status_heights),
        ];
        let mut tables = Vec::with_capacity(handles.len());
        let mut page_size = 0;
        for (name, db) in handles {
            let st = r
                .txn
                .stat(db)
                .map_err(lmdb_err(|| format!("reading the size of table {name}")))?;
            page_size = st.page_size();
            tables.push(TableStats {
                name,
                entries: st.entries() as u64,
                depth: st.depth(),
                branch_pages: st.branch_pages() as u64,
                leaf_pages: st.leaf_pages() as u64,
                overflow_pages: st.overflow_pages() as u64,
            });
        }
        let free_pages = self
            .env
            .freelist()
            .map_err(lmdb_err(|| "reading the free list".into()))? as u64;
        Ok(LedgerStats {
            page_size,
            tables,
            free_pages,
        })
    }
}

/// Sizes of a ledger's tables ([`Ledger::table_stats`]).
#[derive(Clone, Debug)]
pub struct LedgerStats {
    pub page_size: u32,
    pub tables: Vec<TableStats>,
    /// Pages LMDB holds for reuse (freed by earlier transactions).
    pub free_pages: u64,
}

/// Entries and pages of one table.
#[derive(Clone, Debug)]
pub struct TableStats {
    pub name: &'static str,
    pub entries: u64,
    pub depth: u32,
    pub branch_pages: u64,
    pub leaf_pages: u64,
    pub overflow_pages: u64,
}

/// A read snapshot of the ledger. Read through [`LedgerRead`].
pub struct LedgerReader<'l> {
    txn: RoTransaction<'l>,
    ledger: &'l Ledger,
}

/// The ledger's write transaction. Reads through [`LedgerRead`] see its own
/// writes. Dropping it without [`commit`](LedgerWriter::commit) writes
/// nothing.
pub struct LedgerWriter<'l> {
    txn: RwTransaction<'l>,
    ledger: &'l Ledger,
}

mod sealed {
    /// Access to the transaction under a reader or writer (not public API).
    pub trait Access {
        type Txn: lmdb::Transaction;
        fn txn(&self) -> &Self::Txn;
        fn dbs(&self) -> &super::Dbs;
        /// The ledger's block-key cache, for readers of committed data only
        /// (a writer may see a key its transaction never commits).
        fn block_key_cache(&self) -> Option<&std::sync::OnceLock<crate::types::Hash>>;
    }
}

impl<'l> sealed::Access for LedgerReader<'l> {
    type Txn = RoTransaction<'l>;
    fn txn(&self) -> &RoTransaction<'l> {
        &self.txn
    }
    fn dbs(&self) -> &Dbs {
        &self.ledger.dbs
    }
    fn block_key_cache(&self) -> Option<&OnceLock<Hash>> {
        Some(&self.ledger.block_key)
    }
}

impl<'l> sealed::Access for LedgerWriter<'l> {
    type Txn = RwTransaction<'l>;
    fn txn(&self) -> &RwTransaction<'l> {
        &self.txn
    }
    fn dbs(&self) -> &Dbs {
        &self.ledger.dbs
    }
    fn block_key_cache(&self) -> Option<&OnceLock<Hash>> {
        None
    }
}

impl LedgerRead for LedgerReader<'_> {}
impl LedgerRead for LedgerWriter<'_> {}

/// The raw stored value of `key` in table `T`, if any.
fn get<'t, R: sealed::Access, T: Table>(
    r: &'t R,
    key: &T::Key,
) -> Result<Option<&'t [u8]>, LedgerError> {
    match r.txn().get(T::db(r.dbs()), &T::key(key)) {
        Ok(v) => Ok(Some(v)),
        Err(lmdb::Error::NotFound) => Ok(None),
        Err(e) => Err(lmdb_err(|| format!("reading {} {}", T::NAME, T::show(key)))(e)),
    }
}

/// Why [`check_layout`] refused a data dir (shown after "ledger at DIR
/// cannot be opened: ").
enum LayoutError {
    Older(Option<u64>),
    Newer(u64),
    /// A layout this build upgrades, opened read-only (so it cannot be).
    NeedsUpgrade(u64),
    Unreadable(String),
}

/// What [`check_layout`] found.
#[derive(Debug, PartialEq, Eq)]
enum Layout {
    /// A new ledger (no version yet, no old table): the caller records the
    /// current version once its tables exist.
    Fresh,
    /// The current layout.
    Current,
    /// An older layout that `migrate::upgrade` brings to the current one.
    Migrate(u64),
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let current = tables::FORMAT_VERSION;
        match self {
            LayoutError::Older(v) => {
                let v = v.map_or("1".to_string(), |v| v.to_string());
                write!(
                    f,
                    "this data dir was written by an older ledgerd layout (version {v}, this build reads version {current}); re-sync it into a new --data-dir"
                )
            }
            LayoutError::NeedsUpgrade(v) => write!(
                f,
                "this data dir has ledgerd layout version {v}, which this build upgrades to version {current} in place, but it was opened read-only; start ledgerd on it once read-write (not serve-readonly) to upgrade it, with no older ledgerd writing to it"
            ),
            LayoutError::Newer(v) => write!(
                f,
                "this data dir was written by a newer ledgerd layout (version {v}, this build reads version {current}); run a newer ledgerd or re-sync it into a new --data-dir"
            ),
            LayoutError::Unreadable(reason) => {
                write!(f, "its layout version cannot be read: {reason}")
            }
        }
    }
}

/// Checks the layout version in `meta` before the other tables are opened.
/// A layout this build upgrades is refused when `read_only` (an upgrade
/// writes): reading it needs the upgrade first.
fn check_layout(
    env: &Environment,
    meta: lmdb::Database,
    read_only: bool,
) -> Result<Layout, LayoutError> {
    let txn = env
        .begin_ro_txn()
        .map_err(|e| LayoutError::Unreadable(e.to_string()))?;
    let stored = match txn.get(meta, &tables::META_FORMAT.name) {
        Ok(bytes) => Some(u64::decode(bytes).map_err(|e| LayoutError::Unreadable(e.0))?),
        Err(lmdb::Error::NotFound) => None,
        Err(e) => return Err(LayoutError::Unreadable(e.to_string())),
    };
    drop(txn);
    match stored {
        Some(v) if v == tables::FORMAT_VERSION => Ok(Layout::Current),
        Some(v) if (tables::OLDEST_MIGRATED..tables::FORMAT_VERSION).contains(&v) => {
            if read_only {
                Err(LayoutError::NeedsUpgrade(v))
            } else {
                Ok(Layout::Migrate(v))
            }
        }
        Some(v) if v < tables::FORMAT_VERSION => Err(LayoutError::Older(Some(v))),
        Some(v) => Err(LayoutError::Newer(v)),
        None => {
            for name in tables::OLD_TABLES {
                match env.open_db(Some(name)) {
                    Ok(_) => return Err(LayoutError::Older(None)),
                    Err(lmdb::Error::NotFound) => {}
                    Err(e) => return Err(LayoutError::Unreadable(e.to_string())),
                }
            }
            Ok(Layout::Fresh)
        }
    }
}

/// Reads `key` of table `T` and decodes it with `decode`.
fn get_decoded<R: sealed::Access, T: Table, V>(
    r: &R,
    key: &T::Key,
    decode: impl FnOnce(&[u8]) -> Result<V, DecodeError>,
) -> Result<Option<V>, LedgerError> {
    match get::<R, T>(r, key)? {
        None => Ok(None),
        Some(bytes) => decode(bytes).map(Some).map_err(|e| corrupt::<T>(key, e)),
    }
}

/// The value of `key` in table `T`, if any.
fn value<R: sealed::Access, T: ValueTable>(
    r: &R,
    key: &T::Key,
) -> Result<Option<T::Value>, LedgerError> {
    get_decoded::<R, T, _>(r, key, T::decode)
}

/// The value of a `meta` entry, if set.
fn meta<R: sealed::Access, V: MetaValue>(r: &R, key: MetaKey<V>) -> Result<Option<V>, LedgerError> {
    get_decoded::<R, Meta, _>(r, key.name, V::decode)
}

/// The ledger's block key (see [`codec`]), only read when a value needs it.
fn block_key_for<R: sealed::Access>(r: &R, bytes: &[u8]) -> Result<Option<Hash>, LedgerError> {
    if !codec::sc_omits_key(bytes) {
        return Ok(None);
    }
    let cache = r.block_key_cache();
    if let Some(key) = cache.and_then(OnceLock::get) {
        return Ok(Some(*key));
    }
    let key = meta(r, tables::META_BLOCK_KEY)?;
    if let (Some(cache), Some(key)) = (cache, key) {
        let _ = cache.set(key);
    }
    Ok(key)
}

fn decode_sc(
    height: u64,
    bytes: &[u8],
    block_key: Option<&Hash>,
) -> Result<SoftConfirmation, LedgerError> {
    codec::decode_soft_confirmation(bytes, height, block_key)
        .map_err(|e| corrupt::<SoftConfirmations>(&height, e))
}

/// Every read of the ledger, for a [`LedgerReader`] (a snapshot) and a
/// [`LedgerWriter`] (which sees its own uncommitted writes). Bring it into
/// scope with `use crate::ledger::LedgerRead;`.
pub trait LedgerRead: sealed::Access + Sized {
    /// The soft confirmation at `height`, if stored.
    fn soft_confirmation(&self, height: u64) -> Result<Option<SoftConfirmation>, LedgerError> {
        let Some(bytes) = get::<Self, SoftConfirmations>(self, &height)? else {
            return Ok(None);
        };
        let key = block_key_for(self, bytes)?;
        decode_sc(height, bytes, key.as_ref()).map(Some)
    }

    /// Heights `start..=end`: `end - start + 1` entries, `None` where nothing
    /// is stored (one cursor walk, not one lookup per height). Empty when
    /// `start > end`. The caller bounds the range length.
    fn soft_confirmation_range(
        &self,
        start: u64,
        end: u64,
    ) -> Result<Vec<Option<SoftConfirmation>>, LedgerError> {
        if start > end {
            return Ok(Vec::new());
        }
        let span = (end - start).saturating_add(1);
        let mut out: Vec<Option<SoftConfirmation>> =
            Vec::with_capacity(usize::try_from(span).unwrap_or(usize::MAX).min(4096));
        let ctx = || format!("reading soft_confirmations {start}..={end}");
        let mut cursor = self
            .txn()
            .open_ro_cursor(self.dbs().soft_confirmations)
            .map_err(lmdb_err(ctx))?;
        let mut block_key: Option<Option<Hash>> = None;
        let mut next = start; // the height the next pushed entry stands for
        for item in cursor.iter_from(SoftConfirmations::key(&start)) {
            let (k, bytes) = item.map_err(lmdb_err(ctx))?;
            let height = tables::decode_u64_key(k).ok_or_else(|| LedgerError::Corrupt {
                table: SoftConfirmations::NAME,
                key: hex::encode(k),
                reason: format!("key is {} bytes, not 8", k.len()),
            })?;
            if height > end {
                break;
            }
            while next < height {
                out.push(None);
                next += 1;
            }
            if block_key.is_none() && codec::sc_omits_key(bytes) {
                block_key = Some(block_key_for(self, bytes)?);
            }
            let key = block_key.flatten();
            out.push(Some(decode_sc(height, bytes, key.as_ref())?));
            if height == u64::MAX {
                return Ok(out);
            }
            next = height + 1;
        }
        while next <= end {
            out.push(None);
            if next == u64::MAX {
                break;
            }
            next += 1;
        }
        Ok(out)
    }

    /// The height of the soft confirmation with this hash, if stored.
    ///
    /// The index holds every height whose hash shares the first 8 bytes of
    /// `hash` (almost always one); the answer is the one whose stored block
    /// has exactly this hash.
    fn height_by_hash(&self, hash: &Hash) -> Result<Option<u64>, LedgerError> {
        let decode = |value: &[u8]| {
            <ScByHashPrefix as ValueTable>::decode(value)
                .map_err(|e| corrupt::<ScByHashPrefix>(hash, e))
        };
        // The common case, without a cursor: a plain get gives the first
        // (usually only) height under the prefix.
        let Some(first) = get::<Self, ScByHashPrefix>(self, hash)? else {
            return Ok(None);
        };
        let first = decode(first)?;
        if self.hash_at(first)?.as_ref() == Some(hash) {
            return Ok(Some(first));
        }
        // Another block's hash shares the prefix: walk every height under it.
        let ctx = || format!("reading {} {}", ScByHashPrefix::NAME, hex::encode(hash));
        let cursor = self
            .txn()
            .open_ro_cursor(self.dbs().sc_by_hash_prefix)
            .map_err(lmdb_err(ctx))?;
        let mut item = cursor.get(Some(&ScByHashPrefix::key(hash)), None, MDB_SET);
        loop {
            let value = match item {
                Ok((_, value)) => value,
                Err(lmdb::Error::NotFound) => return Ok(None),
                Err(e) => return Err(lmdb_err(ctx)(e)),
            };
            let height = decode(value)?;
            if height != first && self.hash_at(height)?.as_ref() == Some(hash) {
                return Ok(Some(height));
            }
            item = cursor.get(None, None, MDB_NEXT_DUP);
        }
    }

    /// The highest stored height; 0 when the ledger is empty.
    fn head_height(&self) -> Result<u64, LedgerError> {
        let ctx = || "finding the head of soft_confirmations".to_string();
        let cursor = self
            .txn()
            .open_ro_cursor(self.dbs().soft_confirmations)
            .map_err(lmdb_err(ctx))?;
        match cursor.get(None, None, MDB_LAST) {
            Ok((Some(k), _)) => tables::decode_u64_key(k).ok_or_else(|| LedgerError::Corrupt {
                table: SoftConfirmations::NAME,
                key: hex::encode(k),
                reason: format!("key is {} bytes, not 8", k.len()),
            }),
            Ok((None, _)) | Err(lmdb::Error::NotFound) => Ok(0),
            Err(e) => Err(lmdb_err(ctx)(e)),
        }
    }

    /// The hash of the soft confirmation at `height` (decodes only the hash).
    fn hash_at(&self, height: u64) -> Result<Option<Hash>, LedgerError> {
        get_decoded::<Self, SoftConfirmations, _>(self, &height, codec::sc_hash)
    }

    /// The state root of the soft confirmation at `height` (decodes only it).
    fn state_root_at(&self, height: u64) -> Result<Option<Hash>, LedgerError> {
        get_decoded::<Self, SoftConfirmations, _>(self, &height, codec::sc_state_root)
    }

    /// The status of the soft confirmation at `height`, if stored.
    fn status(&self, height: u64) -> Result<Option<Status>, LedgerError> {
        value::<Self, StatusTable>(self, &height)
    }

    /// The commitments found on DA slot `slot`; `None` when none are stored.
    fn commitments_on_slot(
        &self,
        slot: u64,
    ) -> Result<Option<Vec<SequencerCommitment>>, LedgerError> {
        value::<Self, Commitments>(self, &slot)
    }

    /// The number of the DA slot with this hash, if recorded.
    fn slot_by_hash(&self, hash: &Hash) -> Result<Option<u64>, LedgerError> {
        value::<Self, DaSlots>(self, hash)
    }

    /// Every proof verified on DA slot `slot`, in the order they were
    /// verified; empty when there is none.
    fn proofs_on_slot(&self, slot: u64) -> Result<Vec<VerifiedBatchProof>, LedgerError> {
        Ok(value::<Self, Proofs>(self, &slot)?.unwrap_or_default())
    }

    /// The proof verified last on DA slot `slot`, if any (decodes only it).
    fn last_proof_on_slot(&self, slot: u64) -> Result<Option<VerifiedBatchProof>, LedgerError> {
        Ok(get_decoded::<Self, Proofs, _>(self, &slot, codec::decode_last_proof)?.flatten())
    }

    /// The proof verified last on the highest DA slot that has one, if any.
    fn last_proof(&self) -> Result<Option<VerifiedBatchProof>, LedgerError> {
        match meta(self, tables::META_LAST_PROOF_SLOT)? {
            Some(slot) => self.last_proof_on_slot(slot),
            None => Ok(None),
        }
    }

    /// The proof verified first on the highest DA slot that has one, if any
    /// (what a Citrea v0.6 node answers as its last verified proof).
    fn first_proof_on_last_slot(&self) -> Result<Option<VerifiedBatchProof>, LedgerError> {
        match meta(self, tables::META_LAST_PROOF_SLOT)? {
            Some(slot) => Ok(self.proofs_on_slot(slot)?.into_iter().next()),
            None => Ok(None),
        }
    }

    /// The genesis state root, once known.
    fn genesis_state_root(&self) -> Result<Option<Hash>, LedgerError> {
        meta(self, tables::META_GENESIS_ROOT)
    }

    /// The last scanned L1 height; 0 when unset.
    fn last_scanned_l1(&self) -> Result<u64, LedgerError> {
        Ok(meta(self, tables::META_LAST_L1)?.unwrap_or(0))
    }

    /// The fork table the stored chain was verified by, once pinned (see
    /// [`LedgerWriter::pin_fork_table`]).
    fn fork_table(&self) -> Result<Option<ForkTable>, LedgerError> {
        meta(self, tables::META_FORK_TABLE)
    }

    /// The sequencer public key, once set.
    fn sequencer_pubkey(&self) -> Result<Option<[u8; 32]>, LedgerError> {
        meta(self, tables::META_SEQ_PUBKEY)
    }

    /// How many commitments were ever stored (they are indexed from 0).
    fn commitment_count(&self) -> Result<u64, LedgerError> {
        Ok(meta(self, tables::META_COMMIT_COUNT)?.unwrap_or(0))
    }

    /// The highest height whose status is Finalized or Proven; 0 when none.
    fn finalized_height(&self) -> Result<u64, LedgerError> {
        Ok(meta(self, tables::META_FINALIZED)?.unwrap_or(0))
    }

    /// The highest height whose status is Proven; 0 when none.
    fn proven_height(&self) -> Result<u64, LedgerError> {
        Ok(meta(self, tables::META_PROVEN)?.unwrap_or(0))
    }

    /// How many stored blocks were accepted without their transaction
    /// bodies (`--allow-missing-tx-bodies`).
    fn blocks_without_bodies(&self) -> Result<u64, LedgerError> {
        Ok(meta(self, tables::META_WITHOUT_BODIES)?.unwrap_or(0))
    }

    /// The seed of the devnet chain stored here, if a devnet wrote it.
    fn devnet_seed(&self) -> Result<Option<u64>, LedgerError> {
        meta(self, tables::META_DEVNET_SEED)
    }

    /// A free meta entry stored with [`LedgerWriter::set_meta_bytes`].
    fn meta_bytes(&self, key: &str) -> Result<Option<Vec<u8>>, LedgerError> {
        let key = format!("{}{key}", tables::USER_PREFIX);
        Ok(get::<Self, Meta>(self, &key)?.map(<[u8]>::to_vec))
    }
}

impl LedgerWriter<'_> {
    fn put<T: Table>(
        &mut self,
        key: &T::Key,
        value: &[u8],
        flags: WriteFlags,
    ) -> Result<(), LedgerError> {
        let db = T::db(&self.ledger.dbs);
        self.txn
            .put(db, &T::key(key), &value, flags)
            .map_err(lmdb_err(|| format!("writing {} {}", T::NAME, T::show(key))))
    }

    /// Appends `key` (expected to be above every stored key); falls back to
    /// an ordinary insert when it is not. `Ok(false)` when `key` is stored.
    fn append_new<T: Table>(&mut self, key: &T::Key, value: &[u8]) -> Result<bool, LedgerError> {
        let db = T::db(&self.ledger.dbs);
        let k = T::key(key);
        // APPEND keeps pages full for in-order inserts (an ordinary insert
        // splits pages in half); LMDB refuses it with KeyExist when the key
        // is not above the last one.
        let first = self.txn.put(db, &k, &value, WriteFlags::APPEND);
        let second = match first {
            Err(lmdb::Error::KeyExist) => self.txn.put(db, &k, &value, WriteFlags::NO_OVERWRITE),
            other => other,
        };
        match second {
            Ok(()) => Ok(true),
            Err(lmdb::Error::KeyExist) => Ok(false),
            Err(e) => Err(lmdb_err(|| format!("writing {} {}", T::NAME, T::show(key)))(e)),
        }
    }

    fn put_value<T: ValueTable>(
        &mut self,
        key: &T::Key,
        value: &T::Value,
        flags: WriteFlags,
    ) -> Result<(), LedgerError> {
        self.put::<T>(key, &T::encode(value), flags)
    }

    fn put_meta<V: MetaValue>(&mut self, key: MetaKey<V>, value: &V) -> Result<(), LedgerError> {
        self.put::<Meta>(key.name, &value.encode(), WriteFlags::empty())
    }

    fn raise_meta_u64(&mut self, key: MetaKey<u64>, value: u64) -> Result<(), LedgerError> {
        match meta(self, key)? {
            Some(old) if old >= value => Ok(()),
            _ => self.put_meta(key, &value),
        }
    }

    /// Stores a new soft confirmation, its hash index entry and status
    /// Trusted. Refuses (`AlreadyStored`) a height that is already stored.
    pub fn put_soft_confirmation(&mut self, sc: &SoftConfirmation) -> Result<(), LedgerError> {
        let stored_key = meta(self, tables::META_BLOCK_KEY)?;
        // The first block's key becomes the ledger's block key.
        let block_key = stored_key.unwrap_or(sc.pub_key);
        let value = codec::encode_soft_confirmation(sc, Some(&block_key));
        if !self.append_new::<SoftConfirmations>(&sc.l2_height, &value)? {
            return Err(LedgerError::AlreadyStored(sc.l2_height));
        }
        if stored_key.is_none() {
            self.put_meta(tables::META_BLOCK_KEY, &block_key)?;
        }
        // A duplicate of the prefix when another block's hash shares it.
        self.put_value::<ScByHashPrefix>(&sc.hash, &sc.l2_height, WriteFlags::empty())?;
        // A status already there (it cannot be, without a block) is kept:
        // statuses never move backwards.
        self.append_new::<StatusTable>(&sc.l2_height, &StatusTable::encode(&Status::Trusted))?;
        Ok(())
    }

    /// For every stored height in `from..=to`, sets its status to the higher
    /// of the stored one and `status` (never lowers it), and moves
    /// `finalized_height` / `proven_height` up to match.
    pub fn raise_status(&mut self, from: u64, to: u64, status: Status) -> Result<(), LedgerError> {
        if from > to {
            return Ok(());
        }
        let ctx = || format!("raising status of {from}..={to}");
        let mut highest: Option<u64> = None;
        {
            let db = self.ledger.dbs.status;
            let mut cursor = self.txn.open_rw_cursor(db).map_err(lmdb_err(ctx))?;
            let mut item = cursor.get(Some(&StatusTable::key(&from)), None, MDB_SET_RANGE);
            loop {
                let (k, v) = match item {
                    Ok((Some(k), v)) => (k, v),
                    Ok((None, _)) | Err(lmdb::Error::NotFound) => break,
                    Err(e) => return Err(lmdb_err(ctx)(e)),
                };
                let height = tables::decode_u64_key(k).ok_or_else(|| LedgerError::Corrupt {
                    table: StatusTable::NAME,
                    key: hex::encode(k),
                    reason: format!("key is {} bytes, not 8", k.len()),
                })?;
                if height > to {
                    break;
                }
                let old = StatusTable::decode(v).map_err(|e| corrupt::<StatusTable>(&height, e))?;
                if old < status {
                    cursor
                        .put(
                            &StatusTable::key(&height),
                            &StatusTable::encode(&status),
                            WriteFlags::CURRENT,
                        )
                        .map_err(lmdb_err(ctx))?;
                }
                highest = Some(height);
                item = cursor.get(None, None, MDB_NEXT);
            }
        }
        if let Some(h) = highest {
            if status >= Status::Finalized {
                self.raise_meta_u64(tables::META_FINALIZED, h)?;
            }
            if status >= Status::Proven {
                self.raise_meta_u64(tables::META_PROVEN, h)?;
            }
        }
        Ok(())
    }

    /// Appends `commitments` to the list of DA slot `slot` and adds their
    /// number to `commitment_count`. Nothing is stored for an empty slice.
    pub fn add_commitments(
        &mut self,
        slot: u64,
        commitments: &[SequencerCommitment],
    ) -> Result<(), LedgerError> {
        if commitments.is_empty() {
            return Ok(());
        }
        let mut list = self.commitments_on_slot(slot)?.unwrap_or_default();
        list.extend_from_slice(commitments);
        self.put_value::<Commitments>(&slot, &list, WriteFlags::empty())?;
        let count = self.commitment_count()? + commitments.len() as u64;
        self.put_meta(tables::META_COMMIT_COUNT, &count)
    }

    /// Records the hash of DA slot `slot`.
    pub fn put_da_slot_hash(&mut self, slot: u64, hash: &Hash) -> Result<(), LedgerError> {
        self.put_value::<DaSlots>(hash, &slot, WriteFlags::empty())
    }

    /// Appends `proof` to the proofs verified on DA slot `slot` (the ones
    /// before it are kept) and moves the last proof slot up to `slot`.
    pub fn put_proof(&mut self, slot: u64, proof: &VerifiedBatchProof) -> Result<(), LedgerError> {
        let mut list = self.proofs_on_slot(slot)?;
        list.push(proof.clone());
        self.put_value::<Proofs>(&slot, &list, WriteFlags::empty())?;
        self.raise_meta_u64(tables::META_LAST_PROOF_SLOT, slot)
    }

    /// Sets the genesis state root.
    pub fn set_genesis_state_root(&mut self, root: &Hash) -> Result<(), LedgerError> {
        self.put_meta(tables::META_GENESIS_ROOT, root)
    }

    /// Sets the last scanned L1 height.
    pub fn set_last_scanned_l1(&mut self, height: u64) -> Result<(), LedgerError> {
        self.put_meta(tables::META_LAST_L1, &height)
    }

    /// Sets the sequencer public key.
    pub fn set_sequencer_pubkey(&mut self, key: &[u8; 32]) -> Result<(), LedgerError> {
        self.put_meta(tables::META_SEQ_PUBKEY, key)
    }

    /// Pins the fork table the chain is verified by. A ledger pinned to
    /// another table refuses it (`OtherForkTable`): blocks stored by one
    /// table's rules cannot be continued by another's. A ledger that holds
    /// blocks but no table was written before tables were pinned, by the
    /// Kumquat-only rules, and is pinned to those.
    pub fn pin_fork_table(&mut self, wanted: &ForkTable) -> Result<(), LedgerError> {
        let stored = match self.fork_table()? {
            Some(t) => Some(t),
            None if self.head_height()? > 0 => Some(ForkTable::KUMQUAT_ONLY),
            None => None,
        };
        match stored {
            Some(stored) if stored != *wanted => Err(LedgerError::OtherForkTable {
                path: self.ledger.path().to_path_buf(),
                stored,
                wanted: *wanted,
            }),
            _ => self.put_meta(tables::META_FORK_TABLE, wanted),
        }
    }

    /// Counts `n` more blocks accepted without their transaction bodies.
    pub fn add_blocks_without_bodies(&mut self, n: u64) -> Result<(), LedgerError> {
        let total = self.blocks_without_bodies()? + n;
        self.put_meta(tables::META_WITHOUT_BODIES, &total)
    }

    /// Records which devnet chain this data dir holds.
    pub fn set_devnet_seed(&mut self, seed: u64) -> Result<(), LedgerError> {
        self.put_meta(tables::META_DEVNET_SEED, &seed)
    }

    /// Sets a free meta entry (read back with [`LedgerRead::meta_bytes`]).
    /// Free entries live apart from the ledger's own settings.
    pub fn set_meta_bytes(&mut self, key: &str, value: &[u8]) -> Result<(), LedgerError> {
        let key = format!("{}{key}", tables::USER_PREFIX);
        self.put::<Meta>(&key, value, WriteFlags::empty())
    }

    /// Makes every write of this transaction durable and visible, at once.
    pub fn commit(self) -> Result<(), LedgerError> {
        self.txn
            .commit()
            .map_err(lmdb_err(|| "committing a write transaction".into()))
    }
}

#[cfg(test)]
mod tests;
