//! What an operator watches: the standard `process_*` metrics and
//! `ledgerd_build_info` against what `/proc` says of the real process, the
//! block verify+store histogram; and the monitoring shipped under
//! `scripts/monitoring/`: `promtool` accepts its scrape config and rules
//! and their unit tests pass, and a real Prometheus (Debian's `prometheus`
//! package, installed by `.ci/install`) scraping a real devnet with the
//! shipped config sees `up` and the frontier series carry the node's values.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::process::terminate;
use common::{free_port, poll_until, Ledgerd};
use serde_json::Value;

const PROMTOOL: &str = "/usr/bin/promtool";
const PROMETHEUS: &str = "/usr/bin/prometheus";

fn monitoring_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/monitoring")
}

/// The value of the one series `line` starts with, as a float.
fn value(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in\n{metrics}"))
        .parse()
        .unwrap_or_else(|_| panic!("{series} is not a number"))
}

fn get(url: &str) -> String {
    ureq::get(url)
        .call()
        .unwrap_or_else(|e| panic!("GET {url}: {e}"))
        .into_string()
        .expect("a text answer")
}

#[test]
fn process_metrics_match_what_proc_says_of_the_node() {
    let node = Ledgerd::builder().dev(300, 0).start();
    let metrics = get(&format!("{}/metrics", node.url));
    let status = std::fs::read_to_string(format!("/proc/{}/status", node.pid())).unwrap();
    let kb = |field: &str| -> f64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches(" kB").parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{field} in {status}"))
    };
    let rss = value(&metrics, "process_resident_memory_bytes");
    // Read a moment apart: within 25% of each other.
    let vm_rss = kb("VmRSS:") * 1024.0;
    assert!(
        (rss - vm_rss).abs() < vm_rss / 4.0,
        "process_resident_memory_bytes {rss}, VmRSS {vm_rss}"
    );
    assert!(value(&metrics, "process_virtual_memory_bytes") >= rss);
    let fds = std::fs::read_dir(format!("/proc/{}/fd", node.pid()))
        .unwrap()
        .count() as f64;
    let open = value(&metrics, "process_open_fds");
    assert!(open >= 5.0 && (open - fds).abs() <= 3.0, "{open} vs {fds}");
    assert!(value(&metrics, "process_max_fds") >= open);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let started = value(&metrics, "process_start_time_seconds");
    assert!(
        started <= now && started > now - 120.0,
        "started {started}, now {now}"
    );
    let cpu = value(&metrics, "process_cpu_seconds_total");
    assert!(cpu > 0.0, "prefilling 300 blocks takes some CPU: {cpu}");
    assert!(metrics.contains("# TYPE process_cpu_seconds_total counter\n"));
    assert_eq!(
        value(
            &metrics,
            &format!(
                "ledgerd_build_info{{version=\"{}\",layout=\"{}\"}}",
                env!("CARGO_PKG_VERSION"),
                ledgerd::ledger::LAYOUT_VERSION
            )
        ),
        1.0
    );
    // Every block the sync thread stored is in the histogram, once.
    let count = value(&metrics, "ledgerd_sync_block_seconds_count");
    assert_eq!(
        count,
        value(&metrics, "ledgerd_sync_blocks_verified_total"),
        "{metrics}"
    );
    assert!(count >= 300.0, "{count}");
    assert_eq!(
        value(&metrics, "ledgerd_sync_block_seconds_bucket{le=\"+Inf\"}"),
        count
    );
    let sum = value(&metrics, "ledgerd_sync_block_seconds_sum");
    assert!(sum > 0.0 && sum < 60.0, "{sum}");
}

/// Runs `promtool ARGS` in the monitoring dir; its output, failing on an error.
fn promtool(args: &[&str]) -> String {
    let out = Command::new(PROMTOOL)
        .args(args)
        .current_dir(monitoring_dir())
        .output()
        .unwrap_or_else(|e| panic!("{PROMTOOL} (Debian's prometheus package): {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?}:\n{text}");
    text
}

#[test]
#[ignore = "needs prometheus"]
fn promtool_accepts_the_scrape_config_and_the_rules_and_their_unit_tests_pass() {
    let text = promtool(&["check", "config", "prometheus.yml"]);
    assert!(text.contains("SUCCESS: 1 rule files found"), "{text}");
    let text = promtool(&["check", "rules", "alerts.yml"]);
    let rules = std::fs::read_to_string(monitoring_dir().join("alerts.yml")).unwrap();
    let names: Vec<&str> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    assert!(
        text.contains(&format!("SUCCESS: {} rules found", names.len())),
        "{text}"
    );
    let text = promtool(&["test", "rules", "alerts_test.yml"]);
    assert!(text.contains("SUCCESS"), "{text}");
    // Every rule has a test in which it fires.
    let tests = std::fs::read_to_string(monitoring_dir().join("alerts_test.yml")).unwrap();
    for name in names {
        let fires = tests
            .split("alertname: ")
            .skip(1)
            .any(|t| t.starts_with(name) && t.contains("exp_labels"));
        assert!(fires, "alerts_test.yml has no test where {name} fires");
    }
}

/// A Prometheus server on 127.0.0.1, killed when dropped.
struct Prometheus {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        terminate(&mut self.child, Duration::from_secs(5));
    }
}

