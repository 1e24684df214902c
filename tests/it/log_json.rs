//! `--log-format json`: every line a node writes to stderr, from its start
//! through a sync to its stop, is one JSON object with the time, level,
//! target and message; text stays the default.

use crate::common;

use std::time::Duration;

use common::Ledgerd;
use serde_json::Value;

#[test]
fn every_log_line_of_a_devnet_start_sync_and_stop_is_one_json_object() {
    let node = Ledgerd::builder()
        .dev(50, 50)
        .arg("--log-format")
        .arg("json")
        .log("debug")
        .start();
    node.wait_for(Duration::from_secs(30), "live blocks", |n| n.head() >= 60);
    // A follower of it logs its catch-up and the DA scan.
    let follower = Ledgerd::builder()
        .args(&["--upstream", node.url.as_str(), "--log-format", "json"])
        .log("debug")
        .start();
    follower.wait_for(Duration::from_secs(30), "the catch-up", |f| f.head() >= 60);
    for (name, n) in [("follower", follower), ("devnet", node)] {
        let (status, stderr) = n.stop();
        assert!(status.success(), "{name}: {status:?}\n{stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert!(lines.len() >= 5, "{name}: {stderr}");
        let mut messages = Vec::new();
        for line in &lines {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{name}: not one JSON object ({e}): {line}"));
            let o = v.as_object().expect("an object");
            for field in ["time", "level", "target", "message"] {
                assert!(o[field].is_string(), "{name}: {field} in {line}");
            }
            let time = o["time"].as_str().unwrap();
            assert!(time.len() == 24 && time.ends_with('Z'), "{line}");
            assert!(
                ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"].contains(&o["level"].as_str().unwrap()),
                "{line}"
            );
            messages.push(o["message"].as_str().unwrap().to_string());
        }
        assert!(
            messages.iter().any(|m| m.starts_with("serving ")),
            "{name}: the start is logged: {stderr}"
        );
        assert!(
            messages.iter().any(|m| m == "stopping"),
            "{name}: the stop is logged: {stderr}"
        );
        assert!(
            lines.iter().any(|l| l.contains("\"level\":\"DEBUG\"")),
            "{name}: RUST_LOG still filters (debug lines wanted): {stderr}"
        );
    }
}

#[test]
fn text_stays_the_default() {
    let node = Ledgerd::builder().dev(3, 0).start();
    let (_, stderr) = node.stop();
    let first = stderr.lines().next().expect("a log line");
    assert!(
        serde_json::from_str::<Value>(first).is_err(),
        "not JSON: {first}"
    );
    assert!(stderr.contains("INFO"), "{stderr}");
}
