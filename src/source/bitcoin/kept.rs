//! Checked blocks kept between the L2 anchor check and the DA scan of
//! either Bitcoin source ([`crate::source::bitcoin::p2p::da`],
//! [`crate::source::bitcoin::rpc::da`]), so each is fetched once.

use std::collections::HashMap;

use bitcoin::BlockHash;

use crate::source::bitcoin::block::DaBlock;

/// Checked blocks fetched but not scanned yet: the L2 anchor check asks for
/// a block before the DA scan reaches it, and the scan then takes it from
/// here instead of downloading it again (each block is fetched and checked
/// once). Only blocks checked against their header ([`crate::source::bitcoin::block`]) are kept, by their hash
/// (a block is its hash once checked), keeping only Citrea's transactions;
/// at most [`KEPT_BLOCKS`] blocks and [`KEPT_BYTES`] bytes of them, the
/// lowest heights forgotten first (fetched again if asked).
#[derive(Default)]
pub struct KeptBlocks {
    by_hash: HashMap<BlockHash, DaBlock>,
    bytes: usize,
}

/// The most blocks [`KeptBlocks`] holds (an L2 chunk names a few).
pub const KEPT_BLOCKS: usize = 256;
/// The most bytes of transactions it holds.
pub const KEPT_BYTES: usize = 64 << 20;

impl KeptBlocks {
    fn size(block: &DaBlock) -> usize {
        block.txs.iter().map(|t| t.tx.total_size()).sum()
    }

    pub fn get(&self, hash: &BlockHash) -> Option<&DaBlock> {
        self.by_hash.get(hash)
    }

    pub fn keep(&mut self, block: &DaBlock) {
        let hash = block.block_hash();
        if self.by_hash.contains_key(&hash) {
            return;
        }
        self.bytes += Self::size(block);
        self.by_hash.insert(hash, block.clone());
        while self.by_hash.len() > KEPT_BLOCKS || self.bytes > KEPT_BYTES {
            let lowest = self
                .by_hash
                .iter()
                .min_by_key(|(_, b)| b.height)
                .map(|(h, _)| *h);
            let Some(h) = lowest else { break };
            self.take(&h);
        }
    }

    pub fn take(&mut self, hash: &BlockHash) -> Option<DaBlock> {
        let block = self.by_hash.remove(hash)?;
        self.bytes -= Self::size(&block);
        Some(block)
    }

    /// Forgets the blocks below `height` (scanned: not asked again).
    pub fn forget_below(&mut self, height: u64) {
        let bytes = &mut self.bytes;
        self.by_hash.retain(|_, b| {
            let below = b.height < height;
            if below {
                *bytes -= Self::size(b);
            }
            !below
        });
    }
}
