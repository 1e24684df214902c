//! One writer per data dir: a second process that would write a ledger
//! another holds exits at once, naming the data dir and the holder; readers
//! are unaffected; the kernel frees the lock on any exit, `kill -9`
//! included; and `--ephemeral` dirs a `kill -9` left behind are removed at
//! the next start.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::process::BIN;
use common::{run, wait_until, Ledgerd};

/// Runs `ledgerd ARGS` expecting it to exit by itself within `limit`;
/// returns its exit code, stderr, and how long it ran.
fn exits_within(args: &[&str], env: &[(&str, &Path)], limit: Duration) -> (Option<i32>, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ledgerd");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!(
                "ledgerd {args:?} was still running after {limit:?}; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.stdout.is_empty(),
        "a refused writer printed on stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_second_writer_exits_within_a_second_naming_the_data_dir_and_the_holder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let first = Ledgerd::builder().dev(20, 50).data_dir(&dir).start();
    let d = dir.to_str().unwrap();
    let (code, err) = exits_within(
        &["--dev", "--data-dir", d, "--bind", "127.0.0.1:0"],
        &[],
        Duration::from_secs(1),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "the data dir {d} is in use: process {}",
            first.pid()
        )),
        "{err}"
    );
    assert!(err.contains("stop that process first"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line on stderr: {err}");

    // `import` takes the same lock (the one code path of Ledger::open).
    let out = run(&["import", "--data-dir", d, "-"], Some(b""));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("is in use: process {}", first.pid())),
        "{err}"
    );

    // The first writer goes on writing, and says so; a replica reads beside it.
    let before = first.head();
    wait_until(
        Duration::from_secs(5),
        "the first writer's head to move",
        || first.head() >= before + 5,
    );
    let (status, health) = first.health();
    assert_eq!(status, 200, "{health}");
    let replica = Ledgerd::builder().readonly().data_dir(&dir).start();
    assert!(replica.head() >= before);
    let (status, health) = replica.health();
    assert_eq!(status, 200, "{health}");
}

#[test]
fn the_writer_lock_is_free_again_once_its_holder_is_killed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let first = Ledgerd::builder().dev(30, 0).data_dir(&dir).start();
    first.kill();
    // No clean stop: the kernel released the lock with the process.
    let again = Ledgerd::builder().dev(30, 0).data_dir(&dir).start();
    assert_eq!(again.head(), 30);
    let (status, err) = again.stop();
    assert!(status.success(), "{err}");
    // A stopped node's lock file stays, free: the next writer takes it.
    assert!(dir.join("ledgerd.lock").exists());
    let out = run(
        &[
            "rollback",
            "--data-dir",
            dir.to_str().unwrap(),
            "--to-l2",
            "10",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn ephemeral_dirs_left_by_a_killed_node_are_removed_at_the_next_start() {
    let tmp = tempfile::tempdir().unwrap();
    let eph = |tmp: &Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("ledgerd-ephemeral-"))
            .collect();
        names.sort();
        names
    };
    let start = || {
        Ledgerd::builder()
            .dev(5, 0)
            .data_dir_from_args()
            .arg("--ephemeral")
            .env("TMPDIR", tmp.path().to_str().unwrap())
            .start()
    };
    let first = start();
    let left = eph(tmp.path());
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        left[0].starts_with(&format!("ledgerd-ephemeral-{}-", first.pid())),
        "{left:?}"
    );
    first.kill();
    assert_eq!(eph(tmp.path()), left, "kill -9 leaves the dir behind");

    // A live node's dir is kept by the next start; the dead one's goes.
    let second = start();
    let third = start();
    let now = eph(tmp.path());
    assert_eq!(now.len(), 2, "{now:?}");
    assert!(!now.contains(&left[0]), "{now:?}");
    for node in [&second, &third] {
        let prefix = format!("ledgerd-ephemeral-{}-", node.pid());
        assert!(now.iter().any(|n| n.starts_with(&prefix)), "{now:?}");
    }
    let removed = format!(
        "removed the ephemeral data dir {}",
        tmp.path().join(&left[0]).display()
    );
    assert!(second.stderr().contains(&removed), "{}", second.stderr());
    let (status, err) = second.stop();
    assert!(status.success(), "{err}");
    let (status, err) = third.stop();
    assert!(status.success(), "{err}");
    assert_eq!(eph(tmp.path()), Vec::<String>::new());
}
