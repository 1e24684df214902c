//! The connection tracker: a thread that counts open connections, closes
//! the ones the loop asks it to close, and frees connections stranded in
//! tiny_http's pool queue.
//!
//! - **Counting**: it rescans /proc/self/fd (at most every 10 ms while
//!   requests arrive, else every 500 ms) and counts distinct peers of
//!   sockets bound to our address.
//! - **Closing**: shutdown(SHUT_WR) at once, shutdown(SHUT_RD) a moment
//!   later, on sockets the loop holds (`fds::HeldSocket`).
//! - **Stranded connections**: tiny_http's pool can queue a new connection
//!   behind busy workers (docs/DESIGN.md). The tracker sees its request
//!   bytes wait unread (FIONREAD) and opens a throw-away connection, which
//!   makes the pool start a worker that then takes the stranded one
//!   ([`STRANDED_AFTER`]).

use std::collections::HashMap;
use std::net::{Shutdown, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::fds::{self, HeldSocket, Socket};
use super::{Shared, Stats};

/// Counts connections and closes the ones the loop asks to close.
pub(super) struct Tracker {
    pub(super) local: SocketAddr,
    pub(super) shared: Weak<Shared>,
    pub(super) stats: Arc<Stats>,
    pub(super) rx: Receiver<Vec<HeldSocket>>,
    pub(super) live_peers: Arc<Mutex<Vec<SocketAddr>>>,
}

/// Delay between shutdown(SHUT_WR) and shutdown(SHUT_RD) of a closed
/// connection, so the client reads the answer before any reset.
const CLOSE_LINGER: Duration = Duration::from_millis(250);

/// Least time between /proc/self/fd scans while requests arrive (a scan is
/// one readdir and one fstat per open fd; thousands of open sockets stretch
/// the gap to ten times the scan's own time).
const SCAN_BUSY: Duration = Duration::from_millis(10);
/// Time between scans when no request arrives, and how often the tracker
/// wakes to notice that requests started again.
const SCAN_IDLE: Duration = Duration::from_millis(500);
const SCAN_IDLE_WAKE: Duration = Duration::from_millis(50);

/// A connection whose request bytes wait unread this long has no tiny_http
/// worker: the pool queued it behind busy workers (tiny_http 0.12 util/task_pool.rs: it spawns a
/// thread only when none is idle, and a burst of arrivals sees the same idle
/// one). The tracker then opens a throw-away connection to the listener; the
/// pool, with no idle worker, starts a thread for it, and that thread, once
/// the throw-away connection ends, takes the stranded connection from the
/// queue (FIFO, so the oldest first).
const STRANDED_AFTER: Duration = Duration::from_millis(5);
/// How often sockets with unread bytes are looked at again.
const STRANDED_CHECK: Duration = Duration::from_millis(2);
/// A socket already kicked for is not kicked for again sooner than this.
const KICK_AGAIN_AFTER: Duration = Duration::from_millis(200);
/// At most this many throw-away connections per second.
const KICKS_PER_SECOND: u32 = 100;

impl Tracker {
    pub(super) fn run(self) {
        let mut table = fds::FdTable::default();
        let mut last_scan = Instant::now() - Duration::from_secs(1);
        let mut last_requests = u64::MAX;
        // Sockets half-closed (SHUT_WR) and when to close their read side.
        let mut second: Vec<(Instant, HeldSocket)> = Vec::new();
        let mut kicker = Kicker::new(self.local);
        // Time between scans while requests arrive: SCAN_BUSY, or ten times
        // what the last scan took (thousands of open sockets).
        let mut busy_gap = SCAN_BUSY;
        let mut busy = false;
        let mut last_seen = 0;
        loop {
            let wait = if kicker.watching() {
                STRANDED_CHECK
            } else if busy {
                busy_gap
            } else {
                SCAN_IDLE_WAKE
            };
            let first = match self.rx.recv_timeout(wait) {
                Ok(sockets) => sockets,
                Err(RecvTimeoutError::Timeout) => Vec::new(),
                Err(RecvTimeoutError::Disconnected) => break,
            };
            match self.shared.upgrade() {
                Some(s) if !s.stop.load(Ordering::SeqCst) => {}
                _ => break,
            }
            let now = Instant::now();
            let requests = self.stats.requests.load(Ordering::Relaxed);
            let since = now.duration_since(last_scan);
            // Dropping each closes our duplicate; tiny_http closes its fds
            // once its read returns end-of-file. (`second` is in time order.)
            let due = second.partition_point(|(t, _)| *t <= now);
            for (_, socket) in second.drain(..due) {
                socket.shutdown(Shutdown::Read);
            }
            // Closing acts on sockets we hold (our own fds): no scan needed.
            for socket in first.into_iter().chain(self.rx.try_iter().flatten()) {
                socket.shutdown(Shutdown::Write);
                second.push((now + CLOSE_LINGER, socket));
            }
            // Requests arrived since the last wake-up: wake at the busy pace.
            busy = requests != last_seen;
            last_seen = requests;
            let want_scan = (requests != last_requests && since >= busy_gap) || since >= SCAN_IDLE;
            if !want_scan {
                if kicker.watching() {
                    kicker.recheck(now, &self.stats);
                }
                continue;
            }
            last_scan = now;
            last_requests = requests;
            let count = table.scan(self.local);
            busy_gap = SCAN_BUSY.max(now.elapsed() * 10);
            self.stats.open_connections.store(count, Ordering::Relaxed);
            if let Ok(mut live) = self.live_peers.lock() {
                *live = table.peers();
            }
            kicker.update(now, table.unread(), &self.stats);
        }
    }
}

/// Finds connections stranded in tiny_http's pool queue and gets them a
/// worker (see [`STRANDED_AFTER`]).
struct Kicker {
    /// Where a throw-away connection goes (the listener; loopback if it is
    /// bound to an unspecified address).
    target: SocketAddr,
    /// Sockets with unread bytes: since when (or, once kicked for, when they
    /// may be kicked for again).
    unread: HashMap<Socket, Instant>,
    /// Start of the current one-second window and the kicks made in it.
    window: (Instant, u32),
}

impl Kicker {
    fn new(local: SocketAddr) -> Kicker {
        let mut target = local;
        if target.ip().is_unspecified() {
            target.set_ip(match target {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        Kicker {
            target,
            unread: HashMap::new(),
            window: (Instant::now(), 0),
        }
    }

    fn watching(&self) -> bool {
        !self.unread.is_empty()
    }

    /// Looks again at the sockets already seen with unread bytes.
    fn recheck(&mut self, now: Instant, stats: &Stats) {
        let still: Vec<Socket> = self
            .unread
            .keys()
            .copied()
            .filter(|s| fds::still_unread(*s))
            .collect();
        self.update(now, still, stats);
    }

    /// `unread`: every socket that has unread bytes now.
    fn update(&mut self, now: Instant, unread: Vec<Socket>, stats: &Stats) {
        let mut next = HashMap::with_capacity(unread.len());
        let mut stranded = 0;
        for sock in unread {
            let since = self.unread.get(&sock).copied().unwrap_or(now);
            if now >= since && now.duration_since(since) >= STRANDED_AFTER {
                stranded += 1;
                next.insert(sock, now + KICK_AGAIN_AFTER);
            } else {
                next.insert(sock, since);
            }
        }
        self.unread = next;
        for _ in 0..stranded {
            self.kick(now, stats);
        }
    }

    fn kick(&mut self, now: Instant, stats: &Stats) {
        if now.duration_since(self.window.0) >= Duration::from_secs(1) {
            self.window = (now, 0);
        }
        if self.window.1 >= KICKS_PER_SECOND {
            return;
        }
        self.window.1 += 1;
        match std::net::TcpStream::connect_timeout(&self.target, Duration::from_millis(50)) {
            Ok(s) => {
                stats.pool_kicks.fetch_add(1, Ordering::Relaxed);
                drop(s);
            }
            Err(e) => log::debug!("cannot open a connection to free a stranded one: {e}"),
        }
    }
}
