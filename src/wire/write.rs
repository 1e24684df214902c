//! A small, fast JSON writer for the RPC's output shapes.
//!
//! Responses are written straight into a `Vec<u8>`: no `serde_json::Value`
//! is built for an output. Numbers use a two-digit lookup table, hex uses a
//! nibble table and byte arrays (a proof can be megabytes long) use a table
//! of the 256 pre-rendered byte values, so a 1 MB proof serialises in a few
//! milliseconds.
//!
//! Shapes and field order follow the tables of `docs/API.md`; hex is
//! lowercase without `0x`; `l1FeeRate` is a u128 written as a JSON number.
//! [`crate::wire::read`] reads these shapes back (the tests below round-trip them).

use crate::types::{
    LayerStatus, SequencerCommitment, SoftConfirmation, Status, VerifiedBatchProof,
};

const DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Each byte value rendered as decimal digits followed by a comma, and the
/// rendered length (digits + comma).
const BYTE_ITEMS: [([u8; 4], u8); 256] = byte_items();

const fn byte_items() -> [([u8; 4], u8); 256] {
    let mut table = [([0u8; 4], 0u8); 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        let mut buf = [0u8; 4];
        let len = if b >= 100 {
            buf[0] = b'0' + b / 100;
            buf[1] = b'0' + (b / 10) % 10;
            buf[2] = b'0' + b % 10;
            3
        } else if b >= 10 {
            buf[0] = b'0' + b / 10;
            buf[1] = b'0' + b % 10;
            2
        } else {
            buf[0] = b'0' + b;
            1
        };
        buf[len] = b',';
        table[i] = (buf, (len + 1) as u8);
        i += 1;
    }
    table
}

/// Writes a u64 as a JSON number.
pub fn write_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut pos = buf.len();
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        pos -= 2;
        buf[pos..pos + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        let pair = n as usize * 2;
        pos -= 2;
        buf[pos..pos + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        pos -= 1;
        buf[pos] = b'0' + n as u8;
    }
    out.extend_from_slice(&buf[pos..]);
}

/// Writes a u128 as a JSON number (all 128 bits, never as a float).
pub fn write_u128(out: &mut Vec<u8>, n: u128) {
    if let Ok(small) = u64::try_from(n) {
        return write_u64(out, small);
    }
    // Split into base-10^19 limbs so the slow u128 division runs twice at most.
    const LIMB: u128 = 10_000_000_000_000_000_000;
    let low = (n % LIMB) as u64;
    let rest = n / LIMB;
    let mid = (rest % LIMB) as u64;
    let high = (rest / LIMB) as u64;
    if high > 0 {
        write_u64(out, high);
        write_u64_padded19(out, mid);
    } else {
        write_u64(out, mid);
    }
    write_u64_padded19(out, low);
}

fn write_u64_padded19(out: &mut Vec<u8>, n: u64) {
    let start = out.len();
    write_u64(out, n);
    let written = out.len() - start;
    if written < 19 {
        let pad = 19 - written;
        out.splice(start..start, std::iter::repeat_n(b'0', pad));
    }
}

/// Each byte value as two lowercase hex digits.
const HEX_PAIRS: [[u8; 2]; 256] = hex_pairs();

const fn hex_pairs() -> [[u8; 2]; 256] {
    let mut table = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = [HEX[i >> 4], HEX[i & 0x0f]];
        i += 1;
    }
    table
}

/// Writes bytes as a quoted lowercase hex string without `0x`.
///
/// The output is sized once and filled two digits per byte from a table:
/// pushing digit by digit (a capacity check each) made this the largest
/// cost of a soft-confirmation answer (~7,900 of ~22,000 instructions).
pub fn write_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    let start = out.len();
    out.resize(start + bytes.len() * 2 + 2, b'"');
    let digits = &mut out[start + 1..start + 1 + bytes.len() * 2];
    for (pair, &b) in digits.chunks_exact_mut(2).zip(bytes) {
        pair.copy_from_slice(&HEX_PAIRS[b as usize]);
    }
}

