//! What an envelope's body holds: Citrea's borsh bodies, and brotli for proofs.
//!
//! Layouts (Citrea v0.6.2, `crates/sovereign-sdk/rollup-interface/src/state_machine/da.rs`;
//! borsh: enum tag u8, integers little-endian, `Vec` = u32 length then items, arrays inline):
//!
//! | body | bytes |
//! |---|---|
//! | sequencer commitment | `00` merkle_root (32 bytes) l2_start u64 l2_end u64 (49 bytes) |
//! | light client, complete | `00` u32 len, proof bytes |
//! | light client, complete before Kumquat (testnet) | `00 01` u32 len, proof bytes |
//! | light client, aggregate | `01` u32 n, n txids (32 bytes each), u32 m, m wtxids (32 bytes each) |
//! | light client, chunk | `02` u32 len, piece bytes |
//! | light client, method id | `03` method_id 8 × u32, activation_l2_height u64 |
//!
//! Every byte must be consumed. Compression (`crates/primitives/src/compression.rs`): the pushed
//! body of a complete proof is brotli(borsh(complete)); a chunked proof is
//! brotli(borsh(proof bytes)) cut into pieces of at most 397,000 bytes, each piece sent as a
//! borsh chunk body (not compressed again), and the signed aggregate lists the chunks' txids and
//! wtxids. Citrea picks chunks when brotli(borsh(proof bytes)) is 397,000 bytes or more
//! (`crates/bitcoin-da/src/service.rs`, `split_proof`).
//!
//! Decompression stops with an error once the output passes a bound the caller gives
//! ([`MAX_PROOF_BYTES`] by default): a few hundred compressed bytes can otherwise expand to
//! gigabytes. Citrea's own node has no bound and panics on brotli it cannot decode.
//!
//! borsh is decoded by hand: six small fixed layouts, each length checked against what is left
//! before anything is allocated.
use std::fmt;
use std::io::Write;

/// Citrea's size threshold for one reveal's body (`MAX_TXBODY_SIZE`, non-`testing` builds).
pub const MAX_BODY_BYTES: usize = 397_000;

/// The default bound on a decompressed proof body: 8 MiB. Real proofs are far smaller (a Groth16
/// receipt with its journal is a few KiB; a succinct STARK receipt about 220 KiB).
pub const MAX_PROOF_BYTES: usize = 8 << 20;

/// brotli's settings in Citrea's `compress_blob`: quality 11, window 2^22, 4096-byte buffer.
const BROTLI_QUALITY: u32 = 11;
const BROTLI_LGWIN: u32 = 22;
const BROTLI_BUFFER: usize = 4096;

/// The size of a sequencer commitment body.
pub const SEQUENCER_COMMITMENT_LEN: usize = 49;

/// A sequencer commitment: the Merkle root of the soft-confirmation hashes `l2_start..=l2_end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SequencerCommitment {
    pub merkle_root: [u8; 32],
    pub l2_start: u64,
    pub l2_end: u64,
}

impl SequencerCommitment {
    /// Reads a commitment body: exactly `00 || root || start || end`.
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        let mut r = Reader::new(body, "sequencer commitment");
        r.tag(0)?;
        let merkle_root = r.array("32-byte hash")?;
        let l2_start = r.u64()?;
        let l2_end = r.u64()?;
        r.finish()?;
        Ok(SequencerCommitment {
            merkle_root,
            l2_start,
            l2_end,
        })
    }

    /// The 49-byte body as Citrea writes it.
    pub fn encode(&self) -> [u8; SEQUENCER_COMMITMENT_LEN] {
        let mut out = [0u8; SEQUENCER_COMMITMENT_LEN];
        out[1..33].copy_from_slice(&self.merkle_root);
        out[33..41].copy_from_slice(&self.l2_start.to_le_bytes());
        out[41..49].copy_from_slice(&self.l2_end.to_le_bytes());
        out
    }
}

/// A batch-proof method id and the L2 height it applies from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MethodId {
    pub method_id: [u32; 8],
    pub activation_l2_height: u64,
}

/// A light-client namespace body (`DaDataLightClient`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LightClientBody {
    /// Tag 0: the proof bytes (bincode of a risc0 receipt).
    Complete(Vec<u8>),
    /// Tag 1: the chunks of a chunked proof, in order, by txid and wtxid (raw byte order).
    Aggregate {
        txids: Vec<[u8; 32]>,
        wtxids: Vec<[u8; 32]>,
    },
    /// Tag 2: one piece of the compressed proof.
    Chunk(Vec<u8>),
    /// Tag 3: a new batch-proof method id.
    BatchProofMethodId(MethodId),
}

