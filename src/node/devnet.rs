//! A devnet node's chain source: the embedded devnet opened on the ledger,
//! its prefill verified by the sync thread before the node serves, then the
//! sync thread handed to the devnet's control loop (`dev_*` calls, new
//! blocks on a timer).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use log::info;

use super::NodeError;
use crate::config::Config;
use crate::ledger::Ledger;
use crate::progress::Progress;
use crate::source::devnet::{Devnet, DevnetConfig};
use crate::stop::Stop;
use crate::sync::devnet::DevnetControl;
use crate::sync::{SyncConfig, Syncer};

/// Blocks a devnet's write transaction holds.
const DEVNET_COMMIT_BLOCKS: u64 = 200;

/// Opens the devnet, runs its prefill, starts the sync thread; returns it
/// and the devnet's controls.
pub(super) fn start(
    dev: &DevnetConfig,
    config: &Config,
    ledger: &Arc<Ledger>,
    progress: &Arc<Progress>,
    stop: &Arc<Stop>,
) -> Result<(JoinHandle<()>, DevnetControl), NodeError> {
    let forks = config.chain.forks();
    let devnet = Devnet::open(dev.clone(), forks, ledger.clone())?;
    let sync_config = SyncConfig {
        // A write transaction's worth: fewer than a follower's, as LMDB keeps
        // the dirty pages of the largest one for the life of the process
        // (see `SyncConfig::commit_blocks`) and a devnet's blocks come
        // faster than any commit (docs/PERFORMANCE.md, memory).
        chunk: DEVNET_COMMIT_BLOCKS,
        commit_blocks: DEVNET_COMMIT_BLOCKS,
        // While it prefills nothing is served yet: both cores verify (the
        // fetch thread signs meanwhile); then one (see
        // `SyncConfig::verify_threads`).
        verify_threads: 2,
        poll: poll(dev),
        sequencer_pubkey: Some(devnet.public_key()),
        forks,
        // Its own image (shown in /health for followers to pin).
        receipts: config.receipt_rules(),
        ..SyncConfig::default()
    };
    let _ = progress.proof_rules.set(sync_config.receipts);
    let mut syncer = Syncer::new(ledger.clone(), devnet, progress.clone(), sync_config);
    let started = Instant::now();
    syncer.catch_up(stop)?;
    if stop.is_stopped() {
        return Err(NodeError::Stopped);
    }
    syncer.set_verify_threads(1);
    // The heap the prefill used goes back before serving.
    crate::memory::trim();
    info!(
        "devnet ready: head {} after {:.2?}",
        progress.l2_synced.load(Relaxed),
        started.elapsed()
    );
    let thread_stop = stop.clone();
    let (control, jobs) = DevnetControl::channel();
    let thread = super::thread("sync", move || {
        crate::sync::devnet::run(syncer, jobs, &thread_stop)
    })?;
    Ok((thread, control))
}

/// How often the sync thread looks for new devnet blocks.
fn poll(dev: &DevnetConfig) -> Duration {
    let ms = if dev.block_ms == 0 {
        250
    } else {
        (dev.block_ms / 4).clamp(5, 250)
    };
    Duration::from_millis(ms)
}
