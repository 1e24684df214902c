//! A follower with several upstreams, and lag-aware `/health`, against real
//! ledgerd processes on 127.0.0.1: a devnet, followers of it as upstreams,
//! and the follower under test. The only thing of the test's own is a proxy
//! that holds an upstream's blocks back ([`common::proxy`]).

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::http::metric;
use common::proxy::{Proxy, Tamper};
use common::rpc::call_by;
use common::{head, wait_until_value, Ledgerd};
use serde_json::{json, Value};

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(2))
        .timeout(Duration::from_secs(10))
        .build()
}

fn block_hash(url: &str, h: u64) -> Value {
    call_by(
        &agent(),
        url,
        "ledger_getSoftConfirmationByNumber",
        &format!("[{h}]"),
    )["hash"]
        .clone()
}

/// `GET /health`: the status and the JSON body.
fn health(url: &str) -> (u16, Value) {
    health_at(url, "/health")
}

/// `GET path` (a `/health` form): the status and the JSON body.
fn health_at(url: &str, path: &str) -> (u16, Value) {
    let (status, text) = match agent().get(&format!("{url}{path}")).call() {
        Ok(r) => (r.status(), r.into_string().expect("body")),
        Err(ureq::Error::Status(s, r)) => (s, r.into_string().expect("body")),
        Err(e) => panic!("GET {url}/health: {e}"),
    };
    (status, serde_json::from_str(&text).expect("JSON health"))
}

fn metrics(url: &str) -> String {
    agent()
        .get(&format!("{url}/metrics"))
        .call()
        .expect("metrics")
        .into_string()
        .expect("text")
}

/// A devnet of `prefill` blocks making one every `block_ms`; killed when dropped.
fn devnet(dir: &Path, prefill: u64, block_ms: u64) -> Ledgerd {
    Ledgerd::builder()
        .dev(prefill, block_ms)
        .data_dir(dir)
        .start()
}

/// A follower of `upstreams` (in order) with `extra` flags, on `bind`.
fn follower(dir: &Path, bind: &str, upstreams: &[&str], extra: &[&str]) -> Ledgerd {
    let mut args = Vec::new();
    for u in upstreams {
        args.push("--upstream".to_string());
        args.push(u.to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    Ledgerd::builder()
        .data_dir(dir)
        .bind(bind)
        .args(&args)
        .start()
}

#[test]
fn a_follower_with_two_upstreams_keeps_its_head_moving_when_the_first_dies_and_returns_to_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = |name: &str| dir.path().join(name);
    let dev = devnet(&d("dev"), 100, 50);
    let a = follower(&d("a"), "127.0.0.1:0", &[&dev.url], &[]);
    let b = follower(&d("b"), "127.0.0.1:0", &[&dev.url], &[]);
    let (a_url, a_port) = (a.url.clone(), a.port());
    let f = follower(&d("f"), "127.0.0.1:0", &[&a_url, &b.url], &[]);

    f.wait_for(Duration::from_secs(30), "the follower syncs from A", |f| {
        head(&f.url) >= 120 && health(&f.url).1["upstream"] == json!(a_url)
    });
    let m = metrics(&f.url);
    assert_eq!(
        metric(
            &m,
            &format!("ledgerd_sync_upstream_in_use{{url=\"{a_url}\"}}")
        ),
        1
    );
    assert_eq!(
        metric(
            &m,
            &format!("ledgerd_sync_upstream_in_use{{url=\"{}\"}}", b.url)
        ),
        0
    );

    // A dies: the follower moves to B and its head keeps moving.
    a.kill();
    let killed_at = head(&f.url);
    let t = Instant::now();
    f.wait_for(Duration::from_secs(15), "the head moves on from B", |f| {
        head(&f.url) >= killed_at + 40
    });
    eprintln!(
        "head moved {} -> {} within {:.2?} of A's kill",
        killed_at,
        head(&f.url),
        t.elapsed()
    );
    let (status, v) = health(&f.url);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["upstream"], json!(b.url), "{v}");
    assert_eq!(
        f.metric("ledgerd_sync_upstream_in_use", &[("url", &b.url)]),
        1
    );
    assert_eq!(f.metric("ledgerd_sync_upstream_switches_total", &[]), 1);

    // A comes back on its address, catches up from the devnet, and the
    // follower returns to it.
    let a = follower(&d("a"), &format!("127.0.0.1:{a_port}"), &[&dev.url], &[]);
    assert_eq!(a.url, a_url);
    f.wait_for(Duration::from_secs(20), "the follower returns to A", |f| {
        health(&f.url).1["upstream"] == json!(a_url)
    });
    let back_at = head(&f.url);
    f.wait_for(Duration::from_secs(15), "the head moves on from A", |f| {
        head(&f.url) >= back_at + 20
    });
    let log = f.stderr();
    assert_eq!(
        log.matches("upstream: now following").count(),
        2,
        "one line per change:\n{log}"
    );
    assert!(log.contains("answers again and is not behind"), "{log}");
    assert_eq!(
        metric(&metrics(&f.url), "ledgerd_sync_upstream_switches_total"),
        2
    );
    // Every block it stored is the devnet's.
    let top = head(&f.url);
    for h in [1, killed_at, killed_at + 1, back_at, top] {
        assert_eq!(block_hash(&f.url, h), block_hash(&dev.url, h), "block {h}");
    }
}

