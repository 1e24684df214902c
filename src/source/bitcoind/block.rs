//! A Bitcoin block as ledgerd uses it, read from its raw bytes and checked.
//!
//! bitcoind's answers are not trusted where they can be recomputed. A raw
//! block ([`super::rpc::BitcoinRpc::get_raw_blocks`]) is decoded with the
//! `bitcoin` crate, then:
//!
//! - its header's double SHA-256 must equal the hash `getblockhash` gave for
//!   the height (so the block is the one the chain has there);
//! - the header hash must meet the target of the header's own `bits`;
//! - the Merkle root of the txids we compute must equal the header's
//!   `merkle_root`, without the duplicated-subtree trick (CVE-2012-2459), so
//!   every transaction is really in that block;
//! - when any transaction carries witness data, the coinbase's witness
//!   commitment must equal the one computed from our wtxids, so the wtxids
//!   (which Citrea filters reveals by) are the block's too.
//!
//! It also computes what Citrea's soft confirmations point at
//! ([`DaBlock::hash`] = `daSlotHash`, [`DaBlock::txs_commitment`] =
//! `daSlotTxsCommitment`).

use std::fmt;

use bitcoin::block::Header;
use bitcoin::hashes::{sha256d, Hash as _};
use bitcoin::{Block, BlockHash, Transaction};

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
    /// (those whose wtxid has a Citrea prefix, [`super::reader::ReaderOptions`]).
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

/// Why a raw block was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockError {
    /// The bytes are not one serialized block (or have bytes left over).
    Undecodable { height: u64, reason: String },
    /// The header hashes to something else than the hash asked for.
    HashMismatch {
        height: u64,
        expected: BlockHash,
        got: BlockHash,
    },
    /// The header hash does not meet the target of its own `bits`.
    ProofOfWork { height: u64, hash: BlockHash },
    /// The transactions do not hash to the header's Merkle root, or do so
    /// only with a duplicated subtree.
    MerkleRoot { height: u64, hash: BlockHash },
    /// Witness data without a matching commitment in the coinbase.
    WitnessCommitment { height: u64, hash: BlockHash },
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockError::Undecodable { height, reason } => {
                write!(f, "the block at height {height} does not decode: {reason}")
            }
            BlockError::HashMismatch {
                height,
                expected,
                got,
            } => write!(
                f,
                "the block bitcoind sent for height {height} hashes to {got}, not to {expected} \
                 as getblockhash said"
            ),
            BlockError::ProofOfWork { height, hash } => write!(
                f,
                "block {hash} at height {height} does not meet the target of its own bits"
            ),
            BlockError::MerkleRoot { height, hash } => write!(
                f,
                "the transactions of block {hash} at height {height} do not hash to its header's \
                 Merkle root"
            ),
            BlockError::WitnessCommitment { height, hash } => write!(
                f,
                "the witness data of block {hash} at height {height} does not match the \
                 commitment in its coinbase"
            ),
        }
    }
}

impl std::error::Error for BlockError {}

/// Decodes `raw` as the block at `height` that `getblockhash` named
/// `expected`, and checks it (module docs).
pub fn parse_block(height: u64, expected: &BlockHash, raw: &[u8]) -> Result<DaBlock, BlockError> {
    let block: Block =
        bitcoin::consensus::deserialize(raw).map_err(|e| BlockError::Undecodable {
            height,
            reason: e.to_string(),
        })?;
    check_block(height, expected, block)
}

/// [`parse_block`] for a block already decoded.
pub fn check_block(height: u64, expected: &BlockHash, block: Block) -> Result<DaBlock, BlockError> {
    let got = block.header.block_hash();
    if got != *expected {
        return Err(BlockError::HashMismatch {
            height,
            expected: *expected,
            got,
        });
    }
    if block.header.validate_pow(block.header.target()).is_err() {
        return Err(BlockError::ProofOfWork { height, hash: got });
    }
    if block.txdata.is_empty() || !block.txdata[0].is_coinbase() {
        return Err(BlockError::Undecodable {
            height,
            reason: "the first transaction is not a coinbase".into(),
        });
    }
    let mut txs = Vec::with_capacity(block.txdata.len());
    let mut any_witness = false;
    for tx in block.txdata {
        any_witness |= tx.input.iter().any(|i| !i.witness.is_empty());
        txs.push(DaTx {
            txid: tx.compute_txid().to_byte_array(),
            wtxid: tx.compute_wtxid().to_byte_array(),
            tx,
        });
    }
    let (root, mutated) = merkle_root(txs.iter().map(|t| t.txid));
    if mutated || root != block.header.merkle_root.to_byte_array() {
        return Err(BlockError::MerkleRoot { height, hash: got });
    }
    let txs_commitment = witness_root(&txs);
    if any_witness && !witness_commitment_matches(&txs[0].tx, &txs_commitment) {
        return Err(BlockError::WitnessCommitment { height, hash: got });
    }
    Ok(DaBlock {
        height,
        hash: got.to_byte_array(),
        header: block.header,
        tx_count: txs.len(),
        txs,
        txs_commitment,
    })
}

