//! The DA part of a sync pass: the DA slots the DA source has scanned, each
//! slot's proofs and then its commitments checked against the stored chain
//! (`verify`), then applied with the ledger's write rules, many slots per
//! write transaction.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use log::debug;

use super::fetch::{fetch_ahead, stream_ahead, ChunkRanges, Fetching, Flow, Sink};
use super::{DaSide, SyncConfig, SyncError, Syncer};
use crate::chain_rules::ForkTable;
use crate::checks::{self, CommitmentVerdict, ProofVerdict, VerifyError};
use crate::ledger::{ChainTip, Ledger, LedgerRead, LedgerWriter};
use crate::progress::Progress;
use crate::proof::ProofRules;
use crate::source::{L2Source, SourceError};
use crate::stop::Stop;
use crate::types::DaSlot;

impl<L: L2Source + Send, D: DaSide<L>> Syncer<L, D> {
    /// With a DA source that reads the chain itself, at the start of a
    /// pass: while a deep reorg is being reported, the source looks at the
    /// chain again (it may have the block back) and the last slot scanned
    /// is checked against it ([`Syncer::check_last_slot`]). Otherwise the
    /// check runs after each look the pass makes ([`Syncer::da_head`]).
    pub(super) fn check_da_chain(&mut self) -> Result<(), SyncError> {
        if !self.da.separate() || self.progress.bitcoin.reorg.get().is_none() {
            return Ok(());
        }
        self.da_head().map(drop)
    }

    /// The DA source's newest slot it can scan (its look at the chain:
    /// [`crate::source::DaSource::last_scanned`]); with a DA source that reads
    /// the chain itself, then the last slot scanned checked against the
    /// chain it now follows, before anything is scanned from it.
    pub(super) fn da_head(&mut self) -> Result<u64, SyncError> {
        let separate = self.da.separate();
        let head = self
            .da
            .source(&mut self.l2)
            .last_scanned()
            .map_err(|e| da_error(separate, e))?;
        if separate {
            self.check_last_slot()?;
        }
        Ok(head)
    }

    /// The last slot scanned must still be the chain's block at its height,
    /// as the DA source saw the chain at its last look (both Bitcoin
    /// sources, bitcoind's RPC and the peers, whichever peer showed the
    /// chain). A chain that no longer has it reorganized deeper than the
    /// finality depth: [`SyncError::Reorg`], and nothing is scanned or
    /// stored until it has it again (`/health` says why).
    fn check_last_slot(&mut self) -> Result<(), SyncError> {
        let Some((slot, stored)) = self.ledger.reader()?.last_slot_hash()? else {
            return Ok(());
        };
        let chain = self
            .da
            .source(&mut self.l2)
            .block_hash(slot)
            .map_err(SyncError::Da)?;
        if chain.is_some_and(|chain| chain != stored) {
            return Err(SyncError::Reorg {
                slot,
                stored,
                chain,
            });
        }
        // A restarted bitcoind may not have loaded that far yet.
        if self.progress.bitcoin.reorg.get().is_some() && chain.is_some() {
            log::info!("DA slot {slot} is the chain's block again: scanning resumes");
            self.progress.bitcoin.reorg.set(None);
        }
        Ok(())
    }