/// Writes bytes as a JSON array of integers (`[1,2,255]`).
///
/// Each byte copies a fixed 4-byte table entry (digits + comma) into space
/// sized for the worst case and advances by the entry's real length; the
/// unused tail is cut off at the end. No per-byte branching or growth.
pub fn write_byte_array(out: &mut Vec<u8>, bytes: &[u8]) {
    let start = out.len();
    out.resize(start + bytes.len() * 4 + 2, 0);
    let buf = &mut out[start..];
    buf[0] = b'[';
    let mut pos = 1;
    for &b in bytes {
        let (digits, len) = &BYTE_ITEMS[b as usize];
        // pos <= 1 + 4 * i, so pos + 4 <= 4 * bytes.len() + 1 < buf.len().
        buf[pos..pos + 4].copy_from_slice(digits);
        pos += *len as usize;
    }
    if !bytes.is_empty() {
        pos -= 1; // the last comma
    }
    buf[pos] = b']';
    out.truncate(start + pos + 1);
}

/// Writes a JSON string, escaping quotes, backslashes and control characters.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if escape.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 0x0f) as usize]);
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// A JSON-RPC error object, `{"code":..,"message":"..","data":".."}`:
/// every error the node answers is written here (the RPC layer's and the
/// transport's own).
pub fn write_error_object(out: &mut Vec<u8>, code: i64, message: &str, data: &str) {
    out.extend_from_slice(b"{\"code\":");
    if code < 0 {
        out.push(b'-');
    }
    write_u64(out, code.unsigned_abs());
    out.extend_from_slice(b",\"message\":");
    write_str(out, message);
    out.extend_from_slice(b",\"data\":");
    write_str(out, data);
    out.push(b'}');
}

/// A whole JSON-RPC error answer to a request with no id to echo:
/// `{"jsonrpc":"2.0","id":null,"error":{...}}`.
pub fn error_answer(code: i64, message: &str, data: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(96 + data.len());
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":");
    write_error_object(&mut out, code, message, data);
    out.push(b'}');
    out
}

/// Writes `null`.
pub fn write_null(out: &mut Vec<u8>) {
    out.extend_from_slice(b"null");
}

/// Writes `"key":` (keys are trusted ASCII literals, written without escaping).
pub(crate) fn key(out: &mut Vec<u8>, k: &str) {
    out.push(b'"');
    out.extend_from_slice(k.as_bytes());
    out.extend_from_slice(b"\":");
}

/// Writes `open`, the items separated by commas (each by `write_item`), then `close`.
fn write_separated<T>(
    out: &mut Vec<u8>,
    (open, close): (u8, u8),
    items: impl IntoIterator<Item = T>,
    mut write_item: impl FnMut(&mut Vec<u8>, T),
) {
    out.push(open);
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_item(out, item);
    }
    out.push(close);
}

/// Writes a JSON array: `[`, the items separated by commas, `]`.
pub fn write_list<T>(
    out: &mut Vec<u8>,
    items: impl IntoIterator<Item = T>,
    write_item: impl FnMut(&mut Vec<u8>, T),
) {
    write_separated(out, (b'[', b']'), items, write_item);
}

/// A JSON object written field by field, one call a field:
/// `Obj::open(out).u64("a", 1).hex("b", &h).close()` writes `{"a":1,"b":"0x.."}`
/// (keys are trusted ASCII literals, written without escaping).
pub struct Obj<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
}

impl<'o> Obj<'o> {
    pub fn open(out: &'o mut Vec<u8>) -> Obj<'o> {
        out.push(b'{');
        Obj { out, first: true }
    }

    /// A field written by `write_value`.
    pub fn with(mut self, k: &str, write_value: impl FnOnce(&mut Vec<u8>)) -> Obj<'o> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        key(self.out, k);
        write_value(self.out);
        self
    }

