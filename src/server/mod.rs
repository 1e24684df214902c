//! HTTP transport: one blocking tiny_http 0.12 loop on the caller's thread,
//! made safe against hostile clients.
//!
//! # Design (why each defence exists, with what was measured: `docs/DESIGN.md`)
//!
//! - **Fast path** (body ≤ 1,024 bytes, already read by tiny_http; response
//!   ≤ 64 KiB; nothing pending on the connection): the handler runs and the
//!   response is serialised by hand and written inline, no thread hand-off.
//! - **Lazy bodies** (> 1,024 bytes, `Expect`, chunked) are read on a thread
//!   per request with a deadline (`body_timeout`) and a size bound; the result
//!   comes back on a channel and the loop is woken with `Server::unblock()`.
//! - **Too large / too slow bodies** are answered 413 / 408 through
//!   `Request::upgrade()` on a side thread, which never lets tiny_http drain the
//!   body with `vec![0; Content-Length]` (body.rs).
//! - **Large or stuck responses** are written on a thread; an inline write that
//!   does not finish within 10 ms is handed over too. SO_SNDTIMEO (20 ms) on
//!   every socket bounds a single blocked send() on the loop.
//! - **Timeouts**: SO_RCVTIMEO = `idle_timeout` on the listener is inherited by
//!   accepted sockets; it also makes tiny_http's accept() time out, which ends
//!   its accept thread. A supervisor then builds a new tiny_http `Server` on a
//!   clone of the listener; the old one is drained by a forwarder thread until
//!   its connections are gone.
//! - **Framing** (framing.rs, RFC 9112 section 6): before any body is read,
//!   a request whose body length is ambiguous (two `Content-Length`s, one that
//!   is not plain digits, `Transfer-Encoding` with `Content-Length`, a
//!   coding other than `chunked`) is answered 400 or 501 and its connection
//!   closed, so the bytes after it are never taken for another request.
//! - **Closing** a connection (fairness cap, 503, 413, 400, stuck client) is
//!   done with shutdown(2) on the socket found through /proc/self/fd while its
//!   request still holds it open, through our own duplicate of its fd
//!   (`socket::HeldSocket`): neither its peer address nor its fd number may
//!   name the same connection a moment later. The write side is shut before
//!   the answer's writer is released, so nothing tiny_http writes after it
//!   (its own 400 for garbage that followed, a dropped request's 500) can
//!   reach the client. tiny_http may already have parsed requests that were
//!   pipelined behind the closing answer: the loop remembers the closed
//!   socket (`Closed`) and drops such requests unanswered and unhandled.
//!   While it does, the peer address may also name a new connection from
//!   the same port, so closes pick sockets by inode (`socket::Which`).
//! - **Counting** connections: a tracker thread rescans /proc/self/fd (at most
//!   every 10 ms while requests arrive, else every 500 ms) and counts distinct
//!   peers of sockets bound to our address.
//! - **Deferred answers**: a handler may keep a request and answer it later
//!   from another thread ([`Handler::handle_deferrable`], [`Later`]; the
//!   devnet's `dev_*` calls). The loop holds the tiny_http `Request`, serves
//!   other connections meanwhile, and writes the answer when it arrives on
//!   its channel (with a wake-up). tiny_http queues no other request of
//!   that connection meanwhile (one request per connection at a time).
//! - **Stranded connections**: tiny_http's pool can queue a new connection
//!   behind busy workers (notes item 4). The tracker sees its request bytes
//!   wait unread (FIONREAD) and opens a throw-away connection, which makes the
//!   pool start a worker that then takes the stranded one (`STRANDED_AFTER`).

mod body;
pub mod framing;
mod logging;
mod socket;
mod write;

pub use logging::QuietAcceptTimeouts;
pub use socket::set_nodelay_on_listener;

use std::collections::HashMap;
use std::fmt;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use body::{BodyResult, Reject};
use socket::{HeldSocket, Socket};
use write::{DateCache, Inline, OffLoop};

/// Transport limits.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Largest accepted request body (default 10 MiB).
    pub max_body: usize,
    /// Concurrent connections; a new connection over it is answered 503 and closed (default 100).
    pub max_connections: usize,
    /// Keep-alive idle time and per-read timeout (default 10 s).
    pub idle_timeout: Duration,
    /// The whole body must arrive within this (default 5 s).
    pub body_timeout: Duration,
    /// Longest time spent writing one response off the loop (default 10 s).
    pub write_timeout: Duration,
    /// After this many requests a keep-alive connection is closed (default 1000).
    pub max_requests_per_connection: u32,
    /// Set SO_REUSEPORT before binding, so several processes share one port
    /// and the kernel spreads connections over them (default false).
    pub reuse_port: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_body: 10 * 1024 * 1024,
            max_connections: 100,
            idle_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
            max_requests_per_connection: 1000,
            reuse_port: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    Get,
    Post,
    Options,
    Head,
    Other,
}

