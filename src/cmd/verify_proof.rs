//! `ledgerd verify-proof FILE`: audits batch proofs offline, as the sync
//! thread would check them ([`crate::proof`]).
//!
//! FILE holds a proof as an RPC answers it: `{"proof":[..] or "hex",
//! "proofOutput":{..}}` (Citrea's shape), `{"proof":{"proof":..,
//! "proofOutput":..,"height":n}}` (ledgerd's), an array of either (method
//! 11), any of these inside a JSON-RPC envelope's `result`, or the raw
//! receipt bytes. For each proof it prints the decoded journal, whether it
//! matches the `proofOutput` beside it, and whether the receipt verifies
//! against the batch-proof image of `--network` or `--batch-proof-image`
//! for the journal's fork (with neither, the image the receipt claims: its
//! seal must still hold). The command succeeds only when every proof would
//! be accepted by a node with the same flags.

use std::fmt;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;

use super::input_file;
use crate::chain_rules::{ForkTable, Network};
use crate::flags::{heading, number, ConfigError};
use crate::proof::journal::{self, Journal};
use crate::proof::{receipt, verify_decoded, ProofRules};
use crate::types::ProofOutput;

/// How to judge the proofs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerifyProofOptions {
    pub rules: ProofRules,
    pub forks: ForkTable,
}

/// Input that holds no proof to check (or a report that cannot be written).
#[derive(Debug)]
pub enum InputError {
    /// `"proof"` is a string but not hex.
    ProofNotHex(hex::FromHexError),
    /// `"proof"` is an array, but not of whole numbers 0-255.
    ProofNotBytes,
    /// `"proof"` is neither an array nor a string.
    ProofNotArrayOrHex,
    /// An item that is not an object.
    NotAnObject,
    /// An object without `"proof"`.
    NoProof,
    /// A `"proofOutput"` that is not one.
    ProofOutput(crate::wire::read::WireError),
    /// No bytes at all.
    Empty,
    /// An empty JSON array.
    NoProofs,
    /// A `null` answer.
    Null,
    /// Writing the report failed.
    Report(std::io::Error),
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::ProofNotHex(e) => write!(f, "\"proof\" is a string but not hex ({e})"),
            InputError::ProofNotBytes => {
                f.write_str("\"proof\" is an array but not of bytes (whole numbers 0-255)")
            }
            InputError::ProofNotArrayOrHex => {
                f.write_str("\"proof\" must be an array of bytes or a hex string")
            }
            InputError::NotAnObject => {
                f.write_str("a proof must be an object with \"proof\" (and \"proofOutput\")")
            }
            InputError::NoProof => f.write_str("the object has no \"proof\""),
            InputError::ProofOutput(e) => write!(f, "\"proofOutput\" cannot be read: {e}"),
            InputError::Empty => f.write_str("the input is empty"),
            InputError::NoProofs => f.write_str("the array holds no proofs"),
            InputError::Null => f.write_str("the answer is null: no proof"),
            InputError::Report(e) => write!(f, "cannot write the report: {e}"),
        }
    }
}

impl std::error::Error for InputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InputError::ProofNotHex(e) => Some(e),
            InputError::ProofOutput(e) => Some(e),
            InputError::Report(e) => Some(e),
            _ => None,
        }
    }
}

/// One proof from the input: its bytes and the output given beside them.
#[derive(Debug)]
struct Given {
    bytes: Vec<u8>,
    output: Option<ProofOutput>,
}

fn proof_bytes(v: &Value) -> Result<Vec<u8>, InputError> {
    match v {
        Value::String(s) => {
            let digits = s.strip_prefix("0x").unwrap_or(s);
            hex::decode(digits).map_err(InputError::ProofNotHex)
        }
        Value::Array(items) => items
            .iter()
            .map(|x| x.as_u64().and_then(|n| u8::try_from(n).ok()))
            .collect::<Option<Vec<u8>>>()
            .ok_or(InputError::ProofNotBytes),
        _ => Err(InputError::ProofNotArrayOrHex),
    }
}

fn one(v: &Value) -> Result<Given, InputError> {
    let Some(obj) = v.as_object() else {
        return Err(InputError::NotAnObject);
    };
    let Some(proof) = obj.get("proof") else {
        return Err(InputError::NoProof);
    };
    // ledgerd's shape: {"proof":{"proof":..,"proofOutput":..,"height":n}}.
    if proof.is_object() {
        return one(proof);
    }
    let output = match obj.get("proofOutput") {
        None | Some(Value::Null) => None,
        Some(o) => {
            Some(crate::wire::read::proof_output(&o.to_string()).map_err(InputError::ProofOutput)?)
        }
    };
    Ok(Given {
        bytes: proof_bytes(proof)?,
        output,
    })
}

