//! What the sync thread and its sources have done, shared with the server
//! without locks.
//!
//! The sync thread and the chain sources (a follower's upstreams, bitcoind,
//! Bitcoin peers) write these counters; the server reads them to answer
//! `svc_syncStatus`, `/health` and `/metrics`. Every field is an atomic, so a
//! reader may see one layer updated before the other, never a torn number.
//! It lives below all of them, beside the sources, so that none imports
//! another's layer to reach it.
//!
//! - this file: [`Progress`] and the Bitcoin source's [`BitcoinProgress`].
//! - [`block_time`]: the time to verify and store a block, as a histogram.
//! - [`waiting`]: the refused record the DA scan waits on (logged once).
//! - `latest`: [`Latest`], for what is set whole and read (a reason, a tip).

pub mod bitcoin_peers;
pub mod block_time;
mod latest;
pub mod waiting;

pub use latest::Latest;

use crate::types::LayerStatus;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// Shared sync progress.
#[derive(Debug, Default)]
pub struct Progress {
    /// Newest L2 height the source has reported (0: none seen yet).
    pub l2_source_head: AtomicU64,
    /// Newest L2 height stored in the ledger.
    pub l2_synced: AtomicU64,
    /// Newest DA slot the source has reported as scanned.
    pub l1_source_head: AtomicU64,
    /// Newest DA slot this ledger has scanned.
    pub l1_synced: AtomicU64,
    /// Unix milliseconds of the last block stored (0: none since start).
    pub last_block_unix_ms: AtomicU64,
    /// Whether the last request to the source succeeded.
    pub source_reachable: AtomicBool,
    /// Blocks verified and stored since start.
    pub blocks_verified: AtomicU64,
    /// Blocks the ledger holds that were accepted without their transaction
    /// bodies (`--allow-missing-tx-bodies`), counted over the ledger's life.
    pub blocks_without_bodies: AtomicU64,
    /// Upstream requests that failed since start.
    pub upstream_errors: AtomicU64,
    /// Verification failures since start, by check.
    pub failures: FailureCounts,
    /// Unix milliseconds of the last request to the source that succeeded (0: none yet).
    pub source_ok_unix_ms: AtomicU64,
    /// Whether the node has a chain source (a devnet or upstreams; not a
    /// stored ledger served as it is): set once at start.
    pub has_source: AtomicBool,
    /// Why the last request to the source failed, while it fails (a TLS
    /// refusal, a refused connection, an HTTP error): `/health` shows it.
    pub source_problem: Latest<String>,
    /// Unix milliseconds since when the ledger has been behind the source's
    /// heads without catching up (0: caught up). `/health` uses it.
    pub behind_since_unix_ms: AtomicU64,
    /// Unix milliseconds of the last DA slot scanned (0: none since start).
    pub last_slot_unix_ms: AtomicU64,
    /// A follower's upstreams (`--upstream`, preferred first, as shown to
    /// operators: without user names or passwords); set once at start.
    pub upstream_urls: OnceLock<Vec<String>>,
    /// Which of `upstream_urls` the sync thread asks now.
    pub upstream_in_use: AtomicUsize,
    /// Times the follower has moved to another upstream since start.
    pub upstream_switches: AtomicU64,
    /// Each upstream's 429 and 503 answers, by `upstream_urls` index; set
    /// once at start.
    pub upstream_pushback: OnceLock<Vec<std::sync::Arc<Pushback>>>,
    /// The upstreams refused for serving another chain, by `upstream_urls`
    /// index, and what differs (see `source::ChainIdentity`).
    pub upstreams_refused: Mutex<Vec<(usize, String)>>,
    /// The Bitcoin DA source's state (`--bitcoin-rpc`; untouched without it).
    pub bitcoin: BitcoinProgress,
    /// The time to verify and store a block (`ledgerd_sync_block_seconds`).
    pub block_time: block_time::BlockTimes,
    /// The rules proofs are held to (which batch-proof images); set once at
    /// start by a node with a chain source, for `/health` and `/metrics`.
    pub proof_rules: OnceLock<crate::proof::ProofRules>,
    /// The refused record the DA scan waits on.
    pub waiting: waiting::Waiting,
}

