//! The devnet run through the sync thread, as a node runs it: a prefill
//! scanned pass by pass, restarts that continue the DA timeline, the
//! statuses a prefill reaches, another seed refused. (The chain source's
//! own rules are tested beside it in `source/devnet/`.)

use std::sync::Arc;

use super::*;
use crate::chain_rules::ForkTable;
use crate::ledger::walk::LedgerWalk;
use crate::ledger::OpenOptions;
use crate::ledger::{Ledger, LedgerRead};
use crate::progress::Progress;
use crate::source::devnet::*;
use crate::stop::Stop;
use crate::sync::{SyncConfig, Syncer};
use crate::types::Status;

/// A devnet over `dir` with `prefill` blocks and no timer, after `act`
/// has run on its syncer.
fn acted(
    dir: &std::path::Path,
    prefill: u64,
    act: impl FnOnce(&mut Syncer<Devnet>),
) -> Arc<Ledger> {
    let config = DevnetConfig {
        prefill,
        block_ms: 0,
        ..DevnetConfig::default()
    };
    acted_with(dir, config, act)
}

/// [`acted`] with a devnet of `config`.
fn acted_with(
    dir: &std::path::Path,
    config: DevnetConfig,
    act: impl FnOnce(&mut Syncer<Devnet>),
) -> Arc<Ledger> {
    let ledger = Arc::new(Ledger::open(dir, &OpenOptions::default()).unwrap());
    let devnet = Devnet::open(config, ForkTable::default(), ledger.clone()).unwrap();
    let sync = SyncConfig {
        sequencer_pubkey: Some(devnet.public_key()),
        ..SyncConfig::default()
    };
    let mut syncer = Syncer::new(ledger.clone(), devnet, Arc::new(Progress::default()), sync);
    act(&mut syncer);
    ledger
}

fn prefilled(dir: &std::path::Path, prefill: u64) -> Arc<Ledger> {
    acted(dir, prefill, |s| s.catch_up(&Stop::new()).unwrap())
}

/// Everything a devnet ledger holds about its DA chain: the slot of
/// every height, every commitment and proof, and the last scanned slot.
type DaView = (
    Vec<u64>,
    Vec<(u64, Vec<crate::types::SequencerCommitment>)>,
    Vec<(u64, crate::types::VerifiedBatchProof)>,
    u64,
);

fn da_view(ledger: &Ledger) -> DaView {
    let r = ledger.reader().unwrap();
    let slots = (1..=r.head_height().unwrap())
        .map(|h| r.soft_confirmation(h).unwrap().unwrap().da_slot_height)
        .collect();
    (
        slots,
        r.all_commitments().unwrap(),
        r.all_proofs().unwrap(),
        r.last_scanned_l1().unwrap(),
    )
}

#[test]
fn a_prefill_scans_the_slots_of_each_pass_before_the_next_pass() {
    let dir = tempfile::tempdir().unwrap();
    let config = DevnetConfig {
        prefill: 301,
        block_ms: 0,
        blocks_per_pass: 100,
        ..DevnetConfig::default()
    };
    let ledger = acted_with(dir.path(), config, |syncer| {
        syncer.step(&Stop::new()).unwrap();
        let r = syncer.ledger().reader().unwrap();
        assert_eq!(r.head_height().unwrap(), 100);
        // The slots those 100 blocks opened were scanned in the same step.
        let slot_of_100 = r.soft_confirmation(100).unwrap().unwrap().da_slot_height;
        assert!(r.last_scanned_l1().unwrap() >= slot_of_100 - 1);
        drop(r);
        syncer.catch_up(&Stop::new()).unwrap();
    });
    // In passes or not, the chain is the one a single pass makes.
    let whole = prefilled(tempfile::tempdir().unwrap().path(), 301);
    assert_eq!(da_view(&ledger), da_view(&whole));
}

#[test]
fn a_restart_continues_the_da_timeline_where_the_ledger_left_it() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let whole = prefilled(one.path(), 301);
    // Stopped at an odd height: the newest slot holds one block of two.
    drop(prefilled(two.path(), 151));
    let split = prefilled(two.path(), 301);
    let view = da_view(&whole);
    assert_eq!(da_view(&split), view);
    assert!(
        view.1.len() >= 17 && view.2.len() >= 4,
        "{} commitments, {} proofs",
        view.1.len(),
        view.2.len()
    );
}

