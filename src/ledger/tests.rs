//! The ledger against a real LMDB environment in a temporary directory.

use std::path::Path;

use lmdb::{Cursor, DatabaseFlags, Environment, EnvironmentFlags, Transaction, WriteFlags};

use super::tables::{
    Meta, Proofs, ScByHashPrefix, SoftConfirmations, StatusHeights, StatusTable, Table,
};
use super::*;
use crate::types::{SequencerCommitment, SoftConfirmation, Status, VerifiedBatchProof};
use walk::LedgerWalk;

fn open(dir: &Path) -> Ledger {
    Ledger::open(dir, &OpenOptions::default()).unwrap()
}

/// A new ledger in a new temporary directory (kept while the ledger is used).
fn fresh() -> (tempfile::TempDir, Ledger) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = open(dir.path());
    (dir, ledger)
}

/// Options that open a ledger read-only when `read_only`.
fn options(read_only: bool) -> OpenOptions {
    OpenOptions {
        read_only,
        ..OpenOptions::default()
    }
}

/// Why opening `dir` (read-only when `read_only`) fails, in words.
fn refusal(dir: &Path, read_only: bool) -> String {
    Ledger::open(dir, &options(read_only))
        .unwrap_err()
        .to_string()
}

use crate::types::sample_block as block;

fn commitment(start: u64, end: u64) -> SequencerCommitment {
    crate::types::sample_commitment(5, start, end)
}

fn proof(last: u64, slot: u64) -> VerifiedBatchProof {
    crate::types::sample_proof(slot, last)
}

/// Writes `value`'s bytes under `key` of table `T`, as they are.
fn put_raw<T: Table>(w: &mut LedgerWriter<'_>, key: &T::Key, value: &[u8]) {
    w.put::<T>(key, value, WriteFlags::empty()).unwrap();
}

fn store(ledger: &Ledger, heights: impl IntoIterator<Item = u64>) {
    write(ledger, |w| {
        for h in heights {
            w.put_soft_confirmation(&block(h)).unwrap();
        }
    });
}

/// A new ledger holding the blocks at `heights`.
fn holding(heights: impl IntoIterator<Item = u64>) -> (tempfile::TempDir, Ledger) {
    let (dir, ledger) = fresh();
    store(&ledger, heights);
    (dir, ledger)
}

/// Runs `f` in one write transaction, commits it and gives back what `f` gave.
fn write<T>(ledger: &Ledger, f: impl FnOnce(&mut LedgerWriter<'_>) -> T) -> T {
    let mut w = ledger.writer().unwrap();
    let out = f(&mut w);
    w.commit().unwrap();
    out
}

/// Closes `ledger` and opens its data dir again.
fn reopen(ledger: Ledger) -> Ledger {
    let dir = ledger.path().to_path_buf();
    drop(ledger);
    open(&dir)
}

/// The data dir's LMDB environment, opened raw: not upgraded, not checked.
fn raw_env(dir: &Path) -> Environment {
    Environment::new().set_max_dbs(16).open(dir).unwrap()
}

/// The raw entries of table `name` of the data dir, in key order, read
/// without opening it as a ledger.
fn raw_table(dir: &Path, name: &str) -> Entries {
    let env = raw_env(dir);
    let db = env.open_db(Some(name)).unwrap();
    let txn = env.begin_ro_txn().unwrap();
    entries(&txn, db)
}

/// Closes `ledger` as layout `format` left it: without table `T`, which
/// that layout did not have.
fn without_table<T: Table>(ledger: Ledger, format: u64) {
    let mut w = ledger.writer().unwrap();
    // SAFETY: no handle of the table is used again in this process.
    unsafe { w.txn.drop_db(T::db(&ledger.dbs)).unwrap() };
    w.put_meta(tables::META_FORMAT, &format).unwrap();
    w.commit().unwrap();
}

#[test]
fn ledger_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Ledger>();
}

#[test]
fn head_height_of_empty_ledger_is_zero_and_reads_are_none() {
    let (_dir, ledger) = fresh();
    let r = ledger.reader().unwrap();
    assert_eq!(r.head_height().unwrap(), 0);
    assert_eq!(r.soft_confirmation(1).unwrap(), None);
    assert_eq!(r.hash_at(1).unwrap(), None);
    assert_eq!(r.status(1).unwrap(), None);
    assert_eq!(r.last_proof().unwrap(), None);
    assert_eq!(r.genesis_state_root().unwrap(), None);
    assert_eq!(r.last_scanned_l1().unwrap(), 0);
    assert_eq!(r.commitment_count().unwrap(), 0);
    assert_eq!(r.finalized_height().unwrap(), 0);
    assert_eq!(r.proven_height().unwrap(), 0);
    assert_eq!(r.commitments_on_slot(3).unwrap(), None);
    let range = r.soft_confirmation_range(1, 3).unwrap();
    assert_eq!(range, vec![None, None, None]);
}

#[test]
fn stored_blocks_read_back_with_hash_index_and_trusted_status() {
    let (_dir, ledger) = holding(1..=20);
    let mut other_key = block(21);
    other_key.pub_key = [9; 32];
    store(&ledger, [21]);
    let mut w = ledger.writer().unwrap();
    assert!(matches!(
        w.put_soft_confirmation(&other_key),
        Err(LedgerError::AlreadyStored(21))
    ));
    other_key.l2_height = 22;
    other_key.hash = [22; 32];
    w.put_soft_confirmation(&other_key).unwrap();
    w.commit().unwrap();

    let r = ledger.reader().unwrap();
    assert_eq!(r.head_height().unwrap(), 22);
    for h in 1..=21 {
        let b = block(h);
        assert_eq!(r.soft_confirmation(h).unwrap(), Some(b.clone()));
        assert_eq!(r.height_by_hash(&b.hash).unwrap(), Some(h));
        assert_eq!(r.hash_at(h).unwrap(), Some(b.hash));
        assert_eq!(r.state_root_at(h).unwrap(), Some(b.state_root));
        assert_eq!(r.status(h).unwrap(), Some(Status::Trusted));
    }
    // A block signed by another key keeps its own key.
    assert_eq!(r.soft_confirmation(22).unwrap(), Some(other_key));
    assert_eq!(r.height_by_hash(&[0xee; 32]).unwrap(), None);
}

