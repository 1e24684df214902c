//! Fixtures: `ledgerd import` and `ledgerd export`.
//!
//! A fixture is a JSON Lines file: one object per line with one key that
//! names the record, its value in the RPC's own JSON shape:
//!
//! ```text
//! {"genesisStateRoot":[180,253,...]}                 ledger_getL2GenesisStateRoot's answer
//! {"softConfirmation":{"l2Height":1,...}}            ledger_getSoftConfirmationByNumber's answer
//! {"daSlot":{"height":1008,"hash":"61fa..."}}        a DA slot hash (for ..OnSlotByHash)
//! {"commitment":{"foundInL1":1008,...}}              one entry of ledger_getSequencerCommitmentsOnSlot*
//! {"verifiedBatchProof":{"proof":{...}}}             ledger_getVerifiedBatchProofsBySlotHeight's answer
//! {"status":{"l2Height":1,"status":"Proven"}}        ledger_getSoftConfirmationStatus, with its height
//! {"lastScannedL1Height":1099}                       ledger_getLastScannedL1Height's answer
//! ```
//!
//! Blank lines and lines starting with `#` are skipped. Records apply in file
//! order (soft confirmations before the commitments and proofs that cover
//! them), except `status` lines, which are settled last. An import checks
//! every line first, then writes everything in one LMDB write transaction:
//! a failed import writes nothing.
//!
//! Verified imports (the default) run the sync thread's chain rules
//! ([`crate::sync::verify`]): blocks link to the stored head and are signed
//! by the sequencer, commitments' Merkle roots match, proofs prove the
//! commitments they name by Citrea's rule; statuses come from the commitments and proofs, and a `status`
//! line must agree with them. `--no-verify` stores what the file says, and
//! `status` lines raise statuses directly.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::io::{self, BufRead, Write};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::chain::ForkTable;
use crate::json;
use crate::ledger::walk::LedgerWalk;
use crate::ledger::{Ledger, LedgerError, LedgerRead, LedgerWriter};
use crate::proof::ReceiptRules;
use crate::sync::verify::{self, CommitmentVerdict, VerifyError};
use crate::types::{Hash, SequencerCommitment, SoftConfirmation, Status, VerifiedBatchProof};
use crate::wire;

/// Bad lines reported at most (the count of the rest is given).
const MAX_REPORTED: usize = 20;
/// Soft confirmations verified together (one signature batch).
const BATCH: usize = 1000;

/// One problem with one line of a fixture (lines count from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Why an import or an export failed. A failed import has written nothing.
#[derive(Debug)]
pub enum FixtureError {
    /// The input could not be read or the output written.
    Io { what: String, source: io::Error },
    /// The ledger could not be read or written.
    Ledger(LedgerError),
    /// Lines that are not records (all are checked before anything is written).
    BadLines { errors: Vec<LineError>, more: usize },
    /// A record that broke a chain rule or clashes with the ledger.
    Rejected(LineError),
    /// An export range that cannot be exported.
    Range(String),
}

impl fmt::Display for FixtureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FixtureError::Io { what, source } => write!(f, "cannot {what}: {source}"),
            FixtureError::Ledger(e) => write!(f, "{e}"),
            FixtureError::BadLines { errors, more } => {
                write!(
                    f,
                    "{} bad line(s), nothing was imported:",
                    errors.len() + more
                )?;
                for e in errors {
                    write!(f, "\n  {e}")?;
                }
                if *more > 0 {
                    write!(f, "\n  ... and {more} more")?;
                }
                Ok(())
            }
            FixtureError::Rejected(e) => write!(f, "{e}; nothing was imported"),
            FixtureError::Range(what) => f.write_str(what),
        }
    }
}

impl std::error::Error for FixtureError {}

impl From<LedgerError> for FixtureError {
    fn from(e: LedgerError) -> Self {
        FixtureError::Ledger(e)
    }
}

/// One record of a fixture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    GenesisStateRoot(Hash),
    SoftConfirmation(Box<SoftConfirmation>),
    DaSlot { height: u64, hash: Hash },
    Commitment(SequencerCommitment),
    VerifiedBatchProof(Box<VerifiedBatchProof>),
    Status { l2_height: u64, status: Status },
    LastScannedL1Height(u64),
}

