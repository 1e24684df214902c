//! A follower that finds its Bitcoin peers (`--bitcoin-p2p
//! --bitcoin-discover`), with no internet: DNS seeds that are `localhost`
//! and 127.0.0.1 (`HOST:PORT`, as a test's seeds are not on the network's
//! port), a peer written in the test (tests/it/common/lying_peer.rs) that
//! answers `getaddr` with the addresses of real regtest bitcoinds started
//! here, and a liar among them:
//!
//! - the gossiped bitcoinds are connected (`source` `addr` in `/health`),
//!   each sees ledgerd in its `getpeerinfo`; stopped and started again with
//!   no seed reachable, ledgerd reconnects to them from its address book
//!   (`source` `book`);
//! - a liar is banned, the ban kept across a restart (never connected
//!   again); a peer killed is replaced by another from the book, so the
//!   target count (`--bitcoin-max-peers`) is held.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::bitcoind::{Bitcoind, BitcoindOptions};
use common::lying_peer::{Lie, LyingPeer, Snapshot};
use common::regtest::devnet_on;
use common::wait::{wait_until, wait_until_value};
use common::Ledgerd;
use serde_json::{json, Value};

/// A regtest bitcoind listening for peers on 127.0.0.1, synced to `from`
/// when given.
fn node(from: Option<&Bitcoind>) -> Bitcoind {
    let n = Bitcoind::start_with(BitcoindOptions {
        p2p: true,
        ..BitcoindOptions::default()
    });
    if let Some(from) = from {
        n.call("addnode", json!([from.p2p_addr(), "onetry"]));
        let tip = from.block_count();
        wait_until(Duration::from_secs(30), "a bitcoind to sync", || {
            n.block_count() >= tip
        });
    }
    n
}

/// `ledgerd --upstream <up> --bitcoin-p2p --bitcoin-discover` with `seeds`
/// as its DNS seeds and `--bitcoin-max-peers max`.
fn finder(up: &Ledgerd, seeds: &[String], max: usize, dir: &std::path::Path) -> Ledgerd {
    let mut args: Vec<String> = vec![
        "--upstream".into(),
        up.url.clone(),
        "--bitcoin-p2p".into(),
        "--bitcoin-discover".into(),
        "--bitcoin-max-peers".into(),
        max.to_string(),
        "--bitcoin-finality-depth".into(),
        "1".into(),
    ];
    for s in seeds {
        args.push("--bitcoin-dns-seed".into());
        args.push(s.clone());
    }
    Ledgerd::builder()
        .data_dir(dir)
        .args(&args)
        .log("info")
        .start()
}

/// The connected peers in `/health`: (addr, source, transport).
fn connected(n: &Ledgerd) -> Vec<(String, String, String)> {
    let (_, h) = n.health();
    let mut out: Vec<(String, String, String)> = h["bitcoinPeers"]
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|p| p["connected"] == true)
        .map(|p| {
            let s = |k: &str| p[k].as_str().unwrap_or_default().to_string();
            (s("addr"), s("source"), s("transport"))
        })
        .collect();
    out.sort();
    out
}

/// The value of one metrics line (`name{labels}`), 0 when absent.
fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0)
}

/// Whether `node` has an inbound peer whose user agent is ledgerd's.
fn sees_ledgerd(node: &Bitcoind) -> bool {
    let peers: Value = node.call("getpeerinfo", json!([]));
    peers.as_array().unwrap().iter().any(|p| {
        p["inbound"] == true
            && p["subver"]
                .as_str()
                .is_some_and(|s| s.starts_with("/ledgerd:"))
    })
}

