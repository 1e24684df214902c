//! Taking the ledger back to a cut, table by table, inside the caller's
//! write transaction (see `crate::rollback` for the command, which picks the
//! cut and recomputes the statuses by the write rules of `apply.rs`).
//!
//! A [`Cut`] keeps L2 heights `1..=height` and DA slots up to `slot`. Each
//! table has one step in [`STEPS`] that removes what the cut drops from it;
//! a new table adds its line there (a test fails until every table in
//! `tables::ALL` has one). [`LedgerWriter::reset_derived`] then clears what
//! the write rules derive (statuses, counts, commitments and proofs) so the
//! caller can apply the kept commitments and proofs again.

use std::collections::HashSet;
use std::ops::ControlFlow;

use super::cursor;
use super::tables::{
    self, BitcoinChunks, BitcoinHeaders, Commitments, DaSlots, Meta, Proofs, ScByHashPrefix,
    SoftConfirmations, StatusHeights, StatusTable, Table, ValueTable,
};
use super::walk::LedgerWalk;
use super::{lmdb_err, LedgerError, LedgerRead, LedgerWriter};
use crate::chain_rules::{block_hash, ForkTable};
use crate::types::{Hash, Status};

/// What a rollback keeps: L2 heights `1..=height`, DA slots `..=slot`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    pub height: u64,
    pub slot: u64,
}