const TAGS: &str = "genesisStateRoot, softConfirmation, daSlot, commitment, verifiedBatchProof, status, lastScannedL1Height";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StatusLine {
    l2_height: u64,
    status: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DaSlotLine {
    height: u64,
    hash: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RootLine {
    Bytes(Vec<u8>),
    Hex(String),
}

/// serde's positions are inside the record's value, not the file's line.
fn tidy(e: impl fmt::Display) -> String {
    e.to_string().replace(" at line 1 column ", " at column ")
}

/// Parses one line: `Ok(None)` for a blank or `#` comment line.
pub fn parse_line(text: &str) -> Result<Option<Record>, String> {
    let text = text.trim();
    if text.is_empty() || text.starts_with('#') {
        return Ok(None);
    }
    let object: BTreeMap<String, &RawValue> = serde_json::from_str(text).map_err(|e| {
        format!(
            "not a JSON object ({}); each line is one object such as {{\"softConfirmation\":{{...}}}}",
            tidy(e)
        )
    })?;
    if object.len() != 1 {
        let keys: Vec<&str> = object.keys().map(String::as_str).collect();
        return Err(format!(
            "a record is an object with exactly one key, its kind ({TAGS}); this one has {} keys {keys:?}",
            keys.len()
        ));
    }
    let Some((tag, raw)) = object.into_iter().next() else {
        return Err("empty object".into());
    };
    let raw = raw.get();
    let bad = |e: String| format!("{tag}: {e}");
    let record = match tag.as_str() {
        "genesisStateRoot" => {
            let root = match serde_json::from_str::<RootLine>(raw) {
                Ok(RootLine::Bytes(b)) => {
                    let n = b.len();
                    b.try_into()
                        .map_err(|_| bad(format!("must be 32 byte values (0..=255), got {n}")))?
                }
                Ok(RootLine::Hex(s)) => wire::hash("genesisStateRoot", &s).map_err(|e| bad(e.0))?,
                Err(_) => {
                    return Err(bad(
                        "must be an array of 32 byte values (0..=255) or a 64-digit hex string"
                            .into(),
                    ))
                }
            };
            Record::GenesisStateRoot(root)
        }
        "softConfirmation" => Record::SoftConfirmation(Box::new(
            wire::soft_confirmation(raw).map_err(|e| bad(tidy(e)))?,
        )),
        "daSlot" => {
            let line: DaSlotLine = serde_json::from_str(raw).map_err(|e| {
                bad(format!(
                    "{}; write {{\"height\":n,\"hash\":\"64 hex digits\"}}",
                    tidy(e)
                ))
            })?;
            Record::DaSlot {
                height: line.height,
                hash: wire::hash("hash", &line.hash).map_err(|e| bad(e.0))?,
            }
        }
        "commitment" => {
            let mut list = wire::commitment_list(&format!("[{raw}]")).map_err(|e| bad(tidy(e)))?;
            match list.pop() {
                Some(c) => Record::Commitment(c),
                None => return Err(bad("must be a commitment object, not null".into())),
            }
        }
        "verifiedBatchProof" => match wire::verified_batch_proof(raw).map_err(|e| bad(tidy(e)))? {
            Some(p) => Record::VerifiedBatchProof(Box::new(p)),
            None => return Err(bad(
                "must be {\"proof\":{\"proof\":[..],\"proofOutput\":{..},\"height\":n}}, not null"
                    .into(),
            )),
        },
        "status" => {
            let line: StatusLine = serde_json::from_str(raw).map_err(|e| {
                bad(format!(
                    "{}; write {{\"l2Height\":n,\"status\":\"Trusted\"|\"Finalized\"|\"Proven\"}}",
                    tidy(e)
                ))
            })?;
            let status = match line.status.as_str() {
                "Trusted" => Status::Trusted,
                "Finalized" => Status::Finalized,
                "Proven" => Status::Proven,
                other => {
                    return Err(bad(format!(
                        "status is {other:?}; it must be \"Trusted\", \"Finalized\" or \"Proven\""
                    )))
                }
            };
            Record::Status {
                l2_height: line.l2_height,
                status,
            }
        }
        "lastScannedL1Height" => Record::LastScannedL1Height(
            serde_json::from_str(raw)
                .map_err(|_| bad("must be a non-negative whole number".into()))?,
        ),
        other => {
            return Err(format!(
                "unknown record kind {other:?}; a line's one key is one of {TAGS}"
            ))
        }
    };
    Ok(Some(record))
}

/// Writes one record as one line (with its newline).
pub fn write_record(out: &mut Vec<u8>, record: &Record) {
    let tag = |out: &mut Vec<u8>, name: &str| {
        out.extend_from_slice(b"{\"");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\":");
    };
    match record {
        Record::GenesisStateRoot(root) => {
            tag(out, "genesisStateRoot");
            json::write_byte_array(out, root);
        }
        Record::SoftConfirmation(sc) => {
            tag(out, "softConfirmation");
            json::write_soft_confirmation(out, sc);
        }
        Record::DaSlot { height, hash } => {
            tag(out, "daSlot");
            out.extend_from_slice(b"{\"height\":");
            json::write_u64(out, *height);
            out.extend_from_slice(b",\"hash\":");
            json::write_hex(out, hash);
            out.push(b'}');
        }
        Record::Commitment(c) => {
            tag(out, "commitment");
            json::write_commitment(out, c);
        }
        Record::VerifiedBatchProof(p) => {
            tag(out, "verifiedBatchProof");
            json::write_verified_batch_proof(out, p);
        }
        Record::Status { l2_height, status } => {
            tag(out, "status");
            out.extend_from_slice(b"{\"l2Height\":");
            json::write_u64(out, *l2_height);
            out.extend_from_slice(b",\"status\":");
            json::write_status(out, *status);
            out.push(b'}');
        }
        Record::LastScannedL1Height(h) => {
            tag(out, "lastScannedL1Height");
            json::write_u64(out, *h);
        }
    }
    out.extend_from_slice(b"}\n");
}

/// How to import.
#[derive(Clone, Copy, Debug)]
pub struct ImportOptions {
    /// Check every record by the chain rules (false: `--no-verify`).
    pub verify: bool,
    /// Which fork's rules verify which height; the data dir is pinned to it
    /// and refuses another (`--network`, `--kumquat-height`).
    pub forks: ForkTable,
    /// The key blocks must carry (`--sequencer-pubkey`, or the network's);
    /// else the ledger's pinned key, else the first block's.
    pub sequencer_pubkey: Option<[u8; 32]>,
    /// Which batch-proof receipts prove heights (`--network`, `--allow-fake-proofs`).
    pub receipts: ReceiptRules,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            verify: true,
            forks: ForkTable::default(),
            sequencer_pubkey: None,
            receipts: ReceiptRules::default(),
        }
    }
}