#[test]
fn put_of_an_existing_height_is_refused_and_changes_nothing() {
    let (_dir, ledger) = holding(1..=3);
    let mut w = ledger.writer().unwrap();
    let mut changed = block(2);
    changed.txs.clear();
    for h in [1, 2, 3] {
        let mut b = changed.clone();
        b.l2_height = h;
        let e = w.put_soft_confirmation(&b).unwrap_err();
        assert!(matches!(e, LedgerError::AlreadyStored(x) if x == h), "{e}");
        assert!(e.to_string().contains("already stored"));
    }
    w.commit().unwrap();
    let r = ledger.reader().unwrap();
    assert_eq!(r.soft_confirmation(2).unwrap(), Some(block(2)));
}

#[test]
fn out_of_order_puts_fall_back_from_append() {
    let (_dir, ledger) = holding([5, 1, 3, 10, 2]);
    let r = ledger.reader().unwrap();
    assert_eq!(r.head_height().unwrap(), 10);
    for h in [1, 2, 3, 5, 10] {
        assert_eq!(r.soft_confirmation(h).unwrap(), Some(block(h)));
        assert_eq!(r.status(h).unwrap(), Some(Status::Trusted));
    }
    assert_eq!(r.soft_confirmation(4).unwrap(), None);
}

#[test]
fn range_returns_none_holes_and_exact_length() {
    let (_dir, ledger) = holding([2, 3, 5, 9]);
    let r = ledger.reader().unwrap();
    let range = |start, end| r.soft_confirmation_range(start, end).unwrap();
    let got = range(1, 10);
    assert_eq!(got.len(), 10);
    let expect: Vec<Option<SoftConfirmation>> = (1..=10)
        .map(|h| [2, 3, 5, 9].contains(&h).then(|| block(h)))
        .collect();
    assert_eq!(got, expect);
    assert_eq!(range(5, 5), vec![Some(block(5))]);
    assert_eq!(range(10, 12), vec![None, None, None]);
    assert_eq!(range(6, 2), vec![]);
    assert_eq!(range(u64::MAX - 1, u64::MAX), vec![None, None]);
}

#[test]
fn writer_writes_are_invisible_to_a_concurrent_reader_until_commit() {
    let (_dir, ledger) = holding([1]);
    let before = ledger.reader().unwrap();
    let mut w = ledger.writer().unwrap();
    w.put_soft_confirmation(&block(2)).unwrap();
    w.set_last_scanned_l1(44).unwrap();
    // The writer sees its own writes.
    assert_eq!(w.head_height().unwrap(), 2);
    assert_eq!(w.soft_confirmation(2).unwrap(), Some(block(2)));
    assert_eq!(w.last_scanned_l1().unwrap(), 44);
    // A reader taken meanwhile does not.
    let during = ledger.reader().unwrap();
    assert_eq!(during.head_height().unwrap(), 1);
    assert_eq!(during.soft_confirmation(2).unwrap(), None);
    assert_eq!(during.last_scanned_l1().unwrap(), 0);
    w.commit().unwrap();
    // Old snapshots stay as they were; new ones see the commit.
    assert_eq!(before.head_height().unwrap(), 1);
    assert_eq!(during.soft_confirmation(2).unwrap(), None);
    let after = ledger.reader().unwrap();
    assert_eq!(after.head_height().unwrap(), 2);
    assert_eq!(after.last_scanned_l1().unwrap(), 44);
}

#[test]
fn reader_on_another_thread_sees_only_committed_writes() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = std::sync::Arc::new(open(dir.path()));
    let seen = || {
        let l2 = ledger.clone();
        std::thread::spawn(move || l2.reader().unwrap().head_height().unwrap())
            .join()
            .unwrap()
    };
    let mut w = ledger.writer().unwrap();
    w.put_soft_confirmation(&block(1)).unwrap();
    assert_eq!(seen(), 0);
    w.commit().unwrap();
    assert_eq!(seen(), 1);
}

#[test]
fn dropping_a_writer_without_commit_writes_nothing() {
    let (_dir, ledger) = fresh();
    {
        let mut w = ledger.writer().unwrap();
        w.put_soft_confirmation(&block(1)).unwrap();
        w.add_commitments(5, &[commitment(1, 1)]).unwrap();
        w.put_proof(6, &proof(1, 6)).unwrap();
        w.set_genesis_state_root(&[4; 32]).unwrap();
        w.set_meta_bytes("seed", b"x").unwrap();
    }
    let r = ledger.reader().unwrap();
    assert_eq!(r.head_height().unwrap(), 0);
    assert_eq!(r.soft_confirmation(1).unwrap(), None);
    assert_eq!(r.commitments_on_slot(5).unwrap(), None);
    assert_eq!(r.commitment_count().unwrap(), 0);
    assert_eq!(r.last_proof().unwrap(), None);
    assert_eq!(r.genesis_state_root().unwrap(), None);
    assert_eq!(r.meta_bytes("seed").unwrap(), None);
}

#[test]
fn two_readers_on_one_thread_at_once_work() {
    let (_dir, ledger) = holding([1]);
    let a = ledger.reader().unwrap();
    let b = ledger.reader().unwrap();
    assert_eq!(a.head_height().unwrap(), b.head_height().unwrap());
}

