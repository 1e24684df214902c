//! ledgerd on a real regtest bitcoind ([`super::bitcoind`]): the devnet
//! writing its DA layer there (`--dev --dev-bitcoin-rpc`), a follower
//! reading it (`--upstream U --bitcoin-rpc B`), coins to inscribe with and
//! blocks holding chosen transactions. The setups the Bitcoin tests share.

use std::path::Path;
use std::time::Duration;

use bitcoin::secp256k1::{Secp256k1, SecretKey};
use bitcoin::{Address, CompressedPublicKey, Network, OutPoint, Transaction, Txid};
use ledgerd::source::devnet::inscribe::{Funding, FundingKey};
use serde_json::json;

use super::bitcoind::{burn_address, Bitcoind};
use super::process::{Ledgerd, LedgerdBuilder};

/// `ledgerd --dev --dev-block-ms 0 --dev-bitcoin-rpc <node> --bitcoin-rpc-cookie <its cookie>`
/// on `dir` with `extra` flags: a devnet that makes no block but those
/// asked for and writes its DA layer to `node`.
pub fn devnet_on(node: &Bitcoind, dir: &Path, extra: &[&str]) -> Ledgerd {
    let cookie = node.cookie_path().display().to_string();
    let mut args = vec![
        "--dev-bitcoin-rpc",
        node.url.as_str(),
        "--bitcoin-rpc-cookie",
        cookie.as_str(),
    ];
    args.extend_from_slice(extra);
    Ledgerd::builder()
        .dev(0, 0)
        .data_dir(dir)
        .args(&args)
        .start()
}

/// A devnet on `node` with 66 blocks, committed and proven to 60.
pub fn busy_devnet(node: &Bitcoind, dir: &Path) -> Ledgerd {
    let devnet = devnet_on(node, dir, &[]);
    let setup =
        |method: &str, params: &str| devnet.result_within(method, params, Duration::from_secs(300));
    assert_eq!(setup("dev_mine", "[60]"), 60);
    setup("dev_commit", "[]");
    assert!(!setup("dev_prove", "[]").is_null());
    assert_eq!(setup("dev_mine", "[6]"), 66);
    devnet
}

/// `ledgerd --upstream <up> --bitcoin-rpc <node> --bitcoin-rpc-cookie <its cookie>
/// --bitcoin-finality-depth <depth>` on `dir`, not started yet (add flags,
/// then `.start()`).
pub fn follower_of(up: &Ledgerd, node: &Bitcoind, dir: &Path, depth: u64) -> LedgerdBuilder {
    let cookie = node.cookie_path().display().to_string();
    let depth = depth.to_string();
    Ledgerd::builder().data_dir(dir).args(&[
        "--upstream",
        &up.url,
        "--bitcoin-rpc",
        &node.url,
        "--bitcoin-rpc-cookie",
        &cookie,
        "--bitcoin-finality-depth",
        &depth,
    ])
}

/// Mines `n` coinbases to a P2WPKH address of the key `[seed; 32]`, then 100
/// blocks so they mature; the coinbase outputs, oldest first, spendable by
/// that key.
pub fn fund(node: &Bitcoind, seed: u8, n: u64) -> Vec<Funding> {
    let secp = Secp256k1::signing_only();
    let key = SecretKey::from_slice(&[seed; 32]).expect("a valid key");
    let public = CompressedPublicKey(key.public_key(&secp));
    let address = Address::p2wpkh(&public, Network::Regtest).to_string();
    let hashes = node.generate_to_address(n, &address);
    node.mine(100);
    hashes
        .iter()
        .map(|h| {
            let block = node.call("getblock", json!([h, 2]));
            let cb = &block["tx"][0];
            Funding {
                outpoint: OutPoint {
                    txid: cb["txid"].as_str().unwrap().parse::<Txid>().unwrap(),
                    vout: 0,
                },
                amount_sats: (cb["vout"][0]["value"].as_f64().unwrap() * 1e8).round() as u64,
                key: FundingKey::P2wpkh(key),
            }
        })
        .collect()
}

/// Mines one block holding exactly `txs` (in order); its height.
pub fn mine_txs(node: &Bitcoind, txs: &[&Transaction]) -> u64 {
    let hexes: Vec<String> = txs
        .iter()
        .map(|t| hex::encode(bitcoin::consensus::serialize(*t)))
        .collect();
    node.call("generateblock", json!([burn_address().to_string(), hexes]));
    node.block_count()
}

/// Block `height`'s hash as ledgerd stores a slot hash (`daSlotHash`): the
/// byte-reverse of what bitcoind prints.
pub fn slot_hash(node: &Bitcoind, height: u64) -> String {
    let mut raw = hex::decode(node.block_hash(height)).expect("a hex hash");
    raw.reverse();
    hex::encode(raw)
}

/// Starts ledgerd reading `node` (its RPC, beside the `extra` DA flags) as
/// `--bitcoin-chain testnet4` on `data`, and checks that it stops at once
/// with the sentence naming the network `node` is on.
pub fn assert_refused_as_another_network(node: &Bitcoind, data: &Path, extra: &[&str]) {
    let cookie = node.cookie_path().display().to_string();
    let data = data.display().to_string();
    let mut args = vec!["--upstream", "http://127.0.0.1:9"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[
        "--bitcoin-rpc",
        &node.url,
        "--bitcoin-rpc-cookie",
        &cookie,
        "--bitcoin-chain",
        "testnet4",
        "--data-dir",
        &data,
        "--bind",
        "127.0.0.1:0",
    ]);
    let (status, _, stderr) = super::process::run_to_exit(&args);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is on the regtest network, not testnet4"),
        "{stderr}"
    );
}
