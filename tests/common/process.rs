//! Real `ledgerd` processes: a server on 127.0.0.1 port 0, found by its
//! first stdout line `listening on http://HOST:PORT`, its stderr kept in a
//! file, stopped by a signal; and runs of subcommands to completion.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_ledgerd");

/// Heights the devnet writes before the node listens, unless a test asks for more.
pub const PREFILL: u64 = 20;

/// A running `ledgerd` server. Dropping it stops it (SIGTERM, then SIGKILL
/// after 3 s), or kills it at once for [`Ledgerd::start_in`].
pub struct Ledgerd {
    child: Option<Child>,
    pub addr: SocketAddr,
    /// `http://HOST:PORT`, as the listening line says.
    pub url: String,
    pub data_dir: PathBuf,
    /// Holds `stderr.log` (and `data` for [`Ledgerd::start`]).
    pub dir: tempfile::TempDir,
    kill_on_drop: bool,
}

/// The flags for a devnet node with `prefill` blocks and `block_ms` between new ones.
pub fn devnet_args(prefill: u64, block_ms: u64) -> Vec<String> {
    vec![
        "--dev".into(),
        "--dev-prefill".into(),
        prefill.to_string(),
        "--dev-block-ms".into(),
        block_ms.to_string(),
    ]
}

impl Ledgerd {
    /// A devnet node with `prefill` blocks and no new ones, then `extra`
    /// flags, on `data_dir` ([`Ledgerd::start_in`]: killed on drop).
    pub fn devnet_in(data_dir: &Path, prefill: u64, extra: &[&str]) -> Ledgerd {
        Ledgerd::devnet_in_at(data_dir, "127.0.0.1:0", prefill, extra)
    }

    /// [`Ledgerd::devnet_in`] listening on `bind` (`127.0.0.1:PORT`).
    pub fn devnet_in_at(data_dir: &Path, bind: &str, prefill: u64, extra: &[&str]) -> Ledgerd {
        let mut args = devnet_args(prefill, 0);
        args.extend(extra.iter().map(|s| s.to_string()));
        Ledgerd::start_in_at(data_dir, bind, &args)
    }
}

impl Ledgerd {
    /// `ledgerd --dev --dev-prefill PREFILL --dev-block-ms 0 --bind 127.0.0.1:0 --data-dir TMP` + `extra`.
    pub fn start(extra: &[&str]) -> Ledgerd {
        Ledgerd::start_prefilled(PREFILL, extra)
    }

    pub fn start_prefilled(prefill: u64, extra: &[&str]) -> Ledgerd {
        let dir = tempfile::tempdir().expect("temp dir");
        let data_dir = dir.path().join("data");
        let mut args: Vec<OsString> = devnet_args(prefill, 0)
            .into_iter()
            .map(OsString::from)
            .collect();
        args.extend(["--bind", "127.0.0.1:0", "--data-dir"].map(OsString::from));
        args.push(data_dir.clone().into());
        args.extend(extra.iter().map(OsString::from));
        Ledgerd::spawn(&args, None, dir, data_dir, false)
    }

    /// Starts `ledgerd ARGS --bind 127.0.0.1:0 --data-dir DIR` with
    /// `RUST_LOG=info`; killed (not stopped) on drop.
    pub fn start_in(data_dir: &Path, args: &[String]) -> Ledgerd {
        Ledgerd::start_in_at(data_dir, "127.0.0.1:0", args)
    }

    /// [`Ledgerd::start_in`] listening on `bind` (`127.0.0.1:PORT`), e.g. to
    /// bring a node back on the port it had before it was killed.
    pub fn start_in_at(data_dir: &Path, bind: &str, args: &[String]) -> Ledgerd {
        Ledgerd::start_logging(data_dir, bind, args, "info")
    }

    /// [`Ledgerd::start_in_at`] with `RUST_LOG=level`.
    pub fn start_logging(data_dir: &Path, bind: &str, args: &[String], level: &str) -> Ledgerd {
        let mut all: Vec<OsString> = args.iter().map(OsString::from).collect();
        all.extend(["--bind", bind, "--data-dir"].map(OsString::from));
        all.push(data_dir.into());
        let dir = tempfile::tempdir().expect("temp dir");
        let node = Ledgerd::spawn(&all, Some(level), dir, data_dir.to_path_buf(), true);
        assert!(node.url.starts_with("http://127.0.0.1:"), "{}", node.url);
        node
    }

    /// `ledgerd serve-readonly --bind 127.0.0.1:0 --data-dir DIR`: a read-only
    /// server of a ledger another process wrote.
    pub fn serve_readonly(dir: &Path) -> Ledgerd {
        let dir = dir.to_str().expect("a UTF-8 data dir");
        Ledgerd::start_args(&["serve-readonly", "--bind", "127.0.0.1:0", "--data-dir", dir])
    }

    /// Starts `ledgerd ARGS` (exactly those) with `RUST_LOG=warn`.
    pub fn start_args(args: &[&str]) -> Ledgerd {
        let all: Vec<OsString> = args.iter().map(OsString::from).collect();
        let dir = tempfile::tempdir().expect("temp dir");
        let data_dir = dir.path().join("data");
        Ledgerd::spawn(&all, Some("warn"), dir, data_dir, false)
    }

