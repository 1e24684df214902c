//! What a devnet block costs before LMDB sees it, on one thread: making and
//! hashing it, signing it, and checking its signature as the devnet's sync
//! thread does (`chain::first_bad_signature`: `verify_strict`). The
//! sum over `dev_mine N`'s blocks, halved for this machine's two cores, is
//! a floor under the mine's wall time that no change to the pipeline or
//! the ledger's writes can go below while every block is signed and checked.
//!
//!   cargo run --release --example mine_floor [BLOCKS] [ROUNDS]   (defaults 20000, 5)
//!
//! Prints the median over ROUNDS of each step's time per block (signing
//! also timed apart, by signing each made chunk again), and the floor for
//! 100,000 blocks on 1 and 2 cores. Run it on a quiet machine.

use std::time::Instant;

use ledgerd::chain_rules::{first_bad_signature, signed_message, ForkTable, SequencerKey};
use ledgerd::source::devnet::block::{make_blocks, Inputs};
use ledgerd::source::devnet::schedule;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let blocks: u64 = args.next().map_or(20_000, |a| a.parse().expect("BLOCKS"));
    let rounds: usize = args.next().map_or(5, |a| a.parse().expect("ROUNDS"));
    let seed = 1;
    let key = SequencerKey::from_secret(&schedule::sequencer_secret(seed));
    let forks = ForkTable::kumquat_from(0);
    let slots: Vec<_> = (1..=blocks)
        .map(|h| schedule::simulated_slot(seed, schedule::slot_of(h)))
        .collect();
    let genesis = (0, [0u8; 32], schedule::genesis_state_root(seed));
    let (mut make_sign, mut sign, mut check) = (Vec::new(), Vec::new(), Vec::new());
    let public = key.public_key();
    for _ in 0..rounds {
        // In 300-block chunks, as the devnet's fetch thread makes them and
        // its sync thread checks them.
        let (mut made_in, mut signed_in, mut checked_in) = (0.0, 0.0, 0.0);
        let mut tip = genesis;
        for (i, chunk) in slots.chunks(300).enumerate() {
            let first = 1 + 300 * i as u64;
            let t = Instant::now();
            let made = make_blocks(&key, seed, &forks, tip, first, chunk, &Inputs::default());
            made_in += t.elapsed().as_secs_f64();
            let last = made.last().expect("a chunk has blocks");
            tip = (last.l2_height, last.hash, last.state_root);

            // The chunk signed again, alone: the signing part of the above.
            let t = Instant::now();
            let again = key.sign_blocks(&made, &forks);
            signed_in += t.elapsed().as_secs_f64();
            assert!(made.iter().zip(&again).all(|(b, s)| b.signature == *s));

            let t = Instant::now();
            let messages: Vec<_> = made
                .iter()
                .map(|b| signed_message(b, forks.fork_at(b.l2_height)))
                .collect();
            let items: Vec<(&[u8; 32], &[u8], &[u8; 64])> = messages
                .iter()
                .zip(&made)
                .map(|(m, b)| (&public, m.as_ref(), &b.signature))
                .collect();
            let bad = first_bad_signature(&items);
            checked_in += t.elapsed().as_secs_f64();
            assert_eq!(bad, None, "a signature the devnet made does not check");
        }
        make_sign.push(made_in / blocks as f64);
        sign.push(signed_in / blocks as f64);
        check.push(checked_in / blocks as f64);
    }
    let (make_sign, sign, check) = (median(make_sign), median(sign), median(check));
    let us = |s: f64| s * 1e6;
    println!(
        "{blocks} blocks, median of {rounds} rounds, {} cores, load average {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split(' ')
            .next()
            .unwrap_or("?")
    );
    println!("  make, hash and sign: {:.1} µs/block", us(make_sign));
    println!(
        "    of which sign:     {:.1} µs/block (timed apart)",
        us(sign)
    );
    println!("  check:               {:.1} µs/block", us(check));
    let per_block = make_sign + check;
    println!(
        "  floor for 100,000 blocks: {:.2} s on one core, {:.2} s on two (no LMDB, no reads)",
        per_block * 1e5,
        per_block * 1e5 / 2.0
    );
}
