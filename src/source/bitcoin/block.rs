//! A Bitcoin block as ledgerd uses it, read from its raw bytes and checked.
//!
//! Whoever sent a block (bitcoind's RPC, a peer) is not trusted where it can
//! be recomputed. [`parse_block`] is the one check every block goes through
//! before anything reads it, on every path that takes one (the L2 anchor
//! check, the DA scan, and so chunk assembly), with Bitcoin Core's rules for a
//! block that is not mutated (`IsBlockMutated` / `CheckMerkleRoot` /
//! `CheckWitnessMalleation` in Core's `src/validation.cpp`). The block's
//! bytes are walked, borrowed ([`crate::source::bitcoin::walk`], accepting
//! exactly what rust-bitcoin's decoder accepts), each transaction hashed
//! once with `sha2` (SHA extensions at run time); only the transactions
//! kept are decoded; the Merkle roots are built with the same compression
//! function ([`walk::merkle_root`], tested against rust-bitcoin's
//! `merkle_tree::calculate_root`), the witness commitment goes through
//! rust-bitcoin (`Block::compute_witness_commitment`):
//!
//! - its header's double SHA-256 must equal the hash the header chain has
//!   for the height (so the block is the one the chain has there);
//! - the header hash must meet the target of the header's own `bits`;
//! - the first transaction is a coinbase;
//! - the Merkle root of the txids must equal the header's `merkle_root`
//!   (`bad-txnmrklroot`), and no txid may appear twice (`bad-txns-duplicate`:
//!   the duplicated-subtree trick of CVE-2012-2459 keeps the root);
//! - BIP 141, as Core checks it once segwit is active (on every network
//!   long before any height ledgerd reads): when the coinbase has a witness
//!   commitment output (the last one starting `OP_RETURN 0x24 aa21a9ed`),
//!   its input's witness must be exactly one 32-byte reserved value
//!   (`bad-witness-nonce-size`) and the commitment must equal
//!   SHA256d(witness root || reserved value) (`bad-witness-merkle-match`);
//!   a block without a commitment must carry no witness data at all
//!   (`unexpected-witness`). So a block whose witnesses were stripped (a
//!   peer that serves `MSG_BLOCK` for `MSG_WITNESS_BLOCK`, or lies) is
//!   refused whenever it had any: every block with a witness has a
//!   commitment, the coinbase's reserved value is itself a witness, and a
//!   Citrea reveal (a taproot script-path spend) always has one. The wtxids
//!   Citrea filters reveals by, and `daSlotTxsCommitment`, are therefore
//!   the block's own.
//!
//! It also computes what Citrea's soft confirmations point at
//! ([`DaBlock::hash`] = `daSlotHash`, [`DaBlock::txs_commitment`] =
//! `daSlotTxsCommitment`).

use std::fmt;

use bitcoin::block::Header;
use bitcoin::hashes::Hash as _;
use bitcoin::{Block, BlockHash, Transaction, WitnessMerkleNode};

use crate::source::bitcoin::walk;
use crate::types::Hash;

/// One transaction of a checked block, with the ids we computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaTx {
    /// The txid in raw (internal) byte order: the reverse of what bitcoind prints.
    pub txid: Hash,
    /// The wtxid in raw byte order; Citrea's reveal filter looks at its first bytes.
    pub wtxid: Hash,
    pub tx: Transaction,
}

/// A block whose hash, transactions and witness data were checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaBlock {
    pub height: u64,
    /// The header's double SHA-256 in raw byte order (Citrea's `daSlotHash`;
    /// the byte-reverse of `getblockhash`'s hex).
    pub hash: Hash,
    pub header: Header,
    /// In block order, the coinbase first; a reader may keep only some
    /// (those whose wtxid has a Citrea prefix, [`crate::source::bitcoin::rpc::reader::ReaderOptions`]).
    pub txs: Vec<DaTx>,
    /// How many transactions the block has (all were checked).
    pub tx_count: usize,
    /// Citrea's `daSlotTxsCommitment`: the Merkle root of the wtxids with
    /// the coinbase's as 32 zero bytes (32 zero bytes for a coinbase-only block).
    pub txs_commitment: Hash,
}