/// Why a Bitcoin transaction that looked like Citrea's was not taken: the
/// `reason` label of `ledgerd_bitcoin_reveals_refused_total`.
pub const REFUSAL_REASONS: [&str; 11] = [
    "signature",
    "other_key",
    "envelope",
    "kind",
    "brotli",
    "bound",
    "borsh",
    "chunk",
    "receipt",
    "journal",
    "journal_key",
];

/// A Bitcoin DA source's state, shared with `/health` and `/metrics`.
#[derive(Debug, Default)]
pub struct BitcoinProgress {
    /// bitcoind's RPC URL (without credentials); set once at start.
    pub url: OnceLock<String>,
    /// Whether the last call to bitcoind got an answer.
    pub reachable: AtomicBool,
    /// Unix milliseconds of bitcoind's last answer (0: none yet).
    pub ok_unix_ms: AtomicU64,
    /// Why the last call to bitcoind failed (`None` while it answers).
    pub problem: Latest<String>,
    /// A scanned slot that is no longer the chain's block at its height
    /// (a reorg deeper than the finality depth): what was found. `/health`
    /// answers 503 while it is set.
    pub reorg: Latest<String>,
    /// Transactions refused, by [`REFUSAL_REASONS`] index.
    pub refused: [AtomicU64; REFUSAL_REASONS.len()],
    /// Sequencer commitments and proofs taken from Bitcoin since start.
    pub commitments_found: AtomicU64,
    pub proofs_found: AtomicU64,
    /// Blocks fetched and checked against their headers since start, from
    /// bitcoind's RPC and the peers alike (each block once, when all is well).
    pub blocks_fetched: AtomicU64,
    /// The P2P source's peers (`--bitcoin-peer`; empty without it).
    pub peers: bitcoin_peers::PeersStatus,
    /// bitcoind's RPC read beside the peers (both flags; unset otherwise).
    pub rpc: bitcoin_peers::BitcoindStatus,
    /// The verified header chain the scan follows.
    pub headers: HeaderProgress,
}

/// The Bitcoin header chain's state, for `/health` and `/metrics`.
#[derive(Debug, Default)]
pub struct HeaderProgress {
    /// The network (`--bitcoin-chain`); set once the chain is open.
    pub chain: OnceLock<&'static str>,
    /// The best header's height.
    pub height: AtomicU64,
    /// Headers checked by Bitcoin Core's rules since start.
    pub verified: AtomicU64,
    /// Whether the best chain has the network's minimum chainwork.
    pub min_work_met: AtomicBool,
    /// The best header's hash and the chain's total work (hex), as shown.
    pub tip: Latest<HeaderTip>,
}

/// The best header, as `/health` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct HeaderTip {
    /// Display order (as bitcoind prints it).
    pub hash: String,
    /// Total work, hex without leading zeros.
    pub chainwork: String,
    /// log2 of the total work (a gauge Prometheus can plot).
    pub chainwork_log2: f64,
}

impl HeaderProgress {
    /// Publishes `chain`'s state.
    pub fn note(&self, chain: &crate::headers::HeaderTree) {
        let _ = self.chain.set(chain.chain().name());
        let tip = chain.tip();
        self.height.store(tip.height, Relaxed);
        self.verified.store(chain.verified(), Relaxed);
        self.min_work_met
            .store(chain.meets_min_chainwork(), Relaxed);
        let work = hex::encode(tip.chainwork.to_be_bytes());
        // Without leading zeros; "0" for no work.
        let digits = work.find(|c| c != '0').unwrap_or(work.len() - 1);
        let shown = HeaderTip {
            hash: tip.hash.to_string(),
            chainwork: work[digits..].to_string(),
            chainwork_log2: tip.chainwork.log2(),
        };
        self.tip.set(Some(shown));
    }