    /// Spawns `ledgerd ARGS` and waits for its listening line (at most 60 s:
    /// debug builds prefill slowly).
    fn spawn(
        args: &[OsString],
        rust_log: Option<&str>,
        dir: tempfile::TempDir,
        data_dir: PathBuf,
        kill_on_drop: bool,
    ) -> Ledgerd {
        let log = std::fs::File::create(dir.path().join("stderr.log")).expect("log file");
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log));
        if let Some(level) = rust_log {
            cmd.env("RUST_LOG", level);
        }
        let mut child = cmd.spawn().expect("start ledgerd");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let first = lines.next().and_then(|l| l.ok());
            let _ = tx.send(first);
            // Anything after the first line would break the convention.
            let rest: Vec<String> = lines.map_while(|l| l.ok()).collect();
            assert!(rest.is_empty(), "ledgerd printed more on stdout: {rest:?}");
        });
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .ok()
            .flatten()
            .unwrap_or_default();
        let url = line.strip_prefix("listening on ").map(str::to_string);
        let addr = url
            .as_deref()
            .and_then(|u| u.strip_prefix("http://"))
            .and_then(|a| a.parse().ok());
        match (url, addr) {
            (Some(url), Some(addr)) => Ledgerd {
                child: Some(child),
                addr,
                url,
                data_dir,
                dir,
                kill_on_drop,
            },
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                let log =
                    std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default();
                panic!(
                    "ledgerd {args:?} did not start within 60 s: first stdout line {line:?}; stderr:\n{log}"
                );
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
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
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Everything ledgerd has written to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default()
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Sends `signal` and waits for the exit, at most 5 s (then kills it and
    /// panics); returns the status and how long the stop took.
    fn signal_and_wait(&mut self, signal: i32) -> (ExitStatus, Duration) {
        let child = self.child.as_mut().expect("running");
        let t = Instant::now();
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, signal) };
        loop {
            if let Some(s) = child.try_wait().expect("wait") {
                self.child = None;
                return (s, t.elapsed());
            }
            if t.elapsed() > Duration::from_secs(5) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("ledgerd did not stop within 5 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Sends SIGTERM and waits for the exit; returns the status and stderr.
    pub fn stop(self) -> (ExitStatus, String) {
        self.stop_with(libc::SIGTERM)
    }

    /// Sends `signal` (SIGTERM, or SIGINT as Ctrl-C does) and waits for the
    /// exit, at most 5 s; returns the status and stderr.
    pub fn stop_with(mut self, signal: i32) -> (ExitStatus, String) {
        let (status, _) = self.signal_and_wait(signal);
        (status, self.stderr())
    }

    /// SIGTERM, then waits (at most 5 s); returns the exit status code and how long the stop took.
    pub fn stop_timed(&mut self) -> (Option<i32>, Duration) {
        let (status, took) = self.signal_and_wait(libc::SIGTERM);
        (status.code(), took)
    }

    /// `kill -9`: no chance to clean up.
    pub fn kill(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Ledgerd {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if self.kill_on_drop {
            let _ = child.kill();
            let _ = child.wait();
        } else {
            terminate(&mut child, Duration::from_secs(3));
        }
    }
}

/// SIGTERM to `child`; SIGKILL if it has not exited within `grace`.
pub fn terminate(child: &mut Child, grace: Duration) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let end = Instant::now() + grace;
    while Instant::now() < end {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Replaces the first `from` in `text`, a copy of the project's `file`, with
/// `to`; fails when the file no longer has `from`.
pub fn replace_once(text: &mut String, from: &str, to: &str, file: &str) {
    assert!(
        text.contains(from),
        "{file} no longer has {from:?}: update the tests that rewrite it"
    );
    *text = text.replacen(from, to, 1);
}

/// Waits (at most 5 s) until `addr` accepts connections; fails with the
/// text of `log` when `child` (`name`, a front such as nginx) exits first or
/// takes longer.
pub fn wait_accepting(child: &mut Child, name: &str, addr: SocketAddr, log: &Path) {
    let end = Instant::now() + Duration::from_secs(5);
    while std::net::TcpStream::connect(addr).is_err() {
        if Instant::now() > end || !matches!(child.try_wait(), Ok(None)) {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            panic!("{name} did not start on {addr}:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `ledgerd verify ARGS -` with `input` on stdin: (exit code, stdout, stderr).
pub fn verify(args: &[&str], input: &str) -> (Option<i32>, String, String) {
    let mut all = vec!["verify"];
    all.extend_from_slice(args);
    all.push("-");
    let out = run(&all, Some(input.as_bytes()));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `ledgerd ARGS` to completion (a subcommand) with `RUST_LOG=warn`,
/// with `stdin` fed in.
pub fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    run_with(args, stdin, Some("warn"))
}

/// Runs `ledgerd ARGS` to completion (for flags that make it exit); the
/// status, stdout and stderr.
pub fn run_to_exit(args: &[&str]) -> (ExitStatus, String, String) {
    let out = run_with(args, None, None);
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn run_with(args: &[&str], stdin: Option<&[u8]>, rust_log: Option<&str>) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(level) = rust_log {
        cmd.env("RUST_LOG", level);
    }
    let mut child = cmd.spawn().expect("spawn ledgerd");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(bytes) = stdin {
        // A child that refuses its arguments exits without reading: ignore EPIPE.
        let _ = input.write_all(bytes);
    }
    drop(input);
    child.wait_with_output().expect("wait")
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

/// Runs `f` on a thread; panics if it has not finished within `limit`.
pub fn bounded<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("did not finish within {limit:?}"))
}

/// A port on 127.0.0.1 where nothing listens (just freed).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("addr").port()
}

/// The nginx binary the front tests use.
pub fn nginx_path() -> &'static Path {
    Path::new("/usr/sbin/nginx")
}