impl HttpMethod {
    fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Options => "OPTIONS",
            HttpMethod::Head => "HEAD",
            HttpMethod::Other => "OTHER",
        }
    }
}

#[derive(Debug)]
pub struct HttpRequest<'a> {
    pub method: HttpMethod,
    pub path: &'a str,
    pub body: &'a [u8],
    pub origin: Option<&'a str>,
    /// The `Accept` header: which answer types the client takes (a browser
    /// lists `text/html`).
    pub accept: Option<&'a str>,
}

#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    pub headers: Vec<(&'static str, String)>,
}

pub trait Handler {
    fn handle(&mut self, request: &HttpRequest<'_>) -> HttpResponse;
    /// The answer for a body over max_body (the handler writes the JSON-RPC -32007 error; status must be 413).
    fn too_large(&mut self, limit: usize) -> HttpResponse;
    /// [`Handler::handle`], or `None` after taking [`Defer::later`]: the
    /// request is then answered when that [`Later`] is, from any thread,
    /// while the loop serves other connections.
    fn handle_deferrable(
        &mut self,
        request: &HttpRequest<'_>,
        _defer: &mut Defer<'_>,
    ) -> Option<HttpResponse> {
        Some(self.handle(request))
    }
}

/// Lets a handler keep the request it is handling and answer it later
/// (see [`Handler::handle_deferrable`]).
pub struct Defer<'a> {
    tx: &'a Sender<LoopMsg>,
    shared: &'a Arc<Shared>,
    id: u64,
    taken: bool,
}

impl Defer<'_> {
    /// The answer to give later. Take it at most once per request.
    pub fn later(&mut self) -> Later {
        self.taken = true;
        Later {
            id: self.id,
            tx: self.tx.clone(),
            shared: Arc::downgrade(self.shared),
            answered: false,
        }
    }
}

/// An answer the loop waits for without blocking: [`Later::answer`] from
/// any thread sends it to the loop, which writes it. Dropped unanswered, it
/// answers 500 so the client is not left waiting.
pub struct Later {
    id: u64,
    tx: Sender<LoopMsg>,
    shared: Weak<Shared>,
    answered: bool,
}

impl Later {
    /// Gives the loop the answer and wakes it.
    pub fn answer(mut self, response: HttpResponse) {
        self.send(response);
    }

    fn send(&mut self, response: HttpResponse) {
        self.answered = true;
        if self
            .tx
            .send(LoopMsg::Answer {
                id: self.id,
                response,
            })
            .is_ok()
        {
            if let Some(shared) = self.shared.upgrade() {
                shared.wake();
            }
        }
    }
}

impl Drop for Later {
    fn drop(&mut self) {
        if !self.answered {
            self.send(json_error(
                500,
                "Internal error",
                "the request was dropped before it was answered (is the node stopping?); retry",
            ));
        }
    }
}

/// Counters shared with other threads (metrics).
#[derive(Debug, Default)]
pub struct Stats {
    /// Open client connections: distinct peers of sockets bound to our address,
    /// from a /proc/self/fd scan at most 10 ms old under load (500 ms when idle).
    pub open_connections: AtomicUsize,
    /// Requests received.
    pub requests: AtomicU64,
    /// Times tiny_http's accept thread ended and a new server was built.
    pub accept_restarts: AtomicU64,
    /// Connections whose tiny_http objects were leaked to avoid a huge drain.
    pub leaked_connections: AtomicUsize,
    /// Throw-away connections opened to get a stranded connection a tiny_http
    /// worker (see `STRANDED_AFTER`).
    pub pool_kicks: AtomicU64,
}

#[derive(Debug)]
pub enum ServerError {
    /// The address could not be bound or configured.
    Listen {
        addr: String,
        source: std::io::Error,
    },
    /// tiny_http could not start on the listener.
    Start(String),
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::Listen { addr, source } => {
                let why = match source.kind() {
                    std::io::ErrorKind::AddrInUse => "address in use".to_string(),
                    std::io::ErrorKind::AddrNotAvailable => "address not available".to_string(),
                    std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                    _ => source.to_string(),
                };
                write!(f, "cannot listen on {addr}: {why}")
            }
            ServerError::Start(why) => write!(f, "cannot start the HTTP server: {why}"),
        }
    }
}

impl std::error::Error for ServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServerError::Listen { source, .. } => Some(source),
            ServerError::Start(_) => None,
        }
    }
}

struct Shared {
    current: Mutex<Arc<tiny_http::Server>>,
    stop: AtomicBool,
}

impl Shared {
    /// Wakes the loop out of `recv()`.
    fn wake(&self) {
        let server = match self.current.lock() {
            Ok(s) => s.clone(),
            Err(p) => p.into_inner().clone(),
        };
        server.unblock();
    }
}

/// Makes `Server::run` return; `Clone + Send`, usable from any thread.
#[derive(Clone)]
pub struct Stopper {
    shared: Arc<Shared>,
}

impl Stopper {
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake();
    }
}

