use std::collections::HashMap;

use bitcoin::hashes::Hash as _;

use super::*;
use crate::headers::params::{MAIN, REGTEST, SIGNET, TESTNET4};

/// Ancestors from a map (heights not in it are not held).
#[derive(Default)]
struct Map(HashMap<u64, Past>);

impl Map {
    /// Ancestors (height, time, bits).
    fn of(entries: impl IntoIterator<Item = (u64, u32, u32)>) -> Map {
        let mut map = Map::default();
        for (height, time, bits) in entries {
            map.put(height, time, bits);
        }
        map
    }

    fn put(&mut self, height: u64, time: u32, bits: u32) -> &mut Self {
        self.0.insert(height, Past { time, bits });
        self
    }
}

impl Ancestors for Map {
    fn at(&self, height: u64) -> Option<Past> {
        self.0.get(&height).copied()
    }
}

fn hex_u32(v: &serde_json::Value) -> u32 {
    u32::from_str_radix(v.as_str().expect("hex string"), 16).expect("hex u32")
}

/// The cases of `group` in Bitcoin Core's pow tests.
fn cases(group: &str) -> Vec<serde_json::Value> {
    let json = include_str!("../../../tests/data/core_pow_tests.json");
    let v: serde_json::Value = serde_json::from_str(json).expect("json");
    v[group].as_array().expect("cases").clone()
}

#[test]
fn retargets_match_bitcoin_cores_pow_tests() {
    let cases = cases("retarget");
    assert_eq!(cases.len(), 4);
    for c in &cases {
        let last = Past {
            time: c["last_time"].as_u64().expect("time") as u32,
            bits: hex_u32(&c["last_bits"]),
        };
        // The period's first header: only its time matters off BIP94.
        let first = Past {
            time: c["first_time"].as_u64().expect("time") as u32,
            bits: 0,
        };
        let got = calculate_next_bits(&MAIN, last, first);
        assert_eq!(got, hex_u32(&c["expected_bits"]), "{}", c["case"]);
        // And through next_bits, with the two headers as ancestors.
        let last_height = c["last_height"].as_u64().expect("height");
        let map = Map::of([
            (last_height, last.time, last.bits),
            (last_height + 1 - 2016, first.time, 0),
        ]);
        let via_next = next_bits(&MAIN, last_height, last.time + 600, &map);
        assert_eq!(via_next, Some(got), "{}", c["case"]);
    }
}

#[test]
fn bad_targets_fail_as_in_bitcoin_cores_pow_tests() {
    let cases = cases("check_proof_of_work");
    assert_eq!(cases.len(), 5);
    for c in &cases {
        let mut hash = [0u8; 32];
        hex::decode_to_slice(c["hash_be"].as_str().expect("hash"), &mut hash).expect("hex");
        hash.reverse();
        let hash = BlockHash::from_byte_array(hash);
        let pow = check_pow(hash, hex_u32(&c["bits"]), &MAIN);
        assert!(pow.is_err(), "{}", c["case"]);
    }
    // The same checks pass what is valid: genesis under its own bits.
    let genesis = BitcoinNetwork::Main.genesis();
    assert_eq!(check_pow(genesis.block_hash(), 0x1d00ffff, &MAIN), Ok(()));
    // A hash one above the target fails; the target itself passes.
    let target = Target::from_compact(CompactTarget::from_consensus(0x1d00ffff));
    let at = BlockHash::from_byte_array(target.to_le_bytes());
    assert_eq!(check_pow(at, 0x1d00ffff, &MAIN), Ok(()));
    // The target is 0xffff << 208: its low bytes are zero, so this is target + 1.
    let mut above = target.to_le_bytes();
    above[0] = 1;
    assert!(check_pow(BlockHash::from_byte_array(above), 0x1d00ffff, &MAIN).is_err());
}

#[test]
fn off_a_retarget_mainnet_keeps_the_parents_bits() {
    let map = Map::of([(100, 1_000_000, 0x1c05a3f4)]);
    // Whatever the time: no 20-minute rule on main.
    let an_hour_on = |params| next_bits(params, 100, 1_000_000 + 3600, &map);
    assert_eq!(an_hour_on(&MAIN), Some(0x1c05a3f4));
    assert_eq!(an_hour_on(&SIGNET), Some(0x1c05a3f4));
}

#[test]
fn testnet_twenty_minute_rule_demands_the_pow_limit_after_twenty_minutes() {
    let limit = TESTNET4.pow_limit_bits;
    let map = Map::of([(5000, 1_000_000, 0x1949d95f)]);
    let after = |seconds: u32| next_bits(&TESTNET4, 5000, 1_000_000 + seconds, &map);
    assert_eq!(after(1201), Some(limit));
    // At exactly 20 minutes the rule does not apply: the real bits.
    assert_eq!(after(1200), Some(0x1949d95f));
}

