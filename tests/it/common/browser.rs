//! Headless Chromium (Debian's `chromium`) for the tests that need a real
//! browser: a page loaded once with `--dump-dom` (the DOM after its scripts
//! ran, and what its console printed), a screenshot, or a page left open.
//! A missing chromium fails the test that asks for it.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const CHROMIUM: &str = "/usr/bin/chromium";

/// The browser; fails the test when it is missing.
pub fn chromium() -> &'static str {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: this test runs a real browser. Install it \
         (`apt-get install chromium`, as .ci/install does)"
    );
    CHROMIUM
}

/// Chromium headless with a fresh profile in `profile`, nothing fetched
/// from the internet behind the test's back.
fn command(profile: &Path) -> Command {
    let mut c = Command::new(chromium());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .stdin(Stdio::null());
    c
}

/// Waits for `child` at most `limit`: a hung browser fails the test instead of hanging it.
fn finish(mut child: Child, limit: Duration) -> std::process::Output {
    let start = Instant::now();
    while child.try_wait().expect("wait for chromium").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("chromium did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("chromium's output")
}

/// One page load.
pub struct Loaded {
    /// The DOM after the scripts ran (`--virtual-time-budget` ms of page time).
    pub dom: String,
    /// What the page's console printed (Chromium logs each message to stderr
    /// as `INFO:CONSOLE(line)] "text", source: URL (line)`), and uncaught errors.
    pub console: Vec<String>,
}

/// Loads `url`, lets its scripts run for `budget_ms` of page time, and
/// returns the DOM and the console's messages.
pub fn load(url: &str, budget_ms: u64) -> Loaded {
    let profile = tempfile::tempdir().expect("profile dir");
    let child = command(profile.path())
        .args(["--enable-logging=stderr", "--v=0"])
        .arg(format!("--virtual-time-budget={budget_ms}"))
        .args(["--dump-dom", url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let out = finish(child, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    Loaded {
        dom: String::from_utf8_lossy(&out.stdout).into_owned(),
        console: stderr
            .lines()
            .filter(|l| l.contains(":CONSOLE"))
            .map(str::to_string)
            .collect(),
    }
}

/// Loads `url` in a `width`x`height` window and saves a PNG screenshot at `png`.
pub fn screenshot(url: &str, png: &Path, width: u32, height: u32, budget_ms: u64) {
    let profile = tempfile::tempdir().expect("profile dir");
    let child = command(profile.path())
        .arg(format!("--window-size={width},{height}"))
        .arg("--hide-scrollbars")
        .arg(format!("--virtual-time-budget={budget_ms}"))
        .arg(format!("--screenshot={}", png.display()))
        .arg(url)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let out = finish(child, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "chromium --screenshot: {:?}",
        out.status
    );
}

/// A page left open in a headless browser until dropped.
pub struct OpenPage {
    child: Child,
    _profile: tempfile::TempDir,
}

impl OpenPage {
    pub fn open(url: &str) -> OpenPage {
        let profile = tempfile::tempdir().expect("profile dir");
        let child = command(profile.path())
            .arg(url)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromium");
        OpenPage {
            child,
            _profile: profile,
        }
    }
}

impl Drop for OpenPage {
    fn drop(&mut self) {
        super::process::terminate(&mut self.child, Duration::from_secs(5));
    }
}

/// An in-process devnet node on a free port for a page to call: `prefill`
/// blocks, no new ones but those asked for, and `--cors-origin` if given.
pub fn dev_node(dir: &Path, prefill: u64, cors_origin: Option<&str>) -> ledgerd::Node {
    let mut b = ledgerd::Node::builder()
        .data_dir(dir)
        .dev(ledgerd::source::devnet::DevnetConfig {
            prefill,
            block_ms: 0,
            ..ledgerd::source::devnet::DevnetConfig::default()
        })
        .bind("127.0.0.1:0");
    if let Some(origin) = cors_origin {
        b = b.cors_origin(origin);
    }
    b.start().unwrap()
}
