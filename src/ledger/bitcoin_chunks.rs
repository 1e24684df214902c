//! The `bitcoin_chunks` table: the chunk transactions of chunked proofs
//! found in scanned Bitcoin blocks, by txid, so a follower needs no
//! transaction index and a restart between a proof's chunks and its
//! aggregate loses nothing.
//!
//! A chunk stays stored after its aggregate was applied: `ledgerd rollback
//! --to-l1 S` with S between a chunk's slot and its aggregate's keeps the
//! chunk's slot (it is not scanned again) and takes back the aggregate's
//! (it is), and the scan needs the chunk to put the proof together again.
//! A rollback may go back any distance, so no used chunk is ever safe to
//! forget: the table keeps every chunk transaction scanned, as many bytes
//! as the chunked proofs take on Bitcoin. A chunk goes only with its own
//! slot (a rollback below it: the scan finds it again there).
//!
//! Written by the sync thread in the same write transaction as the slot
//! they were found on ([`crate::types::DaSlot::chunks`]); read by the
//! Bitcoin sources' scanner ([`crate::source::bitcoin::scan`]).

use lmdb::WriteFlags;

use super::sealed::Access;
use super::tables::{BitcoinChunks, ValueTable};
use super::{LedgerError, LedgerWriter};
use crate::types::Hash;

/// Reading the stored chunks (any reader or writer).
pub trait BitcoinChunkRead: Access + Sized {
    /// The chunk transaction `txid` (raw byte order): the height it was
    /// found at and its raw bytes.
    fn bitcoin_chunk(&self, txid: &Hash) -> Result<Option<(u64, Vec<u8>)>, LedgerError> {
        super::read::value::<Self, BitcoinChunks>(self, txid)
    }
}

impl<A: Access + Sized> BitcoinChunkRead for A {}

impl LedgerWriter<'_> {
    /// Stores a chunk found at `height` (replacing one with the same txid).
    pub fn put_bitcoin_chunk(
        &mut self,
        txid: &Hash,
        height: u64,
        raw: &[u8],
    ) -> Result<(), LedgerError> {
        let value = BitcoinChunks::encode(&(height, raw.to_vec()));
        self.put::<BitcoinChunks>(txid, &value, WriteFlags::empty())
    }

    /// Forgets chunk `txid` (a rollback took back the slot it was found
    /// on); absent is fine.
    pub fn delete_bitcoin_chunk(&mut self, txid: &Hash) -> Result<(), LedgerError> {
        self.remove::<BitcoinChunks>(txid)
    }
}
