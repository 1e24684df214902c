//! `ledgerd verify-headers`: Citrea's real Bitcoin header files (mainnet
//! and testnet4, 2,037 headers each) pass by their own network's rules and
//! the right start height, and are refused under another network's rules,
//! at another start height, or with a header taken out. Hex lines and raw
//! 80-byte input alike; files from genesis checked from their first header.
//!
//! `tests/data/README.md` says where each file comes from.

use crate::common;

use bitcoin::hashes::Hash as _;
use common::process::run;
use ledgerd::headers::file::{self, Verifier};
use ledgerd::headers::rules::Rule;
use ledgerd::headers::rules::{self, next_bits};
use ledgerd::headers::BitcoinNetwork;

const MAIN_OLD: &str = include_str!("../data/bitcoin_mainnet_headers_40310_42346.txt");
const MAIN_NEW: &str = include_str!("../data/bitcoin_mainnet_headers_872918_874954.txt");
const TESTNET4: &str = include_str!("../data/bitcoin_testnet4_headers_40310_42346.txt");

/// A clock after every header in the files.
const NOW: i64 = 1_800_000_000;

/// `ledgerd verify-headers ARGS -` with `input` on stdin: exit code, stdout, stderr.
fn cli(args: &[&str], input: &[u8]) -> (Option<i32>, String, String) {
    let mut all = vec!["verify-headers"];
    all.extend_from_slice(args);
    all.push("-");
    let out = run(&all, Some(input));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn raw(hex_lines: &str) -> Vec<u8> {
    hex_lines
        .lines()
        .flat_map(|l| hex::decode(l.trim()).expect("hex"))
        .collect()
}

#[test]
fn citreas_three_real_header_files_pass_by_their_networks_rules() {
    for (file, chain, start) in [
        (MAIN_OLD, "main", "40310"),
        (MAIN_NEW, "main", "872918"),
        (TESTNET4, "testnet4", "40310"),
    ] {
        let (code, out, err) = cli(
            &["--bitcoin-chain", chain, "--start-height", start],
            file.as_bytes(),
        );
        assert_eq!(code, Some(0), "{chain} {start}: {out}\n{err}");
        assert!(out.contains("2037 headers of"), "{out}");
        assert!(!out.contains("FAILED"), "{out}");
        // The header rules that need context were checked on most headers.
        assert!(out.contains("bad-diffbits"), "{out}");
        assert!(out.contains("time-too-old"), "{out}");
    }
}

#[test]
fn the_mainnet_file_checks_its_retarget_at_42336_and_not_the_one_at_40320() {
    let v =
        file::verify_bytes(MAIN_OLD.as_bytes(), BitcoinNetwork::Main, Some(40310), NOW).unwrap();
    assert!(v.passed());
    let bits = Rule::Bits.index();
    // Not checked: 40310 (no parent in the file) and 40320 (its period
    // started at 38304); every other one was, the retarget at 42336 too.
    assert_eq!(v.verifier.not_checked[bits], 2);
    assert_eq!(v.verifier.passed[bits], 2035);
    // Median time past from the 12th header on; links from the 2nd.
    assert_eq!(v.verifier.passed[Rule::MedianTimePast.index()], 2037 - 11);
    assert_eq!(v.verifier.passed[Rule::Link.index()], 2036);
    assert_eq!(v.verifier.passed[Rule::ProofOfWork.index()], 2037);
}

#[test]
fn testnet4s_bip94_retarget_at_42336_gives_0x1949d95f_not_the_pre_bip94_0x1d00f3ac() {
    let mut v = Verifier::new(BitcoinNetwork::Testnet4, Some(40310), NOW);
    let lines: Vec<&str> = TESTNET4.lines().collect();
    let mut raw80 = [0u8; 80];
    for line in &lines[..(42336 - 40310)] {
        hex::decode_to_slice(line.trim(), &mut raw80).unwrap();
        v.push(&raw80).unwrap();
    }
    hex::decode_to_slice(lines[42336 - 40310].trim(), &mut raw80).unwrap();
    let header: bitcoin::block::Header = bitcoin::consensus::deserialize(&raw80).unwrap();
    assert_eq!(header.bits.to_consensus(), 0x1949d95f);
    let params = BitcoinNetwork::Testnet4.params();
    assert_eq!(next_bits(params, 42335, header.time, &v), Some(0x1949d95f));
    // The period's last header carries the pow limit (a 20-minute block):
    // retargeting from it, as before BIP94, gives other bits.
    let last = rules::Ancestors::at(&v, 42335).unwrap();
    let first = rules::Ancestors::at(&v, 40320).unwrap();
    assert_eq!(last.bits, params.pow_limit_bits);
    let timespan = i64::from(last.time) - i64::from(first.time);
    assert_eq!(rules::retarget(params, last.bits, timespan), 0x1d00f3ac);
    v.push(&raw80).unwrap();
    // Many headers of the file are 20-minute (pow-limit) blocks.
    let at_limit = lines
        .iter()
        .filter(|l| l.trim().get(144..152) == Some("ffff001d"))
        .count();
    assert!(at_limit > 1000, "{at_limit}");
}

#[test]
fn testnet4s_headers_are_refused_under_mains_rules() {
    let (code, out, _) = cli(
        &["--bitcoin-chain", "main", "--start-height", "40310"],
        TESTNET4.as_bytes(),
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAILED at height"), "{out}");
    assert!(out.contains("bad-diffbits"), "{out}");
}

#[test]
fn a_file_with_a_header_taken_out_is_refused_at_the_gap() {
    let mut lines: Vec<&str> = MAIN_OLD.lines().collect();
    lines.remove(1000);
    let text = lines.join("\n");
    let (code, out, _) = cli(
        &["--bitcoin-chain", "main", "--start-height", "40310"],
        text.as_bytes(),
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAILED at height 41310"), "{out}");
    assert!(out.contains("bad-prevblk"), "{out}");
}

#[test]
fn the_wrong_start_height_is_refused_where_the_bits_change() {
    // One too high: the real retarget (40320) lands on 40321, which must
    // keep its parent's bits.
    let v =
        file::verify_bytes(MAIN_OLD.as_bytes(), BitcoinNetwork::Main, Some(40311), NOW).unwrap();
    let e = v.failure.expect("refused");
    assert_eq!((e.rule, e.height), (Rule::Bits, 40321));
}

#[test]
fn raw_80_byte_input_is_detected_and_checked_the_same() {
    let bytes = raw(MAIN_NEW);
    assert_eq!(bytes.len(), 2037 * 80);
    let (code, out, err) = cli(
        &["--bitcoin-chain", "main", "--start-height", "872918"],
        &bytes,
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("raw 80-byte headers"), "{out}");
    // One byte changed in the middle (a nonce): the hash misses its target.
    let mut bad = bytes.clone();
    bad[80 * 500 + 79] ^= 1;
    let (code, out, _) = cli(
        &["--bitcoin-chain", "main", "--start-height", "872918"],
        &bad,
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAILED at height 873418"), "{out}");
    assert!(out.contains("high-hash"), "{out}");
}

#[test]
fn unreadable_input_exits_2_with_a_sentence() {
    let (code, _, err) = cli(&["--bitcoin-chain", "main"], &[0u8; 81]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no whole number of 80-byte headers"), "{err}");
    let (code, _, err) = cli(&["--bitcoin-chain", "main"], b"abcd\n");
    assert_eq!(code, Some(2));
    assert!(err.contains("line 1 is no header"), "{err}");
}

/// Regtest headers from genesis, mined here (about two tries each).
fn regtest_from_genesis(n: usize) -> Vec<bitcoin::block::Header> {
    let params = BitcoinNetwork::Regtest.params();
    let mut out = vec![BitcoinNetwork::Regtest.genesis()];
    for i in 0..n {
        let prev = out[i];
        let mut h = bitcoin::block::Header {
            version: bitcoin::block::Version::from_consensus(0x2000_0000),
            prev_blockhash: prev.block_hash(),
            merkle_root: bitcoin::TxMerkleNode::all_zeros(),
            time: prev.time + 600,
            bits: prev.bits,
            nonce: 0,
        };
        while rules::check_pow(h.block_hash(), params.pow_limit_bits, params).is_err() {
            h.nonce += 1;
        }
        out.push(h);
    }
    out
}

#[test]
fn a_file_from_genesis_checks_every_rule_and_starts_at_the_networks_genesis() {
    let headers = regtest_from_genesis(300);
    let bytes: Vec<u8> = headers
        .iter()
        .flat_map(bitcoin::consensus::serialize)
        .collect();
    let (code, out, err) = cli(&["--bitcoin-chain", "regtest"], &bytes);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("301 headers of regtest (heights 0..=300"),
        "{out}"
    );
    assert!(!out.contains("not checked"), "{out}");
    // The same file is not testnet4's: its first header is no genesis there.
    let (code, out, _) = cli(&["--bitcoin-chain", "testnet4"], &bytes);
    assert_eq!(code, Some(1));
    assert!(out.contains("FAILED at height 0"), "{out}");
    assert!(out.contains("genesis"), "{out}");
    // --network picks the chain: none (regtest) here.
    let (code, _, _) = cli(&[], &bytes);
    assert_eq!(code, Some(0));
}

/// The verifier's ancestors without its walk-back shortcut.
struct Walk<'a>(&'a Verifier);

impl rules::Ancestors for Walk<'_> {
    fn at(&self, height: u64) -> Option<rules::Past> {
        self.0.at(height)
    }
}

#[test]
fn the_tracked_walk_back_gives_the_bits_the_walk_gives_on_every_testnet4_header() {
    let params = BitcoinNetwork::Testnet4.params();
    let mut v = Verifier::new(BitcoinNetwork::Testnet4, Some(40310), NOW);
    let mut raw80 = [0u8; 80];
    let (mut same, mut checked) = (0, 0);
    for line in TESTNET4.lines() {
        hex::decode_to_slice(line.trim(), &mut raw80).unwrap();
        let header = file::header_from_bytes(&raw80);
        let prev = v.next_height() - 1;
        if v.next_height() > 40310 {
            let fast = next_bits(params, prev, header.time, &v);
            let slow = next_bits(params, prev, header.time, &Walk(&v));
            assert_eq!(fast, slow, "height {}", prev + 1);
            same += 1;
            checked += usize::from(fast.is_some());
        }
        v.push(&raw80).unwrap();
    }
    assert_eq!(same, 2036);
    assert_eq!(checked, 2034);
}
