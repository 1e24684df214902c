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
//!   its connections are gone (supervisor.rs).
//! - **Framing** (framing.rs, RFC 9112 section 6): before any body is read,
//!   a request whose body length is ambiguous (two `Content-Length`s, one that
//!   is not plain digits, `Transfer-Encoding` with `Content-Length`, a
//!   coding other than `chunked`) is answered 400 or 501 and its connection
//!   closed, so the bytes after it are never taken for another request.
//! - **Closing** a connection (fairness cap, 503, 413, 400, stuck client) is
//!   done with shutdown(2) on the socket found through /proc/self/fd while its
//!   request still holds it open, through our own duplicate of its fd
//!   (`fds::HeldSocket`): neither its peer address nor its fd number may
//!   name the same connection a moment later. The write side is shut before
//!   the answer's writer is released, so nothing tiny_http writes after it
//!   (its own 400 for garbage that followed, a dropped request's 500) can
//!   reach the client. tiny_http may already have parsed requests that were
//!   pipelined behind the closing answer: the loop remembers the closed
//!   socket (closed.rs) and drops such requests unanswered and unhandled.
//!   While it does, the peer address may also name a new connection from
//!   the same port, so closes pick sockets by inode (`fds::Which`).
//! - **Counting** connections: a tracker thread (tracker.rs) rescans
//!   /proc/self/fd (at most every 10 ms while requests arrive, else every
//!   500 ms) and counts distinct peers of sockets bound to our address.
//! - **Deferred answers**: a handler may keep a request and answer it later
//!   from another thread ([`Handler::handle_deferrable`], [`Later`]; the
//!   devnet's `dev_*` calls). The loop holds the tiny_http `Request`, serves
//!   other connections meanwhile, and writes the answer when it arrives on
//!   its channel (with a wake-up). tiny_http queues no other request of
//!   that connection meanwhile (one request per connection at a time;
//!   deferred.rs).
//! - **Stranded connections**: tiny_http's pool can queue a new connection
//!   behind busy workers (it starts a thread only when none is idle). The tracker sees its request bytes
//!   wait unread (FIONREAD) and opens a throw-away connection, which makes the
//!   pool start a worker that then takes the stranded one (tracker.rs).
//!
//! # Files
//!
//! mod.rs: the loop (read, dispatch, write); handle.rs: starting it and
//! serving until stopped; request.rs: what the loop reads off a request
//! (method, body kind) and the transport's own error bodies; api.rs: the public types (limits,
//! request, answer, handler, counters, errors); body.rs: reading and refusing
//! bodies; write.rs: writing answers; framing.rs: RFC 9112 framing checks;
//! socket.rs: the listening socket's options; fds.rs: the /proc/self/fd
//! scanner and shutting a client's sockets; closed.rs: the memory of
//! closed connections; deferred.rs: answers given later; supervisor.rs:
//! rebuilding tiny_http's accept thread; tracker.rs: the connection tracker
//! thread; logging.rs: quieting tiny_http's own log lines.

mod api;
pub mod args;
mod body;
mod closed;
mod deferred;
mod fds;
pub mod framing;
mod handle;
mod logging;
mod request;
mod socket;
mod supervisor;
mod tracker;
mod write;

pub use logging::QuietAcceptTimeouts;
pub use socket::set_nodelay_on_listener;

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use body::{BodyResult, Reject};
use fds::HeldSocket;
use write::{DateCache, Exchange, Inline};

use closed::ClosedConns;
use deferred::Deferred;
pub use deferred::{Defer, Later};
use request::{body_kind, json_error, method_of, BodyKind};
use supervisor::REBUILD_MIN_GAP;

pub use api::{Handler, HttpMethod, HttpRequest, HttpResponse, ServerConfig, ServerError, Stats};

struct Shared {
    current: Mutex<Arc<tiny_http::Server>>,
    stop: AtomicBool,
}

