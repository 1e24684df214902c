//! Citrea's reveal transaction, read push by push (Citrea v0.6.2, `crates/bitcoin-da/src/helpers/
//! parsers.rs` and `helpers/mod.rs`; the prefixes in `crates/primitives/src/constants.rs`).
//!
//! A reveal transaction is one of ours when:
//!
//! 1. its wtxid, in raw (internal) byte order, starts with the namespace's two-byte prefix
//!    (`01 01` for sequencer commitments, `02 02` for the light-client namespace: proofs and
//!    method ids); the sender ground a nonce until it did;
//! 2. its first input spends a taproot output by script path, and that script is, push by push:
//!
//! ```text
//! <K>  OP_CHECKSIGVERIFY  <kind: 2 bytes, u16 LE>  OP_FALSE  OP_IF
//!     <signature>  <signer key>        (absent for a chunk part)
//!     <body push> …                    (one push for a commitment or a method id)
//! OP_ENDIF  <nonce>  OP_NIP
//! ```
//!
//! and nothing after. `K` is a throwaway key that only locks the commit output; the signer key
//! says who published the data. This module reads the layout only, and accepts exactly what
//! Citrea's own parser accepts (any push length for `K`, the signature, the key and the nonce);
//! [`crate::source::bitcoin::signer`] checks the signature and the key, [`crate::source::bitcoin::body`] the body.
use std::fmt;

use bitcoin::hashes::Hash;
use bitcoin::opcodes::all::{OP_CHECKSIGVERIFY, OP_ENDIF, OP_IF, OP_NIP};
use bitcoin::opcodes::Opcode;
use bitcoin::script::Instruction;
use bitcoin::{Script, Transaction, Witness};

/// The first byte of a taproot annex (BIP 341): a last witness element starting with it is not
/// the control block.
const ANNEX_TAG: u8 = 0x50;

/// Which reader a reveal is addressed to; each has its own wtxid prefix and its own kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Namespace {
    /// Sequencer commitments (Citrea's "batch proof" namespace), prefix `01 01`.
    BatchProof,
    /// Proofs, their chunks and batch-proof method ids, prefix `02 02`.
    LightClient,
}

impl Namespace {
    /// The bytes a reveal's raw-order wtxid starts with, on every network (Citrea builds with
    /// its `testing` feature use one byte; real nodes use these two).
    pub const fn prefix(self) -> [u8; 2] {
        match self {
            Namespace::BatchProof => [0x01, 0x01],
            Namespace::LightClient => [0x02, 0x02],
        }
    }

    /// Both namespaces' prefixes: what a block reader keeps transactions by.
    pub fn all_prefixes() -> Vec<Vec<u8>> {
        [Namespace::BatchProof, Namespace::LightClient]
            .map(|n| n.prefix().to_vec())
            .to_vec()
    }

    /// Whether a raw-order wtxid is addressed to this namespace.
    pub fn matches(self, wtxid: &[u8; 32]) -> bool {
        wtxid.starts_with(&self.prefix())
    }

    /// The namespace's name as a log line or an error says it.
    pub const fn name(self) -> &'static str {
        match self {
            Namespace::BatchProof => "sequencer-commitment",
            Namespace::LightClient => "light-client",
        }
    }
}

