//! `source::bitcoin` against a real regtest bitcoind (tests/it/common/bitcoind.rs):
//! blocks mined, then read back in batches and checked; a segwit spend's
//! witness root; -8 beyond the tip; credentials; bitcoind killed mid-read
//! and restarted with a new cookie; a block invalidated under the reader.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bitcoin::consensus::{deserialize, serialize};
use bitcoin::hashes::Hash as _;
use bitcoin::secp256k1::{Message, Secp256k1, SecretKey};
use bitcoin::sighash::{EcdsaSighashType, SighashCache};
use bitcoin::{
    absolute::LockTime, transaction::Version, Address, Amount, Block, BlockHash,
    CompressedPublicKey, Network, OutPoint, ScriptBuf, Sequence, Transaction, TxIn, TxOut, Txid,
    Witness,
};
use common::bitcoind::{burn_address, Bitcoind};
use ledgerd::source::bitcoin::rpc::client::BitcoinRpc;
use ledgerd::source::bitcoin::rpc::client::Credentials;
use ledgerd::source::bitcoin::rpc::client::RpcError;
use ledgerd::source::bitcoin::rpc::client::RpcOptions;
use ledgerd::source::bitcoin::rpc::reader::BlockReader;
use ledgerd::source::bitcoin::rpc::reader::ReadError;
use ledgerd::source::bitcoin::rpc::reader::ReaderOptions;
use serde_json::json;

fn cookie_client(node: &Bitcoind) -> BitcoinRpc {
    BitcoinRpc::new(
        &node.url,
        Credentials::CookieFile(node.cookie_path()),
        RpcOptions::default(),
    )
}

