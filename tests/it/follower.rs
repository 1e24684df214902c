//! The follower (`ledgerd --upstream URL`) against real upstream ledgerd
//! processes on 127.0.0.1: it converges to the upstream's chain and DA view,
//! survives `kill -9` mid-catch-up, rides out an upstream that goes away and
//! comes back, and stores nothing that a tampering proxy altered.
//!
//! Every node here is the real binary on a real LMDB in a temp dir; the only
//! thing of the tests' own is a small HTTP proxy (`common::proxy`) put
//! between a follower and its upstream (to slow answers down, or to alter
//! them).

use crate::common;

use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use common::proxy::{Proxy, Tamper};
use common::rpc::{assert_same_view, batch_by, call_by};
use common::rpc::{last_scanned, wait_synced_with};
use common::{head, sync_status, Ledgerd};
use serde_json::{json, Value};

// ---------------------------------------------------------------- processes

/// A devnet upstream with `prefill` blocks and no new ones, on `dir`;
/// killed (SIGKILL) when dropped.
fn devnet_upstream(dir: &Path, prefill: u64) -> Ledgerd {
    devnet_upstream_at(dir, prefill, "127.0.0.1:0", &[])
}

/// [`devnet_upstream`] listening on `bind`, with `extra` flags.
fn devnet_upstream_at(dir: &Path, prefill: u64, bind: &str, extra: &[&str]) -> Ledgerd {
    Ledgerd::builder()
        .dev(prefill, 0)
        .data_dir(dir)
        .bind(bind)
        .args(extra)
        .start()
}

/// A follower of `upstream` on `dir`; killed (SIGKILL) when dropped.
fn follower_of(dir: &Path, upstream: &str, chunk: u64) -> Ledgerd {
    let args = ["--upstream", upstream, "--sync-chunk", &chunk.to_string()].map(String::from);
    Ledgerd::builder().data_dir(dir).args(&args).start()
}

/// [`follower_of`] asking one range at a time (`--sync-concurrency 1`), so
/// that a slow path to the upstream makes a slow catch-up.
fn one_at_a_time_follower_of(dir: &Path, upstream: &str, chunk: u64) -> Ledgerd {
    let chunk = chunk.to_string();
    let args = [
        "--upstream",
        upstream,
        "--sync-chunk",
        &chunk,
        "--sync-concurrency",
        "1",
    ]
    .map(String::from);
    Ledgerd::builder().data_dir(dir).args(&args).start()
}

/// A temp dir (removed when dropped) and, in it, the data dirs of an
/// upstream and of its follower.
fn temp_dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (up, f) = (dir.path().join("up"), dir.path().join("f"));
    (dir, up, f)
}

// ---------------------------------------------------------------- JSON-RPC

/// The client of every call here (as the proxy's): 2 s to connect, 20 s
/// in all, as a large view's batches take a while on a debug build.
fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(2))
        .timeout(Duration::from_secs(20))
        .build()
}

/// The `result` of `method` with `params` on `url`, failing on an error answer.
fn rpc(url: &str, method: &str, params: Value) -> Value {
    call_by(&agent(), url, method, &params.to_string())
}

/// What these tests read of a chain: (slot, commitments on it, proof on
/// it) for every DA slot from the first on.
type View = common::rpc::View<(u64, Value, Value)>;

/// The DA slot of L2 height 1 on the devnet.
const FIRST_SLOT: u64 = 1000;

fn view(url: &str) -> View {
    let head = head(url);
    let mut blocks = Vec::new();
    let mut from = 1;
    while from <= head {
        // 25: under any --max-range a test gives an upstream.
        let to = head.min(from + 24);
        let part = rpc(url, "ledger_getSoftConfirmationRange", json!([from, to]));
        blocks.extend(part.as_array().expect("a list").iter().cloned());
        from = to + 1;
    }
    let calls: Vec<_> = (1..=head)
        .map(|h| ("ledger_getSoftConfirmationStatus", json!([h])))
        .collect();
    let statuses = batch_by(&agent(), url, &calls);
    let last_scanned = last_scanned(url);
    let mut calls = Vec::new();
    for n in FIRST_SLOT..=last_scanned {
        calls.push(("ledger_getSequencerCommitmentsOnSlotByNumber", json!([n])));
        calls.push(("ledger_getVerifiedBatchProofsBySlotHeight", json!([n])));
    }
    let answers = batch_by(&agent(), url, &calls);
    let slots = (FIRST_SLOT..=last_scanned)
        .zip(answers.chunks(2))
        .map(|(n, a)| (n, a[0].clone(), a[1].clone()))
        .collect();
    View {
        head,
        genesis: rpc(url, "ledger_getL2GenesisStateRoot", json!([])),
        blocks,
        statuses,
        last_scanned,
        slots,
        last_proof: rpc(url, "ledger_getLastVerifiedBatchProof", json!([])),
    }
}

