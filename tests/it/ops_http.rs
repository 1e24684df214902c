//! What operators and test harnesses rely on, over real HTTP on 127.0.0.1:
//! `GET /health` (200, and 503 when sync stalls), `GET /metrics`, `GET /`
//! (the status page to a browser, the JSON error to anything else), CORS
//! headers and preflight, and embedding a node in-process.

use crate::common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use common::http::{metric, request as http};
use common::{free_port, run_to_exit, Answer, Ledgerd, PREFILL};
use ledgerd::config::Config;
use ledgerd::ledger::{Ledger, LedgerRead, OpenOptions};
use ledgerd::source::devnet::DevnetConfig;
use ledgerd::Node;

fn rpc(addr: SocketAddr, body: &str) -> Answer {
    http(addr, "POST", "/", &[], body)
}

fn call(method: &str, params: &str) -> String {
    common::rpc::request(method, params)
}

fn dev(prefill: u64, block_ms: u64) -> DevnetConfig {
    DevnetConfig {
        prefill,
        block_ms,
        ..DevnetConfig::default()
    }
}

fn dev_node(dir: &std::path::Path, prefill: u64, block_ms: u64) -> Node {
    Node::builder()
        .data_dir(dir)
        .dev(dev(prefill, block_ms))
        .bind("127.0.0.1:0")
        .start()
        .expect("node starts")
}

/// Polls `/health` until it answers `status`, at most `limit`.
fn wait_health(addr: SocketAddr, status: u16, limit: Duration) -> Answer {
    wait_health_reason(addr, status, "", limit)
}

/// [`wait_health`] for an answer whose body also holds `words` (a reason).
fn wait_health_reason(addr: SocketAddr, status: u16, words: &str, limit: Duration) -> Answer {
    common::poll_until(
        limit,
        || http(addr, "GET", "/health", &[], ""),
        |a| a.status == status && a.text().contains(words),
    )
    .unwrap_or_else(|last| last)
}

// ---- GET /: the status page ----

/// What Chromium sends for a page.
const BROWSER_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,\
                              image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";

#[test]
fn get_slash_answers_a_browser_the_status_page_and_curl_the_json_error_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let node = dev_node(dir.path(), 3, 0);
    let addr = node.local_addr();
    let page = http(addr, "GET", "/", &[("Accept", BROWSER_ACCEPT)], "");
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(page.header("vary"), Some("Accept"));
    assert_eq!(page.header("access-control-allow-origin"), Some("*"));
    let csp = page.header("content-security-policy").expect("a CSP");
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    assert_eq!(
        page.text(),
        include_str!("../../src/status_page/page.html"),
        "the page file, as it is"
    );
    // A query string (a link the page made) is the same page.
    let again = http(addr, "GET", "/?x=1", &[("Accept", "text/html")], "");
    assert_eq!((again.status, again.body.len()), (200, page.body.len()));
    // HEAD: the headers without the body.
    let head = http(addr, "HEAD", "/", &[("Accept", "text/html")], "");
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());

    // curl (`Accept: */*`), no Accept at all, JSON only: a 405 answer that
    // names / as the status page (a browser's), beside /health and /metrics.
    let before = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":"send JSON-RPC requests with HTTP POST; GET serves / (the status page, to a browser: Accept: text/html), /health and /metrics"}}"#;
    for accept in [
        &[("Accept", "*/*")][..],
        &[],
        &[("Accept", "application/json")],
    ] {
        let a = http(addr, "GET", "/", accept, "");
        assert_eq!(a.status, 405, "{accept:?}");
        assert_eq!(a.header("content-type"), Some("application/json"));
        assert_eq!(a.header("vary"), Some("Accept"), "{accept:?}");
        assert_eq!(a.text(), before, "{accept:?}");
    }
    // Other paths stay JSON to a browser too; POST / is JSON-RPC whatever Accept says.
    let a = http(addr, "GET", "/nope", &[("Accept", BROWSER_ACCEPT)], "");
    assert_eq!(a.status, 405);
    let a = http(
        addr,
        "POST",
        "/",
        &[("Accept", BROWSER_ACCEPT)],
        &call("ledger_getHeadSoftConfirmationHeight", "[]"),
    );
    assert_eq!(a.text(), r#"{"jsonrpc":"2.0","id":1,"result":3}"#);

    // Counted as its own route.
    let m = http(addr, "GET", "/metrics", &[], "").text();
    assert_eq!(
        metric(&m, r#"ledgerd_http_requests_total{route="page"}"#),
        3
    );
}

#[test]
fn the_status_page_is_served_with_cors_origin_set() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::builder()
        .data_dir(dir.path())
        .dev(dev(3, 0))
        .bind("127.0.0.1:0")
        .cors_origin("https://explorer.example")
        .start()
        .expect("node starts");
    let a = http(
        node.local_addr(),
        "GET",
        "/",
        &[("Accept", "text/html")],
        "",
    );
    assert_eq!(a.status, 200);
    assert!(a.text().starts_with("<!doctype html>"));
}

