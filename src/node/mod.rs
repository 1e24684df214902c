//! A running node: the ledger, the sync thread and the server, started and
//! stopped together. `Node::start` is the list of steps; the chain
//! source's part is `devnet.rs` (the embedded devnet and its control loop)
//! or `follower.rs` (upstreams, and Bitcoin read from bitcoind or peers),
//! each source built in its own room (`source::*`).
//!
//! `main` builds one from the command line; tests and other projects build
//! one in-process with [`Node::builder`], and drive its devnet with
//! [`Node::devnet`].

use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::thread::JoinHandle;

use log::{error, info};

mod devnet;
mod ephemeral;
mod follower;

use crate::chain_rules::Network;
use crate::config::{Config, SourceConfig};
use crate::ledger::{Ledger, LedgerError, OpenOptions};
use crate::progress::Progress;
use crate::routes::{Cors, Routes};
use crate::rpc::{DevAccess, Rpc, RpcConfig};
use crate::server::{Server, ServerError, Stopper};
use crate::source::bitcoin::config::BitcoinConfig;
use crate::source::devnet::{DevnetConfig, DevnetError};
use crate::stop::Stop;
use crate::sync::devnet::DevnetControl;
use crate::sync::SyncError;
use ephemeral::EphemeralDir;

/// Why a node could not start.
#[derive(Debug)]
pub enum NodeError {
    Ledger(LedgerError),
    Devnet(DevnetError),
    Sync(SyncError),
    Server(ServerError),
    Thread(std::io::Error),
    /// The Bitcoin source cannot be used: another network, or another
    /// chain's headers in the ledger (a sentence that says so).
    Bitcoin(String),
    /// Stopped (Ctrl-C) before it was ready.
    Stopped,
}

impl std::fmt::Display for NodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeError::Ledger(e) => write!(f, "{e}"),
            NodeError::Devnet(e) => write!(f, "{e}"),
            NodeError::Sync(e) => write!(f, "the devnet prefill failed: {e}"),
            NodeError::Server(e) => write!(f, "{e}"),
            NodeError::Thread(e) => write!(f, "cannot start a thread: {e}"),
            NodeError::Bitcoin(e) => f.write_str(e),
            NodeError::Stopped => f.write_str("stopped before the node was ready"),
        }
    }
}

impl std::error::Error for NodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // These print their inner error's sentence as their own: its
            // cause is theirs too.
            NodeError::Ledger(e) => e.source(),
            NodeError::Devnet(e) => e.source(),
            NodeError::Server(e) => e.source(),
            NodeError::Sync(e) => Some(e),
            NodeError::Thread(e) => Some(e),
            NodeError::Bitcoin(_) | NodeError::Stopped => None,
        }
    }
}

wrap_errors!(NodeError {
    Ledger(LedgerError),
    Devnet(DevnetError),
    Sync(SyncError),
    Server(ServerError),
});

/// Builds a [`Node`]: `Node::builder().data_dir(dir).dev(DevnetConfig::default()).bind("127.0.0.1:0").start()`.
#[derive(Clone, Debug, Default)]
pub struct NodeBuilder {
    config: Config,
    stop: Option<Arc<Stop>>,
}