/// Checks the chain a node serves from the outside: every height once, each
/// prevHash links to the hash below, statuses fall with height, and every
/// hash finds its own height.
fn assert_chain_whole(url: &str, v: &View) {
    let mut prev = "0".repeat(64);
    for (i, b) in v.blocks.iter().enumerate() {
        let h = i as u64 + 1;
        assert_eq!(b["l2Height"], json!(h), "height {h} is where it belongs");
        assert_eq!(
            b["prevHash"],
            json!(prev),
            "prevHash of {h} links to {}",
            h - 1
        );
        prev = b["hash"].as_str().expect("hash").to_string();
    }
    let rank = |s: &Value| match s.as_str() {
        Some("Trusted") => 0,
        Some("Finalized") => 1,
        Some("Proven") => 2,
        other => panic!("unknown status {other:?}"),
    };
    for (i, w) in v.statuses.windows(2).enumerate() {
        assert!(
            rank(&w[0]) >= rank(&w[1]),
            "status of {} ({}) is below that of {} ({})",
            i + 1,
            w[0],
            i + 2,
            w[1]
        );
    }
    let calls: Vec<_> = v
        .blocks
        .iter()
        .step_by(7)
        .map(|b| ("ledger_getSoftConfirmationByHash", json!([b["hash"]])))
        .collect();
    for (answer, b) in batch_by(&agent(), url, &calls)
        .iter()
        .zip(v.blocks.iter().step_by(7))
    {
        assert_eq!(answer["l2Height"], b["l2Height"], "hash index");
    }
}

// ---------------------------------------------------------------- the tests

#[test]
fn a_follower_converges_to_its_upstream_hashes_statuses_commitments_and_proofs() {
    let (_dir, up_dir, f_dir) = temp_dirs();
    let upstream = devnet_upstream(&up_dir, 1500);
    let follower = follower_of(&f_dir, &upstream.url, 100);
    wait_synced_with(&follower, &upstream);
    let (f, u) = (view(&follower.url), view(&upstream.url));
    assert_eq!(u.head, 1500);
    assert!(u.statuses.contains(&json!("Proven")) && u.statuses.contains(&json!("Trusted")));
    assert!(u.slots.iter().any(|s| !s.1.is_null()) && u.slots.iter().any(|s| !s.2.is_null()));
    assert_same_view(&f, &u);
    assert_chain_whole(&follower.url, &f);
    // The slot-hash index answers on the follower as on the upstream.
    let slot = u
        .slots
        .iter()
        .find(|s| !s.2.is_null())
        .expect("a proof slot");
    let hash = &slot.2["proof"]["proofOutput"]["daSlotHash"];
    let by_hash = |url: &str| {
        rpc(
            url,
            "ledger_getSequencerCommitmentsOnSlotByHash",
            json!([hash]),
        )
    };
    assert_eq!(by_hash(&follower.url), by_hash(&upstream.url));
}

