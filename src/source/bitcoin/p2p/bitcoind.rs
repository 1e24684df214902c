//! bitcoind's RPC beside the peers (`--bitcoin-rpc` with `--bitcoin-peer`):
//! one more source of headers and blocks for [`crate::source::bitcoin::p2p::da::PeersDa`], held to
//! the same rules as a peer.
//!
//! - **Headers**: at each look, bitcoind's chain is brought into the one
//!   header chain as the RPC source brings it
//!   ([`crate::source::bitcoin::rpc::headers`]: batched
//!   `getblockheader HASH false`, each header checked by Bitcoin Core's
//!   rules); the header chain follows the most work, whoever showed it. A
//!   bitcoind on a chain with less work than the peers' adds a side branch
//!   and is read for no block of it; a bitcoind ahead of the peers moves the
//!   best chain, and the peers then serve only what their chains hold.
//! - **Blocks**: asked of bitcoind first (`getblock HASH 0`, batched), for
//!   the heights its chain holds of the best chain; each checked against
//!   its header ([`crate::source::bitcoin::block::parse_block`]). A call
//!   that fails, or a block that does not match its header, hands the
//!   blocks to the peers and puts bitcoind in a back-off (100 ms doubling
//!   to [`MAX_BACKOFF`]); the peers serve meanwhile.
//! - **Network**: bitcoind must be on `--bitcoin-chain`'s network, checked
//!   at start (refused with a sentence) or at its first answer (nothing is
//!   read of it before).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bitcoin::BlockHash;
use log::{debug, info, warn};

use crate::headers::{BitcoinNetwork, HeaderTree};
use crate::progress::Progress;
use crate::source::backoff::Backoff;
use crate::source::bitcoin::block::DaBlock;
use crate::source::bitcoin::p2p::peers::PeerChain;
use crate::source::bitcoin::rpc::client::{BitcoinRpc, RpcError};
use crate::source::bitcoin::rpc::da::{citrea_reader, ChainCheckError};
use crate::source::bitcoin::rpc::headers::{self, other_network, HeaderSyncError};
use crate::source::bitcoin::rpc::reader::ReadError;
use crate::source::SourceError;
use crate::stop::Stop;

/// The longest wait before a failed bitcoind is asked again (a restarted
/// bitcoind is read again within this).
pub const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// bitcoind beside the peers (module docs).
pub struct RpcSide {
    rpc: Arc<BitcoinRpc>,
    /// Whether bitcoind was found on the header chain's network.
    network_checked: bool,
    backoff: Backoff,
    /// Not asked again before this.
    retry_at: Instant,
    /// What its last header sync showed of its chain.
    chain: PeerChain,
    progress: Arc<Progress>,
    stop: Arc<Stop>,
}

impl RpcSide {
    /// `stop` ends a long header sync early once it is set.
    pub fn new(rpc: Arc<BitcoinRpc>, progress: Arc<Progress>, stop: Arc<Stop>) -> RpcSide {
        let _ = progress.bitcoin.rpc.url.set(rpc.url().to_string());
        RpcSide {
            rpc,
            network_checked: false,
            backoff: Backoff::new(MAX_BACKOFF),
            retry_at: Instant::now(),
            chain: PeerChain::Unknown,
            progress,
            stop,
        }
    }

    /// bitcoind's RPC URL (without credentials).
    pub fn url(&self) -> &str {
        self.rpc.url()
    }

    /// What its last header sync showed of its chain.
    pub fn chain(&self) -> PeerChain {
        self.chain
    }

    /// Asks bitcoind which network it is on (`getblockchaininfo`): it must
    /// be `want`.
    pub fn check_network(&mut self, want: BitcoinNetwork) -> Result<(), ChainCheckError> {
        match other_network(&self.rpc, want) {
            Ok(None) => {
                self.network_checked = true;
                self.status().answered();
                Ok(())
            }
            Ok(Some(sentence)) => {
                self.status().failed(true, &sentence);
                Err(ChainCheckError::OtherChain(sentence))
            }
            Err(e) => Err(ChainCheckError::Unreachable(self.rpc_error(&e))),
        }
    }