/// What an import stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub soft_confirmations: u64,
    pub commitments: u64,
    pub proofs: u64,
    pub statuses: u64,
    pub da_slots: u64,
    /// The head height after the import.
    pub head: u64,
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "imported {} soft confirmations, {} commitments, {} proofs, {} statuses, {} DA slot hashes; head is {}",
            self.soft_confirmations, self.commitments, self.proofs, self.statuses, self.da_slots, self.head
        )
    }
}

/// Reads every line of `input`; all bad lines are reported together.
pub fn read_records(input: impl BufRead) -> Result<Vec<(usize, Record)>, FixtureError> {
    let mut records = Vec::new();
    let mut errors = Vec::new();
    let mut more = 0;
    for (i, line) in input.lines().enumerate() {
        let line_no = i + 1;
        let text = line.map_err(|source| FixtureError::Io {
            what: format!("read line {line_no} of the fixture"),
            source,
        })?;
        match parse_line(&text) {
            Ok(Some(r)) => records.push((line_no, r)),
            Ok(None) => {}
            Err(message) if errors.len() < MAX_REPORTED => errors.push(LineError {
                line: line_no,
                message,
            }),
            Err(_) => more += 1,
        }
    }
    if errors.is_empty() {
        Ok(records)
    } else {
        Err(FixtureError::BadLines { errors, more })
    }
}

