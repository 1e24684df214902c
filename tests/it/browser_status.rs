//! The status page (`GET /` in a browser) in a real browser: headless
//! Chromium loads it from a devnet node, and the test reads the DOM after
//! its script ran (`--dump-dom`): the head, the sync state, the strip's
//! Trusted / Finalized / Proven runs as the test drives `dev_commit` and
//! `dev_prove`, the commitment and proof lists; and the console, which must
//! stay silent. A screenshot is saved under a temp dir. A page left open
//! must refresh with one JSON-RPC batch per refresh.
//!
//! Needs Debian's `chromium`, so the tests are `#[ignore]`d: `.ci/install`
//! installs it and `.ci/run` runs them with `--include-ignored`, where a
//! missing chromium fails them.

use crate::common;

use std::time::Duration;

use common::bitcoind::{Bitcoind, BitcoindOptions};
use common::browser::{self, Loaded, OpenPage};
use common::regtest::devnet_on;
use common::wait::wait_until;
use serde_json::json;

use crate::bitcoin_p2p::{health, peers_follower_builder};
use common::http::{exchange, metric};
use ledgerd::ledger::LedgerRead;
use ledgerd::Node;

/// A `dev_*` call over JSON-RPC, as a test harness would send it: its result.
fn dev(node: &Node, method: &str, params: &str) -> serde_json::Value {
    common::call(&node.url(), method, params)
}

/// The text of the element with `id` (its first text node).
fn text_of<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the DOM:\n{dom}"));
    let rest = &dom[at..];
    let start = rest.find('>').expect("tag end") + 1;
    let end = rest[start..].find('<').expect("text end");
    &rest[start..start + end]
}

/// The value of attribute `attr` on the element with `id`.
fn attr_of<'a>(dom: &'a str, id: &str, attr: &str) -> &'a str {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the DOM:\n{dom}"));
    let tag = &dom[at..at + dom[at..].find('>').expect("tag end")];
    let key = format!("{attr}=\"");
    let v = tag
        .find(&key)
        .unwrap_or_else(|| panic!("#{id} has no {attr}: {tag}"));
    let v = &tag[v + key.len()..];
    &v[..v.find('"').expect("attribute end")]
}

/// Loads the page; fails on any console message or script error.
fn load(node: &Node) -> Loaded {
    load_url(&node.url())
}

/// [`load`] from a node at `url`.
fn load_url(url: &str) -> Loaded {
    let page = browser::load(&format!("{url}/"), 5000);
    assert!(
        page.console.is_empty(),
        "the page wrote to the console:\n{}",
        page.console.join("\n")
    );
    assert!(
        !page.dom.contains("data-js-errors"),
        "a script error on the page: {}",
        text_of(&page.dom, "err")
    );
    assert!(page.dom.contains("<h1>ledgerd</h1>"), "{}", page.dom);
    page
}

/// The strip's counts: (trusted, finalized, proven).
fn strip(dom: &str) -> (u64, u64, u64) {
    let n = |a| attr_of(dom, "runs", a).parse::<u64>().expect("a count");
    (n("data-trusted"), n("data-finalized"), n("data-proven"))
}

