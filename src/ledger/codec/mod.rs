//! The byte layout of every stored value: the one place that knows it.
//!
//! Values are compact binary, not JSON: fixed-size hashes, signatures and keys
//! are stored raw, numbers as LEB128 varints, blobs and lists with a varint
//! length (or count) in front. Heights are never stored inside a value when
//! they are the table's key.
//!
//! Decoding never trusts its input: every read is bounds-checked, varints
//! that overflow are refused, counts are checked against the bytes left, and
//! trailing bytes are an error. A bad value gives a [`DecodeError`] (the
//! caller turns it into `LedgerError::Corrupt`), never a panic.
//!
//! # Soft confirmation (`soft_confirmations` value)
//!
//! ```text
//! offset  size  field
//!   0       1   flags: bit 0 set = pubKey omitted (it equals the ledger's
//!               block key, see below); other bits must be 0
//!   1      32   hash
//!  33      32   prevHash
//!  65      32   stateRoot
//!  97      32   daSlotHash
//! 129      32   daSlotTxsCommitment
//! 161      64   signature
//! 225     (32)  pubKey, only when flag bit 0 is clear
//!   ..   var    daSlotHeight (u64), l1FeeRate (u128), timestamp (u64)
//!   ..   var    tx count, then per tx: length, bytes
//!   ..   var    deposit count, then per deposit: length, bytes
//! ```
//!
//! Every block of a chain carries the same sequencer key, so the ledger keeps
//! the first stored block's key once (meta `sc_key`, never changed) and blocks
//! signed by that key omit it: 32 bytes saved per block. `hash` and
//! `stateRoot` sit at fixed offsets so they can be read without decoding the
//! rest ([`sc_hash`], [`sc_state_root`]).
//!
//! # Commitment list (`commitments` value)
//!
//! count, then per commitment: foundInL1 (varint), merkleRoot (32),
//! l2StartBlockNumber (varint), l2EndBlockNumber (varint).
//!
//! # Proof list (`proofs` value)
//!
//! count (varint), then per proof, in the order they were verified: its
//! length (varint) and the proof's bytes (below). The length in front lets
//! [`decode_last_proof`] skip to the newest proof without decoding the
//! others. (Layout version 2 stored one bare proof per slot; `migrate.rs`
//! turns such a value into a one-element list.)
//!
//! # Verified batch proof (an entry of the `proofs` list)
//!
//! height (varint), proof (blob), initialStateRoot, finalStateRoot,
//! prevSoftConfirmationHash, finalSoftConfirmationHash, daSlotHash (32 each),
//! commitments range first, last (varints), sequencerPublicKey (blob),
//! sequencerDaPublicKey (blob), preproven count + varints, lastL2Height
//! (varint), stateDiff count + per entry: key (blob), tag (0 = null,
//! 1 = value follows), value (blob).
//!
//! # Small values
//!
//! Heights and slot numbers as values (`sc_by_hash_prefix` (fixed size, as its
//! `DUP_FIXED` duplicates must be), `da_slots`, numeric meta
//! entries) are u64 big-endian; a status is one byte (`Status::to_byte`).

use std::fmt;

use crate::chain_rules::ForkTable;
use crate::types::{
    Hash, ProofOutput, SequencerCommitment, SoftConfirmation, Status, VerifiedBatchProof,
};

