//! Shared by tests/fixtures.rs and tests/readonly.rs: real `ledgerd`
//! processes on 127.0.0.1 port 0, and a JSON-RPC client.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_ledgerd");

/// A running ledgerd server; SIGTERM on drop.
pub struct Proc {
    pub child: Child,
    pub url: String,
}

impl Proc {
    /// Starts `ledgerd ARGS` and waits for its `listening on` line.
    pub fn start(args: &[&str]) -> Proc {
        let mut child = Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("RUST_LOG", "warn")
            .spawn()
            .expect("spawn ledgerd");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the first line");
        if !line.starts_with("listening on http://") {
            let mut err = String::new();
            let _ = child.wait();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("ledgerd {args:?} did not start: first line {line:?}, stderr {err}");
        }
        let url = line.trim().trim_start_matches("listening on ").to_string();
        Proc { child, url }
    }

    /// SIGTERM, then waits (at most 5 s); returns the exit status code and how long the stop took.
    pub fn stop(&mut self) -> (Option<i32>, Duration) {
        let t = Instant::now();
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                return (s.code(), t.elapsed());
            }
            if t.elapsed() > Duration::from_secs(5) {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("ledgerd did not stop within 5 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
            let _ = self.child.wait();
        }
    }
}

/// POSTs a JSON-RPC call and returns the whole response body.
pub fn call_raw(url: &str, method: &str, params: &str) -> String {
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
    ureq::post(url)
        .set("Content-Type", "application/json")
        .timeout(Duration::from_secs(10))
        .send_string(&body)
        .expect("post")
        .into_string()
        .expect("body")
}

/// The `result` of a call, as a JSON value (panics on an error answer).
pub fn call(url: &str, method: &str, params: &str) -> serde_json::Value {
    let text = call_raw(url, method, params);
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert!(v.get("error").is_none(), "{method}{params}: {text}");
    v["result"].clone()
}

/// Runs `ledgerd ARGS` to completion (a subcommand), with `stdin` fed in.
pub fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    use std::io::Write;
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("RUST_LOG", "warn")
        .spawn()
        .expect("spawn ledgerd");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(bytes) = stdin {
        // A child that refuses its arguments exits without reading: ignore EPIPE.
        let _ = input.write_all(bytes);
    }
    drop(input);
    child.wait_with_output().expect("wait")
}

/// A devnet ledger with heights 1..=`prefill` in `dir` (the writer is stopped).
pub fn devnet_ledger(dir: &Path, prefill: u64) {
    let prefill = prefill.to_string();
    let mut p = Proc::start(&[
        "--dev",
        "--dev-prefill",
        &prefill,
        "--dev-block-ms",
        "0",
        "--bind",
        "127.0.0.1:0",
        "--data-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(p.stop().0, Some(0));
}

/// `ledgerd export` of `dir` (extra args appended), as text.
pub fn export(dir: &Path, extra: &[&str]) -> String {
    let mut args = vec!["export", "--data-dir", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = run(&args, None);
    assert!(
        out.status.success(),
        "export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Every method's answer about everything a ledger holds, as (call, raw answer) pairs.
pub fn every_answer(url: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut ask = |method: &str, params: String| {
        let answer = call_raw(url, method, &params);
        out.push((format!("{method}{params}"), answer));
    };
    let head = call(url, "ledger_getHeadSoftConfirmationHeight", "[]")
        .as_u64()
        .unwrap();
    for m in [
        "svc_syncStatus",
        "citrea_syncStatus",
        "ledger_getL2GenesisStateRoot",
        "ledger_getHeadSoftConfirmation",
        "ledger_getHeadSoftConfirmationHeight",
        "ledger_getLastVerifiedBatchProof",
        "ledger_getLastScannedL1Height",
    ] {
        ask(m, "[]".into());
    }
    let mut slots = std::collections::BTreeMap::new();
    for h in 0..=head + 2 {
        ask("ledger_getSoftConfirmationByNumber", format!("[{h}]"));
        ask("ledger_getSoftConfirmationStatus", format!("[{h}]"));
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&call_raw(
            url,
            "ledger_getSoftConfirmationByNumber",
            &format!("[{h}]"),
        )) {
            let r = &v["result"];
            if let Some(hash) = r["hash"].as_str() {
                ask("ledger_getSoftConfirmationByHash", format!("[\"{hash}\"]"));
                slots.insert(
                    r["daSlotHeight"].as_u64().unwrap(),
                    r["daSlotHash"].as_str().unwrap().to_string(),
                );
            }
        }
    }
    for start in (1..=head + 1).step_by(50) {
        ask(
            "ledger_getSoftConfirmationRange",
            format!("[{start},{}]", start + 49),
        );
    }
    let (lo, hi) = (
        slots.keys().next().copied().unwrap_or(0).saturating_sub(2),
        slots.keys().last().copied().unwrap_or(0) + 40,
    );
    for slot in lo..=hi {
        ask(
            "ledger_getSequencerCommitmentsOnSlotByNumber",
            format!("[{slot}]"),
        );
        ask(
            "ledger_getVerifiedBatchProofsBySlotHeight",
            format!("[{slot}]"),
        );
    }
    for hash in slots.values() {
        ask(
            "ledger_getSequencerCommitmentsOnSlotByHash",
            format!("[\"{hash}\"]"),
        );
    }
    out
}
