//! Ledger size against the raw bytes of what it stores, for `scripts/bench.sh`.
//!
//! Opens a ledger read-only, walks every stored soft confirmation, every DA
//! slot's commitments and proofs, and sums the sizes of their fields as plain
//! fixed-width values (u64 = 8 bytes, u128 = 16, hashes 32, the signature 64,
//! blobs their length, a status 1 byte). Prints one JSON object on stdout:
//! `disk_bytes` (data.mdb), `raw_block_bytes` (the soft confirmations' own
//! fields), `raw_bytes` (everything: blocks, statuses, commitments, proofs),
//! per-block figures, the ratios `disk / raw`, and each table's entries and
//! pages (LMDB's own statistics) with the pages on LMDB's free list.
//!
//! `cargo run --release --example ledger_stats -- DATA_DIR`

use std::path::PathBuf;

use ledgerd::ledger::{Ledger, LedgerRead, OpenOptions};
use ledgerd::types::{SoftConfirmation, VerifiedBatchProof};

/// Raw field bytes of one soft confirmation.
fn block_raw(sc: &SoftConfirmation) -> u64 {
    // l2Height, daSlotHeight, timestamp (u64); l1FeeRate (u128); daSlotHash,
    // daSlotTxsCommitment, hash, prevHash, stateRoot, pubKey (32); signature (64).
    let fixed = 3 * 8 + 16 + 6 * 32 + 64;
    let blobs: usize = sc.txs.iter().chain(&sc.deposit_data).map(Vec::len).sum();
    fixed + blobs as u64
}

/// Raw field bytes of one verified batch proof.
fn proof_raw(p: &VerifiedBatchProof) -> u64 {
    let o = &p.proof_output;
    let diff: usize = o
        .state_diff
        .iter()
        .map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len))
        .sum();
    let n = p.proof.len()
        + 5 * 32
        + 2 * 8
        + o.sequencer_public_key.len()
        + o.sequencer_da_public_key.len()
        + 8 * o.preproven_commitments.len()
        + 8 // lastL2Height
        + diff
        + 8; // height
    n as u64
}

fn run(dir: PathBuf) -> Result<String, Box<dyn std::error::Error>> {
    let opts = OpenOptions {
        read_only: true,
        ..OpenOptions::default()
    };
    let ledger = Ledger::open(&dir, &opts)?;
    let reader = ledger.reader()?;
    let head = reader.head_height()?;
    let mut blocks = 0u64;
    let mut raw_blocks = 0u64;
    let mut first_slot = u64::MAX;
    let mut start = 1u64;
    while start <= head {
        let end = head.min(start + 999);
        for sc in reader.soft_confirmation_range(start, end)?.iter().flatten() {
            blocks += 1;
            raw_blocks += block_raw(sc);
            first_slot = first_slot.min(sc.da_slot_height);
        }
        start = end + 1;
    }
    let statuses = blocks; // one byte per stored block
    let mut raw_commitments = 0u64;
    let mut raw_proofs = 0u64;
    let mut commitments = 0u64;
    let mut proofs = 0u64;
    let last_slot = reader.last_scanned_l1()?;
    if first_slot != u64::MAX {
        for slot in first_slot..=last_slot {
            if let Some(list) = reader.commitments_on_slot(slot)? {
                commitments += list.len() as u64;
                // foundInL1, l2StartBlockNumber, l2EndBlockNumber (u64) + merkleRoot.
                raw_commitments += list.len() as u64 * (3 * 8 + 32);
            }
            for p in reader.proofs_on_slot(slot)? {
                proofs += 1;
                raw_proofs += proof_raw(&p);
            }
        }
    }
    drop(reader);
    let disk = ledger.disk_size();
    let st = ledger.table_stats()?;
    let page = u64::from(st.page_size);
    let mut tables = String::new();
    for t in &st.tables {
        let pages = t.branch_pages + t.leaf_pages + t.overflow_pages;
        tables.push_str(&format!(
            r#"{}"{}":{{"entries":{},"depth":{},"pages":{},"bytes":{}}}"#,
            if tables.is_empty() { "" } else { "," },
            t.name,
            t.entries,
            t.depth,
            pages,
            pages * page
        ));
    }
    let raw = raw_blocks + statuses + raw_commitments + raw_proofs;
    let per = |v: u64| {
        if blocks == 0 {
            0.0
        } else {
            v as f64 / blocks as f64
        }
    };
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    Ok(format!(
        concat!(
            r#"{{"blocks":{},"commitments":{},"proofs":{},"disk_bytes":{},"#,
            r#""raw_block_bytes":{},"raw_bytes":{},"disk_per_block":{:.1},"#,
            r#""raw_block_per_block":{:.1},"raw_per_block":{:.1},"#,
            r#""disk_over_raw":{:.3},"disk_over_raw_block":{:.3},"#,
            r#""free_bytes":{},"tables":{{{}}}}}"#
        ),
        blocks,
        commitments,
        proofs,
        disk,
        raw_blocks,
        raw,
        per(disk),
        per(raw_blocks),
        per(raw),
        ratio(disk, raw),
        ratio(disk, raw_blocks),
        st.free_pages * page,
        tables,
    ))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = match (args.next(), args.next()) {
        (Some(dir), None) => PathBuf::from(dir),
        _ => {
            eprintln!("usage: ledger_stats DATA_DIR");
            std::process::exit(2);
        }
    };
    match run(dir) {
        Ok(json) => println!("{json}"),
        Err(e) => {
            eprintln!("ledger_stats: {e}");
            std::process::exit(1);
        }
    }
}
