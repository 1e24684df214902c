//! What a batch proof says it proves: the receipt's journal, read as
//! Citrea's batch-proof circuit output, and held against a `proofOutput`.
//!
//! Citrea v0.6.2's batch-proof guest commits one borsh value to its journal
//! (`rollup-interface/src/state_machine/zk/mod.rs`):
//!
//! - [`BatchProofCircuitOutput`] (Kumquat's guest): initial and final state
//!   roots, prev and final soft-confirmation hashes, the state diff, the DA
//!   slot hash, the commitments range `(u32, u32)`, the sequencer key, the
//!   sequencer DA key, `last_l2_height` u64, preproven commitments.
//! - [`OldBatchProofCircuitOutput`] (the Genesis-era guest): initial and
//!   final state roots, `initial_batch_hash`, the state diff, the DA slot
//!   hash, the range, both keys, a validity condition (two DA hashes), the
//!   last active spec id (u8: 0 Genesis, 1 Kumquat), preproven commitments.
//!
//! A full node reads the new layout first and the old one second, each only
//! when every byte is consumed; an old-layout journal is served with zero
//! prev/final hashes and `lastL2Height` 0 (`process_zk_proof`). The devnet
//! writes its proofs' journals with [`encode`].

use std::collections::BTreeMap;
use std::fmt;

use borsh::{BorshDeserialize, BorshSerialize};

use crate::types::{Hash, ProofOutput, ZERO_HASH};

/// Citrea's `CumulativeStateDiff`: key -> value, `None` for a deleted key.
type StateDiff = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// Kumquat's batch-proof circuit output, field for field.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct BatchProofCircuitOutput {
    pub initial_state_root: Hash,
    pub final_state_root: Hash,
    pub prev_soft_confirmation_hash: Hash,
    pub final_soft_confirmation_hash: Hash,
    pub state_diff: StateDiff,
    pub da_slot_hash: Hash,
    pub sequencer_commitments_range: (u32, u32),
    pub sequencer_public_key: Vec<u8>,
    pub sequencer_da_public_key: Vec<u8>,
    pub last_l2_height: u64,
    /// `Vec<usize>` in Citrea: borsh writes a usize as a u64.
    pub preproven_commitments: Vec<u64>,
}

/// Citrea's `OldChainValidityCondition`: two DA block hashes the Genesis-era
/// guest still commits to.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct OldValidityCondition {
    pub prev_hash: Hash,
    pub block_hash: Hash,
}

/// Citrea's `SpecId`, as the Genesis-era output carries it (one byte; the
/// values a v0.6.2 node knows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
#[borsh(use_discriminant = true)]
#[repr(u8)]
pub enum SpecId {
    Genesis = 0,
    Kumquat = 1,
}

/// The Genesis-era batch-proof circuit output, field for field.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct OldBatchProofCircuitOutput {
    pub initial_state_root: Hash,
    pub final_state_root: Hash,
    pub initial_batch_hash: Hash,
    pub state_diff: StateDiff,
    pub da_slot_hash: Hash,
    pub sequencer_commitments_range: (u32, u32),
    pub sequencer_public_key: Vec<u8>,
    pub sequencer_da_public_key: Vec<u8>,
    pub validity_condition: OldValidityCondition,
    pub last_active_spec_id: SpecId,
    pub preproven_commitments: Vec<u64>,
}

/// A journal read in one of the two layouts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Journal {
    New(BatchProofCircuitOutput),
    Old(OldBatchProofCircuitOutput),
}

/// A journal that is neither layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalError {
    pub new_layout: String,
    pub old_layout: String,
}

impl fmt::Display for JournalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the receipt's journal is neither a BatchProofCircuitOutput ({}) nor an \
             OldBatchProofCircuitOutput ({})",
            self.new_layout, self.old_layout
        )
    }
}

impl std::error::Error for JournalError {}

/// Reads a journal: the new layout, else the old one, each only when it
/// consumes every byte.
pub fn decode(bytes: &[u8]) -> Result<Journal, JournalError> {
    let new_layout = match BatchProofCircuitOutput::try_from_slice(bytes) {
        Ok(out) => return Ok(Journal::New(out)),
        Err(e) => e.to_string(),
    };
    match OldBatchProofCircuitOutput::try_from_slice(bytes) {
        Ok(out) => Ok(Journal::Old(out)),
        Err(e) => Err(JournalError {
            new_layout,
            old_layout: e.to_string(),
        }),
    }
}

