//! A pass-through HTTP proxy put between a follower and its upstream, that
//! can hold back the upstream's blocks: while held, head requests
//! (`ledger_getHeadSoftConfirmationHeight`) still pass, every other request
//! waits until released. The follower then knows its source moves on but
//! gets nothing to store: it falls behind while it and its source are alive,
//! as behind an upstream that is overloaded, or a link that only lets small
//! answers through.
//!
//! It can also alter the blocks it passes (a bad upstream): the first
//! block of every `ledger_getSoftConfirmationRange` answer gets a timestamp
//! one higher, which its hash no longer matches.
//!
//! One request per connection (`Connection: close`); when the upstream
//! cannot be reached, the connection is closed without an answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// The longest a request is held: longer than any test holds blocks back.
const HOLD_AT_MOST: Duration = Duration::from_secs(60);

pub struct HoldingProxy {
    pub url: String,
    addr: SocketAddr,
    hold: Arc<AtomicBool>,
    alter: Arc<AtomicBool>,
    /// Requests that were held back before they were passed on.
    pub held: Arc<AtomicU64>,
    stopped: Arc<AtomicBool>,
}

impl HoldingProxy {
    /// A proxy on 127.0.0.1 (a free port) in front of `upstream` (a URL).
    pub fn start(upstream: &str) -> HoldingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("proxy binds");
        let addr = listener.local_addr().expect("addr");
        let proxy = HoldingProxy {
            url: format!("http://{addr}"),
            addr,
            hold: Arc::new(AtomicBool::new(false)),
            alter: Arc::new(AtomicBool::new(false)),
            held: Arc::new(AtomicU64::new(0)),
            stopped: Arc::new(AtomicBool::new(false)),
        };
        let (hold, alter, held, stopped) = (
            proxy.hold.clone(),
            proxy.alter.clone(),
            proxy.held.clone(),
            proxy.stopped.clone(),
        );
        let upstream = upstream.to_string();
        thread::spawn(move || {
            for conn in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (hold, alter, held, upstream) =
                    (hold.clone(), alter.clone(), held.clone(), upstream.clone());
                thread::spawn(move || {
                    let _ = pass(conn, &upstream, &hold, &alter, &held);
                });
            }
        });
        proxy
    }

    /// Holds back every request but head requests, until [`Self::release`].
    pub fn hold_blocks(&self) {
        self.hold.store(true, Ordering::SeqCst);
    }

    /// Passes everything again (held requests go on at once).
    pub fn release(&self) {
        self.hold.store(false, Ordering::SeqCst);
    }

    /// Alters the first block of every range answer from now on.
    pub fn alter_blocks(&self) {
        self.alter.store(true, Ordering::SeqCst);
    }
}

impl Drop for HoldingProxy {
    fn drop(&mut self) {
        self.hold.store(false, Ordering::SeqCst);
        self.stopped.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn pass(
    conn: TcpStream,
    upstream: &str,
    hold: &AtomicBool,
    alter: &AtomicBool,
    held: &AtomicU64,
) -> std::io::Result<()> {
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
    if !head_only && hold.load(Ordering::SeqCst) {
        held.fetch_add(1, Ordering::SeqCst);
        let since = Instant::now();
        while hold.load(Ordering::SeqCst) && since.elapsed() < HOLD_AT_MOST {
            thread::sleep(Duration::from_millis(5));
        }
    }
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(2))
        .timeout(Duration::from_secs(20))
        .build();
    let answer = match agent
        .post(upstream)
        .set("Content-Type", "application/json")
        .send_bytes(&body)
    {
        Ok(r) => r.into_string()?,
        Err(ureq::Error::Status(_, r)) => r.into_string()?,
        // The upstream is down: so is the proxy, as far as the follower sees.
        Err(_) => return Ok(()),
    };
    let answer = if range && alter.load(Ordering::SeqCst) {
        later_timestamp(&answer).unwrap_or(answer)
    } else {
        answer
    };
    let mut conn = conn;
    write!(
        conn,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        answer.len()
    )?;
    conn.write_all(answer.as_bytes())?;
    conn.flush()
}

/// `answer` with its first `"timestamp":N` made `N + 1`.
fn later_timestamp(answer: &str) -> Option<String> {
    let field = "\"timestamp\":";
    let start = answer.find(field)? + field.len();
    let len = answer[start..].find(|c: char| !c.is_ascii_digit())?;
    let ts: u64 = answer[start..start + len].parse().ok()?;
    Some(format!(
        "{}{}{}",
        &answer[..start],
        ts + 1,
        &answer[start + len..]
    ))
}
