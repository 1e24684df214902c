//! Writing responses: serialised by hand (tiny_http's `Response` strips a
//! `Connection: close` header and formats a `Date` per response), then written
//! inline when small and the connection has nothing pending, else on a thread.

use std::io::{self, ErrorKind, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::HttpResponse;

/// Responses up to this size may be written on the loop thread.
pub(crate) const INLINE_MAX: usize = 64 * 1024;
/// How long the loop keeps trying one inline write before handing the rest to
/// a thread (each send() is also bounded by SO_SNDTIMEO, see `SEND_TIMEOUT`).
pub(crate) const INLINE_BUDGET: Duration = Duration::from_millis(10);
/// SO_SNDTIMEO on accepted sockets: the longest a single blocked send() holds
/// the loop. Off-loop writers retry until `ServerConfig::write_timeout`.
pub(crate) const SEND_TIMEOUT: Duration = Duration::from_millis(20);

/// An IMF-fixdate `Date` value, recomputed at most once per second.
pub(crate) struct DateCache {
    secs: u64,
    text: String,
}

impl DateCache {
    pub(crate) fn new() -> DateCache {
        DateCache {
            secs: u64::MAX,
            text: String::new(),
        }
    }

    pub(crate) fn get(&mut self) -> &str {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        if now != self.secs {
            self.secs = now;
            self.text = http_date(now);
        }
        &self.text
    }
}

fn http_date(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = crate::clock::Utc::from_unix(secs);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[t.weekday],
        t.day,
        MONTHS[(t.month - 1) as usize],
        t.year,
        t.hour,
        t.minute,
        t.second
    )
}

/// Appends the status line and headers of `resp` to `out`.
pub(crate) fn head(
    out: &mut Vec<u8>,
    resp: &HttpResponse,
    date: &str,
    body_len: usize,
    close: bool,
) {
    use std::io::Write as _;
    let _ = write!(
        out,
        "HTTP/1.1 {} {}\r\nServer: ledgerd\r\nDate: {}\r\n",
        resp.status,
        // The same phrases as tiny_http's own answers.
        tiny_http::StatusCode(resp.status).default_reason_phrase(),
        date,
    );
    // RFC 9110 8.6: no Content-Length (nor a body) on 1xx and 204.
    if resp.status >= 200 && resp.status != 204 {
        let _ = write!(
            out,
            "Content-Type: {}\r\nContent-Length: {}\r\n",
            resp.content_type, body_len
        );
    }
    for (name, value) in &resp.headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if close {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Whether the response carries its body (not for HEAD, 1xx, 204, 304).
pub(crate) fn has_body(is_head: bool, status: u16) -> bool {
    !(is_head || status < 200 || status == 204 || status == 304)
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

/// Outcome of an inline attempt.
pub(crate) enum Inline {
    Done,
    /// The client reset or closed: nothing more to do.
    Failed,
    /// Not finished within the budget: `written` bytes of the parts went out.
    Partial(usize),
}

/// Writes `parts` (concatenated) from byte `written` on, with a time
/// budget. Never blocks longer than `budget` plus one SO_SNDTIMEO.
pub(crate) fn write_budget(
    w: &mut dyn Write,
    parts: [&[u8]; 2],
    mut written: usize,
    budget: Duration,
) -> Inline {
    let start = Instant::now();
    loop {
        let mut skip = written;
        let rest = parts.map(|p| {
            let cut = skip.min(p.len());
            skip -= cut;
            &p[cut..]
        });
        let result = match rest.into_iter().find(|p| !p.is_empty()) {
            Some(part) => w.write(part),
            None => match w.flush() {
                Ok(()) => return Inline::Done,
                Err(e) => Err(e),
            },
        };
        match result {
            Ok(0) => return Inline::Failed,
            Ok(n) => written += n,
            Err(e) if is_timeout(&e) => {}
            Err(_) => return Inline::Failed,
        }
        if start.elapsed() >= budget {
            return Inline::Partial(written);
        }
    }
}

/// Decrements the connection's pending count when dropped (also when a
/// writer thread cannot be started and its closure is dropped unrun).
struct PendingGuard(Arc<AtomicU32>);

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Release);
    }
}

/// Finishes a response on its own thread: `head` and `body` from byte
/// `skip` on, for at most `deadline`. `pending` counts the connection's
/// off-loop work (the caller has already incremented it); it is decremented
/// when the writer (and its turn) is released. `before_release` is called
/// with `true` when the response went out whole, while the writer still
/// holds the socket open (so the peer address names this connection).
pub(crate) fn spawn_off_loop(
    mut writer: Box<dyn Write + Send>,
    head: Vec<u8>,
    body: Vec<u8>,
    skip: usize,
    deadline: Duration,
    pending: Arc<AtomicU32>,
    before_release: Box<dyn FnOnce(bool) + Send>,
) {
    let guard = PendingGuard(pending);
    let run = move || {
        let outcome = write_budget(writer.as_mut(), [&head, &body], skip, deadline);
        before_release(matches!(outcome, Inline::Done));
        drop(writer);
        drop(guard);
    };
    if let Err(e) = std::thread::Builder::new()
        .name("ledgerd-write".into())
        .stack_size(64 * 1024)
        .spawn(run)
    {
        log::warn!("cannot start a response writer thread: {e}");
    }
}
/// What answering a request needs to know of it beside the request and
/// the answer: its connection, and what its log line and its body need.
pub(crate) struct Exchange {
    pub(crate) peer: SocketAddr,
    /// Off-loop work on the connection (`Conn::pending`).
    pub(crate) pending: Arc<AtomicU32>,
    /// A HEAD request: the answer is sent without its body.
    pub(crate) is_head: bool,
    pub(crate) started: Instant,
    /// The path, for the debug log line (`None`: no line).
    pub(crate) path: Option<String>,
}

impl Exchange {
    /// An exchange without a debug log line (answers the loop makes itself).
    pub(crate) fn unlogged(
        peer: SocketAddr,
        pending: Arc<AtomicU32>,
        is_head: bool,
        started: Instant,
    ) -> Self {
        Exchange {
            peer,
            pending,
            is_head,
            started,
            path: None,
        }
    }
}
