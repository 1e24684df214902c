//! BIP324's v2 transport (`--bitcoin-transport auto|v2|v1`) against a real
//! regtest bitcoind (tests/it/common/bitcoind.rs) with and without
//! `-v2transport`, and against peers written here that garble the v2
//! handshake:
//!
//! - bitcoind with `-v2transport=1`: its `getpeerinfo` shows the default
//!   follower's connection as `v2` and the `--bitcoin-transport v1` one's as
//!   `v1`; both end with the devnet's answers; `/health` and `/metrics` say
//!   the same;
//! - bitcoind with `-v2transport=0`: `auto` falls back to v1 (logged and
//!   counted) and ends with the devnet's answers; `--bitcoin-transport v2`
//!   does not connect and says why in its log and `/health`;
//! - a peer that answers the handshake with noise and one that hangs up
//!   half-way through its key: neither hangs ledgerd or makes it panic,
//!   neither is retried over v1 (they answered), and `/health` says why.

use crate::bitcoin_inscription::noise;
use crate::bitcoin_p2p::{
    caught_up, first_slot, health, metric, metrics, peers_follower_builder, view,
};
use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use common::bitcoind::{Bitcoind, BitcoindOptions};
use common::regtest::busy_devnet;
use common::{wait_until, wait_until_value, Ledgerd};
use serde_json::{json, Value};

/// A regtest bitcoind listening for peers on 127.0.0.1, with `-v2transport=<v2>`.
fn p2p_node(v2: bool) -> Bitcoind {
    Bitcoind::start_with(BitcoindOptions {
        p2p: true,
        v2transport: v2,
        ..BitcoindOptions::default()
    })
}

/// A follower of `up` reading the DA layer from `node`'s P2P port only,
/// with `--bitcoin-transport transport` when given.
fn follower(up: &Ledgerd, node: &Bitcoind, dir: &std::path::Path, transport: &str) -> Ledgerd {
    let b = peers_follower_builder(up, &[node.p2p_addr()], dir, 1);
    match transport {
        "" => b.start(),
        t => b.args(&["--bitcoin-transport", t]).start(),
    }
}

/// The transports of the connections ledgerd opened to `node`, as its
/// `getpeerinfo` reports them (`transport_protocol_type`), sorted.
fn ledgerd_transports(node: &Bitcoind) -> Vec<String> {
    let peers = node.call("getpeerinfo", json!([]));
    let mut types: Vec<String> = peers
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["subver"].as_str().unwrap_or("").contains("ledgerd"))
        .map(|p| p["transport_protocol_type"].as_str().unwrap().to_string())
        .collect();
    types.sort();
    types
}

/// A bitcoind with `-v2transport=<v2>` listening for peers, and a devnet on
/// it with commitments and a proof (66 L2 blocks).
struct Chain {
    _one: common::Alone,
    node: Bitcoind,
    dir: tempfile::TempDir,
    devnet: Ledgerd,
    /// The DA slot of L2 block 1.
    first: u64,
    /// bitcoind's tip.
    tip: u64,
}

impl Chain {
    fn start(v2: bool) -> Chain {
        // Each starts a bitcoind, a devnet and followers: one at a time on a small host.
        let _one = common::one_at_a_time();
        let node = p2p_node(v2);
        let dir = tempfile::tempdir().unwrap();
        let devnet = busy_devnet(&node, &dir.path().join("devnet"));
        let (first, tip) = (first_slot(&devnet), node.block_count());
        Chain {
            _one,
            node,
            dir,
            devnet,
            first,
            tip,
        }
    }

    /// A follower of the devnet on bitcoind's P2P port, named `name`.
    fn follower(&self, name: &str, transport: &str) -> Ledgerd {
        follower(
            &self.devnet,
            &self.node,
            &self.dir.path().join(name),
            transport,
        )
    }

    /// Waits until `n` has scanned up to bitcoind's tip and holds the
    /// devnet's 66 blocks, then checks it answers as the devnet does.
    fn follows(&self, n: &Ledgerd) {
        wait_until(Duration::from_secs(90), "the follower to catch up", || {
            caught_up(n, self.tip, 66)
        });
        assert_eq!(
            view(n, self.first, &self.node),
            view(&self.devnet, self.first, &self.node)
        );
    }
}