/// Why a stored value could not be decoded. `what` names the field being
/// read (`hash`, `txs`, `proof count`, ...).
#[derive(Debug)]
pub enum DecodeError {
    /// A field needs more bytes than are left.
    Truncated {
        what: &'static str,
        needs: usize,
        left: usize,
    },
    /// A soft confirmation shorter than its fixed part, read for one field.
    ShortFixedPart { what: &'static str, len: usize },
    /// A number's last byte is missing.
    UnfinishedNumber { what: &'static str },
    /// A number larger than its type.
    Overflow { what: &'static str, bits: u32 },
    /// A count of items the bytes left cannot hold.
    Count {
        what: &'static str,
        count: u64,
        left: usize,
    },
    /// Bytes after the value's end.
    Trailing { count: usize },
    /// A fixed-size value of another length.
    Length { expected: usize, found: usize },
    /// A soft confirmation's flags byte with a flag this version does not know.
    UnknownFlags(u8),
    /// A soft confirmation that omits its pubKey in a ledger with no block key.
    NoBlockKey,
    /// A stateDiff entry's tag that is neither 0 (null) nor 1.
    StateDiffTag(u8),
    /// A byte that is not a status.
    NotStatus(u8),
    /// A meta `forks` value that is not a fork table (`len` bytes, the first one shown).
    NotForkTable { len: usize, first: Option<u8> },
    /// A `bitcoin_headers` entry of another length than 112 bytes.
    HeaderEntryLength(usize),
    /// A `bitcoin_headers` entry whose 80-byte header does not decode.
    Header(bitcoin::consensus::encode::Error),
    /// A `bitcoin_chunks` entry shorter than its 8-byte height.
    ChunkEntryLength(usize),
    /// A `bitcoin_peers` entry of another length than 38 bytes.
    BookEntryLength(usize),
    /// Proof `index` (from 1) of a list of `count` does not decode.
    InList {
        index: u64,
        count: usize,
        error: Box<DecodeError>,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated { what, needs, left } => {
                write!(f, "{what} needs {needs} bytes but only {left} are left")
            }
            DecodeError::ShortFixedPart { what, len } => write!(
                f,
                "value is {len} bytes, shorter than the {FIXED_PART}-byte fixed part (reading {what})"
            ),
            DecodeError::UnfinishedNumber { what } => {
                write!(f, "{what} ends in the middle of a number")
            }
            DecodeError::Overflow { what, bits } => write!(f, "{what} does not fit in {bits} bits"),
            DecodeError::Count { what, count, left } => {
                write!(f, "{what} says {count} items but only {left} bytes are left")
            }
            DecodeError::Trailing { count } => write!(f, "{count} unexpected bytes after the end"),
            DecodeError::Length { expected: 1, found } => {
                write!(f, "expected 1 byte, found {found}")
            }
            DecodeError::Length { expected, found } => {
                write!(f, "expected {expected} bytes, found {found}")
            }
            DecodeError::UnknownFlags(flags) => write!(f, "unknown flags {flags:#04x}"),
            DecodeError::NoBlockKey => {
                f.write_str("pubKey is omitted but the ledger has no block key")
            }
            DecodeError::StateDiffTag(t) => {
                write!(f, "stateDiff tag {t} is neither 0 (null) nor 1")
            }
            DecodeError::NotStatus(b) => write!(f, "{b} is not a status"),
            DecodeError::NotForkTable { len, first } => write!(
                f,
                "{len} bytes starting {first:?} are not a fork table (version 1, then 8 bytes)"
            ),
            DecodeError::HeaderEntryLength(len) => {
                write!(f, "a Bitcoin header entry is 112 bytes, this one {len}")
            }
            DecodeError::Header(e) => write!(f, "the header does not decode: {e}"),
            DecodeError::ChunkEntryLength(len) => write!(
                f,
                "a chunk entry is {len} bytes, shorter than its 8-byte height"
            ),
            DecodeError::BookEntryLength(len) => {
                write!(f, "an address book entry is 38 bytes, this one {len}")
            }
            DecodeError::InList {
                index,
                count,
                error,
            } => write!(f, "proof {index} of {count}: {error}"),
        }
    }
}

impl std::error::Error for DecodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DecodeError::Header(e) => Some(e),
            DecodeError::InList { error, .. } => Some(error.as_ref()),
            _ => None,
        }
    }
}

/// A fixed-size value of `expected` bytes that has another length.
fn length(expected: usize, bytes: &[u8]) -> DecodeError {
    DecodeError::Length {
        expected,
        found: bytes.len(),
    }
}

mod bitcoin_tables;
pub use bitcoin_tables::{
    decode_bitcoin_header, decode_book_entry, decode_peer_addr, encode_bitcoin_header,
    encode_book_entry, encode_peer_addr,
};

const FLAG_KEY_OMITTED: u8 = 1;
const OFF_HASH: usize = 1;
const OFF_STATE_ROOT: usize = 65;
const FIXED_PART: usize = 225;

// ---------------------------------------------------------------- writing

