//! Reading a range of Bitcoin blocks fast: batched, several batches in
//! flight, every block checked.
//!
//! A range is cut into batches of [`ReaderOptions::batch`] heights. Each
//! batch costs two round trips to bitcoind: one JSON-RPC batch of
//! `getblockhash`, then one of `getblock <hash> 0` (raw blocks, the cheapest
//! form). [`ReaderOptions::in_flight`] threads work on batches at once, each
//! also decoding and checking its blocks ([`crate::source::bitcoin::block::parse_block`]), so
//! the network and the hashing overlap. The blocks come back in height order,
//! each linked to the one before it (a reorg during the read shows up as a
//! broken link, [`ReadError::NotLinked`]; read again).

use std::fmt;
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use bitcoin::BlockHash;

use crate::source::bitcoin::block::{parse_block_keeping, BlockError, DaBlock};
use crate::source::bitcoin::rpc::client::{BitcoinRpc, RpcError};

/// How a [`BlockReader`] reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderOptions {
    /// Heights per JSON-RPC batch (at least 1).
    pub batch: usize,
    /// Batches requested at once (at least 1); bitcoind serves up to
    /// `-rpcthreads` (16 by default) at a time.
    pub in_flight: usize,
    /// When set, a block keeps only the transactions whose raw wtxid starts
    /// with one of these prefixes (Citrea's reveals: `[1, 1]`, `[2, 2]`);
    /// every transaction is still checked and counted in `tx_count`.
    /// `None` keeps them all.
    pub wtxid_prefixes: Option<Vec<Vec<u8>>>,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        ReaderOptions {
            batch: 50,
            in_flight: 2,
            wtxid_prefixes: None,
        }
    }
}

/// Why a range could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// bitcoind did not answer, or refused (e.g. -8: a height beyond the tip).
    Rpc(RpcError),
    /// bitcoind sent a block that failed a check.
    Block(BlockError),
    /// The block at `height` does not follow the one read at `height - 1`:
    /// the chain changed during the read.
    NotLinked { height: u64 },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Rpc(e) => e.fmt(f),
            ReadError::Block(e) => e.fmt(f),
            ReadError::NotLinked { height } => write!(
                f,
                "the block at height {height} does not follow the one read at height {}: \
                 the chain changed during the read",
                height - 1
            ),
        }
    }
}

impl std::error::Error for ReadError {}

wrap_errors!(ReadError {
    Rpc(RpcError),
    Block(BlockError),
});

/// One batch's blocks, or why it failed.
type BatchResult = Result<Vec<DaBlock>, ReadError>;

/// Reads checked blocks by height from one bitcoind.
pub struct BlockReader<'a> {
    rpc: &'a BitcoinRpc,
    options: ReaderOptions,
}

impl<'a> BlockReader<'a> {
    pub fn new(rpc: &'a BitcoinRpc, options: ReaderOptions) -> BlockReader<'a> {
        let options = ReaderOptions {
            batch: options.batch.max(1),
            in_flight: options.in_flight.max(1),
            ..options
        };
        BlockReader { rpc, options }
    }

    /// The blocks at `heights`, in order, each checked and linked to the one
    /// before. Heights beyond the tip make the whole read fail with -8
    /// ([`RpcError::is_height_out_of_range`]): ask `getblockcount` first.
    pub fn read_range(&self, heights: RangeInclusive<u64>) -> Result<Vec<DaBlock>, ReadError> {
        let (first, last) = (*heights.start(), *heights.end());
        if first > last {
            return Ok(Vec::new());
        }
        let count = usize::try_from(last - first + 1).unwrap_or(usize::MAX);
        let batch = self.options.batch;
        let batches = count.div_ceil(batch);
        let next = AtomicUsize::new(0);
        let slots: Mutex<Vec<Option<BatchResult>>> =
            Mutex::new((0..batches).map(|_| None).collect());
        let work = || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= batches {
                return;
            }
            let from = first + (i * batch) as u64;
            let to = (from + batch as u64 - 1).min(last);
            let result = self.read_batch(from, to);
            let failed = result.is_err();
            if let Ok(mut slots) = slots.lock() {
                slots[i] = Some(result);
            }
            if failed {
                // No point fetching more: the read fails at its first error.
                next.store(batches, Ordering::Relaxed);
                return;
            }
        };
        // This thread is one of the workers.
        std::thread::scope(|s| {
            for _ in 1..self.options.in_flight.min(batches) {
                s.spawn(work);
            }
            work();
        });
        let slots = slots.into_inner().unwrap_or_else(|p| p.into_inner());
        let mut blocks = Vec::with_capacity(count);
        for slot in slots {
            match slot {
                Some(Ok(mut part)) => blocks.append(&mut part),
                Some(Err(e)) => return Err(e),
                // Skipped after an earlier-scheduled batch failed; that
                // batch's error comes first in height order or already returned.
                None => break,
            }
        }
        if blocks.len() != count {
            let read = format!("{} blocks read of the {count} asked", blocks.len());
            return Err(ReadError::Rpc(RpcError::bad("getblock", read)));
        }
        linked(blocks)
    }