/// A proof output the circuit could not have written (a commitments range
/// past u32), or a journal borsh could not write.
#[derive(Debug)]
pub enum EncodeError {
    /// `sequencerCommitmentsRange` with an end past the circuit's u32.
    RangePastU32(u64, u64),
    /// borsh's own failure (writing into a Vec cannot fail; kept typed).
    Borsh(std::io::Error),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::RangePastU32(a, b) => write!(
                f,
                "sequencerCommitmentsRange [{a}, {b}] does not fit the circuit's (u32, u32)"
            ),
            EncodeError::Borsh(e) => write!(f, "borsh could not write the journal: {e}"),
        }
    }
}

impl std::error::Error for EncodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EncodeError::RangePastU32(..) => None,
            EncodeError::Borsh(e) => Some(e),
        }
    }
}

/// A `$T` literal whose fields shared by both journal layouts and
/// [`ProofOutput`] are copied from `$o` (written once here for the four
/// conversions: each layout from a `ProofOutput` and back), with the
/// commitments range and the state diff given converted, and the fields of
/// `$T`'s own after them.
macro_rules! with_shared_fields {
    ($T:ident from $o:expr; range: $range:expr, diff: $diff:expr, $($own:tt)*) => {
        $T {
            initial_state_root: $o.initial_state_root,
            final_state_root: $o.final_state_root,
            state_diff: $diff,
            da_slot_hash: $o.da_slot_hash,
            sequencer_commitments_range: $range,
            sequencer_public_key: $o.sequencer_public_key.clone(),
            sequencer_da_public_key: $o.sequencer_da_public_key.clone(),
            preproven_commitments: $o.preproven_commitments.clone(),
            $($own)*
        }
    };
}

fn range_u32(out: &ProofOutput) -> Result<(u32, u32), EncodeError> {
    let (a, b) = out.sequencer_commitments_range;
    match (u32::try_from(a), u32::try_from(b)) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        _ => Err(EncodeError::RangePastU32(a, b)),
    }
}

fn diff_map(out: &ProofOutput) -> StateDiff {
    out.state_diff.iter().cloned().collect()
}

/// The journal a batch-proof guest would commit for `out`: the new layout,
/// or, for a Genesis-era output (zero prev/final hashes and lastL2Height),
/// the old one with `initial_batch_hash` and the validity condition given
/// (the RPC does not show them).
pub fn encode(
    out: &ProofOutput,
    genesis_era: Option<(Hash, OldValidityCondition)>,
) -> Result<Vec<u8>, EncodeError> {
    let range = range_u32(out)?;
    let bytes = match genesis_era {
        None => borsh::to_vec(&with_shared_fields!(
            BatchProofCircuitOutput from out; range: range, diff: diff_map(out),
            prev_soft_confirmation_hash: out.prev_soft_confirmation_hash,
            final_soft_confirmation_hash: out.final_soft_confirmation_hash,
            last_l2_height: out.last_l2_height,
        )),
        Some((initial_batch_hash, validity_condition)) => borsh::to_vec(&with_shared_fields!(
            OldBatchProofCircuitOutput from out; range: range, diff: diff_map(out),
            initial_batch_hash,
            validity_condition,
            last_active_spec_id: SpecId::Genesis,
        )),
    };
    // Writing into a Vec cannot fail; keep the error typed all the same.
    bytes.map_err(EncodeError::Borsh)
}

