//! A pass-through HTTP proxy put between a follower and its upstream, that
//! can misbehave on purpose in the ways an upstream or the link to it does:
//!
//! - hold back the upstream's blocks ([`Proxy::hold_blocks`]): head requests
//!   (`ledger_getHeadSoftConfirmationHeight`) still pass, every other request
//!   waits until released. The follower then knows its source moves on but
//!   gets nothing to store: it falls behind while it and its source are
//!   alive, as behind an upstream that is overloaded, or a link that only
//!   lets small answers through;
//! - alter the answers it passes ([`Proxy::set`] with a [`Tamper`]): a bad
//!   upstream, or a link that damages what it carries;
//! - answer late ([`Proxy::set_delay`]): a slow link;
//! - answer one request at a time ([`Proxy::one_at_a_time`]): with a delay,
//!   an upstream that serves one request per delay, as a rate-limited
//!   public endpoint does; the others wait their turn.
//!
//! It counts the requests it held back and the answers it altered. One
//! request per connection (`Connection: close`); an answer goes on with the
//! upstream's status; when the upstream cannot be reached, the connection is
//! closed without an answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The longest a request is held: longer than any test holds blocks back.
const HOLD_AT_MOST: Duration = Duration::from_secs(60);

/// What the proxy does to answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tamper {
    Nothing,
    /// Adds one to the timestamp of the soft confirmation at this height
    /// (one of the hashed fields), wherever it is answered.
    BlockAt(u64),
    /// Adds one to the timestamp of the first block of every
    /// `ledger_getSoftConfirmationRange` answer, which its hash then no
    /// longer matches.
    FirstBlockOfEveryRange,
    /// Flips the first hex digit of every commitment's merkleRoot.
    MerkleRoots,
    /// Replaces the bytes of every batch proof (`"proof":[..]`) with bytes
    /// that are not a risc0 receipt, leaving its `proofOutput` as it was.
    ProofBytes,
    /// Answers every request with text that is not JSON.
    Garbage,
}

/// What the proxy's threads share with its handle.
struct State {
    upstream: String,
    hold: AtomicBool,
    tamper: Mutex<Tamper>,
    delay_ms: AtomicU64,
    /// Whether requests are passed on one at a time.
    serial: AtomicBool,
    /// While `serial`: tickets handed out, and the ticket whose turn it is
    /// (requests are passed on in the order they arrived, as a server's
    /// queue serves them).
    tickets: AtomicU64,
    turn: Mutex<u64>,
    turn_changed: Condvar,
    held: AtomicU64,
    altered: AtomicU64,
    stopped: AtomicBool,
}

/// A proxy on 127.0.0.1 in front of one upstream; it stops when dropped.
pub struct Proxy {
    pub url: String,
    addr: SocketAddr,
    state: Arc<State>,
}

impl Proxy {
    /// A proxy on 127.0.0.1 (a free port) in front of `upstream` (a URL),
    /// passing everything on as it is.
    pub fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("proxy binds");
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(State {
            upstream: upstream.to_string(),
            hold: AtomicBool::new(false),
            tamper: Mutex::new(Tamper::Nothing),
            delay_ms: AtomicU64::new(0),
            serial: AtomicBool::new(false),
            tickets: AtomicU64::new(0),
            turn: Mutex::new(0),
            turn_changed: Condvar::new(),
            held: AtomicU64::new(0),
            altered: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        });
        let shared = state.clone();
        thread::spawn(move || {
            for conn in listener.incoming() {
                if shared.stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let state = shared.clone();
                thread::spawn(move || {
                    let _ = pass(conn, &state);
                });
            }
        });
        Proxy {
            url: format!("http://{addr}"),
            addr,
            state,
        }
    }

    /// Holds back every request but head requests, until [`Self::release`].
    pub fn hold_blocks(&self) {
        self.state.hold.store(true, Ordering::SeqCst);
    }

    /// Passes everything again (held requests go on at once).
    pub fn release(&self) {
        self.state.hold.store(false, Ordering::SeqCst);
    }

    /// Alters the answers from now on as `t` says.
    pub fn set(&self, t: Tamper) {
        *self.state.tamper.lock().expect("tamper lock") = t;
    }

    /// Sends every answer `delay` after the upstream gave it, from now on.
    pub fn set_delay(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).expect("a delay in ms fits u64");
        self.state.delay_ms.store(ms, Ordering::SeqCst);
    }

    /// Passes requests on one at a time (`true`), each waiting until the
    /// one before has been answered (delay included), or all at once.
    pub fn one_at_a_time(&self, on: bool) {
        self.state.serial.store(on, Ordering::SeqCst);
    }

    /// Requests that were held back before they were passed on, so far.
    pub fn held(&self) -> u64 {
        self.state.held.load(Ordering::SeqCst)
    }

    /// Answers altered so far.
    pub fn altered(&self) -> u64 {
        self.state.altered.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.state.hold.store(false, Ordering::SeqCst);
        self.state.stopped.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn pass(conn: TcpStream, state: &State) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    let text = String::from_utf8_lossy(&body);
    let head_only =
        text.contains("ledger_getHeadSoftConfirmationHeight") && !body.starts_with(b"[");
    let range = text.contains("ledger_getSoftConfirmationRange");
    if !head_only && state.hold.load(Ordering::SeqCst) {
        state.held.fetch_add(1, Ordering::SeqCst);
        let since = Instant::now();
        while state.hold.load(Ordering::SeqCst) && since.elapsed() < HOLD_AT_MOST {
            thread::sleep(Duration::from_millis(5));
        }
    }
    let _turn = state
        .serial
        .load(Ordering::SeqCst)
        .then(|| Turn::wait(state));
    // 2 s to connect, 20 s in all, as a large view's batches take a while
    // on a debug build.
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(2))
        .timeout(Duration::from_secs(20))
        .build();
    let response = match agent
        .post(&state.upstream)
        .set("Content-Type", "application/json")
        .send_bytes(&body)
    {
        Ok(r) | Err(ureq::Error::Status(_, r)) => r,
        // The upstream is down: so is the proxy, as far as the follower sees.
        Err(_) => return Ok(()),
    };
    let status = format!("{} {}", response.status(), response.status_text());
    let answer = response.into_string()?;
    let mode = *state.tamper.lock().expect("tamper lock");
    let answer = match alter(&answer, mode, range) {
        Some(changed) => {
            state.altered.fetch_add(1, Ordering::SeqCst);
            changed
        }
        None => answer,
    };
    thread::sleep(Duration::from_millis(state.delay_ms.load(Ordering::SeqCst)));
    let mut conn = conn;
    write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        answer.len()
    )?;
    conn.write_all(answer.as_bytes())?;
    conn.flush()
}

