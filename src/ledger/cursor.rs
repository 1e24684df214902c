//! Reading a table in key order, forwards or back: the one place a cursor
//! walks a table, and the check that a key read back has the length its
//! table stores. Point reads (`get`) need no cursor.

use std::ops::ControlFlow;

use lmdb::{Cursor, Transaction};

use super::sealed::Access;
use super::tables::{self, KeyCodec, Table, ValueTable};
use super::{corrupt, lmdb_err, LedgerError, MDB_LAST, MDB_PREV, MDB_SET_RANGE};

/// An entry a cursor step found: `None` past either end.
pub(super) type Entry<'t> = Option<(&'t [u8], &'t [u8])>;

/// The entry a cursor step landed on (`None` past either end); a failure
/// of the step is said with `ctx`.
pub(super) fn entry<'t>(
    step: lmdb::Result<(Option<&'t [u8]>, &'t [u8])>,
    ctx: impl FnOnce() -> String,
) -> Result<Entry<'t>, LedgerError> {
    match step {
        Ok((Some(k), v)) => Ok(Some((k, v))),
        Ok((None, _)) | Err(lmdb::Error::NotFound) => Ok(None),
        Err(e) => Err(lmdb_err(ctx)(e)),
    }
}

/// Calls `f` with each entry of `T`, key and value, in reverse key order
/// from the last whose key is below `above` (the last of all when `None`),
/// until `f` breaks; a failure of a step is said with `ctx`.
pub(super) fn walk_back<R: Access, T: Table>(
    r: &R,
    above: Option<&[u8]>,
    ctx: impl Fn() -> String,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<ControlFlow<()>, LedgerError>,
) -> Result<(), LedgerError> {
    let cursor = r
        .txn()
        .open_ro_cursor(T::db(r.dbs()))
        .map_err(lmdb_err(&ctx))?;
    // The first key at or above `above`, then one back.
    let step = match above.map(|above| cursor.get(Some(above), None, MDB_SET_RANGE)) {
        Some(Ok(_)) => cursor.get(None, None, MDB_PREV),
        None | Some(Err(lmdb::Error::NotFound)) => cursor.get(None, None, MDB_LAST),
        Some(Err(e)) => return Err(lmdb_err(ctx)(e)),
    };
    let mut item = entry(step, &ctx)?;
    while let Some((k, v)) = item {
        if f(k, v)?.is_break() {
            break;
        }
        item = entry(cursor.get(None, None, MDB_PREV), &ctx)?;
    }
    Ok(())
}

/// Calls `f` with each entry of `T`, key and value, in key order from
/// `from` (the first key when `None`), until `f` breaks.
pub(super) fn walk_from<R: Access, T: Table>(
    r: &R,
    from: Option<&T::Key>,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<ControlFlow<()>, LedgerError>,
) -> Result<(), LedgerError> {
    let ctx = || format!("walking {}", T::NAME);
    let mut cursor = r
        .txn()
        .open_ro_cursor(T::db(r.dbs()))
        .map_err(lmdb_err(ctx))?;
    let entries = match from {
        Some(key) => cursor.iter_from(T::key(key)),
        None => cursor.iter_start(),
    };
    for entry in entries {
        let (k, v) = entry.map_err(lmdb_err(ctx))?;
        if f(k, v)?.is_break() {
            break;
        }
    }
    Ok(())
}

/// Calls `f` with every entry of `T`, in key order.
pub(super) fn walk<R: Access, T: Table>(
    r: &R,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<(), LedgerError>,
) -> Result<(), LedgerError> {
    walk_from::<R, T>(r, None, |k, v| f(k, v).map(ControlFlow::Continue))
}

/// Calls `f` with each entry of `T`, its key and value decoded, in key
/// order from `from` (the first key when `None`), until `f` breaks.
pub(super) fn walk_values<R: Access, T: ValueTable<Key: KeyCodec>>(
    r: &R,
    from: Option<&T::Key>,
    mut f: impl FnMut(T::Key, T::Value) -> Result<ControlFlow<()>, LedgerError>,
) -> Result<(), LedgerError> {
    walk_from::<R, T>(r, from, |k, v| {
        let want = size_of::<<T::Key as KeyCodec>::Bytes>();
        let key = T::Key::from_bytes(k).ok_or_else(|| bad_key::<T>(k, want))?;
        let value = T::decode(v).map_err(|e| corrupt::<T>(&key, e))?;
        f(key, value)
    })
}

/// A table's entries, key and value decoded.
pub(super) type Decoded<T> = Vec<(<T as Table>::Key, <T as ValueTable>::Value)>;

/// Every entry of `T`, its key and value decoded, in key order.
pub(super) fn entries<R: Access, T: ValueTable<Key: KeyCodec>>(
    r: &R,
) -> Result<Decoded<T>, LedgerError> {
    let mut out = Vec::new();
    walk_values::<R, T>(r, None, |k, v| {
        out.push((k, v));
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(out)
}

/// The keys of the u64-keyed table `T` from `from` on, in order (values
/// are not read).
pub(super) fn u64_keys<R: Access, T: Table<Key = u64>>(
    r: &R,
    from: u64,
) -> Result<Vec<u64>, LedgerError> {
    let mut keys = Vec::new();
    walk_from::<R, T>(r, Some(&from), |k, _| {
        keys.push(u64_key::<T>(k)?);
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(keys)
}

/// The last key of the u64-keyed table `T` (`None`: the table is empty).
pub(super) fn last_u64<R: Access, T: Table<Key = u64>>(r: &R) -> Result<Option<u64>, LedgerError> {
    let ctx = || format!("finding the last of {}", T::NAME);
    let mut last = None;
    walk_back::<R, T>(r, None, ctx, |k, _| {
        last = Some(u64_key::<T>(k)?);
        Ok(ControlFlow::Break(()))
    })?;
    Ok(last)
}

/// A key of `T` read back as the u64 it stores (big-endian, 8 bytes).
pub(super) fn u64_key<T: Table>(k: &[u8]) -> Result<u64, LedgerError> {
    tables::decode_u64_key(k).ok_or_else(|| bad_key::<T>(k, 8))
}

/// A key of `T` that is not the `want` bytes the table stores: the
/// ledger is corrupt.
pub(super) fn bad_key<T: Table>(k: &[u8], want: usize) -> LedgerError {
    LedgerError::Corrupt {
        table: T::NAME,
        key: hex::encode(k),
        reason: format!("key is {} bytes, not {want}", k.len()),
    }
}
