//! Request bodies that are not already in memory, read off the loop thread,
//! and answers that must close the connection while a body is still unread.
//!
//! tiny_http drains an unread body when its reader is dropped, allocating
//! `vec![0; remaining]` with the client's Content-Length (abort for huge
//! values, a blocked thread otherwise), and its `FusedReader` drops that
//! reader as soon as a read returns end-of-file. So a `Request` with an unread
//! body is never dropped on the loop: it goes through `reject`, which takes the
//! reader out with `Request::upgrade`.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tiny_http::{Header, Request};

use super::fds;
use super::{HttpResponse, Stats};

/// Bodies whose unread remainder is above this are never dropped (see module doc).
pub(crate) const SAFE_DROP: u64 = 256 * 1024 * 1024;
/// How much of an unwanted body is read after a 413/408 so that the client,
/// still sending, reads the answer rather than a reset.
const DRAIN_MAX: usize = 4 * 1024 * 1024;
const LINGER: Duration = Duration::from_millis(1000);

pub(crate) enum BodyResult {
    Complete(Vec<u8>),
    TooLarge,
    TimedOut,
    /// The client closed or failed before the end of the body.
    Failed,
}

/// Runs `f(item)` on a new thread; gives `item` back if no thread can start.
pub(crate) fn spawn_with<T: Send + 'static>(
    name: &str,
    item: T,
    f: impl FnOnce(T) + Send + 'static,
) -> Result<(), T> {
    let slot = Arc::new(Mutex::new(Some(item)));
    let inner = slot.clone();
    let spawned = std::thread::Builder::new()
        .name(name.into())
        .stack_size(128 * 1024)
        .spawn(move || {
            let item = inner.lock().ok().and_then(|mut s| s.take());
            if let Some(item) = item {
                f(item);
            }
        });
    if let Err(e) = spawned {
        log::warn!("cannot start a thread: {e}");
        if let Some(item) = slot.lock().ok().and_then(|mut s| s.take()) {
            return Err(item);
        }
    }
    Ok(())
}

/// Reads the body (at most `limit` bytes, `declared` exactly if known) before
/// `deadline`. Each read is also bounded by the socket's SO_RCVTIMEO.
/// Returns the result and how many declared bytes are still unread.
pub(crate) fn read_body(
    rq: &mut Request,
    declared: Option<usize>,
    limit: usize,
    deadline: Instant,
) -> (BodyResult, u64) {
    let want = declared.unwrap_or(usize::MAX);
    let mut body = Vec::with_capacity(declared.unwrap_or(4096).min(limit).min(1 << 20));
    let mut chunk = [0u8; 16 * 1024];
    let reader = rq.as_reader();
    let unread = |got: usize| declared.map_or(0, |d| d.saturating_sub(got) as u64);
    loop {
        if body.len() == want {
            return (BodyResult::Complete(body), 0);
        }
        if Instant::now() >= deadline {
            let left = unread(body.len());
            return (BodyResult::TimedOut, left);
        }
        let room = (want - body.len()).min(chunk.len());
        match reader.read(&mut chunk[..room]) {
            Ok(0) if declared.is_none() => return (BodyResult::Complete(body), 0),
            // End of file before Content-Length: tiny_http already dropped its reader.
            Ok(0) => return (BodyResult::Failed, 0),
            Ok(n) => {
                if body.len() + n > limit {
                    let left = unread(body.len() + n);
                    return (BodyResult::TooLarge, left);
                }
                body.extend_from_slice(&chunk[..n]);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                let left = unread(body.len());
                return (BodyResult::TimedOut, left);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return (BodyResult::Failed, 0),
        }
    }
}

pub(crate) struct Reject {
    /// The answer (its headers are left out).
    pub resp: HttpResponse,
    /// Declared body bytes not read yet (0 when unknown: chunked bodies do not drain on drop).
    pub unread: u64,
    pub local: SocketAddr,
    /// Which of the peer's sockets are this request's connection.
    pub which: fds::Which,
    pub pending: Arc<AtomicU32>,
    pub stats: Arc<Stats>,
}

/// Answers `rq` with `r` and closes the connection, on a thread of its own,
/// without ever letting tiny_http drain a large unread body.
///
/// `upgrade()` writes the status line and headers (with `Connection: upgrade`,
/// `Upgrade: close`, no Content-Length: the answer ends at the close), then the
/// body is written to the returned stream and the socket is shut for writing.
pub(crate) fn reject(rq: Request, r: Reject) {
    let res = spawn_with("ledgerd-reject", (rq, r), |(rq, r)| {
        let peer = rq.remote_addr().copied();
        let mut resp = tiny_http::Response::empty(r.resp.status);
        if let Ok(h) = Header::from_bytes(&b"Content-Type"[..], r.resp.content_type.as_bytes()) {
            resp.add_header(h);
        }
        let mut stream = rq.upgrade("close", resp);
        let _ = stream.write_all(&r.resp.body);
        let _ = stream.flush();
        if let Some(peer) = peer {
            fds::shutdown_peer(r.local, peer, &r.which, Shutdown::Write);
        }
        if r.unread > SAFE_DROP {
            // Reading could hit end-of-file and dropping would drain: both make
            // tiny_http allocate `unread` bytes. Leak the stream (and the
            // connection thread waiting for it) but close the sockets.
            std::thread::sleep(LINGER);
            if let Some(peer) = peer {
                fds::close_leaked_peer(r.local, peer, &r.which);
            }
            r.stats.leaked_connections.fetch_add(1, Ordering::Relaxed);
            std::mem::forget(stream);
            r.pending.fetch_sub(1, Ordering::Release);
            return;
        }
        let deadline = Instant::now() + LINGER;
        let mut drained = 0;
        let mut buf = [0u8; 16 * 1024];
        let mut still_sending = true;
        while drained < DRAIN_MAX && Instant::now() < deadline {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => {
                    still_sending = false;
                    break;
                }
                Ok(n) => drained += n,
            }
        }
        if let Some(peer) = peer {
            if still_sending {
                // The client had LINGER to read the answer and is still
                // sending: reset the connection on close, so it learns at
                // once instead of stalling on a zero window until the
                // kernel drops the orphaned socket (~60 s).
                fds::reset_on_close(r.local, peer, &r.which);
            }
            // The rest of the drain on drop then ends at once.
            fds::shutdown_peer(r.local, peer, &r.which, Shutdown::Read);
        }
        drop(stream);
        r.pending.fetch_sub(1, Ordering::Release);
    });
    if let Err((rq, r)) = res {
        // No thread: dropping is not safe, leaking is.
        r.stats.leaked_connections.fetch_add(1, Ordering::Relaxed);
        std::mem::forget(rq);
    }
}
