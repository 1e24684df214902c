//! Raw Bitcoin blocks read and checked by `source::bitcoin::block`, on real
//! chain data (tests/data/README.md): ten testnet3 blocks with the hashes
//! Bitcoin Core lists for them, and the transactions of a regtest block from
//! Citrea's repository whose coinbase commits to their witness root.

use bitcoin::consensus::{deserialize, serialize};
use bitcoin::hashes::Hash as _;
use bitcoin::{Block, BlockHash, Transaction};
use ledgerd::source::bitcoin::block::{parse_block, witness_root, BlockError, BlockFault, DaBlock};
use serde::Deserialize;

#[derive(Deserialize)]
struct RealBlock {
    height: u64,
    hash: String,
    block: String,
    note: String,
}

fn testnet3_blocks() -> Vec<RealBlock> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/bitcoin_testnet3_blocks.json"
    ))
    .expect("tests/data/bitcoin_testnet3_blocks.json");
    serde_json::from_str(&text).expect("the testnet3 blocks file parses")
}

fn with_witness() -> RealBlock {
    testnet3_blocks()
        .into_iter()
        .find(|b| b.note == "Includes witness data")
        .expect("the block with witness data")
}

/// What was wrong with a refused block (`None`: it was taken).
fn fault(result: &Result<DaBlock, BlockError>) -> Option<&BlockFault> {
    result.as_ref().err().map(|e| &e.fault)
}
#[test]
fn real_blocks_hash_to_the_hashes_bitcoin_core_lists() {
    let blocks = testnet3_blocks();
    assert_eq!(blocks.len(), 10);
    for real in &blocks {
        let expected: BlockHash = real.hash.parse().unwrap();
        let raw = hex::decode(&real.block).unwrap();
        let block = parse_block(real.height, &expected, &raw)
            .unwrap_or_else(|e| panic!("block {}: {e}", real.height));
        assert_eq!(block.height, real.height);
        // daSlotHash is the raw byte order: the reverse of the printed hash.
        let mut printed = hex::decode(&real.hash).unwrap();
        printed.reverse();
        assert_eq!(block.hash.to_vec(), printed, "block {}", real.height);
        assert_eq!(block.block_hash(), expected);
        // The ids are the transactions' own, as rust-bitcoin computes them.
        let theirs: Block = deserialize(&raw).unwrap();
        assert_eq!(block.tx_count, theirs.txdata.len());
        for (ours, tx) in block.txs.iter().zip(&theirs.txdata) {
            assert_eq!(ours.txid, tx.compute_txid().to_byte_array());
            assert_eq!(ours.wtxid, tx.compute_wtxid().to_byte_array());
        }
    }
}

#[test]
fn txs_commitment_is_rust_bitcoins_witness_root_and_zero_for_a_coinbase_only_block() {
    let mut coinbase_only = 0;
    for real in testnet3_blocks() {
        let raw = hex::decode(&real.block).unwrap();
        let block = parse_block(real.height, &real.hash.parse().unwrap(), &raw).unwrap();
        let theirs: Block = deserialize(&raw).unwrap();
        let root = theirs.witness_root().unwrap().to_byte_array();
        assert_eq!(block.txs_commitment, root, "block {}", real.height);
        if block.tx_count == 1 {
            coinbase_only += 1;
            assert_eq!(block.txs_commitment, [0u8; 32], "block {}", real.height);
        } else {
            assert_ne!(block.txs_commitment, [0u8; 32], "block {}", real.height);
        }
    }
    assert!(coinbase_only >= 3, "the data has coinbase-only blocks");
}

#[test]
fn a_block_that_is_not_the_one_asked_for_is_refused() {
    let blocks = testnet3_blocks();
    let raw = hex::decode(&blocks[1].block).unwrap();
    let other: BlockHash = blocks[2].hash.parse().unwrap();
    match parse_block(blocks[1].height, &other, &raw) {
        Err(BlockError {
            hash,
            fault: BlockFault::HashMismatch { got },
            ..
        }) => {
            assert_eq!(hash, other);
            assert_eq!(got, blocks[1].hash.parse::<BlockHash>().unwrap());
        }
        other => panic!("expected a hash mismatch, got {other:?}"),
    }
}