/// A port nothing listens on (a seed that does not answer).
fn dead_seed() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    drop(l);
    addr
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn gossiped_bitcoinds_are_found_and_a_restart_with_no_seed_reachable_reconnects_from_the_book() {
    let _one = common::one_at_a_time();
    let a = node(None);
    let dir = tempfile::tempdir().unwrap();
    let devnet = devnet_on(&a, &dir.path().join("devnet"), &[]);
    assert_eq!(devnet.result("dev_mine", "[3]"), 3);
    let b = node(Some(&a));
    let c = node(Some(&a));
    let gossip = LyingPeer::gossiping(
        Lie::None,
        Snapshot::of(&a),
        vec![b.p2p_addr().parse().unwrap(), c.p2p_addr().parse().unwrap()],
    );
    // `localhost` names bitcoind a; 127.0.0.1 the peer that gossips.
    let a_port = a.p2p_addr().rsplit_once(':').unwrap().1.to_string();
    let seeds = vec![format!("localhost:{a_port}"), gossip.addr.clone()];
    let data = dir.path().join("finder");
    let n = finder(&devnet, &seeds, 8, &data);
    let want = {
        let mut w = vec![
            (a.p2p_addr(), "dns".to_string(), "v1".to_string()),
            (b.p2p_addr(), "addr".to_string(), "v1".to_string()),
            (c.p2p_addr(), "addr".to_string(), "v1".to_string()),
            (gossip.addr.clone(), "dns".to_string(), "v1".to_string()),
        ];
        w.sort();
        w
    };
    wait_until_value(
        Duration::from_secs(60),
        "the seeds and the gossiped bitcoinds connected",
        || connected(&n),
        |c| *c == want,
    );
    assert_eq!(
        gossip.asked("getaddr"),
        gossip.asked("version"),
        "one getaddr per connection"
    );
    assert!(gossip.asked("sendaddrv2") >= 1, "sendaddrv2 before verack");
    for (name, node) in [("a", &a), ("b", &b), ("c", &c)] {
        wait_until(Duration::from_secs(10), name, || sees_ledgerd(node));
    }
    let m = n.metrics_text();
    assert!(
        metric(&m, "ledgerd_bitcoin_address_book_entries") >= 4,
        "{m}"
    );
    assert_eq!(
        metric(
            &m,
            "ledgerd_bitcoin_peer_connections{source=\"addr\",transport=\"v1\"}"
        ),
        2,
        "{m}"
    );
    // Scanned through the found peers alone.
    let tip = a.block_count();
    wait_until(Duration::from_secs(60), "the scan to reach the tip", || {
        n.result("ledger_getLastScannedL1Height", "[]").as_u64() == Some(tip)
    });
    n.stop();

    // No seed reachable now: the book alone.
    drop(gossip);
    let n = finder(&devnet, &[dead_seed()], 8, &data);
    // Spoken to in v2 now: the book kept the NODE_P2P_V2 each bitcoind's
    // `version` offered (the seed and the gossip said nothing of it).
    let mut from_book = vec![
        (a.p2p_addr(), "book".to_string(), "v2".to_string()),
        (b.p2p_addr(), "book".to_string(), "v2".to_string()),
        (c.p2p_addr(), "book".to_string(), "v2".to_string()),
    ];
    from_book.sort();
    wait_until_value(
        Duration::from_secs(60),
        "the bitcoinds reconnected from the book",
        || connected(&n),
        |c| *c == from_book,
    );
    n.stop();

    // A seed that answers, but the book's peers connect first: as Core,
    // the seeds are not asked once two found peers are connected within
    // the 11 s a node with a few addresses gives its book.
    let seed = LyingPeer::gossiping(Lie::None, Snapshot::of(&a), vec![]);
    let started = std::time::Instant::now();
    let n = finder(&devnet, std::slice::from_ref(&seed.addr), 8, &data);
    wait_until_value(
        Duration::from_secs(60),
        "the bitcoinds reconnected from the book again",
        || connected(&n),
        |c| *c == from_book,
    );
    std::thread::sleep(Duration::from_secs(14).saturating_sub(started.elapsed()));
    assert_eq!(connected(&n), from_book);
    assert_eq!(seed.asked("version"), 0, "the seed was connected to");
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn a_liar_is_banned_across_restarts_and_a_dead_peer_is_replaced_from_the_book() {
    let _one = common::one_at_a_time();
    let a = node(None);
    let dir = tempfile::tempdir().unwrap();
    let devnet = devnet_on(&a, &dir.path().join("devnet"), &[]);
    assert_eq!(devnet.result("dev_mine", "[3]"), 3);
    let mut others: Vec<Bitcoind> = (0..3).map(|_| node(Some(&a))).collect();
    let chain = Snapshot::of(&a);
    let liar = LyingPeer::start(Lie::WrongBits, chain.clone());
    let mut gossiped: Vec<SocketAddr> = others
        .iter()
        .map(|o| o.p2p_addr().parse().unwrap())
        .collect();
    gossiped.push(liar.socket_addr());
    let gossip = LyingPeer::gossiping(Lie::None, chain, gossiped);
    let seeds = vec![gossip.addr.clone(), liar.addr.clone()];
    let data = dir.path().join("finder");
    // Three outbound slots: the gossiping peer and two bitcoinds; the
    // liar, a seed, is tried first and banned.
    let n = finder(&devnet, &seeds, 3, &data);
    let three = |c: &Vec<(String, String, String)>| c.len() == 3;
    let now = wait_until_value(
        Duration::from_secs(60),
        "three peers connected",
        || connected(&n),
        three,
    );
    assert!(!now.iter().any(|p| p.0 == liar.addr), "{now:?}");
    let m = n.metrics_text();
    assert_eq!(
        metric(
            &m,
            "ledgerd_bitcoin_peers_banned_total{reason=\"bad_header\"}"
        ),
        1,
        "{m}"
    );
    assert_eq!(metric(&m, "ledgerd_bitcoin_address_book_banned"), 1, "{m}");
    let liar_versions = liar.asked("version");
    assert!(liar_versions >= 1);

    // One connected bitcoind dies: another from the book takes its place.
    let victim = others
        .iter()
        .position(|o| now.iter().any(|p| p.0 == o.p2p_addr()))
        .unwrap();
    let victim_addr = others[victim].p2p_addr();
    others[victim].kill9();
    let after = wait_until_value(
        Duration::from_secs(60),
        "three peers connected again, without the dead one",
        || connected(&n),
        |c| c.len() == 3 && !c.iter().any(|p| p.0 == victim_addr),
    );
    let spare = others
        .iter()
        .find(|o| !now.iter().any(|p| p.0 == o.p2p_addr()))
        .unwrap();
    assert!(
        after.iter().any(|p| p.0 == spare.p2p_addr()),
        "the spare took the slot: {after:?}"
    );
    n.stop();

    // A restart: the ban holds; the liar is never connected again.
    let n = finder(&devnet, &seeds, 3, &data);
    wait_until_value(
        Duration::from_secs(60),
        "three peers connected after the restart",
        || connected(&n),
        three,
    );
    let m = n.metrics_text();
    assert_eq!(metric(&m, "ledgerd_bitcoin_address_book_banned"), 1, "{m}");
    assert_eq!(
        liar.asked("version"),
        liar_versions,
        "the banned liar was connected to again"
    );
    assert!(!connected(&n).iter().any(|p| p.0 == liar.addr));
}
