//! Starting the server (the listening socket, tiny_http, the connection
//! tracker thread) and serving until stopped: [`Server`]'s methods.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::closed::ClosedConns;
use super::supervisor::start_tiny;
use super::tracker::Tracker;
use super::write::DateCache;
use super::*;

impl Server {
    /// Binds (port 0 is fine), sets socket options and starts tiny_http.
    pub fn bind(addr: &str, config: ServerConfig) -> Result<Server, ServerError> {
        let listen_err = |source| ServerError::Listen {
            addr: addr.to_string(),
            source,
        };
        match socket::raise_nofile_limit() {
            Ok(n) => log::debug!("open file limit: {n}"),
            Err(e) => log::warn!("cannot raise the open file limit: {e}"),
        }
        let addrs: Vec<SocketAddr> = addr.to_socket_addrs().map_err(listen_err)?.collect();
        let listener = if config.reuse_port {
            socket::bind_reuse_port(&addrs).map_err(listen_err)?
        } else {
            TcpListener::bind(&addrs[..]).map_err(listen_err)?
        };
        socket::configure_listener(&listener, config.idle_timeout, write::SEND_TIMEOUT)
            .map_err(listen_err)?;
        let local = listener.local_addr().map_err(listen_err)?;
        let tiny = start_tiny(&listener)?;
        let shared = Arc::new(Shared {
            current: Mutex::new(Arc::new(tiny)),
            stop: AtomicBool::new(false),
        });
        let stats = Arc::new(Stats::default());
        let (tx, rx) = mpsc::channel();
        let (close_tx, close_rx) = mpsc::channel();
        let live_peers = Arc::new(Mutex::new(Vec::new()));
        let tracker = Tracker {
            local,
            shared: Arc::downgrade(&shared),
            stats: stats.clone(),
            rx: close_rx,
            live_peers: live_peers.clone(),
        };
        std::thread::Builder::new()
            .name("ledgerd-conns".into())
            .spawn(move || tracker.run())
            .map_err(|e| ServerError::Start(format!("cannot start a thread: {e}")))?;
        Ok(Server {
            listener,
            local,
            config,
            shared,
            stats,
            tx,
            rx,
            close_tx,
            live_peers,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    pub fn stopper(&self) -> Stopper {
        Stopper {
            shared: self.shared.clone(),
        }
    }

    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// Serves until `Stopper::stop`. The handler runs on this thread only.
    pub fn run<H: Handler>(self, handler: &mut H) -> Result<(), ServerError> {
        let mut lp = Loop {
            conns: HashMap::new(),
            body_buf: Vec::with_capacity(1024),
            out: Vec::with_capacity(2048),
            date: DateCache::new(),
            last_prune: Instant::now(),
            fds: fds::FdTable::default(),
            last_rebuild: None,
            rebuild_due: None,
            deferred: HashMap::new(),
            next_deferred: 0,
            closed: ClosedConns::default(),
            server: self,
        };
        lp.run(handler);
        // Refuse new connections now, not whenever tiny_http's accept thread
        // closes its copy of the listening socket.
        socket::stop_listening(&lp.server.listener);
        Ok(())
    }
}