/// Imports a fixture into `ledger`: all of it, in one write transaction, or
/// nothing.
pub fn import(
    ledger: &Ledger,
    input: impl BufRead,
    options: ImportOptions,
) -> Result<ImportReport, FixtureError> {
    let records = read_records(input)?;
    let mut w = ledger.writer()?;
    w.pin_fork_table(&options.forks)?;
    let mut report = ImportReport::default();
    let mut batch: Vec<(usize, SoftConfirmation)> = Vec::new();
    let mut statuses = Vec::new();
    for (line, record) in records {
        if let Record::SoftConfirmation(sc) = record {
            batch.push((line, *sc));
            if batch.len() >= BATCH {
                put_blocks(&mut w, &mut batch, options, &mut report)?;
            }
            continue;
        }
        put_blocks(&mut w, &mut batch, options, &mut report)?;
        let reject = |message: String| FixtureError::Rejected(LineError { line, message });
        match record {
            Record::SoftConfirmation(_) => {}
            Record::GenesisStateRoot(root) => match w.genesis_state_root()? {
                Some(stored) if stored != root => {
                    return Err(reject(format!(
                        "genesisStateRoot {} differs from the ledger's {}; import into an empty data dir",
                        hex::encode(root),
                        hex::encode(stored)
                    )))
                }
                Some(_) => {}
                None => w.set_genesis_state_root(&root)?,
            },
            Record::DaSlot { height, hash } => {
                w.put_da_slot_hash(height, &hash)?;
                report.da_slots += 1;
            }
            Record::Commitment(c) => {
                put_commitment(&mut w, &c, options).map_err(|e| e.at(line))?;
                report.commitments += 1;
            }
            Record::VerifiedBatchProof(p) => {
                put_proof(&mut w, &p, options).map_err(|e| e.at(line))?;
                report.proofs += 1;
            }
            Record::Status { l2_height, status } => statuses.push((line, l2_height, status)),
            Record::LastScannedL1Height(h) => {
                if h > w.last_scanned_l1()? {
                    w.set_last_scanned_l1(h)?;
                }
            }
        }
    }
    put_blocks(&mut w, &mut batch, options, &mut report)?;
    for (line, height, status) in statuses {
        settle_status(&mut w, height, status, options).map_err(|e| e.at(line))?;
        report.statuses += 1;
    }
    report.head = w.head_height()?;
    w.commit()?;
    Ok(report)
}

/// A record's failure before its line number is known.
enum Refusal {
    Message(String),
    Ledger(LedgerError),
}

impl Refusal {
    fn at(self, line: usize) -> FixtureError {
        match self {
            Refusal::Message(message) => FixtureError::Rejected(LineError { line, message }),
            Refusal::Ledger(e) => FixtureError::Ledger(e),
        }
    }
}

impl From<LedgerError> for Refusal {
    fn from(e: LedgerError) -> Self {
        Refusal::Ledger(e)
    }
}

impl From<VerifyError> for Refusal {
    fn from(e: VerifyError) -> Self {
        match e {
            VerifyError::Ledger(e) => Refusal::Ledger(e),
            e => Refusal::Message(format!(
                "{e}; fix the record, or import with --no-verify to store it unchecked"
            )),
        }
    }
}