/// One request's turn to be passed on while requests go one at a time;
/// the next ticket's turn comes when it is dropped (answered or failed).
struct Turn<'a> {
    state: &'a State,
}

impl<'a> Turn<'a> {
    /// Takes a ticket and waits for its turn.
    fn wait(state: &'a State) -> Turn<'a> {
        let ticket = state.tickets.fetch_add(1, Ordering::SeqCst);
        let mut turn = state.turn.lock().unwrap_or_else(|p| p.into_inner());
        while *turn != ticket {
            turn = state
                .turn_changed
                .wait(turn)
                .unwrap_or_else(|p| p.into_inner());
        }
        Turn { state }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        *self.state.turn.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.state.turn_changed.notify_all();
    }
}

/// The altered answer, or `None` when there was nothing to alter; `range`:
/// whether the request asked for a range of blocks.
fn alter(answer: &str, mode: Tamper, range: bool) -> Option<String> {
    match mode {
        Tamper::Nothing => None,
        Tamper::Garbage => Some("<html>502 upstream sneezed</html>".to_string()),
        Tamper::BlockAt(h) => {
            let at = answer.find(&format!("\"l2Height\":{h},"))?;
            later_timestamp(answer, at)
        }
        Tamper::FirstBlockOfEveryRange if range => later_timestamp(answer, 0),
        Tamper::FirstBlockOfEveryRange => None,
        Tamper::ProofBytes => {
            let field = "\"proof\":[";
            if !answer.contains(field) {
                return None;
            }
            let mut out = String::with_capacity(answer.len());
            let mut rest = answer;
            while let Some(i) = rest.find(field) {
                out.push_str(&rest[..i + field.len()]);
                out.push_str("1,2,3,4,5,6,7,8");
                let end = rest[i..].find(']')?;
                rest = &rest[i + end..];
            }
            out.push_str(rest);
            Some(out)
        }
        Tamper::MerkleRoots => {
            let field = "\"merkleRoot\":\"";
            if !answer.contains(field) {
                return None;
            }
            let mut out = String::with_capacity(answer.len());
            let mut rest = answer;
            while let Some(i) = rest.find(field) {
                let digit = i + field.len();
                out.push_str(&rest[..digit]);
                out.push(if rest[digit..].starts_with('0') {
                    '1'
                } else {
                    '0'
                });
                rest = &rest[digit + 1..];
            }
            out.push_str(rest);
            Some(out)
        }
    }
}

/// `answer` with the first `"timestamp":N` from byte `from` on made `N + 1`.
fn later_timestamp(answer: &str, from: usize) -> Option<String> {
    let field = "\"timestamp\":";
    let start = from + answer[from..].find(field)? + field.len();
    let len = answer[start..]
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(answer.len() - start);
    let ts: u64 = answer[start..start + len].parse().ok()?;
    Some(format!(
        "{}{}{}",
        &answer[..start],
        ts + 1,
        &answer[start + len..]
    ))
}
