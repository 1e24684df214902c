//! Reading the RPC's JSON shapes back into [`crate::types`] values.
//!
//! The server never needs this (it only writes JSON, see [`crate::wire::write`]);
//! the upstream follower, `ledgerd import` and the tests do. Parsing goes
//! through typed serde structs, not `serde_json::Value`, so that `l1FeeRate`
//! keeps all 128 bits.

use serde::Deserialize;

use crate::hexstr::{self, HexError};
use crate::types::{Hash, ProofOutput, SequencerCommitment, SoftConfirmation, VerifiedBatchProof};

/// A JSON value that was not the shape of an RPC record. Each case prints
/// the sentence a person reads; a caller can also tell them apart.
#[derive(Debug)]
pub enum WireError {
    /// Not JSON, or not the record's shape (serde's own sentence).
    Json(serde_json::Error),
    /// A hex field that does not decode to what the field holds.
    Hex {
        /// The field's name as the JSON spells it.
        field: String,
        /// What is wrong with its text.
        error: HexError,
    },
    /// A verified proof that says nothing of the DA slot it was verified on.
    NoProofHeight,
    /// Method 11's answer in none of its shapes (`null`, one object, an array).
    NotProofsShape(serde_json::Error),
    /// A proof of another DA slot than the one asked for.
    OtherSlot {
        /// The slot asked for.
        asked: u64,
        /// The slot of the proof in the answer.
        got: u64,
    },
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Json(e) => write!(f, "{e}"),
            WireError::Hex { field, error } => write!(f, "{field} {error}"),
            WireError::NoProofHeight => {
                f.write_str("the proof has no height (the DA slot it was verified on)")
            }
            WireError::NotProofsShape(e) => write!(
                f,
                "neither null, a proof object nor an array of proofs ({e})"
            ),
            WireError::OtherSlot { asked, got } => write!(
                f,
                "asked for the proofs of DA slot {asked}, got one of slot {got}"
            ),
        }
    }
}

impl std::error::Error for WireError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // Json's sentence is serde's own: it is not the error's cause too.
            WireError::Hex { error, .. } => Some(error),
            WireError::NotProofsShape(e) => Some(e),
            _ => None,
        }
    }
}

wrap_errors!(WireError {
    Json(serde_json::Error),
});

fn hex_error(field: &str) -> impl FnOnce(HexError) -> WireError + '_ {
    move |error| WireError::Hex {
        field: field.to_owned(),
        error,
    }
}

fn hex_bytes(field: &str, s: &str) -> Result<Vec<u8>, WireError> {
    hexstr::decode(s).map_err(hex_error(field))
}

fn hex_array<const N: usize>(field: &str, s: &str) -> Result<[u8; N], WireError> {
    hexstr::decode_array(s).map_err(hex_error(field))
}

fn hex_list(field: &str, items: &[&str]) -> Result<Vec<Vec<u8>>, WireError> {
    items.iter().map(|s| hex_bytes(field, s)).collect()
}

/// A soft confirmation as the JSON has it. The strings borrow from the
/// answer's text (hex never needs escapes: a string written with them is
/// refused), so reading a block allocates only its decoded bytes.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireSoftConfirmation<'a> {
    l2_height: u64,
    da_slot_height: u64,
    da_slot_hash: &'a str,
    da_slot_txs_commitment: &'a str,
    hash: &'a str,
    prev_hash: &'a str,
    #[serde(default, borrow)]
    txs: Vec<&'a str>,
    state_root: &'a str,
    soft_confirmation_signature: &'a str,
    pub_key: &'a str,
    #[serde(default, borrow)]
    deposit_data: Vec<&'a str>,
    l1_fee_rate: u128,
    timestamp: u64,
}