#[test]
fn testnet_walks_back_over_pow_limit_headers_to_the_last_real_bits() {
    let limit = TESTNET4.pow_limit_bits;
    let map = Map::of([
        (5000, 1_000_000, 0x1949d95f),
        (5001, 1_002_000, limit),
        (5002, 1_004_000, limit),
    ]);
    let next = |map: &Map| next_bits(&TESTNET4, 5002, 1_004_100, map);
    assert_eq!(next(&map), Some(0x1949d95f));
    // Without the header the walk needs, the rule is not checked.
    let short = Map::of([(5001, 1_002_000, limit), (5002, 1_004_000, limit)]);
    assert_eq!(next(&short), None);
    // The walk stops at a period's first header, even at the pow limit.
    let boundary = Map::of([
        (4031, 900_000, 0x1949d95f),
        (4032, 1_000_000, limit),
        (4033, 1_002_000, limit),
    ]);
    let bits = next_bits(&TESTNET4, 4033, 1_002_100, &boundary);
    assert_eq!(bits, Some(limit));
}

#[test]
fn bip94_retargets_from_the_periods_first_bits() {
    let limit = TESTNET4.pow_limit_bits;
    let first = Past {
        time: 1_000_000,
        bits: 0x1949d95f,
    };
    // The period's last header was a 20-minute one.
    let last = Past {
        time: 1_000_000 + 14 * 24 * 3600,
        bits: limit,
    };
    // Exactly two weeks: the first header's bits unchanged.
    assert_eq!(calculate_next_bits(&TESTNET4, last, first), 0x1949d95f);
    // Without BIP94 (main's arithmetic) the last header's bits would be kept.
    assert_eq!(calculate_next_bits(&MAIN, last, first), limit);
}

#[test]
fn retarget_clamps_at_four_times_and_a_quarter() {
    let base = 0x1c05a3f4;
    let two_weeks = 14 * 24 * 3600;
    let after = |timespan| retarget(&MAIN, base, timespan);
    assert_eq!(after(two_weeks * 10), after(two_weeks * 4));
    assert_eq!(after(1), after(two_weeks / 4));
    // Time going backwards counts as the quarter (Core's int64 arithmetic).
    assert_eq!(after(-5000), after(two_weeks / 4));
    assert_ne!(after(two_weeks * 2), base);
}

#[test]
fn regtest_never_retargets() {
    let map = Map::of([(143, 1_000_000, 0x207fffff), (0, 1, 0x207fffff)]);
    assert_eq!(next_bits(&REGTEST, 143, 1_000_600, &map), Some(0x207fffff));
    assert_eq!(REGTEST.interval(), 144);
}

#[test]
fn median_time_past_is_the_middle_of_the_last_eleven() {
    let times = [10, 50, 20, 40, 30, 60, 100, 90, 80, 70, 65];
    let map = Map::of((100..).zip(times).map(|(h, t)| (h, t, 0)));
    // Sorted: 10 20 30 40 50 60 65 70 80 90 100: the sixth is 60.
    assert_eq!(median_time_past(110, &map), Some(60));
    // Ten held: not checked.
    assert_eq!(median_time_past(111, &map), None);
    // Near genesis: all headers there are.
    let young = Map::of([(0, 5, 0), (1, 9, 0), (2, 7, 0)]);
    assert_eq!(median_time_past(2, &young), Some(7));
}

fn header(version: i32, time: u32, bits: u32) -> Header {
    Header {
        version: bitcoin::block::Version::from_consensus(version),
        prev_blockhash: BlockHash::all_zeros(),
        merkle_root: bitcoin::TxMerkleNode::all_zeros(),
        time,
        bits: CompactTarget::from_consensus(bits),
        nonce: 0,
    }
}

/// Ancestors of a main-chain header at `prev + 1`: 11 headers 600 s apart
/// ending at `time0`, all with `bits`.
fn eleven(prev: u64, time0: u32, bits: u32) -> Map {
    Map::of((0..11u64).map(|i| (prev - i, time0 - 600 * i as u32, bits)))
}

fn contextual(
    params: &ChainParams,
    prev: u64,
    h: &Header,
    map: &Map,
    now: i64,
) -> Result<Checked, HeaderError> {
    check_contextual(params, prev, h, h.block_hash(), map, now)
}