enum LoopMsg {
    Body {
        rq: tiny_http::Request,
        result: BodyResult,
        unread: u64,
        started: Instant,
    },
    Forwarded(tiny_http::Request),
    /// The answer to a deferred request (see [`Later`]).
    Answer {
        id: u64,
        response: HttpResponse,
    },
}

/// A request kept by the loop until its [`Later`] is answered.
struct Deferred {
    rq: tiny_http::Request,
    peer: SocketAddr,
    pending: Arc<AtomicU32>,
    is_head: bool,
    started: Instant,
    path: Option<String>,
}

pub struct Server {
    listener: TcpListener,
    local: SocketAddr,
    config: ServerConfig,
    shared: Arc<Shared>,
    stats: Arc<Stats>,
    tx: Sender<LoopMsg>,
    rx: Receiver<LoopMsg>,
    close_tx: Sender<Vec<HeldSocket>>,
    live_peers: Arc<Mutex<Vec<SocketAddr>>>,
}

struct Conn {
    requests: u32,
    /// Off-loop work on this connection (body read, response write, reject).
    /// While non-zero, responses are not written inline: tiny_http would make
    /// the loop wait for the earlier response's turn.
    pending: Arc<AtomicU32>,
}

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
            fds: socket::FdTable::default(),
            last_rebuild: None,
            rebuild_due: None,
            deferred: HashMap::new(),
            next_deferred: 0,
            closed: HashMap::new(),
            server: self,
        };
        lp.run(handler);
        // Refuse new connections now, not whenever tiny_http's accept thread
        // closes its copy of the listening socket: on Linux, shutdown(2) of a
        // listening socket closes it for every fd that shares it.
        // SAFETY: the fd is a valid socket owned by `lp.server.listener`.
        unsafe {
            libc::shutdown(
                std::os::unix::io::AsRawFd::as_raw_fd(&lp.server.listener),
                libc::SHUT_RDWR,
            );
        }
        Ok(())
    }
}

fn start_tiny(listener: &TcpListener) -> Result<tiny_http::Server, ServerError> {
    let clone = listener
        .try_clone()
        .map_err(|e| ServerError::Start(format!("cannot clone the listening socket: {e}")))?;
    tiny_http::Server::from_listener(clone, None).map_err(|e| ServerError::Start(e.to_string()))
}

struct Loop {
    server: Server,
    conns: HashMap<SocketAddr, Conn>,
    body_buf: Vec<u8>,
    out: Vec<u8>,
    date: DateCache,
    last_prune: Instant,
    /// The loop's own fd cache, for finding the socket of a connection it closes.
    fds: socket::FdTable,
    last_rebuild: Option<Instant>,
    rebuild_due: Option<Instant>,
    /// Requests whose answers come later, by [`Later`] id.
    deferred: HashMap<u64, Deferred>,
    next_deferred: u64,
    /// Connections closed after an answer, by peer: requests tiny_http still
    /// hands over from them are dropped (see [`Closed`]).
    closed: HashMap<SocketAddr, Closed>,
}

/// A connection the loop has closed (or is closing) after an answer.
/// tiny_http reads ahead: requests pipelined behind that answer may already
/// be parsed and queued, and reach the loop afterwards. They come from the
/// same peer address *and* the same socket (inode); a new connection from a
/// reused port has a new socket and is served.
struct Closed {
    at: Instant,
    inodes: Vec<u64>,
}

/// A [`Closed`] entry older than this is forgotten (a request from it after
/// that would be handled, and its answer fail on the shut socket).
const CLOSED_KEEP: Duration = Duration::from_secs(30);
/// More entries than this and the old ones are pruned.
const CLOSED_PRUNE_AT: usize = 256;
/// Hard cap on entries: over it, all are forgotten (fail open, as above).
const CLOSED_MAX: usize = 8192;

const REBUILD_MIN_GAP: Duration = Duration::from_millis(100);
const UNSPECIFIED: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::UNSPECIFIED,
    0,
));

fn method_of(m: &tiny_http::Method) -> HttpMethod {
    match m {
        tiny_http::Method::Get => HttpMethod::Get,
        tiny_http::Method::Post => HttpMethod::Post,
        tiny_http::Method::Options => HttpMethod::Options,
        tiny_http::Method::Head => HttpMethod::Head,
        _ => HttpMethod::Other,
    }
}

fn json_error(status: u16, message: &str, data: &str) -> HttpResponse {
    HttpResponse {
        status,
        content_type: "application/json",
        body: format!(
            r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32000,"message":"{message}","data":"{data}"}}}}"#
        )
        .into_bytes(),
        headers: Vec::new(),
    }
}