    pub fn u64(self, k: &str, n: u64) -> Obj<'o> {
        self.with(k, |out| write_u64(out, n))
    }

    pub fn hex(self, k: &str, bytes: &[u8]) -> Obj<'o> {
        self.with(k, |out| write_hex(out, bytes))
    }

    pub fn hex_list(self, k: &str, items: &[Vec<u8>]) -> Obj<'o> {
        self.with(k, |out| {
            write_list(out, items, |out, item| write_hex(out, item))
        })
    }

    pub fn close(self) {
        self.out.push(b'}');
    }
}

/// Writes a soft confirmation object (fields in the spec's order).
pub fn write_soft_confirmation(out: &mut Vec<u8>, sc: &SoftConfirmation) {
    Obj::open(out)
        .u64("l2Height", sc.l2_height)
        .u64("daSlotHeight", sc.da_slot_height)
        .hex("daSlotHash", &sc.da_slot_hash)
        .hex("daSlotTxsCommitment", &sc.da_slot_txs_commitment)
        .hex("hash", &sc.hash)
        .hex("prevHash", &sc.prev_hash)
        .hex_list("txs", &sc.txs)
        .hex("stateRoot", &sc.state_root)
        .hex("softConfirmationSignature", &sc.signature)
        .hex("pubKey", &sc.pub_key)
        .hex_list("depositData", &sc.deposit_data)
        .with("l1FeeRate", |out| write_u128(out, sc.l1_fee_rate))
        .u64("timestamp", sc.timestamp)
        .close();
}

/// Writes a soft confirmation, or `null`.
pub fn write_opt_soft_confirmation(out: &mut Vec<u8>, sc: Option<&SoftConfirmation>) {
    match sc {
        Some(sc) => write_soft_confirmation(out, sc),
        None => write_null(out),
    }
}

/// Writes one sequencer commitment object.
pub fn write_commitment(out: &mut Vec<u8>, c: &SequencerCommitment) {
    Obj::open(out)
        .u64("foundInL1", c.found_in_l1)
        .hex("merkleRoot", &c.merkle_root)
        .u64("l2StartBlockNumber", c.l2_start_block_number)
        .u64("l2EndBlockNumber", c.l2_end_block_number)
        .close();
}

/// Writes a list of sequencer commitments.
pub fn write_commitments(out: &mut Vec<u8>, items: &[SequencerCommitment]) {
    write_list(out, items, write_commitment);
}

/// Writes a verified batch proof:
/// `{"proof":{"proof":[..],"proofOutput":{..},"height":n}}`.
pub fn write_verified_batch_proof(out: &mut Vec<u8>, p: &VerifiedBatchProof) {
    out.extend_from_slice(b"{\"proof\":");
    write_proof_and_output(out, p, true);
    out.push(b'}');
}

/// Writes Citrea's `ledger_getVerifiedBatchProofsBySlotHeight` answer for a
/// slot with proofs: `[{"proof":[..],"proofOutput":{..}}]` (no height).
pub fn write_citrea_proofs_on_slot(out: &mut Vec<u8>, proofs: &[VerifiedBatchProof]) {
    write_list(out, proofs, |out, p| write_proof_and_output(out, p, false));
}

/// Writes Citrea's `ledger_getLastVerifiedBatchProof` answer:
/// `{"proof":{"proof":[..],"proofOutput":{..}},"height":n}`.
pub fn write_citrea_last_proof(out: &mut Vec<u8>, p: &VerifiedBatchProof) {
    Obj::open(out)
        .with("proof", |out| write_proof_and_output(out, p, false))
        .u64("height", p.height)
        .close();
}