impl LightClientBody {
    /// Reads a light-client body in the current (Kumquat) layout.
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        let mut r = Reader::new(body, "light-client body");
        let decoded = match r.u8()? {
            0 => LightClientBody::Complete(r.bytes()?.to_vec()),
            1 => {
                let txids = r.hashes()?;
                let wtxids = r.hashes()?;
                LightClientBody::Aggregate { txids, wtxids }
            }
            2 => LightClientBody::Chunk(r.bytes()?.to_vec()),
            3 => {
                let mut method_id = [0u32; 8];
                for word in &mut method_id {
                    *word = r.u32()?;
                }
                let activation_l2_height = r.u64()?;
                LightClientBody::BatchProofMethodId(MethodId {
                    method_id,
                    activation_l2_height,
                })
            }
            tag => {
                return Err(BodyError::UnknownVariant {
                    body: "light-client body",
                    tag,
                })
            }
        };
        r.finish()?;
        Ok(decoded)
    }

    /// Reads the decompressed body of a complete proof as Citrea does: the current layout first
    /// (any variant; only a complete proof is then taken), else the pre-Kumquat testnet layout
    /// `00 01 || u32 len || proof` (`Complete(Full(proof))`). Returns the proof bytes.
    pub fn decode_complete(body: &[u8]) -> Result<Vec<u8>, BodyError> {
        match Self::decode(body) {
            Ok(LightClientBody::Complete(proof)) => Ok(proof),
            Ok(other) => Err(BodyError::WrongVariant {
                wanted: "a complete proof",
                found: other.name(),
            }),
            Err(current) => {
                // `00 01`: `Complete(Full(proof))`; `00 00` holds only a proof's public input.
                let mut r = Reader::new(body, "pre-Kumquat body");
                let old = (|| -> Result<_, BodyError> {
                    r.tag(0)?;
                    r.tag(1)?;
                    let proof = r.bytes()?.to_vec();
                    r.finish()?;
                    Ok(proof)
                })();
                // When neither layout reads, the current layout's reason is the one to tell.
                old.map_err(|_| current)
            }
        }
    }

    /// The body's borsh bytes (current layout).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            LightClientBody::Complete(proof) => {
                out.push(0);
                put_bytes(&mut out, proof);
            }
            LightClientBody::Aggregate { txids, wtxids } => {
                out.push(1);
                for list in [txids, wtxids] {
                    out.extend_from_slice(&len_u32(list.len()).to_le_bytes());
                    for hash in list {
                        out.extend_from_slice(hash);
                    }
                }
            }
            LightClientBody::Chunk(piece) => {
                out.push(2);
                put_bytes(&mut out, piece);
            }
            LightClientBody::BatchProofMethodId(id) => {
                out.push(3);
                for word in id.method_id {
                    out.extend_from_slice(&word.to_le_bytes());
                }
                out.extend_from_slice(&id.activation_l2_height.to_le_bytes());
            }
        }
        out
    }

    /// The variant's name as an error says it.
    pub fn name(&self) -> &'static str {
        match self {
            LightClientBody::Complete(_) => "a complete proof",
            LightClientBody::Aggregate { .. } => "an aggregate",
            LightClientBody::Chunk(_) => "a chunk",
            LightClientBody::BatchProofMethodId(_) => "a method id",
        }
    }
}

/// The proof bytes of a complete-proof envelope body: decompressed (at most `bound` bytes), then
/// read in either layout.
pub fn complete_proof(compressed_body: &[u8], bound: usize) -> Result<Vec<u8>, BodyError> {
    let body = decompress(compressed_body, bound)?;
    LightClientBody::decode_complete(&body)
}

/// The proof bytes of a chunked proof from its chunk bodies, in the aggregate's order: each a
/// borsh chunk; their pieces joined are brotli(borsh(proof bytes)).
pub fn chunked_proof<'a>(
    chunk_bodies: impl IntoIterator<Item = &'a [u8]>,
    bound: usize,
) -> Result<Vec<u8>, BodyError> {
    let mut joined = Vec::new();
    for body in chunk_bodies {
        match LightClientBody::decode(body)? {
            LightClientBody::Chunk(piece) => {
                if joined.len() + piece.len() > bound.saturating_add(bound / 8 + 1024) {
                    return Err(BodyError::TooLarge { bound });
                }
                joined.extend_from_slice(&piece);
            }
            other => {
                return Err(BodyError::WrongVariant {
                    wanted: "a chunk",
                    found: other.name(),
                })
            }
        }
    }
    let proof = decompress(&joined, bound.saturating_add(4))?;
    let mut r = Reader::new(&proof, "chunked proof");
    let bytes = r.bytes()?.to_vec();
    r.finish()?;
    Ok(bytes)
}

