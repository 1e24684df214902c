//! `ledgerd serve-readonly`: a second process serving the LMDB ledger a
//! writer is filling, never writing it; SO_REUSEPORT replicas; `--config`.

use crate::common;

use std::time::Duration;

use serde_json::Value;

use common::{call, call_raw, devnet_ledger, head, run, wait_until_value, Ledgerd};

#[test]
fn a_replica_sees_the_writers_head_move_and_answers_like_it() {
    let tmp = tempfile::tempdir().unwrap();
    let _writer = Ledgerd::builder().dev(20, 50).data_dir(tmp.path()).start();
    let writer = &_writer.url;
    let replica = Ledgerd::builder().readonly().data_dir(tmp.path()).start();
    let first = head(&replica.url);
    assert!(first >= 20, "{first}");
    // Blocks every 50 ms: within 3 s the replica must see several more.
    let now = wait_until_value(
        Duration::from_secs(3),
        &format!("the replica's head to move on from {first} by 5"),
        || replica.head(),
        |now| *now >= first + 5,
    );
    // A stored block reads the same from both.
    for h in [1, first, now] {
        let q = format!("[{h}]");
        assert_eq!(
            call_raw(&replica.url, "ledger_getSoftConfirmationByNumber", &q),
            call_raw(writer, "ledger_getSoftConfirmationByNumber", &q)
        );
    }
    // The replica's sync status comes from the ledger (looked at every
    // 100 ms): Synced at a stored head, reaching `now` shortly.
    let synced_of = |status: &Value| status["l2Status"]["Synced"].as_u64().unwrap_or(0);
    let status = wait_until_value(
        Duration::from_secs(2),
        &format!("the replica to say Synced at {now} or more"),
        || replica.sync_status(),
        |status| synced_of(status) >= now,
    );
    let synced = synced_of(&status);
    assert!(synced <= head(writer), "{status}");
    assert!(
        status["l1Status"]["Synced"].as_u64().unwrap_or(0) >= 1000,
        "{status}"
    );

    // `export` also opens the ledger read-only: a snapshot taken while the
    // writer writes imports, verified, elsewhere.
    let snapshot = common::export(tmp.path(), &[]);
    let copy = tempfile::tempdir().unwrap();
    let out = run(
        &["import", "-", "--data-dir", copy.path().to_str().unwrap()],
        Some(snapshot.as_bytes()),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    let copied: u64 = said
        .rsplit("head is ")
        .next()
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(copied >= now, "{said}");
}

#[test]
fn a_replica_never_writes_the_ledger_and_stops_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    devnet_ledger(tmp.path(), 100);
    let files = ["data.mdb", "lock.mdb"];
    let read = |f: &str| std::fs::read(tmp.path().join(f)).unwrap();
    let data_before = read(files[0]);
    let modified = std::fs::metadata(tmp.path().join(files[0]))
        .unwrap()
        .modified()
        .unwrap();

    let mut replica = Ledgerd::builder().readonly().data_dir(tmp.path()).start();
    for h in 0..=101 {
        call_raw(
            &replica.url,
            "ledger_getSoftConfirmationByNumber",
            &format!("[{h}]"),
        );
        call_raw(
            &replica.url,
            "ledger_getSoftConfirmationStatus",
            &format!("[{h}]"),
        );
    }
    assert_eq!(head(&replica.url), 100);
    let (code, took) = replica.stop_timed();
    assert_eq!(code, Some(0));
    assert!(took < Duration::from_secs(1), "stopped in {took:?}");

    assert_eq!(read(files[0]), data_before, "data.mdb changed");
    let after = std::fs::metadata(tmp.path().join(files[0]))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(after, modified);
}