/// What a reveal carries: the two-byte kind pushed after `OP_CHECKSIGVERIFY`, per namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Batch-proof namespace, kind 0: a sequencer commitment (one body push, signed).
    SequencerCommitment,
    /// Light-client namespace, kind 0: a whole proof, brotli-compressed (body pushes, signed).
    Complete,
    /// Light-client namespace, kind 1 ("Chunked"): the list of chunk txids and wtxids of a proof
    /// too big for one transaction (body pushes, signed).
    Aggregate,
    /// Light-client namespace, kind 2 ("ChunkedPart"): one piece of a chunked proof (body
    /// pushes, unsigned: the aggregate that names it is signed).
    Chunk,
    /// Light-client namespace, kind 3: a new batch-proof method id (one body push, signed).
    BatchProofMethodId,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 5] = [
        Kind::SequencerCommitment,
        Kind::Complete,
        Kind::Aggregate,
        Kind::Chunk,
        Kind::BatchProofMethodId,
    ];

    /// The namespace this kind belongs to.
    pub const fn namespace(self) -> Namespace {
        match self {
            Kind::SequencerCommitment => Namespace::BatchProof,
            _ => Namespace::LightClient,
        }
    }

    /// The number pushed (as u16 little-endian) in the script.
    pub const fn code(self) -> u16 {
        match self {
            Kind::SequencerCommitment | Kind::Complete => 0,
            Kind::Aggregate => 1,
            Kind::Chunk => 2,
            Kind::BatchProofMethodId => 3,
        }
    }

    /// The kind a namespace gives a number, if it knows it.
    pub fn from_code(namespace: Namespace, code: u16) -> Option<Kind> {
        (Kind::ALL.into_iter()).find(|k| k.namespace() == namespace && k.code() == code)
    }

    /// Whether the envelope carries a signature and a signer key (all but chunk parts).
    pub const fn is_signed(self) -> bool {
        !matches!(self, Kind::Chunk)
    }

    /// Whether the body is exactly one push (commitments and method ids) or any number of pushes.
    const fn single_push_body(self) -> bool {
        matches!(self, Kind::SequencerCommitment | Kind::BatchProofMethodId)
    }

    /// Whether an empty body push is refused (Citrea refuses it in complete proofs and chunks,
    /// and takes it in an aggregate).
    const fn refuses_empty_push(self) -> bool {
        matches!(self, Kind::Complete | Kind::Chunk)
    }

    /// The kind's name as a log line or an error says it.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::SequencerCommitment => "sequencer commitment",
            Kind::Complete => "complete proof",
            Kind::Aggregate => "chunked-proof aggregate",
            Kind::Chunk => "proof chunk",
            Kind::BatchProofMethodId => "batch-proof method id",
        }
    }
}

/// The signature and the key that a signed envelope carries, as pushed (not yet checked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signed {
    /// Meant to be a 64-byte compact ECDSA signature `r || s` over SHA-256 of the body.
    pub signature: Vec<u8>,
    /// Meant to be the signer's 33-byte compressed secp256k1 key.
    pub signer: Vec<u8>,
}

/// A reveal transaction's envelope, read but not yet checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub kind: Kind,
    /// The throwaway key `K` the first push holds (32 bytes when built by Citrea or by us).
    pub reveal_key: Vec<u8>,
    /// The signature and signer key; `None` exactly for [`Kind::Chunk`].
    pub signed: Option<Signed>,
    /// The body: the body pushes concatenated. For a complete proof, still brotli-compressed.
    pub body: Vec<u8>,
    /// The nonce push the sender ground (8 bytes, i64 LE, when built by Citrea or by us).
    pub nonce: Vec<u8>,
}

/// Why a transaction is not an envelope of the namespace asked for. Each reads as a sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvelopeError {
    /// The wtxid does not start with the namespace's prefix: not addressed to us (nearly every
    /// Bitcoin transaction).
    WrongPrefix {
        namespace: Namespace,
        wtxid_start: [u8; 2],
    },
    /// The transaction has no input (not a valid transaction at all).
    NoInput,
    /// The first input's witness is not a taproot script-path spend (fewer than two elements).
    NotScriptPath,
    /// The script ended where the layout wants another item.
    EndOfScript { expected: &'static str },
    /// An item of the script is not what the layout wants there.
    Unexpected {
        expected: &'static str,
        found: String,
    },
    /// A push's length runs past the end of the script.
    BadPush { expected: &'static str, why: String },
    /// The kind push is not two bytes long.
    KindLength(usize),
    /// The kind is not one this namespace knows.
    UnknownKind { namespace: Namespace, code: u16 },
    /// Something follows the final `OP_NIP`.
    TrailingData,
}

impl EnvelopeError {
    /// Whether the transaction is plainly not ours: a wrong prefix, or a script that does not
    /// even start like an envelope. About one transaction in 65,536 has a matching prefix by
    /// chance, so such refusals are routine and not worth a warning; every other refusal is a
    /// transaction dressed as ours that is malformed.
    pub fn is_not_ours(&self) -> bool {
        match self {
            EnvelopeError::WrongPrefix { .. }
            | EnvelopeError::NoInput
            | EnvelopeError::NotScriptPath
            | EnvelopeError::KindLength(_) => true,
            EnvelopeError::EndOfScript { expected }
            | EnvelopeError::Unexpected { expected, .. }
            | EnvelopeError::BadPush { expected, .. } => HEADER_ITEMS.contains(expected),
            EnvelopeError::UnknownKind { .. } | EnvelopeError::TrailingData => false,
        }
    }
}

/// The items before the kind: a script that fails there does not look like an envelope at all.
const HEADER_ITEMS: [&str; 3] = [ITEM_REVEAL_KEY, ITEM_CHECKSIGVERIFY, ITEM_KIND];
const ITEM_REVEAL_KEY: &str = "the reveal key push";
const ITEM_CHECKSIGVERIFY: &str = "OP_CHECKSIGVERIFY";
const ITEM_KIND: &str = "the two-byte kind push";

impl fmt::Display for EnvelopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvelopeError::WrongPrefix { namespace, wtxid_start } => write!(
                f,
                "the wtxid starts with {}, not the {} prefix {}",
                hex::encode(wtxid_start),
                namespace.name(),
                hex::encode(namespace.prefix())
            ),
            EnvelopeError::NoInput => write!(f, "the transaction has no input"),
            EnvelopeError::NotScriptPath => write!(
                f,
                "the first input's witness is not a taproot script-path spend, so it carries no envelope"
            ),
            EnvelopeError::EndOfScript { expected } => {
                write!(f, "the reveal script ends where {expected} should be")
            }
            EnvelopeError::Unexpected { expected, found } => {
                write!(f, "the reveal script has {found} where {expected} should be")
            }
            EnvelopeError::BadPush { expected, why } => {
                write!(f, "the reveal script does not parse where {expected} should be: {why}")
            }
            EnvelopeError::KindLength(n) => {
                write!(f, "the kind push is {n} bytes long; a kind is 2 bytes (u16 little-endian)")
            }
            EnvelopeError::UnknownKind { namespace, code } => {
                write!(f, "kind {code} is not a {} kind this node knows", namespace.name())
            }
            EnvelopeError::TrailingData => {
                write!(f, "the reveal script goes on after the final OP_NIP")
            }
        }
    }
}

