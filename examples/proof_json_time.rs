//! What a 1 MiB batch proof costs to answer: writing its JSON alone
//! (`wire::write::write_verified_batch_proof`), and a whole request for it through
//! `Rpc::handle` on a real ledger in a temp dir (LMDB read, decode, JSON).
//! Prints the mean time per write and per request; it asserts nothing (the
//! tests pin the JSON itself, `src/wire/write.rs` and `src/rpc/tests.rs`).
//!
//! `cargo run --release --example proof_json_time [RUNS]`

use std::sync::Arc;
use std::time::Instant;

use ledgerd::ledger::{Ledger, OpenOptions};
use ledgerd::progress::Progress;
use ledgerd::rpc::{Rpc, RpcConfig};
use ledgerd::types::{ProofOutput, VerifiedBatchProof};
use ledgerd::wire;

/// A proof of `len` bytes verified on DA slot `slot`, with a small output.
fn proof(slot: u64, len: usize) -> VerifiedBatchProof {
    VerifiedBatchProof {
        proof: (0..len).map(|i| i as u8).collect(),
        proof_output: ProofOutput {
            initial_state_root: [1; 32],
            final_state_root: [2; 32],
            prev_soft_confirmation_hash: [0; 32],
            final_soft_confirmation_hash: [2; 32],
            state_diff: vec![(vec![0xaa], Some(vec![0xbb])), (vec![0xcc], None)],
            da_slot_hash: [0xa6; 32],
            sequencer_commitments_range: (0, 4),
            sequencer_public_key: vec![0xc3; 32],
            sequencer_da_public_key: vec![0x02; 33],
            preproven_commitments: vec![1, 2],
            last_l2_height: 2,
        },
        height: slot,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: u32 = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 50,
    };
    let p = proof(6, 1 << 20);

    let mut out = Vec::new();
    let start = Instant::now();
    for _ in 0..runs {
        out.clear();
        wire::write::write_verified_batch_proof(&mut out, &p);
    }
    println!(
        "1 MiB proof -> {} bytes of JSON in {:?} per write",
        out.len(),
        start.elapsed() / runs
    );

    let dir = tempfile::tempdir()?;
    let ledger = Arc::new(Ledger::open(dir.path(), &OpenOptions::default())?);
    let mut w = ledger.writer()?;
    w.put_proof(6, &p)?;
    w.commit()?;
    let rpc = Rpc::new(ledger, Arc::new(Progress::default()), RpcConfig::default());
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ledger_getVerifiedBatchProofsBySlotHeight","params":[6]}"#;
    let start = Instant::now();
    let mut len = 0;
    for _ in 0..runs {
        len = rpc.handle(body.as_bytes()).map_or(0, |out| out.len());
    }
    println!(
        "1 MiB proof request -> {len} bytes in {:?} per request",
        start.elapsed() / runs
    );
    Ok(())
}
