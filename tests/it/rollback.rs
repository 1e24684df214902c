//! `ledgerd rollback` on real data dirs, run as the real binary: a ledger
//! taken back to height H answers every method as a ledger that only ever
//! reached H (a devnet's and a follower's), a running node's data dir is
//! refused, a dry run changes nothing, `kill -9` at any moment of a long
//! rollback leaves the ledger as it was before or as it is after, and a
//! node started on a rolled-back ledger goes on from there.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::rpc::every_answer;
use common::{devnet_ledger, head, run, sync_status, Ledgerd};
use ledgerd::ledger::walk::LedgerWalk;
use ledgerd::ledger::{Ledger, LedgerRead, OpenOptions};
use serde_json::json;
use sha2::{Digest, Sha256};

fn rollback(dir: &Path, args: &[&str]) -> Output {
    let mut all = vec!["rollback", "--data-dir", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    run(&all, None)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `ledgerd rollback` and fails with its stderr unless it succeeds;
/// returns its stdout.
fn rolled_back(dir: &Path, args: &[&str]) -> String {
    let out = rollback(dir, args);
    assert!(
        out.status.success(),
        "rollback {args:?} failed: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Every answer about a stopped node's ledger, through a read-only server.
fn answers_of(dir: &Path) -> Vec<(String, String)> {
    let server = Ledgerd::builder().readonly().data_dir(dir).start();
    every_answer(&server.url)
}

/// Compares two answer lists call by call (the first difference names the call).
fn assert_same_answers(got: &[(String, String)], want: &[(String, String)], what: &str) {
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g, w, "{what}");
    }
    assert_eq!(got.len(), want.len(), "{what}: number of calls");
}

/// A devnet ledger with heights 1..=`prefill` in `dir`, stopped once its
/// sync thread has stored the genesis root (with no blocks to make, the
/// first pass after start does; a node stopped before it has none).
fn devnet_made(dir: &Path, prefill: u64) {
    let mut node = Ledgerd::builder().dev(prefill, 0).data_dir(dir).start();
    node.wait_for(Duration::from_secs(10), "the genesis root", |n| {
        !n.result("ledger_getL2GenesisStateRoot", "[]").is_null()
    });
    assert_eq!(node.stop_timed().0, Some(0));
}

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

#[test]
fn a_devnet_ledger_rolled_back_to_h_answers_as_one_that_only_reached_h() {
    let top = temp();
    let full = top.path().join("full");
    devnet_ledger(&full, 301);
    // Heights inside a commitment's range, on a slot boundary, every status.
    for h in [233, 151, 100, 17, 1, 0] {
        let out = rolled_back(&full, &["--to-l2", &h.to_string()]);
        assert!(out.contains(&format!("-> {h},")), "{out}");
        let only = top.path().join(format!("only-{h}"));
        devnet_made(&only, h);
        assert_same_answers(
            &answers_of(&full),
            &answers_of(&only),
            &format!("rolled back to {h} / made to {h}"),
        );
    }
    // The devnet goes on from the rolled-back ledger as from its own.
    devnet_ledger(&full, 301);
    let straight = top.path().join("straight");
    devnet_ledger(&straight, 301);
    assert_same_answers(
        &answers_of(&full),
        &answers_of(&straight),
        "rolled back to 0, made again to 301 / made to 301",
    );
}

#[test]
fn to_l1_keeps_the_slots_up_to_s_and_the_blocks_that_point_at_them() {
    let top = temp();
    let full = top.path().join("full");
    devnet_ledger(&full, 301);
    let slot = {
        let server = Ledgerd::builder().readonly().data_dir(&full).start();
        server.result("ledger_getSoftConfirmationByNumber", "[180]")["daSlotHeight"]
            .as_u64()
            .unwrap()
    };
    let out = rolled_back(&full, &["--to-l1", &slot.to_string()]);
    let server = Ledgerd::builder().readonly().data_dir(&full).start();
    let h = server.head();
    assert!(
        h >= 180,
        "height 180 points at slot {slot} and stays: head {h}"
    );
    let next = server.result("ledger_getSoftConfirmationByNumber", &format!("[{}]", h));
    assert_eq!(next["daSlotHeight"].as_u64(), Some(slot), "{out}");
    assert_eq!(
        server
            .result("ledger_getLastScannedL1Height", "[]")
            .as_u64(),
        Some(slot)
    );
    drop(server);
    let only = top.path().join("only");
    devnet_made(&only, h);
    assert_same_answers(
        &answers_of(&full),
        &answers_of(&only),
        &format!("rolled back to slot {slot} / made to height {h}"),
    );
}

/// Waits until `follower` holds what `upstream` has, its sync status says so.
fn wait_converged(follower: &Ledgerd, upstream: &Ledgerd) {
    let h = head(&upstream.url);
    let l1 = upstream
        .result("ledger_getLastScannedL1Height", "[]")
        .as_u64()
        .unwrap();
    let synced = json!({"l1Status":{"Synced":l1},"l2Status":{"Synced":h}});
    follower.wait_for(
        Duration::from_secs(60),
        &format!("follower reaches head {h} and slot {l1}"),
        |f| sync_status(&f.url) == synced,
    );
}

fn follower(dir: &Path, upstream: &Ledgerd) -> Ledgerd {
    let node = Ledgerd::builder()
        .data_dir(dir)
        .args(&["--upstream", &upstream.url])
        .start();
    wait_converged(&node, upstream);
    node
}

#[test]
fn a_followers_ledger_rolled_back_to_h_answers_as_a_follower_that_only_reached_h() {
    let top = temp();
    let (up_301, up_151) = (top.path().join("up301"), top.path().join("up151"));
    let long = Ledgerd::builder().dev(301, 0).data_dir(&up_301).start();
    let short = Ledgerd::builder().dev(151, 0).data_dir(&up_151).start();
    let (f1, f2) = (top.path().join("f1"), top.path().join("f2"));
    follower(&f1, &long).stop();
    follower(&f2, &short).stop();
    let before = answers_of(&f1);
    let out = rolled_back(&f1, &["--to-l2", "151"]);
    assert!(out.contains("L2 head 301 -> 151"), "{out}");
    assert_same_answers(
        &answers_of(&f1),
        &answers_of(&f2),
        "follower rolled back to 151 / follower of a chain of 151",
    );
    // Started again, it follows the upstream from there to where it was.
    follower(&f1, &long).stop();
    assert_same_answers(&answers_of(&f1), &before, "resynced / before the rollback");
}

#[test]
fn a_running_nodes_data_dir_is_refused_and_left_alone() {
    let top = temp();
    let dir = top.path().join("data");
    let node = Ledgerd::builder().dev(40, 0).data_dir(&dir).start();
    let out = rollback(&dir, &["--to-l2", "10"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("process {} has the ledger in", node.pid())),
        "{err}"
    );
    assert!(err.contains("stop it first"), "{err}");
    assert_eq!(node.head(), 40);
    node.stop();
    // Stopped, the same data dir is taken back.
    rolled_back(&dir, &["--to-l2", "10"]);
    let server = Ledgerd::builder().readonly().data_dir(&dir).start();
    assert_eq!(server.head(), 10);
}

#[test]
fn a_dry_run_prints_what_it_would_remove_and_changes_nothing() {
    let top = temp();
    let dir = top.path().join("data");
    devnet_ledger(&dir, 120);
    let before = answers_of(&dir);
    let out = rolled_back(&dir, &["--to-l2", "50", "--dry-run"]);
    assert!(out.contains("dry run, nothing written"), "{out}");
    assert!(
        out.contains("would remove: sc_by_hash_prefix 70, soft_confirmations 70, status 70"),
        "{out}"
    );
    assert!(out.contains("statuses of heights 1..=50"), "{out}");
    assert_same_answers(&answers_of(&dir), &before, "after a dry run / before");
    let out = rollback(&dir, &["--to-l2", "50", "--to-l1", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = rollback(&top.path().join("none"), &["--to-l2", "5"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no ledger there"),
        "{}",
        text(&out.stderr)
    );
}

/// A digest of everything a ledger holds that an answer can show: every
/// block hash and status, the commitments, proofs and slot hashes, the
/// heads and counts.
fn digest(dir: &Path) -> String {
    let ledger = Ledger::open(
        dir,
        &OpenOptions {
            read_only: true,
            ..OpenOptions::default()
        },
    )
    .expect("open");
    let r = ledger.reader().expect("reader");
    let head = r.head_height().unwrap();
    let mut h = Sha256::new();
    for height in 1..=head + 1 {
        h.update(r.hash_at(height).unwrap().unwrap_or_default());
        h.update([r.status(height).unwrap().map_or(9, |s| s as u8)]);
    }
    h.update(format!("{:?}", r.all_commitments().unwrap()));
    h.update(format!("{:?}", r.all_proofs().unwrap()));
    h.update(format!("{:?}", r.all_da_slots().unwrap()));
    let counts = (
        head,
        r.last_scanned_l1().unwrap(),
        r.finalized_height().unwrap(),
        r.proven_height().unwrap(),
        r.commitment_count().unwrap(),
    );
    format!("{counts:?} {}", hex::encode(h.finalize()))
}

fn copy_ledger(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    std::fs::copy(from.join("data.mdb"), to.join("data.mdb")).unwrap();
}

/// A small xorshift: the kill moments (the seed is printed).
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn kill_9_during_a_rollback_of_100000_blocks_leaves_the_ledger_before_or_after() {
    let top = temp();
    let base = top.path().join("base");
    let made = Instant::now();
    devnet_ledger(&base, 101_000);
    eprintln!("made 101,000 blocks in {:.1?}", made.elapsed());
    let before = digest(&base);

    let whole = top.path().join("whole");
    copy_ledger(&base, &whole);
    let t = Instant::now();
    let out = rolled_back(&whole, &["--to-l2", "1000"]);
    let took = t.elapsed();
    eprintln!("a whole rollback of 100,000 blocks took {took:.2?}:\n{out}");
    let after = digest(&whole);
    assert_ne!(before, after);

    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("kill moments seed {seed}");
    let span = took.as_micros() as u64 * 6 / 5 + 1;
    let (mut as_before, mut as_after) = (0, 0);
    for round in 0..8 {
        let trial: PathBuf = top.path().join(format!("trial-{round}"));
        copy_ledger(&base, &trial);
        let wait = Duration::from_micros(next(&mut seed) % span);
        let mut child = Command::new(common::process::BIN)
            .args([
                "rollback",
                "--data-dir",
                trial.to_str().unwrap(),
                "--to-l2",
                "1000",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(wait);
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        child.wait().expect("wait");
        let got = digest(&trial);
        if got == before {
            as_before += 1;
        } else {
            assert_eq!(
                got, after,
                "round {round}: killed after {wait:?}, between before and after"
            );
            as_after += 1;
        }
        std::fs::remove_dir_all(&trial).unwrap();
    }
    eprintln!("8 kills: {as_before} left the ledger as before, {as_after} as after");
}
