//! Recovering a follower that stopped on a Bitcoin reorg deeper than its
//! finality depth, against a real regtest bitcoind (tests/it/common/bitcoind.rs):
//! `invalidateblock` below the last scanned block, the follower stops
//! (`/health` 503 `reorg`), `ledgerd rollback --to-l1 S` to the last block
//! both chains share, and restarted it follows the new chain and serves the
//! commitments and proofs it had (docs/BITCOIN.md, "Deep reorgs").

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::bitcoind::Bitcoind;
use common::{regtest, run, wait_until, Ledgerd};
use serde_json::json;

/// `ledgerd --upstream <up> --bitcoin-rpc <node> --bitcoin-finality-depth 3`,
/// `/health` 503 after 2 s behind.
fn follower_of(up: &Ledgerd, node: &Bitcoind, dir: &Path) -> Ledgerd {
    regtest::follower_of(up, node, dir, 3)
        .args(&["--health-max-lag-s", "2"])
        .start()
}

/// A regtest address of another key than the burn address.
fn other_address() -> String {
    use bitcoin::secp256k1::{Secp256k1, SecretKey};
    let secp = Secp256k1::signing_only();
    let key = SecretKey::from_slice(&[0x43; 32]).expect("a valid key");
    let public = bitcoin::CompressedPublicKey(key.public_key(&secp));
    bitcoin::Address::p2wpkh(&public, bitcoin::Network::Regtest).to_string()
}

fn scanned(n: &Ledgerd) -> u64 {
    n.result("ledger_getLastScannedL1Height", "[]")
        .as_u64()
        .unwrap()
}

#[test]
#[ignore = "needs bitcoind: scripts/bitcoind/build.sh"]
fn a_follower_stopped_by_a_deep_reorg_rolled_back_to_l1_follows_the_new_chain() {
    let node = Bitcoind::start();
    let dir = tempfile::tempdir().unwrap();
    // A devnet on the regtest: 66 blocks, committed and proven to 60.
    let devnet = regtest::busy_devnet(&node, &dir.path().join("devnet"));
    let first = devnet.result("ledger_getSoftConfirmationByNumber", "[1]")["daSlotHeight"]
        .as_u64()
        .unwrap();
    let devnet_tip = node.block_count();
    node.mine(20);
    let tip = node.block_count();

    let f_dir = dir.path().join("follower");
    let follower = follower_of(&devnet, &node, &f_dir);
    wait_until(Duration::from_secs(60), "the follower to catch up", || {
        scanned(&follower) == tip - 2 && follower.head() == 66
    });
    let before = follower.served(first, devnet_tip);
    assert_eq!(follower.status(60), "Proven");

    // Ten blocks back, deeper than 3: the last scanned block leaves the chain.
    let fork = tip - 10;
    node.invalidate_block(&node.block_hash(fork));
    // Paid elsewhere: the same coinbase in the same second would make the
    // invalidated block again.
    node.generate_to_address(15, &other_address());
    let new_tip = node.block_count();
    wait_until(
        Duration::from_secs(30),
        "health to report the reorg",
        || {
            let (status, h) = follower.health();
            status == 503 && h["reason"] == "reorg"
        },
    );
    let (status, _) = follower.stop();
    assert!(status.success());

    // Back to the last block both chains share.
    let shared = fork - 1;
    let out = run(
        &[
            "rollback",
            "--data-dir",
            f_dir.to_str().unwrap(),
            "--to-l1",
            &shared.to_string(),
        ],
        None,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "L2 head 66 -> 66, last scanned DA slot {} -> {shared}",
            tip - 2
        )),
        "{stdout}"
    );

    let follower = follower_of(&devnet, &node, &f_dir);
    wait_until(
        Duration::from_secs(60),
        "the follower on the new chain",
        || scanned(&follower) == new_tip - 2 && follower.health().0 == 200,
    );
    assert_eq!(follower.served(first, devnet_tip), before);
    assert_eq!(follower.status(60), "Proven");
    assert_eq!(follower.status(66), "Trusted");
    let l1 = follower.result("svc_syncStatus", "[]")["l1Status"].clone();
    assert_eq!(l1, json!({"Synced": new_tip - 2}));
    let errors = follower
        .stderr()
        .lines()
        .filter(|l| l.contains("ERROR"))
        .count();
    assert_eq!(errors, 0, "{}", follower.stderr());
}