#[test]
fn serve_readonly_refuses_a_chain_source_and_a_missing_ledger() {
    let out = run(&["serve-readonly", "--dev"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "--dev does not apply to `ledgerd serve-readonly`; see ledgerd serve-readonly --help"
        ),
        "{err}"
    );

    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("none");
    let out = run(
        &[
            "serve-readonly",
            "--bind",
            "127.0.0.1:0",
            "--data-dir",
            missing.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot be opened"), "{err}");
    assert!(
        !missing.exists(),
        "a read-only server does not create the data dir"
    );
}

#[test]
fn replicas_with_reuse_port_share_one_port() {
    let tmp = tempfile::tempdir().unwrap();
    devnet_ledger(tmp.path(), 30);
    let dir = tmp.path().to_str().unwrap();
    let replica = |bind: &str| {
        Ledgerd::builder()
            .readonly()
            .arg("--reuse-port")
            .bind(bind)
            .data_dir(tmp.path())
            .start()
    };
    let mut one = replica("127.0.0.1:0");
    let port = one.port();
    let two = replica(&format!("127.0.0.1:{port}"));
    assert_eq!(two.port(), port);
    // Without --reuse-port the port is taken.
    let out = run(
        &[
            "serve-readonly",
            "--bind",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
            dir,
        ],
        None,
    );
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("127.0.0.1"));
    // Fresh connections spread over both; stop one and the port still answers.
    for _ in 0..20 {
        assert_eq!(head(&one.url), 30);
    }
    assert_eq!(one.stop_timed().0, Some(0));
    for _ in 0..20 {
        assert_eq!(head(&two.url), 30);
    }
}

#[test]
fn a_config_file_sets_every_flag_and_the_command_line_overrides_it() {
    let tmp = tempfile::tempdir().unwrap();
    devnet_ledger(&tmp.path().join("ledger"), 30);
    let conf = tmp.path().join("ledgerd.toml");
    std::fs::write(
        &conf,
        format!(
            "# replica settings\ndata-dir = \"{}\"\n[server]\nbind = \"127.0.0.1:1\"\nmax-range = 5\nreuse-port = false\n",
            tmp.path().join("ledger").display()
        ),
    )
    .unwrap();
    let conf = conf.to_str().unwrap();
    // bind from the file would fail (port 1); the command line wins.
    let p = Ledgerd::builder()
        .readonly()
        .args(&["--config", conf])
        .data_dir_from_args()
        .start();
    assert_eq!(head(&p.url), 30, "data-dir came from the file");
    let answer = call_raw(&p.url, "ledger_getSoftConfirmationRange", "[1,6]");
    assert!(
        answer.contains("\"error\""),
        "max-range 5 came from the file: {answer}"
    );
    assert!(!call(&p.url, "ledger_getSoftConfirmationRange", "[1,5]").is_null());

    let bad = tmp.path().join("bad.toml");
    std::fs::write(&bad, "bind = \"127.0.0.1:0\"\nmax-batch = \"lots\"\n").unwrap();
    let out = run(&["serve-readonly", "--config", bad.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml line 2, key max-batch"), "{err}");
}

/// Turns a data dir this build wrote into what layout version 2 wrote: each
/// `proofs` value the bare proof (the last of the slot's list: version 2
/// kept only that one), meta `format` 2. Nothing else differs between the two.
fn downgrade_to_layout_2(dir: &std::path::Path) {
    use ledgerd::ledger::codec;
    use lmdb::{Cursor, Transaction, WriteFlags};
    let env = lmdb::Environment::new().set_max_dbs(16).open(dir).unwrap();
    let proofs = env.open_db(Some("proofs")).unwrap();
    let meta = env.open_db(Some("meta")).unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    let entries: Vec<(Vec<u8>, Vec<u8>)> = {
        let mut cursor = txn.open_ro_cursor(proofs).unwrap();
        cursor
            .iter_start()
            .map(|item| {
                let (k, v) = item.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect()
    };
    assert!(!entries.is_empty(), "the ledger holds proofs");
    for (k, v) in entries {
        let last = codec::decode_proofs(&v).unwrap().pop().unwrap();
        txn.put(proofs, &k, &codec::encode_proof(&last), WriteFlags::empty())
            .unwrap();
    }
    txn.put(meta, &"format", &2u64.to_be_bytes(), WriteFlags::empty())
        .unwrap();
    txn.commit().unwrap();
}

#[test]
fn a_layout_2_data_dir_is_refused_read_only_and_answers_the_same_once_opened_read_write() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ledger");
    devnet_ledger(&dir, 200);
    let before = {
        let p = Ledgerd::builder().readonly().data_dir(&dir).start();
        common::every_answer(&p.url)
    };
    assert!(
        before.iter().any(
            |(q, a)| q.starts_with("ledger_getVerifiedBatchProofsBySlotHeight")
                && a.contains("\"proofOutput\"")
        ),
        "the comparison covers proofs"
    );
    downgrade_to_layout_2(&dir);

    let d = dir.to_str().unwrap();
    let out = run(
        &["serve-readonly", "--bind", "127.0.0.1:0", "--data-dir", d],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("layout version 2")
            && err.contains("start ledgerd on it once read-write (not serve-readonly)"),
        "{err}"
    );

    // Any read-write open upgrades it: here an import of nothing.
    let out = run(&["import", "-", "--data-dir", d], Some(b""));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = Ledgerd::builder().readonly().data_dir(&dir).start();
    let after = common::every_answer(&p.url);
    assert_eq!(after.len(), before.len());
    for ((qa, xa), (qb, xb)) in before.iter().zip(&after) {
        assert_eq!(qa, qb);
        assert_eq!(xa, xb, "{qa} differs after the upgrade");
    }
}