impl std::error::Error for EnvelopeError {}

/// The transaction's wtxid in raw (internal) byte order: the bytes the prefix is checked on, and
/// the reverse of what Bitcoin Core prints.
pub fn wtxid_raw(tx: &Transaction) -> [u8; 32] {
    tx.compute_wtxid().to_byte_array()
}

/// The transaction's txid in raw (internal) byte order.
pub fn txid_raw(tx: &Transaction) -> [u8; 32] {
    tx.compute_txid().to_byte_array()
}

/// Reads a reveal transaction of `namespace`: the wtxid prefix first, then the envelope.
pub fn parse_reveal(tx: &Transaction, namespace: Namespace) -> Result<Envelope, EnvelopeError> {
    let wtxid = wtxid_raw(tx);
    if !namespace.matches(&wtxid) {
        return Err(EnvelopeError::WrongPrefix {
            namespace,
            wtxid_start: [wtxid[0], wtxid[1]],
        });
    }
    parse_envelope(tx, namespace)
}

/// Reads the envelope of a transaction without looking at its wtxid: for the chunks an aggregate
/// names by txid (Citrea fetches them by txid and does not check their prefix).
pub fn parse_envelope(tx: &Transaction, namespace: Namespace) -> Result<Envelope, EnvelopeError> {
    let input = tx.input.first().ok_or(EnvelopeError::NoInput)?;
    let script = leaf_script(&input.witness).ok_or(EnvelopeError::NotScriptPath)?;
    parse_script(script, namespace)
}

/// The leaf script of a taproot script-path spend: the second-to-last witness element, or the
/// third-to-last when the last is an annex (BIP 341). `None` for fewer than two elements, or two
/// whose last is an annex (a key-path spend).
pub fn leaf_script(witness: &Witness) -> Option<&Script> {
    let n = witness.len();
    let has_annex = n >= 2
        && witness
            .last()
            .is_some_and(|last| last.first() == Some(&ANNEX_TAG));
    let index = match (n, has_annex) {
        (0 | 1, _) | (2, true) => return None,
        (_, true) => n - 3,
        (_, false) => n - 2,
    };
    witness.nth(index).map(Script::from_bytes)
}