    pub(super) fn sync_da(&mut self, stop: &Stop) -> Result<u64, SyncError> {
        let separate = self.da.separate();
        self.store_genesis_root()?;
        let da_head = self.da_head()?;
        let streams = self.da.source(&mut self.l2).streams_slots();
        self.progress.l1_source_head.fetch_max(da_head, Relaxed);
        self.progress.note_behind();
        let mut scanned = self.ledger.reader()?.last_scanned_l1()?;
        if scanned == 0 {
            match self.l2.first_slot()? {
                Some(first) => scanned = first.saturating_sub(1),
                None => return Ok(0),
            }
        }
        if scanned >= da_head || stop.is_stopped() {
            return Ok(0);
        }
        let (ledger, mut sources, progress, config) = self.parts();
        let mut sink = DaSink {
            config,
            ledger,
            progress,
            scanned,
            on_chain: separate,
            in_txn: 0,
            total: 0,
            txn: None,
            repeated_refusal: false,
        };
        let mut job = Fetching {
            source: &mut sources,
            ranges: ChunkRanges {
                next: scanned + 1,
                last: da_head,
                chunk: config.slots_per_fetch.max(1),
            },
            stop,
            depth: config.prefetch,
        };
        let result = if streams {
            // Each slot stored as it comes (the scanned height moves block
            // by block); as many waiting as ranges fetched ahead would hold.
            job.depth = config.prefetch.max(1) * job.ranges.chunk as usize;
            let fetch = |(l2, da_side): &mut (&mut L, &mut D),
                         (from, to): (u64, u64),
                         each: &mut dyn FnMut(Vec<DaSlot>) -> bool| {
                da_side
                    .source(l2)
                    .slots_each(from, to, &mut |slot| each(vec![slot]))
            };
            stream_ahead(job, fetch, &mut sink)
        } else {
            let fetch = |(l2, da_side): &mut (&mut L, &mut D), (from, to): (u64, u64)| {
                da_side.source(l2).slots(from, to)
            };
            fetch_ahead(job, fetch, &mut sink)
        };
        let (repeated, total) = (sink.repeated_refusal, sink.total);
        drop(sink);
        if total > 0 {
            debug!(
                target: "ledgerd::sync",
                "L1 scanned to {} of {da_head}",
                progress.l1_synced.load(Relaxed)
            );
        }
        self.repeated_refusal = repeated;
        result
            .map_err(|e| match e {
                SyncError::Source(e) => da_error(separate, e),
                other => other,
            })
            .map(|()| total)
    }
}

/// The DA side of a pass: checks each fetched slot's proofs and commitments
/// against the stored chain and applies it, many slots per write transaction.
struct DaSink<'a> {
    /// The fork table (which proofs carry Kumquat's fields), the proof
    /// rules, and when to commit.
    config: &'a SyncConfig,
    ledger: &'a Ledger,
    progress: &'a Progress,
    /// The newest slot applied (committed, or in the open transaction).
    scanned: u64,
    /// Slots come from the DA chain itself: what fails a check is left out.
    on_chain: bool,
    in_txn: u64,
    total: u64,
    /// The open write transaction, and since when.
    txn: Option<(LedgerWriter<'a>, Instant)>,
    /// The slot that failed was refused for this reason before (logged then).
    repeated_refusal: bool,
}

impl Sink<Vec<DaSlot>> for DaSink<'_> {
    fn take(&mut self, slots: Vec<DaSlot>) -> Result<Flow, SyncError> {
        let txn = match self.txn.take() {
            Some(txn) => txn,
            None => (self.ledger.writer()?, Instant::now()),
        };
        let (w, _) = self.txn.insert(txn);
        for slot in &slots {
            crate::os::give_way();
            if slot.number != self.scanned + 1 {
                return Err(SourceError::bad_answer(format!(
                    "asked for DA slot {}, got slot {}",
                    self.scanned + 1,
                    slot.number
                ))
                .into());
            }
            let mut skipped = Vec::new();
            let on_chain = self.on_chain.then_some(&mut skipped);
            let applied = apply_slot(w, slot, &self.config.forks, &self.config.receipts, on_chain);
            if let Err(e @ VerifyError::Failed { check, .. }) = &applied {
                let waiting = &self.progress.waiting;
                let first = waiting.refused(slot.number, check.name(), &e.to_string());
                self.repeated_refusal = !first;
            }
            let applied = applied?;
            note_skipped(self.progress, slot.number, &mut skipped);
            if !applied {
                // A commitment over heights not stored yet, or a proof that
                // names a slot no stored block points at yet: come back later.
                return Ok(Flow::Stop);
            }
            self.scanned = slot.number;
            w.set_last_scanned_l1(self.scanned)?;
            self.in_txn += 1;
        }
        if self.in_txn >= self.config.slots_per_commit.max(1) {
            self.commit()?;
        }
        Ok(Flow::More)
    }

    fn commit(&mut self) -> Result<(), SyncError> {
        let Some((w, _)) = self.txn.take() else {
            return Ok(());
        };
        w.commit()?;
        self.progress.scanned_l1(self.scanned, self.in_txn);
        if self.in_txn >= super::TRIM_AFTER {
            crate::memory::trim_now_and_then();
        }
        self.total += self.in_txn;
        self.in_txn = 0;
        Ok(())
    }

    fn due(&self) -> Option<Instant> {
        self.txn
            .as_ref()
            .map(|(_, opened)| *opened + self.config.commit_every)
    }
}