impl Shared {
    /// The tiny_http server the loop reads from now.
    fn current(&self) -> Arc<tiny_http::Server> {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Wakes the loop out of `recv()`.
    fn wake(&self) {
        self.current().unblock();
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

struct Loop {
    server: Server,
    conns: HashMap<SocketAddr, Conn>,
    body_buf: Vec<u8>,
    out: Vec<u8>,
    date: DateCache,
    last_prune: Instant,
    /// The loop's own fd cache, for finding the socket of a connection it closes.
    fds: fds::FdTable,
    last_rebuild: Option<Instant>,
    rebuild_due: Option<Instant>,
    /// Requests whose answers come later, by [`Later`] id.
    deferred: HashMap<u64, Deferred>,
    next_deferred: u64,
    /// Connections closed after an answer: requests tiny_http still hands
    /// over from them are dropped (closed.rs).
    closed: ClosedConns,
}

const UNSPECIFIED: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::UNSPECIFIED,
    0,
));

impl Loop {
    fn run<H: Handler>(&mut self, handler: &mut H) {
        let mut tiny = self.server.shared.current();
        loop {
            if self.server.shared.stop.load(Ordering::SeqCst) {
                break;
            }
            // A request, a wake-up (`None`), or the accept thread's end.
            let got = match self.rebuild_due {
                Some(due) => {
                    let now = Instant::now();
                    if now >= due {
                        self.rebuild_due = None;
                        self.rebuild();
                        tiny = self.server.shared.current();
                        continue;
                    }
                    tiny.recv_timeout(due - now)
                }
                None => match tiny.recv() {
                    Ok(rq) => Ok(Some(rq)),
                    // An OS error is the one the accept thread queued before ending.
                    Err(e) if e.raw_os_error().is_some() => Err(e),
                    Err(_) => Ok(None),
                },
            };
            match got {
                Ok(Some(rq)) => self.on_request(handler, rq),
                Ok(None) => {}
                Err(e) => {
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
                            tiny = self.server.shared.current();
                        }
                    }
                }
            }
            self.drain_channel(handler);
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
            let live = self.server.live_peers.lock();
            let live = live.unwrap_or_else(PoisonError::into_inner).clone();
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
        if self
            .closed
            .is_after_close(&mut self.fds, self.server.local, peer)
        {
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
                    let ex = Exchange::unlogged(peer, pending, is_head, started);
                    self.respond(rq, resp, true, ex);
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
                let only = self.closed.only(peer);
                self.reject_which(rq, resp, n as u64, pending, only);
            }
        }
    }

    /// Answers a request whose framing is ambiguous (framing.rs) and closes
    /// its connection, without reading its body.
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
        let resp = HttpResponse::new(refusal.status, "application/json", refusal.body());
        match kind {
            // tiny_http's reader holds nothing that a drop would drain: the
            // body is in memory or absent, or tiny_http decodes it as chunked
            // (any Transfer-Encoding; a chunk decoder reads nothing when
            // dropped). An ordinary answer with `Connection: close`.
            BodyKind::Ready | BodyKind::Lazy(None) => {
                let is_head = method == HttpMethod::Head;
                let ex = Exchange::unlogged(peer, pending, is_head, started);
                self.respond(rq, resp, true, ex)
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
        let header = |name| {
            let mut headers = rq.headers().iter();
            headers
                .find(|h| h.field.equiv(name))
                .map(|h| h.value.as_str())
        };
        let request = HttpRequest {
            method,
            path: rq.url(),
            body,
            origin: header("Origin"),
            accept: header("Accept"),
            request_headers: header("Access-Control-Request-Headers"),
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
        let ex = Exchange {
            peer,
            pending,
            is_head: method == HttpMethod::Head,
            started,
            path,
        };
        let resp = match answered {
            Some(resp) => resp,
            None if taken => {
                // Kept until its answer arrives: the connection sends no
                // other request meanwhile (tiny_http holds it back), and
                // nothing is written inline on it.
                self.next_deferred += 1;
                ex.pending.fetch_add(1, Ordering::AcqRel);
                self.deferred.insert(id, Deferred { rq, ex });
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
        let close = self.is_last_on_conn(peer);
        self.respond(rq, resp, close, ex);
    }

    /// Whether `peer`'s connection has had its last request (the fairness cap).
    fn is_last_on_conn(&self, peer: SocketAddr) -> bool {
        let max = self.server.config.max_requests_per_connection;
        self.conns.get(&peer).is_some_and(|c| c.requests >= max)
    }

    fn respond(&mut self, rq: tiny_http::Request, resp: HttpResponse, close: bool, ex: Exchange) {
        let Exchange {
            peer,
            pending,
            is_head,
            started,
            path,
        } = ex;
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
            let outcome =
                write::write_budget(writer.as_mut(), [&self.out, &[]], 0, write::INLINE_BUDGET);
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
                    !close && matches!(outcome, Inline::Failed) && self.closed.contains(&peer);
                if (close || matches!(outcome, Inline::Failed)) && !failed_after_close {
                    // Shut before `writer` is released.
                    let ends = (self.server.local, peer);
                    self.closed
                        .close_now(&mut self.fds, ends, &self.server.close_tx);
                    // A new connection from the same port starts its count afresh.
                    self.conns.remove(&peer);
                }
                drop(writer);
            }
            Inline::Partial(skip) => {
                pending.fetch_add(1, Ordering::AcqRel);
                let close_tx = self.server.close_tx.clone();
                let ends = (self.server.local, peer);
                let before_release =
                    self.closed
                        .close_after_write(&mut self.fds, ends, close, close_tx);
                let head = std::mem::replace(&mut self.out, Vec::with_capacity(2048));
                let body = if send_body { resp.body } else { Vec::new() };
                let deadline = self.server.config.write_timeout;
                write::spawn_off_loop(writer, head, body, skip, deadline, pending, before_release);
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
            Some(peer) => self.closed.which(*peer),
            None => fds::Which::All,
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
        mut which: fds::Which,
    ) {
        // The reject thread closes the connection; requests tiny_http
        // parsed behind this one are dropped. Its sockets are found now,
        // while `rq` holds it open, and the thread acts on exactly those:
        // by the time it closes them, the client may have closed too and a
        // new connection come from the same address and port.
        if let Some(peer) = rq.remote_addr().copied() {
            let inodes: Vec<u64> = self
                .fds
                .sockets_which(self.server.local, peer, &which)
                .into_iter()
                .map(|(_, ino)| ino)
                .collect();
            if !inodes.is_empty() {
                which = fds::Which::Only(inodes.clone());
            }
            self.closed.mark(peer, inodes);
        }
        pending.fetch_add(1, Ordering::AcqRel);
        body::reject(
            rq,
            Reject {
                resp,
                unread,
                local: self.server.local,
                which,
                pending,
                stats: self.server.stats.clone(),
            },
        );
    }
}
