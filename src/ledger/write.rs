//! Writing the ledger: the writer's puts, deletes and commit (the write
//! rules of sync are in `apply.rs`).

use lmdb::{Cursor, Transaction, WriteFlags};

use super::tables::{
    Commitments, DaSlots, Meta, MetaKey, MetaValue, Proofs, ScByHashPrefix, SoftConfirmations,
    StatusTable, Table, ValueTable,
};
use super::walk::LedgerWalk;
use super::*;
use crate::chain_rules::ForkTable;
use crate::types::{Hash, SequencerCommitment, SoftConfirmation, Status, VerifiedBatchProof};

impl LedgerWriter<'_> {
    pub(super) fn put<T: Table>(
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
    /// an ordinary put with `fallback` (`NO_OVERWRITE`: keep a stored value)
    /// when it is not. `Ok(false)` when `key` is stored and was kept.
    pub(super) fn append<T: Table>(
        &mut self,
        key: &T::Key,
        value: &[u8],
        fallback: WriteFlags,
    ) -> Result<bool, LedgerError> {
        let db = T::db(&self.ledger.dbs);
        let k = T::key(key);
        // APPEND keeps pages full for in-order inserts (an ordinary insert
        // splits pages in half); LMDB refuses it with KeyExist when the key
        // is not above the last one.
        let first = self.txn.put(db, &k, &value, WriteFlags::APPEND);
        let second = match first {
            Err(lmdb::Error::KeyExist) => self.txn.put(db, &k, &value, fallback),
            other => other,
        };
        match second {
            Ok(()) => Ok(true),
            Err(lmdb::Error::KeyExist) => Ok(false),
            Err(e) => Err(lmdb_err(|| format!("writing {} {}", T::NAME, T::show(key)))(e)),
        }
    }

    pub(super) fn put_value<T: ValueTable>(
        &mut self,
        key: &T::Key,
        value: &T::Value,
        flags: WriteFlags,
    ) -> Result<(), LedgerError> {
        self.put::<T>(key, &T::encode(value), flags)
    }

    pub(super) fn put_meta<V: MetaValue>(
        &mut self,
        key: MetaKey<V>,
        value: &V,
    ) -> Result<(), LedgerError> {
        self.put::<Meta>(key.name, &value.encode(), WriteFlags::empty())
    }

    pub(super) fn raise_meta_u64(
        &mut self,
        key: MetaKey<u64>,
        value: u64,
    ) -> Result<(), LedgerError> {
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
        if !self.append::<SoftConfirmations>(&sc.l2_height, &value, WriteFlags::NO_OVERWRITE)? {
            return Err(LedgerError::AlreadyStored(sc.l2_height));
        }
        if stored_key.is_none() {
            self.put_meta(tables::META_BLOCK_KEY, &block_key)?;
        }
        // A duplicate of the prefix when another block's hash shares it.
        self.put_value::<ScByHashPrefix>(&sc.hash, &sc.l2_height, WriteFlags::empty())?;
        // A status already there (it cannot be, without a block) is kept:
        // statuses never move backwards.
        let trusted = StatusTable::encode(&Status::Trusted);
        self.append::<StatusTable>(&sc.l2_height, &trusted, WriteFlags::NO_OVERWRITE)?;
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
            let db = StatusTable::db(&self.ledger.dbs);
            let mut cursor = self.txn.open_rw_cursor(db).map_err(lmdb_err(ctx))?;
            let step = cursor.get(Some(&StatusTable::key(&from)), None, MDB_SET_RANGE);
            let mut item = cursor::entry(step, ctx)?;
            while let Some((k, v)) = item {
                let height = cursor::u64_key::<StatusTable>(k)?;
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
                item = cursor::entry(cursor.get(None, None, MDB_NEXT), ctx)?;
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
            None if self.head_height()? > 0 => Some(ForkTable::KUMQUAT_ONLY),
            stored => stored,
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

    /// Records slot `slot`'s hash as the last scanned slot's (read back with
    /// [`LedgerRead::last_slot_hash`]).
    pub fn set_last_slot_hash(&mut self, slot: u64, hash: &Hash) -> Result<(), LedgerError> {
        let mut entry = slot.to_be_bytes().to_vec();
        entry.extend_from_slice(hash);
        self.set_meta_bytes(super::read::LAST_SLOT_HASH_KEY, &entry)
    }

    /// A rollback to DA slot `slot`: the last scanned slot's hash entry names
    /// `slot` (its recorded hash) when it named a later one; it goes when
    /// `slot`'s hash is not recorded.
    pub fn cut_last_slot_hash(&mut self, slot: u64) -> Result<(), LedgerError> {
        if self.last_slot_hash()?.is_none_or(|(n, _)| n <= slot) {
            return Ok(());
        }
        let hash = self
            .all_da_slots()?
            .into_iter()
            .find(|(n, _)| *n == slot)
            .map(|(_, h)| h);
        match hash {
            Some(hash) if slot > 0 => self.set_last_slot_hash(slot, &hash),
            _ => self.remove_meta_bytes(super::read::LAST_SLOT_HASH_KEY),
        }
    }

    /// Makes every write of this transaction durable and visible, at once.
    pub fn commit(self) -> Result<(), LedgerError> {
        self.txn
            .commit()
            .map_err(lmdb_err(|| "committing a write transaction".into()))
    }
}