#[test]
fn a_changed_transaction_breaks_the_merkle_root() {
    let real = testnet3_blocks()
        .into_iter()
        .find(|b| b.height == 926485)
        .unwrap();
    let mut block: Block = deserialize(&hex::decode(&real.block).unwrap()).unwrap();
    assert!(block.txdata.len() > 2);
    block.txdata[1].lock_time = bitcoin::absolute::LockTime::from_consensus(12345);
    let err = parse_block(real.height, &real.hash.parse().unwrap(), &serialize(&block));
    assert_eq!(fault(&err), Some(&BlockFault::MerkleRoot), "{err:?}");
    // Dropping a transaction breaks it too.
    block.txdata.truncate(2);
    let err = parse_block(real.height, &real.hash.parse().unwrap(), &serialize(&block));
    assert_eq!(fault(&err), Some(&BlockFault::MerkleRoot), "{err:?}");
}

#[test]
fn a_changed_witness_keeps_the_txids_but_breaks_the_witness_commitment() {
    let real = with_witness();
    let raw = hex::decode(&real.block).unwrap();
    let expected: BlockHash = real.hash.parse().unwrap();
    let good = parse_block(real.height, &expected, &raw).unwrap();
    let mut block: Block = deserialize(&raw).unwrap();
    let (i, tx) = block
        .txdata
        .iter_mut()
        .enumerate()
        .skip(1)
        .find(|(_, t)| t.input.iter().any(|i| !i.witness.is_empty()))
        .expect("a transaction with a witness");
    let mut items: Vec<Vec<u8>> = tx.input[0].witness.to_vec();
    items.push(vec![1, 2, 3]);
    tx.input[0].witness = bitcoin::Witness::from_slice(&items);
    let changed = serialize(&block);
    // The txid (and so the header) is unchanged; only the wtxid moved.
    assert_eq!(
        block.txdata[i].compute_txid().to_byte_array(),
        good.txs[i].txid
    );
    assert_ne!(
        block.txdata[i].compute_wtxid().to_byte_array(),
        good.txs[i].wtxid
    );
    let err = parse_block(real.height, &expected, &changed);
    assert_eq!(fault(&err), Some(&BlockFault::WitnessCommitment), "{err:?}");
}

#[test]
fn bytes_that_are_not_exactly_one_block_are_refused() {
    let real = &testnet3_blocks()[0];
    let hash: BlockHash = real.hash.parse().unwrap();
    let mut raw = hex::decode(&real.block).unwrap();
    raw.push(0);
    assert!(matches!(
        fault(&parse_block(0, &hash, &raw)),
        Some(BlockFault::Undecodable(_))
    ));
    raw.truncate(raw.len() - 10);
    assert!(matches!(
        fault(&parse_block(0, &hash, &raw)),
        Some(BlockFault::Undecodable(_))
    ));
    let err = parse_block(0, &hash, b"").unwrap_err();
    assert!(err.to_string().contains("height 0"), "{err}");
}