/// A failure of the DA source: its own when it is `separate` from the L2
/// source, else the L2 source's.
fn da_error(separate: bool, e: SourceError) -> SyncError {
    if separate {
        SyncError::Da(e)
    } else {
        SyncError::Source(e)
    }
}

/// Applies one DA slot inside the caller's write transaction: first its
/// proofs, then its commitments (the order Citrea handles them in). Returns
/// false (and writes nothing of the slot) when a commitment covers heights
/// not stored yet, or a proof names a DA slot whose hash is not known yet:
/// the slot is scanned again after the L2 chain catches up.
///
/// A commitment or proof that fails a check fails the slot, to be fetched
/// again (an upstream may answer better next time), unless `skipped` is
/// given: a slot read from the DA chain itself will not change, so what
/// fails is left out (never stored) and listed there, and the rest applies.
pub(super) fn apply_slot(
    w: &mut LedgerWriter<'_>,
    slot: &DaSlot,
    forks: &ForkTable,
    receipts: &ProofRules,
    mut skipped: Option<&mut Vec<VerifyError>>,
) -> Result<bool, VerifyError> {
    let mut skip = |e: VerifyError| -> Result<(), VerifyError> {
        match (&mut skipped, e) {
            (Some(list), e @ VerifyError::Failed { .. }) => {
                list.push(e);
                Ok(())
            }
            (_, e) => Err(e),
        }
    };
    let mut proven = Vec::with_capacity(slot.proofs.len());
    let mut checked_receipts = Vec::with_capacity(slot.proofs.len());
    if !slot.proofs.is_empty() {
        let head_slot = w.head_slot()?;
        for p in &slot.proofs {
            match checks::verify_proof(&*w, p, head_slot, forks) {
                Ok(ProofVerdict::Valid(ranges)) => {
                    // Its bytes must prove its output (no ledger needed: LMDB
                    // readers do not wait for this write transaction).
                    match crate::proof::verify_proof_receipt(p, receipts, forks) {
                        Ok(checked) => {
                            checked_receipts.push(checked);
                            proven.push((p, ranges))
                        }
                        Err(e) => skip(e)?,
                    }
                }
                Ok(ProofVerdict::NotYet) => return Ok(false),
                Err(e) => skip(e)?,
            }
        }
    }
    // Each checked on its own against the stored chain (Citrea's rule: no
    // order among them, gaps and repeats allowed), stored in the order the
    // source lists them.
    let mut kept = Vec::with_capacity(slot.commitments.len());
    for c in &slot.commitments {
        match checks::verify_commitment(&*w, c) {
            Ok(CommitmentVerdict::Valid) => kept.push(*c),
            Ok(CommitmentVerdict::NotYet) => return Ok(false),
            Err(e) => skip(e)?,
        }
    }
    if let Some(hash) = &slot.hash {
        w.put_da_slot_hash(slot.number, hash)?;
        w.set_last_slot_hash(slot.number, hash)?;
    }
    for (p, ranges) in &proven {
        w.apply_proof(slot.number, p, ranges)?;
    }
    crate::proof::count_checked_proofs(w, &checked_receipts)?;
    w.apply_commitments(slot.number, &kept)?;
    for (txid, raw) in &slot.chunks.found {
        w.put_bitcoin_chunk(txid, slot.number, raw)?;
    }
    // The chunks an aggregate used stay stored: a rollback to a slot
    // between them and the aggregate scans the aggregate again, and it
    // needs them (`ledger::bitcoin_chunks`).
    Ok(true)
}