#[test]
fn health_says_how_long_the_node_has_run_and_its_version() {
    let dir = tempfile::tempdir().unwrap();
    let node = dev_node(dir.path(), 3, 0);
    let v = http(node.local_addr(), "GET", "/health", &[], "").json();
    assert!(v["uptimeSeconds"].as_u64().is_some_and(|s| s < 60), "{v}");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"), "{v}");
}

// ---- /health ----

#[test]
fn health_is_200_with_heads_while_a_devnet_runs() {
    let dir = tempfile::tempdir().unwrap();
    let node = dev_node(dir.path(), 30, 0);
    let a = http(node.local_addr(), "GET", "/health", &[], "");
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(a.header("content-type"), Some("application/json"));
    let v: serde_json::Value = serde_json::from_str(&a.text()).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["l2Head"], 30);
    assert_eq!(v["source"], "devnet");
    assert_eq!(v["syncing"], false);
    assert!(v["l1Scanned"].as_u64().unwrap() > 0, "{v}");
    assert!(v["secondsSinceLastBlock"].as_f64().is_some(), "{v}");
    // HEAD answers the same status without a body.
    let head = http(node.local_addr(), "HEAD", "/health", &[], "");
    assert_eq!(head.status, 200);
}

#[test]
fn no_new_blocks_is_not_a_stall_with_dev_block_ms_0_or_without_a_source() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::builder()
        .data_dir(dir.path())
        .dev(dev(12, 0))
        .health_max_lag(Duration::from_secs(1))
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1600));
    let a = http(node.local_addr(), "GET", "/health", &[], "");
    assert_eq!(a.status, 200, "a quiet devnet is healthy: {}", a.text());
    node.shutdown();

    // The stored ledger, served with no chain source at all.
    let node = Node::builder()
        .data_dir(dir.path())
        .health_max_lag(Duration::from_secs(1))
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1600));
    let a = http(node.local_addr(), "GET", "/health", &[], "");
    assert_eq!(a.status, 200, "{}", a.text());
    let v: serde_json::Value = serde_json::from_str(&a.text()).unwrap();
    assert_eq!(v["source"], "none");
    assert_eq!(v["l2Head"], 12);
    assert_eq!(v["sourceReachable"], serde_json::Value::Null);
}

#[test]
fn health_is_503_while_the_upstream_is_down_longer_than_the_limit_and_200_once_it_is_back() {
    let dir = tempfile::tempdir().unwrap();
    // The upstream's port is free now; the follower's own port 0 may be given
    // that same port, and a node following itself is never "down": pick again.
    let (port, follower) = loop {
        let port = free_port();
        let follower = Node::builder()
            .data_dir(dir.path())
            .upstream(&format!("http://127.0.0.1:{port}"))
            .health_max_lag(Duration::from_secs(2))
            .bind("127.0.0.1:0")
            .start()
            .unwrap();
        if follower.local_addr().port() != port {
            break (port, follower);
        }
    };
    let addr = follower.local_addr();
    // Never reached since start: 503 at once, naming why (docs/API.md, "Sync states").
    let first = wait_health_reason(addr, 503, "sourceProblem", Duration::from_secs(5));
    assert_eq!(first.status, 503, "never reached: {}", first.text());
    let v: serde_json::Value = serde_json::from_str(&first.text()).unwrap();
    assert_eq!(v["reason"], "unreached", "{v}");
    assert!(v["sourceProblem"].as_str().is_some(), "{v}");

    let a = wait_health(addr, 503, Duration::from_secs(10));
    assert_eq!(a.status, 503, "{}", a.text());
    let v: serde_json::Value = serde_json::from_str(&a.text()).unwrap();
    assert_eq!(v["status"], "unhealthy");
    assert_eq!(v["sourceReachable"], false);
    assert!(
        v["problem"].as_str().unwrap().contains("has not answered"),
        "{v}"
    );
    let m = http(addr, "GET", "/metrics", &[], "").text();
    assert!(metric(&m, "ledgerd_sync_upstream_errors_total") >= 1);
    assert_eq!(metric(&m, "ledgerd_sync_source_reachable"), 0);

    // The upstream comes up on that port: the follower syncs and is healthy again.
    let up_dir = tempfile::tempdir().unwrap();
    let upstream = Node::builder()
        .data_dir(up_dir.path())
        .dev(dev(25, 0))
        .bind(&format!("127.0.0.1:{port}"))
        .start()
        .expect("the upstream takes the freed port");
    let a = wait_health(addr, 200, Duration::from_secs(15));
    assert_eq!(a.status, 200, "{}", a.text());
    let v: serde_json::Value = serde_json::from_str(&a.text()).unwrap();
    assert_eq!(v["sourceReachable"], true);
    drop(upstream);
}