#[test]
fn a_follower_killed_mid_catch_up_resumes_without_gap_or_duplicate() {
    let (_dir, up_dir, f_dir) = temp_dirs();
    let upstream = devnet_upstream(&up_dir, 2000);
    // A slow path to the upstream, so a kill lands in the middle of catch-up.
    let slow = Proxy::start(&upstream.url);
    slow.set_delay(Duration::from_millis(15));
    let mut kills = Vec::new();
    for (round, stop_at) in [150u64, 700, 1400].into_iter().enumerate() {
        let follower = one_at_a_time_follower_of(&f_dir, &slow.url, 25);
        let before = head(&follower.url);
        assert!(before <= stop_at, "round {round}: resumed at {before}");
        follower.wait_for(
            Duration::from_secs(60),
            &format!("follower passes {stop_at}"),
            |f| head(&f.url) >= stop_at,
        );
        kills.push(head(&follower.url));
        follower.kill();
    }
    assert!(
        kills.iter().all(|&h| h < 2000),
        "every kill hit mid-catch-up: {kills:?}"
    );
    // One more kill while the DA slots are being scanned, if it lands there.
    let follower = one_at_a_time_follower_of(&f_dir, &slow.url, 25);
    follower.wait_for(Duration::from_secs(60), "L2 caught up", |f| {
        head(&f.url) == 2000
    });
    let scanned_at_kill = last_scanned(&follower.url);
    follower.kill();
    let follower = follower_of(&f_dir, &upstream.url, 100);
    assert!(last_scanned(&follower.url) >= scanned_at_kill);
    wait_synced_with(&follower, &upstream);
    let (f, u) = (view(&follower.url), view(&upstream.url));
    assert_chain_whole(&follower.url, &f);
    assert_same_view(&f, &u);
}

#[test]
fn a_follower_keeps_serving_while_its_upstream_is_down_and_resumes_when_it_returns() {
    let (_dir, up_dir, f_dir) = temp_dirs();
    let upstream = devnet_upstream(&up_dir, 400);
    let port = upstream.port();
    let follower = follower_of(&f_dir, &upstream.url, 100);
    wait_synced_with(&follower, &upstream);
    let block_400 = rpc(
        &upstream.url,
        "ledger_getSoftConfirmationByNumber",
        json!([400]),
    );
    let synced = sync_status(&follower.url);
    upstream.kill();

    // Down for a while: several retries.
    let down = Instant::now();
    while down.elapsed() < Duration::from_millis(1500) {
        assert_eq!(head(&follower.url), 400);
        assert_eq!(
            rpc(
                &follower.url,
                "ledger_getSoftConfirmationByNumber",
                json!([400])
            ),
            block_400
        );
        // It claims no head beyond what it has seen.
        assert_eq!(sync_status(&follower.url), synced);
        thread::sleep(Duration::from_millis(50));
    }
    let log = follower.stderr();
    assert_eq!(
        log.matches("cannot be reached").count(),
        1,
        "an unreachable upstream is logged once, not once per try:\n{log}"
    );

    // Back, on the same address, with the chain grown to 700.
    let upstream = devnet_upstream_at(&up_dir, 700, &format!("127.0.0.1:{port}"), &[]);
    assert_eq!(head(&upstream.url), 700);
    wait_synced_with(&follower, &upstream);
    let (f, u) = (view(&follower.url), view(&upstream.url));
    assert_same_view(&f, &u);
    assert_chain_whole(&follower.url, &f);
    assert!(follower.stderr().contains("sync resumed"));
}

#[test]
fn a_block_altered_in_transit_is_never_stored_and_the_follower_converges_once_it_is_not() {
    let (_dir, up_dir, f_dir) = temp_dirs();
    let upstream = devnet_upstream(&up_dir, 600);
    let proxy = Proxy::start(&upstream.url);
    proxy.set(Tamper::BlockAt(250));
    let follower = follower_of(&f_dir, &proxy.url, 100);
    // Refused by its hash; which block, the stored head (249) says.
    follower.wait_for_refusal(Duration::from_secs(30), "hash");
    thread::sleep(Duration::from_millis(300));
    assert!(proxy.altered() >= 1);
    // The verified prefix is stored, nothing at or above the altered block.
    assert_eq!(head(&follower.url), 249);
    assert_eq!(
        rpc(
            &follower.url,
            "ledger_getSoftConfirmationByNumber",
            json!([250])
        ),
        Value::Null
    );
    let f = view(&follower.url);
    let u = view(&upstream.url);
    assert_eq!(f.blocks[..], u.blocks[..249]);
    // It does not claim to be synced past what it stored.
    assert_eq!(
        sync_status(&follower.url)["l2Status"],
        json!({"Syncing":{"headBlockNumber":600,"syncedBlockNumber":249}})
    );

    proxy.set(Tamper::Nothing);
    wait_synced_with(&follower, &upstream);
    let f = view(&follower.url);
    assert_same_view(&f, &u);
    assert_chain_whole(&follower.url, &f);
}

