//! Reading the ledger: [`LedgerRead`], every read a reader (a committed
//! snapshot) or a writer (its own uncommitted writes too) can make, and
//! the helpers that find and decode one stored value.

use std::ops::ControlFlow;
use std::sync::OnceLock;

use lmdb::{Cursor, Transaction};

use super::codec::DecodeError;
use super::cursor;
use super::tables::{
    Commitments, DaSlots, Meta, MetaKey, MetaValue, Proofs, ScByHashPrefix, SoftConfirmations,
    StatusTable, Table, ValueTable,
};
use super::*;
use crate::chain_rules::ForkTable;
use crate::types::{Hash, SequencerCommitment, SoftConfirmation, Status, VerifiedBatchProof};

/// The ledger's free meta entry holding the last scanned slot's number and
/// hash (as the DA source gave it), for the deep-reorg check.
pub(super) const LAST_SLOT_HASH_KEY: &str = "last_scanned_slot_hash";

/// The raw stored value of `key` in table `T`, if any.
pub(super) fn get<'t, R: sealed::Access, T: Table>(
    r: &'t R,
    key: &T::Key,
) -> Result<Option<&'t [u8]>, LedgerError> {
    match r.txn().get(T::db(r.dbs()), &T::key(key)) {
        Ok(v) => Ok(Some(v)),
        Err(lmdb::Error::NotFound) => Ok(None),
        Err(e) => Err(lmdb_err(|| format!("reading {} {}", T::NAME, T::show(key)))(e)),
    }
}

/// Reads `key` of table `T` and decodes it with `decode`.
pub(super) fn get_decoded<R: sealed::Access, T: Table, V>(
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
pub(super) fn value<R: sealed::Access, T: ValueTable>(
    r: &R,
    key: &T::Key,
) -> Result<Option<T::Value>, LedgerError> {
    get_decoded::<R, T, _>(r, key, T::decode)
}

/// The value of a `meta` entry, if set.
pub(super) fn meta<R: sealed::Access, V: MetaValue>(
    r: &R,
    key: MetaKey<V>,
) -> Result<Option<V>, LedgerError> {
    get_decoded::<R, Meta, _>(r, key.name, V::decode)
}

/// The ledger's block key (see [`codec`]), only read when a value needs it.
pub(super) fn block_key_for<R: sealed::Access>(
    r: &R,
    bytes: &[u8],
) -> Result<Option<Hash>, LedgerError> {
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

pub(super) fn decode_sc(
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
        let span = usize::try_from((end - start).saturating_add(1)).unwrap_or(usize::MAX);
        let mut out: Vec<Option<SoftConfirmation>> = Vec::with_capacity(span.min(4096));
        let mut block_key: Option<Option<Hash>> = None;
        cursor::walk_from::<Self, SoftConfirmations>(self, Some(&start), |k, bytes| {
            let height = cursor::u64_key::<SoftConfirmations>(k)?;
            if height > end {
                return Ok(ControlFlow::Break(()));
            }
            // A hole for each height below it that is not stored.
            out.resize_with((height - start) as usize, || None);
            if block_key.is_none() && codec::sc_omits_key(bytes) {
                block_key = Some(block_key_for(self, bytes)?);
            }
            let key = block_key.flatten();
            out.push(Some(decode_sc(height, bytes, key.as_ref())?));
            Ok(ControlFlow::Continue(()))
        })?;
        out.resize_with(span, || None);
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
            .open_ro_cursor(ScByHashPrefix::db(self.dbs()))
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
        Ok(cursor::last_u64::<Self, SoftConfirmations>(self)?.unwrap_or(0))
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

    /// The commitments a proof proves, by Citrea's rule (`process_zk_proof`):
    /// the proof's `daSlotHash` names the DA slot whose commitments it proves;
    /// that slot's commitments are sorted by `l2StartBlockNumber`, the
    /// positions in `preprovenCommitments` are dropped, and
    /// `sequencerCommitmentsRange` [a, b] indexes (from 0) what is left.
    ///
    /// `Ok(None)` when the named slot's hash is not known yet. The verifier
    /// (`crate::checks::proof_commitments`) holds a proof to this; the
    /// frontier index is rebuilt by it.
    fn proof_commitments(
        &self,
        proof: &VerifiedBatchProof,
    ) -> Result<Option<Vec<SequencerCommitment>>, ProofCommitmentsError> {
        let out = &proof.proof_output;
        let Some(slot) = self.slot_by_hash(&out.da_slot_hash)? else {
            return Ok(None);
        };
        let mut on_slot =
            self.commitments_on_slot(slot)?
                .ok_or(ProofCommitmentsError::NoCommitments {
                    slot,
                    da_slot_hash: out.da_slot_hash,
                })?;
        on_slot.sort_by_key(|c| c.l2_start_block_number);
        let left: Vec<SequencerCommitment> = on_slot
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !out.preproven_commitments.contains(&(*i as u64)))
            .map(|(_, c)| c)
            .collect();
        let (a, b) = out.sequencer_commitments_range;
        if a > b || b >= left.len() as u64 {
            return Err(ProofCommitmentsError::Range {
                range: (a, b),
                left: left.len(),
                slot,
                preproven: out.preproven_commitments.clone(),
            });
        }
        Ok(Some(left[a as usize..=b as usize].to_vec()))
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

    /// The last scanned slot whose hash the DA source gave: (number, hash),
    /// for the sync thread's deep-reorg check.
    fn last_slot_hash(&self) -> Result<Option<(u64, Hash)>, LedgerError> {
        Ok(self.meta_bytes(LAST_SLOT_HASH_KEY)?.and_then(|b| {
            let number = u64::from_be_bytes(b.get(..8)?.try_into().ok()?);
            let hash: Hash = b.get(8..40)?.try_into().ok()?;
            Some((number, hash))
        }))
    }
}