#[test]
fn bits_must_be_the_same_u32_not_only_the_same_target() {
    let map = eleven(500_000, 1_500_000_000, 0x1d00ff00);
    let now = 1_500_000_000 + 600;
    let with = |bits| contextual(&MAIN, 500_000, &header(4, now as u32, bits), &map, now);
    assert!(with(0x1d00ff00).is_ok());
    // 0x1e0000ff encodes the same target as 0x1d00ff00.
    let target = |bits| Target::from_compact(CompactTarget::from_consensus(bits));
    assert_eq!(target(0x1e0000ff), target(0x1d00ff00));
    let e = with(0x1e0000ff).unwrap_err();
    assert_eq!(e.rule, Rule::Bits);
    assert_eq!(e.height, 500_001);
    assert!(e.to_string().contains("0x1e0000ff"), "{e}");
}

#[test]
fn time_must_be_above_the_median_time_past() {
    let map = eleven(500_000, 1_500_000_000, 0x1d00ff00);
    let mtp = 1_500_000_000 - 600 * 5;
    let now = 1_500_000_000;
    let at = |time| contextual(&MAIN, 500_000, &header(4, time, 0x1d00ff00), &map, now);
    assert_eq!(at(mtp).unwrap_err().rule, Rule::MedianTimePast);
    let ok = at(mtp + 1).unwrap();
    assert!(ok.has(Rule::MedianTimePast) && ok.has(Rule::Bits));
}

#[test]
fn time_may_be_at_most_two_hours_ahead_of_the_clock() {
    let map = eleven(500_000, 1_500_000_000, 0x1d00ff00);
    let now = 1_500_000_000;
    let at = |t: i64| contextual(&MAIN, 500_000, &header(4, t as u32, 0x1d00ff00), &map, now);
    assert!(at(now + 7200).is_ok());
    assert_eq!(at(now + 7201).unwrap_err().rule, Rule::TimeTooNew);
}

#[test]
fn bip94_refuses_a_period_start_more_than_600_s_before_its_parent() {
    let limit = TESTNET4.pow_limit_bits;
    // Height 4032 opens a period; its parent 4031, period start 2016.
    let mut map = eleven(4031, 2_000_000, limit);
    map.put(2016, 2_000_000 - 14 * 24 * 3600, limit);
    let bits = next_bits(&TESTNET4, 4031, 0, &map).expect("context");
    let now = 2_000_000;
    let at = |t: u32| contextual(&TESTNET4, 4031, &header(4, t, bits), &map, now);
    // Above the median time past (1,997,000) but 601 s before the parent.
    assert_eq!(at(2_000_000 - 601).unwrap_err().rule, Rule::Timewarp);
    let ok = at(2_000_000 - 600).unwrap();
    assert!(ok.has(Rule::Timewarp));
    // Main has no such rule: the same shape passes there.
    let mut main_map = eleven(4031, 2_000_000, 0x1d00ffff);
    main_map.put(2016, 2_000_000 - 14 * 24 * 3600, 0x1d00ffff);
    let main_bits = next_bits(&MAIN, 4031, 0, &main_map).expect("context");
    let h = header(1, 2_000_000 - 601, main_bits);
    let checked = contextual(&MAIN, 4031, &h, &main_map, now).unwrap();
    assert!(!checked.has(Rule::Timewarp) && !checked.lacks(Rule::Timewarp));
}

#[test]
fn versions_below_bip34_66_65_floors_are_refused_from_their_heights() {
    assert!(check_version(&MAIN, 227_930, 1).is_ok());
    assert!(check_version(&MAIN, 227_931, 1).is_err());
    assert!(check_version(&MAIN, 227_931, 2).is_ok());
    assert!(check_version(&MAIN, 363_725, 2).is_err());
    assert!(check_version(&MAIN, 363_725, 3).is_ok());
    assert!(check_version(&MAIN, 388_381, 3).is_err());
    assert!(check_version(&MAIN, 388_381, 0x2000_0000).is_ok());
    // testnet4 and regtest: from height 1.
    assert!(check_version(&TESTNET4, 1, 3).is_err());
    assert!(check_version(&REGTEST, 1, 4).is_ok());
    let e = check_version(&MAIN, 400_000, 3).unwrap_err();
    assert!(e.contains("BIP65"), "{e}");
}

#[test]
fn rules_without_their_context_are_not_checked_not_passed() {
    // Only the parent is held: no median time past, no walk-back beyond it.
    let limit = TESTNET4.pow_limit_bits;
    let map = Map::of([(5001, 1_002_000, limit)]);
    let h = header(4, 1_002_100, limit);
    let checked = contextual(&TESTNET4, 5001, &h, &map, 1_002_100).unwrap();
    assert!(checked.lacks(Rule::Bits) && !checked.has(Rule::Bits));
    assert!(checked.lacks(Rule::MedianTimePast));
    assert!(checked.has(Rule::TimeTooNew) && checked.has(Rule::Version));
}

#[test]
fn every_rule_is_at_its_index_in_all() {
    for (i, rule) in Rule::ALL.into_iter().enumerate() {
        assert_eq!(rule.index(), i, "{rule}");
    }
}