/// How a proof goes on chain: one complete body, or chunk bodies (each signed by nothing; the
/// aggregate naming them is built once their transactions exist).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProofBodies {
    /// brotli(borsh(Complete(proof))): the body of one complete-proof reveal.
    Complete(Vec<u8>),
    /// borsh(Chunk(piece)) for each piece of brotli(borsh(proof)), in order.
    Chunks(Vec<Vec<u8>>),
}

/// Splits a proof into reveal bodies as Citrea's `split_proof` does, with `max_body` as the
/// threshold ([`MAX_BODY_BYTES`] on real networks; tests use a small one).
pub fn split_proof(proof: &[u8], max_body: usize) -> ProofBodies {
    let mut as_vec = Vec::with_capacity(proof.len() + 4);
    put_bytes(&mut as_vec, proof);
    let compressed = compress(&as_vec);
    if compressed.len() < max_body {
        ProofBodies::Complete(compress(
            &LightClientBody::Complete(proof.to_vec()).encode(),
        ))
    } else {
        ProofBodies::Chunks(
            compressed
                .chunks(max_body.max(1))
                .map(|piece| LightClientBody::Chunk(piece.to_vec()).encode())
                .collect(),
        )
    }
}

/// brotli as Citrea compresses (quality 11, window 2^22).
pub fn compress(bytes: &[u8]) -> Vec<u8> {
    let mut writer =
        brotli::CompressorWriter::new(Vec::new(), BROTLI_BUFFER, BROTLI_QUALITY, BROTLI_LGWIN);
    // Writing to a Vec cannot fail.
    let _ = writer.write_all(bytes);
    writer.into_inner()
}

/// brotli-decompresses `compressed`, refusing a stream that is corrupt, incomplete, followed by
/// other bytes, or that expands past `bound` bytes (then it stops there, having written at most
/// `bound` bytes).
pub fn decompress(compressed: &[u8], bound: usize) -> Result<Vec<u8>, BodyError> {
    let sink = BoundedSink {
        out: Vec::new(),
        bound,
        overflowed: false,
    };
    let mut writer = brotli::DecompressorWriter::new(sink, BROTLI_BUFFER);
    let written = writer.write_all(compressed);
    if writer.get_ref().overflowed {
        return Err(BodyError::TooLarge { bound });
    }
    if written.is_err() {
        return Err(BodyError::Brotli(
            "the stream is corrupt or followed by other bytes",
        ));
    }
    match writer.into_inner() {
        Ok(sink) | Err(sink) if sink.overflowed => Err(BodyError::TooLarge { bound }),
        Ok(sink) => Ok(sink.out),
        Err(_) => Err(BodyError::Brotli("the stream ends before its last block")),
    }
}

/// A Vec that refuses to grow past a bound.
struct BoundedSink {
    out: Vec<u8>,
    bound: usize,
    overflowed: bool,
}

impl Write for BoundedSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.out.len() + buf.len() > self.bound {
            self.overflowed = true;
            return Err(std::io::Error::other("decompressed size bound reached"));
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Why a body is not what its kind says. Each reads as a sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BodyError {
    /// The body ends before a field.
    Truncated {
        body: &'static str,
        field: &'static str,
    },
    /// Bytes are left after the last field.
    TrailingBytes { body: &'static str, extra: usize },
    /// The enum tag is not one the layout has.
    UnknownVariant { body: &'static str, tag: u8 },
    /// The body decodes as another light-client variant than the envelope's kind wants.
    WrongVariant {
        wanted: &'static str,
        found: &'static str,
    },
    /// brotli cannot decode the body.
    Brotli(&'static str),
    /// The body decompresses past the bound (a decompression bomb, or a bound set too low).
    TooLarge { bound: usize },
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::Truncated { body, field } => {
                write!(f, "the {body} body ends before its {field}")
            }
            BodyError::TrailingBytes { body, extra } => {
                write!(f, "the {body} body has {extra} bytes after its last field")
            }
            BodyError::UnknownVariant { body, tag } => {
                write!(f, "the {body} has variant tag {tag}, which its layout does not have")
            }
            BodyError::WrongVariant { wanted, found } => {
                write!(f, "the body holds {found}, where the envelope's kind wants {wanted}")
            }
            BodyError::Brotli(why) => write!(f, "brotli cannot decode the body: {why}"),
            BodyError::TooLarge { bound } => write!(
                f,
                "the body decompresses to more than {bound} bytes (the bound), so it was not read further"
            ),
        }
    }
}

impl std::error::Error for BodyError {}

/// A borsh reader over a slice that checks every length against what is left.
struct Reader<'a> {
    rest: &'a [u8],
    body: &'static str,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], body: &'static str) -> Self {
        Reader { rest: bytes, body }
    }

    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], BodyError> {
        if self.rest.len() < n {
            return Err(BodyError::Truncated {
                body: self.body,
                field,
            });
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], BodyError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, field)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, BodyError> {
        Ok(self.take(1, "variant tag")?[0])
    }

    /// The variant tag, which must be `want`.
    fn tag(&mut self, want: u8) -> Result<(), BodyError> {
        match self.u8()? {
            tag if tag == want => Ok(()),
            tag => Err(BodyError::UnknownVariant {
                body: self.body,
                tag,
            }),
        }
    }

    fn u32(&mut self) -> Result<u32, BodyError> {
        Ok(u32::from_le_bytes(self.array("u32")?))
    }

    fn u64(&mut self) -> Result<u64, BodyError> {
        Ok(u64::from_le_bytes(self.array("u64")?))
    }

    /// A borsh `Vec<u8>`.
    fn bytes(&mut self) -> Result<&'a [u8], BodyError> {
        let len = self.u32()? as usize;
        self.take(len, "byte string")
    }

    /// A borsh `Vec<[u8; 32]>`.
    fn hashes(&mut self) -> Result<Vec<[u8; 32]>, BodyError> {
        let count = self.u32()? as usize;
        let raw = self.take(count.saturating_mul(32), "hash list")?;
        Ok(raw.as_chunks::<32>().0.to_vec())
    }

    fn finish(self) -> Result<(), BodyError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(BodyError::TrailingBytes {
                body: self.body,
                extra: self.rest.len(),
            })
        }
    }
}

