//! bitcoind's chain brought into ledgerd's verified header chain
//! ([`HeaderTree`]): what the RPC source ([`crate::source::bitcoin::rpc::da`]) and bitcoind
//! beside the peers ([`crate::source::bitcoin::p2p::bitcoind`]) share.
//!
//! bitcoind's network is compared with the header chain's first
//! (`getblockchaininfo`). Then the height where bitcoind's chain meets the
//! stored best chain is found (`getblockhash`, back in doubling steps, then
//! halving the gap), and bitcoind's headers above it are read in batches of
//! [`HEADERS_PER_BATCH`] (`getblockhash`, then `getblockheader HASH false`)
//! and passed to [`HeaderTree::accept`]: every one checked by Bitcoin
//! Core's rules, the most-work chain followed, whoever sent it. A bitcoind
//! on a chain with less work adds a side branch and moves nothing.

use std::fmt;

use bitcoin::BlockHash;

use crate::headers::rules::HeaderError;
use crate::headers::{unix_now, BitcoinNetwork, HeaderTree};
use crate::ledger::LedgerError;
use crate::source::bitcoin::rpc::client::{BitcoinRpc, RpcError};
use crate::stop::Stop;

/// Headers asked of bitcoind per batch (Core's `getheaders` answers 2,000).
pub const HEADERS_PER_BATCH: u64 = 2_000;

/// Why bitcoind's headers could not all be taken.
#[derive(Debug)]
pub enum HeaderSyncError {
    /// bitcoind could not be asked, or refused a call.
    Rpc(RpcError),
    /// bitcoind answered something else than what was asked (a header of
    /// another block, another genesis block): the sentence says what.
    Answer(String),
    /// A header broke a rule; those before it were taken.
    Rule(HeaderError),
    /// The header chain could not be read or stored.
    Store(LedgerError),
}

impl fmt::Display for HeaderSyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderSyncError::Rpc(e) => e.fmt(f),
            HeaderSyncError::Answer(s) => f.write_str(s),
            HeaderSyncError::Rule(e) => e.fmt(f),
            HeaderSyncError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for HeaderSyncError {}

wrap_errors!(HeaderSyncError {
    Rpc(RpcError),
    Rule(HeaderError),
    Store(LedgerError),
});

/// What one sync found of bitcoind's chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RpcSync {
    /// Headers added to the header chain.
    pub added: u64,
    /// bitcoind's highest block read (its tip, unless the sync was stopped):
    /// height and hash.
    pub tip: (u64, BlockHash),
}

/// `None` when bitcoind (`getblockchaininfo`) is on `want`'s network, else
/// the sentence that refuses it.
pub fn other_network(rpc: &BitcoinRpc, want: BitcoinNetwork) -> Result<Option<String>, RpcError> {
    let name = rpc.get_chain_name()?;
    if name == want.name() {
        return Ok(None);
    }
    let instead = match name.parse::<BitcoinNetwork>() {
        Ok(other) if name != "bitcoin" && name != "mainnet" => {
            format!(", or give --bitcoin-chain {other}")
        }
        _ => format!(" (ledgerd does not follow {name})"),
    };
    Ok(Some(format!(
        "bitcoind at {} is on the {name} network, not {want} (--bitcoin-chain, or the chain \
         --network reads): point --bitcoin-rpc at a {want} bitcoind{instead}",
        rpc.url()
    )))
}

/// Reads the headers `chain` lacks of bitcoind's chain of `count` blocks
/// (its `getblockcount`), from where the two meet up to `count`, and
/// passes them to `chain` (module docs); each batch is saved, then
/// `after_batch` is told. Ends early once `stop` is set.
pub fn sync_headers(
    rpc: &BitcoinRpc,
    count: u64,
    chain: &mut HeaderTree,
    stop: &Stop,
    mut after_batch: impl FnMut(&HeaderTree),
) -> Result<RpcSync, HeaderSyncError> {
    let ours = chain.tip().height;
    let common = common_height(rpc, chain, ours.min(count))?;
    let mut tip = (common, chain.hash_at(common)?.unwrap_or(chain.tip().hash));
    let mut next = common + 1;
    let mut added = 0u64;
    while next <= count && !stop.is_stopped() {
        let to = (next + HEADERS_PER_BATCH - 1).min(count);
        let hashes = rpc.get_block_hashes(next..to + 1)?;
        let headers = rpc.get_block_headers(&hashes)?;
        if let Some((i, (h, hash))) = headers
            .iter()
            .zip(&hashes)
            .enumerate()
            .find(|(_, (h, hash))| h.block_hash() != **hash)
        {
            return Err(HeaderSyncError::Answer(format!(
                "bitcoind at {} answered header {} for block {hash} at height {}",
                rpc.url(),
                h.block_hash(),
                next + i as u64
            )));
        }
        let result = chain.accept(&headers, unix_now());
        chain.save()?;
        after_batch(chain);
        let accepted = result?;
        added += accepted.added as u64;
        if let Some(r) = accepted.reorg {
            log::info!(
                "the Bitcoin header chain moved to a branch with more work (from bitcoind at \
                 {}): it forks after height {} (the tip was {} {})",
                rpc.url(),
                r.fork_height,
                r.old_tip.0,
                r.old_tip.1
            );
        }
        if let Some(last) = hashes.last() {
            tip = (to, *last);
        }
        next = to + 1;
    }
    Ok(RpcSync { added, tip })
}

/// The highest height where bitcoind's chain and the stored best chain
/// have the same block, at most `from` (they share genesis at least).
fn common_height(rpc: &BitcoinRpc, chain: &HeaderTree, from: u64) -> Result<u64, HeaderSyncError> {
    let same = |h: u64| -> Result<bool, HeaderSyncError> {
        let theirs = rpc.get_block_hash(h)?;
        let ours = chain.hash_at(h)?;
        Ok(ours == Some(theirs))
    };
    if same(from)? {
        return Ok(from);
    }
    // Back in doubling steps to a shared block, then halve the gap.
    let (mut bad, mut step) = (from, 1u64);
    let mut good = loop {
        let h = bad.saturating_sub(step);
        if same(h)? {
            break h;
        }
        if h == 0 {
            return Err(HeaderSyncError::Answer(format!(
                "bitcoind at {} has another genesis block than {}'s",
                rpc.url(),
                chain.chain()
            )));
        }
        bad = h;
        step *= 2;
    };
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if same(mid)? {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Ok(good)
}