fn put_varint(out: &mut Vec<u8>, v: impl Into<u128>) {
    let mut v = v.into();
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

fn put_blob(out: &mut Vec<u8>, blob: &[u8]) {
    put_varint(out, blob.len() as u64);
    out.extend_from_slice(blob);
}

fn blobs_len(blobs: &[Vec<u8>]) -> usize {
    varint_len(blobs.len() as u64)
        + blobs
            .iter()
            .map(|b| varint_len(b.len() as u64) + b.len())
            .sum::<usize>()
}

fn put_blobs(out: &mut Vec<u8>, blobs: &[Vec<u8>]) {
    put_varint(out, blobs.len() as u64);
    for b in blobs {
        put_blob(out, b);
    }
}

// ---------------------------------------------------------------- reading

/// A bounds-checked reader over untrusted bytes.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if n > self.buf.len() {
            return Err(DecodeError::Truncated {
                what,
                needs: n,
                left: self.buf.len(),
            });
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let bytes = self.take(N, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    fn byte(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        let [b] = self.array::<1>(what)?;
        Ok(b)
    }

    fn varint_u128(&mut self, what: &'static str, bits: u32) -> Result<u128, DecodeError> {
        let mut value: u128 = 0;
        let mut shift: u32 = 0;
        loop {
            let (&b, rest) = self
                .buf
                .split_first()
                .ok_or(DecodeError::UnfinishedNumber { what })?;
            self.buf = rest;
            let chunk = u128::from(b & 0x7f);
            if shift >= bits || (shift > 0 && chunk >> (bits - shift) != 0) {
                return Err(DecodeError::Overflow { what, bits });
            }
            value |= chunk << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
            shift += 7;
        }
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        // varint_u128 with bits = 64 guarantees the value fits.
        self.varint_u128(what, 64).map(|v| v as u64)
    }

    fn u128(&mut self, what: &'static str) -> Result<u128, DecodeError> {
        self.varint_u128(what, 128)
    }

    /// A count of items that each take at least `min_item` bytes: refused if
    /// the bytes left cannot hold that many (so a corrupt count cannot make
    /// us allocate gigabytes).
    fn count(&mut self, what: &'static str, min_item: usize) -> Result<usize, DecodeError> {
        let n = self.u64(what)?;
        match usize::try_from(n) {
            Ok(n) if n.saturating_mul(min_item.max(1)) <= self.buf.len() => Ok(n),
            _ => Err(DecodeError::Count {
                what,
                count: n,
                left: self.buf.len(),
            }),
        }
    }

    fn blob(&mut self, what: &'static str) -> Result<Vec<u8>, DecodeError> {
        let n = self.count(what, 1)?;
        Ok(self.take(n, what)?.to_vec())
    }

    fn blobs(&mut self, what: &'static str) -> Result<Vec<Vec<u8>>, DecodeError> {
        let n = self.count(what, 1)?;
        (0..n).map(|_| self.blob(what)).collect()
    }

    /// `value`, decoded from every byte: none may follow.
    fn finish<T>(self, value: T) -> Result<T, DecodeError> {
        match self.buf.len() {
            0 => Ok(value),
            count => Err(DecodeError::Trailing { count }),
        }
    }
}

// ---------------------------------------------------------------- soft confirmations

/// Encodes `sc` (without its height, which is the key). `block_key` is the
/// ledger's block key (meta `sc_key`): when `sc.pub_key` equals it, the key
/// is omitted.
pub fn encode_soft_confirmation(sc: &SoftConfirmation, block_key: Option<&[u8; 32]>) -> Vec<u8> {
    let omit = block_key == Some(&sc.pub_key);
    let size = FIXED_PART
        + if omit { 0 } else { 32 }
        + varint_len(sc.da_slot_height)
        + 19
        + varint_len(sc.timestamp)
        + blobs_len(&sc.txs)
        + blobs_len(&sc.deposit_data);
    let mut out = Vec::with_capacity(size);
    out.push(if omit { FLAG_KEY_OMITTED } else { 0 });
    out.extend_from_slice(&sc.hash);
    out.extend_from_slice(&sc.prev_hash);
    out.extend_from_slice(&sc.state_root);
    out.extend_from_slice(&sc.da_slot_hash);
    out.extend_from_slice(&sc.da_slot_txs_commitment);
    out.extend_from_slice(&sc.signature);
    if !omit {
        out.extend_from_slice(&sc.pub_key);
    }
    put_varint(&mut out, sc.da_slot_height);
    put_varint(&mut out, sc.l1_fee_rate);
    put_varint(&mut out, sc.timestamp);
    put_blobs(&mut out, &sc.txs);
    put_blobs(&mut out, &sc.deposit_data);
    out
}

/// Decodes a stored soft confirmation at `height`. `block_key` is the
/// ledger's block key, needed when the value omits its pubKey.
pub fn decode_soft_confirmation(
    bytes: &[u8],
    height: u64,
    block_key: Option<&[u8; 32]>,
) -> Result<SoftConfirmation, DecodeError> {
    let mut r = Reader::new(bytes);
    let flags = r.byte("flags")?;
    if flags & !FLAG_KEY_OMITTED != 0 {
        return Err(DecodeError::UnknownFlags(flags));
    }
    // Fields in their stored order (a struct literal evaluates in order).
    let sc = SoftConfirmation {
        l2_height: height,
        hash: r.array("hash")?,
        prev_hash: r.array("prevHash")?,
        state_root: r.array("stateRoot")?,
        da_slot_hash: r.array("daSlotHash")?,
        da_slot_txs_commitment: r.array("daSlotTxsCommitment")?,
        signature: r.array("signature")?,
        pub_key: match (flags & FLAG_KEY_OMITTED != 0, block_key) {
            (true, Some(k)) => *k,
            (true, None) => return Err(DecodeError::NoBlockKey),
            (false, _) => r.array("pubKey")?,
        },
        da_slot_height: r.u64("daSlotHeight")?,
        l1_fee_rate: r.u128("l1FeeRate")?,
        timestamp: r.u64("timestamp")?,
        txs: r.blobs("txs")?,
        deposit_data: r.blobs("depositData")?,
    };
    r.finish(sc)
}

/// Whether a stored soft confirmation omits its pubKey (so decoding needs
/// the ledger's block key). `false` for a value too short to say.
pub fn sc_omits_key(bytes: &[u8]) -> bool {
    bytes.first().is_some_and(|f| f & FLAG_KEY_OMITTED != 0)
}

fn fixed_hash(bytes: &[u8], offset: usize, what: &'static str) -> Result<Hash, DecodeError> {
    if bytes.len() < FIXED_PART {
        return Err(DecodeError::ShortFixedPart {
            what,
            len: bytes.len(),
        });
    }
    Reader::new(bytes.get(offset..).unwrap_or_default()).array(what)
}

/// The hash of a stored soft confirmation, without decoding the rest.
pub fn sc_hash(bytes: &[u8]) -> Result<Hash, DecodeError> {
    fixed_hash(bytes, OFF_HASH, "hash")
}

/// The state root of a stored soft confirmation, without decoding the rest.
pub fn sc_state_root(bytes: &[u8]) -> Result<Hash, DecodeError> {
    fixed_hash(bytes, OFF_STATE_ROOT, "stateRoot")
}

// ---------------------------------------------------------------- commitments

/// Encodes the commitments found on one DA slot.
pub fn encode_commitments(list: &[SequencerCommitment]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + list.len() * 48);
    put_varint(&mut out, list.len() as u64);
    for c in list {
        put_varint(&mut out, c.found_in_l1);
        out.extend_from_slice(&c.merkle_root);
        put_varint(&mut out, c.l2_start_block_number);
        put_varint(&mut out, c.l2_end_block_number);
    }
    out
}