/// How tiny_http reads the body of `rq`, by its own rules, whatever
/// framing.rs says of them: with any `Transfer-Encoding` it decodes chunks
/// and ignores `Content-Length`; else it takes the first `Content-Length`
/// that parses as a usize.
fn body_kind(rq: &tiny_http::Request, max_body: usize) -> BodyKind {
    let mut expect = false;
    let mut chunked = false;
    let mut upgrade = false;
    for h in rq.headers() {
        if h.field.equiv("Expect") {
            expect = true;
        } else if h.field.equiv("Transfer-Encoding") {
            chunked = true;
        } else if h.field.equiv("Connection")
            && h.value.as_str().to_ascii_lowercase().contains("upgrade")
        {
            upgrade = true;
        }
    }
    match (chunked, rq.body_length()) {
        (true, _) => BodyKind::Lazy(None),
        (false, Some(n)) if n > max_body => BodyKind::TooLarge(n),
        (false, None) | (false, Some(0)) => BodyKind::Ready,
        (false, Some(n)) if n <= 1024 && !expect && !upgrade => BodyKind::Ready,
        (false, Some(n)) => BodyKind::Lazy(Some(n)),
    }
}

enum Got {
    Request(tiny_http::Request),
    Wake,
    AcceptEnded(std::io::Error),
}

/// What the headers say about the body.
enum BodyKind {
    /// Already in memory (or none).
    Ready,
    /// Declared larger than max_body.
    TooLarge(usize),
    /// Must be read from the socket.
    Lazy(Option<usize>),
}