#[test]
fn raise_status_never_lowers_and_tracks_finalized_and_proven() {
    let (_dir, ledger) = holding(1..=10);
    let mut w = ledger.writer().unwrap();
    w.raise_status(1, 6, Status::Proven).unwrap();
    w.raise_status(4, 8, Status::Finalized).unwrap();
    w.raise_status(1, 10, Status::Trusted).unwrap();
    // Heights above the head are skipped, not created.
    w.raise_status(9, 50, Status::Finalized).unwrap();
    w.raise_status(7, 3, Status::Proven).unwrap(); // empty range
    w.commit().unwrap();
    let r = ledger.reader().unwrap();
    let got: Vec<Status> = (1..=10).map(|h| r.status(h).unwrap().unwrap()).collect();
    assert_eq!(got[..6], [Status::Proven; 6]);
    assert_eq!(got[6..], [Status::Finalized; 4]);
    assert_eq!(r.status(11).unwrap(), None);
    assert_eq!(r.finalized_height().unwrap(), 10);
    assert_eq!(r.proven_height().unwrap(), 6);

    // A lower range later does not lower the meta heights.
    write(&ledger, |w| w.raise_status(1, 2, Status::Proven).unwrap());
    let r = ledger.reader().unwrap();
    assert_eq!(r.proven_height().unwrap(), 6);
    assert_eq!(r.finalized_height().unwrap(), 10);
}

#[test]
fn commitments_append_per_slot_and_count() {
    let (_dir, ledger) = fresh();
    let mut w = ledger.writer().unwrap();
    w.add_commitments(5, &[commitment(1, 10)]).unwrap();
    w.add_commitments(5, &[commitment(11, 20), commitment(21, 30)])
        .unwrap();
    w.add_commitments(6, &[]).unwrap();
    w.add_commitments(7, &[commitment(31, 40)]).unwrap();
    w.put_da_slot_hash(5, &[0x55; 32]).unwrap();
    w.commit().unwrap();
    let r = ledger.reader().unwrap();
    let on = |slot| r.commitments_on_slot(slot).unwrap();
    let five = vec![commitment(1, 10), commitment(11, 20), commitment(21, 30)];
    assert_eq!(on(5), Some(five));
    assert_eq!(on(6), None);
    assert_eq!(on(7), Some(vec![commitment(31, 40)]));
    assert_eq!(r.commitment_count().unwrap(), 4);
    assert_eq!(r.slot_by_hash(&[0x55; 32]).unwrap(), Some(5));
    assert_eq!(r.slot_by_hash(&[0x56; 32]).unwrap(), None);
}

#[test]
fn every_proof_on_a_slot_is_kept_in_order_and_last_proof_is_the_last_of_the_highest_slot() {
    let (_dir, ledger) = fresh();
    let mut w = ledger.writer().unwrap();
    w.put_proof(9, &proof(10, 9)).unwrap();
    w.put_proof(9, &proof(20, 9)).unwrap();
    w.put_proof(4, &proof(5, 4)).unwrap();
    // The writer sees its own appends.
    let nine = vec![proof(10, 9), proof(20, 9)];
    assert_eq!(w.proofs_on_slot(9).unwrap(), nine);
    w.commit().unwrap();
    let r = ledger.reader().unwrap();
    assert_eq!(r.proofs_on_slot(9).unwrap(), nine);
    assert_eq!(r.proofs_on_slot(4).unwrap(), vec![proof(5, 4)]);
    assert_eq!(r.proofs_on_slot(5).unwrap(), vec![]);
    assert_eq!(r.last_proof_on_slot(9).unwrap(), Some(proof(20, 9)));
    assert_eq!(r.last_proof_on_slot(5).unwrap(), None);
    assert_eq!(r.last_proof().unwrap(), Some(proof(20, 9)));
    let all = vec![(4, proof(5, 4)), (9, proof(10, 9)), (9, proof(20, 9))];
    assert_eq!(r.all_proofs().unwrap(), all);
    drop(r);
    // A third proof in a later transaction goes after the two, and a proof
    // on a lower slot does not become the last one.
    let mut w = ledger.writer().unwrap();
    w.put_proof(9, &proof(30, 9)).unwrap();
    w.put_proof(2, &proof(1, 2)).unwrap();
    w.commit().unwrap();
    let r = ledger.reader().unwrap();
    let nine = vec![proof(10, 9), proof(20, 9), proof(30, 9)];
    assert_eq!(r.proofs_on_slot(9).unwrap(), nine);
    assert_eq!(r.last_proof().unwrap(), Some(proof(30, 9)));
}

#[test]
fn meta_values_round_trip_and_free_entries_cannot_clobber_settings() {
    let (_dir, ledger) = fresh();
    let mut w = ledger.writer().unwrap();
    w.set_genesis_state_root(&[4; 32]).unwrap();
    w.set_last_scanned_l1(812_000).unwrap();
    w.set_sequencer_pubkey(&[7; 32]).unwrap();
    w.set_meta_bytes("devnet_seed", &[1, 2, 3]).unwrap();
    w.set_meta_bytes("last_l1", b"not a number").unwrap();
    w.commit().unwrap();
    let r = ledger.reader().unwrap();
    assert_eq!(r.genesis_state_root().unwrap(), Some([4; 32]));
    assert_eq!(r.last_scanned_l1().unwrap(), 812_000);
    assert_eq!(r.sequencer_pubkey().unwrap(), Some([7; 32]));
    assert_eq!(r.meta_bytes("devnet_seed").unwrap(), Some(vec![1, 2, 3]));
    assert_eq!(r.meta_bytes("missing").unwrap(), None);
}

#[test]
fn typed_meta_entries_read_what_earlier_builds_wrote_as_free_entries() {
    let (_dir, ledger) = fresh();
    let mut w = ledger.writer().unwrap();
    // How earlier builds wrote them: free entries, u64 big-endian.
    w.set_meta_bytes("devnet_seed", &7u64.to_be_bytes())
        .unwrap();
    w.set_meta_bytes("blocks_without_bodies", &5u64.to_be_bytes())
        .unwrap();
    w.commit().unwrap();
    let mut w = ledger.writer().unwrap();
    assert_eq!(w.devnet_seed().unwrap(), Some(7));
    w.add_blocks_without_bodies(3).unwrap();
    w.commit().unwrap();
    let r = ledger.reader().unwrap();
    assert_eq!(r.blocks_without_bodies().unwrap(), 8);
    let free = r.meta_bytes("blocks_without_bodies").unwrap();
    assert_eq!(free, Some(8u64.to_be_bytes().to_vec()));
}