/// `/health`'s one peer.
fn the_peer(n: &Ledgerd) -> Value {
    health(n).1["bitcoinPeers"][0].clone()
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn a_v2_bitcoind_sees_the_default_follower_as_v2_and_a_v1_one_as_v1_and_both_follow() {
    let c = Chain::start(true);
    let plain = c.follower("v1", "v1");
    wait_until_value(
        Duration::from_secs(30),
        "bitcoind to see the v1 follower",
        || ledgerd_transports(&c.node),
        |t| !t.is_empty(),
    );
    assert_eq!(ledgerd_transports(&c.node), ["v1"]);
    let encrypted = c.follower("v2", "");
    c.follows(&encrypted);
    c.follows(&plain);
    assert_eq!(ledgerd_transports(&c.node), ["v1", "v2"]);
    assert_eq!(the_peer(&encrypted)["transport"], "v2");
    assert_eq!(the_peer(&plain)["transport"], "v1");
    let m = metrics(&encrypted);
    let by = |t: &str| {
        metric(
            &m,
            &format!("ledgerd_bitcoin_peers_connected_by_transport{{transport=\"{t}\"}}"),
        )
    };
    assert_eq!((by("v1"), by("v2")), (0, 1), "{m}");
    assert_eq!(metric(&m, "ledgerd_bitcoin_peer_v1_fallbacks_total"), 0);
    let connected = format!("bitcoin peer {} connected (v2, ", c.node.p2p_addr());
    let log = encrypted.stderr();
    assert!(log.contains(&connected), "{log}");
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn against_a_v1_only_bitcoind_auto_falls_back_to_v1_and_follows_and_v2_only_says_why() {
    let c = Chain::start(false);
    let strict = c.follower("v2", "v2");
    let auto = c.follower("auto", "");
    c.follows(&auto);
    assert_eq!(the_peer(&auto)["transport"], "v1");
    let m = metrics(&auto);
    assert!(
        metric(&m, "ledgerd_bitcoin_peer_v1_fallbacks_total") >= 1,
        "{m}"
    );
    assert!(
        auto.stderr().contains("connected again over v1"),
        "{}",
        auto.stderr()
    );

    let why = wait_until_value(
        Duration::from_secs(30),
        "the v2-only follower to say why it has no peer",
        || the_peer(&strict),
        |p| p["problem"].as_str().is_some(),
    );
    assert_eq!(why["connected"], false, "{why}");
    assert!(why.get("transport").is_none(), "{why}");
    let problem = why["problem"].as_str().unwrap();
    for words in [
        "does not speak BIP324's v2 transport",
        "-v2transport=0",
        "give auto",
    ] {
        assert!(problem.contains(words), "{problem}");
    }
    assert!(
        strict
            .stderr()
            .lines()
            .any(|l| l.contains("WARN") && l.contains("does not speak BIP324")),
        "{}",
        strict.stderr()
    );
    let scanned = strict.result("ledger_getLastScannedL1Height", "[]");
    assert!(scanned.as_u64().unwrap_or(0) < c.first, "{scanned}");
    // bitcoind saw only the auto follower, over v1.
    assert_eq!(ledgerd_transports(&c.node), ["v1"]);
}

/// How a garbling peer answers ledgerd's v2 key.
#[derive(Clone, Copy)]
enum Garble {
    /// 5,000 bytes of noise: a key, then more garbage than BIP324 allows,
    /// with no terminator.
    Noise,
    /// 30 bytes of noise, then it hangs up (half a key).
    HangUpMidKey,
}

/// A peer on 127.0.0.1 that answers every connection as `how` says; its address.
fn garbling_peer(how: Garble) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for (n, mut s) in listener.incoming().map_while(Result::ok).enumerate() {
            // Wait for ledgerd's key, then answer it with noise.
            if s.read_exact(&mut [0u8; 64]).is_err() {
                continue;
            }
            let len = match how {
                Garble::Noise => 5_000,
                Garble::HangUpMidKey => 30,
            };
            let _ = s.write_all(&noise(len, 0x2545_f491_4f6c_dd1d + n as u64));
            // Noise: read until ledgerd hangs up; half a key: hang up.
            let mut sink = [0u8; 4096];
            while matches!(how, Garble::Noise) && matches!(s.read(&mut sink), Ok(n) if n > 0) {}
        }
    });
    addr.to_string()
}

#[test]
fn peers_that_garble_the_v2_handshake_are_refused_with_the_reason_without_a_hang_or_a_v1_retry() {
    let noise = garbling_peer(Garble::Noise);
    let hang_up = garbling_peer(Garble::HangUpMidKey);
    // A devnet upstream (its DA chain simulated): the follower looks for
    // the Bitcoin blocks its L2 blocks name, and so for its peers.
    let dir = tempfile::tempdir().unwrap();
    let up = Ledgerd::builder()
        .data_dir(&dir.path().join("devnet"))
        .dev(10, 200)
        .start();
    let n = Ledgerd::builder()
        .data_dir(&dir.path().join("follower"))
        .args(&[
            "--upstream",
            &up.url,
            "--bitcoin-peer",
            &noise,
            "--bitcoin-peer",
            &hang_up,
        ])
        .log("info")
        .start();
    let peers = wait_until_value(
        Duration::from_secs(30),
        "both garbling peers to be refused with a reason",
        || health(&n).1["bitcoinPeers"].clone(),
        |p| (0..2).all(|i| p[i]["problem"].as_str().is_some()),
    );
    let problem = |i: usize| peers[i]["problem"].as_str().unwrap().to_string();
    assert!(
        problem(0).contains("is not BIP324")
            && problem(0).contains("garbage without the garbage terminator"),
        "{peers}"
    );
    assert!(
        problem(1).contains("is not BIP324") && problem(1).contains("not tried over v1"),
        "{peers}"
    );
    // It answered: no v1 retry, and the node is alive and serving.
    let m = metrics(&n);
    assert_eq!(metric(&m, "ledgerd_bitcoin_peer_v1_fallbacks_total"), 0);
    assert_eq!(
        metric(
            &m,
            "ledgerd_bitcoin_peers_connected_by_transport{transport=\"v1\"}"
        ),
        0
    );
    let log = n.stderr();
    assert!(!log.contains("panicked"), "{log}");
    assert!(
        log.contains(&format!("bitcoin peer {noise}: its answer")),
        "{log}"
    );
}