impl Journal {
    /// `BatchProofCircuitOutput` or `OldBatchProofCircuitOutput`.
    pub fn layout(&self) -> &'static str {
        match self {
            Journal::New(_) => "BatchProofCircuitOutput",
            Journal::Old(_) => "OldBatchProofCircuitOutput",
        }
    }

    /// The output as a full node serves it: an old-layout journal with zero
    /// prev/final soft-confirmation hashes and lastL2Height 0.
    pub fn proof_output(&self) -> ProofOutput {
        let widen = |(first, last): (u32, u32)| (u64::from(first), u64::from(last));
        match self {
            Journal::New(o) => with_shared_fields!(
                ProofOutput from o;
                range: widen(o.sequencer_commitments_range),
                diff: o.state_diff.clone().into_iter().collect(),
                prev_soft_confirmation_hash: o.prev_soft_confirmation_hash,
                final_soft_confirmation_hash: o.final_soft_confirmation_hash,
                last_l2_height: o.last_l2_height,
            ),
            Journal::Old(o) => with_shared_fields!(
                ProofOutput from o;
                range: widen(o.sequencer_commitments_range),
                diff: o.state_diff.clone().into_iter().collect(),
                prev_soft_confirmation_hash: ZERO_HASH,
                final_soft_confirmation_hash: ZERO_HASH,
                last_l2_height: 0,
            ),
        }
    }
}

/// The first field (in the circuit's order) where two outputs differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldMismatch {
    /// The field's wire name (`finalStateRoot`).
    pub field: &'static str,
    /// The journal's value, as text.
    pub journal: String,
    /// The given output's value, as text.
    pub given: String,
}

impl fmt::Display for FieldMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the receipt's journal says {} {}, the proofOutput beside it says {}",
            self.field, self.journal, self.given
        )
    }
}

/// Compares the journal's output with `given`, field by field in the
/// circuit's order; `None` when they are equal. The state diff is compared
/// as a map (the wire lists it by key; so does borsh), and a difference
/// names the first key that differs.
pub fn first_difference(journal: &ProofOutput, given: &ProofOutput) -> Option<FieldMismatch> {
    // Each field as text: hashes and keys in hex.
    let text = |field, show: fn(&ProofOutput) -> String| {
        let (j, g) = (show(journal), show(given));
        (j != g).then_some(FieldMismatch {
            field,
            journal: j,
            given: g,
        })
    };
    let hex = |field, bytes: fn(&ProofOutput) -> &[u8]| {
        (bytes(journal) != bytes(given)).then(|| FieldMismatch {
            field,
            journal: hex::encode(bytes(journal)),
            given: hex::encode(bytes(given)),
        })
    };
    hex("initialStateRoot", |o| &o.initial_state_root)
        .or_else(|| hex("finalStateRoot", |o| &o.final_state_root))
        .or_else(|| {
            hex("prevSoftConfirmationHash", |o| {
                &o.prev_soft_confirmation_hash
            })
        })
        .or_else(|| {
            hex("finalSoftConfirmationHash", |o| {
                &o.final_soft_confirmation_hash
            })
        })
        .or_else(|| state_diff_difference(&journal.state_diff, &given.state_diff))
        .or_else(|| hex("daSlotHash", |o| &o.da_slot_hash))
        .or_else(|| {
            text("sequencerCommitmentsRange", |o| {
                let (a, b) = o.sequencer_commitments_range;
                format!("[{a}, {b}]")
            })
        })
        .or_else(|| hex("sequencerPublicKey", |o| &o.sequencer_public_key))
        .or_else(|| hex("sequencerDaPublicKey", |o| &o.sequencer_da_public_key))
        .or_else(|| text("lastL2Height", |o| o.last_l2_height.to_string()))
        .or_else(|| {
            text("preprovenCommitments", |o| {
                format!("{:?}", o.preproven_commitments)
            })
        })
}

