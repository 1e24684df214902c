//! One transaction of a Bitcoin block, checked end to end: is it a reveal addressed to us, signed
//! by the network's DA key, with a body that reads? The sync thread calls these per transaction
//! and stores only what comes back `Ok`.
//!
//! The order is Citrea v0.6.2's full node (`crates/bitcoin-da/src/service.rs`,
//! `extract_relevant_sequencer_commitments` and `extract_relevant_zk_proofs`): prefix, envelope,
//! signer key and signature, then the body; a proof is decompressed only once its signature
//! verifies. Where Citrea's node stops the whole block (a complete-proof body that does not
//! decode) or panics (brotli it cannot decode), this refuses the one transaction.
use std::fmt;

use bitcoin::Transaction;

use crate::source::bitcoin::body::{
    self, BodyError, LightClientBody, MethodId, SequencerCommitment,
};
use crate::source::bitcoin::inscription::{self, EnvelopeError, Kind, Namespace};
use crate::source::bitcoin::signer::{self, DaPublicKey, SignatureError};

/// What a light-client namespace reveal carries, once checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LightClientTx {
    /// A complete proof: the proof bytes (bincode of a risc0 receipt), decompressed.
    Complete { proof: Vec<u8> },
    /// The signed list of a chunked proof's chunks; fetch them by txid and pass them to
    /// [`read_chunked_proof`].
    Aggregate {
        txids: Vec<[u8; 32]>,
        wtxids: Vec<[u8; 32]>,
    },
    /// A chunk part on its own: unsigned, read only through its aggregate.
    Chunk,
    /// A new batch-proof method id (a full node does not act on it).
    MethodId(MethodId),
}

/// Why a transaction was not taken. Each reads as a sentence; [`Refusal::is_not_ours`] tells the
/// routine ones (not addressed to us) from the ones worth a warning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not an envelope of the namespace (wrong prefix, no script, a malformed script).
    Envelope(EnvelopeError),
    /// An envelope of a kind this reader does not take here.
    Kind { found: Kind, wanted: &'static str },
    /// Not signed by the expected key, or the signature does not verify.
    Signature(SignatureError),
    /// The body does not decode (borsh, brotli, the bound).
    Body(BodyError),
    /// The aggregate lists no chunk, or txids and wtxids of different counts.
    BadAggregate { txids: usize, wtxids: usize },
    /// The aggregate lists more chunks than a proof within the bound can need.
    TooManyChunks { count: usize, most: usize },
    /// A chunk the aggregate names was not given (not found by txid).
    MissingChunk { index: usize, txid: [u8; 32] },
    /// The transaction given for a chunk is not the one the aggregate names.
    ChunkMismatch {
        index: usize,
        field: &'static str,
        named: [u8; 32],
        got: [u8; 32],
    },
}

impl Refusal {
    /// Whether the transaction is simply not addressed to us (see
    /// [`EnvelopeError::is_not_ours`]); log those at debug, the others at warn.
    pub fn is_not_ours(&self) -> bool {
        matches!(self, Refusal::Envelope(e) if e.is_not_ours())
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Envelope(e) => write!(f, "not a Citrea envelope: {e}"),
            Refusal::Kind { found, wanted } => {
                write!(f, "the envelope holds a {}, where {wanted} was wanted", found.name())
            }
            Refusal::Signature(e) => write!(f, "not taken: {e}"),
            Refusal::Body(e) => write!(f, "the body does not read: {e}"),
            Refusal::BadAggregate { txids, wtxids } => write!(
                f,
                "the aggregate lists {txids} chunk txids and {wtxids} wtxids; it needs at least one, as many of each"
            ),
            Refusal::TooManyChunks { count, most } => write!(
                f,
                "the aggregate lists {count} chunks; a proof within the size bound needs at most {most}"
            ),
            Refusal::MissingChunk { index, txid } => {
                write!(f, "chunk {index} ({}) is missing", display_hash(txid))
            }
            Refusal::ChunkMismatch { index, field, named, got } => write!(
                f,
                "chunk {index}: the aggregate names {field} {}, the transaction given has {}",
                display_hash(named),
                display_hash(got)
            ),
        }
    }
}

impl std::error::Error for Refusal {}

wrap_errors!(Refusal {
    Envelope(EnvelopeError),
    Signature(SignatureError),
    Body(BodyError),
});

/// A txid or wtxid as Bitcoin Core prints it (byte-reversed hex), for log lines and errors.
pub fn display_hash(raw: &[u8; 32]) -> String {
    let mut reversed = *raw;
    reversed.reverse();
    hex::encode(reversed)
}

