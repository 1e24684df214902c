//! `ledgerd import` and `ledgerd export` over real processes and real LMDB
//! data dirs: a devnet ledger exported and imported elsewhere answers every
//! method the same; bad fixtures are refused whole, with line numbers.

use crate::common;

use common::{call, devnet_ledger, every_answer, export, run, Ledgerd};
use std::path::Path;

fn import(dir: &Path, fixture: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["import", "-", "--data-dir", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    run(&args, Some(fixture.as_bytes()))
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The head height of a data dir, read through a read-only server.
fn head_of(dir: &Path) -> u64 {
    let p = Ledgerd::builder().readonly().data_dir(dir).start();
    p.head()
}

/// Replaces line `n` (from 1) of `text`.
fn with_line(text: &str, n: usize, f: impl FnOnce(&str) -> String) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[n - 1] = f(&lines[n - 1]);
    lines.join("\n") + "\n"
}

/// The line number of the soft confirmation at `height` in an export.
fn line_of_height(text: &str, height: u64) -> usize {
    let needle = format!("{{\"softConfirmation\":{{\"l2Height\":{height},");
    text.lines().position(|l| l.starts_with(&needle)).unwrap() + 1
}

#[test]
fn export_then_import_into_an_empty_dir_answers_every_method_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    devnet_ledger(&a, 200);
    let fixture = export(&a, &[]);
    assert!(fixture.lines().count() > 400, "{}", fixture.len());

    let out = import(&b, &fixture, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("imported 200 soft confirmations"), "{said}");

    // The same bytes come back out...
    assert_eq!(export(&b, &[]), fixture);
    // ...and both ledgers answer every method alike, byte for byte.
    let (pa, pb) = (
        Ledgerd::builder().readonly().data_dir(&a).start(),
        Ledgerd::builder().readonly().data_dir(&b).start(),
    );
    let (ra, rb) = (every_answer(&pa.url), every_answer(&pb.url));
    assert!(ra.len() > 1000, "{}", ra.len());
    for ((qa, xa), (qb, xb)) in ra.iter().zip(&rb) {
        assert_eq!(qa, qb);
        assert_eq!(xa, xb, "{qa} differs");
    }
    assert_eq!(ra.len(), rb.len());
    // The comparison covered commitments, proofs and statuses that moved.
    let status = call(&pb.url, "ledger_getSoftConfirmationStatus", "[1]");
    assert_eq!(status, "Proven");
    assert!(!call(&pb.url, "ledger_getLastVerifiedBatchProof", "[]").is_null());
}

#[test]
fn two_range_exports_imported_in_turn_rebuild_the_whole_ledger() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, c) = (tmp.path().join("a"), tmp.path().join("c"));
    devnet_ledger(&a, 150);
    let first = export(&a, &["--from", "1", "--to", "70"]);
    let second = export(&a, &["--from", "71"]);
    assert!(
        !first.contains("lastScannedL1Height"),
        "a partial export has no scan height"
    );

    let out = import(&c, &first, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(head_of(&c), 70);
    let out = import(&c, &second, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(export(&c, &[]), export(&a, &[]));
}

#[test]
fn bad_lines_are_all_reported_with_their_numbers_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    devnet_ledger(&a, 40);
    let good = export(&a, &[]);
    let bad = with_line(&good, 5, |_| {
        "{\"softConfirmation\":{\"l2Height\":4}".into()
    });
    let bad = with_line(&bad, 9, |l| l.replace("\"hash\":\"", "\"hash\":\"zz"));
    let n = bad.lines().count();
    let bad = with_line(&bad, n, |_| {
        r#"{"status":{"l2Height":40,"status":"Done"}}"#.into()
    });

    let out = import(&b, &bad, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("3 bad line(s), nothing was imported"), "{err}");
    assert!(err.contains("line 5: "), "{err}");
    assert!(
        err.contains("line 9: softConfirmation: hash is not hex"),
        "{err}"
    );
    assert!(
        err.contains(&format!("line {n}: status: status is \"Done\"")),
        "{err}"
    );
    assert_eq!(head_of(&b), 0, "a failed import leaves nothing behind");
}