/// Decodes a stored commitment list.
pub fn decode_commitments(bytes: &[u8]) -> Result<Vec<SequencerCommitment>, DecodeError> {
    let mut r = Reader::new(bytes);
    let n = r.count("commitment count", 35)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(SequencerCommitment {
            found_in_l1: r.u64("foundInL1")?,
            merkle_root: r.array("merkleRoot")?,
            l2_start_block_number: r.u64("l2StartBlockNumber")?,
            l2_end_block_number: r.u64("l2EndBlockNumber")?,
        });
    }
    r.finish(out)
}

// ---------------------------------------------------------------- proofs

/// Encodes a verified batch proof.
pub fn encode_proof(p: &VerifiedBatchProof) -> Vec<u8> {
    let o = &p.proof_output;
    let diff_len: usize = o
        .state_diff
        .iter()
        .map(|(k, v)| 11 + k.len() + v.as_ref().map_or(0, Vec::len))
        .sum();
    let mut out = Vec::with_capacity(
        220 + p.proof.len()
            + o.sequencer_public_key.len()
            + o.sequencer_da_public_key.len()
            + o.preproven_commitments.len() * 10
            + diff_len,
    );
    put_varint(&mut out, p.height);
    put_blob(&mut out, &p.proof);
    out.extend_from_slice(&o.initial_state_root);
    out.extend_from_slice(&o.final_state_root);
    out.extend_from_slice(&o.prev_soft_confirmation_hash);
    out.extend_from_slice(&o.final_soft_confirmation_hash);
    out.extend_from_slice(&o.da_slot_hash);
    put_varint(&mut out, o.sequencer_commitments_range.0);
    put_varint(&mut out, o.sequencer_commitments_range.1);
    put_blob(&mut out, &o.sequencer_public_key);
    put_blob(&mut out, &o.sequencer_da_public_key);
    put_varint(&mut out, o.preproven_commitments.len() as u64);
    for i in &o.preproven_commitments {
        put_varint(&mut out, *i);
    }
    put_varint(&mut out, o.last_l2_height);
    put_varint(&mut out, o.state_diff.len() as u64);
    for (k, v) in &o.state_diff {
        put_blob(&mut out, k);
        match v {
            None => out.push(0),
            Some(v) => {
                out.push(1);
                put_blob(&mut out, v);
            }
        }
    }
    out
}