impl NodeBuilder {
    /// Starts from a whole [`Config`] (what `main` does).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }
    pub fn data_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.config.data_dir = dir.into();
        self
    }
    /// Runs the embedded devnet.
    pub fn dev(mut self, dev: DevnetConfig) -> Self {
        self.config.source = SourceConfig::Devnet(dev);
        self
    }
    /// Follows another node instead of running the devnet; called again,
    /// adds a fallback (the first is preferred).
    pub fn upstream(mut self, url: &str) -> Self {
        match &mut self.config.source {
            SourceConfig::Upstream { urls, .. } => urls.push(url.to_string()),
            other => {
                *other = SourceConfig::Upstream {
                    urls: vec![url.to_string()],
                    bitcoin: None,
                }
            }
        }
        self
    }
    /// Reads the DA layer from this bitcoind instead of the upstream (as
    /// `--bitcoin-rpc`; after [`NodeBuilder::upstream`]).
    pub fn bitcoin(mut self, bitcoin: BitcoinConfig) -> Self {
        if let SourceConfig::Upstream { bitcoin: b, .. } = &mut self.config.source {
            *b = Some(bitcoin);
        }
        self
    }
    /// `--ephemeral`: run on a new temporary data dir, removed when the
    /// node stops (instead of [`data_dir`](Self::data_dir)).
    pub fn ephemeral(mut self) -> Self {
        self.config.ephemeral = true;
        self
    }
    pub fn bind(mut self, addr: &str) -> Self {
        self.config.bind = addr.to_string();
        self
    }
    /// `GET /health` answers 503 once the sync thread has stalled this long (default 60 s).
    pub fn health_max_lag(mut self, lag: std::time::Duration) -> Self {
        self.config.health_max_lag = lag;
        self
    }
    /// Follows a public Citrea network's chain rules: its Kumquat height and
    /// sequencer key (as `--network`; not with the devnet).
    pub fn network(mut self, network: Network) -> Self {
        self.config.chain.network = Some(network);
        self
    }
    /// Genesis rules below L2 height `height`, Kumquat from it (overrides
    /// the network's; default: Kumquat from 0).
    pub fn kumquat_height(mut self, height: u64) -> Self {
        self.config.chain.kumquat_height = Some(height);
        self
    }
    /// The sequencer key blocks must carry (overrides the network's).
    pub fn sequencer_pubkey(mut self, key: [u8; 32]) -> Self {
        self.config.chain.sequencer_pubkey = Some(key);
        self
    }
    /// Only this browser origin may read answers (default: any, `*`).
    pub fn cors_origin(mut self, origin: &str) -> Self {
        self.config.cors_origin = Some(origin.to_string());
        self
    }

    /// Shares a stop signal (main's, set by Ctrl-C) so a long prefill can be interrupted.
    pub fn stop_signal(mut self, stop: Arc<Stop>) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Opens the ledger, runs the devnet prefill, starts the sync thread and
    /// the server. The server accepts connections when this returns.
    pub fn start(self) -> Result<Node, NodeError> {
        Node::start(self.config, self.stop.unwrap_or_default())
    }
}

/// Starts thread `name` running `run`.
fn thread(name: &str, run: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, NodeError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(run)
        .map_err(NodeError::Thread)
}

/// A running node. Dropping it stops it (see [`Node::shutdown`]).
pub struct Node {
    addr: SocketAddr,
    ledger: Arc<Ledger>,
    progress: Arc<Progress>,
    stop: Arc<Stop>,
    server: Option<Stopper>,
    threads: Vec<JoinHandle<()>>,
    devnet: Option<DevnetControl>,
    /// `--ephemeral`: the temporary data dir, removed when the node is
    /// dropped (after the threads that use it are joined). Its ledger
    /// commits without fsync (`OpenOptions::no_sync`): nothing outlives it.
    _ephemeral: Option<EphemeralDir>,
}

impl Node {
    pub fn builder() -> NodeBuilder {
        NodeBuilder::default()
    }

