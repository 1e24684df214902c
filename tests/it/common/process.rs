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

/// A running `ledgerd` server, made by [`Ledgerd::builder`]. Dropping it
/// kills it (SIGKILL, then waits for the exit): a test that wants a clean
/// stop, its exit status or its last words calls [`Ledgerd::stop`].
pub struct Ledgerd {
    child: Option<Child>,
    pub addr: SocketAddr,
    /// `http://HOST:PORT`, as the listening line says.
    pub url: String,
    pub data_dir: PathBuf,
    /// Holds `stderr.log` (and `data`, the data dir when the test gave none).
    pub dir: tempfile::TempDir,
    /// This node's share of the machine (none for a timing test's own
    /// nodes): see [`super::one_at_a_time`].
    _share: Option<super::Share>,
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

/// How to start a `ledgerd` server: `ledgerd [serve-readonly] [DEV FLAGS]
/// ARGS --bind BIND --data-dir DIR` with `RUST_LOG=LEVEL`. Without calls:
/// no chain flags, `--bind 127.0.0.1:0`, a fresh data dir in a temp dir,
/// `RUST_LOG=info`.
#[must_use = "a builder does nothing until .start()"]
pub struct LedgerdBuilder {
    readonly: bool,
    dev: Option<(u64, u64)>,
    args: Vec<OsString>,
    bind: Option<String>,
    data_dir: DataDir,
    log: String,
    env: Vec<(String, String)>,
}

/// Where the data dir comes from.
enum DataDir {
    /// `data` in the node's own temp dir.
    Fresh,
    /// A directory the test made (and may reopen after the node is gone).
    At(PathBuf),
    /// No `--data-dir` flag: the arguments name it (`--config FILE`).
    FromArgs,
}

impl LedgerdBuilder {
    /// A devnet: `--dev --dev-prefill PREFILL --dev-block-ms BLOCK_MS`
    /// (`block_ms` 0: no new blocks unless asked for).
    pub fn dev(mut self, prefill: u64, block_ms: u64) -> Self {
        self.dev = Some((prefill, block_ms));
        self
    }

    /// `ledgerd serve-readonly`: a read-only server of a ledger another
    /// process writes.
    pub fn readonly(mut self) -> Self {
        self.readonly = true;
        self
    }

    /// One more flag (or flag value).
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// More flags, after the devnet's.
    pub fn args<S: Into<OsString> + Clone>(mut self, args: &[S]) -> Self {
        self.args.extend(args.iter().cloned().map(Into::into));
        self
    }

    /// Listen on `bind` (`127.0.0.1:PORT`), e.g. to bring a node back on
    /// the port it had before it was killed. Default `127.0.0.1:0`.
    pub fn bind(mut self, bind: &str) -> Self {
        self.bind = Some(bind.to_string());
        self
    }

    /// Use `dir` as the data dir (it outlives the node). Default: a fresh
    /// one in the node's own temp dir.
    pub fn data_dir(mut self, dir: &Path) -> Self {
        self.data_dir = DataDir::At(dir.to_path_buf());
        self
    }

    /// No `--data-dir` flag: the arguments name it (`--config FILE`).
    pub fn data_dir_from_args(mut self) -> Self {
        self.data_dir = DataDir::FromArgs;
        self
    }

    /// One more environment variable (`LEDGERD_BIND`, ...).
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// `RUST_LOG=level` (default `info`, ledgerd's own default).
    pub fn log(mut self, level: &str) -> Self {
        self.log = level.to_string();
        self
    }

    /// Starts it and waits for its listening line (at most 60 s: debug
    /// builds prefill slowly); panics with its stderr if it does not come.
    pub fn start(self) -> Ledgerd {
        let dir = tempfile::tempdir().expect("temp dir");
        let loopback = self
            .bind
            .as_deref()
            .is_some_and(|b| b.starts_with("127.0.0.1:"));
        let mut all: Vec<OsString> = Vec::new();
        if self.readonly {
            all.push("serve-readonly".into());
        }
        if let Some((prefill, block_ms)) = self.dev {
            all.extend(
                devnet_args(prefill, block_ms)
                    .into_iter()
                    .map(OsString::from),
            );
        }
        all.extend(self.args);
        if let Some(bind) = self.bind {
            all.extend(["--bind".into(), bind.into()]);
        }
        let data_dir = match self.data_dir {
            DataDir::Fresh => dir.path().join("data"),
            DataDir::At(d) => d,
            DataDir::FromArgs => PathBuf::new(),
        };
        if !data_dir.as_os_str().is_empty() {
            all.extend(["--data-dir".into(), data_dir.clone().into()]);
        }
        let node = Ledgerd::spawn(&all, &self.env, &self.log, dir, data_dir);
        if loopback {
            assert!(node.url.starts_with("http://127.0.0.1:"), "{}", node.url);
        }
        node
    }
}

impl Ledgerd {
    /// The one way to start a server: see [`LedgerdBuilder`].
    pub fn builder() -> LedgerdBuilder {
        LedgerdBuilder {
            readonly: false,
            dev: None,
            args: Vec::new(),
            bind: Some("127.0.0.1:0".into()),
            data_dir: DataDir::Fresh,
            log: "info".into(),
            env: Vec::new(),
        }
    }

    /// Spawns `ledgerd ARGS` with `RUST_LOG=rust_log` and waits for its
    /// listening line.
    fn spawn(
        args: &[OsString],
        env: &[(String, String)],
        rust_log: &str,
        dir: tempfile::TempDir,
        data_dir: PathBuf,
    ) -> Ledgerd {
        let share = super::share();
        let log = std::fs::File::create(dir.path().join("stderr.log")).expect("log file");
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("RUST_LOG", rust_log)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log));
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
                _share: share,
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
    /// Kills the process and waits for it: nothing a test asserts on
    /// depends on a clean stop it did not ask for ([`Ledgerd::stop`]).
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
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
    // Ok(true): accepting; Ok(false): not yet; Err: the child exited.
    let accepting = super::wait::poll_until(
        Duration::from_secs(5),
        || match child.try_wait() {
            Ok(None) => Ok(std::net::TcpStream::connect(addr).is_ok()),
            _ => Err(()),
        },
        |state| *state != Ok(false),
    );
    if accepting != Ok(Ok(true)) {
        let log = std::fs::read_to_string(log).unwrap_or_default();
        panic!("{name} did not start on {addr}:\n{log}");
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
