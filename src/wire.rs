//! Reading the RPC's JSON shapes back into [`crate::types`] values.
//!
//! The server never needs this (it only writes JSON, see [`crate::json`]);
//! the upstream follower, `ledgerd import` and the tests do. Parsing goes
//! through typed serde structs, not `serde_json::Value`, so that `l1FeeRate`
//! keeps all 128 bits.

use std::borrow::Cow;

use serde::Deserialize;

use crate::types::{Hash, ProofOutput, SequencerCommitment, SoftConfirmation, VerifiedBatchProof};

/// A JSON value that was not the shape of an RPC record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(pub String);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WireError {}

impl From<serde_json::Error> for WireError {
    fn from(e: serde_json::Error) -> Self {
        WireError(e.to_string())
    }
}

/// Hex digit values by byte; 0xff for a byte that is not a hex digit.
static HEX_VALUE: [u8; 256] = {
    let mut table = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// Decodes hex digit pairs into `out` (as long as `digits` is twice `out`).
fn decode_into(field: &str, digits: &[u8], out: &mut [u8]) -> Result<(), WireError> {
    let mut bad = 0u8;
    for (pair, byte) in digits.chunks_exact(2).zip(out.iter_mut()) {
        let (hi, lo) = (HEX_VALUE[pair[0] as usize], HEX_VALUE[pair[1] as usize]);
        bad |= hi | lo;
        *byte = hi << 4 | (lo & 0x0f);
    }
    if bad & 0xf0 == 0 {
        return Ok(());
    }
    all_hex(field, digits)
}

/// Fails with the position of the first character that is not a hex digit.
fn all_hex(field: &str, digits: &[u8]) -> Result<(), WireError> {
    match digits.iter().position(|&c| HEX_VALUE[c as usize] == 0xff) {
        None => Ok(()),
        Some(at) => Err(WireError(format!(
            "{field} is not hex: {:?} at position {at}",
            digits[at] as char
        ))),
    }
}

fn strip(s: &str) -> &[u8] {
    s.strip_prefix("0x").unwrap_or(s).as_bytes()
}

fn hex_bytes(field: &str, s: &str) -> Result<Vec<u8>, WireError> {
    let digits = strip(s);
    if !digits.len().is_multiple_of(2) {
        return Err(WireError(format!(
            "{field} is not hex: it has an odd number of digits ({})",
            digits.len()
        )));
    }
    let mut out = vec![0u8; digits.len() / 2];
    decode_into(field, digits, &mut out)?;
    Ok(out)
}

fn hex_array<const N: usize>(field: &str, s: &str) -> Result<[u8; N], WireError> {
    let digits = strip(s);
    if digits.len() != 2 * N {
        // Say what is wrong first: a stray character, then the length.
        all_hex(field, digits)?;
        if !digits.len().is_multiple_of(2) {
            return Err(WireError(format!(
                "{field} is not hex: it has an odd number of digits ({})",
                digits.len()
            )));
        }
        return Err(WireError(format!(
            "{field} must be {N} bytes, got {}",
            digits.len() / 2
        )));
    }
    let mut out = [0u8; N];
    decode_into(field, digits, &mut out)?;
    Ok(out)
}

fn hex_list(field: &str, items: &[Cow<'_, str>]) -> Result<Vec<Vec<u8>>, WireError> {
    items.iter().map(|s| hex_bytes(field, s)).collect()
}

/// A soft confirmation as the JSON has it. The strings borrow from the
/// answer's text (hex never needs escapes), so reading a block allocates
/// only its decoded bytes.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireSoftConfirmation<'a> {
    l2_height: u64,
    da_slot_height: u64,
    #[serde(borrow)]
    da_slot_hash: Cow<'a, str>,
    #[serde(borrow)]
    da_slot_txs_commitment: Cow<'a, str>,
    #[serde(borrow)]
    hash: Cow<'a, str>,
    #[serde(borrow)]
    prev_hash: Cow<'a, str>,
    #[serde(default, borrow)]
    txs: Vec<Cow<'a, str>>,
    #[serde(borrow)]
    state_root: Cow<'a, str>,
    #[serde(borrow)]
    soft_confirmation_signature: Cow<'a, str>,
    #[serde(borrow)]
    pub_key: Cow<'a, str>,
    #[serde(default, borrow)]
    deposit_data: Vec<Cow<'a, str>>,
    l1_fee_rate: u128,
    timestamp: u64,
}

impl TryFrom<WireSoftConfirmation<'_>> for SoftConfirmation {
    type Error = WireError;

    fn try_from(w: WireSoftConfirmation<'_>) -> Result<Self, WireError> {
        Ok(SoftConfirmation {
            l2_height: w.l2_height,
            da_slot_height: w.da_slot_height,
            da_slot_hash: hex_array("daSlotHash", &w.da_slot_hash)?,
            da_slot_txs_commitment: hex_array("daSlotTxsCommitment", &w.da_slot_txs_commitment)?,
            hash: hex_array("hash", &w.hash)?,
            prev_hash: hex_array("prevHash", &w.prev_hash)?,
            txs: hex_list("txs", &w.txs)?,
            state_root: hex_array("stateRoot", &w.state_root)?,
            signature: hex_array("softConfirmationSignature", &w.soft_confirmation_signature)?,
            pub_key: hex_array("pubKey", &w.pub_key)?,
            deposit_data: hex_list("depositData", &w.deposit_data)?,
            l1_fee_rate: w.l1_fee_rate,
            timestamp: w.timestamp,
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireCommitment {
    found_in_l1: u64,
    merkle_root: String,
    l2_start_block_number: u64,
    l2_end_block_number: u64,
}

impl TryFrom<WireCommitment> for SequencerCommitment {
    type Error = WireError;

    fn try_from(w: WireCommitment) -> Result<Self, WireError> {
        Ok(SequencerCommitment {
            found_in_l1: w.found_in_l1,
            merkle_root: hex_array("merkleRoot", &w.merkle_root)?,
            l2_start_block_number: w.l2_start_block_number,
            l2_end_block_number: w.l2_end_block_number,
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireProofOutput {
    initial_state_root: String,
    final_state_root: String,
    prev_soft_confirmation_hash: String,
    final_soft_confirmation_hash: String,
    #[serde(default)]
    state_diff: std::collections::BTreeMap<String, Option<String>>,
    da_slot_hash: String,
    sequencer_commitments_range: (u64, u64),
    sequencer_public_key: String,
    sequencer_da_public_key: String,
    #[serde(default)]
    preproven_commitments: Vec<u64>,
    last_l2_height: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireProofInner {
    proof: Vec<u8>,
    proof_output: WireProofOutput,
    height: u64,
}

#[derive(Deserialize)]
struct WireProof {
    proof: WireProofInner,
}

impl TryFrom<WireProof> for VerifiedBatchProof {
    type Error = WireError;

    fn try_from(w: WireProof) -> Result<Self, WireError> {
        let o = w.proof.proof_output;
        let mut state_diff = Vec::with_capacity(o.state_diff.len());
        for (k, v) in o.state_diff {
            let value = match v {
                Some(v) => Some(hex_bytes("stateDiff value", &v)?),
                None => None,
            };
            state_diff.push((hex_bytes("stateDiff key", &k)?, value));
        }
        Ok(VerifiedBatchProof {
            proof: w.proof.proof,
            height: w.proof.height,
            proof_output: ProofOutput {
                initial_state_root: hex_array("initialStateRoot", &o.initial_state_root)?,
                final_state_root: hex_array("finalStateRoot", &o.final_state_root)?,
                prev_soft_confirmation_hash: hex_array(
                    "prevSoftConfirmationHash",
                    &o.prev_soft_confirmation_hash,
                )?,
                final_soft_confirmation_hash: hex_array(
                    "finalSoftConfirmationHash",
                    &o.final_soft_confirmation_hash,
                )?,
                state_diff,
                da_slot_hash: hex_array("daSlotHash", &o.da_slot_hash)?,
                sequencer_commitments_range: o.sequencer_commitments_range,
                sequencer_public_key: hex_bytes("sequencerPublicKey", &o.sequencer_public_key)?,
                sequencer_da_public_key: hex_bytes(
                    "sequencerDaPublicKey",
                    &o.sequencer_da_public_key,
                )?,
                preproven_commitments: o.preproven_commitments,
                last_l2_height: o.last_l2_height,
            },
        })
    }
}

/// A soft confirmation from its JSON text.
pub fn soft_confirmation(json: &str) -> Result<SoftConfirmation, WireError> {
    serde_json::from_str::<WireSoftConfirmation>(json)?.try_into()
}

/// A `ledger_getSoftConfirmationRange` result: one entry per height, `None`
/// where the height is not stored.
pub fn soft_confirmation_list(json: &str) -> Result<Vec<Option<SoftConfirmation>>, WireError> {
    let items: Vec<Option<WireSoftConfirmation>> = serde_json::from_str(json)?;
    items
        .into_iter()
        .map(|w| w.map(SoftConfirmation::try_from).transpose())
        .collect()
}

/// A commitments result (`null` -> empty).
pub fn commitment_list(json: &str) -> Result<Vec<SequencerCommitment>, WireError> {
    let items: Option<Vec<WireCommitment>> = serde_json::from_str(json)?;
    items
        .unwrap_or_default()
        .into_iter()
        .map(SequencerCommitment::try_from)
        .collect()
}

/// A verified-proof result (`null` -> `None`).
pub fn verified_batch_proof(json: &str) -> Result<Option<VerifiedBatchProof>, WireError> {
    let item: Option<WireProof> = serde_json::from_str(json)?;
    item.map(VerifiedBatchProof::try_from).transpose()
}

/// A hash from hex text (with or without `0x`).
pub fn hash(field: &str, s: &str) -> Result<Hash, WireError> {
    hex_array(field, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_reads_both_cases_with_or_without_0x_and_says_what_is_wrong() {
        assert_eq!(hex_bytes("f", "0x00aBff").unwrap(), vec![0x00, 0xab, 0xff]);
        assert_eq!(hex_bytes("f", "").unwrap(), Vec::<u8>::new());
        assert_eq!(hex_array::<2>("f", "A0b1").unwrap(), [0xa0, 0xb1]);
        let e = hex_bytes("txs", "abc").unwrap_err();
        assert!(e.0.contains("odd number of digits"), "{e}");
        let e = hex_bytes("txs", "0x12g4").unwrap_err();
        assert!(e.0.contains("'g' at position 2"), "{e}");
        let e = hex_array::<32>("hash", "00ff").unwrap_err();
        assert_eq!(e.0, "hash must be 32 bytes, got 2");
    }
}