fn options(batch: usize, in_flight: usize) -> ReaderOptions {
    ReaderOptions {
        batch,
        in_flight,
        wtxid_prefixes: None,
    }
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn two_hundred_mined_blocks_read_back_with_the_hashes_getblockhash_gives() {
    let node = Bitcoind::start();
    node.mine(200);
    let rpc = cookie_client(&node);
    assert_eq!(rpc.get_block_count().unwrap(), 200);
    let reader = BlockReader::new(&rpc, options(17, 3));
    let blocks = reader.read_range(0..=200).unwrap();
    assert_eq!(blocks.len(), 201);
    for (h, block) in blocks.iter().enumerate() {
        assert_eq!(block.height, h as u64);
        assert_eq!(block.block_hash().to_string(), node.block_hash(h as u64));
        // Raw byte order: the printed hash reversed.
        let mut printed = hex::decode(node.block_hash(h as u64)).unwrap();
        printed.reverse();
        assert_eq!(block.hash.to_vec(), printed);
        // Coinbase-only blocks: Citrea's txs commitment is 32 zero bytes.
        assert_eq!(block.tx_count, 1);
        assert_eq!(block.txs_commitment, [0u8; 32]);
    }
    // The batched hashes equal the one-at-a-time answers.
    let hashes = rpc.get_block_hashes(150..201).unwrap();
    for (i, hash) in hashes.iter().enumerate() {
        assert_eq!(*hash, rpc.get_block_hash(150 + i as u64).unwrap());
    }
    let best: String = rpc.call("getbestblockhash", &[]).unwrap();
    assert_eq!(best, hashes[50].to_string());
    // The header bitcoind gives is the one in the block we checked.
    let header: String = (rpc.call(
        "getblockheader",
        &[hashes[0].to_string().into(), false.into()],
    ))
    .unwrap();
    assert_eq!(hex::decode(header).unwrap(), serialize(&blocks[150].header));
}

/// A P2WPKH key of the test's own: mines a coinbase to it, lets it mature,
/// spends it and mines the spend; returns the spend and the block's hash.
fn mine_a_segwit_spend(node: &Bitcoind, rpc: &BitcoinRpc) -> (Transaction, BlockHash) {
    let secp = Secp256k1::new();
    let key = SecretKey::from_slice(&[0x07; 32]).unwrap();
    let public = CompressedPublicKey(key.public_key(&secp));
    let address = Address::p2wpkh(&public, Network::Regtest);
    let funded = rpc.generate_to_address(1, &address.to_string()).unwrap();
    node.mine(100); // coinbase maturity
    let block: Block = deserialize(&rpc.get_raw_block(&funded[0]).unwrap()).unwrap();
    let coinbase = &block.txdata[0];
    let value = coinbase.output[0].value;
    assert_eq!(coinbase.output[0].script_pubkey, address.script_pubkey());
    let mut tx = Transaction {
        version: Version::TWO,
        lock_time: LockTime::ZERO,
        input: vec![TxIn {
            previous_output: OutPoint {
                txid: coinbase.compute_txid(),
                vout: 0,
            },
            script_sig: ScriptBuf::new(),
            sequence: Sequence::ENABLE_RBF_NO_LOCKTIME,
            witness: Witness::new(),
        }],
        output: vec![TxOut {
            value: value - Amount::from_sat(10_000),
            script_pubkey: burn_address().script_pubkey(),
        }],
    };
    let sighash = SighashCache::new(&tx)
        .p2wpkh_signature_hash(0, &address.script_pubkey(), value, EcdsaSighashType::All)
        .unwrap();
    let signature = secp.sign_ecdsa(&Message::from_digest(sighash.to_byte_array()), &key);
    tx.input[0].witness = Witness::p2wpkh(
        &bitcoin::ecdsa::Signature::sighash_all(signature),
        &public.0,
    );
    let txid = rpc.send_raw_transaction(&serialize(&tx)).unwrap();
    assert_eq!(txid, tx.compute_txid());
    let hash = rpc
        .generate_block(&burn_address().to_string(), &[txid.to_string()])
        .unwrap();
    (tx, hash)
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn witness_root_of_a_block_with_a_segwit_spend_is_over_bitcoinds_wtxids() {
    let node = Bitcoind::start();
    let rpc = cookie_client(&node);
    let (spend, hash) = mine_a_segwit_spend(&node, &rpc);
    let height = rpc.get_block_count().unwrap();
    assert_eq!(rpc.get_block_hash(height).unwrap(), hash);
    let blocks = BlockReader::new(&rpc, ReaderOptions::default())
        .read_range(height..=height)
        .unwrap();
    let block = &blocks[0];
    assert_eq!(block.block_hash(), hash);
    assert_eq!(block.tx_count, 2);
    assert_eq!(block.txs[1].tx, spend);
    // bitcoind's own ids ("txid", "hash" = wtxid), printed reversed.
    let verbose = node.call("getblock", json!([hash.to_string(), 2]));
    let wtxids: Vec<[u8; 32]> = verbose["tx"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let mut b = hex::decode(t["hash"].as_str().unwrap()).unwrap();
            b.reverse();
            b.try_into().unwrap()
        })
        .collect();
    assert_eq!(block.txs[1].wtxid, wtxids[1]);
    assert_ne!(block.txs[1].wtxid, block.txs[1].txid, "a segwit spend");
    assert_eq!(block.txs[1].txid.to_vec(), {
        let mut b = hex::decode(verbose["tx"][1]["txid"].as_str().unwrap()).unwrap();
        b.reverse();
        b
    });
    // Citrea's rule: the coinbase's wtxid as zeros, then the others'.
    let expected = bitcoin::merkle_tree::calculate_root(
        [[0u8; 32], wtxids[1]]
            .into_iter()
            .map(bitcoin::Wtxid::from_byte_array),
    )
    .unwrap()
    .to_byte_array();
    assert_eq!(block.txs_commitment, expected);
    assert_ne!(block.txs_commitment, [0u8; 32]);
    // The spend is found by txid (-txindex=1), in one call or a batch.
    let txid = Txid::from_byte_array(block.txs[1].txid);
    let one: String = (rpc.call(
        "getrawtransaction",
        &[txid.to_string().into(), false.into()],
    ))
    .unwrap();
    assert_eq!(hex::decode(one).unwrap(), serialize(&spend));
    let coinbase = Txid::from_byte_array(block.txs[0].txid);
    let both = rpc
        .batch(
            "getrawtransaction",
            [coinbase, txid].map(|t| format!(r#"["{t}",false]"#)),
            |raw| hex::decode(raw.get().trim_matches('"')).map_err(|e| e.to_string()),
        )
        .unwrap();
    assert_eq!(both[1], serialize(&spend));
    assert_eq!(both[0], serialize(&block.txs[0].tx));
    // Keeping only transactions by wtxid prefix drops the rest but counts them.
    let prefix = block.txs[1].wtxid[..1].to_vec();
    let filtered = BlockReader::new(
        &rpc,
        ReaderOptions {
            wtxid_prefixes: Some(vec![prefix]),
            ..ReaderOptions::default()
        },
    )
    .read_range(height..=height)
    .unwrap();
    assert_eq!(filtered[0].tx_count, 2);
    assert_eq!(
        filtered[0].txs.len(),
        1 + usize::from(block.txs[0].wtxid[0] == block.txs[1].wtxid[0])
    );
    assert!(filtered[0].txs.iter().any(|t| t.tx == spend));
    assert_eq!(filtered[0].txs_commitment, block.txs_commitment);
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn heights_beyond_the_tip_are_refused_with_minus_8() {
    let node = Bitcoind::start();
    node.mine(10);
    let rpc = cookie_client(&node);
    let err = rpc.get_block_hash(11).unwrap_err();
    assert!(err.is_height_out_of_range(), "{err:?}");
    assert_eq!(err.code(), Some(-8));
    assert!(!err.is_transient());
    assert!(err.to_string().contains("-8"), "{err}");
    let err = BlockReader::new(&rpc, options(4, 2))
        .read_range(5..=12)
        .unwrap_err();
    assert!(
        matches!(&err, ReadError::Rpc(e) if e.is_height_out_of_range()),
        "{err:?}"
    );
    // An unknown block hash is -5, not a crash or an empty block.
    let err = rpc.get_raw_block(&BlockHash::all_zeros()).unwrap_err();
    assert_eq!(err.code(), Some(-5), "{err:?}");
    // An unknown method: bitcoind's -32601 (HTTP 404 with a JSON body).
    let err = rpc.call::<u64>("nosuchmethod", &[]).unwrap_err();
    assert_eq!(err.code(), Some(-32601), "{err:?}");
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn a_wrong_password_is_unauthorized_and_user_password_works() {
    let node = Bitcoind::start();
    let cookie = std::fs::read_to_string(node.cookie_path()).unwrap();
    let (user, password) = cookie.trim().split_once(':').unwrap();
    let good = BitcoinRpc::new(
        &node.url,
        Credentials::UserPassword {
            user: user.into(),
            password: password.into(),
        },
        RpcOptions::default(),
    );
    assert_eq!(good.get_block_count().unwrap(), 0);
    let bad = BitcoinRpc::new(
        &node.url,
        Credentials::UserPassword {
            user: user.into(),
            password: "wrong".into(),
        },
        RpcOptions::default(),
    );
    let err = bad.get_block_count().unwrap_err();
    assert!(matches!(err, RpcError::Unauthorized { .. }), "{err:?}");
    // A cookie path that does not exist is named in the error.
    let missing = BitcoinRpc::new(
        &node.url,
        Credentials::CookieFile(node.dir.path().join("no-cookie")),
        RpcOptions::default(),
    );
    let err = missing.get_block_count().unwrap_err();
    assert!(err.to_string().contains("no-cookie"), "{err}");
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn answers_over_the_size_limit_are_refused_and_the_reader_halves_its_batches() {
    let node = Bitcoind::start();
    node.mine(40);
    // A regtest coinbase-only block is about 250 bytes: its answer about
    // 550 bytes of JSON. 1,000 bytes hold one block, or 8 hashes, not 20.
    let full = cookie_client(&node);
    let one = full
        .get_raw_block(&full.get_block_hash(1).unwrap())
        .unwrap();
    assert!(
        one.len() * 2 + 100 < 1_000,
        "a block of {} bytes",
        one.len()
    );
    let small = BitcoinRpc::new(
        &node.url,
        Credentials::CookieFile(node.cookie_path()),
        RpcOptions {
            max_answer_bytes: 1_000,
            ..RpcOptions::default()
        },
    );
    let err = small.get_block_hashes(1..21).unwrap_err();
    assert!(
        matches!(err, RpcError::TooLarge { limit: 1_000, .. }),
        "{err:?}"
    );
    let hashes = full.get_block_hashes(1..21).unwrap();
    let err = small.get_raw_blocks(&hashes).unwrap_err();
    assert!(
        matches!(err, RpcError::TooLarge { limit: 1_000, .. }),
        "{err:?}"
    );
    assert_eq!(small.get_raw_blocks(&hashes[..1]).unwrap(), vec![one]);
    // One block per answer fits: the reader gets there by halving.
    let sizes = RpcOptions {
        max_answer_bytes: 1_000,
        ..RpcOptions::default()
    };
    let reader_rpc = BitcoinRpc::new(
        &node.url,
        Credentials::CookieFile(node.cookie_path()),
        sizes,
    );
    let wide = BlockReader::new(
        &reader_rpc,
        ReaderOptions {
            batch: 6,
            ..ReaderOptions::default()
        },
    );
    // getblockhash answers fit in batches of 6; getblock's do not.
    let blocks = wide.read_range(1..=40).unwrap();
    assert_eq!(blocks.len(), 40);
    for b in &blocks {
        assert_eq!(b.block_hash().to_string(), node.block_hash(b.height));
    }
}

/// bitcoind killed (SIGKILL) while a reader walks 2,000 blocks: reads fail
/// as unreachable (never wrong blocks), and after a restart, which writes a
/// new cookie, the same client reads on from where it stopped.
#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn bitcoind_killed_mid_read_and_restarted_is_read_on_with_its_new_cookie() {
    let mut node = Bitcoind::start();
    node.mine(2000);
    node.flush(); // so that the kill loses no block
    let expected: Vec<String> = {
        let rpc = cookie_client(&node);
        rpc.get_block_hashes(0..2001)
            .unwrap()
            .iter()
            .map(|h| h.to_string())
            .collect()
    };
    let old_cookie = std::fs::read_to_string(node.cookie_path()).unwrap();
    let rpc = Arc::new(BitcoinRpc::new(
        &node.url,
        Credentials::CookieFile(node.cookie_path()),
        RpcOptions {
            timeout: Duration::from_secs(10),
            ..RpcOptions::default()
        },
    ));
    let started = Arc::new(AtomicBool::new(false));
    let walker = {
        let rpc = Arc::clone(&rpc);
        let started = Arc::clone(&started);
        std::thread::spawn(move || {
            let reader = BlockReader::new(&rpc, options(10, 2));
            let mut read = Vec::new();
            let mut errors = Vec::new();
            let mut next = 0u64;
            while next <= 2000 {
                let to = (next + 19).min(2000);
                match reader.read_range(next..=to) {
                    Ok(blocks) => {
                        started.store(true, Ordering::Relaxed);
                        next = to + 1;
                        read.extend(blocks);
                        // Slow enough that the kill lands mid-walk.
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(e) => {
                        errors.push(e);
                        assert!(errors.len() < 2000, "no progress: {:?}", errors.last());
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
            (read, errors)
        })
    };
    while !started.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(1));
    }
    node.kill9();
    std::thread::sleep(Duration::from_millis(500));
    node.restart();
    let new_cookie = std::fs::read_to_string(node.cookie_path()).unwrap();
    assert_ne!(
        old_cookie, new_cookie,
        "bitcoind writes a new cookie at start"
    );
    let (read, errors) = walker.join().unwrap();
    assert!(!errors.is_empty(), "the kill did not land mid-walk");
    for e in &errors {
        match e {
            ReadError::Rpc(e) => assert!(e.is_transient(), "{e:?}"),
            other => panic!("a kill gave a non-RPC error: {other:?}"),
        }
    }
    assert_eq!(read.len(), 2001);
    for (h, block) in read.iter().enumerate() {
        assert_eq!(block.height, h as u64);
        assert_eq!(block.block_hash().to_string(), expected[h]);
    }
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn an_invalidated_block_is_replaced_at_its_height() {
    let node = Bitcoind::start();
    node.mine(50);
    let rpc = cookie_client(&node);
    let reader = BlockReader::new(&rpc, options(8, 2));
    let before = reader.read_range(30..=50).unwrap();
    let old = node.block_hash(40);
    node.invalidate_block(&old);
    assert_eq!(node.block_count(), 39);
    // Mine a different branch (another address: other blocks).
    let other = Address::p2wpkh(
        &CompressedPublicKey(
            SecretKey::from_slice(&[0x09; 32])
                .unwrap()
                .public_key(&Secp256k1::signing_only()),
        ),
        Network::Regtest,
    );
    node.generate_to_address(11, &other.to_string());
    let after = reader.read_range(30..=50).unwrap();
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(b.height, a.height);
        if a.height < 40 {
            assert_eq!(b.hash, a.hash, "height {}", a.height);
        } else {
            assert_ne!(b.hash, a.hash, "height {}", a.height);
            assert_eq!(a.block_hash().to_string(), node.block_hash(a.height));
        }
    }
    assert_eq!(after[10].prev_hash(), after[9].hash);
}