/// Citrea's `daSlotTxsCommitment`: the Merkle root over 32 zero bytes for the
/// coinbase, then every other transaction's raw wtxid (BIP 141's witness root).
pub fn witness_root(txs: &[DaTx]) -> Hash {
    let leaves = txs
        .iter()
        .enumerate()
        .map(|(i, t)| if i == 0 { [0u8; 32] } else { t.wtxid });
    merkle_root(leaves).0
}

/// Bitcoin's Merkle root over `leaves` (double SHA-256 of each pair; a level
/// with an odd count pairs its last node with itself; one leaf is its own
/// root; none gives zeros), and whether two real siblings were equal on some
/// level, the sign of a list mutated to keep the root (CVE-2012-2459).
pub fn merkle_root(leaves: impl IntoIterator<Item = Hash>) -> (Hash, bool) {
    let mut level: Vec<Hash> = leaves.into_iter().collect();
    let mut mutated = false;
    if level.is_empty() {
        return ([0u8; 32], false);
    }
    let mut pair = [0u8; 64];
    while level.len() > 1 {
        let mut next = Vec::with_capacity(level.len().div_ceil(2));
        for i in (0..level.len()).step_by(2) {
            let right = if i + 1 < level.len() {
                mutated |= level[i] == level[i + 1];
                level[i + 1]
            } else {
                level[i]
            };
            pair[..32].copy_from_slice(&level[i]);
            pair[32..].copy_from_slice(&right);
            next.push(sha256d::Hash::hash(&pair).to_byte_array());
        }
        level = next;
    }
    (level[0], mutated)
}

/// BIP 141: the coinbase's last output starting `OP_RETURN 0x24 aa21a9ed`
/// holds SHA256d(witness root || the coinbase's 32-byte witness reserved value).
fn witness_commitment_matches(coinbase: &Transaction, root: &Hash) -> bool {
    const MAGIC: [u8; 6] = [0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed];
    let Some(output) = coinbase.output.iter().rev().find(|o| {
        let script = o.script_pubkey.as_bytes();
        script.len() >= 38 && script[..6] == MAGIC
    }) else {
        return false;
    };
    let committed = &output.script_pubkey.as_bytes()[6..38];
    let witness = &coinbase.input[0].witness;
    if witness.len() != 1 {
        return false;
    }
    let Some(reserved) = witness.nth(0).filter(|r| r.len() == 32) else {
        return false;
    };
    let mut preimage = [0u8; 64];
    preimage[..32].copy_from_slice(root);
    preimage[32..].copy_from_slice(reserved);
    sha256d::Hash::hash(&preimage).to_byte_array() == committed
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitcoin::hashes::sha256d;

    fn leaf(n: u8) -> Hash {
        sha256d::Hash::hash(&[n]).to_byte_array()
    }

    #[test]
    fn merkle_root_matches_rust_bitcoin_for_1_to_17_leaves() {
        for n in 1..=17u8 {
            let leaves: Vec<Hash> = (0..n).map(leaf).collect();
            let theirs = bitcoin::merkle_tree::calculate_root(
                leaves.iter().map(|l| bitcoin::Txid::from_byte_array(*l)),
            )
            .unwrap()
            .to_byte_array();
            assert_eq!(merkle_root(leaves.clone()), (theirs, false), "{n} leaves");
        }
    }

    #[test]
    fn one_leaf_is_its_own_root_and_a_duplicated_pair_is_flagged() {
        assert_eq!(merkle_root([leaf(7)]), (leaf(7), false));
        // [a, b, c] and [a, b, c, c] have the same root: the second is mutated.
        let (root3, m3) = merkle_root([leaf(1), leaf(2), leaf(3)]);
        let (root4, m4) = merkle_root([leaf(1), leaf(2), leaf(3), leaf(3)]);
        assert_eq!(root3, root4);
        assert!(!m3);
        assert!(m4);
    }
}