#[test]
fn health_is_503_when_every_block_fails_verification_and_metrics_count_the_check() {
    let up_dir = tempfile::tempdir().unwrap();
    let upstream = dev_node(up_dir.path(), 20, 0);
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        data_dir: dir.path().to_path_buf(),
        source: ledgerd::config::SourceConfig::Upstream {
            urls: vec![upstream.url()],
            bitcoin: None,
        },
        // Not the devnet's sequencer: every block is refused.
        chain: ledgerd::chain_rules::args::ChainRulesArgs {
            sequencer_pubkey: Some([7; 32]),
            ..Default::default()
        },
        health_max_lag: Duration::from_secs(1),
        bind: "127.0.0.1:0".into(),
        ..Config::default()
    };
    let follower = Node::builder().config(config).start().unwrap();
    let addr = follower.local_addr();
    let a = wait_health_reason(addr, 503, "stalled", Duration::from_secs(10));
    assert_eq!(a.status, 503, "{}", a.text());
    let v: serde_json::Value = serde_json::from_str(&a.text()).unwrap();
    assert_eq!(v["sourceReachable"], true);
    assert_eq!(v["syncing"], true);
    assert_eq!(v["l2Head"], 0);
    assert_eq!(v["l2SourceHead"], 20);
    assert!(v["problem"].as_str().unwrap().contains("stalled"), "{v}");
    let m = http(addr, "GET", "/metrics", &[], "").text();
    assert!(
        metric(
            &m,
            "ledgerd_sync_verification_failures_total{check=\"pub_key\"}"
        ) >= 1,
        "{m}"
    );
    assert_eq!(metric(&m, "ledgerd_sync_blocks_verified_total"), 0);
}

// ---- /metrics ----