impl TryFrom<WireSoftConfirmation<'_>> for SoftConfirmation {
    type Error = WireError;

    fn try_from(w: WireSoftConfirmation<'_>) -> Result<Self, WireError> {
        Ok(SoftConfirmation {
            l2_height: w.l2_height,
            da_slot_height: w.da_slot_height,
            da_slot_hash: hex_array("daSlotHash", w.da_slot_hash)?,
            da_slot_txs_commitment: hex_array("daSlotTxsCommitment", w.da_slot_txs_commitment)?,
            hash: hex_array("hash", w.hash)?,
            prev_hash: hex_array("prevHash", w.prev_hash)?,
            txs: hex_list("txs", &w.txs)?,
            state_root: hex_array("stateRoot", w.state_root)?,
            signature: hex_array("softConfirmationSignature", w.soft_confirmation_signature)?,
            pub_key: hex_array("pubKey", w.pub_key)?,
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

/// A proof and its output, with `height` inside (the seed's shape) or not
/// (Citrea's).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireProofInner {
    proof: Vec<u8>,
    proof_output: WireProofOutput,
    #[serde(default)]
    height: Option<u64>,
}

/// `{"proof":{..}}` (the seed's method 11 and 12) or
/// `{"proof":{..},"height":n}` (Citrea's method 12).
#[derive(Deserialize)]
struct WireProof {
    proof: WireProofInner,
    #[serde(default)]
    height: Option<u64>,
}

impl TryFrom<WireProofOutput> for ProofOutput {
    type Error = WireError;

    fn try_from(o: WireProofOutput) -> Result<Self, WireError> {
        let mut state_diff = Vec::with_capacity(o.state_diff.len());
        for (k, v) in o.state_diff {
            let value = v.map(|v| hex_bytes("stateDiff value", &v)).transpose()?;
            state_diff.push((hex_bytes("stateDiff key", &k)?, value));
        }
        Ok(ProofOutput {
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
            sequencer_da_public_key: hex_bytes("sequencerDaPublicKey", &o.sequencer_da_public_key)?,
            preproven_commitments: o.preproven_commitments,
            last_l2_height: o.last_l2_height,
        })
    }
}

impl WireProofInner {
    fn into_proof(self, height: u64) -> Result<VerifiedBatchProof, WireError> {
        Ok(VerifiedBatchProof {
            proof: self.proof,
            height,
            proof_output: self.proof_output.try_into()?,
        })
    }
}

/// A `proofOutput` object from its JSON text.
pub fn proof_output(json: &str) -> Result<ProofOutput, WireError> {
    serde_json::from_str::<WireProofOutput>(json)?.try_into()
}

impl TryFrom<WireProof> for VerifiedBatchProof {
    type Error = WireError;

    fn try_from(w: WireProof) -> Result<Self, WireError> {
        let height = w
            .proof
            .height
            .or(w.height)
            .ok_or(WireError::NoProofHeight)?;
        w.proof.into_proof(height)
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

/// A verified proof with its height (`null` -> `None`): the seed's shape
/// (`{"proof":{"proof":..,"proofOutput":..,"height":n}}`) or Citrea's
/// `ledger_getLastVerifiedBatchProof` (`{"proof":{..},"height":n}`).
pub fn verified_batch_proof(json: &str) -> Result<Option<VerifiedBatchProof>, WireError> {
    let item: Option<WireProof> = serde_json::from_str(json)?;
    item.map(VerifiedBatchProof::try_from).transpose()
}

/// A `ledger_getVerifiedBatchProofsBySlotHeight` result for DA slot `slot`,
/// in either shape: `null`, the seed's one object, or Citrea's array of
/// `{proof, proofOutput}` (which carries no height: it is `slot`).
pub fn verified_batch_proofs_on_slot(
    json: &str,
    slot: u64,
) -> Result<Vec<VerifiedBatchProof>, WireError> {
    // Method 11's answer comes in two shapes: the seed's one object
    // (`{"proof":{..}}`) and Citrea's array of `{proof, proofOutput}`. The
    // first byte tells which, so each is parsed once (serde's untagged
    // enums buffer the whole answer, 2 KB of proof bytes as numbers and
    // all, then parse it again).
    let shape_error = WireError::NotProofsShape;
    match json.trim_start().as_bytes().first() {
        Some(b'[') => {
            let list: Vec<WireProofInner> = serde_json::from_str(json).map_err(shape_error)?;
            list.into_iter()
                .map(|p| match p.height {
                    Some(got) if got != slot => Err(WireError::OtherSlot { asked: slot, got }),
                    _ => p.into_proof(slot),
                })
                .collect()
        }
        Some(b'{') => {
            let p: WireProof = serde_json::from_str(json).map_err(shape_error)?;
            let p = VerifiedBatchProof::try_from(p)?;
            let got = p.height;
            if got != slot {
                return Err(WireError::OtherSlot { asked: slot, got });
            }
            Ok(vec![p])
        }
        // Anything else must be `null`: no proofs.
        _ => {
            serde_json::from_str::<()>(json).map_err(shape_error)?;
            Ok(Vec::new())
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireSyncValues {
    head_block_number: u64,
    synced_block_number: u64,
}

#[derive(Deserialize)]
enum WireLayerStatus {
    Synced(u64),
    Syncing(WireSyncValues),
}

impl WireLayerStatus {
    fn layer(self) -> LayerSync {
        match self {
            WireLayerStatus::Synced(n) => LayerSync { synced: n, head: n },
            WireLayerStatus::Syncing(v) => LayerSync {
                synced: v.synced_block_number,
                head: v.head_block_number,
            },
        }
    }
}

/// One layer of a node's sync status: how far it is, and the head it has seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerSync {
    pub synced: u64,
    pub head: u64,
}

/// A node's sync status, both layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncStatus {
    pub l1: LayerSync,
    pub l2: LayerSync,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireSyncStatus {
    l1_status: WireLayerStatus,
    l2_status: WireLayerStatus,
}

/// A sync status (`svc_syncStatus` or `citrea_syncStatus`: one shape).
pub fn sync_status(json: &str) -> Result<SyncStatus, WireError> {
    let s: WireSyncStatus = serde_json::from_str(json)?;
    Ok(SyncStatus {
        l1: s.l1_status.layer(),
        l2: s.l2_status.layer(),
    })
}

/// A hash from hex text (with or without `0x`).
pub fn hash(field: &str, s: &str) -> Result<Hash, WireError> {
    hex_array(field, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = r#"{"initialStateRoot":"0101010101010101010101010101010101010101010101010101010101010101","finalStateRoot":"0202020202020202020202020202020202020202020202020202020202020202","prevSoftConfirmationHash":"0000000000000000000000000000000000000000000000000000000000000000","finalSoftConfirmationHash":"0000000000000000000000000000000000000000000000000000000000000000","stateDiff":{"aa":null},"daSlotHash":"0303030303030303030303030303030303030303030303030303030303030303","sequencerCommitmentsRange":[0,1],"sequencerPublicKey":"04","sequencerDaPublicKey":"05","preprovenCommitments":[2],"lastL2Height":0}"#;

    #[test]
    fn proofs_on_a_slot_read_in_the_seed_shape_and_in_citreas() {
        let seed = format!(r#"{{"proof":{{"proof":[1,2],"proofOutput":{OUTPUT},"height":7}}}}"#);
        let got = verified_batch_proofs_on_slot(&seed, 7).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].height, got[0].proof.clone()), (7, vec![1, 2]));
        assert_eq!(got[0].proof_output.preproven_commitments, vec![2]);
        let e = verified_batch_proofs_on_slot(&seed, 8).unwrap_err();
        assert!(e.to_string().contains("got one of slot 7"), "{e}");
        assert!(
            matches!(e, WireError::OtherSlot { asked: 8, got: 7 }),
            "{e:?}"
        );

        let citrea = format!(
            r#"[{{"proof":[1],"proofOutput":{OUTPUT}}},{{"proof":[2],"proofOutput":{OUTPUT}}}]"#
        );
        let got = verified_batch_proofs_on_slot(&citrea, 9).unwrap();
        assert_eq!(got.len(), 2);
        let one = format!(r#"[{{"proof":[3],"proofOutput":{OUTPUT}}}]"#);
        let got_one = verified_batch_proofs_on_slot(&one, 9).unwrap();
        assert_eq!((got_one.len(), got_one[0].height), (1, 9));
        assert!(got.iter().all(|p| p.height == 9));
        assert_eq!(got[1].proof, vec![2]);
        assert!(verified_batch_proofs_on_slot("null", 9).unwrap().is_empty());
        assert!(verified_batch_proofs_on_slot("[]", 9).unwrap().is_empty());
        assert!(verified_batch_proofs_on_slot("7", 9).is_err());
    }

    #[test]
    fn the_last_proof_reads_with_height_inside_or_outside() {
        let inside = format!(r#"{{"proof":{{"proof":[1],"proofOutput":{OUTPUT},"height":5}}}}"#);
        let outside = format!(r#"{{"proof":{{"proof":[1],"proofOutput":{OUTPUT}}},"height":5}}"#);
        let a = verified_batch_proof(&inside).unwrap().unwrap();
        let b = verified_batch_proof(&outside).unwrap().unwrap();
        assert_eq!(a, b);
        assert_eq!(a.height, 5);
        let none = format!(r#"{{"proof":{{"proof":[1],"proofOutput":{OUTPUT}}}}}"#);
        let e = verified_batch_proof(&none).unwrap_err();
        assert!(e.to_string().contains("no height"), "{e}");
        assert!(matches!(e, WireError::NoProofHeight), "{e:?}");
    }

    #[test]
    fn sync_status_reads_a_synced_and_a_syncing_layer() {
        let s = r#"{"l1Status":{"Synced":9},"l2Status":{"Syncing":{"headBlockNumber":50,"syncedBlockNumber":40}}}"#;
        let got = sync_status(s).unwrap();
        assert_eq!(got.l1, LayerSync { synced: 9, head: 9 });
        assert_eq!(
            got.l2,
            LayerSync {
                synced: 40,
                head: 50
            }
        );
    }

    #[test]
    fn hex_errors_name_the_field() {
        assert_eq!(hex_bytes("f", "0x00aBff").unwrap(), vec![0x00, 0xab, 0xff]);
        let e = hex_bytes("txs", "abc").unwrap_err();
        assert!(e.to_string().contains("odd number of digits"), "{e}");
        let e = hex_bytes("txs", "0x12g4").unwrap_err();
        assert!(e.to_string().contains("'g' at position 2"), "{e}");
        let e = hex_array::<32>("hash", "00ff").unwrap_err();
        assert_eq!(e.to_string(), "hash must be 32 bytes, got 2");
        let source = std::error::Error::source(&e).map(|s| s.to_string());
        assert_eq!(source.as_deref(), Some("must be 32 bytes, got 2"));
    }
}