#[test]
fn a_commitment_with_an_altered_merkle_root_finalizes_nothing_until_it_is_answered_right() {
    let (_dir, up_dir, f_dir) = temp_dirs();
    let upstream = devnet_upstream(&up_dir, 600);
    let proxy = Proxy::start(&upstream.url);
    proxy.set(Tamper::MerkleRoots);
    let follower = follower_of(&f_dir, &proxy.url, 100);
    follower.wait_for_refusal(Duration::from_secs(30), "merkle_root");
    thread::sleep(Duration::from_millis(300));
    assert!(proxy.altered() >= 1);
    let u = view(&upstream.url);
    let f = view(&follower.url);
    // The blocks are untouched and stored; no status was raised, no
    // commitment or proof stored, and the scan stopped before the slot.
    assert_eq!(f.blocks, u.blocks);
    assert!(
        f.statuses.iter().all(|s| *s == json!("Trusted")),
        "{:?}",
        f.statuses
    );
    let first_commitment_slot = u.slots.iter().find(|s| !s.1.is_null()).expect("one").0;
    assert!(f.last_scanned < first_commitment_slot);
    assert!(f.slots.iter().all(|s| s.1.is_null() && s.2.is_null()));
    assert_eq!(f.last_proof, Value::Null);

    proxy.set(Tamper::Nothing);
    wait_synced_with(&follower, &upstream);
    let f = view(&follower.url);
    assert_same_view(&f, &u);
    assert!(f.statuses.contains(&json!("Finalized")) && f.statuses.contains(&json!("Proven")));
}

#[test]
fn a_follower_answered_garbage_keeps_serving_logs_it_once_and_recovers() {
    let (_dir, up_dir, f_dir) = temp_dirs();
    let upstream = devnet_upstream(&up_dir, 300);
    let proxy = Proxy::start(&upstream.url);
    let follower = follower_of(&f_dir, &proxy.url, 100);
    wait_synced_with(&follower, &upstream);
    let before = view(&follower.url);
    proxy.set(Tamper::Garbage);
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(1200) {
        assert_eq!(head(&follower.url), 300);
        thread::sleep(Duration::from_millis(50));
    }
    assert!(proxy.altered() >= 3, "several retries");
    let log = follower.stderr();
    assert_eq!(
        log.matches("not JSON-RPC").count(),
        1,
        "garbage is logged once, not once per try:\n{log}"
    );
    assert_eq!(view(&follower.url), before);
    proxy.set(Tamper::Nothing);
    // While the garbage lasted the source was unreachable; it is again.
    assert_eq!(follower.metric("ledgerd_sync_source_reachable", &[]), 0);
    follower.wait_for_metric(
        Duration::from_secs(10),
        "ledgerd_sync_source_reachable",
        &[],
        1,
    );
    assert_same_view(&view(&follower.url), &view(&upstream.url));
}

#[test]
fn a_follower_shrinks_its_chunk_to_the_upstreams_range_limit() {
    let (_dir, up_dir, f_dir) = temp_dirs();
    let upstream = devnet_upstream_at(&up_dir, 400, "127.0.0.1:0", &["--max-range", "30"]);
    let follower = follower_of(&f_dir, &upstream.url, 100);
    wait_synced_with(&follower, &upstream);
    assert!(
        follower
            .stderr()
            .contains("upstream serves at most 30 blocks per range"),
        "{}",
        follower.stderr()
    );
    assert_same_view(&view(&follower.url), &view(&upstream.url));
}

/// How long the slow upstream of these tests takes per answer.
const ANSWER: Duration = Duration::from_secs(1);

/// What storing a chunk may add to an answer's time, on a loaded machine.
const STORE: Duration = Duration::from_secs(2);