#[test]
fn a_ledger_keeps_the_fork_table_it_was_pinned_to_and_refuses_another() {
    use crate::chain_rules::ForkTable;
    let (_dir, ledger) = fresh();
    let testnet = ForkTable::kumquat_from(5_546_000);
    let mut w = ledger.writer().unwrap();
    assert_eq!(w.fork_table().unwrap(), None);
    w.pin_fork_table(&testnet).unwrap();
    w.commit().unwrap();
    let ledger = reopen(ledger);
    let stored = ledger.reader().unwrap().fork_table().unwrap();
    assert_eq!(stored, Some(testnet));
    let mut w = ledger.writer().unwrap();
    w.pin_fork_table(&testnet).unwrap();
    let e = w.pin_fork_table(&ForkTable::KUMQUAT_ONLY).unwrap_err();
    assert!(matches!(e, LedgerError::OtherForkTable { .. }));
    let text = e.to_string();
    let tables =
        "verified with Kumquat from height 5546000 (Genesis below), not Kumquat from height 0";
    let flag = "pass --kumquat-height 5546000";
    assert!(text.contains(tables) && text.contains(flag), "{text}");
    assert!(!text.contains('\n'), "one line: {text}");
}

#[test]
fn a_ledger_with_blocks_from_before_fork_tables_counts_as_kumquat_only() {
    use crate::chain_rules::ForkTable;
    let (_dir, ledger) = holding([1]);
    let mut w = ledger.writer().unwrap();
    assert!(w.pin_fork_table(&ForkTable::kumquat_from(10)).is_err());
    w.pin_fork_table(&ForkTable::KUMQUAT_ONLY).unwrap();
    w.commit().unwrap();
    let stored = ledger.reader().unwrap().fork_table().unwrap();
    assert_eq!(stored, Some(ForkTable::KUMQUAT_ONLY));
}

#[test]
fn a_corrupt_fork_table_entry_is_reported_not_guessed() {
    let (_dir, ledger) = fresh();
    let mut w = ledger.writer().unwrap();
    put_raw::<Meta>(&mut w, tables::META_FORK_TABLE.name, &[2, 0, 0]);
    let e = w.fork_table().unwrap_err().to_string();
    assert!(e.contains("ledger setting \"forks\" is corrupt"), "{e}");
}

#[test]
fn data_survives_reopening() {
    let (dir, ledger) = holding(1..=3);
    let ledger = reopen(ledger);
    let r = ledger.reader().unwrap();
    assert_eq!(r.head_height().unwrap(), 3);
    assert_eq!(r.soft_confirmation(3).unwrap(), Some(block(3)));
    assert!(ledger.disk_size() > 0);
    assert_eq!(ledger.path(), dir.path());
}

#[test]
fn an_ephemeral_ledger_is_written_through_its_map_and_its_disk_size_is_what_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let opts = OpenOptions {
        no_sync: true,
        ..OpenOptions::default()
    };
    {
        let ledger = Ledger::open(dir.path(), &opts).unwrap();
        store(&ledger, 1..=300);
        let file = std::fs::metadata(dir.path().join("data.mdb"))
            .unwrap()
            .len();
        // Written through the map: the (sparse) file is as long as the map.
        assert_eq!(file, opts.map_size as u64);
        let size = ledger.disk_size();
        assert!(size > 0 && size < 16 << 20, "disk_size {size}");
    }
    // What it wrote is there when it is opened again the ordinary way.
    let ledger = open(dir.path());
    let r = ledger.reader().unwrap();
    assert_eq!(r.head_height().unwrap(), 300);
    assert_eq!(r.soft_confirmation(300).unwrap(), Some(block(300)));
}

#[test]
fn read_only_open_sees_commits_of_another_handle_and_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let writer = open(dir.path());
    store(&writer, [1]);
    let ro = Ledger::open(dir.path(), &options(true)).unwrap();
    let read = |h| ro.reader().unwrap().soft_confirmation(h).unwrap();
    assert_eq!(read(1), Some(block(1)));
    let mut w = writer.writer().unwrap();
    w.put_soft_confirmation(&block(2)).unwrap();
    assert_eq!(ro.reader().unwrap().head_height().unwrap(), 1);
    w.commit().unwrap();
    assert_eq!(ro.reader().unwrap().head_height().unwrap(), 2);
    assert_eq!(read(2), Some(block(2)));
    let e = ro.writer().err().unwrap();
    assert!(e.to_string().contains("read-only"), "{e}");
}

#[test]
fn read_only_open_of_a_missing_ledger_fails_without_creating_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let e = refusal(&missing, true);
    assert!(e.starts_with("ledger at "), "{e}");
    assert!(!missing.exists());
}

#[test]
fn corrupt_stored_values_give_corrupt_errors() {
    let (_dir, ledger) = holding([1, 2]);
    let mut w = ledger.writer().unwrap();
    let good = get::<_, SoftConfirmations>(&w, &2)
        .unwrap()
        .unwrap()
        .to_vec();
    for n in [0, 10, good.len() - 1] {
        put_raw::<SoftConfirmations>(&mut w, &2, &good[..n]);
        let e = w.soft_confirmation(2).unwrap_err();
        assert!(matches!(e, LedgerError::Corrupt { .. }), "{e}");
        let text = e.to_string();
        assert!(
            text.starts_with("stored soft confirmation 2 is corrupt: "),
            "{e}"
        );
        assert!(w.soft_confirmation_range(1, 3).is_err());
    }
    put_raw::<StatusTable>(&mut w, &1, &[9]);
    assert!(matches!(w.status(1), Err(LedgerError::Corrupt { .. })));
    assert!(w.raise_status(1, 1, Status::Proven).is_err());
    put_raw::<Meta>(&mut w, tables::META_LAST_L1.name, &[1, 2]);
    let e = w.last_scanned_l1().unwrap_err();
    assert!(e.to_string().starts_with("stored ledger setting"), "{e}");
    w.put_proof(3, &proof(1, 3)).unwrap();
    put_raw::<Proofs>(&mut w, &3, &[2, 1]);
    let corrupt = "stored verified batch proof list of DA slot 3 is corrupt: ";
    for e in [
        w.proofs_on_slot(3).unwrap_err(),
        w.last_proof_on_slot(3).unwrap_err(),
        w.last_proof().unwrap_err(),
        w.put_proof(3, &proof(2, 3)).unwrap_err(),
    ] {
        assert!(e.to_string().starts_with(corrupt), "{e}");
    }
}