#[test]
#[ignore = "needs chromium: apt-get install chromium"]
fn the_status_page_shows_the_head_and_the_strip_follows_dev_commit_and_dev_prove() {
    browser::chromium();
    let dir = tempfile::tempdir().unwrap();
    let node = common::browser::dev_node(dir.path(), 0, None);
    dev(&node, "dev_setAutoCommit", "[0]");
    dev(&node, "dev_setAutoProve", "[0]");
    assert_eq!(dev(&node, "dev_mine", "[40]"), 40);

    let page = load(&node);
    let dom = &page.dom;
    assert_eq!(attr_of(dom, "head", "data-value"), "40", "{dom}");
    assert_eq!(text_of(dom, "head"), "40");
    assert_eq!(text_of(dom, "state"), "healthy");
    assert_eq!(text_of(dom, "source"), "devnet, reachable");
    assert_eq!(text_of(dom, "sync"), "L2 Synced, L1 Synced");
    assert!(dom.contains("id=\"peers-card\" hidden"), "no peers: {dom}");
    assert_eq!(strip(dom), (40, 0, 0), "{}", text_of(dom, "runs"));
    assert_eq!(text_of(dom, "runs"), "Trusted 1–40");

    // A commitment: the heights it covers turn Finalized.
    let c = dev(&node, "dev_commit", "[]");
    assert_eq!(c["l2EndBlockNumber"], 40);
    let dom = load(&node).dom;
    assert_eq!(strip(&dom), (0, 40, 0), "{}", text_of(&dom, "runs"));

    // Its proof: Proven; then a second commitment and newer blocks, so the
    // strip shows all three statuses at once.
    dev(&node, "dev_prove", "[]");
    dev(&node, "dev_mine", "[10]");
    let c2 = dev(&node, "dev_commit", "[]");
    dev(&node, "dev_mine", "[5]");
    let page = load(&node);
    let dom = &page.dom;
    assert_eq!(attr_of(dom, "head", "data-value"), "55");
    assert_eq!(strip(dom), (5, 10, 40), "{}", text_of(dom, "runs"));
    assert_eq!(
        text_of(dom, "runs"),
        "Proven 1–40 · Finalized 41–50 · Trusted 51–55"
    );
    assert_eq!(
        (
            attr_of(dom, "runs", "data-lo"),
            attr_of(dom, "runs", "data-hi")
        ),
        ("1", "55")
    );
    // The lists, newest first, each row linking to the call that returns it.
    let slot2 = c2["foundInL1"].as_u64().unwrap();
    let link = format!(
        "href=\"#call=ledger_getSequencerCommitmentsOnSlotByNumber&amp;params=%5B{slot2}%5D\""
    );
    assert!(
        dom.contains(&link),
        "no link to commitment slot {slot2}:\n{dom}"
    );
    let proofs_at = dom.find("id=\"proofs\"").expect("proof list");
    let proofs = &dom[proofs_at..proofs_at + dom[proofs_at..].find("</tbody>").unwrap()];
    assert!(
        proofs.contains("#call=ledger_getVerifiedBatchProofsBySlotHeight")
            && proofs.contains("<td>1–40</td>"),
        "the proof row shows the heights it proved:\n{proofs}"
    );

    // A picture for people (the DOM above is what is checked).
    let shots = tempfile::tempdir().unwrap();
    let png = shots.path().join("status-page.png");
    browser::screenshot(&format!("{}/", node.url()), &png, 1200, 1000, 5000);
    let bytes = std::fs::read(&png).expect("the screenshot");
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000,
        "not a screenshot of a page: {} bytes",
        bytes.len()
    );
    if let Ok(keep) = std::env::var("LEDGERD_SCREENSHOT") {
        std::fs::copy(&png, &keep).expect("copy the screenshot");
    }
    eprintln!("screenshot: {} ({} bytes)", png.display(), bytes.len());
}

#[test]
#[ignore = "needs chromium: apt-get install chromium"]
fn the_status_page_reads_the_node_with_cors_origin_set() {
    browser::chromium();
    let dir = tempfile::tempdir().unwrap();
    // Another origin is allowed; the page is on the node's own origin.
    let node = common::browser::dev_node(dir.path(), 0, Some("https://explorer.example"));
    dev(&node, "dev_mine", "[3]");
    let dom = load(&node).dom;
    assert_eq!(attr_of(&dom, "head", "data-value"), "3", "{dom}");
    assert_eq!(strip(&dom), (3, 0, 0));
}