/// The longest a follower's head may stay put behind an upstream that
/// answers one request per [`ANSWER`], in the order requests reach it.
///
/// When the follower's pace lets one more request be in flight, it sends
/// two at once, on two connections, and they can reach the upstream in
/// either order: the lower range then waits for the higher one, and a head
/// look of the watcher may be queued between them. Three answers, and the
/// storing.
const MOST_STILL: Duration = Duration::from_secs(3 * ANSWER.as_secs() + STORE.as_secs());

/// Watches a follower behind a slow upstream for `span`: its head is read
/// every 100 ms and must rise at least every [`MOST_STILL`], and its L2
/// status must say Syncing towards `upstream_head` with no more than it
/// serves. Returns the last head read.
fn watch_rising(follower: &Ledgerd, upstream_head: u64, span: Duration) -> u64 {
    let start = Instant::now();
    let mut last = head(&follower.url);
    let mut rose_at = Instant::now();
    let mut rises = 0;
    while start.elapsed() < span {
        thread::sleep(Duration::from_millis(100));
        let status = sync_status(&follower.url)["l2Status"].clone();
        let now = head(&follower.url);
        let syncing = &status["Syncing"];
        assert_eq!(
            syncing["headBlockNumber"],
            json!(upstream_head),
            "far behind, L2 reports Syncing with the upstream's head: {status}"
        );
        let synced = syncing["syncedBlockNumber"].as_u64().expect("a height");
        assert!(synced <= now, "status says {synced}, head is {now}");
        assert!(now >= last, "the head went back from {last} to {now}");
        if now > last {
            last = now;
            rose_at = Instant::now();
            rises += 1;
        }
        assert!(
            rose_at.elapsed() <= MOST_STILL,
            "the head stayed at {last} for {:.1?} (after {rises} rises in {:.1?})",
            rose_at.elapsed(),
            start.elapsed()
        );
    }
    assert!(last < upstream_head, "still far behind: {last}");
    last
}

#[test]
fn behind_an_upstream_answering_one_request_a_second_the_head_moves_within_seconds_and_survives_kill_9(
) {
    let (_dir, up_dir, f_dir) = temp_dirs();
    let upstream = devnet_upstream(&up_dir, 5000);
    // One request at a time, each answered 1 s after the upstream gave it:
    // one answer per second, whatever the follower keeps in flight.
    let slow = Proxy::start(&upstream.url);
    slow.set_delay(ANSWER);
    slow.one_at_a_time(true);
    // Default --sync-chunk and --sync-concurrency.
    let args = ["--upstream", &slow.url].map(String::from);
    let started = Instant::now();
    let follower = Ledgerd::builder().data_dir(&f_dir).args(&args).start();
    // Before the first range come the head and the chain's identity, and
    // the watcher's first head look may be queued ahead of it: 4 answers.
    follower.wait_for(
        (4 * ANSWER + STORE).saturating_sub(started.elapsed()),
        "the first blocks are stored within 6 s of start",
        |f| head(&f.url) > 0,
    );
    let first = watch_rising(&follower, 5000, Duration::from_secs(12));
    assert!(first >= 500, "12 s at one answer a second: {first}");
    let before_kill = head(&follower.url);
    follower.kill();

    // kill -9 mid-sync: what was stored is kept, and it goes on from there.
    let follower = Ledgerd::builder().data_dir(&f_dir).args(&args).start();
    let resumed = head(&follower.url);
    assert!(
        resumed >= before_kill,
        "stored {before_kill} before kill -9, serves {resumed} after"
    );
    // The killed process's last requests (two ranges and a head look at
    // most) are still queued at the proxy, each taking its second: the
    // restarted one waits behind them, then as at the start.
    follower.wait_for(
        7 * ANSWER + STORE,
        "the first blocks after the restart",
        |f| head(&f.url) > resumed,
    );
    watch_rising(&follower, 5000, Duration::from_secs(6));

    // The upstream speeds up: the follower converges to the same view.
    slow.one_at_a_time(false);
    slow.set_delay(Duration::ZERO);
    wait_synced_with(&follower, &upstream);
    let (f, u) = (view(&follower.url), view(&upstream.url));
    assert_chain_whole(&follower.url, &f);
    assert_same_view(&f, &u);
}