fn mine(s: &mut Syncer<Devnet>, n: u64) {
    s.source_mut().mine(n);
    s.catch_up(&Stop::new()).unwrap();
}

fn commit(s: &mut Syncer<Devnet>) -> u64 {
    let slot = s.source_mut().commit_now().unwrap().unwrap();
    s.catch_up(&Stop::new()).unwrap();
    slot
}

#[test]
fn a_restart_after_an_explicit_commit_continues_on_its_slot() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut slot = 0;
    let whole = acted(one.path(), 0, |s| {
        mine(s, 7);
        slot = commit(s);
        mine(s, 13);
    });
    drop(acted(two.path(), 0, |s| {
        mine(s, 7);
        assert_eq!(commit(s), slot);
    }));
    let split = acted(two.path(), 0, |s| mine(s, 13));
    let view = da_view(&whole);
    assert_eq!(da_view(&split), view);
    assert_eq!(view.0[7], slot, "height 8 points at the commitment's slot");
    assert_eq!(view.1[0].0, slot);
    let r = split.reader().unwrap();
    assert_eq!(r.status(7).unwrap(), Some(Status::Finalized));
    assert_eq!(r.status(8).unwrap(), Some(Status::Trusted));
}

#[test]
fn a_prefill_of_300_has_proven_then_finalized_then_trusted_heights() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = prefilled(dir.path(), 300);
    let r = ledger.reader().unwrap();
    assert_eq!(r.head_height().unwrap(), 300);
    let statuses: Vec<Status> = (1..=300).map(|h| r.status(h).unwrap().unwrap()).collect();
    assert_eq!(statuses[0], Status::Proven);
    assert_eq!(statuses[299], Status::Trusted);
    assert!(statuses.contains(&Status::Finalized));
    assert!(
        statuses.windows(2).all(|w| w[0] >= w[1]),
        "statuses fall with height"
    );
    assert!(r.last_proof().unwrap().is_some());
    assert_eq!(r.last_scanned_l1().unwrap(), schedule::slot_of(300));
    assert!(r
        .commitments_on_slot(schedule::slot_of(16) + schedule::COMMITMENT_DELAY_SLOTS)
        .unwrap()
        .is_some());
}

#[test]
fn reopening_with_another_seed_is_refused_and_the_same_seed_continues() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = prefilled(dir.path(), 120);
    let other = DevnetConfig {
        seed: 99,
        ..DevnetConfig::default()
    };
    let e = Devnet::open(other, ForkTable::default(), ledger.clone())
        .err()
        .unwrap();
    assert!(e.to_string().contains("--dev-seed 1"), "{e}");
    let head_hash = ledger.reader().unwrap().hash_at(120).unwrap().unwrap();
    drop(ledger);
    let ledger = prefilled(dir.path(), 150);
    let r = ledger.reader().unwrap();
    assert_eq!(r.head_height().unwrap(), 150);
    assert_eq!(r.hash_at(120).unwrap().unwrap(), head_hash);
    assert_eq!(
        r.soft_confirmation(121).unwrap().unwrap().prev_hash,
        head_hash
    );
}

#[test]
fn a_pass_applies_the_devnets_slots_along_with_its_blocks() {
    let dir = tempfile::tempdir().unwrap();
    acted(dir.path(), 0, |syncer| {
        syncer.source_mut().mine(3000);
        let report = syncer.step(&Stop::new()).unwrap();
        assert_eq!(report.blocks, 3000);
        let r = syncer.ledger().reader().unwrap();
        let last = schedule::slot_of(3000);
        assert_eq!(r.last_scanned_l1().unwrap(), last);
        // The DA part of the pass found only the slots of the last chunk
        // left (the L2 part applies a slot once a later chunk's blocks
        // point past it): not the 1,500 the blocks opened.
        let chunk_slots = SyncConfig::default().chunk / schedule::BLOCKS_PER_SLOT;
        assert!(
            report.slots <= chunk_slots + 1,
            "{} slots left to the DA part",
            report.slots
        );
    });
}