/// The proofs in `input`: JSON as described in the module docs, else raw
/// receipt bytes.
fn read(input: &[u8]) -> Result<Vec<Given>, InputError> {
    let first = input.iter().find(|b| !b.is_ascii_whitespace());
    let json = match first {
        Some(b'{' | b'[') => serde_json::from_slice::<Value>(input).ok(),
        _ => None,
    };
    let Some(mut v) = json else {
        if input.is_empty() {
            return Err(InputError::Empty);
        }
        return Ok(vec![Given {
            bytes: input.to_vec(),
            output: None,
        }]);
    };
    if let Some(result) = v.get_mut("result") {
        v = result.take();
    }
    match &v {
        Value::Array(items) => {
            if items.is_empty() {
                return Err(InputError::NoProofs);
            }
            items.iter().map(one).collect()
        }
        Value::Null => Err(InputError::Null),
        _ => Ok(vec![one(&v)?]),
    }
}

fn write_journal(out: &mut impl Write, journal: &Journal) -> std::io::Result<()> {
    let o = journal.proof_output();
    let mut rows: Vec<(&str, String)> = vec![
        ("initialStateRoot", hex::encode(o.initial_state_root)),
        ("finalStateRoot", hex::encode(o.final_state_root)),
    ];
    match journal {
        Journal::New(n) => rows.extend([
            (
                "prevSoftConfirmationHash",
                hex::encode(n.prev_soft_confirmation_hash),
            ),
            (
                "finalSoftConfirmationHash",
                hex::encode(n.final_soft_confirmation_hash),
            ),
        ]),
        Journal::Old(old) => rows.push(("initialBatchHash", hex::encode(old.initial_batch_hash))),
    }
    let (a, b) = o.sequencer_commitments_range;
    rows.extend([
        ("stateDiff", format!("{} entries", o.state_diff.len())),
        ("daSlotHash", hex::encode(o.da_slot_hash)),
        ("sequencerCommitmentsRange", format!("[{a}, {b}]")),
        ("sequencerPublicKey", hex::encode(&o.sequencer_public_key)),
        (
            "sequencerDaPublicKey",
            hex::encode(&o.sequencer_da_public_key),
        ),
    ]);
    match journal {
        Journal::New(n) => rows.push(("lastL2Height", n.last_l2_height.to_string())),
        Journal::Old(old) => rows.extend([
            (
                "validityCondition",
                format!(
                    "prev {} block {}",
                    hex::encode(old.validity_condition.prev_hash),
                    hex::encode(old.validity_condition.block_hash)
                ),
            ),
            ("lastActiveSpecId", format!("{:?}", old.last_active_spec_id)),
        ]),
    }
    rows.push((
        "preprovenCommitments",
        format!("{:?}", o.preproven_commitments),
    ));
    writeln!(out, "  journal: {}", journal.layout())?;
    for (name, value) in rows {
        writeln!(out, "    {name:<25} {value}")?;
    }
    Ok(())
}

/// Checks one proof, printing each step; true when a node would accept it.
fn check_one(
    given: &Given,
    options: &VerifyProofOptions,
    out: &mut impl Write,
) -> std::io::Result<bool> {
    let decoded = match receipt::decode(&given.bytes) {
        Ok(r) => r,
        Err(e) => return refused(out, "receipt", e),
    };
    let (kind, bytes) = (decoded.kind().name(), decoded.journal().len());
    writeln!(out, "  receipt: a {kind} receipt, journal {bytes} bytes")?;
    let journal = match journal::decode(decoded.journal()) {
        Ok(j) => j,
        Err(e) => return refused(out, "journal", e),
    };
    write_journal(out, &journal)?;
    let mut ok = true;
    match &given.output {
        None => writeln!(
            out,
            "  proofOutput: none given beside the bytes (the journal is the output)"
        )?,
        Some(o) => match journal::first_difference(&journal.proof_output(), o) {
            None => writeln!(out, "  proofOutput: matches the journal, field by field")?,
            Some(m) => {
                writeln!(out, "  proofOutput: DIFFERS: {m}")?;
                ok = false;
            }
        },
    }
    let image = match options.rules.image_for(&decoded, &journal, &options.forks) {
        Ok(image) => image,
        Err(e) => return refused(out, "verification", e),
    };
    match verify_decoded(&decoded, &image, &options.rules) {
        Ok(v) => writeln!(
            out,
            "  verification: {} {}: {}",
            image,
            hex::encode(image.id),
            v.describe()
        )?,
        Err(e) => ok = refused(out, "verification", e)?,
    }
    Ok(ok)
}