/// Stores the pending run of soft confirmations (verified first unless
/// `--no-verify`), and the DA slot hash each points at.
fn put_blocks(
    w: &mut LedgerWriter<'_>,
    batch: &mut Vec<(usize, SoftConfirmation)>,
    options: ImportOptions,
    report: &mut ImportReport,
) -> Result<(), FixtureError> {
    let Some((_, first)) = batch.first() else {
        return Ok(());
    };
    let key = match options.sequencer_pubkey.or(w.sequencer_pubkey()?) {
        Some(k) => k,
        None => {
            // As the sync thread does: the first block's key is pinned.
            let k = first.pub_key;
            w.set_sequencer_pubkey(&k)?;
            k
        }
    };
    let lines: Vec<usize> = batch.iter().map(|(l, _)| *l).collect();
    let blocks: Vec<SoftConfirmation> = batch.drain(..).map(|(_, sc)| sc).collect();
    if options.verify {
        let head = w.head_height()?;
        let head_hash = if head == 0 {
            crate::types::ZERO_HASH
        } else {
            w.hash_at(head)?.unwrap_or_default()
        };
        let verdict = verify::verify_blocks(
            &blocks,
            (head, head_hash),
            &key,
            &options.forks,
            verify::BlockRules::default(),
        );
        let good = verdict.good;
        if let Some(e) = verdict.failure {
            let mut refusal = Refusal::from(e);
            if let Refusal::Message(m) = &mut refusal {
                if good == 0 && head > 0 && blocks[0].l2_height <= head {
                    m.push_str(&format!(
                        " (the ledger already holds heights up to {head}: a fixture continues the stored chain)"
                    ));
                }
            }
            return Err(refusal.at(lines[good]));
        }
    }
    let mut last_slot = None;
    for (sc, line) in blocks.iter().zip(lines) {
        match w.put_soft_confirmation(sc) {
            Ok(()) => {}
            Err(LedgerError::AlreadyStored(h)) => {
                return Err(FixtureError::Rejected(LineError {
                    line,
                    message: format!(
                    "soft confirmation {h} is already stored (in the ledger or on an earlier line)"
                ),
                }))
            }
            Err(e) => return Err(e.into()),
        }
        if last_slot != Some(sc.da_slot_height) {
            w.put_da_slot_hash(sc.da_slot_height, &sc.da_slot_hash)?;
            last_slot = Some(sc.da_slot_height);
        }
        report.soft_confirmations += 1;
    }
    Ok(())
}

fn put_commitment(
    w: &mut LedgerWriter<'_>,
    c: &SequencerCommitment,
    options: ImportOptions,
) -> Result<(), Refusal> {
    let (start, end) = (c.l2_start_block_number, c.l2_end_block_number);
    if options.verify {
        let finalized = w.finalized_height()?;
        if verify::verify_commitment(&*w, c, finalized)? == CommitmentVerdict::NotYet {
            return Err(Refusal::Message(format!(
                "commitment on slot {} covers {start}..={end}, but the ledger holds heights only up to {} at this line; put the soft confirmations it covers before it",
                c.found_in_l1,
                w.head_height()?
            )));
        }
    } else if end < start {
        return Err(Refusal::Message(format!(
            "commitment on slot {} covers {start}..={end}: the end is below the start",
            c.found_in_l1
        )));
    }
    w.raise_status(start, end, Status::Finalized)?;
    w.add_commitments(c.found_in_l1, std::slice::from_ref(c))?;
    Ok(())
}

fn put_proof(
    w: &mut LedgerWriter<'_>,
    p: &VerifiedBatchProof,
    options: ImportOptions,
) -> Result<(), Refusal> {
    let ranges = if options.verify {
        // Every block is on earlier lines: a slot hash not known by now never will be.
        match verify::verify_proof(&*w, p, u64::MAX, &options.forks)? {
            verify::ProofVerdict::Valid(ranges) => {
                let checked =
                    crate::proof::verify_proof_receipt(p, &options.receipts, &options.forks)?;
                crate::proof::count_fake_proofs(w, u64::from(checked.is_fake()))?;
                ranges
            }
            verify::ProofVerdict::NotYet => {
                return Err(Refusal::Message(format!(
                    "proof on slot {} comes before the soft confirmations (which set the \
                     sequencer key); put them before it",
                    p.height
                )))
            }
        }
    } else {
        // Unchecked: the heights the proof names, if the ledger can say;
        // the fixture's status lines say the rest.
        match verify::proof_commitments(&*w, p) {
            Ok(Some(proven)) => proven
                .iter()
                .map(|c| (c.l2_start_block_number, c.l2_end_block_number))
                .collect(),
            _ => Vec::new(),
        }
    };
    for (start, end) in ranges {
        w.raise_status(start, end, Status::Proven)?;
    }
    w.put_proof(p.height, p)?;
    Ok(())
}