/// Decodes a stored verified batch proof.
pub fn decode_proof(bytes: &[u8]) -> Result<VerifiedBatchProof, DecodeError> {
    let mut r = Reader::new(bytes);
    let height = r.u64("height")?;
    let proof = r.blob("proof")?;
    // Fields in their stored order (a struct literal evaluates in order).
    let o = ProofOutput {
        initial_state_root: r.array("initialStateRoot")?,
        final_state_root: r.array("finalStateRoot")?,
        prev_soft_confirmation_hash: r.array("prevSoftConfirmationHash")?,
        final_soft_confirmation_hash: r.array("finalSoftConfirmationHash")?,
        da_slot_hash: r.array("daSlotHash")?,
        sequencer_commitments_range: (
            r.u64("sequencerCommitmentsRange")?,
            r.u64("sequencerCommitmentsRange")?,
        ),
        sequencer_public_key: r.blob("sequencerPublicKey")?,
        sequencer_da_public_key: r.blob("sequencerDaPublicKey")?,
        preproven_commitments: {
            let n = r.count("preprovenCommitments", 1)?;
            (0..n)
                .map(|_| r.u64("preprovenCommitments"))
                .collect::<Result<_, _>>()?
        },
        last_l2_height: r.u64("lastL2Height")?,
        state_diff: {
            let n = r.count("stateDiff", 2)?;
            (0..n)
                .map(|_| {
                    let k = r.blob("stateDiff key")?;
                    let v = match r.byte("stateDiff tag")? {
                        0 => None,
                        1 => Some(r.blob("stateDiff value")?),
                        t => return Err(DecodeError::StateDiffTag(t)),
                    };
                    Ok((k, v))
                })
                .collect::<Result<_, _>>()?
        },
    };
    r.finish(VerifiedBatchProof {
        proof,
        proof_output: o,
        height,
    })
}

/// Encodes the proofs verified on one DA slot, oldest first.
pub fn encode_proofs(list: &[VerifiedBatchProof]) -> Vec<u8> {
    let encoded: Vec<Vec<u8>> = list.iter().map(encode_proof).collect();
    let mut out = Vec::with_capacity(blobs_len(&encoded));
    put_blobs(&mut out, &encoded);
    out
}

/// Turns one stored bare proof (layout version 2's `proofs` value) into a
/// one-element proof list, after checking that it decodes.
pub fn proof_list_of_one(bare: &[u8]) -> Result<Vec<u8>, DecodeError> {
    decode_proof(bare)?;
    let mut out = Vec::with_capacity(1 + varint_len(bare.len() as u64) + bare.len());
    put_varint(&mut out, 1u64);
    put_blob(&mut out, bare);
    Ok(out)
}

/// Decodes a stored proof list.
pub fn decode_proofs(bytes: &[u8]) -> Result<Vec<VerifiedBatchProof>, DecodeError> {
    let mut out = Vec::new();
    each_proof(bytes, |index, count, proof| {
        out.push(decode_in_list(proof, index, count)?);
        Ok(())
    })?;
    Ok(out)
}