/// Reads an envelope script of `namespace` (see the module docs for the layout).
pub fn parse_script(script: &Script, namespace: Namespace) -> Result<Envelope, EnvelopeError> {
    let mut items = Items {
        inner: script.instructions(),
    };

    let reveal_key = items.push(ITEM_REVEAL_KEY)?.to_vec();
    items.opcode(OP_CHECKSIGVERIFY, ITEM_CHECKSIGVERIFY)?;
    let kind_bytes = items.push(ITEM_KIND)?;
    let kind_bytes: [u8; 2] = kind_bytes
        .try_into()
        .map_err(|_| EnvelopeError::KindLength(kind_bytes.len()))?;
    let code = u16::from_le_bytes(kind_bytes);
    let kind =
        Kind::from_code(namespace, code).ok_or(EnvelopeError::UnknownKind { namespace, code })?;

    match items.next("OP_FALSE")? {
        Instruction::PushBytes(push) if push.is_empty() => {}
        other => return Err(unexpected("OP_FALSE", other)),
    }
    items.opcode(OP_IF, "OP_IF")?;

    let signed = if kind.is_signed() {
        let signature = items.push("the signature push")?.to_vec();
        let signer = items.push("the signer key push")?.to_vec();
        Some(Signed { signature, signer })
    } else {
        None
    };

    let mut body = Vec::new();
    if kind.single_push_body() {
        body.extend_from_slice(items.push("the body push")?);
        items.opcode(OP_ENDIF, "OP_ENDIF")?;
    } else {
        loop {
            match items.next("a body push or OP_ENDIF")? {
                Instruction::PushBytes(push) if push.is_empty() && kind.refuses_empty_push() => {
                    return Err(EnvelopeError::Unexpected {
                        expected: "a non-empty body push or OP_ENDIF",
                        found: "an empty push".to_string(),
                    })
                }
                Instruction::PushBytes(push) => body.extend_from_slice(push.as_bytes()),
                Instruction::Op(op) if op == OP_ENDIF => break,
                op => return Err(unexpected("a body push or OP_ENDIF", op)),
            }
        }
    }

    let nonce = items.push("the nonce push")?.to_vec();
    items.opcode(OP_NIP, "OP_NIP")?;
    if items.inner.next().is_some() {
        return Err(EnvelopeError::TrailingData);
    }

    Ok(Envelope {
        kind,
        reveal_key,
        signed,
        body,
        nonce,
    })
}

/// The script's items with the layout's error messages.
struct Items<'a> {
    inner: bitcoin::script::Instructions<'a>,
}

impl<'a> Items<'a> {
    fn next(&mut self, expected: &'static str) -> Result<Instruction<'a>, EnvelopeError> {
        match self.inner.next() {
            None => Err(EnvelopeError::EndOfScript { expected }),
            Some(Err(e)) => Err(EnvelopeError::BadPush {
                expected,
                why: e.to_string(),
            }),
            Some(Ok(item)) => Ok(item),
        }
    }

    fn push(&mut self, expected: &'static str) -> Result<&'a [u8], EnvelopeError> {
        match self.next(expected)? {
            Instruction::PushBytes(push) => Ok(push.as_bytes()),
            other => Err(unexpected(expected, other)),
        }
    }

    fn opcode(&mut self, want: Opcode, expected: &'static str) -> Result<(), EnvelopeError> {
        match self.next(expected)? {
            Instruction::Op(op) if op == want => Ok(()),
            other => Err(unexpected(expected, other)),
        }
    }
}

/// `found` where the layout wants `expected`.
fn unexpected(expected: &'static str, found: Instruction<'_>) -> EnvelopeError {
    let found = match found {
        Instruction::Op(op) => op.to_string(),
        Instruction::PushBytes(push) => format!("a push of {} bytes", push.len()),
    };
    EnvelopeError::Unexpected { expected, found }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_codes_and_namespaces() {
        for kind in Kind::ALL {
            assert_eq!(Kind::from_code(kind.namespace(), kind.code()), Some(kind));
        }
        assert_eq!(Kind::from_code(Namespace::BatchProof, 1), None);
        assert_eq!(Kind::from_code(Namespace::LightClient, 4), None);
    }

    #[test]
    fn the_leaf_script_skips_an_annex_and_a_key_path_spend_has_none() {
        let (script, control, sig) = (vec![0x51], vec![0xc0; 33], vec![1; 64]);
        let leaf = |elements: &[Vec<u8>]| {
            leaf_script(&Witness::from_slice(elements)).map(|s| s.as_bytes().to_vec())
        };
        let plain = [sig.clone(), script.clone(), control.clone()];
        assert_eq!(leaf(&plain), Some(script.clone()));
        let annexed = [sig.clone(), script.clone(), control, vec![ANNEX_TAG, 1]];
        assert_eq!(leaf(&annexed), Some(script));
        assert_eq!(leaf(&[sig.clone(), vec![ANNEX_TAG]]), None);
        assert_eq!(leaf(&[sig]), None);
        assert_eq!(leaf(&[]), None);
    }

    #[test]
    fn prefixes_are_checked_on_the_raw_byte_order() {
        let mut wtxid = [0u8; 32];
        (wtxid[0], wtxid[1]) = (1, 1);
        assert!(Namespace::BatchProof.matches(&wtxid));
        assert!(!Namespace::LightClient.matches(&wtxid));
        wtxid.reverse();
        assert!(!Namespace::BatchProof.matches(&wtxid));
    }
}
