//! A borrowed walk over a serialized block: where each transaction lies in
//! the bytes, its txid and wtxid, and whether it is a coinbase or carries
//! witnesses, without decoding anything into owned transactions.
//!
//! It accepts exactly the bytes rust-bitcoin's `deserialize::<Block>`
//! accepts (0.32's `Transaction::consensus_decode`): canonical compact sizes
//! (`NonMinimalVarInt`), the segwit marker `00` followed by flag `01` only
//! (`UnsupportedSegwitFlag`), a segwit transaction with inputs must carry a
//! witness on one of them, at most `MAX_VEC_SIZE` witness elements, and no
//! byte left over; anything else is a [`WalkError`], where rust-bitcoin
//! would have returned an error. The hashing is `sha2`'s SHA-256
//! compression function, which picks the CPU's SHA extensions at run time,
//! fed 64-byte blocks here (`sha256d_parts`; sha2's streaming wrapper and
//! rust-bitcoin's Merkle tree cost about 0.7 ms a mainnet-sized block
//! besides its 2.5 ms of compressions, docs/PERFORMANCE.md): the txid over
//! the stripped bytes (version, inputs and outputs, lock time, fed as three
//! slices), the wtxid over the whole bytes
//! only when they differ. [`merkle_root`] builds a Merkle tree with it.

use std::fmt;
use std::ops::Range;

use sha2::compress256;
use sha2::digest::generic_array::GenericArray;

use crate::types::Hash;

/// A block header's length.
pub const HEADER_LEN: usize = 80;

/// rust-bitcoin's `MAX_VEC_SIZE`: the most witness elements it reads.
const MAX_VEC_SIZE: u64 = 4_000_000;

/// Why the bytes are not one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkError(String);

impl fmt::Display for WalkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WalkError {}

/// One transaction found by the walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkedTx {
    /// Where it lies in the block's bytes (its whole serialization).
    pub range: Range<usize>,
    /// Raw byte order.
    pub txid: Hash,
    pub wtxid: Hash,
    /// One input spending the null outpoint (rust-bitcoin's `is_coinbase`).
    pub is_coinbase: bool,
}

/// A block walked over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkedBlock {
    pub txs: Vec<WalkedTx>,
    /// Some input of some transaction has a non-empty witness.
    pub has_witness: bool,
}