impl Prometheus {
    /// Starts Prometheus with the shipped config and rules, the target and
    /// the intervals changed for a test: scraping `target` every second.
    fn scraping(target: &str) -> Prometheus {
        let dir = tempfile::tempdir().expect("temp dir");
        let shipped = std::fs::read_to_string(monitoring_dir().join("prometheus.yml")).unwrap();
        assert!(shipped.contains("127.0.0.1:12346") && shipped.contains("15s"));
        let config = shipped
            .replace("127.0.0.1:12346", target)
            .replace("scrape_interval: 15s", "scrape_interval: 1s")
            .replace("evaluation_interval: 15s", "evaluation_interval: 1s")
            .replace("scrape_timeout: 5s", "scrape_timeout: 1s");
        std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
        std::fs::copy(
            monitoring_dir().join("alerts.yml"),
            dir.path().join("alerts.yml"),
        )
        .unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new(PROMETHEUS)
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{PROMETHEUS} (Debian's prometheus package): {e}"));
        let p = Prometheus {
            child,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        };
        let ready = poll_until(
            Duration::from_secs(30),
            || ureq::get(&format!("{}/-/ready", p.url)).call().is_ok(),
            |ok| *ok,
        );
        assert!(ready.is_ok(), "prometheus not ready:\n{}", p.log());
        p
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// The value of an instant query's one sample, if it has one.
    fn query(&self, promql: &str) -> Option<f64> {
        let text = ureq::get(&format!("{}/api/v1/query", self.url))
            .query("query", promql)
            .call()
            .ok()?
            .into_string()
            .ok()?;
        let answer: Value = serde_json::from_str(&text).ok()?;
        let result = answer["data"]["result"].as_array()?;
        if result.len() != 1 {
            return None;
        }
        result[0]["value"][1].as_str()?.parse().ok()
    }

    /// Waits until `promql` answers `want`; panics with what it answered.
    fn wait_for(&self, promql: &str, want: f64) {
        let got = poll_until(
            Duration::from_secs(30),
            || self.query(promql),
            |v| *v == Some(want),
        );
        if let Err(last) = got {
            panic!("{promql}: wanted {want}, last {last:?}\n{}", self.log());
        }
    }
}

#[test]
#[ignore = "needs prometheus"]
fn a_real_prometheus_with_the_shipped_config_sees_the_nodes_frontier() {
    let node = Ledgerd::builder().dev(0, 0).start();
    node.result("dev_setAutoCommit", "[0]");
    node.result("dev_setAutoProve", "[0]");
    node.result("dev_mine", "[40]");
    node.result("dev_commit", "[]");
    node.result("dev_prove", "[]");
    node.result("dev_mine", "[9]");
    node.result("dev_commit", "[]");
    let target = node.url.trim_start_matches("http://").to_string();
    let prometheus = Prometheus::scraping(&target);
    let instance = format!("{{job=\"ledgerd\",instance=\"{target}\"}}");
    prometheus.wait_for(&format!("up{instance}"), 1.0);
    let committed = node.result("citrea_getLastCommittedL2Height", "[]")["height"]
        .as_u64()
        .unwrap() as f64;
    let proven = node.result("citrea_getLastProvenL2Height", "[]")["height"]
        .as_u64()
        .unwrap() as f64;
    assert_eq!((committed, proven), (49.0, 40.0));
    let series = |name: &str, status: &str| {
        format!("{name}{{job=\"ledgerd\",instance=\"{target}\",status=\"{status}\"}}")
    };
    prometheus.wait_for(&series("ledgerd_l2_height", "finalized"), committed);
    prometheus.wait_for(&series("ledgerd_l2_height", "proven"), proven);
    // The frontier moves; Prometheus follows.
    node.result("dev_prove", "[]");
    prometheus.wait_for(&series("ledgerd_l2_height", "proven"), 49.0);
    let health: Value = serde_json::from_str(&get(&format!("{}/health", node.url))).unwrap();
    prometheus.wait_for(
        &series("ledgerd_frontier_l1_height", "proven"),
        health["lastProofL1Height"].as_f64().unwrap(),
    );
    prometheus.wait_for(
        &series("ledgerd_frontier_timestamp_seconds", "finalized"),
        health["lastCommitmentTime"].as_f64().unwrap(),
    );
    // The shipped rules are loaded, and the node down is seen as down.
    let rules: Value =
        serde_json::from_str(&get(&format!("{}/api/v1/rules", prometheus.url))).unwrap();
    let loaded = rules["data"]["groups"][0]["rules"]
        .as_array()
        .map_or(0, Vec::len);
    assert!(loaded >= 10, "{rules}");
    drop(node);
    prometheus.wait_for(&format!("up{instance}"), 0.0);
}