fn len_u32(len: usize) -> u32 {
    // Bodies are built from a single Bitcoin transaction's worth of data: far below 4 GiB.
    u32::try_from(len).unwrap_or(u32::MAX)
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&len_u32(bytes.len()).to_le_bytes());
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_light_client_body_reads_back_what_it_wrote() {
        let bodies = [
            LightClientBody::Complete(vec![1, 2, 3]),
            LightClientBody::Aggregate {
                txids: vec![[1; 32], [2; 32]],
                wtxids: vec![[3; 32], [4; 32]],
            },
            LightClientBody::Chunk(vec![]),
            LightClientBody::BatchProofMethodId(MethodId {
                method_id: [1, 2, 3, 4, 5, 6, 7, u32::MAX],
                activation_l2_height: 99,
            }),
        ];
        for body in bodies {
            assert_eq!(LightClientBody::decode(&body.encode()), Ok(body));
        }
    }

    #[test]
    fn a_commitment_body_is_49_bytes_in_citreas_order() {
        let c = SequencerCommitment {
            merkle_root: [9; 32],
            l2_start: 0x0102,
            l2_end: 0x0304,
        };
        let bytes = c.encode();
        assert_eq!(bytes[0], 0);
        assert_eq!(&bytes[1..33], &[9; 32]);
        assert_eq!(&bytes[33..41], &[2, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&bytes[41..49], &[4, 3, 0, 0, 0, 0, 0, 0]);
        assert_eq!(SequencerCommitment::decode(&bytes), Ok(c));
    }

    #[test]
    fn the_pre_kumquat_form_reads_and_its_public_input_form_does_not() {
        let full = [&[0u8, 1, 3, 0, 0, 0][..], &[7, 8, 9]].concat();
        assert_eq!(LightClientBody::decode_complete(&full), Ok(vec![7, 8, 9]));
        let public_input = [&[0u8, 0, 3, 0, 0, 0][..], &[7, 8, 9]].concat();
        assert!(LightClientBody::decode_complete(&public_input).is_err());
        // The current form wins where both could apply.
        let current = LightClientBody::Complete(vec![0, 1]).encode();
        assert_eq!(LightClientBody::decode_complete(&current), Ok(vec![0, 1]));
    }

    #[test]
    fn a_huge_declared_length_is_refused_before_allocating() {
        let decode = LightClientBody::decode;
        let body = [0u8, 0xff, 0xff, 0xff, 0xff, 1];
        assert!(matches!(decode(&body), Err(BodyError::Truncated { .. })));
        let aggregate = [1u8, 0xff, 0xff, 0xff, 0xff];
        assert!(matches!(
            decode(&aggregate),
            Err(BodyError::Truncated { .. })
        ));
    }

    #[test]
    fn compress_then_decompress_is_the_identity_and_the_bound_is_inclusive() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 13) as u8).collect();
        let (packed, bound) = (compress(&data), data.len() - 1);
        assert!(packed.len() < data.len());
        assert_eq!(decompress(&packed, data.len()), Ok(data.clone()));
        assert_eq!(
            decompress(&packed, bound),
            Err(BodyError::TooLarge { bound })
        );
    }
}