impl Loop {
    fn current(&self) -> Arc<tiny_http::Server> {
        match self.server.shared.current.lock() {
            Ok(s) => s.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    fn run<H: Handler>(&mut self, handler: &mut H) {
        let mut tiny = self.current();
        loop {
            if self.server.shared.stop.load(Ordering::SeqCst) {
                break;
            }
            let got = match self.rebuild_due {
                Some(due) => {
                    let now = Instant::now();
                    if now >= due {
                        self.rebuild_due = None;
                        self.rebuild();
                        tiny = self.current();
                        continue;
                    }
                    match tiny.recv_timeout(due - now) {
                        Ok(Some(rq)) => Got::Request(rq),
                        Ok(None) => Got::Wake,
                        Err(e) => Got::AcceptEnded(e),
                    }
                }
                None => match tiny.recv() {
                    Ok(rq) => Got::Request(rq),
                    // An OS error is the one the accept thread queued before ending.
                    Err(e) if e.raw_os_error().is_some() => Got::AcceptEnded(e),
                    Err(_) => Got::Wake,
                },
            };
            match got {
                Got::Request(rq) => self.on_request(handler, rq),
                Got::Wake => {}
                Got::AcceptEnded(e) => {
                    // SO_RCVTIMEO made accept() time out (routine, every idle
                    // period), or accept failed (e.g. no fds: worth a warning).
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) {
                        log::debug!("the HTTP accept thread timed out; starting a new one");
                    } else {
                        log::warn!("the HTTP accept thread ended ({e}); starting a new one");
                    }
                    let now = Instant::now();
                    match self.last_rebuild {
                        Some(t) if now.duration_since(t) < REBUILD_MIN_GAP => {
                            self.rebuild_due = Some(t + REBUILD_MIN_GAP);
                        }
                        _ => {
                            self.rebuild();
                            tiny = self.current();
                        }
                    }
                }
            }
            self.drain_channel(handler);
        }
    }

    fn rebuild(&mut self) {
        self.last_rebuild = Some(Instant::now());
        let fresh = match start_tiny(&self.server.listener) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                log::warn!("{e}; retrying");
                self.rebuild_due = Some(Instant::now() + REBUILD_MIN_GAP);
                return;
            }
        };
        self.server
            .stats
            .accept_restarts
            .fetch_add(1, Ordering::Relaxed);
        let old = {
            let mut cur = match self.server.shared.current.lock() {
                Ok(c) => c,
                Err(p) => p.into_inner(),
            };
            std::mem::replace(&mut *cur, fresh)
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
            log::warn!("cannot start a forwarder thread: {e}");
        }
    }

    fn drain_channel<H: Handler>(&mut self, handler: &mut H) {
        loop {
            match self.server.rx.try_recv() {
                Ok(LoopMsg::Forwarded(rq)) => self.on_request(handler, rq),
                Ok(LoopMsg::Body {
                    rq,
                    result,
                    unread,
                    started,
                }) => self.on_body(handler, rq, result, unread, started),
                Ok(LoopMsg::Answer { id, response }) => self.on_answer(id, response),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
    }

    fn conn(&mut self, peer: SocketAddr) -> (&mut Conn, bool) {
        if self.conns.len() > 2 * self.server.config.max_connections + 1024
            && self.last_prune.elapsed() > Duration::from_secs(1)
        {
            self.last_prune = Instant::now();
            let live = match self.server.live_peers.lock() {
                Ok(l) => l.clone(),
                Err(p) => p.into_inner().clone(),
            };
            self.conns.retain(|p, c| {
                live.binary_search(p).is_ok() || c.pending.load(Ordering::Acquire) > 0
            });
        }
        let mut is_new = false;
        let conn = self.conns.entry(peer).or_insert_with(|| {
            is_new = true;
            Conn {
                requests: 0,
                pending: Arc::new(AtomicU32::new(0)),
            }
        });
        (conn, is_new)
    }

    fn on_request<H: Handler>(&mut self, handler: &mut H, mut rq: tiny_http::Request) {
        let started = Instant::now();
        let peer = rq.remote_addr().copied().unwrap_or(UNSPECIFIED);
        if !self.closed.is_empty() && self.is_after_close(peer) {
            self.discard(rq, peer);
            return;
        }
        self.server.stats.requests.fetch_add(1, Ordering::Relaxed);
        let cfg_max_conns = self.server.config.max_connections;
        let max_body = self.server.config.max_body;
        let open = self.server.stats.open_connections.load(Ordering::Relaxed);
        let (conn, is_new) = self.conn(peer);
        conn.requests = conn.requests.saturating_add(1);
        let pending = conn.pending.clone();

        let kind = body_kind(&rq, max_body);
        let framing = framing::check(
            *rq.http_version() <= tiny_http::HTTPVersion(1, 0),
            rq.headers()
                .iter()
                .map(|h| (h.field.as_str().as_str(), h.value.as_str())),
        );
        if let Err(refusal) = framing {
            self.refuse(rq, refusal, kind, peer, pending, started);
            return;
        }

        if is_new && open > cfg_max_conns {
            let resp = json_error(
                503,
                "Server busy",
                &format!("too many open connections (limit {cfg_max_conns}); retry later"),
            );
            log::debug!(
                "{} {} 503 (over {} connections)",
                method_of(rq.method()).as_str(),
                rq.url(),
                cfg_max_conns
            );
            match kind {
                BodyKind::Ready => {
                    self.body_buf.clear();
                    let _ = rq.as_reader().read_to_end(&mut self.body_buf);
                    let is_head = method_of(rq.method()) == HttpMethod::Head;
                    self.respond(rq, resp, peer, true, pending, is_head, started, None);
                }
                BodyKind::TooLarge(n) => self.reject(rq, resp, n as u64, pending),
                BodyKind::Lazy(n) => self.reject(rq, resp, n.unwrap_or(0) as u64, pending),
            }
            return;
        }

        match kind {
            BodyKind::Ready => {
                self.body_buf.clear();
                if rq.body_length().unwrap_or(0) > 0 {
                    let _ = rq.as_reader().read_to_end(&mut self.body_buf);
                }
                let body = std::mem::take(&mut self.body_buf);
                self.dispatch(handler, rq, &body, peer, pending, started);
                self.body_buf = body;
            }
            BodyKind::TooLarge(n) => {
                let mut resp = handler.too_large(max_body);
                resp.status = 413;
                log::debug!(
                    "{} {} 413 (Content-Length {n})",
                    method_of(rq.method()).as_str(),
                    rq.url()
                );
                self.reject(rq, resp, n as u64, pending);
            }
            BodyKind::Lazy(declared) => {
                pending.fetch_add(1, Ordering::AcqRel);
                let deadline = started + self.server.config.body_timeout;
                let tx = self.server.tx.clone();
                let shared = Arc::downgrade(&self.server.shared);
                let res = body::spawn_with("ledgerd-body", rq, move |mut rq| {
                    let (result, unread) = body::read_body(&mut rq, declared, max_body, deadline);
                    let _ = tx.send(LoopMsg::Body {
                        rq,
                        result,
                        unread,
                        started,
                    });
                    if let Some(s) = shared.upgrade() {
                        s.wake();
                    }
                });
                if let Err(rq) = res {
                    pending.fetch_sub(1, Ordering::AcqRel);
                    self.server
                        .stats
                        .leaked_connections
                        .fetch_add(1, Ordering::Relaxed);
                    std::mem::forget(rq);
                }
            }
        }
    }

    /// Whether a request from `peer` comes from a connection the loop has
    /// already closed after an answer (see [`Closed`]), so it is dropped.
    /// Scans /proc/self/fd, so only for peers with an entry.
    ///
    /// Yes unless `peer` now has another socket: a new connection from the
    /// same address and port (the closed socket itself may no longer be
    /// found by its peer address: getpeername fails once the client has
    /// closed too). While the closed socket also still exists, the request
    /// may be either one's: it is handled, and the entry kept, so that no
    /// socket of `peer` is closed by address meanwhile ([`Loop::which`]). A
    /// request from the closed connection then gets an answer that cannot
    /// be sent (its write side is shut).
    fn is_after_close(&mut self, peer: SocketAddr) -> bool {
        let Some(closed) = self.closed.get(&peer) else {
            return false;
        };
        if closed.at.elapsed() >= CLOSED_KEEP {
            self.closed.remove(&peer);
            return false;
        }
        let fresh = self
            .fds
            .sockets_of(self.server.local, peer)
            .iter()
            .any(|(_, ino)| !closed.inodes.contains(ino));
        if !fresh {
            return true;
        }
        // (sockets_of has just rescanned the fd table.)
        if !self.fds.has_any(&closed.inodes) {
            self.closed.remove(&peer);
        }
        false
    }

    /// Which sockets of `peer` belong to a request being answered now: all
    /// of them, except those of a connection already closed from the same
    /// address (its entry in [`Loop::closed`]).
    fn which(&self, peer: SocketAddr) -> socket::Which {
        match self.closed.get(&peer) {
            Some(c) => socket::Which::Except(c.inodes.clone()),
            None => socket::Which::All,
        }
    }

    /// Remembers that `peer`'s connection (these sockets) is being closed.
    fn mark_closed(&mut self, peer: SocketAddr, inodes: Vec<u64>) {
        if inodes.is_empty() {
            return;
        }
        let now = Instant::now();
        if self.closed.len() >= CLOSED_PRUNE_AT {
            self.closed
                .retain(|_, c| now.duration_since(c.at) < CLOSED_KEEP);
            if self.closed.len() >= CLOSED_MAX {
                self.closed.clear();
            }
        }
        let entry = self.closed.entry(peer).or_insert(Closed {
            at: now,
            inodes: Vec::new(),
        });
        entry.at = now;
        for ino in inodes {
            if !entry.inodes.contains(&ino) {
                entry.inodes.push(ino);
            }
        }
    }

    /// Drops a request that arrived on a connection already answered with
    /// its last answer: nothing is written (its write side is shut anyway)
    /// and the handler never sees it.
    fn discard(&mut self, rq: tiny_http::Request, peer: SocketAddr) {
        log::debug!(
            "{} {} dropped: it followed the last answer on its connection",
            method_of(rq.method()).as_str(),
            rq.url()
        );
        let kind = body_kind(&rq, self.server.config.max_body);
        match kind {
            // The body is in memory (or chunked, or none): dropping the
            // reader reads nothing more. The writer is released unused.
            BodyKind::Ready | BodyKind::Lazy(None) => drop(rq.into_writer()),
            BodyKind::TooLarge(n) | BodyKind::Lazy(Some(n)) => {
                // Dropping would make tiny_http drain `n` bytes: the reject
                // path never does (its answer goes nowhere: the socket is
                // shut). It touches only the closed connection's sockets.
                let pending = self.conn(peer).0.pending.clone();
                let resp = json_error(400, "Bad request", "request after the last answer");
                let only = match self.closed.get(&peer) {
                    Some(c) => socket::Which::Only(c.inodes.clone()),
                    None => socket::Which::Only(Vec::new()),
                };
                self.reject_which(rq, resp, n as u64, pending, only);
            }
        }
    }

    /// Answers a request whose framing is ambiguous (framing.rs) and closes
    /// its connection, without reading its body.
    #[allow(clippy::too_many_arguments)]
    fn refuse(
        &mut self,
        rq: tiny_http::Request,
        refusal: framing::Refusal,
        kind: BodyKind,
        peer: SocketAddr,
        pending: Arc<AtomicU32>,
        started: Instant,
    ) {
        let method = method_of(rq.method());
        log::debug!(
            "{} {} {} ({})",
            method.as_str(),
            rq.url(),
            refusal.status,
            refusal.data
        );
        let resp = HttpResponse {
            status: refusal.status,
            content_type: "application/json",
            body: refusal.body(),
            headers: Vec::new(),
        };
        match kind {
            // tiny_http's reader holds nothing that a drop would drain: the
            // body is in memory or absent, or tiny_http decodes it as chunked
            // (any Transfer-Encoding; a chunk decoder reads nothing when
            // dropped). An ordinary answer with `Connection: close`.
            BodyKind::Ready | BodyKind::Lazy(None) => {
                let is_head = method == HttpMethod::Head;
                self.respond(rq, resp, peer, true, pending, is_head, started, None)
            }
            // tiny_http took a Content-Length and reads that many bytes
            // lazily: the 413 path, which never lets it drain them (its
            // answer ends at the close instead of a Content-Length).
            BodyKind::TooLarge(n) | BodyKind::Lazy(Some(n)) => {
                self.reject(rq, resp, n as u64, pending)
            }
        }
    }

    fn on_body<H: Handler>(
        &mut self,
        handler: &mut H,
        rq: tiny_http::Request,
        result: BodyResult,
        unread: u64,
        started: Instant,
    ) {
        let peer = rq.remote_addr().copied().unwrap_or(UNSPECIFIED);
        let pending = self.conn(peer).0.pending.clone();
        pending.fetch_sub(1, Ordering::AcqRel);
        match result {
            BodyResult::Complete(body) => {
                self.dispatch(handler, rq, &body, peer, pending, started);
            }
            BodyResult::TooLarge => {
                let max_body = self.server.config.max_body;
                let mut resp = handler.too_large(max_body);
                resp.status = 413;
                self.reject(rq, resp, unread, pending);
            }
            BodyResult::TimedOut => {
                let ms = self.server.config.body_timeout.as_millis();
                let resp = json_error(
                    408,
                    "Request timeout",
                    &format!("the request body did not arrive within {ms} ms"),
                );
                self.reject(rq, resp, unread, pending);
            }
            BodyResult::Failed => {
                // The client is gone; the body reader is already released.
                drop(rq);
            }
        }
    }

    fn dispatch<H: Handler>(
        &mut self,
        handler: &mut H,
        rq: tiny_http::Request,
        body: &[u8],
        peer: SocketAddr,
        pending: Arc<AtomicU32>,
        started: Instant,
    ) {
        let method = method_of(rq.method());
        let origin = rq
            .headers()
            .iter()
            .find(|h| h.field.equiv("Origin"))
            .map(|h| h.value.as_str());
        let accept = rq
            .headers()
            .iter()
            .find(|h| h.field.equiv("Accept"))
            .map(|h| h.value.as_str());
        let request = HttpRequest {
            method,
            path: rq.url(),
            body,
            origin,
            accept,
        };
        let id = self.next_deferred;
        let mut defer = Defer {
            tx: &self.server.tx,
            shared: &self.server.shared,
            id,
            taken: false,
        };
        let answered = handler.handle_deferrable(&request, &mut defer);
        let taken = defer.taken;
        let path = if log::log_enabled!(log::Level::Debug) {
            Some(rq.url().to_owned())
        } else {
            None
        };
        let resp = match answered {
            Some(resp) => resp,
            None if taken => {
                // Kept until its answer arrives: the connection sends no
                // other request meanwhile (tiny_http holds it back), and
                // nothing is written inline on it.
                self.next_deferred += 1;
                pending.fetch_add(1, Ordering::AcqRel);
                self.deferred.insert(
                    id,
                    Deferred {
                        rq,
                        peer,
                        pending,
                        is_head: method == HttpMethod::Head,
                        started,
                        path,
                    },
                );
                return;
            }
            None => json_error(
                500,
                "Internal error",
                "the handler gave no answer; this is a bug in ledgerd",
            ),
        };
        if taken {
            self.next_deferred += 1;
        }
        let max = self.server.config.max_requests_per_connection;
        let close = self.conns.get(&peer).is_some_and(|c| c.requests >= max);
        self.respond(
            rq,
            resp,
            peer,
            close,
            pending,
            method == HttpMethod::Head,
            started,
            path,
        );
    }

    /// Writes the answer of a deferred request (an unknown id was answered
    /// already, or its request is gone).
    fn on_answer(&mut self, id: u64, response: HttpResponse) {
        let Some(d) = self.deferred.remove(&id) else {
            return;
        };
        d.pending.fetch_sub(1, Ordering::AcqRel);
        let max = self.server.config.max_requests_per_connection;
        let close = self.conns.get(&d.peer).is_some_and(|c| c.requests >= max);
        self.respond(
            d.rq, response, d.peer, close, d.pending, d.is_head, d.started, d.path,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn respond(
        &mut self,
        rq: tiny_http::Request,
        resp: HttpResponse,
        peer: SocketAddr,
        close: bool,
        pending: Arc<AtomicU32>,
        is_head: bool,
        started: Instant,
        path: Option<String>,
    ) {
        let method = method_of(rq.method());
        let send_body = write::has_body(is_head, resp.status);
        self.out.clear();
        write::head(
            &mut self.out,
            &resp,
            self.date.get(),
            resp.body.len(),
            close,
        );
        let body: &[u8] = if send_body { &resp.body } else { &[] };
        let total = self.out.len() + body.len();
        // The body has been read (or there is none): dropping the Request is safe.
        let mut writer = rq.into_writer();
        let inline = total <= write::INLINE_MAX && pending.load(Ordering::Acquire) == 0;
        let outcome = if inline {
            // One buffer, so one send(): tiny_http's 1 KiB BufWriter would
            // send a separate head and body (two segments under TCP_NODELAY).
            let head_len = self.out.len();
            self.out.extend_from_slice(body);
            let outcome = write::write_budget(writer.as_mut(), &[&self.out], write::INLINE_BUDGET);
            // Partial(n) counts bytes of head + body, as the off-loop writer expects.
            self.out.truncate(head_len);
            outcome
        } else {
            Inline::Partial(0)
        };
        match outcome {
            Inline::Done | Inline::Failed => {
                // A failed write on a connection whose peer address also
                // names one closed before (see `is_after_close`): nothing to
                // close that is surely this request's.
                let failed_after_close =
                    !close && matches!(outcome, Inline::Failed) && self.closed.contains_key(&peer);
                if (close || matches!(outcome, Inline::Failed)) && !failed_after_close {
                    // Found while `writer` still holds the socket open.
                    let which = self.which(peer);
                    let sockets = self.fds.hold_sockets_which(self.server.local, peer, &which);
                    // Shut before `writer` is released: whatever tiny_http
                    // writes next on this connection goes nowhere.
                    for s in &sockets {
                        s.shutdown(libc::SHUT_WR);
                    }
                    self.mark_closed(peer, sockets.iter().map(|s| s.inode()).collect());
                    let _ = self.server.close_tx.send(sockets);
                    // A new connection from the same port starts its count afresh.
                    self.conns.remove(&peer);
                }
                drop(writer);
            }
            Inline::Partial(skip) => {
                pending.fetch_add(1, Ordering::AcqRel);
                let close_tx = self.server.close_tx.clone();
                let local = self.server.local;
                // Held now, while the request surely holds the socket open.
                let which = self.which(peer);
                let held = if close {
                    let sockets = self.fds.hold_sockets_which(local, peer, &which);
                    self.mark_closed(peer, sockets.iter().map(|s| s.inode()).collect());
                    Some(sockets)
                } else {
                    None
                };
                // After a failed write, close by address only if the address
                // names no connection closed before (see the inline case).
                let close_on_failure = matches!(which, socket::Which::All);
                let head = std::mem::replace(&mut self.out, Vec::with_capacity(2048));
                let body = if send_body { resp.body } else { Vec::new() };
                write::spawn_off_loop(OffLoop {
                    writer,
                    head,
                    body,
                    skip,
                    deadline: self.server.config.write_timeout,
                    pending,
                    before_release: Box::new(move |ok| {
                        let sockets = match held {
                            Some(sockets) => sockets,
                            None if !ok && close_on_failure => {
                                socket::FdTable::default().hold_sockets_of(local, peer)
                            }
                            None => return,
                        };
                        for s in &sockets {
                            s.shutdown(libc::SHUT_WR);
                        }
                        let _ = close_tx.send(sockets);
                    }),
                });
            }
        }
        if let Some(path) = path {
            log::debug!(
                "{} {} {} {}B {}us",
                method.as_str(),
                path,
                resp.status,
                total,
                started.elapsed().as_micros()
            );
        }
    }

    fn reject(
        &mut self,
        rq: tiny_http::Request,
        resp: HttpResponse,
        unread: u64,
        pending: Arc<AtomicU32>,
    ) {
        let which = match rq.remote_addr() {
            Some(peer) => self.which(*peer),
            None => socket::Which::All,
        };
        self.reject_which(rq, resp, unread, pending, which);
    }

    /// [`Loop::reject`], touching only the sockets `which` allows.
    fn reject_which(
        &mut self,
        rq: tiny_http::Request,
        resp: HttpResponse,
        unread: u64,
        pending: Arc<AtomicU32>,
        which: socket::Which,
    ) {
        // The reject thread closes the connection; requests tiny_http
        // parsed behind this one are dropped. Its sockets are found now,
        // while `rq` holds it open, and the thread acts on exactly those:
        // by the time it closes them, the client may have closed too and a
        // new connection come from the same address and port.
        let mut which = which;
        if let Some(peer) = rq.remote_addr().copied() {
            let inodes: Vec<u64> = self
                .fds
                .sockets_which(self.server.local, peer, &which)
                .into_iter()
                .map(|(_, ino)| ino)
                .collect();
            if !inodes.is_empty() {
                which = socket::Which::Only(inodes.clone());
            }
            self.mark_closed(peer, inodes);
        }
        pending.fetch_add(1, Ordering::AcqRel);
        body::reject(
            rq,
            Reject {
                status: resp.status,
                content_type: resp.content_type,
                body: resp.body,
                unread,
                local: self.server.local,
                which,
                pending,
                stats: self.server.stats.clone(),
            },
        );
    }
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

/// Counts connections and closes the ones the loop asks to close.
struct Tracker {
    local: SocketAddr,
    shared: Weak<Shared>,
    stats: Arc<Stats>,
    rx: Receiver<Vec<HeldSocket>>,
    live_peers: Arc<Mutex<Vec<SocketAddr>>>,
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
/// worker: the pool queued it behind busy workers (notes item 4: it spawns a
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
    fn run(self) {
        let mut table = socket::FdTable::default();
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
            let mut closing = Vec::new();
            let wait = if kicker.watching() {
                STRANDED_CHECK
            } else if busy {
                busy_gap
            } else {
                SCAN_IDLE_WAKE
            };
            match self.rx.recv_timeout(wait) {
                Ok(sockets) => {
                    closing.extend(sockets);
                    while let Ok(more) = self.rx.try_recv() {
                        closing.extend(more);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            match self.shared.upgrade() {
                Some(s) if !s.stop.load(Ordering::SeqCst) => {}
                _ => break,
            }
            let now = Instant::now();
            let requests = self.stats.requests.load(Ordering::Relaxed);
            let since = now.duration_since(last_scan);
            let due_rd: Vec<HeldSocket> = {
                let (due, keep): (Vec<_>, Vec<_>) = second.drain(..).partition(|(t, _)| *t <= now);
                second = keep;
                due.into_iter().map(|(_, p)| p).collect()
            };
            // Closing acts on sockets we hold (our own fds): no scan needed.
            for socket in closing {
                socket.shutdown(libc::SHUT_WR);
                second.push((now + CLOSE_LINGER, socket));
            }
            // Dropping each closes our duplicate; tiny_http closes its fds
            // once its read returns end-of-file.
            for socket in due_rd {
                socket.shutdown(libc::SHUT_RD);
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
            .filter(|s| socket::still_unread(*s))
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