    /// Brings bitcoind's headers into `chain` (module docs), unless it is in
    /// its back-off; whether it answered.
    pub fn sync_headers(&mut self, chain: &mut HeaderTree) -> bool {
        if Instant::now() < self.retry_at {
            return false;
        }
        if !self.network_checked {
            if let Err(e) = self.check_network(chain.chain()) {
                if let ChainCheckError::OtherChain(why) = e {
                    warn!("{why}; nothing is read of it");
                }
                self.back_off();
                return false;
            }
        }
        let count = match self.rpc.get_block_count() {
            Ok(c) => c,
            Err(e) => {
                self.rpc_error(&e);
                self.back_off();
                return false;
            }
        };
        let progress = self.progress.clone();
        let result = headers::sync_headers(&self.rpc, count, chain, &self.stop, |c| {
            progress.bitcoin.headers.note(c)
        });
        match result {
            Ok(sync) => {
                let (height, hash) = sync.tip;
                self.chain = if chain.hash_at(height).ok().flatten() == Some(hash) {
                    PeerChain::On(height, hash)
                } else {
                    PeerChain::Branch(hash)
                };
                if sync.added > 0 {
                    debug!(
                        "bitcoind at {}: {} headers added, best tip {}",
                        self.rpc.url(),
                        sync.added,
                        chain.tip().height
                    );
                }
                self.succeeded();
                true
            }
            Err(HeaderSyncError::Rpc(e)) => {
                self.rpc_error(&e);
                self.back_off();
                false
            }
            Err(e @ (HeaderSyncError::Rule(_) | HeaderSyncError::Answer(_))) => {
                let why = match &e {
                    HeaderSyncError::Rule(r) => format!(
                        "bitcoind at {} sent a header that breaks a rule ({}): {r}",
                        self.rpc.url(),
                        r.rule.name()
                    ),
                    other => other.to_string(),
                };
                warn!("{why}; its chain is not read");
                self.chain = PeerChain::Unknown;
                self.failed(&why);
                false
            }
            Err(HeaderSyncError::Store(e)) => {
                warn!("the Bitcoin header chain cannot be stored: {e}");
                false
            }
        }
    }

    /// The highest height up to which bitcoind's chain holds the best
    /// chain's blocks (its last header sync showed it), unless it is in its
    /// back-off or on another branch.
    pub fn holds_up_to(&self, chain: &HeaderTree) -> Option<u64> {
        if Instant::now() < self.retry_at {
            return None;
        }
        self.chain.holds(chain)
    }

    /// The blocks `wanted` (height, hash of the best chain), each checked
    /// against its header, in the order asked, keeping only the
    /// transactions with one of Citrea's wtxid prefixes. `None` when
    /// bitcoind failed (its status says why; it backs off).
    pub fn blocks(&mut self, wanted: &[(u64, BlockHash)]) -> Option<Vec<DaBlock>> {
        let reader = citrea_reader(&self.rpc);
        let mut out = Vec::with_capacity(wanted.len());
        // Runs of consecutive heights, each read in one go.
        for run in wanted.chunk_by(|a, b| b.0 == a.0 + 1) {
            let hashes: Vec<BlockHash> = run.iter().map(|w| w.1).collect();
            match reader.read_hashes(run[0].0, &hashes) {
                Ok(mut blocks) if blocks.len() == hashes.len() => out.append(&mut blocks),
                Ok(blocks) => {
                    let why = format!(
                        "bitcoind at {} sent {} blocks of the {} asked",
                        self.rpc.url(),
                        blocks.len(),
                        hashes.len()
                    );
                    self.failed(&why);
                    return None;
                }
                Err(ReadError::Rpc(e)) => {
                    self.rpc_error(&e);
                    self.back_off();
                    return None;
                }
                Err(e) => {
                    if let ReadError::Block(refused) = &e {
                        self.progress.bitcoin.peers.block_refused(refused.reason());
                    }
                    let why = format!("bitcoind at {} sent a block we refuse: {e}", self.rpc.url());
                    warn!("{why}; the peers are asked");
                    self.failed(&why);
                    return None;
                }
            }
        }
        let fetched = out.len() as u64;
        self.status().blocks_fetched.fetch_add(fetched, Relaxed);
        self.progress
            .bitcoin
            .blocks_fetched
            .fetch_add(fetched, Relaxed);
        self.succeeded();
        Some(out)
    }

    /// Why bitcoind is not read now, if it is not.
    pub fn problem(&self) -> Option<String> {
        self.status().problem()
    }

    fn status(&self) -> &crate::progress::bitcoin_peers::BitcoindStatus {
        &self.progress.bitcoin.rpc
    }

    fn succeeded(&mut self) {
        if self.backoff.failures() > 0 {
            info!("bitcoind at {} answers again", self.rpc.url());
        }
        self.backoff.reset();
        self.status().answered();
    }

    /// bitcoind answered, but not what it should: noted, and it backs off.
    fn failed(&mut self, why: &str) {
        self.status().failed(true, why);
        self.back_off();
    }

    fn back_off(&mut self) {
        let wait = self.backoff.fail();
        self.retry_at = Instant::now() + wait;
        debug!(
            "bitcoind at {}: asked again in {} ms",
            self.rpc.url(),
            wait.as_millis()
        );
    }

    /// Notes a failed call (logged once when bitcoind stops answering) and
    /// the error that names it.
    fn rpc_error(&self, e: &RpcError) -> SourceError {
        let answered = matches!(
            e,
            RpcError::Refused { .. } | RpcError::BadAnswer { .. } | RpcError::TooLarge { .. }
        ) && !e.is_warming_up();
        let err =
            SourceError::unreachable(format!("bitcoind at {} cannot be asked", self.rpc.url()), e);
        if self.backoff.failures() == 0 {
            warn!("{err}; the peers are read meanwhile");
        }
        self.status().failed(answered, &err.to_string());
        err
    }
}