    /// The blocks of `hashes` (the chain's blocks from `first_height` on, as
    /// the verified header chain names them), in batches of
    /// [`ReaderOptions::batch`]: each checked against its hash, so bitcoind
    /// can serve no other block than the header chain's.
    pub fn read_hashes(
        &self,
        first_height: u64,
        hashes: &[BlockHash],
    ) -> Result<Vec<DaBlock>, ReadError> {
        let mut blocks = Vec::with_capacity(hashes.len());
        for (i, chunk) in hashes.chunks(self.options.batch).enumerate() {
            let from = first_height + (i * self.options.batch) as u64;
            self.fetch_blocks(from, chunk, &mut blocks)?;
        }
        linked(blocks)
    }

    /// Heights `from..=to`: their hashes in one batch, the raw blocks in
    /// another (halved until the answers fit the size limit), then checked.
    fn read_batch(&self, from: u64, to: u64) -> Result<Vec<DaBlock>, ReadError> {
        let hashes = self.rpc.get_block_hashes(from..to + 1)?;
        let mut blocks = Vec::with_capacity(hashes.len());
        self.fetch_blocks(from, &hashes, &mut blocks)?;
        log::debug!(
            "bitcoind blocks {from}..={to} read ({} transactions kept)",
            blocks.iter().map(|b| b.txs.len()).sum::<usize>()
        );
        Ok(blocks)
    }

    fn fetch_blocks(
        &self,
        first_height: u64,
        hashes: &[BlockHash],
        out: &mut Vec<DaBlock>,
    ) -> Result<(), ReadError> {
        let raws = match self.rpc.get_raw_blocks(hashes) {
            Err(RpcError::TooLarge { .. }) if hashes.len() > 1 => {
                let half = hashes.len() / 2;
                self.fetch_blocks(first_height, &hashes[..half], out)?;
                return self.fetch_blocks(first_height + half as u64, &hashes[half..], out);
            }
            other => other?,
        };
        let keep = |w: &crate::types::Hash| {
            self.options
                .wtxid_prefixes
                .as_ref()
                .is_none_or(|prefixes| prefixes.iter().any(|p| w.starts_with(p)))
        };
        for (i, (raw, hash)) in raws.iter().zip(hashes).enumerate() {
            out.push(parse_block_keeping(
                first_height + i as u64,
                hash,
                raw,
                &keep,
            )?);
        }
        Ok(())
    }
}

/// `blocks`, each linked to the one before it, or the first that is not.
fn linked(blocks: Vec<DaBlock>) -> Result<Vec<DaBlock>, ReadError> {
    match blocks.windows(2).find(|p| p[1].prev_hash() != p[0].hash) {
        Some(p) => Err(ReadError::NotLinked {
            height: p[1].height,
        }),
        None => Ok(blocks),
    }
}