fn settle_status(
    w: &mut LedgerWriter<'_>,
    height: u64,
    claimed: Status,
    options: ImportOptions,
) -> Result<(), Refusal> {
    if w.status(height)?.is_none() {
        return Err(Refusal::Message(format!(
            "status of height {height}, but no soft confirmation {height} is in the ledger or the fixture"
        )));
    }
    if !options.verify {
        w.raise_status(height, height, claimed)?;
    }
    let stored = w.status(height)?.unwrap_or(Status::Trusted);
    if stored == claimed {
        return Ok(());
    }
    Err(Refusal::Message(if options.verify {
        let check = if claimed > stored {
            match claimed {
                Status::Proven => "a verified proof covering it",
                _ => "a commitment covering it",
            }
        } else {
            "no commitment or proof that raises it"
        };
        format!(
            "height {height} is {stored} by the commitments and proofs of the ledger and the fixture, not {claimed}: fix the line (it needs {check}), or import with --no-verify"
        )
    } else {
        format!(
            "height {height} is already {stored}, and a status never moves backwards; fix the line to {stored} or higher"
        )
    }))
}

/// What an export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportReport {
    pub from: u64,
    pub to: u64,
    pub records: u64,
}

/// Writes heights `from..=to` (`to` defaults to the head, and is capped at
/// it) with everything that belongs to them, from one read snapshot:
///
/// - the genesis state root;
/// - the soft confirmations, then the DA slot hashes not implied by them;
/// - in DA-slot order, the commitments and proofs that end in the range
///   (a commitment ending after `to` belongs to a later export);
/// - the status of every height: as stored when the range reaches the head;
///   otherwise as the exported records justify it (a height finalized by a
///   commitment that ends after `to` is exported as Trusted, so that the
///   fixture still imports with verification);
/// - the last scanned L1 height, when the range reaches the head.
pub fn export(
    ledger: &Ledger,
    from: u64,
    to: Option<u64>,
    out: &mut impl Write,
) -> Result<ExportReport, FixtureError> {
    let r = ledger.reader()?;
    let head = r.head_height()?;
    let from = from.max(1);
    let to = to.unwrap_or(head).min(head);
    if from > to && head > 0 {
        return Err(FixtureError::Range(format!(
            "nothing to export: --from {from} is above {to}, the last height asked for (the ledger's head is {head})"
        )));
    }
    let mut report = ExportReport {
        from,
        to,
        records: 0,
    };
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut emit = |buf: &mut Vec<u8>, record: &Record, force: bool| -> Result<(), FixtureError> {
        write_record(buf, record);
        report.records += 1;
        if force || buf.len() >= 60 * 1024 {
            out.write_all(buf).map_err(|source| FixtureError::Io {
                what: "write the export".into(),
                source,
            })?;
            buf.clear();
        }
        Ok(())
    };
    if let Some(root) = r.genesis_state_root()? {
        emit(&mut buf, &Record::GenesisStateRoot(root), false)?;
    }
    // Soft confirmations, and the DA slots they point at.
    let mut implied: HashSet<(u64, Hash)> = HashSet::new();
    let (mut slot_lo, mut slot_hi) = (u64::MAX, 0u64);
    let mut start = from;
    while head > 0 && start <= to {
        let end = to.min(start.saturating_add(999));
        for sc in r.soft_confirmation_range(start, end)?.into_iter().flatten() {
            implied.insert((sc.da_slot_height, sc.da_slot_hash));
            slot_lo = slot_lo.min(sc.da_slot_height);
            slot_hi = slot_hi.max(sc.da_slot_height);
            emit(&mut buf, &Record::SoftConfirmation(Box::new(sc)), false)?;
        }
        if end == u64::MAX {
            break;
        }
        start = end + 1;
    }
    let in_range = |h: u64| h >= from && h <= to;
    let commitments: Vec<SequencerCommitment> = r
        .all_commitments()?
        .into_iter()
        .flat_map(|(_, list)| list)
        .collect();
    // Each proof with the last height it proves (Genesis-era proofs carry
    // lastL2Height 0: the end of the commitments it names).
    let proofs: Vec<(u64, VerifiedBatchProof, u64)> = r
        .all_proofs()?
        .into_iter()
        .map(|(slot, p)| {
            let end = match p.proof_output.last_l2_height {
                0 => verify::proof_commitments(&r, &p)
                    .ok()
                    .flatten()
                    .and_then(|cs| cs.last().map(|c| c.l2_end_block_number))
                    .unwrap_or(0),
                n => n,
            };
            (slot, p, end)
        })
        .collect();
    // The highest height the exported records (with those before `from`,
    // which a verified import finds in its ledger) finalize and prove.
    let finalized_by = commitments
        .iter()
        .map(|c| c.l2_end_block_number)
        .filter(|&e| e <= to)
        .max()
        .unwrap_or(0);
    let proven_by = proofs
        .iter()
        .map(|(_, _, end)| *end)
        .filter(|&e| e <= to)
        .max()
        .unwrap_or(0);
    let mut by_slot: BTreeMap<u64, (Vec<SequencerCommitment>, Option<VerifiedBatchProof>)> =
        BTreeMap::new();
    for c in commitments {
        if in_range(c.l2_end_block_number) {
            by_slot.entry(c.found_in_l1).or_default().0.push(c);
        }
    }
    for (slot, p, end) in proofs {
        if in_range(end) {
            by_slot.entry(slot).or_default().1 = Some(p);
        }
    }
    if let (Some(first), Some(last)) = (by_slot.keys().next(), by_slot.keys().last()) {
        slot_lo = slot_lo.min(*first);
        slot_hi = slot_hi.max(*last);
    }
    let reaches_head = to >= head;
    let last_scanned = r.last_scanned_l1()?;
    if reaches_head {
        slot_hi = slot_hi.max(last_scanned);
    }
    if from <= 1 {
        slot_lo = 0;
    }
    for (height, hash) in r.all_da_slots()? {
        if height >= slot_lo && height <= slot_hi && !implied.contains(&(height, hash)) {
            emit(&mut buf, &Record::DaSlot { height, hash }, false)?;
        }
    }
    for (_, (list, proof)) in by_slot {
        for c in list {
            emit(&mut buf, &Record::Commitment(c), false)?;
        }
        if let Some(p) = proof {
            emit(&mut buf, &Record::VerifiedBatchProof(Box::new(p)), false)?;
        }
    }
    let mut h = from;
    while head > 0 && h <= to {
        if let Some(stored) = r.status(h)? {
            let status = match stored {
                _ if reaches_head => stored,
                Status::Proven if h <= proven_by => Status::Proven,
                Status::Proven | Status::Finalized if h <= finalized_by => Status::Finalized,
                _ => Status::Trusted,
            };
            emit(
                &mut buf,
                &Record::Status {
                    l2_height: h,
                    status,
                },
                false,
            )?;
        }
        if h == u64::MAX {
            break;
        }
        h += 1;
    }
    if reaches_head && last_scanned > 0 {
        emit(&mut buf, &Record::LastScannedL1Height(last_scanned), false)?;
    }
    out.write_all(&buf)
        .and_then(|_| out.flush())
        .map_err(|source| FixtureError::Io {
            what: "write the export".into(),
            source,
        })?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_and_comment_lines_are_skipped() {
        assert_eq!(parse_line("   "), Ok(None));
        assert_eq!(parse_line("# a fixture"), Ok(None));
    }

    #[test]
    fn a_status_line_round_trips() {
        let r = Record::Status {
            l2_height: 7,
            status: Status::Finalized,
        };
        let mut out = Vec::new();
        write_record(&mut out, &r);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "{\"status\":{\"l2Height\":7,\"status\":\"Finalized\"}}\n"
        );
        assert_eq!(parse_line(&text), Ok(Some(r)));
    }

    #[test]
    fn bad_lines_say_what_to_write() {
        let e = parse_line(r#"{"status":{"l2Height":1,"status":"Done"}}"#).unwrap_err();
        assert!(
            e.contains("\"Trusted\", \"Finalized\" or \"Proven\""),
            "{e}"
        );
        let e = parse_line(r#"{"block":{}}"#).unwrap_err();
        assert!(
            e.contains("unknown record kind \"block\"") && e.contains("softConfirmation"),
            "{e}"
        );
        let e = parse_line(r#"{"status":{},"daSlot":{}}"#).unwrap_err();
        assert!(e.contains("exactly one key"), "{e}");
        let e = parse_line("{\"softConfirmation\":{\"l2Height\":1}}").unwrap_err();
        assert!(e.starts_with("softConfirmation: missing field"), "{e}");
        let e = parse_line("not json").unwrap_err();
        assert!(e.contains("not a JSON object"), "{e}");
        let e = parse_line(r#"{"genesisStateRoot":[1,2]}"#).unwrap_err();
        assert!(e.contains("32 byte values"), "{e}");
    }
}