/// A counter of the node's `/metrics`.
fn counter(node: &Node, name: &str) -> u64 {
    let a = exchange(
        node.local_addr(),
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    metric(&a.text(), name)
}

#[test]
#[ignore = "needs chromium: apt-get install chromium"]
fn a_page_left_open_refreshes_every_second_and_a_half_with_one_batch_per_refresh() {
    browser::chromium();
    let dir = tempfile::tempdir().unwrap();
    let node = common::browser::dev_node(dir.path(), 0, None);
    dev(&node, "dev_mine", "[100]");
    let health = r#"ledgerd_http_requests_total{route="health"}"#;
    let rpc = r#"ledgerd_http_requests_total{route="rpc"}"#;
    let page = OpenPage::open(&format!("{}/", node.url()));
    // Past the first refreshes: the first few also read older DA slots
    // (up to 96, 24 a refresh) to fill the commitment and proof lists.
    common::wait_until_value(
        Duration::from_secs(30),
        "the page to read /health six times",
        || counter(&node, health),
        |n| *n >= 6,
    );
    let (h0, r0) = (counter(&node, health), counter(&node, rpc));
    std::thread::sleep(Duration::from_secs(9));
    let (h1, r1) = (counter(&node, health), counter(&node, rpc));
    drop(page);
    let refreshes = h1 - h0;
    assert!(
        (4..=7).contains(&refreshes),
        "{refreshes} refreshes in 9 s, not one every 1.5 s"
    );
    // Our own `counter` reads are GETs of /metrics, not JSON-RPC.
    assert!(
        r1 - r0 <= refreshes + 1,
        "{} JSON-RPC requests for {refreshes} refreshes: the refresh is not one batch",
        r1 - r0
    );
    assert_eq!(
        counter(&node, r#"ledgerd_http_requests_total{route="page"}"#),
        1
    );
}

#[test]
#[ignore = "needs chromium: apt-get install chromium"]
fn a_refresh_takes_the_frontier_from_health_and_reads_only_a_few_statuses() {
    browser::chromium();
    let dir = tempfile::tempdir().unwrap();
    let node = common::browser::dev_node(dir.path(), 0, None);
    // Commitments every 16 blocks, each proven: three statuses in the window.
    dev(&node, "dev_mine", "[300]");
    dev(&node, "dev_mine", "[7]");
    let health = r#"ledgerd_http_requests_total{route="health"}"#;
    let statuses =
        r#"ledgerd_rpc_requests_total{method="ledger_getSoftConfirmationStatus",outcome="ok"}"#;
    let page = OpenPage::open(&format!("{}/", node.url()));
    common::wait_until_value(
        Duration::from_secs(30),
        "the page to read /health four times",
        || counter(&node, health),
        |n| *n >= 4,
    );
    let (h0, s0) = (counter(&node, health), counter(&node, statuses));
    std::thread::sleep(Duration::from_secs(6));
    let (h1, s1) = (counter(&node, health), counter(&node, statuses));
    drop(page);
    let refreshes = h1 - h0;
    assert!(refreshes >= 3, "{refreshes} refreshes in 6 s");
    // 9 samples below the committed height, the one above the proven
    // height, and both sides of last time's boundaries: at most 12 (the
    // page bisected with about 40 before /health carried the frontier).
    let per_refresh = (s1 - s0) as f64 / refreshes as f64;
    assert!(
        per_refresh <= 12.0,
        "{per_refresh} status reads a refresh ({} in {refreshes})",
        s1 - s0
    );
    // And the strip is still exact: proven up to the last proof, finalized
    // up to the last commitment, trusted above.
    let r = node.ledger().reader().unwrap();
    let (proven, committed) = (r.proven_height().unwrap(), r.finalized_height().unwrap());
    drop(r);
    let mut runs = Vec::new();
    for (name, from, to) in [
        ("Proven", 1, proven),
        ("Finalized", proven + 1, committed),
        ("Trusted", committed + 1, 307),
    ] {
        if from <= to {
            runs.push(format!("{name} {from}–{to}"));
        }
    }
    let dom = load(&node).dom;
    assert_eq!(text_of(&dom, "runs"), runs.join(" · "));
}

#[test]
#[ignore = "needs chromium and bitcoind: apt-get install chromium; scripts/bitcoind/build.sh"]
fn the_status_page_shows_the_bitcoin_peers_connected_by_transport() {
    browser::chromium();
    let _one = common::one_at_a_time();
    let p2p = |v2transport| {
        Bitcoind::start_with(BitcoindOptions {
            p2p: true,
            v2transport,
            ..BitcoindOptions::default()
        })
    };
    let (v2, v1) = (p2p(true), p2p(false));
    let dir = tempfile::tempdir().unwrap();
    let devnet = devnet_on(&v2, &dir.path().join("devnet"), &[]);
    assert_eq!(devnet.result("dev_mine", "[3]"), 3);
    v1.call("addnode", json!([v2.p2p_addr(), "onetry"]));
    let peers = [v2.p2p_addr(), v1.p2p_addr()];
    let follower = peers_follower_builder(&devnet, &peers, &dir.path().join("f"), 1).start();
    let connected = |f: &common::Ledgerd| {
        let (_, h) = health(f);
        let list = h["bitcoinPeers"].as_array().cloned().unwrap_or_default();
        list.iter().filter(|p| p["connected"] == true).count()
    };
    wait_until(Duration::from_secs(60), "both peers connected", || {
        connected(&follower) == 2
    });
    let page = load_url(&follower.url);
    let dom = &page.dom;
    assert!(!dom.contains("id=\"peers-card\" hidden"), "{dom}");
    // BIP324 with the bitcoind that speaks it, v1 with the one that does not.
    assert_eq!(text_of(dom, "peers"), "2 connected (1 v1, 1 v2)");
    let title = attr_of(dom, "peers", "title");
    for p in &peers {
        assert!(title.contains(p.as_str()), "{title}");
    }
}
