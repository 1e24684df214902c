use std::sync::Arc;

use bitcoin::block::Version;
use bitcoin::hashes::Hash as _;
use bitcoin::pow::CompactTarget;
use bitcoin::TxMerkleNode;

use super::*;
use crate::headers::params::REGTEST;
use crate::ledger::OpenOptions;

const NOW: i64 = 2_000_000_000;

/// A regtest header on `prev` at `time` (about two tries of the nonce).
fn mine(prev: &Header, time: u32, salt: u8) -> Header {
    solve(Header {
        version: Version::from_consensus(0x2000_0000),
        prev_blockhash: prev.block_hash(),
        merkle_root: TxMerkleNode::from_byte_array([salt; 32]),
        time,
        bits: CompactTarget::from_consensus(REGTEST.pow_limit_bits),
        nonce: 0,
    })
}

/// `h` with the first nonce from its own whose hash meets its bits.
fn solve(mut h: Header) -> Header {
    while rules::check_pow(h.block_hash(), h.bits.to_consensus(), &REGTEST).is_err() {
        h.nonce += 1;
    }
    h
}

/// `n` regtest headers on `prev`, 600 s apart.
fn extend(prev: &Header, n: usize, salt: u8) -> Vec<Header> {
    let mut last = *prev;
    (0..n)
        .map(|_| {
            last = mine(&last, last.time + 600, salt);
            last
        })
        .collect()
}

/// A new ledger in a temporary directory (kept while the ledger is used),
/// and the regtest chain stored in it.
fn stored() -> (tempfile::TempDir, Arc<Ledger>, HeaderTree) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(Ledger::open(dir.path(), &OpenOptions::default()).unwrap());
    let tree = HeaderTree::open(BitcoinNetwork::Regtest, ledger.clone(), 0).unwrap();
    (dir, ledger, tree)
}

/// [`stored`] with `n` headers on genesis accepted and saved.
fn saved(n: usize) -> (tempfile::TempDir, Arc<Ledger>, HeaderTree, Vec<Header>) {
    let (dir, ledger, mut c) = stored();
    let headers = extend(&genesis(), n, 1);
    c.accept(&headers, NOW).unwrap();
    c.save().unwrap();
    (dir, ledger, c, headers)
}

fn work(n: u64) -> Work {
    let mut be = [0u8; 32];
    be[24..].copy_from_slice(&n.to_be_bytes());
    Work::from_be_bytes(be)
}

fn genesis() -> Header {
    BitcoinNetwork::Regtest.genesis()
}

#[test]
fn a_chain_from_genesis_is_accepted_with_its_chainwork_summed() {
    let mut c = HeaderTree::in_memory(BitcoinNetwork::Regtest);
    let headers = extend(&genesis(), 300, 1);
    let a = c.accept(&headers, NOW).unwrap();
    assert_eq!((a.added, a.known, a.reorg), (300, 0, None));
    assert_eq!(c.tip().height, 300);
    assert_eq!(c.tip().hash, headers[299].block_hash());
    // Each regtest header is worth 2 (target 0x7fffff << 232).
    assert_eq!(c.best_chainwork(), work(602));
    assert_eq!(c.hash_at(150).unwrap(), Some(headers[149].block_hash()));
    assert_eq!(c.hash_at(301).unwrap(), None);
    assert!(c.meets_min_chainwork());
    assert_eq!(c.verified(), 300);
    // Sent again: all known, nothing changes.
    let again = c.accept(&headers[..10], NOW).unwrap();
    assert_eq!((again.added, again.known), (0, 10));
}