    /// The best header, once known.
    pub fn tip(&self) -> Option<HeaderTip> {
        self.tip.get()
    }
}

impl BitcoinProgress {
    /// Counts one refusal under `reason` (one of [`REFUSAL_REASONS`]).
    pub fn refused(&self, reason: &str) {
        bitcoin_peers::bump(&REFUSAL_REASONS, &self.refused, reason);
    }

    /// How many were refused under `reason`.
    pub fn refused_count(&self, reason: &str) -> u64 {
        bitcoin_peers::count(&REFUSAL_REASONS, &self.refused, reason)
    }

    /// Records an answer from bitcoind.
    pub fn answered(&self) {
        self.reachable.store(true, Relaxed);
        self.ok_unix_ms.store(unix_ms(), Relaxed);
        self.problem.set(None);
    }

    /// Records that bitcoind could not be asked, and why.
    pub fn failed(&self, why: &str) {
        self.reachable.store(false, Relaxed);
        self.problem.set(Some(why.to_string()));
    }

    /// Whether this node reads Bitcoin and bitcoind does not answer now.
    pub fn is_down(&self) -> bool {
        self.url.get().is_some() && !self.reachable.load(Relaxed)
    }
}

/// An upstream's answers that said to wait, by status (`/metrics`:
/// `ledgerd_sync_upstream_pushback_total`).
#[derive(Debug, Default)]
pub struct Pushback {
    /// HTTP 429 Too Many Requests.
    pub too_many_requests: AtomicU64,
    /// HTTP 503 Service Unavailable.
    pub unavailable: AtomicU64,
}

/// Verification failures by the check that failed.
#[derive(Debug, Default)]
pub struct FailureCounts {
    pub prev_hash: AtomicU64,
    pub hash: AtomicU64,
    pub signature: AtomicU64,
    pub pub_key: AtomicU64,
    pub merkle_root: AtomicU64,
    pub proof: AtomicU64,
    pub receipt: AtomicU64,
    pub da_slot: AtomicU64,
    pub other: AtomicU64,
}

/// A layer's status from the newest head its source reported and what the
/// ledger holds; `blind`: the chain cannot be seen now, so it is not Synced.
fn layer(head: &AtomicU64, synced: &AtomicU64, blind: bool) -> LayerStatus {
    let (head, synced) = (head.load(Relaxed), synced.load(Relaxed));
    if !blind && synced >= head {
        LayerStatus::Synced(synced)
    } else {
        let head = head.max(synced);
        LayerStatus::Syncing { head, synced }
    }
}

