//! Shared by the integration tests: start a real `ledgerd` process on
//! 127.0.0.1 port 0 over a temp data dir, find it by its `listening on` line,
//! call it over HTTP, stop it with SIGTERM.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A `ledgerd` child process. Dropping it kills it.
pub struct Ledgerd {
    child: Option<Child>,
    pub url: String,
    pub data_dir: PathBuf,
    stderr: Option<std::thread::JoinHandle<String>>,
}

/// The flags for a devnet node with `prefill` blocks and no clock.
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
    /// Starts `ledgerd ARGS --bind 127.0.0.1:0 --data-dir DIR` and waits for
    /// its `listening on` line (at most 60 s: debug builds prefill slowly).
    pub fn start(data_dir: &Path, args: &[String]) -> Ledgerd {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ledgerd"))
            .args(args)
            .args(["--bind", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ledgerd starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let first = lines.next().and_then(|l| l.ok());
            let _ = tx.send(first);
            // Anything after the first line would break the convention.
            let rest: Vec<String> = lines.map_while(|l| l.ok()).collect();
            assert!(rest.is_empty(), "ledgerd printed more on stdout: {rest:?}");
        });
        let first = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("ledgerd prints its listening line within 60 s")
            .unwrap_or_default();
        let url = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("first stdout line is {first:?}"))
            .to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        Ledgerd {
            child: Some(child),
            url,
            data_dir: data_dir.to_path_buf(),
            stderr: Some(stderr),
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().map(|c| c.id() as i32).unwrap_or(0)
    }

    /// Posts `body` and returns the HTTP status and the body text.
    pub fn post_raw(&self, body: &str) -> (u16, String) {
        post_raw(&self.url, body)
    }

    /// Posts a JSON-RPC body and parses the answer.
    pub fn post(&self, body: &str) -> Value {
        let (status, text) = self.post_raw(body);
        assert_eq!(status, 200, "HTTP status for {body}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("answer {text:?} is not JSON: {e}"))
    }

    /// Calls `method` with `params` (JSON text) and returns the whole answer object.
    pub fn call(&self, method: &str, params: &str) -> Value {
        let answer = self.post(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#
        ));
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert_eq!(answer["id"], 1, "{answer}");
        answer
    }

    /// Calls `method` and returns its `result`, failing on an error answer.
    pub fn result(&self, method: &str, params: &str) -> Value {
        let answer = self.call(method, params);
        assert!(
            answer.get("error").is_none(),
            "{method} {params} answered an error: {answer}"
        );
        answer["result"].clone()
    }

    /// Calls `method` and returns its `error` object, failing on a result.
    pub fn error(&self, method: &str, params: &str) -> Value {
        let answer = self.call(method, params);
        assert!(
            answer.get("result").is_none(),
            "{method} {params} answered a result: {answer}"
        );
        answer["error"].clone()
    }

    /// Waits until `f` holds (polling every 20 ms), at most `limit`.
    pub fn wait_for(&self, limit: Duration, what: &str, mut f: impl FnMut(&Ledgerd) -> bool) {
        let start = Instant::now();
        while !f(self) {
            assert!(start.elapsed() < limit, "waited {limit:?} for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGTERM and waits for the exit; returns the status and stderr.
    pub fn stop(self) -> (ExitStatus, String) {
        self.stop_with(libc::SIGTERM)
    }

    /// Sends `signal` (SIGTERM, or SIGINT as Ctrl-C does) and waits for the
    /// exit, at most 5 s; returns the status and stderr.
    pub fn stop_with(mut self, signal: i32) -> (ExitStatus, String) {
        let mut child = self.child.take().expect("running");
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(child.id() as i32, signal);
        }
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "ledgerd did not stop within 5 s of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        let stderr = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        (status, stderr)
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
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Posts `body` to `url`; returns the HTTP status and the body text.
pub fn post_raw(url: &str, body: &str) -> (u16, String) {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();
    match agent
        .post(url)
        .set("Content-Type", "application/json")
        .send_string(body)
    {
        Ok(r) => {
            let status = r.status();
            (status, r.into_string().expect("answer body"))
        }
        Err(ureq::Error::Status(status, r)) => (status, r.into_string().unwrap_or_default()),
        Err(e) => panic!("POST {url} failed: {e}"),
    }
}

/// Runs `ledgerd ARGS` to completion (for flags that make it exit).
pub fn run_to_exit(args: &[&str]) -> (ExitStatus, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ledgerd"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("ledgerd runs");
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Decodes a 64-hex-digit string into 32 bytes.
pub fn hash32(v: &Value) -> [u8; 32] {
    let s = v.as_str().unwrap_or_else(|| panic!("{v} is not a string"));
    assert_eq!(s.len(), 64, "{s} is not 64 hex digits");
    assert_eq!(s, s.to_lowercase(), "hex is lowercase");
    hex::decode(s).expect("hex").try_into().expect("32 bytes")
}