#[test]
fn typical_block_encoding_is_close_to_its_raw_field_bytes() {
    let b = block(100_000);
    // Raw field bytes: 8 + 8 + 32*5 + 64 + 32 + 120 (txs) + 16 (fee) + 8.
    let raw = 8 + 8 + 32 * 5 + 64 + 32 + 120 + 16 + 8;
    assert_eq!(raw, 416);
    let stored = codec::encode_soft_confirmation(&b, Some(&b.pub_key)).len();
    assert!(stored <= 360, "{stored}");
    let with_key = codec::encode_soft_confirmation(&b, None).len();
    assert_eq!(with_key, stored + 32);
}

/// `block(height)` with a hash whose first 8 bytes are `prefix` and whose
/// last byte is `tail` (the hash index keeps only the first 8 bytes).
fn block_with_hash(height: u64, prefix: [u8; 8], tail: u8) -> SoftConfirmation {
    let mut b = block(height);
    b.hash = [tail; 32];
    b.hash[..8].copy_from_slice(&prefix);
    b
}

#[test]
fn hashes_sharing_an_eight_byte_prefix_are_each_found_and_a_third_is_not() {
    let (_dir, ledger) = holding(1..=3);
    let prefix = [0xc0, 0x11, 0x1d, 0xe0, 0, 0, 0, 7];
    let first = block_with_hash(4, prefix, 0x01);
    let second = block_with_hash(9, prefix, 0x02);
    let third = block_with_hash(0, prefix, 0x03).hash;
    assert_eq!(first.hash[..8], second.hash[..8]);
    assert_ne!(first.hash, second.hash);
    let mut w = ledger.writer().unwrap();
    w.put_soft_confirmation(&first).unwrap();
    w.put_soft_confirmation(&second).unwrap();
    // The writer sees both through its own uncommitted writes.
    assert_eq!(w.height_by_hash(&first.hash).unwrap(), Some(4));
    assert_eq!(w.height_by_hash(&second.hash).unwrap(), Some(9));
    w.commit().unwrap();
    let r = ledger.reader().unwrap();
    assert_eq!(r.height_by_hash(&first.hash).unwrap(), Some(4));
    assert_eq!(r.height_by_hash(&second.hash).unwrap(), Some(9));
    assert_eq!(r.height_by_hash(&third).unwrap(), None);
    // Both stay under the one prefix key, as two entries.
    let entries = ledger
        .table_stats()
        .unwrap()
        .tables
        .iter()
        .find(|t| t.name == "sc_by_hash_prefix")
        .map(|t| t.entries);
    assert_eq!(entries, Some(5));
    for h in 1..=3 {
        assert_eq!(r.height_by_hash(&block(h).hash).unwrap(), Some(h));
    }
}

#[test]
fn many_hashes_under_one_prefix_stored_out_of_order_are_all_found_after_reopening() {
    let (_dir, ledger) = fresh();
    let prefix = [0xab; 8];
    // Heights in descending order: the duplicates are kept sorted by
    // height, not by insertion, and the lookup walks them all.
    let heights = [40u64, 31, 25, 12, 3];
    let mut w = ledger.writer().unwrap();
    for (i, &h) in heights.iter().enumerate() {
        w.put_soft_confirmation(&block_with_hash(h, prefix, i as u8))
            .unwrap();
    }
    w.commit().unwrap();
    let ledger = reopen(ledger);
    let r = ledger.reader().unwrap();
    let find = |prefix, tail| {
        let hash = block_with_hash(0, prefix, tail).hash;
        r.height_by_hash(&hash).unwrap()
    };
    for (i, &h) in heights.iter().enumerate() {
        assert_eq!(find(prefix, i as u8), Some(h), "height {h}");
    }
    assert_eq!(find(prefix, 0x77), None);
    // The same tail under another prefix is another hash.
    assert_eq!(find([0xac; 8], 0), None);
}

#[test]
fn a_hash_index_entry_pointing_at_a_missing_block_is_not_an_answer() {
    let (_dir, ledger) = fresh();
    let b = block_with_hash(7, [0x42; 8], 0x01);
    let mut w = ledger.writer().unwrap();
    // An index entry whose block is not stored (as a torn write would
    // leave, were writes not transactional): skipped, the real one found.
    put_raw::<ScByHashPrefix>(&mut w, &b.hash, &codec::encode_u64(3));
    assert_eq!(w.height_by_hash(&b.hash).unwrap(), None);
    w.put_soft_confirmation(&b).unwrap();
    assert_eq!(w.height_by_hash(&b.hash).unwrap(), Some(7));
    // A value that is not a u64 is reported as corrupt, naming the hash.
    let c = block_with_hash(8, [0x43; 8], 0x01);
    put_raw::<ScByHashPrefix>(&mut w, &c.hash, &[1, 2, 3]);
    let e = w.height_by_hash(&c.hash).unwrap_err();
    let hash = hex::encode(c.hash);
    let corrupt = format!("stored height of soft confirmation hash {hash} is corrupt");
    assert!(e.to_string().starts_with(&corrupt), "{e}");
}

/// Writes a data dir the way a version-1 ledgerd did: its tables (with
/// `sc_by_hash` keyed by whole hashes) and, unless `format` is `None`,
/// meta `format`.
fn write_old_layout(dir: &Path, format: Option<u64>) {
    let env = raw_env(dir);
    for name in [
        "soft_confirmations",
        "sc_by_hash",
        "status",
        "commitments",
        "da_slots",
        "proofs",
    ] {
        env.create_db(Some(name), DatabaseFlags::empty()).unwrap();
    }
    let meta = env.create_db(Some("meta"), DatabaseFlags::empty()).unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    if let Some(v) = format {
        txn.put(meta, &"format", &codec::encode_u64(v), WriteFlags::empty())
            .unwrap();
    }
    txn.commit().unwrap();
}