/// One table's part of a rollback: removes the entries `cut` drops and
/// returns how many it removed (`soft_confirmations` and the height-keyed
/// tables count heights; `commitments` and `proofs` count records).
pub type Step = fn(&mut LedgerWriter<'_>, &Cut) -> Result<u64, LedgerError>;

/// Every table with its rollback step, in the order they run (the hash
/// index before the blocks, whose hashes it reads). `meta` is the last:
/// its derived entries are recomputed afterwards ([`LedgerWriter::reset_derived`]).
pub const STEPS: [(&str, Step); 11] = [
    (ScByHashPrefix::NAME, remove_hash_index),
    (SoftConfirmations::NAME, remove_blocks),
    // `status`: the statuses of the removed heights (the kept ones are
    // recomputed by the caller).
    (StatusTable::NAME, |w, cut| {
        w.del_above::<StatusTable>(cut.height)
    }),
    (Commitments::NAME, remove_slot_lists::<Commitments, _>),
    (Proofs::NAME, remove_slot_lists::<Proofs, _>),
    (DaSlots::NAME, remove_slot_hashes),
    // Bitcoin headers above the cut's slot: after a reorg they are the old
    // chain's; either way the header sync fetches (and checks) them again.
    (BitcoinHeaders::NAME, |w, cut| {
        w.del_above::<BitcoinHeaders>(cut.slot)
    }),
    (BitcoinChunks::NAME, remove_bitcoin_chunks),
    (StatusHeights::NAME, remove_frontier_marks),
    // The address book of Bitcoin peers is no part of the chain: a rollback
    // keeps it (its bans included).
    (tables::BitcoinPeers::NAME, |_, _| Ok(0)),
    (Meta::NAME, cut_meta),
];

/// Proof chunks found in Bitcoin blocks above the cut's slot: the scan
/// finds them again when it scans those blocks.
fn remove_bitcoin_chunks(w: &mut LedgerWriter<'_>, cut: &Cut) -> Result<u64, LedgerError> {
    let mut above = Vec::new();
    cursor::walk_values::<_, BitcoinChunks>(w, None, |txid, (found_at, _)| {
        if found_at > cut.slot {
            above.push(txid);
        }
        Ok(ControlFlow::Continue(()))
    })?;
    for txid in &above {
        w.delete_bitcoin_chunk(txid)?;
    }
    Ok(above.len() as u64)
}

/// Keys of the u64-keyed table `T` above `above`, in order.
fn keys_above<T: Table<Key = u64>>(
    w: &LedgerWriter<'_>,
    above: u64,
) -> Result<Vec<u64>, LedgerError> {
    match above.checked_add(1) {
        Some(first) => cursor::u64_keys::<_, T>(w, first),
        None => Ok(Vec::new()),
    }
}

impl LedgerWriter<'_> {
    /// Deletes `key` of table `T` (with `data`: that one duplicate).
    fn del<T: Table>(&mut self, key: &T::Key, data: Option<&[u8]>) -> Result<(), LedgerError> {
        self.delete::<T>(key, data, "deleting")
    }

    /// Deletes `key` of table `T` (absent is fine), saying `removing` when
    /// LMDB fails.
    pub(super) fn remove<T: Table>(&mut self, key: &T::Key) -> Result<(), LedgerError> {
        self.delete::<T>(key, None, "removing")
    }

    fn delete<T: Table>(
        &mut self,
        key: &T::Key,
        data: Option<&[u8]>,
        verb: &str,
    ) -> Result<(), LedgerError> {
        let db = T::db(&self.ledger.dbs);
        match self.txn.del(db, &T::key(key), data) {
            Ok(()) | Err(lmdb::Error::NotFound) => Ok(()),
            Err(e) => Err(lmdb_err(|| format!("{verb} {} {}", T::NAME, T::show(key)))(
                e,
            )),
        }
    }

    /// Deletes every key of the u64-keyed table `T` above `above`.
    fn del_above<T: Table<Key = u64>>(&mut self, above: u64) -> Result<u64, LedgerError> {
        let keys = keys_above::<T>(self, above)?;
        for k in &keys {
            self.del::<T>(k, None)?;
        }
        Ok(keys.len() as u64)
    }

    /// Empties table `T`.
    fn clear<T: Table>(&mut self) -> Result<(), LedgerError> {
        self.txn
            .clear_db(T::db(&self.ledger.dbs))
            .map_err(lmdb_err(|| format!("emptying {}", T::NAME)))
    }

    /// Clears what the write rules derive from commitments and proofs, for
    /// heights `1..=height`: every status back to Trusted, the finalized
    /// and proven heights, the commitment count, the last proof slot, the
    /// frontier index (`status_heights`), and the `commitments` and
    /// `proofs` tables themselves. The caller applies
    /// the commitments and proofs it keeps again, in DA order, with
    /// [`LedgerWriter::apply_commitments`] and [`LedgerWriter::apply_proof`].
    pub fn reset_derived(&mut self, height: u64) -> Result<(), LedgerError> {
        self.clear::<Commitments>()?;
        self.clear::<Proofs>()?;
        self.clear::<StatusHeights>()?;
        for key in [
            tables::META_FINALIZED,
            tables::META_PROVEN,
            tables::META_COMMIT_COUNT,
            tables::META_LAST_PROOF_SLOT,
        ] {
            self.del::<Meta>(key.name, None)?;
        }
        let trusted = StatusTable::encode(&Status::Trusted);
        let mut changed = Vec::new();
        cursor::walk_from::<_, StatusTable>(self, None, |k, v| {
            let h = cursor::u64_key::<StatusTable>(k)?;
            if h > height {
                return Ok(ControlFlow::Break(()));
            }
            if v != trusted.as_slice() {
                changed.push(h);
            }
            Ok(ControlFlow::Continue(()))
        })?;
        for h in changed {
            self.put::<StatusTable>(&h, &trusted, lmdb::WriteFlags::empty())?;
        }
        Ok(())
    }

    /// Removes a free meta entry (see [`LedgerWriter::set_meta_bytes`]).
    pub fn remove_meta_bytes(&mut self, key: &str) -> Result<(), LedgerError> {
        let key = format!("{}{key}", tables::USER_PREFIX);
        self.del::<Meta>(&key, None)
    }

    /// How many heights in `1..=height` have each status: [Trusted,
    /// Finalized, Proven].
    pub fn status_counts(&self, height: u64) -> Result<[u64; 3], LedgerError> {
        let mut counts = [0u64; 3];
        cursor::walk_values::<_, StatusTable>(self, None, |h, s| {
            if h > height {
                return Ok(ControlFlow::Break(()));
            }
            counts[s as usize] += 1;
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(counts)
    }
}

/// `sc_by_hash_prefix`: the index entries of the removed heights (read
/// from the blocks, so before them).
fn remove_hash_index(w: &mut LedgerWriter<'_>, cut: &Cut) -> Result<u64, LedgerError> {
    let heights = keys_above::<SoftConfirmations>(w, cut.height)?;
    for h in &heights {
        if let Some(hash) = w.hash_at(*h)? {
            let value = ScByHashPrefix::encode(h);
            w.del::<ScByHashPrefix>(&hash, Some(&value))?;
        }
    }
    Ok(heights.len() as u64)
}

/// `soft_confirmations`: the blocks above the cut; the count of blocks
/// stored without their bodies loses the removed ones.
fn remove_blocks(w: &mut LedgerWriter<'_>, cut: &Cut) -> Result<u64, LedgerError> {
    let without = w.blocks_without_bodies()?;
    if without > 0 {
        // A block stored without its bodies has no txs and a hash that does
        // not recompute from its fields (`checks::BlockRules`).
        let forks = w.fork_table()?.unwrap_or(ForkTable::KUMQUAT_ONLY);
        let mut bodiless = 0;
        for h in keys_above::<SoftConfirmations>(w, cut.height)? {
            if let Some(sc) = w.soft_confirmation(h)? {
                if sc.txs.is_empty() && block_hash(&sc, forks.fork_at(h)) != sc.hash {
                    bodiless += 1;
                }
            }
        }
        w.put_meta(
            tables::META_WITHOUT_BODIES,
            &without.saturating_sub(bodiless),
        )?;
    }
    w.del_above::<SoftConfirmations>(cut.height)
}

/// `commitments` and `proofs`: the lists of the removed slots; counts
/// the records in them.
fn remove_slot_lists<T, V>(w: &mut LedgerWriter<'_>, cut: &Cut) -> Result<u64, LedgerError>
where
    T: ValueTable<Key = u64, Value = Vec<V>>,
{
    let mut n = 0;
    for slot in keys_above::<T>(w, cut.slot)? {
        n += super::read::value::<_, T>(w, &slot)?.map_or(0, |l| l.len() as u64);
        w.del::<T>(&slot, None)?;
    }
    Ok(n)
}

/// `da_slots`: a slot's hash stays when the slot is kept (scanned up to the
/// cut) or a kept block points at it.
fn remove_slot_hashes(w: &mut LedgerWriter<'_>, cut: &Cut) -> Result<u64, LedgerError> {
    // Blocks point at non-decreasing slots: the kept blocks that point
    // above the cut's slot are the newest ones.
    let mut pointed: HashSet<(u64, Hash)> = HashSet::new();
    let mut h = cut.height;
    while h > 0 {
        match w.soft_confirmation(h)? {
            Some(sc) if sc.da_slot_height > cut.slot => {
                pointed.insert((sc.da_slot_height, sc.da_slot_hash));
            }
            _ => break,
        }
        h -= 1;
    }
    let mut n = 0;
    for (slot, hash) in w.all_da_slots()? {
        if slot > cut.slot && !pointed.contains(&(slot, hash)) {
            w.del::<DaSlots>(&hash, None)?;
            n += 1;
        }
    }
    Ok(n)
}

/// `status_heights`: the frontier entries of the DA slots above the cut
/// (the kept ones are written again when the caller applies the kept
/// commitments and proofs; [`LedgerWriter::reset_derived`] clears them).
fn remove_frontier_marks(w: &mut LedgerWriter<'_>, cut: &Cut) -> Result<u64, LedgerError> {
    let mut above = Vec::new();
    cursor::walk::<_, StatusHeights>(w, |k, _| {
        if k.len() == 9 && tables::decode_u64_key(&k[1..]).is_some_and(|s| s > cut.slot) {
            above.push(k.to_vec());
        }
        Ok(())
    })?;
    for k in &above {
        w.txn
            .del(StatusHeights::db(&w.ledger.dbs), k, None)
            .map_err(lmdb_err(|| {
                format!("removing a {} entry", StatusHeights::NAME)
            }))?;
    }
    Ok(above.len() as u64)
}

/// `meta`: the last scanned DA slot goes back to the cut (the derived
/// entries are recomputed by the caller). Counts 1 when it moved.
fn cut_meta(w: &mut LedgerWriter<'_>, cut: &Cut) -> Result<u64, LedgerError> {
    if w.last_scanned_l1()? > cut.slot {
        w.set_last_scanned_l1(cut.slot)?;
        return Ok(1);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_has_a_rollback_step() {
        let stepped: Vec<&str> = STEPS.iter().map(|(name, _)| *name).collect();
        for (name, _) in tables::ALL {
            assert!(
                stepped.contains(&name),
                "table {name} has no rollback step: add one to ledger::cut::STEPS"
            );
        }
        assert_eq!(stepped.len(), tables::ALL.len());
    }
}