/// `{"proof":[..],"proofOutput":{..}}`, with `,"height":n` inside when asked.
fn write_proof_and_output(out: &mut Vec<u8>, p: &VerifiedBatchProof, with_height: bool) {
    let o = &p.proof_output;
    let (first, last) = o.sequencer_commitments_range;
    let obj = Obj::open(out)
        .with("proof", |out| write_byte_array(out, &p.proof))
        .with("proofOutput", |out| {
            Obj::open(out)
                .hex("initialStateRoot", &o.initial_state_root)
                .hex("finalStateRoot", &o.final_state_root)
                .hex("prevSoftConfirmationHash", &o.prev_soft_confirmation_hash)
                .hex("finalSoftConfirmationHash", &o.final_soft_confirmation_hash)
                .with("stateDiff", |out| {
                    write_separated(out, (b'{', b'}'), &o.state_diff, |out, (k, v)| {
                        write_hex(out, k);
                        out.push(b':');
                        match v {
                            Some(v) => write_hex(out, v),
                            None => write_null(out),
                        }
                    })
                })
                .hex("daSlotHash", &o.da_slot_hash)
                .with("sequencerCommitmentsRange", |out| {
                    write_list(out, [first, last], write_u64)
                })
                .hex("sequencerPublicKey", &o.sequencer_public_key)
                .hex("sequencerDaPublicKey", &o.sequencer_da_public_key)
                .with("preprovenCommitments", |out| {
                    write_list(out, &o.preproven_commitments, |out, n| write_u64(out, *n))
                })
                .u64("lastL2Height", o.last_l2_height)
                .close()
        });
    match with_height {
        true => obj.u64("height", p.height).close(),
        false => obj.close(),
    }
}

/// Writes a status string: `"Trusted"`, `"Finalized"` or `"Proven"`.
pub fn write_status(out: &mut Vec<u8>, s: Status) {
    write_str(out, s.as_str());
}

fn layer_status(out: &mut Vec<u8>, s: LayerStatus) {
    match s {
        LayerStatus::Synced(n) => Obj::open(out).u64("Synced", n).close(),
        LayerStatus::Syncing { head, synced } => Obj::open(out)
            .with("Syncing", |out| {
                Obj::open(out)
                    .u64("headBlockNumber", head)
                    .u64("syncedBlockNumber", synced)
                    .close()
            })
            .close(),
    }
}

