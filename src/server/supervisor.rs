//! Keeping tiny_http accepting: its accept thread ends for good when
//! accept() fails or times out (SO_RCVTIMEO, inherited from the listener,
//! makes it time out every idle period). The loop then builds a new
//! tiny_http `Server` on a clone of the listener ([`Loop::rebuild`]); the
//! old one is drained by a forwarder thread until its connections are gone.

use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::{Arc, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::{Loop, LoopMsg, ServerError, Shared};

/// The log target of this module's WARN lines: the module path they had
/// before the supervisor left `server/mod.rs` (RUST_LOG filters and log
/// readers name it).
const LOG_TARGET: &str = "ledgerd::server";

/// Least time between two rebuilds (a failing accept does not spin).
pub(super) const REBUILD_MIN_GAP: Duration = Duration::from_millis(100);

pub(super) fn start_tiny(listener: &TcpListener) -> Result<tiny_http::Server, ServerError> {
    let clone = listener
        .try_clone()
        .map_err(|e| ServerError::Start(format!("cannot clone the listening socket: {e}")))?;
    tiny_http::Server::from_listener(clone, None).map_err(|e| ServerError::Start(e.to_string()))
}

/// Moves requests queued on a replaced tiny_http server to the loop.
fn forward(
    old: Arc<tiny_http::Server>,
    tx: Sender<LoopMsg>,
    shared: Weak<Shared>,
    linger: Duration,
) {
    let mut last = Instant::now();
    loop {
        if let Ok(Some(rq)) = old.recv_timeout(Duration::from_millis(500)) {
            last = Instant::now();
            if tx.send(LoopMsg::Forwarded(rq)).is_err() {
                break;
            }
            match shared.upgrade() {
                Some(s) => s.wake(),
                None => break,
            }
        }
        let stopped = shared
            .upgrade()
            .is_none_or(|s| s.stop.load(Ordering::SeqCst));
        if stopped || last.elapsed() > linger {
            break;
        }
    }
}

impl Loop {
    /// Replaces the tiny_http server whose accept thread ended; the old
    /// one's connections are forwarded to the loop meanwhile.
    pub(super) fn rebuild(&mut self) {
        self.last_rebuild = Some(Instant::now());
        let fresh = match start_tiny(&self.server.listener) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                log::warn!(target: LOG_TARGET, "{e}; retrying");
                self.rebuild_due = Some(Instant::now() + REBUILD_MIN_GAP);
                return;
            }
        };
        self.server
            .stats
            .accept_restarts
            .fetch_add(1, Ordering::Relaxed);
        let old = {
            let current = self.server.shared.current.lock();
            std::mem::replace(&mut *current.unwrap_or_else(PoisonError::into_inner), fresh)
        };
        // The old server's connections still queue requests on it: forward them.
        let tx = self.server.tx.clone();
        let shared = Arc::downgrade(&self.server.shared);
        let linger = self.server.config.idle_timeout * 3 + self.server.config.body_timeout;
        let spawned = std::thread::Builder::new()
            .name("ledgerd-forward".into())
            .stack_size(64 * 1024)
            .spawn(move || forward(old, tx, shared, linger));
        if let Err(e) = spawned {
            log::warn!(target: LOG_TARGET, "cannot start a forwarder thread: {e}");
        }
    }
}