fn table_exists(dir: &Path, name: &str) -> bool {
    let env = Environment::new()
        .set_max_dbs(16)
        .set_flags(EnvironmentFlags::READ_ONLY)
        .open(dir)
        .unwrap();
    env.open_db(Some(name)).is_ok()
}

#[test]
fn a_data_dir_of_the_older_layout_is_refused_untouched_with_one_clear_line() {
    for format in [Some(1), None] {
        let dir = tempfile::tempdir().unwrap();
        write_old_layout(dir.path(), format);
        for read_only in [false, true] {
            let e = refusal(dir.path(), read_only);
            assert!(
                e.contains("this data dir was written by an older ledgerd layout"),
                "{e}"
            );
            assert!(e.ends_with("re-sync it into a new --data-dir"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(!table_exists(dir.path(), ScByHashPrefix::NAME));
        assert!(table_exists(dir.path(), "sc_by_hash"));
    }
}

#[test]
fn a_data_dir_of_a_newer_layout_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_old_layout(dir.path(), Some(tables::FORMAT_VERSION + 1));
    let e = refusal(dir.path(), false);
    assert!(e.contains("newer ledgerd layout"), "{e}");
}

#[test]
fn a_new_ledger_records_the_current_layout_and_reopens() {
    let (dir, ledger) = fresh();
    let format = meta(&ledger.reader().unwrap(), tables::META_FORMAT).unwrap();
    assert_eq!(format, Some(tables::FORMAT_VERSION));
    drop(ledger);
    assert!(!table_exists(dir.path(), "sc_by_hash"));
    let ledger = open(dir.path());
    store(&ledger, [1]);
    let r = ledger.reader().unwrap();
    assert_eq!(r.height_by_hash(&block(1).hash).unwrap(), Some(1));
}

/// Raw (key, value) entries of one table, in key order.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Every entry of every table, raw, in key order.
fn dump(ledger: &Ledger) -> Vec<(&'static str, Entries)> {
    let r = ledger.reader().unwrap();
    let dbs = ledger.dbs.named();
    dbs.map(|(name, db)| (name, entries(&r.txn, db))).to_vec()
}

/// The raw entries of one table, in key order.
fn entries(txn: &impl Transaction, db: lmdb::Database) -> Entries {
    let mut cursor = txn.open_ro_cursor(db).unwrap();
    cursor
        .iter_start()
        .map(|item| {
            let (k, v) = item.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

/// A version-2 data dir as version 2 wrote it: blocks, statuses,
/// commitments, DA slot hashes and one proof per slot written through
/// today's writer (their bytes did not change from version 2 to 3), then
/// each `proofs` value replaced by the bare proof version 2 stored
/// (`codec::encode_proof`) and meta `format` set to 2.
fn write_v2_ledger(dir: &Path) -> Vec<(u64, VerifiedBatchProof)> {
    let ledger = open(dir);
    store(&ledger, 1..=30);
    let proofs = vec![(800_001, proof(10, 800_001)), (800_002, proof(20, 800_002))];
    let mut w = ledger.writer().unwrap();
    w.apply_commitments(800_001, &[commitment(1, 10), commitment(11, 20)])
        .unwrap();
    w.put_da_slot_hash(800_001, &[0x55; 32]).unwrap();
    for (slot, p) in &proofs {
        w.apply_proof(*slot, p, &[(1, 10)]).unwrap();
    }
    w.set_last_scanned_l1(800_003).unwrap();
    for (slot, p) in &proofs {
        put_raw::<Proofs>(&mut w, slot, &codec::encode_proof(p));
    }
    w.put_meta(tables::META_FORMAT, &2).unwrap();
    w.commit().unwrap();
    proofs
}

#[test]
fn a_version_2_data_dir_is_upgraded_at_open_and_answers_as_it_did() {
    let dir = tempfile::tempdir().unwrap();
    let proofs = write_v2_ledger(dir.path());
    // What version 2 answered: the bare value of each slot, decoded.
    let before: Vec<(u64, VerifiedBatchProof)> = raw_table(dir.path(), "proofs")
        .iter()
        .map(|(k, v)| {
            (
                tables::decode_u64_key(k).unwrap(),
                codec::decode_proof(v).unwrap(),
            )
        })
        .collect();
    assert_eq!(before, proofs);

    let ledger = open_upgraded(dir.path());
    let r = ledger.reader().unwrap();
    for (slot, p) in &before {
        assert_eq!(r.proofs_on_slot(*slot).unwrap(), vec![p.clone()]);
        assert_eq!(r.last_proof_on_slot(*slot).unwrap().as_ref(), Some(p));
    }
    assert_eq!(r.last_proof().unwrap(), Some(proofs[1].1.clone()));
    assert_eq!(r.all_proofs().unwrap(), before);
    assert_eq!(r.head_height().unwrap(), 30);
    assert_eq!(r.status(5).unwrap(), Some(Status::Proven));
    assert_eq!(r.status(15).unwrap(), Some(Status::Finalized));
    assert_eq!(r.commitment_count().unwrap(), 2);
    drop(r);
    // Upgraded once: a second open changes nothing, and new proofs append.
    let upgraded = dump(&ledger);
    let ledger = reopen(ledger);
    assert_eq!(dump(&ledger), upgraded);
    write(&ledger, |w| {
        w.put_proof(800_002, &proof(30, 800_002)).unwrap()
    });
    let on_slot = ledger.reader().unwrap().proofs_on_slot(800_002).unwrap();
    assert_eq!(on_slot, vec![proofs[1].1.clone(), proof(30, 800_002)]);
}

#[test]
fn the_upgrade_from_version_2_rewrites_only_the_proofs_and_the_version() {
    let dir = tempfile::tempdir().unwrap();
    write_v2_ledger(dir.path());
    // Read the version-2 bytes without upgrading: a raw environment.
    let raw_before: Vec<_> = tables::ALL
        .iter()
        .map(|(name, _)| (*name, raw_table(dir.path(), name)))
        .collect();
    let ledger = open(dir.path());
    let after = dump(&ledger);
    assert_eq!(after.len(), raw_before.len());
    for ((name, old), (name_after, new)) in raw_before.iter().zip(&after) {
        assert_eq!(name, name_after);
        match *name {
            "proofs" => {
                assert_eq!(old.len(), new.len());
                for ((k, v), (k2, v2)) in old.iter().zip(new) {
                    assert_eq!(k, k2);
                    assert_eq!(v2, &codec::proof_list_of_one(v).unwrap());
                }
            }
            "meta" => {
                let format = tables::META_FORMAT.name.as_bytes().to_vec();
                let strip = |entries: &[(Vec<u8>, Vec<u8>)]| -> Entries {
                    entries
                        .iter()
                        .filter(|(k, _)| *k != format)
                        .cloned()
                        .collect()
                };
                assert_eq!(strip(old), strip(new));
            }
            // Rebuilt by the upgrade as the write rules wrote it, but at
            // the upgrade's time (the last 8 bytes of a value).
            "status_heights" => assert_eq!(without_times(old), without_times(new)),
            _ => assert_eq!(old, new, "table {name}"),
        }
    }
}

#[test]
fn a_version_2_data_dir_opened_read_only_is_refused_untouched_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    write_v2_ledger(dir.path());
    let e = refusal(dir.path(), true);
    assert!(e.contains("layout version 2"), "{e}");
    assert!(
        e.contains("start ledgerd on it once read-write (not serve-readonly) to upgrade it"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    // Still version 2: the read-write open after it upgrades it.
    drop(open_upgraded(dir.path()));
    assert!(Ledger::open(dir.path(), &options(true)).is_ok());
}

#[test]
fn a_version_2_proof_that_does_not_decode_stops_the_upgrade_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write_v2_ledger(dir.path());
    {
        let env = raw_env(dir.path());
        let db = env.open_db(Some("proofs")).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        txn.put(db, &Proofs::key(&800_002), &[0xff; 5], WriteFlags::empty())
            .unwrap();
        txn.commit().unwrap();
    }
    let e = refusal(dir.path(), false);
    assert!(
        e.contains(&format!(
            "upgrading the data dir from layout version 2 to {} failed, and it was left as it \
             was: stored verified batch proof list of DA slot 800002 is corrupt",
            tables::FORMAT_VERSION
        )),
        "{e}"
    );
    // The first slot's value was not rewritten either: one transaction.
    let first = raw_table(dir.path(), "proofs").remove(0);
    let key = Proofs::key(&800_001).to_vec();
    assert_eq!(first, (key, codec::encode_proof(&proof(10, 800_001))));
    let format = raw_table(dir.path(), Meta::NAME);
    let format = format.iter().find(|(k, _)| k == b"format");
    assert_eq!(format.map(|(_, v)| v), Some(&codec::encode_u64(2).to_vec()));
}

#[test]
fn a_version_3_data_dir_gets_the_empty_bitcoin_headers_table_and_nothing_else_changes() {
    let (dir, ledger) = holding(1..=5);
    // As version 3 left it: no bitcoin_headers table, format 3.
    without_table::<tables::BitcoinHeaders>(ledger, 3);
    assert!(!table_exists(dir.path(), tables::BitcoinHeaders::NAME));
    let e = refusal(dir.path(), true);
    assert!(e.contains("layout version 3"), "{e}");
    let ledger = open_upgraded(dir.path());
    let r = ledger.reader().unwrap();
    assert_eq!(r.head_height().unwrap(), 5);
    assert_eq!(r.bitcoin_header_tip().unwrap(), None);
    drop(r);
    let genesis = crate::headers::BitcoinNetwork::Regtest.genesis();
    let header = StoredHeader {
        height: 0,
        header: genesis,
        chainwork: genesis.work(),
    };
    write(&ledger, |w| w.put_bitcoin_header(&header).unwrap());
    let r = ledger.reader().unwrap();
    assert_eq!(r.bitcoin_header_tip().unwrap(), Some(0));
    assert_eq!(r.bitcoin_header(0).unwrap().unwrap().header, genesis);
    drop(r);
    drop(ledger);
    assert!(Ledger::open(dir.path(), &options(true)).is_ok());
}

/// `status_heights` entries without their times (the last 8 bytes).
fn without_times(entries: &[(Vec<u8>, Vec<u8>)]) -> Entries {
    entries
        .iter()
        .map(|(k, v)| (k.clone(), v[..v.len().saturating_sub(8)].to_vec()))
        .collect()
}

/// The raw `status_heights` entries of a ledger, without their times.
fn frontier_entries(ledger: &Ledger) -> Entries {
    let r = ledger.reader().unwrap();
    without_times(&entries(&r.txn, StatusHeights::db(&ledger.dbs)))
}

/// A chain with commitments on several slots (one of them two at once, one
/// repeating a range, one after a gap) and proofs, through the write rules.
fn write_chain_with_a_frontier(ledger: &Ledger) {
    store(ledger, 1..=60);
    let mut w = ledger.writer().unwrap();
    w.put_da_slot_hash(800_001, &[0x51; 32]).unwrap();
    w.put_da_slot_hash(800_003, &[0x53; 32]).unwrap();
    w.apply_commitments(800_001, &[commitment(1, 10), commitment(11, 20)])
        .unwrap();
    w.apply_commitments(800_002, &[commitment(11, 20)]).unwrap();
    // 21..=30 never committed: a gap.
    w.apply_commitments(800_003, &[commitment(31, 40)]).unwrap();
    let mut p = proof(20, 800_004);
    p.proof_output.da_slot_hash = [0x51; 32];
    p.proof_output.sequencer_commitments_range = (0, 1);
    w.apply_proof(800_004, &p, &[(1, 10), (11, 20)]).unwrap();
    let mut p = proof(40, 800_005);
    p.proof_output.da_slot_hash = [0x53; 32];
    p.proof_output.sequencer_commitments_range = (0, 0);
    w.apply_proof(800_005, &p, &[(31, 40)]).unwrap();
    w.apply_commitments(800_006, &[commitment(41, 50)]).unwrap();
    w.commit().unwrap();
}

#[test]
fn the_frontier_index_follows_the_write_rules_slot_by_slot() {
    let (_dir, ledger) = fresh();
    write_chain_with_a_frontier(&ledger);
    let r = ledger.reader().unwrap();
    let at = |which, l1| {
        r.frontier_at_l1(which, l1)
            .unwrap()
            .map(|m| (m.l1_height, m.l2_height, m.commitment_index))
    };
    use Frontier::{Committed, Proven};
    assert_eq!(at(Committed, 800_000), None);
    assert_eq!(at(Committed, 800_001), Some((800_001, 20, 2)));
    // A range committed again does not move the frontier.
    assert_eq!(at(Committed, 800_002), Some((800_001, 20, 2)));
    // After the gap: 40, the fourth commitment stored.
    assert_eq!(at(Committed, 800_003), Some((800_003, 40, 4)));
    assert_eq!(at(Proven, 800_003), None);
    assert_eq!(at(Proven, 800_004), Some((800_004, 20, 2)));
    assert_eq!(at(Proven, 800_005), Some((800_005, 40, 4)));
    assert_eq!(at(Committed, u64::MAX), Some((800_006, 50, 5)));
    assert_eq!(at(Proven, u64::MAX), Some((800_005, 40, 4)));
    let now = r.frontier(Committed).unwrap().unwrap();
    assert_eq!(now.l2_height, 50);
    assert_eq!(now.l2_height, r.finalized_height().unwrap());
    let proven = r.frontier(Proven).unwrap().unwrap();
    assert_eq!(proven.l2_height, r.proven_height().unwrap());
    // The gap stays Trusted below the frontier.
    assert_eq!(r.status(25).unwrap(), Some(Status::Trusted));
}

#[test]
fn a_version_3_data_dir_gets_the_frontier_index_the_write_rules_would_have_written() {
    let dir = tempfile::tempdir().unwrap();
    let written = {
        let ledger = open(dir.path());
        write_chain_with_a_frontier(&ledger);
        let written = frontier_entries(&ledger);
        assert_eq!(written.len(), 5, "3 committed and 2 proven moves");
        // As version 3 left it: no index, layout 3.
        let mut w = ledger.writer().unwrap();
        w.txn.clear_db(StatusHeights::db(&ledger.dbs)).unwrap();
        w.put_meta(tables::META_FORMAT, &3).unwrap();
        w.commit().unwrap();
        written
    };
    let ledger = open_upgraded(dir.path());
    assert_eq!(frontier_entries(&ledger), written);
    // And rebuilding it again (as after removing records) changes nothing.
    assert_eq!(write(&ledger, |w| w.rebuild_frontier().unwrap()), 5);
    assert_eq!(frontier_entries(&ledger), written);
}

#[test]
fn a_version_6_data_dir_gets_an_empty_address_book_and_keeps_its_chain() {
    let (dir, ledger) = holding([1, 2]);
    // As version 6 left it: no address book, layout 6.
    without_table::<tables::BitcoinPeers>(ledger, 6);
    assert!(!table_exists(dir.path(), tables::BitcoinPeers::NAME));
    let ledger = open_upgraded(dir.path());
    let r = ledger.reader().unwrap();
    assert_eq!(r.head_height().unwrap(), 2);
    assert!(r.bitcoin_peers().unwrap().is_empty());
    drop(r);
    // The book is written and read back, IPv4 and IPv6 alike.
    let v4: std::net::SocketAddr = "10.1.2.3:8333".parse().unwrap();
    let v6: std::net::SocketAddr = "[2001:db8::1]:18444".parse().unwrap();
    let entry = book_entry(0x0809);
    let mut w = ledger.writer().unwrap();
    w.put_bitcoin_peer(&v4, &entry).unwrap();
    w.put_bitcoin_peer(&v6, &BookEntry::default()).unwrap();
    w.commit().unwrap();
    let back = ledger.reader().unwrap().bitcoin_peers().unwrap();
    // IPv4-mapped keys (::ffff:a.b.c.d) sort before 2001:...
    assert_eq!(back, vec![(v4, entry), (v6, BookEntry::default())]);
    write(&ledger, |w| w.delete_bitcoin_peer(&v4).unwrap());
    let back = ledger.reader().unwrap().bitcoin_peers().unwrap();
    assert_eq!(back, vec![(v6, BookEntry::default())]);
}

/// Opens `dir` read-write, which upgrades it, and checks that it now has
/// the current layout.
fn open_upgraded(dir: &Path) -> Ledger {
    let ledger = open(dir);
    let format = meta(&ledger.reader().unwrap(), tables::META_FORMAT).unwrap();
    assert_eq!(format, Some(tables::FORMAT_VERSION));
    ledger
}

/// An address book entry with every field set, and `services`.
fn book_entry(services: u64) -> BookEntry {
    BookEntry {
        source: 2,
        ban_reason: 3,
        failures: 7,
        last_success: 1_700_000_000,
        last_attempt: 1_700_000_100,
        banned_until: 1_700_086_500,
        services,
    }
}

#[test]
fn a_version_7_address_book_gets_unknown_services_and_keeps_the_rest() {
    let (dir, ledger) = holding([1, 2]);
    let v4: std::net::SocketAddr = "10.1.2.3:8333".parse().unwrap();
    let entry = book_entry(0);
    // As version 7 left it: 30-byte entries, layout 7.
    let mut w = ledger.writer().unwrap();
    let old = codec::encode_book_entry(&entry)[..30].to_vec();
    put_raw::<tables::BitcoinPeers>(&mut w, &v4, &old);
    w.put_meta(tables::META_FORMAT, &7).unwrap();
    w.commit().unwrap();
    let e = ledger.reader().unwrap().bitcoin_peers().unwrap_err();
    assert!(e.to_string().contains("38 bytes, this one 30"), "{e}");
    drop(ledger);
    let ledger = open_upgraded(dir.path());
    let r = ledger.reader().unwrap();
    assert_eq!(r.head_height().unwrap(), 2);
    assert_eq!(r.bitcoin_peers().unwrap(), vec![(v4, entry)]);
}