impl DaBlock {
    /// The previous block's hash, raw byte order.
    pub fn prev_hash(&self) -> Hash {
        self.header.prev_blockhash.to_byte_array()
    }

    /// The hash as bitcoind prints it.
    pub fn block_hash(&self) -> BlockHash {
        BlockHash::from_byte_array(self.hash)
    }
}

/// Why a raw block was refused: the block asked for at `height` (by
/// `hash`, the header chain's hash there) and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockError {
    pub height: u64,
    pub hash: BlockHash,
    pub fault: BlockFault,
}

/// What was wrong with a block ([`BlockError`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockFault {
    /// The bytes are not one serialized block (or have bytes left over), or
    /// its first transaction is not a coinbase.
    Undecodable(String),
    /// The header hashes to `got`, not to the hash asked for.
    HashMismatch { got: BlockHash },
    /// The header hash does not meet the target of its own `bits`.
    ProofOfWork,
    /// The transactions do not hash to the header's Merkle root.
    MerkleRoot,
    /// A transaction appears twice (the root may still match: CVE-2012-2459).
    DuplicateTx,
    /// The coinbase commits to witness data but its input's witness is not
    /// one 32-byte reserved value (a block stripped of its witnesses).
    WitnessNonce,
    /// Witness data that does not match the commitment in the coinbase.
    WitnessCommitment,
    /// Witness data in a block whose coinbase commits to none.
    UnexpectedWitness,
}

impl BlockError {
    /// Bitcoin Core's reject reason for it (ours for the two Core has no
    /// name for: a block that does not decode, or is not the one asked).
    pub fn reason(&self) -> &'static str {
        match self.fault {
            BlockFault::Undecodable(_) => "undecodable",
            BlockFault::HashMismatch { .. } => "bad-blk-hash",
            BlockFault::ProofOfWork => "high-hash",
            BlockFault::MerkleRoot => "bad-txnmrklroot",
            BlockFault::DuplicateTx => "bad-txns-duplicate",
            BlockFault::WitnessNonce => "bad-witness-nonce-size",
            BlockFault::WitnessCommitment => "bad-witness-merkle-match",
            BlockFault::UnexpectedWitness => "unexpected-witness",
        }
    }

    /// Whether the block is mutated in Core's sense (`BLOCK_MUTATED`): its
    /// header may be right, what came with it is not. Core disconnects a
    /// peer for it.
    pub fn is_mutated(&self) -> bool {
        matches!(
            self.fault,
            BlockFault::MerkleRoot
                | BlockFault::DuplicateTx
                | BlockFault::WitnessNonce
                | BlockFault::WitnessCommitment
                | BlockFault::UnexpectedWitness
        )
    }
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let BlockError { height, hash, .. } = self;
        match &self.fault {
            BlockFault::Undecodable(reason) => {
                write!(f, "the block at height {height} does not decode: {reason}")
            }
            BlockFault::HashMismatch { got } => write!(
                f,
                "the block sent for height {height} hashes to {got}, not to {hash}, the \
                 header chain's block there"
            ),
            BlockFault::ProofOfWork => write!(
                f,
                "block {hash} at height {height} does not meet the target of its own bits"
            ),
            BlockFault::MerkleRoot => write!(
                f,
                "the transactions of block {hash} at height {height} do not hash to its header's \
                 Merkle root (bad-txnmrklroot)"
            ),
            BlockFault::DuplicateTx => write!(
                f,
                "block {hash} at height {height} holds a transaction twice (bad-txns-duplicate)"
            ),
            BlockFault::WitnessNonce => write!(
                f,
                "block {hash} at height {height} commits to witness data, but its coinbase has no \
                 32-byte witness reserved value: its witnesses were stripped \
                 (bad-witness-nonce-size)"
            ),
            BlockFault::WitnessCommitment => write!(
                f,
                "the witness data of block {hash} at height {height} does not match the \
                 commitment in its coinbase (bad-witness-merkle-match)"
            ),
            BlockFault::UnexpectedWitness => write!(
                f,
                "block {hash} at height {height} carries witness data but its coinbase commits \
                 to none (unexpected-witness)"
            ),
        }
    }
}