/// The report's line for a step that refused the proof: `false`.
fn refused(out: &mut impl Write, step: &str, why: impl fmt::Display) -> std::io::Result<bool> {
    writeln!(out, "  {step}: REFUSED: {why}")?;
    Ok(false)
}

/// Checks every proof in `input`, writing the report to `out`. `Ok(n)`:
/// how many proofs a node with these options would refuse (0: all pass).
pub fn check_all(
    input: &[u8],
    options: &VerifyProofOptions,
    out: &mut impl Write,
) -> Result<usize, InputError> {
    let proofs = read(input)?;
    let mut refused = 0;
    for (i, given) in proofs.iter().enumerate() {
        let io = InputError::Report;
        let (n, bytes) = (proofs.len(), given.bytes.len());
        writeln!(out, "proof {} of {n}: {bytes} bytes", i + 1).map_err(io)?;
        if !check_one(given, options, out).map_err(io)? {
            refused += 1;
        }
    }
    Ok(refused)
}

/// `ledgerd verify-proof [--network N] [--allow-fake-proofs] FILE`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyProof {
    /// Proofs as the RPC answers them, or raw receipt bytes; `-` reads stdin.
    pub file: PathBuf,
    /// `--network`'s images and `--allow-fake-proofs`; `--network` /
    /// `--kumquat-height`: the fork of a new-layout journal.
    pub options: VerifyProofOptions,
}

/// `ledgerd verify-proof FILE`: an input, the fork table and the proof
/// flags (no sequencer key: a proof carries none).
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Batch proofs as a node answered them, or raw receipt bytes; - reads stdin
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Testnet, devnet, mainnet or nightly: Citrea v0.6.2's Kumquat height and batch-proof images for that network
    #[arg(long, value_name = "NAME", value_parser = crate::chain_rules::args::network, help_heading = heading::CHAIN_RULES)]
    pub network: Option<Network>,
    /// Genesis rules below L2 height H, Kumquat from H [default: the network's, else 0: Kumquat for every block]
    #[arg(long, value_name = "H", value_parser = number::<u64>, help_heading = heading::CHAIN_RULES)]
    pub kumquat_height: Option<u64>,
    #[command(flatten)]
    pub proof: crate::proof::args::ProofArgs,
    #[command(flatten)]
    pub file_args: super::FileArgs,
}

pub fn resolve(v: Args) -> Result<VerifyProof, ConfigError> {
    let chain = crate::chain_rules::args::ChainRulesArgs {
        network: v.network,
        kumquat_height: v.kumquat_height,
        sequencer_pubkey: None,
    };
    Ok(VerifyProof {
        file: input_file(
            v.file,
            "verify-proof needs a FILE: a proof as the RPC answers it, or raw receipt bytes \
             (`-` reads stdin)",
        )?,
        options: VerifyProofOptions {
            rules: v
                .proof
                .receipt_rules(v.network, false)
                .map_err(ConfigError)?,
            forks: chain.forks(),
        },
    })
}

impl VerifyProof {
    /// The report on stdout; exit 0 only when every proof would be
    /// accepted, 1 when one would not, 2 when the input cannot be read.
    pub fn run(&self) -> ExitCode {
        let bytes = match super::read_input("verify-proof", &self.file) {
            Ok(b) => b,
            Err(code) => return code,
        };
        let mut out = std::io::stdout().lock();
        let outcome = check_all(&bytes, &self.options, &mut out)
            .map(|refused| (refused == 0, format!("{refused} proof(s) refused")));
        super::check_exit("verify-proof", &self.file, outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_without_a_proof_says_which_case_it_is() {
        let no_proof = |input: &str| read(input.as_bytes()).unwrap_err();
        assert!(matches!(no_proof(""), InputError::Empty));
        assert!(matches!(no_proof(r#"{"result":null}"#), InputError::Null));
        assert!(matches!(no_proof("[]"), InputError::NoProofs));
        assert!(matches!(no_proof("[7]"), InputError::NotAnObject));
        assert!(matches!(no_proof(r#"{"x":1}"#), InputError::NoProof));
        assert!(matches!(
            no_proof(r#"{"proof":[256]}"#),
            InputError::ProofNotBytes
        ));
        assert!(matches!(
            no_proof(r#"{"proof":7}"#),
            InputError::ProofNotArrayOrHex
        ));
        let e = no_proof(r#"{"proof":"0xzz"}"#);
        assert!(matches!(e, InputError::ProofNotHex(_)), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("\"proof\" is a string but not hex ("),
            "{e}"
        );
        assert!(std::error::Error::source(&e).is_some());
        let e = no_proof(r#"{"proof":[1],"proofOutput":{}}"#);
        assert!(matches!(e, InputError::ProofOutput(_)), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("\"proofOutput\" cannot be read: "),
            "{e}"
        );
    }
}