fn state_diff_difference(
    journal: &[(Vec<u8>, Option<Vec<u8>>)],
    given: &[(Vec<u8>, Option<Vec<u8>>)],
) -> Option<FieldMismatch> {
    let mut j: Vec<_> = journal.iter().collect();
    let mut g: Vec<_> = given.iter().collect();
    j.sort();
    g.sort();
    let entry = |e: Option<&&(Vec<u8>, Option<Vec<u8>>)>| match e {
        None => "no entry".to_string(),
        Some((k, None)) => format!("key {} deleted (null)", hex::encode(k)),
        Some((k, Some(v))) => format!("key {} = {}", hex::encode(k), hex::encode(v)),
    };
    let first = (0..j.len().max(g.len())).find(|&i| j.get(i) != g.get(i))?;
    let side = |sorted: &[&(Vec<u8>, Option<Vec<u8>>)]| {
        let e = entry(sorted.get(first));
        format!("with {} entries (entry {first}: {e})", sorted.len())
    };
    Some(FieldMismatch {
        field: "stateDiff",
        journal: side(&j),
        given: side(&g),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output() -> ProofOutput {
        ProofOutput {
            initial_state_root: [1; 32],
            final_state_root: [2; 32],
            prev_soft_confirmation_hash: [3; 32],
            final_soft_confirmation_hash: [4; 32],
            state_diff: vec![(b"a".to_vec(), Some(b"1".to_vec())), (b"b".to_vec(), None)],
            da_slot_hash: [5; 32],
            sequencer_commitments_range: (0, 2),
            sequencer_public_key: vec![6; 32],
            sequencer_da_public_key: vec![7; 33],
            preproven_commitments: vec![1],
            last_l2_height: 40,
        }
    }

    #[test]
    fn a_new_layout_journal_reads_back_as_the_output_it_was_written_from() {
        let out = output();
        let bytes = encode(&out, None).unwrap();
        let journal = decode(&bytes).unwrap();
        assert_eq!(journal.layout(), "BatchProofCircuitOutput");
        assert_eq!(journal.proof_output(), out);
        assert_eq!(first_difference(&journal.proof_output(), &out), None);
    }

    #[test]
    fn an_old_layout_journal_reads_with_zero_hashes_and_last_height() {
        let mut out = output();
        out.prev_soft_confirmation_hash = ZERO_HASH;
        out.final_soft_confirmation_hash = ZERO_HASH;
        out.last_l2_height = 0;
        let vc = OldValidityCondition {
            prev_hash: [8; 32],
            block_hash: [9; 32],
        };
        let bytes = encode(&out, Some(([10; 32], vc))).unwrap();
        let journal = decode(&bytes).unwrap();
        assert_eq!(journal.layout(), "OldBatchProofCircuitOutput");
        assert_eq!(journal.proof_output(), out);
    }

    #[test]
    fn a_journal_with_a_byte_left_over_or_missing_is_neither_layout() {
        let mut bytes = encode(&output(), None).unwrap();
        bytes.push(0);
        let e = decode(&bytes).unwrap_err().to_string();
        assert!(e.contains("neither a BatchProofCircuitOutput"), "{e}");
        bytes.truncate(bytes.len() - 2);
        assert!(decode(&bytes).is_err());
        assert!(decode(&[]).is_err());
    }

    #[test]
    fn a_huge_length_prefix_is_an_error_not_an_allocation() {
        // 4 x 32-byte hashes, then a state diff claiming u32::MAX entries.
        let mut bytes = vec![0u8; 128];
        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&bytes).is_err());
    }

    #[test]
    fn the_first_differing_field_is_named_in_circuit_order() {
        let out = output();
        let mut other = output();
        other.last_l2_height = 41;
        other.da_slot_hash = [0; 32];
        let m = first_difference(&out, &other).unwrap();
        assert_eq!(m.field, "daSlotHash");
        other.da_slot_hash = out.da_slot_hash;
        let m = first_difference(&out, &other).unwrap();
        assert_eq!(
            (m.field, m.journal.as_str(), m.given.as_str()),
            ("lastL2Height", "40", "41")
        );
        other.last_l2_height = 40;
        other.state_diff[1].1 = Some(vec![0xff]);
        let m = first_difference(&out, &other).unwrap();
        assert_eq!(m.field, "stateDiff");
        assert!(m.to_string().contains("key 62 deleted (null)"), "{m}");
        assert!(m.to_string().contains("key 62 = ff"), "{m}");
    }

    #[test]
    fn a_range_past_u32_cannot_be_a_journal() {
        let mut out = output();
        out.sequencer_commitments_range = (0, u64::from(u32::MAX) + 1);
        let e = encode(&out, None).unwrap_err();
        assert!(
            matches!(e, EncodeError::RangePastU32(0, 4_294_967_296)),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "sequencerCommitmentsRange [0, 4294967296] does not fit the circuit's (u32, u32)"
        );
    }
}
