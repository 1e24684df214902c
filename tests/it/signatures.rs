//! A block whose signature ed25519-dalek's batch verification takes but
//! `verify_strict` (Citrea's check) refuses is refused by `ledgerd import`
//! and by a follower's sync thread, and a block before it is kept (sync)
//! or nothing is (import). The chain is made here with a key whose secret
//! scalar the test knows, so it can sign with an R of its choosing.

use crate::common;

use common::{call, run, wait_until_value, Ledgerd};
use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::scalar::Scalar;
use ed25519_dalek::{Signature, VerifyingKey};
use ledgerd::chain_rules::{block_hash, Fork};
use ledgerd::jsonl::{write_record, Record};
use ledgerd::ledger::LedgerRead;
use ledgerd::types::{SoftConfirmation, ZERO_HASH};
use sha2::{Digest, Sha512};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

const BLOCKS: u64 = 100;
const BAD: u64 = 60;

/// The sequencer's secret scalar and public key.
fn sequencer() -> (Scalar, [u8; 32]) {
    let a = Scalar::from_bytes_mod_order([21; 32]);
    (a, (ED25519_BASEPOINT_POINT * a).compress().to_bytes())
}

/// s = r + k * a, with k = SHA-512(R || A || message) and R given as bytes.
fn sign_with(r_bytes: [u8; 32], r: Scalar, message: &[u8]) -> [u8; 64] {
    let (a, public) = sequencer();
    let mut h = Sha512::new();
    h.update(r_bytes);
    h.update(public);
    h.update(message);
    let s = r + Scalar::from_hash(h) * a;
    let mut sig = [0u8; 64];
    sig[..32].copy_from_slice(&r_bytes);
    sig[32..].copy_from_slice(s.as_bytes());
    sig
}

/// The identity point as R, with s = k * a: [s]B - [k]A is the identity,
/// so the (cofactorless) equation holds, but R is of small order.
fn identity_r_signature(message: &[u8]) -> [u8; 64] {
    let mut identity = [0u8; 32];
    identity[0] = 1;
    sign_with(identity, Scalar::ZERO, message)
}

/// Kumquat blocks 1..=BLOCKS as a fixture; block `BAD` signed by `bad_sig`.
fn chain_fixture(bad_sig: fn(&[u8]) -> [u8; 64]) -> String {
    let (_, public) = sequencer();
    let mut out = Vec::new();
    let mut prev = ZERO_HASH;
    for h in 1..=BLOCKS {
        let mut sc = SoftConfirmation {
            l2_height: h,
            da_slot_height: 1000 + h / 10,
            da_slot_hash: [(h / 10) as u8; 32],
            da_slot_txs_commitment: [7; 32],
            hash: ZERO_HASH,
            prev_hash: prev,
            txs: vec![h.to_be_bytes().to_vec()],
            state_root: [h as u8; 32],
            signature: [0; 64],
            pub_key: public,
            deposit_data: Vec::new(),
            l1_fee_rate: 10,
            timestamp: 1_750_000_000 + h,
        };
        sc.hash = block_hash(&sc, Fork::Kumquat);
        sc.signature = if h == BAD {
            bad_sig(&sc.hash)
        } else {
            let r = Scalar::from(h) + Scalar::from_bytes_mod_order([0x77; 32]);
            sign_with(
                (ED25519_BASEPOINT_POINT * r).compress().to_bytes(),
                r,
                &sc.hash,
            )
        };
        prev = sc.hash;
        write_record(&mut out, &Record::SoftConfirmation(Box::new(sc)));
    }
    String::from_utf8(out).unwrap()
}

fn import(dir: &Path, fixture: &str, extra: &[&str]) -> std::process::Output {
    let key = hex::encode(sequencer().1);
    let mut args = vec![
        "import",
        "-",
        "--data-dir",
        dir.to_str().unwrap(),
        "--sequencer-pubkey",
        &key,
    ];
    args.extend_from_slice(extra);
    run(&args, Some(fixture.as_bytes()))
}

#[test]
fn the_crafted_signature_is_one_a_batch_takes_and_verify_strict_refuses() {
    let (_, public) = sequencer();
    let key = VerifyingKey::from_bytes(&public).unwrap();
    let message = [3u8; 32];
    let sig = Signature::from_bytes(&identity_r_signature(&message));
    assert!(ed25519_dalek::verify_batch(&[&message], &[sig], &[key]).is_ok());
    assert!(key.verify_strict(&message, &sig).is_err());
}

#[test]
fn import_refuses_a_chain_with_a_signature_only_a_batch_would_take() {
    let tmp = tempfile::tempdir().unwrap();
    let (good, bad) = (tmp.path().join("good"), tmp.path().join("bad"));

    let out = import(&bad, &chain_fixture(identity_r_signature), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "line {BAD}: check signature failed: soft confirmation {BAD} (Kumquat rules): softConfirmationSignature does not verify"
        )),
        "{err}"
    );
    let p = Ledgerd::builder().readonly().data_dir(&bad).start();
    assert_eq!(
        call(&p.url, "ledger_getHeadSoftConfirmationHeight", "[]"),
        0
    );

    // The same chain with an ordinary signature at BAD imports whole.
    fn ordinary(message: &[u8]) -> [u8; 64] {
        let r = Scalar::from_bytes_mod_order([0x99; 32]);
        sign_with(
            (ED25519_BASEPOINT_POINT * r).compress().to_bytes(),
            r,
            message,
        )
    }
    let out = import(&good, &chain_fixture(ordinary), &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = Ledgerd::builder().readonly().data_dir(&good).start();
    assert_eq!(
        call(&p.url, "ledger_getHeadSoftConfirmationHeight", "[]"),
        BLOCKS
    );
}

#[test]
fn a_follower_stores_the_blocks_before_a_signature_only_a_batch_would_take_and_stops_there() {
    // The upstream holds the chain as imported without checks, and serves it.
    let tmp = tempfile::tempdir().unwrap();
    let up = tmp.path().join("up");
    let out = import(&up, &chain_fixture(identity_r_signature), &["--no-verify"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let upstream = Ledgerd::builder().readonly().data_dir(&up).start();
    assert_eq!(
        call(&upstream.url, "ledger_getHeadSoftConfirmationHeight", "[]"),
        BLOCKS
    );

    let follower = ledgerd::Node::builder()
        .data_dir(tmp.path().join("follower"))
        .upstream(&upstream.url)
        .sequencer_pubkey(sequencer().1)
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let refused = || follower.progress().failures.signature.load(Relaxed);
    wait_until_value(
        Duration::from_secs(30),
        "the bad block to be refused twice",
        refused,
        |n| *n >= 2,
    );
    assert_eq!(
        follower.ledger().reader().unwrap().head_height().unwrap(),
        BAD - 1,
        "fetched again and refused again"
    );
}