impl std::error::Error for BlockError {}

/// Decodes `raw` as the block at `height` that the header chain names
/// `expected`, and checks it (module docs), keeping every transaction.
pub fn parse_block(height: u64, expected: &BlockHash, raw: &[u8]) -> Result<DaBlock, BlockError> {
    parse_block_keeping(height, expected, raw, &|_| true)
}

/// [`parse_block`], keeping (decoded as owned transactions) only those
/// whose wtxid `keep` takes; every transaction is still checked and
/// counted in [`DaBlock::tx_count`]. The others are walked over in `raw`,
/// borrowed ([`crate::source::bitcoin::walk`]), and hashed with `sha2`
/// (SHA extensions where the CPU has them): their stripped bytes once for
/// the txid and, when they carry witnesses, their whole bytes once for the
/// wtxid, and nothing else.
pub fn parse_block_keeping(
    height: u64,
    expected: &BlockHash,
    raw: &[u8],
    keep: &dyn Fn(&Hash) -> bool,
) -> Result<DaBlock, BlockError> {
    let fail = |fault: BlockFault| BlockError {
        height,
        hash: *expected,
        fault,
    };
    let undecodable = |e: &dyn fmt::Display| fail(BlockFault::Undecodable(e.to_string()));
    let walked = walk::walk_block(raw).map_err(|e| undecodable(&e))?;
    let header: Header =
        bitcoin::consensus::deserialize(&raw[..walk::HEADER_LEN]).map_err(|e| undecodable(&e))?;
    let got = header.block_hash();
    if got != *expected {
        return Err(fail(BlockFault::HashMismatch { got }));
    }
    if header.validate_pow(header.target()).is_err() {
        return Err(fail(BlockFault::ProofOfWork));
    }
    let decode = |i: usize| -> Result<Transaction, BlockError> {
        bitcoin::consensus::deserialize(&raw[walked.txs[i].range.clone()])
            .map_err(|e| undecodable(&e))
    };
    let coinbase = match walked.txs.first() {
        Some(t) if t.is_coinbase => decode(0)?,
        _ => return Err(undecodable(&"the first transaction is not a coinbase")),
    };
    let txids: Vec<Hash> = walked.txs.iter().map(|t| t.txid).collect();
    if walk::merkle_root(txids.clone()) != Some(header.merkle_root.to_byte_array()) {
        return Err(fail(BlockFault::MerkleRoot));
    }
    if has_duplicate(&txids) {
        return Err(fail(BlockFault::DuplicateTx));
    }
    let txs_commitment = root_of_wtxids(walked.txs.iter().map(|t| t.wtxid));
    match witness_commitment(&coinbase) {
        Some(committed) => {
            let witness = &coinbase.input[0].witness;
            let reserved = match witness.nth(0) {
                Some(r) if witness.len() == 1 && r.len() == 32 => r,
                _ => return Err(fail(BlockFault::WitnessNonce)),
            };
            let computed = Block::compute_witness_commitment(
                &WitnessMerkleNode::from_byte_array(txs_commitment),
                reserved,
            );
            if computed.to_byte_array() != committed {
                return Err(fail(BlockFault::WitnessCommitment));
            }
        }
        None if walked.has_witness => return Err(fail(BlockFault::UnexpectedWitness)),
        None => {}
    }
    let mut txs = Vec::new();
    for (i, t) in walked.txs.iter().enumerate() {
        if keep(&t.wtxid) {
            let tx = if i == 0 { coinbase.clone() } else { decode(i)? };
            txs.push(DaTx {
                txid: t.txid,
                wtxid: t.wtxid,
                tx,
            });
        }
    }
    Ok(DaBlock {
        height,
        hash: got.to_byte_array(),
        header,
        tx_count: walked.txs.len(),
        txs,
        txs_commitment,
    })
}