/// Logs and counts what [`apply_slot`] left out of slot `number`.
pub(super) fn note_skipped(progress: &Progress, number: u64, skipped: &mut Vec<VerifyError>) {
    for e in skipped.drain(..) {
        if let VerifyError::Failed { check, .. } = &e {
            super::failure_counter(&progress.failures, *check).fetch_add(1, Relaxed);
        }
        log::warn!("DA slot {number}: left out, never stored: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::OpenOptions;
    use crate::types::{Hash, SequencerCommitment, SoftConfirmation, Status};

    /// A block whose slot is below every slot applied here (a rollback to
    /// one of them keeps it).
    fn block(height: u64) -> SoftConfirmation {
        SoftConfirmation {
            da_slot_height: 100,
            ..crate::types::sample_block(height)
        }
    }

    /// A commitment over `start..=end` of [`block`]'s hashes, found on `slot`.
    fn commitment(slot: u64, start: u64, end: u64) -> SequencerCommitment {
        let leaves: Vec<Hash> = (start..=end).map(|h| block(h).hash).collect();
        SequencerCommitment {
            found_in_l1: slot,
            merkle_root: crate::chain_rules::merkle_root(&leaves).unwrap_or_default(),
            l2_start_block_number: start,
            l2_end_block_number: end,
        }
    }

    fn slot(number: u64, commitments: Vec<SequencerCommitment>) -> DaSlot {
        DaSlot {
            number,
            hash: Some([number as u8; 32]),
            commitments,
            ..DaSlot::default()
        }
    }

    fn statuses(ledger: &Ledger, heights: std::ops::RangeInclusive<u64>) -> Vec<Status> {
        let r = ledger.reader().unwrap();
        heights
            .map(|h| r.status(h).unwrap().expect("stored"))
            .collect()
    }

    /// Whether every status in `got` is `want`.
    fn all(got: &[Status], want: Status) -> bool {
        got.iter().all(|s| *s == want)
    }

    /// Applies `s` as a slot read from the DA chain; returns what was left out.
    fn apply(ledger: &Ledger, s: &DaSlot) -> Vec<VerifyError> {
        let mut skipped = Vec::new();
        let (forks, rules) = (ForkTable::default(), ProofRules::default());
        let applied = write(ledger, |w| {
            apply_slot(w, s, &forks, &rules, Some(&mut skipped)).unwrap()
        });
        assert!(applied, "slot {} applies", s.number);
        skipped
    }

    /// Runs `f` in one write transaction of `ledger`, committed.
    fn write<T>(ledger: &Ledger, f: impl FnOnce(&mut LedgerWriter<'_>) -> T) -> T {
        let mut w = ledger.writer().unwrap();
        let done = f(&mut w);
        w.commit().unwrap();
        done
    }

    /// A ledger in a temp dir holding blocks 1..=`n`, committed.
    fn ledger_with(n: u64) -> (tempfile::TempDir, Ledger) {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(dir.path(), &OpenOptions::default()).unwrap();
        let blocks: Vec<_> = (1..=n).map(block).collect();
        write(&ledger, |w| w.store_blocks(&blocks).unwrap());
        (dir, ledger)
    }

    #[test]
    fn a_commitment_after_a_gap_is_finalized_the_gap_stays_trusted_and_a_repeat_is_recorded() {
        let (_dir, ledger) = ledger_with(90);

        assert!(apply(&ledger, &slot(101, vec![commitment(101, 1, 30)])).is_empty());
        // 31..66 with a root that is not the stored chain's: left out.
        let mut bad = commitment(102, 31, 66);
        bad.merkle_root[0] ^= 1;
        let left_out = apply(&ledger, &slot(102, vec![bad]));
        assert_eq!(left_out.len(), 1);
        assert!(
            left_out[0].to_string().contains("merkle root"),
            "{}",
            left_out[0]
        );
        // The next valid one covers 75..86: Finalized, though 31..74 never were.
        let next = commitment(103, 75, 86);
        assert!(apply(&ledger, &slot(103, vec![next])).is_empty());
        let got = statuses(&ledger, 1..=90);
        assert!(all(&got[..30], Status::Finalized), "{got:?}");
        assert!(all(&got[30..74], Status::Trusted), "{got:?}");
        assert!(all(&got[74..86], Status::Finalized), "{got:?}");
        assert!(all(&got[86..], Status::Trusted), "{got:?}");
        let r = ledger.reader().unwrap();
        assert_eq!(r.commitments_on_slot(103).unwrap(), Some(vec![next]));
        assert_eq!(r.commitments_on_slot(102).unwrap(), None);
        drop(r);

        // Proven heights stay Proven when their range is committed again,
        // and the repeat is listed on its own slot; the gap can still be
        // committed later, in any order on one slot.
        write(&ledger, |w| w.prove_ranges(&[(1, 30)]).unwrap());
        let again = commitment(104, 1, 30);
        let late = [commitment(104, 67, 74), commitment(104, 31, 66)];
        assert!(apply(&ledger, &slot(104, vec![late[0], again, late[1]])).is_empty());
        let got = statuses(&ledger, 1..=90);
        assert!(all(&got[..30], Status::Proven), "{got:?}");
        assert!(all(&got[30..86], Status::Finalized), "{got:?}");
        let r = ledger.reader().unwrap();
        assert_eq!(
            r.commitments_on_slot(104).unwrap(),
            Some(vec![late[0], again, late[1]])
        );
        assert_eq!(r.commitment_count().unwrap(), 5);
    }

    #[test]
    fn a_commitment_that_is_no_range_of_heights_is_refused_and_one_over_missing_heights_waits() {
        let (_dir, ledger) = ledger_with(10);
        let w = ledger.writer().unwrap();
        let r = &w;
        let mut backwards = commitment(5, 4, 4);
        backwards.l2_start_block_number = 6;
        let e = checks::verify_commitment(r, &backwards)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("check commitment_range failed: commitment on slot 5 covers 6..=4"),
            "{e}"
        );
        let mut zero = commitment(5, 1, 3);
        zero.l2_start_block_number = 0;
        assert!(checks::verify_commitment(r, &zero).is_err());
        assert_eq!(
            checks::verify_commitment(r, &commitment(5, 8, 11)).unwrap(),
            CommitmentVerdict::NotYet
        );
        assert_eq!(
            checks::verify_commitment(r, &commitment(5, 8, 10)).unwrap(),
            CommitmentVerdict::Valid
        );
    }

    #[test]
    fn a_rollback_between_a_proofs_chunks_and_its_aggregate_keeps_the_chunks() {
        use crate::ledger::BitcoinChunkRead;
        use crate::rollback::{rollback_in, Target};
        let (_dir, ledger) = ledger_with(10);
        let (txid, raw) = ([0xc1; 32], vec![0x02, 0x00, 0xaa, 0xbb]);
        let mut found = slot(101, vec![]);
        found.chunks.found.push((txid, raw.clone()));
        apply(&ledger, &found);
        // The aggregate on slot 103 used it.
        let mut aggregate = slot(103, vec![]);
        aggregate.chunks.used.push(txid);
        apply(&ledger, &aggregate);
        write(&ledger, |w| w.set_last_scanned_l1(103).unwrap());
        let chunk = || ledger.reader().unwrap().bitcoin_chunk(&txid).unwrap();
        assert_eq!(
            chunk(),
            Some((101, raw.clone())),
            "kept after its aggregate"
        );

        // Back to slot 102: the aggregate's slot is scanned again and
        // needs the chunk, whose slot is kept.
        write(&ledger, |w| rollback_in(w, Target::L1(102)).unwrap());
        assert_eq!(ledger.reader().unwrap().last_scanned_l1().unwrap(), 102);
        assert_eq!(chunk(), Some((101, raw)));

        // Back below the chunk's own slot: it goes with it (the scan finds
        // it again there).
        write(&ledger, |w| rollback_in(w, Target::L1(100)).unwrap());
        assert_eq!(chunk(), None);
    }
}
