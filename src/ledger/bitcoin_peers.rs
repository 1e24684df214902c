//! The `bitcoin_peers` table: the P2P source's address book, one entry per
//! peer (IP and port): where it came from, its failures, its last success
//! and attempt, and its ban. Written by the P2P source through the one
//! ledger writer of the sync thread, as the header chain is; read back at
//! start.
//!
//! The ledger stores the entry's source and ban reason as the codes the
//! P2P source gives them (`source::bitcoin::p2p::book`); it does not read
//! them.

use std::net::SocketAddr;

use lmdb::WriteFlags;

use super::cursor;
use super::sealed::Access;
use super::tables::{BitcoinPeers, ValueTable};
use super::{LedgerError, LedgerWriter};

/// One address book entry (times are Unix seconds, 0: never).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BookEntry {
    /// Where the address came from (a code of the P2P source's).
    pub source: u8,
    /// Why it is banned (a code of the P2P source's; 0: not banned).
    pub ban_reason: u8,
    /// Failures in a row (a success resets it).
    pub failures: u32,
    pub last_success: u64,
    pub last_attempt: u64,
    /// Not connected to before this (0: not banned).
    pub banned_until: u64,
    /// The services it was last said to offer (its gossip or its
    /// `version`; 0: not known), as Core's address manager keeps them.
    pub services: u64,
}

/// Reading the address book (any reader or writer).
pub trait BitcoinPeerRead: Access + Sized {
    /// Every entry, in key order.
    fn bitcoin_peers(&self) -> Result<Vec<(SocketAddr, BookEntry)>, LedgerError> {
        cursor::entries::<Self, BitcoinPeers>(self)
    }
}

impl<A: Access + Sized> BitcoinPeerRead for A {}

impl LedgerWriter<'_> {
    /// Stores (or replaces) `addr`'s entry.
    pub fn put_bitcoin_peer(
        &mut self,
        addr: &SocketAddr,
        entry: &BookEntry,
    ) -> Result<(), LedgerError> {
        self.put::<BitcoinPeers>(addr, &BitcoinPeers::encode(entry), WriteFlags::empty())
    }

    /// Removes `addr`'s entry (none: nothing to do).
    pub fn delete_bitcoin_peer(&mut self, addr: &SocketAddr) -> Result<(), LedgerError> {
        self.remove::<BitcoinPeers>(addr)
    }
}
