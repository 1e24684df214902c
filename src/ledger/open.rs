//! Opening a ledger: the LMDB environment, the layout check (and the
//! in-place upgrade it may call for, `migrate.rs`), every table's handle,
//! and the tables' sizes.

use std::fmt;
use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use lmdb::{DatabaseFlags, Environment, EnvironmentFlags, Transaction};

use super::tables::{Dbs, Meta, MetaValue, Table};
use super::*;

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
    /// Such a ledger is also written through the map (`MDB_WRITEMAP`):
    /// a commit leaves its pages in the page cache where they were
    /// written, instead of copying each out of the heap with `pwrite`
    /// (on the development machine, `dev_mine 100000` took 8% less CPU;
    /// its file is then as long as the map, sparse, see
    /// [`Ledger::disk_size`]). Where the file system cannot hold such a
    /// file, the ledger is opened without it.
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
        // One writer per data dir, before anything in it is touched.
        let writer = (!opts.read_only)
            .then(|| lock::WriterLock::take(dir))
            .transpose()?;
        let mut flags = EnvironmentFlags::NO_TLS | EnvironmentFlags::NO_READAHEAD;
        if opts.read_only {
            flags |= EnvironmentFlags::READ_ONLY;
        }
        if opts.no_sync {
            flags |= EnvironmentFlags::NO_SYNC;
        }
        let open_env = |flags: EnvironmentFlags| {
            Environment::new()
                .set_flags(flags)
                .set_max_dbs((tables::ALL.len() + tables::OLD_TABLES.len()) as u32 + 1)
                .set_map_size(opts.map_size)
                .open(dir)
        };
        let env = if opts.no_sync && !opts.read_only {
            open_env(flags | EnvironmentFlags::WRITE_MAP).or_else(|e| {
                log::debug!(
                    "ledger {}: not written through the map ({e})",
                    dir.display()
                );
                open_env(flags)
            })
        } else {
            open_env(flags)
        }
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
        let mut handles = [meta; tables::ALL.len()];
        for (handle, (name, flags)) in handles.iter_mut().zip(tables::ALL) {
            if name != Meta::NAME {
                *handle = db(name, flags)?;
            }
        }
        let dbs = Dbs(handles);
        let ledger = Ledger {
            env,
            dbs,
            path: dir.to_path_buf(),
            read_only: opts.read_only,
            block_key: OnceLock::new(),
            _writer: writer,
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
        self.begun(self.env.begin_ro_txn(), "read", Some(&self.block_key))
    }

    /// The one write transaction (a second `writer()` waits until the first
    /// is committed or dropped; do not ask for two on one thread).
    pub fn writer(&self) -> Result<LedgerWriter<'_>, LedgerError> {
        if self.read_only {
            return Err(LedgerError::ReadOnly {
                path: self.path.clone(),
            });
        }
        self.begun(self.env.begin_rw_txn(), "write", None)
    }

    /// The `kind` transaction LMDB began (or failed to), on this ledger.
    fn begun<'l, T>(
        &'l self,
        txn: lmdb::Result<T>,
        kind: &str,
        block_key: Option<&'l OnceLock<Hash>>,
    ) -> Result<LedgerTxn<'l, T>, LedgerError> {
        Ok(LedgerTxn {
            txn: txn.map_err(lmdb_err(|| format!("beginning a {kind} transaction")))?,
            ledger: self,
            block_key,
        })
    }

    /// Bytes of `data.mdb` on disk (0 if it cannot be read): its length,
    /// or the blocks it holds where that is less (a ledger written through
    /// the map, see [`OpenOptions::no_sync`], has a sparse file as long as
    /// the map).
    pub fn disk_size(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(self.path.join("data.mdb")).map_or(0, |m| m.len().min(m.blocks() * 512))
    }

    /// The data directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Entries and pages of every table, and the pages on LMDB's free list
    /// (for size reports such as `examples/ledger_stats`).
    pub fn table_stats(&self) -> Result<LedgerStats, LedgerError> {
        let r = self.reader()?;
        let handles = self.dbs.named();
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

/// Why [`check_layout`] refused a data dir (shown after "ledger at DIR
/// cannot be opened: ").
pub(super) enum LayoutError {
    Older(Option<u64>),
    Newer(u64),
    /// A layout this build upgrades, opened read-only (so it cannot be).
    NeedsUpgrade(u64),
    Unreadable(String),
}

/// What [`check_layout`] found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Layout {
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
pub(super) fn check_layout(
    env: &Environment,
    meta: lmdb::Database,
    read_only: bool,
) -> Result<Layout, LayoutError> {
    let txn = env
        .begin_ro_txn()
        .map_err(|e| LayoutError::Unreadable(e.to_string()))?;
    let stored = match txn.get(meta, &tables::META_FORMAT.name) {
        Ok(bytes) => Some(u64::decode(bytes).map_err(|e| LayoutError::Unreadable(e.to_string()))?),
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