#[test]
fn a_block_that_breaks_a_chain_rule_fails_the_whole_import_unless_no_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    devnet_ledger(&a, 60);
    let good = export(&a, &[]);
    let n = line_of_height(&good, 50);
    // A changed timestamp: the block's hash no longer recomputes.
    let tampered = with_line(&good, n, |l| {
        let at = l.find("\"timestamp\":").unwrap();
        format!("{}\"timestamp\":1}}}}", &l[..at])
    });

    let out = import(&b, &tampered, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "line {n}: check hash failed: soft confirmation 50"
        )),
        "{err}"
    );
    assert!(err.contains("nothing was imported"), "{err}");
    assert!(err.contains("--no-verify"), "{err}");
    assert_eq!(
        head_of(&b),
        0,
        "the 49 good blocks before it are not kept either"
    );

    let out = import(&b, &tampered, &["--no-verify"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let p = Ledgerd::builder().readonly().data_dir(&b).start();
    let sc = call(&p.url, "ledger_getSoftConfirmationByNumber", "[50]");
    assert_eq!(sc["timestamp"], 1, "stored as the file says");
}

#[test]
fn a_fixture_must_continue_the_stored_chain() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    devnet_ledger(&a, 60);
    let tail = export(&a, &["--from", "31"]);
    let out = import(&b, &tail, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("check height failed: expected soft confirmation 1, got 31"),
        "{err}"
    );

    // Importing the whole chain twice: the second copy does not link.
    let all = export(&a, &[]);
    assert!(import(&b, &all, &[]).status.success());
    let out = import(&b, &all, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("already holds heights up to 60"), "{err}");
    assert_eq!(head_of(&b), 60);
}

#[test]
fn status_lines_are_checked_when_verified_and_applied_with_no_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    devnet_ledger(&a, 10);
    // Ten blocks, no commitment or proof yet: all Trusted.
    let blocks: String = export(&a, &[])
        .lines()
        .filter(|l| l.starts_with("{\"softConfirmation\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let claim = format!("{blocks}{{\"status\":{{\"l2Height\":3,\"status\":\"Proven\"}}}}\n");

    let out = import(&b, &claim, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("height 3 is Trusted"), "{err}");
    assert!(err.contains("a verified proof covering it"), "{err}");
    assert_eq!(head_of(&b), 0);

    let out = import(&c, &claim, &["--no-verify"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let p = Ledgerd::builder().readonly().data_dir(&c).start();
    assert_eq!(
        call(&p.url, "ledger_getSoftConfirmationStatus", "[3]"),
        "Proven"
    );
    assert_eq!(
        call(&p.url, "ledger_getSoftConfirmationStatus", "[4]"),
        "Trusted"
    );
}

#[test]
fn import_and_export_flags_are_checked() {
    let out = run(&["import"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("import needs a FILE"),
        "{}",
        stderr(&out)
    );
    let out = run(&["export", "--from", "9", "--to", "3"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--from 9 is above --to 3"));
    let out = run(&["export", "--no-verify"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--no-verify does not apply to `ledgerd export`"));
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nothing.jsonl");
    let out = run(
        &[
            "import",
            missing.to_str().unwrap(),
            "--data-dir",
            tmp.path().to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cannot open"), "{}", stderr(&out));
}

#[test]
fn two_proofs_on_one_slot_survive_export_and_import_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let node = Ledgerd::builder()
        .dev(0, 0)
        .data_dir(&a)
        .args(&["--dev-proof-bytes", "16"])
        .start();
    let slot = common::rpc::two_proofs_on_one_slot(&node);
    assert!(node.stop().0.success());

    let fixture = export(&a, &[]);
    let proof_lines: Vec<&str> = fixture
        .lines()
        .filter(|l| l.starts_with("{\"verifiedBatchProof\":"))
        .filter(|l| l.contains(&format!("\"height\":{slot}}}")))
        .collect();
    assert_eq!(proof_lines.len(), 2, "{fixture}");
    assert!(
        proof_lines[0].contains("\"lastL2Height\":3"),
        "{}",
        proof_lines[0]
    );
    assert!(
        proof_lines[1].contains("\"lastL2Height\":6"),
        "{}",
        proof_lines[1]
    );

    let out = import(&b, &fixture, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(export(&b, &[]), fixture);
    let serve = |dir: &Path| {
        Ledgerd::builder()
            .readonly()
            .args(&["--wire", "citrea"])
            .data_dir(dir)
            .start()
    };
    let (pa, pb) = (serve(&a), serve(&b));
    let on_slot = format!("[{slot}]");
    let from_a = call(
        &pa.url,
        "ledger_getVerifiedBatchProofsBySlotHeight",
        &on_slot,
    );
    assert_eq!(from_a.as_array().map(Vec::len), Some(2), "{from_a}");
    assert_eq!(
        call(
            &pb.url,
            "ledger_getVerifiedBatchProofsBySlotHeight",
            &on_slot
        ),
        from_a
    );
    for h in 1..=6 {
        assert_eq!(
            call(
                &pb.url,
                "ledger_getSoftConfirmationStatus",
                &format!("[{h}]")
            ),
            "proven"
        );
    }
}