#[test]
fn metrics_count_each_call_of_a_batch_by_method_and_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let node = dev_node(dir.path(), 40, 0);
    let addr = node.local_addr();
    let before = http(addr, "GET", "/metrics", &[], "");
    assert_eq!(before.status, 200);
    assert!(before
        .header("content-type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    let b = &before.text();
    let head_ok =
        "ledgerd_rpc_requests_total{method=\"ledger_getHeadSoftConfirmationHeight\",outcome=\"ok\"}";
    assert!(!b.contains(head_ok), "no calls yet: {b}");
    assert_eq!(metric(b, "ledgerd_rpc_request_duration_seconds_count"), 0);
    assert_eq!(
        metric(b, "ledgerd_sync_head{layer=\"l2\",head=\"synced\"}"),
        40
    );
    assert_eq!(metric(b, "ledgerd_sync_blocks_verified_total"), 40);
    assert!(metric(b, "ledgerd_ledger_size_bytes") > 0);

    let batch = format!(
        "[{},{},{}]",
        call("ledger_getHeadSoftConfirmationHeight", "[]"),
        call("ledger_getHeadSoftConfirmationHeight", "[]"),
        call("ledger_getSoftConfirmationRange", "[5,1]")
    );
    assert_eq!(rpc(addr, &batch).status, 200);
    rpc(addr, &call("ledger_nope", "[]"));
    rpc(addr, "{not json");

    // Hold one connection open so the tracker counts it.
    let mut held = TcpStream::connect(addr).unwrap();
    held.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let after = http(addr, "GET", "/metrics", &[], "").text();
    assert_eq!(metric(&after, head_ok), 2, "{after}");
    assert_eq!(
        metric(
            &after,
            "ledgerd_rpc_requests_total{method=\"ledger_getSoftConfirmationRange\",outcome=\"-32001\"}"
        ),
        1
    );
    assert_eq!(
        metric(
            &after,
            "ledgerd_rpc_requests_total{method=\"unknown\",outcome=\"-32601\"}"
        ),
        1
    );
    assert_eq!(
        metric(
            &after,
            "ledgerd_rpc_requests_total{method=\"invalid_request\",outcome=\"-32700\"}"
        ),
        1
    );
    // Three HTTP requests were timed, each in some bucket.
    assert_eq!(
        metric(&after, "ledgerd_rpc_request_duration_seconds_count"),
        3
    );
    assert_eq!(
        metric(
            &after,
            "ledgerd_rpc_request_duration_seconds_bucket{le=\"+Inf\"}"
        ),
        3
    );
    assert_eq!(
        metric(&after, "ledgerd_http_requests_total{route=\"metrics\"}"),
        2
    );
    assert_eq!(
        metric(&after, "ledgerd_http_requests_total{route=\"health\"}"),
        1
    );
    assert!(
        metric(&after, "ledgerd_http_open_connections") >= 1,
        "{after}"
    );
    drop(held);
}

// ---- CORS ----

#[test]
fn preflight_is_204_with_the_allowed_methods_headers_and_max_age() {
    let dir = tempfile::tempdir().unwrap();
    let node = dev_node(dir.path(), 3, 0);
    let a = http(
        node.local_addr(),
        "OPTIONS",
        "/",
        &[
            ("Origin", "http://explorer.test"),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "content-type"),
        ],
        "",
    );
    assert_eq!(a.status, 204);
    assert_eq!(a.header("access-control-allow-origin"), Some("*"));
    assert!(a
        .header("access-control-allow-methods")
        .unwrap()
        .contains("POST"));
    assert!(a
        .header("access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase()
        .contains("content-type"));
    assert_eq!(a.header("access-control-max-age"), Some("86400"));
    assert_eq!(
        a.header("content-length"),
        None,
        "no Content-Length on a 204"
    );
    assert!(a.text().is_empty());
}

#[test]
fn every_answer_allows_any_origin_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let node = dev_node(dir.path(), 3, 0);
    let addr = node.local_addr();
    let origin = [("Origin", "http://explorer.test")];
    let a = http(
        addr,
        "POST",
        "/",
        &origin,
        &call("ledger_getHeadSoftConfirmationHeight", "[]"),
    );
    assert_eq!(a.header("access-control-allow-origin"), Some("*"));
    assert_eq!(a.text(), r#"{"jsonrpc":"2.0","id":1,"result":3}"#);
    for path in ["/health", "/metrics", "/nope"] {
        let a = http(addr, "GET", path, &origin, "");
        assert_eq!(a.header("access-control-allow-origin"), Some("*"), "{path}");
    }
}

#[test]
fn cors_origin_echoes_only_that_origin() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::builder()
        .data_dir(dir.path())
        .dev(dev(3, 0))
        .cors_origin("https://explorer.example")
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let addr = node.local_addr();
    let body = call("ledger_getHeadSoftConfirmationHeight", "[]");
    let a = http(
        addr,
        "POST",
        "/",
        &[("Origin", "https://explorer.example")],
        &body,
    );
    assert_eq!(
        a.header("access-control-allow-origin"),
        Some("https://explorer.example")
    );
    assert_eq!(a.header("vary"), Some("Origin"));
    let a = http(
        addr,
        "POST",
        "/",
        &[("Origin", "https://evil.example")],
        &body,
    );
    assert_eq!(
        a.status, 200,
        "the answer is sent; the browser withholds it"
    );
    assert_eq!(a.header("access-control-allow-origin"), None);
    let a = http(
        addr,
        "OPTIONS",
        "/",
        &[
            ("Origin", "https://evil.example"),
            ("Access-Control-Request-Method", "POST"),
        ],
        "",
    );
    assert_eq!(a.status, 204);
    assert_eq!(a.header("access-control-allow-origin"), None);
}

