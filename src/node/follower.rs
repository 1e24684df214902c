//! A follower's chain source: its upstreams (the first preferred, the
//! others fallbacks, a watcher thread keeping their heads), and the DA layer
//! from the upstream, from bitcoind (`--bitcoin-rpc`) or from Bitcoin's P2P
//! network (`--bitcoin-peer`), each built in its own room.

use std::sync::Arc;
use std::thread::JoinHandle;

use log::{info, warn};

use super::NodeError;
use crate::checks::BlockRules;
use crate::config::Config;
use crate::ledger::Ledger;
use crate::progress::Progress;
use crate::source::bitcoin::config::BitcoinConfig;
use crate::source::bitcoin::p2p::da::PeersDa;
use crate::source::bitcoin::rpc::da::BitcoinDa;
use crate::source::upstream::failover::Upstreams;
use crate::source::{DaSource, L2Source};
use crate::stop::Stop;
use crate::sync::{DaSide, Separate, SyncConfig, Syncer};

/// Starts the sync thread (and the upstream watcher, not joined: it touches
/// no ledger); returns the sync thread.
pub(super) fn start(
    urls: &[String],
    bitcoin: Option<&BitcoinConfig>,
    config: &Config,
    ledger: &Arc<Ledger>,
    progress: &Arc<Progress>,
    stop: &Arc<Stop>,
) -> Result<JoinHandle<()>, NodeError> {
    let forks = config.chain.forks();
    let mut sync_config = SyncConfig {
        chunk: config.sync_chunk,
        sequencer_pubkey: config.chain.sequencer_key(),
        forks,
        concurrency: config.sync_concurrency,
        block_rules: BlockRules {
            allow_missing_tx_bodies: config.allow_missing_tx_bodies,
        },
        receipts: config.receipt_rules(),
        ..SyncConfig::default()
    };
    let _ = progress.proof_rules.set(sync_config.receipts);
    if !sync_config.receipts.images_pinned() {
        warn!(
            "batch-proof images are not pinned (no --network, no {flag}): each proof's receipt \
             is verified against the image it claims, so a proof of any program counts; pin the \
             chain's guest images with {flag} genesis=HEX and {flag} kumquat=HEX (a ledgerd \
             devnet shows its own in /health, batchProofImages); /health and /metrics count the \
             proofs accepted meanwhile",
            flag = crate::proof::image_ids::BATCH_PROOF_IMAGE
        );
    }
    if bitcoin.is_some() {
        // Bitcoin blocks come in batches of raw blocks (cheap, several
        // batches in flight): ask for many at once. 16 a request let the
        // scanned height move with each commit, but each request drained
        // the peer's window: 72 blocks/s against 140 on mainnet-shaped
        // blocks (docs/PERFORMANCE.md, issue 37).
        sync_config.slots_per_fetch = 200;
    }
    // An upstream more than half the health limit behind the best one is
    // passed over, so following it cannot make us unhealthy.
    let (upstreams, watcher) = Upstreams::new(
        urls,
        config.upstream_ca.as_deref(),
        config.upstream_max_rps,
        progress.clone(),
        config.health_max_behind / 2,
        sync_config.max_backoff,
    );
    let first = upstreams.in_use().to_string();
    let key_name = config
        .chain
        .sequencer_key()
        .map(hex::encode)
        .unwrap_or_else(|| "of the first block".into());
    let rules = format!("{forks}, sequencer key {key_name}");
    let sync = match bitcoin {
        None => {
            info!("following {first}: {rules}");
            let syncer = Syncer::new(ledger.clone(), upstreams, progress.clone(), sync_config);
            spawn(syncer, stop)?
        }
        Some(b) if b.p2p => {
            let (da, what) =
                PeersDa::start(b, ledger, progress, stop).map_err(NodeError::Bitcoin)?;
            info!("following {first} (L2) and {what}: {rules}");
            spawn_with_da(upstreams, da, ledger, progress, sync_config, stop)?
        }
        Some(b) => {
            let (da, what) =
                BitcoinDa::start(b, ledger, progress, stop).map_err(NodeError::Bitcoin)?;
            info!("following {first} (L2) and {what}: {rules}");
            spawn_with_da(upstreams, da, ledger, progress, sync_config, stop)?
        }
    };
    if urls.len() > 1 {
        let names = progress.upstream_urls.get().map(|u| u[1..].join(", "));
        info!("fallback upstreams: {}", names.unwrap_or_default());
    }
    // Not joined on shutdown: it touches no ledger, and a head request to an
    // upstream that does not answer may hold it for its read timeout; it
    // ends at its next look once stopped.
    let thread_stop = stop.clone();
    super::thread("upstream-watch", move || watcher.run(&thread_stop))?;
    Ok(sync)
}

/// The sync thread of a follower whose DA layer comes from Bitcoin.
fn spawn_with_da<L, D>(
    l2: L,
    da: D,
    ledger: &Arc<Ledger>,
    progress: &Arc<Progress>,
    sync_config: SyncConfig,
    stop: &Arc<Stop>,
) -> Result<JoinHandle<()>, NodeError>
where
    L: L2Source + Send + 'static,
    D: DaSource + Send + 'static,
    Separate<D>: DaSide<L> + 'static,
{
    let syncer = Syncer::with_da(
        ledger.clone(),
        l2,
        Separate(da),
        progress.clone(),
        sync_config,
    );
    spawn(syncer, stop)
}

/// Starts the sync thread of a follower.
fn spawn<L, D>(syncer: Syncer<L, D>, stop: &Arc<Stop>) -> Result<JoinHandle<()>, NodeError>
where
    L: L2Source + Send + 'static,
    D: DaSide<L> + 'static,
{
    syncer.load_progress()?;
    let thread_stop = stop.clone();
    super::thread("sync", move || syncer.run(&thread_stop))
}