/// A cursor over the bytes.
struct Cursor<'a> {
    raw: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: u64) -> Result<Range<usize>, WalkError> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .filter(|end| *end <= self.raw.len())
            .ok_or_else(|| WalkError("unexpected end of data".into()))?;
        let range = self.pos..end;
        self.pos = end;
        Ok(range)
    }

    fn byte(&mut self) -> Result<u8, WalkError> {
        let r = self.take(1)?;
        Ok(self.raw[r.start])
    }

    fn le(&mut self, n: u64) -> Result<u64, WalkError> {
        let r = self.take(n)?;
        Ok(self.raw[r]
            .iter()
            .rev()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    /// A compact size, refused unless minimally encoded (as rust-bitcoin).
    #[inline]
    fn compact(&mut self) -> Result<u64, WalkError> {
        let (n, min) = match self.byte()? {
            0xff => (self.le(8)?, 0x1_0000_0000),
            0xfe => (self.le(4)?, 0x1_0000),
            0xfd => (self.le(2)?, 0xfd),
            b => return Ok(u64::from(b)),
        };
        if n < min {
            return Err(WalkError("non-minimal varint".into()));
        }
        Ok(n)
    }

    /// A compact size and that many bytes.
    fn skip_bytes(&mut self) -> Result<(), WalkError> {
        let n = self.compact()?;
        self.take(n).map(|_| ())
    }
}

/// Walks `raw` as one block (module docs).
pub fn walk_block(raw: &[u8]) -> Result<WalkedBlock, WalkError> {
    let mut c = Cursor { raw, pos: 0 };
    c.take(HEADER_LEN as u64)?;
    let count = c.compact()?;
    // Each transaction takes at least 10 bytes: no more room than that.
    let mut txs =
        Vec::with_capacity(usize::try_from(count.min(raw.len() as u64 / 10)).unwrap_or(0));
    let mut has_witness = false;
    for _ in 0..count {
        let (tx, witness) = walk_tx(&mut c)?;
        has_witness |= witness;
        txs.push(tx);
    }
    if c.pos != raw.len() {
        return Err(WalkError(format!(
            "data not consumed entirely when explicitly deserializing ({} bytes left)",
            raw.len() - c.pos
        )));
    }
    Ok(WalkedBlock { txs, has_witness })
}

/// One transaction at the cursor; and whether one of its inputs has a
/// non-empty witness.
fn walk_tx(c: &mut Cursor<'_>) -> Result<(WalkedTx, bool), WalkError> {
    let start = c.pos;
    c.take(4)?;
    let mut inputs = c.compact()?;
    let mut segwit = false;
    let mut body_start = start + 4;
    if inputs == 0 {
        match c.byte()? {
            1 => {}
            x => return Err(WalkError(format!("unsupported segwit version: {x}"))),
        }
        segwit = true;
        body_start = c.pos;
        inputs = c.compact()?;
    }
    let mut is_coinbase = false;
    for i in 0..inputs {
        let outpoint = c.take(36)?;
        if inputs == 1 && i == 0 {
            let o = &c.raw[outpoint];
            is_coinbase = o[..32].iter().all(|b| *b == 0) && o[32..] == [0xff; 4];
        }
        c.skip_bytes()?;
        c.take(4)?;
    }
    let outputs = c.compact()?;
    for _ in 0..outputs {
        c.take(8)?;
        c.skip_bytes()?;
    }
    let body_end = c.pos;
    let mut witnessed = false;
    if segwit {
        for _ in 0..inputs {
            let elements = c.compact()?;
            if elements > MAX_VEC_SIZE {
                return Err(WalkError(format!(
                    "allocation of oversized vector: requested {elements}, maximum {MAX_VEC_SIZE}"
                )));
            }
            witnessed |= elements > 0;
            for _ in 0..elements {
                c.skip_bytes()?;
            }
        }
        if inputs > 0 && !witnessed {
            return Err(WalkError(
                "parse failed: witness flag set but no witnesses present".into(),
            ));
        }
    }
    let lock = c.take(4)?;
    let raw = c.raw;
    let txid = if segwit {
        sha256d_parts(&[
            &raw[start..start + 4],
            &raw[body_start..body_end],
            &raw[lock],
        ])
    } else {
        sha256d_parts(&[&raw[start..c.pos]])
    };
    let wtxid = if segwit {
        sha256d_parts(&[&raw[start..c.pos]])
    } else {
        txid
    };
    let tx = WalkedTx {
        range: start..c.pos,
        txid,
        wtxid,
        is_coinbase,
    };
    Ok((tx, witnessed))
}

/// SHA-256's initial state.
const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// One 64-byte block into `state`.
fn compress(state: &mut [u32; 8], block: &[u8]) {
    compress256(state, std::slice::from_ref(GenericArray::from_slice(block)));
}

/// SHA-256d of the concatenation of `parts`.
fn sha256d_parts(parts: &[&[u8]]) -> Hash {
    let (mut state, mut block, mut fill, mut len) = (IV, [0u8; 64], 0, 0u64);
    for mut part in parts.iter().copied() {
        len += part.len() as u64;
        if fill > 0 {
            let n = part.len().min(64 - fill);
            block[fill..fill + n].copy_from_slice(&part[..n]);
            (fill, part) = (fill + n, &part[n..]);
            if fill < 64 {
                continue;
            }
            compress(&mut state, &block);
        }
        let mut whole = part.chunks_exact(64);
        whole.by_ref().for_each(|b| compress(&mut state, b));
        let rest = whole.remainder();
        block[..rest.len()].copy_from_slice(rest);
        fill = rest.len();
    }
    block[fill] = 0x80;
    block[fill + 1..].fill(0);
    if fill >= 56 {
        compress(&mut state, &block);
        block = [0; 64];
    }
    block[56..].copy_from_slice(&(len * 8).to_be_bytes());
    compress(&mut state, &block);
    sha256_of_digest(&state)
}

/// SHA-256 of the 32-byte digest `state` holds (one block: its padding is fixed).
fn sha256_of_digest(state: &[u32; 8]) -> Hash {
    let mut block = [0u8; 64];
    for (b, w) in block.chunks_exact_mut(4).zip(state) {
        b.copy_from_slice(&w.to_be_bytes());
    }
    (block[32], block[62]) = (0x80, 1); // 256 bits
    let mut out = IV;
    compress(&mut out, &block);
    let mut hash = [0u8; 32];
    for (b, w) in hash.chunks_exact_mut(4).zip(out) {
        b.copy_from_slice(&w.to_be_bytes());
    }
    hash
}

/// The Merkle root of `leaves` as Bitcoin builds it (rust-bitcoin's
/// `merkle_tree::calculate_root`: each node the SHA-256d of its two
/// children, a level's odd last node paired with itself), built in place;
/// `None` without leaves.
pub fn merkle_root(mut level: Vec<Hash>) -> Option<Hash> {
    /// The second block of a 64-byte message: its padding.
    const PAD_64: [u8; 64] = {
        let mut b = [0u8; 64];
        (b[0], b[62]) = (0x80, 2); // 512 bits
        b
    };
    while level.len() > 1 {
        if let Some(last) = level.last().filter(|_| level.len() % 2 == 1) {
            level.push(*last);
        }
        for i in 0..level.len() / 2 {
            let mut state = IV;
            let mut pair = [0u8; 64];
            pair[..32].copy_from_slice(&level[2 * i]);
            pair[32..].copy_from_slice(&level[2 * i + 1]);
            compress(&mut state, &pair);
            compress(&mut state, &PAD_64);
            level[i] = sha256_of_digest(&state);
        }
        level.truncate(level.len() / 2);
    }
    level.first().copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitcoin::consensus::{deserialize, serialize};
    use bitcoin::hashes::Hash as _;
    use bitcoin::Block;

    #[test]
    fn the_hashes_are_rust_bitcoins() {
        use bitcoin::hashes::sha256d;
        let bytes: Vec<u8> = (0..300u32).map(|i| (i * 7 + i / 13) as u8).collect();
        for len in 0..bytes.len() {
            let whole = sha256d::Hash::hash(&bytes[..len]).to_byte_array();
            for (a, b) in [
                (0, 0),
                (len / 3, len / 2),
                (len / 2, len),
                (1, len.max(1) - 1),
            ] {
                let (a, b) = (a.min(b), b.min(len));
                let parts = [&bytes[..a], &bytes[a..b], &bytes[b..len]];
                assert_eq!(sha256d_parts(&parts), whole, "{len} bytes cut at {a}, {b}");
            }
        }
        for n in 0..40u8 {
            let leaves: Vec<Hash> = (0..n).map(|i| [i.wrapping_mul(37); 32]).collect();
            let theirs = bitcoin::merkle_tree::calculate_root(
                leaves.iter().map(|l| sha256d::Hash::from_byte_array(*l)),
            );
            let theirs = theirs.map(|r| r.to_byte_array());
            assert_eq!(merkle_root(leaves), theirs, "{n} leaves");
        }
    }

    #[test]
    fn the_ids_are_rust_bitcoins_and_the_walk_refuses_what_it_refuses() {
        let genesis = bitcoin::blockdata::constants::genesis_block(bitcoin::Network::Regtest);
        let raw = serialize(&genesis);
        let walked = walk_block(&raw).unwrap();
        assert_eq!(walked.txs.len(), 1);
        assert!(walked.txs[0].is_coinbase && !walked.has_witness);
        let txid = genesis.txdata[0].compute_txid().to_byte_array();
        assert_eq!((walked.txs[0].txid, walked.txs[0].wtxid), (txid, txid));
        // Every cut and every extra byte: both refuse, or both accept.
        let mut longer = raw.clone();
        longer.push(0);
        for bytes in (0..raw.len()).map(|n| raw[..n].to_vec()).chain([longer]) {
            let theirs = deserialize::<Block>(&bytes).is_ok();
            assert_eq!(walk_block(&bytes).is_ok(), theirs, "{} bytes", bytes.len());
        }
        // A non-minimal tx count (0xfd 0x01 0x00).
        let mut padded = raw[..80].to_vec();
        padded.extend([0xfd, 1, 0]);
        padded.extend(&raw[81..]);
        assert!(deserialize::<Block>(&padded).is_err());
        assert!(walk_block(&padded).unwrap_err().0.contains("non-minimal"));
    }

    /// The walk and rust-bitcoin agree on every cut of, and on changes at
    /// every 7th byte of, each real testnet3 block (tests/data), and the
    /// ids are the ones rust-bitcoin computes.
    #[test]
    fn the_walk_accepts_exactly_what_rust_bitcoin_decodes() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/bitcoin_testnet3_blocks.json"
        ))
        .unwrap();
        let blocks: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        for b in blocks {
            let raw = hex::decode(b["block"].as_str().unwrap()).unwrap();
            let block: Block = deserialize(&raw).unwrap();
            let walked = walk_block(&raw).unwrap();
            for (w, tx) in walked.txs.iter().zip(&block.txdata) {
                assert_eq!(w.txid, tx.compute_txid().to_byte_array());
                assert_eq!(w.wtxid, tx.compute_wtxid().to_byte_array());
                assert_eq!(w.is_coinbase, tx.is_coinbase());
                assert_eq!(&raw[w.range.clone()], &serialize(tx)[..]);
            }
            let witness = block
                .txdata
                .iter()
                .any(|t| t.input.iter().any(|i| !i.witness.is_empty()));
            assert_eq!(walked.has_witness, witness);
            let step = (raw.len() / 300).max(1);
            for n in (0..raw.len()).step_by(step) {
                let cut = &raw[..n];
                assert_eq!(
                    walk_block(cut).is_ok(),
                    deserialize::<Block>(cut).is_ok(),
                    "cut {n}"
                );
            }
            for at in (80..raw.len()).step_by(7) {
                for v in [0x00, 0x01, 0xfd, 0xff] {
                    let mut changed = raw.clone();
                    changed[at] = v;
                    let theirs = deserialize::<Block>(&changed);
                    let ours = walk_block(&changed);
                    assert_eq!(ours.is_ok(), theirs.is_ok(), "byte {at} = {v:#x}: {ours:?}");
                    if let (Ok(ours), Ok(theirs)) = (ours, theirs) {
                        assert_eq!(ours.txs.len(), theirs.txdata.len());
                    }
                }
            }
        }
    }
}
