//! Helpers shared by the integration tests: a real `ledgerd` process on
//! 127.0.0.1 port 0 with a devnet-prefilled LMDB ledger in a temp dir, and a
//! raw HTTP/1.1 client on plain sockets (so tests can misbehave on purpose).
#![allow(dead_code)] // each test file uses a different part

pub mod rpc_check;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Heights the devnet writes before the node listens, unless a test asks for more.
pub const PREFILL: u64 = 20;

/// A `ledgerd` process; SIGTERM and wait on drop.
pub struct Ledgerd {
    pub addr: SocketAddr,
    child: Child,
    pub dir: tempfile::TempDir,
}

impl Ledgerd {
    /// `ledgerd --dev --dev-prefill PREFILL --dev-block-ms 0 --bind 127.0.0.1:0 --data-dir TMP` + `extra`.
    pub fn start(extra: &[&str]) -> Ledgerd {
        Ledgerd::start_prefilled(PREFILL, extra)
    }

    pub fn start_prefilled(prefill: u64, extra: &[&str]) -> Ledgerd {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = std::fs::File::create(dir.path().join("stderr.log")).expect("log file");
        let mut child = Command::new(env!("CARGO_BIN_EXE_ledgerd"))
            .args(["--dev", "--dev-prefill", &prefill.to_string()])
            .args(["--dev-block-ms", "0", "--bind", "127.0.0.1:0"])
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start ledgerd");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        let addr = line
            .strip_prefix("listening on http://")
            .and_then(|a| a.trim().parse().ok());
        match (read, addr) {
            (Ok(_), Some(addr)) => Ledgerd { addr, child, dir },
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                let log =
                    std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default();
                panic!("ledgerd did not start: first stdout line {line:?}; stderr:\n{log}");
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A `kB` field of /proc/PID/status (`VmRSS`, `RssAnon`, `Threads`...).
    pub fn status_field(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("ledgerd is running");
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc/PID/status"))
    }

    /// Whether the process is still running (not exited, not a zombie).
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default()
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }
}

impl Drop for Ledgerd {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let end = Instant::now() + Duration::from_secs(3);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Raises this process's soft open-file limit to its hard limit.
pub fn raise_nofile_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a local struct.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
    #[allow(clippy::unnecessary_cast)] // rlim_t is not u64 everywhere
    let cur = lim.rlim_cur as u64;
    cur
}

pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// One HTTP response.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "answer is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Reads one response: by Content-Length, chunked, or to end-of-file.
pub fn read_answer(r: &mut impl BufRead) -> std::io::Result<Answer> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed before a response",
        ));
    }
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h)?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            headers.push((n.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut a = Answer {
        status,
        headers,
        body: Vec::new(),
    };
    let chunked = a
        .header("Transfer-Encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    if chunked {
        loop {
            let mut size = String::new();
            r.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim(), 16)
                .map_err(|_| std::io::Error::other(format!("bad chunk size {size:?}")))?;
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk)?;
            if n == 0 {
                break;
            }
            a.body.extend_from_slice(&chunk[..n]);
        }
        return Ok(a);
    }
    match a
        .header("Content-Length")
        .and_then(|v| v.parse::<usize>().ok())
    {
        Some(n) => {
            a.body.resize(n, 0);
            r.read_exact(&mut a.body)?;
        }
        None => {
            r.read_to_end(&mut a.body)?;
        }
    }
    Ok(a)
}

/// A `POST /` request with `body`.
pub fn post(body: &[u8]) -> Vec<u8> {
    let mut req = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    req
}

/// Sends one raw request on a new connection and reads the answer.
pub fn exchange(addr: SocketAddr, raw: &[u8]) -> Answer {
    let mut s = connect(addr);
    s.write_all(raw).expect("send");
    read_answer(&mut BufReader::new(&mut s)).expect("an answer")
}

/// POSTs `body` on a new connection.
pub fn rpc(addr: SocketAddr, body: &[u8]) -> Answer {
    exchange(addr, &post(body))
}

pub const HEAD_HEIGHT: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"ledger_getHeadSoftConfirmationHeight","params":[]}"#;

/// A normal request on a fresh connection is answered correctly within 100 ms.
pub fn assert_normal_request_fast(addr: SocketAddr, head: u64) {
    let started = Instant::now();
    let mut s = connect(addr);
    s.write_all(&post(HEAD_HEIGHT.as_bytes())).unwrap();
    let a = read_answer(&mut BufReader::new(&mut s)).expect("normal answer");
    let took = started.elapsed();
    assert_eq!(a.status, 200, "normal request: {}", a.text());
    assert_eq!(
        a.json(),
        serde_json::json!({"jsonrpc":"2.0","id":1,"result":head}),
        "normal request"
    );
    assert!(
        took < Duration::from_millis(100),
        "a normal request on another connection took {took:?}"
    );
}

/// Runs `f` on a thread; panics if it has not finished within `limit`.
pub fn bounded<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("did not finish within {limit:?}"))
}

/// The nginx binary the front tests use.
pub fn nginx_path() -> &'static Path {
    Path::new("/usr/sbin/nginx")
}