/// Unix time in milliseconds.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Progress {
    /// L2: Synced while the ledger holds the newest head the source reported.
    pub fn l2_status(&self) -> LayerStatus {
        layer(&self.l2_source_head, &self.l2_synced, self.unreached())
    }

    /// Whether the node has a chain source that has not answered once
    /// since start: nothing is known of the chain, so neither layer is
    /// Synced (docs/API.md, "Sync states").
    pub fn unreached(&self) -> bool {
        self.has_source.load(Relaxed) && self.source_ok_unix_ms.load(Relaxed) == 0
    }

    /// L1 (DA): Synced while the ledger has scanned the newest slot the
    /// source reported, and (reading Bitcoin) bitcoind answers and the
    /// scanned chain is still Bitcoin's: a node that cannot see the chain
    /// does not claim to be synced with it.
    pub fn l1_status(&self) -> LayerStatus {
        let blind =
            self.unreached() || self.bitcoin.is_down() || self.bitcoin.reorg.get().is_some();
        layer(&self.l1_source_head, &self.l1_synced, blind)
    }

    /// Records that the ledger now holds L2 blocks up to `height`.
    pub fn stored_l2(&self, height: u64, new_blocks: u64) {
        self.l2_synced.store(height, Relaxed);
        if new_blocks > 0 {
            self.blocks_verified.fetch_add(new_blocks, Relaxed);
            self.last_block_unix_ms.store(unix_ms(), Relaxed);
        }
    }

    /// Records that a request to the source succeeded.
    pub fn source_ok(&self) {
        if !self.source_reachable.swap(true, Relaxed) {
            self.source_problem.set(None);
        }
        self.source_ok_unix_ms.store(unix_ms(), Relaxed);
    }

    /// Records that a request to the source failed, and why.
    pub fn source_failed(&self, why: String) {
        self.source_reachable.store(false, Relaxed);
        self.source_problem.set(Some(why));
    }

    /// Records that the ledger now has DA slots scanned up to `slot`.
    pub fn scanned_l1(&self, slot: u64, new_slots: u64) {
        self.l1_synced.store(slot, Relaxed);
        if let Some(r) = self.waiting.passed(slot) {
            log::info!(
                "DA slot {} applied after {} refusals ({} check)",
                r.slot,
                r.retries,
                r.check
            );
        }
        if new_slots > 0 {
            self.last_slot_unix_ms.store(unix_ms(), Relaxed);
        }
    }

    /// Whether either layer is behind the head its source reported.
    pub fn is_behind(&self) -> bool {
        self.l2_synced.load(Relaxed) < self.l2_source_head.load(Relaxed)
            || self.l1_synced.load(Relaxed) < self.l1_source_head.load(Relaxed)
    }

    /// The URL of the upstream in use (`None` unless following upstreams).
    pub fn upstream(&self) -> Option<&str> {
        let urls = self.upstream_urls.get()?;
        urls.get(self.upstream_in_use.load(Relaxed))
            .map(String::as_str)
    }

    /// Records that upstream `i` serves another chain (`why`: what differs).
    pub fn upstream_refused(&self, i: usize, why: String) {
        let mut refused = self
            .upstreams_refused
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if !refused.iter().any(|(j, _)| *j == i) {
            refused.push((i, why));
        }
    }

    /// The upstreams refused for serving another chain: URL and what differs.
    pub fn refused_upstreams(&self) -> Vec<(String, String)> {
        let urls = self.upstream_urls.get();
        self.upstreams_refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(i, why)| {
                let url = urls.and_then(|u| u.get(*i)).cloned().unwrap_or_default();
                (url, why.clone())
            })
            .collect()
    }

    /// When every upstream serves another chain: why, naming each (the
    /// follower has nothing to follow; `/health` answers 503).
    pub fn every_upstream_refused(&self) -> Option<String> {
        let count = self.upstream_urls.get()?.len();
        let refused = self.refused_upstreams();
        (count > 0 && refused.len() == count).then(|| {
            refused
                .iter()
                .map(|(url, why)| format!("upstream {url} serves another chain: {why}"))
                .collect::<Vec<_>>()
                .join("; ")
        })
    }

    /// Re-reads whether the ledger is behind its source: starts the "behind
    /// since" clock when it first falls behind, stops it when caught up.
    pub fn note_behind(&self) {
        if self.is_behind() {
            let _ = self
                .behind_since_unix_ms
                .compare_exchange(0, unix_ms(), Relaxed, Relaxed);
        } else {
            self.behind_since_unix_ms.store(0, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_is_syncing_only_while_behind_the_head_it_has_seen() {
        let p = Progress::default();
        assert_eq!(p.l2_status(), LayerStatus::Synced(0));
        p.l2_source_head.store(10, Relaxed);
        p.stored_l2(4, 4);
        assert_eq!(
            p.l2_status(),
            LayerStatus::Syncing {
                head: 10,
                synced: 4
            }
        );
        p.stored_l2(10, 6);
        assert_eq!(p.l2_status(), LayerStatus::Synced(10));
        assert_eq!(p.blocks_verified.load(Relaxed), 10);
    }
}