#[test]
fn a_branch_with_more_work_becomes_the_best_chain() {
    let mut c = HeaderTree::in_memory(BitcoinNetwork::Regtest);
    let main = extend(&genesis(), 100, 1);
    c.accept(&main, NOW).unwrap();
    // A fork from height 90: 10 headers tie (kept aside), the 11th wins.
    let fork = extend(&main[89], 11, 2);
    let tie = c.accept(&fork[..10], NOW).unwrap();
    assert_eq!(tie.reorg, None);
    assert_eq!(c.tip().hash, main[99].block_hash());
    let win = c.accept(&fork[10..], NOW).unwrap();
    let old_tip = (100, main[99].block_hash());
    let reorg = Reorg {
        fork_height: 90,
        old_tip,
    };
    assert_eq!(win.reorg, Some(reorg));
    assert_eq!(c.tip().height, 101);
    assert_eq!(c.hash_at(91).unwrap(), Some(fork[0].block_hash()));
    assert_eq!(c.hash_at(90).unwrap(), Some(main[89].block_hash()));
    // The old branch is kept: extending it past the fork switches back.
    let back = extend(&main[99], 2, 1);
    let r = c.accept(&back, NOW).unwrap();
    assert_eq!(r.reorg.map(|r| r.fork_height), Some(90));
    assert_eq!(c.hash_at(91).unwrap(), Some(main[90].block_hash()));
    assert_eq!(c.tip().height, 102);
}

#[test]
fn a_header_whose_parent_is_unknown_is_refused_as_unlinked() {
    let mut c = HeaderTree::in_memory(BitcoinNetwork::Regtest);
    let headers = extend(&genesis(), 5, 1);
    let e = c.accept(&headers[1..], NOW).unwrap_err();
    assert_eq!(e.rule, Rule::Link);
    assert_eq!(c.tip().height, 0);
}

#[test]
fn a_header_that_breaks_a_rule_stops_the_batch_and_keeps_what_came_before() {
    let mut c = HeaderTree::in_memory(BitcoinNetwork::Regtest);
    let mut headers = extend(&genesis(), 5, 1);
    // Header 4 with harder bits than regtest's rules demand (valid work).
    let mut bad = headers[3];
    bad.bits = CompactTarget::from_consensus(0x2000ffff);
    bad.nonce = 0;
    headers[3] = solve(bad);
    let e = c.accept(&headers, NOW).unwrap_err();
    assert_eq!((e.rule, e.height), (Rule::Bits, 4));
    assert_eq!(c.tip().height, 3);
    // A header whose hash misses its target.
    let mut weak = mine(&headers[2], headers[2].time + 600, 9);
    while rules::check_pow(weak.block_hash(), REGTEST.pow_limit_bits, &REGTEST).is_ok() {
        weak.nonce += 1;
    }
    assert_eq!(c.accept(&[weak], NOW).unwrap_err().rule, Rule::ProofOfWork);
    // Two hours and one second ahead of the clock.
    let future = mine(&headers[2], (NOW + 7201) as u32, 3);
    assert_eq!(c.accept(&[future], NOW).unwrap_err().rule, Rule::TimeTooNew);
}

#[test]
fn a_chain_below_the_minimum_chainwork_is_not_to_be_followed() {
    let c = HeaderTree::in_memory(BitcoinNetwork::Main);
    assert!(!c.meets_min_chainwork());
    assert_eq!(c.tip().height, 0);
    assert_eq!(c.tip().hash, MAIN_GENESIS.parse().unwrap());
}

const MAIN_GENESIS: &str = "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f";

#[test]
fn the_locator_starts_at_the_tip_thins_out_and_ends_at_genesis() {
    let mut c = HeaderTree::in_memory(BitcoinNetwork::Regtest);
    let headers = extend(&genesis(), 1000, 1);
    c.accept(&headers, NOW).unwrap();
    let loc = c.locator().unwrap();
    assert_eq!(loc[0], headers[999].block_hash());
    assert_eq!(loc[10], headers[989].block_hash());
    assert_eq!(*loc.last().unwrap(), genesis().block_hash());
    assert!(loc.len() <= MAX_LOCATOR && loc.len() < 30, "{}", loc.len());
}