/// Writes a sync status: `{"l1Status":<layer>,"l2Status":<layer>}`, each layer
/// `{"Synced":n}` or `{"Syncing":{"headBlockNumber":h,"syncedBlockNumber":s}}`.
pub fn write_sync_status(out: &mut Vec<u8>, l1: LayerStatus, l2: LayerStatus) {
    Obj::open(out)
        .with("l1Status", |out| layer_status(out, l1))
        .with("l2Status", |out| layer_status(out, l2))
        .close();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{diff_sorted, sample_commitment};

    fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).expect("utf-8")
    }

    fn sample_sc() -> SoftConfirmation {
        SoftConfirmation {
            da_slot_height: 3,
            da_slot_hash: [0xab; 32],
            txs: vec![vec![1, 2, 3], vec![]],
            deposit_data: vec![vec![0xde, 0xad]],
            l1_fee_rate: u128::MAX,
            timestamp: u64::MAX,
            ..crate::types::sample_block(7)
        }
    }

    #[test]
    fn integers_match_std_formatting() {
        let cases: [u128; 14] = [
            0,
            1,
            9,
            10,
            99,
            100,
            12345,
            u32::MAX as u128,
            u64::MAX as u128 - 1,
            u64::MAX as u128,
            u64::MAX as u128 + 1,
            10_000_000_000_000_000_000_000_000_000_000_000_000,
            100_000_000_000_000_000_000_000_000_000_000_000_007,
            u128::MAX,
        ];
        for n in cases {
            assert_eq!(text(|o| write_u128(o, n)), n.to_string());
            if let Ok(small) = u64::try_from(n) {
                assert_eq!(text(|o| write_u64(o, small)), n.to_string());
            }
        }
        for n in (0..10_000u64).chain((1..64).map(|s| 1u64 << s)) {
            assert_eq!(text(|o| write_u64(o, n)), n.to_string());
        }
    }

    #[test]
    fn byte_arrays_and_hex() {
        let all: Vec<u8> = (0..=255).collect();
        let json = text(|o| write_byte_array(o, &all));
        let back: Vec<u8> = serde_json::from_str(&json).expect("valid");
        assert_eq!(back, all);
        assert_eq!(text(|o| write_byte_array(o, &[])), "[]");
        assert_eq!(text(|o| write_byte_array(o, &[0])), "[0]");
        assert_eq!(text(|o| write_hex(o, &[0x0a, 0xbc, 0xff])), "\"0abcff\"");
        assert_eq!(text(|o| write_hex(o, &[])), "\"\"");
        let mut out = b"[1,".to_vec();
        write_hex(&mut out, &all);
        out.push(b']');
        let want = format!("[1,\"{}\"]", hex::encode(&all));
        assert_eq!(String::from_utf8(out).expect("utf8"), want);
    }

    #[test]
    fn strings_are_escaped() {
        for s in [
            "",
            "plain",
            "q\"uote",
            "back\\slash",
            "nl\ncr\rtab\t",
            "\u{0}\u{1f}\u{8}\u{c}",
            "ünï €",
        ] {
            let json = text(|o| write_str(o, s));
            let back: String = serde_json::from_str(&json).expect("valid");
            assert_eq!(back, s);
        }
    }

    #[test]
    fn soft_confirmation_round_trips_with_exact_fee() {
        let sc = sample_sc();
        let json = text(|o| write_soft_confirmation(o, &sc));
        assert!(json.contains("\"l1FeeRate\":340282366920938463463374607431768211455,"));
        assert!(json.starts_with("{\"l2Height\":7,\"daSlotHeight\":3,\"daSlotHash\":\"abab"));
        assert_eq!(
            crate::wire::read::soft_confirmation(&json).expect("parses"),
            sc
        );
        assert_eq!(text(|o| write_opt_soft_confirmation(o, None)), "null");
    }

    #[test]
    fn commitments_round_trip() {
        let items = [sample_commitment(4, 1, 10), sample_commitment(5, 11, 20)];
        let json = text(|o| write_commitments(o, &items));
        assert_eq!(
            crate::wire::read::commitment_list(&json).expect("parses"),
            items
        );
        assert_eq!(text(|o| write_commitments(o, &[])), "[]");
    }

    #[test]
    fn proof_round_trips_in_the_spec_shape() {
        let p = VerifiedBatchProof {
            proof: (0..1000).map(|i| (i % 256) as u8).collect(),
            ..crate::types::sample_proof(12, 99)
        };
        let json = text(|o| write_verified_batch_proof(o, &p));
        assert!(json.starts_with("{\"proof\":{\"proof\":[0,1,2,"));
        assert!(json.ends_with(",\"height\":12}}"));
        let v: serde_json::Value = serde_json::from_str(&json).expect("valid");
        assert_eq!(
            v["proof"]["proofOutput"]["stateDiff"]["01"],
            serde_json::Value::Null
        );
        assert_eq!(v["proof"]["proofOutput"]["stateDiff"]["aa"], "bb0c");
        let back = crate::wire::read::verified_batch_proof(&json)
            .expect("parses")
            .expect("some");
        assert_eq!(diff_sorted(back), diff_sorted(p));
    }

    #[test]
    fn status_and_sync_status() {
        assert_eq!(
            text(|o| write_status(o, Status::Finalized)),
            "\"Finalized\""
        );
        assert_eq!(
            text(|o| write_sync_status(o, LayerStatus::Synced(5), LayerStatus::Synced(9))),
            r#"{"l1Status":{"Synced":5},"l2Status":{"Synced":9}}"#
        );
        assert_eq!(
            text(|o| write_sync_status(
                o,
                LayerStatus::Synced(5),
                LayerStatus::Syncing {
                    head: 10,
                    synced: 4
                }
            )),
            r#"{"l1Status":{"Synced":5},"l2Status":{"Syncing":{"headBlockNumber":10,"syncedBlockNumber":4}}}"#
        );
    }
}