#[test]
fn health_is_503_while_more_than_max_behind_blocks_behind_and_200_once_within() {
    let dir = tempfile::tempdir().expect("temp dir");
    let dev = devnet(&dir.path().join("dev"), 60, 50);
    let proxy = Proxy::start(&dev.url);
    let f = follower(
        &dir.path().join("f"),
        "127.0.0.1:0",
        &[&proxy.url],
        &["--health-max-behind", "10"],
    );
    f.wait_for(Duration::from_secs(30), "healthy and synced", |f| {
        head(&f.url) >= 70 && health(&f.url).0 == 200
    });

    // The upstream stops handing out blocks but still says where its head is.
    proxy.hold_blocks();
    let held_at = Instant::now();
    let stuck = head(&f.url);
    let (status, v) = wait_until_value(
        Duration::from_secs(10),
        "/health to stop answering 200 after the blocks were held back",
        || health(&f.url),
        |(status, _)| *status != 200,
    );
    eprintln!("503 after {:.2?}: {v}", held_at.elapsed());
    assert_eq!(status, 503);
    assert_eq!(v["reason"], "behind", "{v}");
    assert_eq!(v["sourceReachable"], true, "{v}");
    let behind = v["l2Behind"].as_u64().expect("l2Behind");
    assert!(behind > 10, "{v}");
    assert_eq!(
        v["l2SourceHead"].as_u64().unwrap() - v["l2Head"].as_u64().unwrap(),
        behind
    );
    assert!(
        v["problem"]
            .as_str()
            .unwrap()
            .contains("blocks behind the source's head"),
        "{v}"
    );
    assert!(
        head(&f.url) <= stuck + 10,
        "nothing much was stored meanwhile"
    );
    assert!(proxy.held() >= 1);
    // Behind, not stuck: a watchdog's liveness check passes.
    let (status, v) = health_at(&f.url, "/health?live");
    assert_eq!(status, 200, "{v}");

    // Blocks flow again: it catches up and is healthy once within 10.
    proxy.release();
    let released = Instant::now();
    f.wait_for(Duration::from_secs(15), "healthy again", |f| {
        health(&f.url).0 == 200
    });
    let (_, v) = health(&f.url);
    eprintln!("200 again after {:.2?}: {v}", released.elapsed());
    assert!(v["l2Behind"].as_u64().unwrap() <= 10, "{v}");
    // Healthy again can come within a moment of the release, before the
    // devnet has made 10 more blocks: the head passes stuck + 10 soon after.
    f.wait_for(Duration::from_secs(5), "stored past the stuck head", |f| {
        head(&f.url) > stuck + 10
    });
}

#[test]
fn a_preferred_upstream_that_sends_altered_blocks_corrupts_nothing_and_the_other_is_followed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let dev = devnet(&dir.path().join("dev"), 200, 50);
    let bad = Proxy::start(&dev.url);
    bad.set(Tamper::FirstBlockOfEveryRange);
    let f = follower(
        &dir.path().join("f"),
        "127.0.0.1:0",
        &[&bad.url, &dev.url],
        &[],
    );
    // The preferred upstream is tried again after each back-off (and
    // fails again): which one is in use is looked at while the head moves,
    // not once after.
    let mut followed_dev = false;
    f.wait_for(Duration::from_secs(30), "the head moves on", |f| {
        followed_dev |= f.metric("ledgerd_sync_upstream_in_use", &[("url", &dev.url)]) == 1;
        head(&f.url) >= 250 && followed_dev
    });
    let log = f.stderr();
    assert!(log.contains("failed verification"), "{log}");
    assert!(followed_dev, "the devnet's own upstream was in use");
    assert!(
        metric(
            &metrics(&f.url),
            "ledgerd_sync_verification_failures_total{check=\"hash\"}"
        ) >= 1
    );
    // Every block it holds is the devnet's.
    let top = head(&f.url);
    let range = |url: &str, from: u64, to: u64| {
        call_by(
            &agent(),
            url,
            "ledger_getSoftConfirmationRange",
            &format!("[{from},{to}]"),
        )
    };
    let mut from = 1;
    while from <= top {
        let to = top.min(from + 99);
        assert_eq!(
            range(&f.url, from, to),
            range(&dev.url, from, to),
            "{from}..={to}"
        );
        from = to + 1;
    }
}