#[test]
fn the_best_chain_is_stored_and_read_back_with_only_the_tail_in_memory() {
    let (_dir, ledger, c, headers) = saved(DEFAULT_KEEP as usize + 500);
    // After the save only `keep` headers stay in memory.
    assert_eq!(c.entry_at(10), None);
    assert_eq!(c.hash_at(10).unwrap(), Some(headers[9].block_hash()));
    drop(c);
    let mut c = HeaderTree::open(BitcoinNetwork::Regtest, ledger.clone(), 0).unwrap();
    let tip = headers.len() as u64;
    assert_eq!(c.tip().height, tip);
    assert_eq!(c.best_chainwork(), work(2 * (tip + 1)));
    assert_eq!(c.hash_at(0).unwrap(), Some(genesis().block_hash()));
    assert_eq!(c.hash_at(1234).unwrap(), Some(headers[1233].block_hash()));
    // It goes on from where it was.
    let more = extend(headers.last().unwrap(), 3, 1);
    c.accept(&more, NOW).unwrap();
    c.save().unwrap();
    let stored_tip = ledger.reader().unwrap().bitcoin_header_tip().unwrap();
    assert_eq!(stored_tip, Some(tip + 3));
    // A fork within the headers held, with more work, rewrites the heights above it.
    let fork = extend(&headers[headers.len() - 6], 10, 7);
    let r = c.accept(&fork, NOW).unwrap();
    assert_eq!(r.reorg.map(|r| r.fork_height), Some(tip - 5));
    c.save().unwrap();
    let reopened = HeaderTree::open(BitcoinNetwork::Regtest, ledger.clone(), 0).unwrap();
    assert_eq!(reopened.tip().hash, fork[9].block_hash());
    let above_fork = reopened.hash_at(tip - 4).unwrap();
    assert_eq!(above_fork, Some(fork[0].block_hash()));
}

#[test]
fn a_ledger_holding_another_chains_headers_is_refused() {
    let (_dir, ledger, mut c) = stored();
    c.save().unwrap();
    let e = HeaderTree::open(BitcoinNetwork::Testnet4, ledger, 0)
        .err()
        .expect("refused");
    assert!(matches!(e, HeaderStoreError::OtherChain { .. }));
    assert!(e.to_string().contains("--bitcoin-chain"), "{e}");
}

#[test]
fn a_fork_below_the_headers_held_is_refused() {
    let (_dir, _, mut c, headers) = saved(DEFAULT_KEEP as usize + 100);
    let deep = extend(&headers[10], 1, 5);
    assert_eq!(c.accept(&deep, NOW).unwrap_err().rule, Rule::Link);
}

#[test]
fn each_header_tracks_where_testnets_walk_back_stops_and_hashes_as_the_bitcoin_crate_does() {
    // Regtest allows pow-limit headers: every walk runs back to its
    // period's first header (here 0 and 2016), which the tracking must name
    // without walking; and after a reopen that loads only a tail, the first
    // headers loaded (whose walk leaves the tail) walk instead.
    let (_dir, ledger, mut c) = stored();
    let headers = extend(&genesis(), 2100, 3);
    c.accept(&headers, NOW).unwrap();
    for h in 1..=2100u64 {
        let e = c.entry_at(h).unwrap();
        assert_eq!(e.hash, e.header.block_hash(), "height {h}");
        let view = View {
            chain: &c,
            branch: &[],
            fork_height: c.tip().height,
        };
        let walked = rules::walk_back(&view, h, &REGTEST);
        assert_eq!(e.real_bits, walked, "height {h}");
        let tracked = view.last_real_bits(h, &REGTEST);
        assert_eq!(tracked, Some(REGTEST.pow_limit_bits));
    }
    c.save().unwrap();
    drop(c);
    let mut reopened = HeaderTree::open(BitcoinNetwork::Regtest, ledger, 0).unwrap();
    let first = reopened.tip().height + 1 - reopened.keep.min(2101);
    assert!(reopened.entry_at(first).is_some());
    let more = extend(&headers[2099], 20, 3);
    assert_eq!(reopened.accept(&more, NOW).unwrap().added, 20);
    assert_eq!(reopened.tip().hash, more[19].block_hash());
}