/// The newest proof of a stored proof list (`None` for an empty list),
/// decoding only that one: the others are skipped by their lengths.
pub fn decode_last_proof(bytes: &[u8]) -> Result<Option<VerifiedBatchProof>, DecodeError> {
    let mut last = None;
    each_proof(bytes, |index, count, proof| {
        last = Some((index, count, proof));
        Ok(())
    })?;
    last.map(|(index, count, proof)| decode_in_list(proof, index, count))
        .transpose()
}

/// Calls `each` with (index from 1, count, bytes) of every proof of a
/// stored proof list, in order, then checks that nothing follows.
fn each_proof<'a>(
    bytes: &'a [u8],
    mut each: impl FnMut(u64, usize, &'a [u8]) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let mut r = Reader::new(bytes);
    let n = r.count("proof count", 1)?;
    for index in 1..=n as u64 {
        let len = r.count("proof length", 1)?;
        each(index, n, r.take(len, "proof")?)?;
    }
    r.finish(())
}

/// Decodes proof `index` of a list of `count`.
fn decode_in_list(
    bytes: &[u8],
    index: u64,
    count: usize,
) -> Result<VerifiedBatchProof, DecodeError> {
    decode_proof(bytes).map_err(|e| DecodeError::InList {
        index,
        count,
        error: Box::new(e),
    })
}

// ---------------------------------------------------------------- small values

/// A u64 value (height, slot number, counter): 8 bytes big-endian.
pub fn encode_u64(v: u64) -> [u8; 8] {
    v.to_be_bytes()
}

/// Encodes a fork table (meta `forks`): a version byte 1, then the Kumquat
/// height as u64 big-endian.
pub fn encode_fork_table(t: &ForkTable) -> [u8; 9] {
    let mut out = [0u8; 9];
    out[0] = 1;
    out[1..].copy_from_slice(&t.kumquat_height().to_be_bytes());
    out
}

/// Decodes a fork table written by [`encode_fork_table`].
pub fn decode_fork_table(bytes: &[u8]) -> Result<ForkTable, DecodeError> {
    match bytes {
        [1, height @ ..] => decode_u64(height).map(ForkTable::kumquat_from),
        _ => Err(DecodeError::NotForkTable {
            len: bytes.len(),
            first: bytes.first().copied(),
        }),
    }
}

/// Decodes an 8-byte big-endian u64 value.
pub fn decode_u64(bytes: &[u8]) -> Result<u64, DecodeError> {
    fixed(bytes).map(u64::from_be_bytes)
}

/// Decodes a 32-byte value (hash, key).
pub fn decode_hash(bytes: &[u8]) -> Result<Hash, DecodeError> {
    fixed(bytes)
}

/// A fixed-size value of `N` bytes.
fn fixed<const N: usize>(bytes: &[u8]) -> Result<[u8; N], DecodeError> {
    <[u8; N]>::try_from(bytes).map_err(|_| length(N, bytes))
}

/// A frontier entry (`status_heights` value): L2 height, commitment index,
/// Unix second stored, each u64 big-endian (24 bytes).
pub fn encode_frontier_mark((height, index, at): (u64, u64, u64)) -> [u8; 24] {
    let mut out = [0u8; 24];
    out[..8].copy_from_slice(&height.to_be_bytes());
    out[8..16].copy_from_slice(&index.to_be_bytes());
    out[16..].copy_from_slice(&at.to_be_bytes());
    out
}

/// Decodes a frontier entry written by [`encode_frontier_mark`].
pub fn decode_frontier_mark(bytes: &[u8]) -> Result<(u64, u64, u64), DecodeError> {
    if bytes.len() != 24 {
        return Err(length(24, bytes));
    }
    let at = |i: usize| decode_u64(&bytes[i..i + 8]);
    Ok((at(0)?, at(8)?, at(16)?))
}

/// A status: one byte.
pub fn encode_status(s: Status) -> [u8; 1] {
    [s.to_byte()]
}

