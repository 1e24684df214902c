//! The `bitcoin_headers` table: the best Bitcoin header chain from genesis,
//! one entry per height (the header and the chainwork up to it), written by
//! [`crate::headers::HeaderTree::save`] and read back at start.
//!
//! Only the best chain is stored: side branches are held in memory while
//! they fork within the headers kept there. A reorg rewrites the heights
//! above the fork and removes those above a shorter new tip, in the same
//! write transaction as the new headers.

use std::ops::ControlFlow;

use bitcoin::block::Header;
use bitcoin::pow::Work;
use lmdb::WriteFlags;

use super::cursor;
use super::sealed::Access;
use super::tables::{BitcoinHeaders, ValueTable};
use super::{LedgerError, LedgerWriter};

/// One stored header of the best chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredHeader {
    pub height: u64,
    pub header: Header,
    /// Total work of the chain up to and including this header.
    pub chainwork: Work,
}

/// Reading the stored header chain (any reader or writer).
pub trait BitcoinHeaderRead: Access + Sized {
    /// The highest height stored (`None`: no header yet).
    fn bitcoin_header_tip(&self) -> Result<Option<u64>, LedgerError> {
        cursor::last_u64::<Self, BitcoinHeaders>(self)
    }

    /// The stored header at `height`.
    fn bitcoin_header(&self, height: u64) -> Result<Option<StoredHeader>, LedgerError> {
        let stored = super::read::value::<Self, BitcoinHeaders>(self, &height)?;
        Ok(stored.map(|s| StoredHeader { height, ..s }))
    }

    /// The stored headers at heights `from..=to` (those present), in order.
    fn bitcoin_headers(&self, from: u64, to: u64) -> Result<Vec<StoredHeader>, LedgerError> {
        let mut out = Vec::new();
        cursor::walk_values::<Self, BitcoinHeaders>(self, Some(&from), |height, s| {
            if height > to {
                return Ok(ControlFlow::Break(()));
            }
            out.push(StoredHeader { height, ..s });
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }
}

impl<A: Access + Sized> BitcoinHeaderRead for A {}

impl LedgerWriter<'_> {
    /// Stores the best chain's header at its height (replacing one there).
    /// Above the stored tip it is appended, which keeps LMDB's pages full
    /// (an ordinary insert splits them in half).
    pub fn put_bitcoin_header(&mut self, h: &StoredHeader) -> Result<(), LedgerError> {
        let value = BitcoinHeaders::encode(h);
        self.append::<BitcoinHeaders>(&h.height, &value, WriteFlags::empty())
            .map(drop)
    }

    /// Removes the stored headers above `height` (a reorg to a shorter
    /// chain with more work).
    pub fn delete_bitcoin_headers_above(&mut self, height: u64) -> Result<(), LedgerError> {
        let Some(tip) = self.bitcoin_header_tip()? else {
            return Ok(());
        };
        for h in (height + 1..=tip).rev() {
            self.remove::<BitcoinHeaders>(&h)?;
        }
        Ok(())
    }
}