#[test]
fn health_is_503_while_the_ledger_cannot_be_read_and_calls_say_why() {
    // A ledgerd process of its own: this process opens the same LMDB
    // environment, which LMDB forbids twice within one process.
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    assert_eq!(
        wait_health(node.addr, 200, Duration::from_secs(5)).status,
        200
    );

    // Every free reader slot of the environment, taken from this process:
    // the node's next read transaction fails (MDB_READERS_FULL).
    let env = lmdb::Environment::new()
        .set_flags(lmdb::EnvironmentFlags::READ_ONLY | lmdb::EnvironmentFlags::NO_TLS)
        .set_max_dbs(16)
        .open(&node.data_dir)
        .expect("the node's ledger opens read-only");
    let mut held = Vec::new();
    loop {
        match env.begin_ro_txn() {
            Ok(t) => held.push(t),
            Err(lmdb::Error::ReadersFull) => break,
            Err(e) => panic!("read transaction {}: {e}", held.len()),
        }
        assert!(held.len() < 100_000, "no reader limit reached");
    }

    let a = http(node.addr, "GET", "/health", &[], "");
    assert_eq!(a.status, 503, "{}", a.text());
    let body = a.json();
    let problem = body["problem"].as_str().unwrap_or_default();
    assert!(problem.contains("the ledger cannot be read"), "{body}");
    let a = rpc(
        node.addr,
        &call("ledger_getSoftConfirmationByNumber", "[1]"),
    );
    assert_eq!(a.status, 200, "{}", a.text());
    let answer = a.json();
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["error"]["code"].is_i64(), "{answer}");
    let data = answer["error"]["data"].as_str().unwrap_or_default();
    assert!(
        data.contains("reader"),
        "the error should say why: {answer}"
    );
    eprintln!(
        "{} reader slots taken; /health: {problem}; call: {answer}",
        held.len()
    );

    // Slots back: healthy again, and the block is served.
    drop(held);
    assert_eq!(
        wait_health(node.addr, 200, Duration::from_secs(5)).status,
        200
    );
    let answer = rpc(
        node.addr,
        &call("ledger_getSoftConfirmationByNumber", "[1]"),
    )
    .json();
    assert_eq!(answer["result"]["l2Height"], 1, "{answer}");
}

#[test]
fn the_binary_takes_the_ops_flags() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = Ledgerd::builder()
        .dev(5, 0)
        .args(&["--health-max-lag-s", "1", "--cors-origin", "http://a.test"])
        .data_dir(dir.path())
        .start();
    let a = http(
        node.addr,
        "GET",
        "/health",
        &[("Origin", "http://a.test")],
        "",
    );
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(
        a.header("access-control-allow-origin"),
        Some("http://a.test")
    );
    // SIGTERM: ledgerd stops with status 0.
    assert_eq!(node.stop_timed().0, Some(0));
    let (status, _, stderr) = run_to_exit(&["--cors-origin", "explorer"]);
    assert_eq!(status.code(), Some(2));
    assert!(stderr.contains("--cors-origin"));
}

// ---- embedding ----

#[test]
fn an_embedded_node_answers_then_shutdown_joins_its_threads_and_frees_port_and_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::builder()
        .data_dir(dir.path())
        .dev(dev(50, 0))
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let addr = node.local_addr();
    assert_eq!(node.url(), format!("http://{addr}"));
    let a = rpc(addr, &call("ledger_getHeadSoftConfirmationHeight", "[]"));
    assert_eq!(a.text(), r#"{"jsonrpc":"2.0","id":1,"result":50}"#);
    // Direct reads agree with the RPC.
    let head = node.ledger().reader().unwrap().head_height().unwrap();
    assert_eq!(head, 50);

    let ledger = Arc::downgrade(node.ledger());
    node.shutdown();
    assert!(
        ledger.upgrade().is_none(),
        "the sync thread and the server (both hold the ledger) are gone"
    );
    assert!(
        TcpStream::connect(addr).is_err(),
        "the port refuses connections after shutdown"
    );
    let reopened = Ledger::open(dir.path(), &OpenOptions::default()).expect("reopen");
    assert_eq!(reopened.reader().unwrap().head_height().unwrap(), 50);
}

#[test]
fn dropping_an_embedded_node_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, ledger) = {
        let node = dev_node(dir.path(), 5, 10);
        let a = rpc(node.local_addr(), &call("svc_syncStatus", "[]"));
        assert!(a.text().contains("l2Status"), "{}", a.text());
        (node.local_addr(), Arc::downgrade(node.ledger()))
    };
    assert!(ledger.upgrade().is_none());
    assert!(TcpStream::connect(addr).is_err());
    // The same data dir starts again and the chain continues.
    let node = dev_node(dir.path(), 5, 0);
    let head = node.ledger().reader().unwrap().head_height().unwrap();
    assert!(head >= 5, "{head}");
}