/// Citrea's regtest block (35 transactions, its commitments and proofs): its
/// coinbase's BIP 141 commitment is SHA256d(witness root || reserved value),
/// so our root over the real wtxids, with the coinbase's zeroed, must give
/// exactly the commitment bitcoind put on chain.
#[test]
fn witness_root_of_citreas_regtest_block_matches_its_coinbase_commitment() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/citrea_regtest_block_mock_txs.txt"
    ))
    .expect("tests/data/citrea_regtest_block_mock_txs.txt");
    let txs: Vec<Transaction> = text
        .lines()
        .map(|l| deserialize(&hex::decode(l.trim()).unwrap()).unwrap())
        .collect();
    assert_eq!(txs.len(), 35);
    assert!(txs[0].is_coinbase());
    let da_txs: Vec<_> = txs
        .iter()
        .map(|tx| ledgerd::source::bitcoin::block::DaTx {
            txid: tx.compute_txid().to_byte_array(),
            wtxid: tx.compute_wtxid().to_byte_array(),
            tx: tx.clone(),
        })
        .collect();
    let root = witness_root(&da_txs);
    let reserved = txs[0].input[0].witness.nth(0).unwrap();
    let commitment = Block::compute_witness_commitment(
        &bitcoin::WitnessMerkleNode::from_byte_array(root),
        reserved,
    )
    .to_byte_array();
    let script = txs[0]
        .output
        .iter()
        .rev()
        .map(|o| o.script_pubkey.as_bytes())
        .find(|s| s.starts_with(&[0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed]))
        .expect("the coinbase's witness commitment");
    assert_eq!(&script[6..38], &commitment);
    // And the same root as rust-bitcoin's own witness root of that block.
    let header = bitcoin::block::Header {
        version: bitcoin::block::Version::TWO,
        prev_blockhash: BlockHash::all_zeros(),
        merkle_root: bitcoin::TxMerkleNode::all_zeros(),
        time: 0,
        bits: bitcoin::CompactTarget::from_consensus(0x207f_ffff),
        nonce: 0,
    };
    let block = Block {
        header,
        txdata: txs,
    };
    assert_eq!(block.witness_root().unwrap().to_byte_array(), root);
}

/// The block of the testnet3 data with witness data, with `change` made to
/// it, checked against its real hash.
fn changed_witness_block(change: impl FnOnce(&mut Block)) -> Result<(), BlockError> {
    let real = with_witness();
    let mut block: Block = deserialize(&hex::decode(&real.block).unwrap()).unwrap();
    change(&mut block);
    parse_block(real.height, &real.hash.parse().unwrap(), &serialize(&block)).map(|_| ())
}

#[test]
fn a_block_stripped_of_its_witnesses_is_refused_though_its_merkle_root_matches() {
    // Every witness gone, the coinbase's reserved value too (what a peer
    // sends for MSG_BLOCK): the txids, so the header, are unchanged.
    let err = changed_witness_block(|b| {
        for tx in &mut b.txdata {
            for input in &mut tx.input {
                input.witness = bitcoin::Witness::new();
            }
        }
        assert!(b.check_merkle_root());
        // rust-bitcoin's own check lets it through: no witness, no check.
        assert!(b.check_witness_commitment());
    })
    .unwrap_err();
    assert_eq!(err.reason(), "bad-witness-nonce-size", "{err}");
    assert!(err.is_mutated());
    // The reserved value kept, the others stripped: the commitment no
    // longer matches.
    let err = changed_witness_block(|b| {
        for tx in b.txdata.iter_mut().skip(1) {
            for input in &mut tx.input {
                input.witness = bitcoin::Witness::new();
            }
        }
    })
    .unwrap_err();
    assert_eq!(err.reason(), "bad-witness-merkle-match", "{err}");
}

#[test]
fn a_block_with_its_last_transactions_repeated_keeps_the_root_and_is_refused() {
    // CVE-2012-2459: with an odd count, repeating the last transaction
    // leaves the Merkle root as it was.
    let real = testnet3_blocks()
        .into_iter()
        .find(|b| {
            let block: Block = deserialize(&hex::decode(&b.block).unwrap()).unwrap();
            block.txdata.len() % 2 == 1 && block.txdata.len() > 1
        })
        .expect("a block with an odd number of transactions");
    let mut block: Block = deserialize(&hex::decode(&real.block).unwrap()).unwrap();
    let last = block.txdata.last().unwrap().clone();
    block.txdata.push(last);
    assert!(block.check_merkle_root(), "the root is unchanged");
    let err = parse_block(real.height, &real.hash.parse().unwrap(), &serialize(&block));
    assert_eq!(fault(&err), Some(&BlockFault::DuplicateTx), "{err:?}");
}