/// Citrea's `daSlotTxsCommitment`: the Merkle root over 32 zero bytes for the
/// coinbase, then every other transaction's raw wtxid (BIP 141's witness
/// root, rust-bitcoin's `merkle_tree::calculate_root` over those leaves; the
/// same as its `Block::witness_root`).
pub fn witness_root(txs: &[DaTx]) -> Hash {
    root_of_wtxids(txs.iter().map(|t| t.wtxid))
}

/// [`witness_root`] over the wtxids in block order (the coinbase's first).
fn root_of_wtxids(wtxids: impl Iterator<Item = Hash>) -> Hash {
    let leaves = wtxids
        .enumerate()
        .map(|(i, w)| if i == 0 { [0u8; 32] } else { w });
    walk::merkle_root(leaves.collect()).unwrap_or([0u8; 32])
}

/// Whether an id appears twice in `ids`: their first 8 bytes sorted (ids
/// are hashes: cheaper than hashing them again into a set), and only when
/// two of those are equal (by chance, 1 in 2^64 a pair), the whole ids.
fn has_duplicate(ids: &[Hash]) -> bool {
    let mut prefixes: Vec<u64> = ids
        .iter()
        .map(|id| u64::from_le_bytes([id[0], id[1], id[2], id[3], id[4], id[5], id[6], id[7]]))
        .collect();
    prefixes.sort_unstable();
    if prefixes.windows(2).all(|w| w[0] != w[1]) {
        return false;
    }
    let mut whole = ids.to_vec();
    whole.sort_unstable();
    whole.windows(2).any(|w| w[0] == w[1])
}

/// BIP 141 (Core's `GetWitnessCommitmentIndex`): the 32 committed bytes of
/// the coinbase's last output whose script is at least 38 bytes and starts
/// `OP_RETURN 0x24 aa21a9ed`, if it has one.
fn witness_commitment(coinbase: &Transaction) -> Option<[u8; 32]> {
    const MAGIC: [u8; 6] = [0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed];
    coinbase.output.iter().rev().find_map(|o| {
        let script = o.script_pubkey.as_bytes();
        if script.len() >= 38 && script[..6] == MAGIC {
            script[6..38].try_into().ok()
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitcoin::blockdata::constants::genesis_block;
    use bitcoin::consensus::serialize;

    #[test]
    fn a_coinbase_only_block_has_a_zero_txs_commitment_and_needs_no_witness() {
        let genesis = genesis_block(bitcoin::Network::Regtest);
        let hash = genesis.block_hash();
        let checked = parse_block(0, &hash, &serialize(&genesis)).unwrap();
        assert_eq!(checked.txs_commitment, [0u8; 32]);
        assert_eq!(checked.tx_count, 1);
    }

    #[test]
    fn a_duplicate_is_found_among_ids_sharing_their_first_bytes() {
        let id = |first: u8, last: u8| {
            let mut h = [first; 32];
            h[31] = last;
            h
        };
        assert!(!has_duplicate(&[]) && !has_duplicate(&[id(1, 1), id(2, 1)]));
        assert!(!has_duplicate(&[id(1, 1), id(1, 2), id(1, 3), id(2, 1)]));
        assert!(has_duplicate(&[id(1, 1), id(1, 2), id(2, 9), id(1, 1)]));
        assert!(has_duplicate(&[id(3, 3), id(1, 2), id(3, 3)]));
    }

    #[test]
    fn witness_data_without_a_commitment_is_unexpected() {
        let mut block = genesis_block(bitcoin::Network::Regtest);
        block.txdata[0].input[0].witness = bitcoin::Witness::from_slice(&[[0u8; 32]]);
        // The txid ignores the witness: the header still matches.
        let hash = block.block_hash();
        let err = parse_block(0, &hash, &serialize(&block)).unwrap_err();
        assert_eq!(err.reason(), "unexpected-witness", "{err}");
        assert!(err.is_mutated());
    }
}