/// Decodes a one-byte status.
pub fn decode_status(bytes: &[u8]) -> Result<Status, DecodeError> {
    match bytes {
        [b] => Status::from_byte(*b).ok_or(DecodeError::NotStatus(*b)),
        _ => Err(length(1, bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::sample_commitment;

    fn block(height: u64, txs: Vec<Vec<u8>>, fee: u128) -> SoftConfirmation {
        SoftConfirmation {
            txs,
            l1_fee_rate: fee,
            ..crate::types::sample_block(height)
        }
    }

    fn proof() -> VerifiedBatchProof {
        let mut p = crate::types::sample_proof(77, 400);
        p.proof = vec![9; 300];
        p.proof_output.state_diff.push((vec![], Some(vec![])));
        p.proof_output.sequencer_commitments_range = (0, 3);
        p.proof_output.preproven_commitments.push(u64::MAX);
        p
    }

    #[test]
    fn soft_confirmation_round_trips_with_u128_fee_above_u64_max() {
        let mut sc = block(
            17,
            vec![vec![0xaa; 60], vec![0xbb; 60]],
            u128::from(u64::MAX) + 5,
        );
        sc.deposit_data = vec![vec![1, 2, 3], vec![]];
        for key in [None, Some(&[7u8; 32]), Some(&[8u8; 32])] {
            let bytes = encode_soft_confirmation(&sc, key);
            assert_eq!(decode_soft_confirmation(&bytes, 17, key).unwrap(), sc);
            assert_eq!(sc_hash(&bytes).unwrap(), sc.hash);
            assert_eq!(sc_state_root(&bytes).unwrap(), sc.state_root);
        }
        let max = block(1, vec![], u128::MAX);
        let bytes = encode_soft_confirmation(&max, None);
        assert_eq!(decode_soft_confirmation(&bytes, 1, None).unwrap(), max);
    }

    #[test]
    fn soft_confirmation_with_no_txs_round_trips() {
        let sc = block(1, vec![], 0);
        let key = Some(&sc.pub_key);
        let bytes = encode_soft_confirmation(&sc, key);
        assert_eq!(decode_soft_confirmation(&bytes, 1, key).unwrap(), sc);
    }

    #[test]
    fn encoded_capacity_estimate_is_exact_or_above() {
        let sc = block(5, vec![vec![0; 60], vec![1; 60]], 1000);
        let bytes = encode_soft_confirmation(&sc, Some(&sc.pub_key));
        // 2 txs of 60 bytes, no deposits, key omitted:
        // 225 fixed + 3 (slot) + 2 (fee) + 5 (timestamp) + 1 + 2*61 + 1.
        assert_eq!(bytes.len(), 359);
    }

    #[test]
    fn every_truncation_of_a_block_is_a_decode_error() {
        let sc = block(17, vec![vec![0xaa; 60], vec![0xbb; 200]], 1 << 70);
        for key in [None, Some(&sc.pub_key)] {
            let bytes = encode_soft_confirmation(&sc, key);
            for n in 0..bytes.len() {
                let cut = decode_soft_confirmation(&bytes[..n], 17, key);
                assert!(cut.is_err(), "len {n}");
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(decode_soft_confirmation(&longer, 17, key).is_err());
        }
        // An omitted key with no block key to fill it in.
        let bytes = encode_soft_confirmation(&sc, Some(&sc.pub_key));
        assert!(decode_soft_confirmation(&bytes, 17, None).is_err());
        assert!(sc_hash(&bytes[..100]).is_err());
    }

    #[test]
    fn garbage_bytes_never_panic() {
        // Overlong varints, huge counts, bad flags: all errors.
        let mut bytes = encode_soft_confirmation(&block(1, vec![], 0), None);
        bytes[0] = 0x80;
        assert!(decode_soft_confirmation(&bytes, 1, None).is_err());
        let mut huge = vec![0u8; 257];
        huge.extend_from_slice(&[0xff; 30]);
        assert!(decode_soft_confirmation(&huge, 1, None).is_err());
        assert!(decode_commitments(&[0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
        assert!(decode_proof(&[0xff; 64]).is_err());
        // A cheap deterministic fuzz over every value codec.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in 0..600 {
            let junk: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let _ = decode_soft_confirmation(&junk, 1, Some(&[0; 32]));
            let _ = decode_commitments(&junk);
            let _ = decode_proof(&junk);
            let _ = decode_proofs(&junk);
            let _ = decode_last_proof(&junk);
            let _ = decode_status(&junk);
            let _ = decode_u64(&junk);
        }
    }

    #[test]
    fn varints_that_overflow_are_refused() {
        // 10 bytes whose last carries more than the 64th bit.
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]);
        assert!(r.u64("x").is_err());
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert_eq!(r.u64("x").unwrap(), u64::MAX);
        for v in [0, 1, 127, 128, 300, u64::MAX] {
            let mut out = vec![];
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v));
            assert_eq!(Reader::new(&out).u64("x").unwrap(), v);
        }
    }

    #[test]
    fn commitments_round_trip_and_truncations_fail() {
        let list = vec![
            sample_commitment(100, 1, 10),
            sample_commitment(100, 11, u64::MAX),
        ];
        let bytes = encode_commitments(&list);
        assert_eq!(decode_commitments(&bytes).unwrap(), list);
        let none = encode_commitments(&[]);
        assert_eq!(decode_commitments(&none).unwrap(), vec![]);
        for n in 0..bytes.len() {
            assert!(decode_commitments(&bytes[..n]).is_err());
        }
    }

    #[test]
    fn proof_round_trips_with_null_state_diff_values() {
        let p = proof();
        let bytes = encode_proof(&p);
        assert_eq!(decode_proof(&bytes).unwrap(), p);
        for n in 0..bytes.len() {
            assert!(decode_proof(&bytes[..n]).is_err(), "len {n}");
        }
        // A state-diff tag that is neither 0 nor 1.
        let mut q = p.clone();
        q.proof_output.state_diff = vec![(vec![1], None)];
        let mut bytes = encode_proof(&q);
        let last = bytes.len() - 1;
        bytes[last] = 2;
        assert!(decode_proof(&bytes).is_err());
    }

    #[test]
    fn proof_lists_keep_every_proof_in_order_and_the_last_reads_alone() {
        let mut second = proof();
        second.proof = vec![1; 10];
        second.proof_output.last_l2_height = 800;
        let list = vec![proof(), second.clone()];
        let bytes = encode_proofs(&list);
        assert_eq!(decode_proofs(&bytes).unwrap(), list);
        assert_eq!(decode_last_proof(&bytes).unwrap(), Some(second));
        assert_eq!(decode_proofs(&encode_proofs(&[])).unwrap(), vec![]);
        assert_eq!(decode_last_proof(&encode_proofs(&[])).unwrap(), None);
        for n in 0..bytes.len() {
            assert!(decode_proofs(&bytes[..n]).is_err(), "len {n}");
            assert!(decode_last_proof(&bytes[..n]).is_err(), "len {n}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_proofs(&longer).is_err());
        assert!(decode_last_proof(&longer).is_err());
    }

    #[test]
    fn a_bare_proof_becomes_a_list_of_one() {
        let bare = encode_proof(&proof());
        let list = proof_list_of_one(&bare).unwrap();
        assert_eq!(list, encode_proofs(&[proof()]));
        assert_eq!(decode_proofs(&list).unwrap(), vec![proof()]);
        assert!(proof_list_of_one(&bare[..bare.len() - 1]).is_err());
    }

    #[test]
    fn decode_errors_name_their_case_and_say_it_in_a_sentence() {
        let e = decode_u64(&[0; 7]).unwrap_err();
        let DecodeError::Length { expected, found } = e else {
            panic!("{e:?}")
        };
        assert_eq!((expected, found), (8, 7));
        assert_eq!(e.to_string(), "expected 8 bytes, found 7");
        let e = decode_status(&[]).unwrap_err();
        assert_eq!(e.to_string(), "expected 1 byte, found 0");
        let e = decode_status(&[3]);
        assert!(matches!(e, Err(DecodeError::NotStatus(3))));
        // A list whose one proof is 64 bytes of 0xff: its height never ends.
        let mut list = vec![1, 64];
        list.extend_from_slice(&[0xff; 64]);
        let e = decode_proofs(&list).unwrap_err();
        let DecodeError::InList { index, count, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!((*index, *count), (1, 1));
        let text = e.to_string();
        assert_eq!(text, "proof 1 of 1: height does not fit in 64 bits");
        let inner = std::error::Error::source(&e).expect("the proof's own error");
        assert_eq!(inner.to_string(), "height does not fit in 64 bits");
    }

    #[test]
    fn small_values_check_their_length() {
        assert_eq!(decode_u64(&encode_u64(42)).unwrap(), 42);
        assert!(decode_u64(&[0; 7]).is_err());
        assert!(decode_hash(&[0; 31]).is_err());
        let proven = encode_status(Status::Proven);
        assert_eq!(decode_status(&proven).unwrap(), Status::Proven);
        assert!(decode_status(&[3]).is_err());
        assert!(decode_status(&[]).is_err());
    }
}