/// A sequencer commitment from a transaction, if it is one signed by `sequencer`.
pub fn read_commitment(
    tx: &Transaction,
    sequencer: &DaPublicKey,
) -> Result<SequencerCommitment, Refusal> {
    let envelope = inscription::parse_reveal(tx, Namespace::BatchProof)?;
    signer::check_signer(&envelope, sequencer)?;
    Ok(SequencerCommitment::decode(&envelope.body)?)
}

/// A light-client namespace transaction, if it is one signed by `prover` (chunk parts are not
/// signed and come back as [`LightClientTx::Chunk`] unchecked). A complete proof is
/// decompressed to at most `bound` bytes ([`body::MAX_PROOF_BYTES`] by default).
pub fn read_light_client(
    tx: &Transaction,
    prover: &DaPublicKey,
    bound: usize,
) -> Result<LightClientTx, Refusal> {
    let envelope = inscription::parse_reveal(tx, Namespace::LightClient)?;
    if envelope.kind == Kind::Chunk {
        return Ok(LightClientTx::Chunk);
    }
    signer::check_signer(&envelope, prover)?;
    match envelope.kind {
        Kind::Complete => Ok(LightClientTx::Complete {
            proof: body::complete_proof(&envelope.body, bound)?,
        }),
        Kind::Aggregate => match LightClientBody::decode(&envelope.body)? {
            LightClientBody::Aggregate { txids, wtxids } => {
                check_aggregate(txids.len(), wtxids.len(), bound)?;
                Ok(LightClientTx::Aggregate { txids, wtxids })
            }
            other => Err(wrong_variant("an aggregate", &other)),
        },
        Kind::BatchProofMethodId => match LightClientBody::decode(&envelope.body)? {
            LightClientBody::BatchProofMethodId(id) => Ok(LightClientTx::MethodId(id)),
            other => Err(wrong_variant("a method id", &other)),
        },
        found @ (Kind::SequencerCommitment | Kind::Chunk) => Err(Refusal::Kind {
            found,
            wanted: "a light-client kind",
        }),
    }
}

fn wrong_variant(wanted: &'static str, found: &LightClientBody) -> Refusal {
    Refusal::Body(BodyError::WrongVariant {
        wanted,
        found: found.name(),
    })
}

fn check_aggregate(txids: usize, wtxids: usize, bound: usize) -> Result<(), Refusal> {
    if txids == 0 || txids != wtxids {
        return Err(Refusal::BadAggregate { txids, wtxids });
    }
    // The most chunks a proof of at most `bound` decompressed bytes can take.
    let most = bound / body::MAX_BODY_BYTES + 2;
    if txids > most {
        return Err(Refusal::TooManyChunks { count: txids, most });
    }
    Ok(())
}

/// A chunked proof's bytes from its aggregate's lists and the chunk transactions, in the
/// aggregate's order (`None` where a chunk could not be fetched). Each chunk's txid and wtxid are
/// recomputed and must be the ones the aggregate names; each must be a chunk-part envelope.
pub fn read_chunked_proof(
    txids: &[[u8; 32]],
    wtxids: &[[u8; 32]],
    chunks: &[Option<Transaction>],
    bound: usize,
) -> Result<Vec<u8>, Refusal> {
    check_aggregate(txids.len(), wtxids.len(), bound)?;
    let mut bodies = Vec::with_capacity(txids.len());
    for (index, (txid, wtxid)) in txids.iter().zip(wtxids).enumerate() {
        let tx = chunks
            .get(index)
            .and_then(Option::as_ref)
            .ok_or(Refusal::MissingChunk { index, txid: *txid })?;
        let ids = [
            ("txid", *txid, inscription::txid_raw(tx)),
            ("wtxid", *wtxid, inscription::wtxid_raw(tx)),
        ];
        if let Some((field, named, got)) = ids.into_iter().find(|(_, named, got)| named != got) {
            return Err(Refusal::ChunkMismatch {
                index,
                field,
                named,
                got,
            });
        }
        let part = inscription::parse_envelope(tx, Namespace::LightClient)?;
        if part.kind != Kind::Chunk {
            return Err(Refusal::Kind {
                found: part.kind,
                wanted: "a proof chunk",
            });
        }
        bodies.push(part.body);
    }
    Ok(body::chunked_proof(
        bodies.iter().map(Vec::as_slice),
        bound,
    )?)
}