    fn start(mut config: Config, stop: Arc<Stop>) -> Result<Node, NodeError> {
        let ephemeral = if config.ephemeral && !config.read_only {
            let dir = EphemeralDir::create()?;
            info!(
                "--ephemeral: data dir {}, removed when the node stops",
                dir.0.display()
            );
            config.data_dir = dir.0.clone();
            Some(dir)
        } else {
            None
        };
        if config.source.devnet().is_some() && config.chain.network.is_some() {
            return Err(NodeError::Devnet(DevnetError::OtherChain(
                "the devnet signs with its own key, not a network's: give it --kumquat-height instead of --network".into(),
            )));
        }
        let open = OpenOptions {
            read_only: config.read_only,
            no_sync: ephemeral.is_some(),
            ..OpenOptions::default()
        };
        let ledger = Arc::new(Ledger::open(&config.data_dir, &open)?);
        let progress = Arc::new(Progress::default());
        let mut threads = Vec::new();
        let mut devnet_control = None;
        let forks = config.chain.forks();
        let source = if config.read_only {
            &SourceConfig::None
        } else {
            &config.source
        };
        if !matches!(source, SourceConfig::None) {
            progress.has_source.store(true, Relaxed);
            // The chain is verified (or made) by one fork table for its
            // whole life: refuse a data dir that holds another's.
            let mut w = ledger.writer()?;
            w.pin_fork_table(&forks)?;
            w.commit()?;
        }

        match source {
            SourceConfig::None if config.read_only => {
                // serve-readonly: no chain source; follow what another process writes.
                crate::replica::refresh(&ledger, &progress)?;
                let (l, p, s) = (ledger.clone(), progress.clone(), stop.clone());
                let follow = move || crate::replica::follow(l, p, s, crate::replica::POLL);
                threads.push(thread("replica", follow)?);
            }
            SourceConfig::None => {
                info!("no chain source (--dev or --upstream): serving the stored ledger as it is");
            }
            SourceConfig::Devnet(dev) => {
                let (thread, control) = devnet::start(dev, &config, &ledger, &progress, &stop)?;
                threads.push(thread);
                devnet_control = Some(control);
            }
            SourceConfig::Upstream { urls, bitcoin } => {
                threads.push(follower::start(
                    urls,
                    bitcoin.as_ref(),
                    &config,
                    &ledger,
                    &progress,
                    &stop,
                )?);
            }
        }

        let server = Server::bind(&config.bind, config.server.clone()).inspect_err(|_| {
            stop.stop();
            for t in threads.drain(..) {
                let _ = t.join();
            }
        })?;
        let addr = server.local_addr();
        let stopper = server.stopper();
        // dev_* calls change the chain: from this machine only, unless asked.
        let dev_access = match (&devnet_control, config.source.devnet()) {
            (Some(control), Some(dev)) if addr.ip().is_loopback() || dev.allow_remote_control => {
                DevAccess::On(control.clone())
            }
            (Some(_), _) => DevAccess::Refused(addr.to_string()),
            (None, _) => DevAccess::Off,
        };
        let rpc = Arc::new(
            Rpc::new(
                ledger.clone(),
                progress.clone(),
                RpcConfig {
                    max_range: config.max_range(),
                    max_batch: config.max_batch,
                    wire: config.wire,
                },
            )
            .with_dev(dev_access)
            .with_blocks_on_demand(config.source.devnet().is_some_and(|d| d.block_ms == 0)),
        );
        let source = source.kind();
        let cors = config.cors_origin.clone().map_or(Cors::Any, Cors::Origin);
        let mut routes = Routes::new(rpc)
            .health(source, config.health_max_lag, config.health_max_behind)
            .cors(cors)
            .stats(server.stats());
        threads.push(thread("server", move || {
            if let Err(e) = server.run(&mut routes) {
                error!("server stopped: {e}");
            }
        })?);
        info!("serving {} on http://{addr}", ledger.path().display());
        Ok(Node {
            addr,
            ledger,
            progress,
            stop,
            server: Some(stopper),
            threads,
            devnet: devnet_control,
            _ephemeral: ephemeral,
        })
    }

    /// The embedded devnet's controls (`None` unless started with
    /// [`NodeBuilder::dev`]): mine, commit, prove and inject now. Each call
    /// returns once its effect is readable; from this process they work
    /// whatever the bind address.
    pub fn devnet(&self) -> Option<&DevnetControl> {
        self.devnet.as_ref()
    }

    /// The address the server listens on (the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://HOST:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The ledger, for direct reads.
    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }

    /// The sync progress.
    pub fn progress(&self) -> &Arc<Progress> {
        &self.progress
    }

    /// Stops the server and the sync thread and waits for both.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.stop.stop();
        if let Some(s) = self.server.take() {
            s.stop();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}
