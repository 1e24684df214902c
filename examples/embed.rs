//! Embedding ledgerd in another project's tests: start a node with the
//! embedded devnet on a free port, query it over JSON-RPC, read its ledger
//! directly, stop it.
//!
//! ```sh
//! cargo run --example embed
//! ```
//!
//! In a test of your own, the same lines go in a `#[test]` function (see the
//! crate docs); `Node` stops when dropped, even when an assertion panics.

use ledgerd::ledger::LedgerRead;
use ledgerd::source::devnet::DevnetConfig;
use ledgerd::Node;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let node = Node::builder()
        .data_dir(dir.path())
        .dev(DevnetConfig {
            prefill: 100, // heights 1..=100 exist when start() returns
            block_ms: 0,  // and no more come: answers are deterministic
            ..DevnetConfig::default()
        })
        .bind("127.0.0.1:0")
        .start()?;
    println!("node at {}", node.url());

    // Over HTTP, as any client would.
    let answer = ureq::post(&node.url())
        .set("Content-Type", "application/json")
        .send_string(
            r#"{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationStatus","params":[1]}"#,
        )?
        .into_string()?;
    println!("status of height 1: {answer}");
    assert_eq!(answer, r#"{"jsonrpc":"2.0","id":1,"result":"Proven"}"#);

    // Directly from the ledger, without HTTP.
    let head = node.ledger().reader()?.head_height()?;
    println!("head: {head}");
    assert_eq!(head, 100);

    // Stops the server and the sync thread and waits for both.
    node.shutdown();
    println!("stopped");
    Ok(())
}
