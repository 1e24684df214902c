//! The right chain: a follower checks which chain each upstream serves
//! (its genesis state root and block 1's hash) against its data dir's, and
//! refuses one of another chain for good. Real ledgerd processes on
//! 127.0.0.1: devnets of two chains (`--dev-seed`) and the follower.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::http::metric;
use common::rpc::{call_raw, post_raw};
use common::{call, head, Ledgerd};

/// A devnet of `prefill` blocks of the chain of `seed`, making none unless asked.
fn devnet(dir: &Path, prefill: u64, seed: u64) -> Ledgerd {
    Ledgerd::builder()
        .dev(prefill, 0)
        .args(&["--dev-seed", &seed.to_string()])
        .data_dir(dir)
        .start()
}

fn follower(dir: &Path, upstreams: &[&str]) -> Ledgerd {
    let mut args: Vec<String> = Vec::new();
    for u in upstreams {
        args.extend(["--upstream".to_string(), u.to_string()]);
    }
    Ledgerd::builder().data_dir(dir).args(&args).start()
}

fn block_one(url: &str) -> String {
    call(url, "ledger_getSoftConfirmationByNumber", "[1]")["hash"]
        .as_str()
        .expect("block 1's hash")
        .to_string()
}

fn lines_with(log: &str, text: &str) -> usize {
    log.lines().filter(|l| l.contains(text)).count()
}

#[test]
fn an_upstream_of_another_chain_is_refused_with_one_error_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = |name: &str| dir.path().join(name);
    // A new data dir takes the chain of the first upstream that answers.
    let a = devnet(&d("a"), 20, 1);
    let f = follower(&d("f"), &[&a.url]);
    f.wait_for(
        Duration::from_secs(30),
        "the follower holds A's 20 blocks",
        |f| head(&f.url) == 20,
    );
    let ours = block_one(&f.url);
    assert_eq!(ours, block_one(&a.url));
    let _ = f.stop();

    // The same data dir, pointed at a shorter devnet of another chain.
    let b = devnet(&d("b"), 5, 2);
    assert_ne!(block_one(&b.url), ours, "two chains");
    let f = follower(&d("f"), &[&b.url]);
    f.wait_for(Duration::from_secs(15), "/health says another chain", |f| {
        let (status, h) = f.health();
        status == 503 && h["reason"] == "other_chain"
    });
    let (_, h) = f.health();
    let problem = h["problem"].as_str().expect("problem");
    assert!(
        problem.contains(&format!("upstream {} serves another chain", b.url)),
        "{problem}"
    );
    assert!(problem.contains("genesis state root"), "{problem}");
    assert!(problem.contains("block 1"), "{problem}");
    assert_eq!(h["l2Behind"], 0, "B's heads are not counted: {h}");
    assert!(h["refusedUpstreams"][&b.url].is_string(), "{h}");

    // B grows past the follower's head: still nothing of it is written,
    // and it is not asked again (no "does not link", one ERROR).
    assert_eq!(call(&b.url, "dev_mine", "[30]"), 35, "B's new head");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(head(&f.url), 20);
    assert_eq!(block_one(&f.url), ours);
    assert_eq!(f.health().0, 503);
    let m = f.metrics_text();
    assert_eq!(
        metric(
            &m,
            &format!("ledgerd_sync_upstream_other_chain{{url=\"{}\"}}", b.url)
        ),
        1
    );
    let log = f.stderr();
    assert_eq!(
        lines_with(&log, "this upstream serves another chain"),
        1,
        "{log}"
    );
    assert_eq!(
        lines_with(&log, "ERROR"),
        1,
        "only the refusal is an error: {log}"
    );
    assert_eq!(lines_with(&log, "does not link"), 0, "{log}");
}

#[test]
fn with_several_upstreams_the_one_of_another_chain_is_skipped_and_the_other_keeps_serving() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = |name: &str| dir.path().join(name);
    let a = devnet(&d("a"), 10, 1);
    // Another chain, longer: were its heads counted, A would look behind.
    let b = devnet(&d("b"), 40, 2);
    let f = follower(&d("f"), &[&a.url]);
    f.wait_for(
        Duration::from_secs(30),
        "the follower holds A's blocks",
        |f| head(&f.url) == 10,
    );
    let _ = f.stop();

    // B preferred: refused, and A followed.
    let f = follower(&d("f"), &[&b.url, &a.url]);
    assert_eq!(call(&a.url, "dev_mine", "[15]"), 25, "A's new head");
    f.wait_for(Duration::from_secs(30), "the follower follows A", |f| {
        let (status, h) = f.health();
        head(&f.url) == 25 && status == 200 && h["upstream"] == a.url.as_str()
    });
    let (_, h) = f.health();
    assert_eq!(h["l2SourceHead"], 25, "B's head is not A's: {h}");
    let why = h["refusedUpstreams"][&b.url].as_str().expect("B refused");
    assert!(why.contains("block 1"), "{why}");
    // What it holds is A's, byte for byte.
    let range =
        r#"{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationRange","params":[1,25]}"#;
    assert_eq!(post_raw(&f.url, range), post_raw(&a.url, range));
    assert_eq!(
        call_raw(&f.url, "ledger_getL2GenesisStateRoot", "[]"),
        call_raw(&a.url, "ledger_getL2GenesisStateRoot", "[]")
    );
    let log = f.stderr();
    assert_eq!(
        lines_with(&log, "this upstream serves another chain"),
        1,
        "{log}"
    );
    let m = f.metrics_text();
    assert_eq!(
        metric(
            &m,
            &format!("ledgerd_sync_upstream_other_chain{{url=\"{}\"}}", a.url)
        ),
        0
    );
}
