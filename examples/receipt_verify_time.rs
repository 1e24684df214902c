//! How long one batch-proof receipt takes to check, as the sync thread
//! checks it (`ledgerd::proof::check`: decode, journal, compare, verify).
//!
//!   cargo run --release --example receipt_verify_time [RUNS]   (default 10)
//!
//! Runs on Citrea's real testnet proof in `tests/data` (a Groth16 receipt
//! that verifies under the pre-1.1.0 context after the default one fails,
//! the path Citrea's Genesis-era testnet proofs take) and on a devnet fake
//! receipt; prints each run and the median. Run by `scripts/receipt_verify.sh`.

use std::time::{Duration, Instant};

use ledgerd::chain_rules::{Fork, Network};
use ledgerd::proof::{check, image_ids, journal, receipt, ReceiptRules};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut()) -> Vec<Duration> {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: usize = std::env::args().nth(1).map_or(Ok(10), |a| a.parse())?;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let bytes = std::fs::read(format!("{dir}/testnet_batch_proof_1686.receipt"))?;
    let text = std::fs::read_to_string(format!("{dir}/testnet_batch_proof_1686_output.json"))?;
    let output = ledgerd::wire::read::proof_output(&text)?;
    let rules = ReceiptRules {
        network: Some(Network::Testnet),
        allow_fake_proofs: false,
    };
    let forks = Network::Testnet.fork_table();

    let real = time(runs, || {
        if let Err(e) = check(&bytes, Some(&output), &rules, &forks) {
            panic!("the real proof must verify: {e}");
        }
    });
    println!(
        "real testnet Groth16 receipt ({} bytes, journal with {} state-diff entries):",
        bytes.len(),
        output.state_diff.len()
    );
    println!("  runs: {real:?}");
    println!("  median of {runs}: {:?}", median(real));

    let image = image_ids::batch_image(None, Fork::Kumquat)?;
    let mut devnet_output = output.clone();
    devnet_output.state_diff.truncate(4);
    devnet_output.last_l2_height = 16;
    let fake = receipt::make_fake(&image, journal::encode(&devnet_output, None)?);
    let fakes = time(runs, || {
        if let Err(e) = check(
            &fake,
            Some(&devnet_output),
            &ReceiptRules::default(),
            &forks,
        ) {
            panic!("the fake must pass on a devnet: {e}");
        }
    });
    println!("devnet fake receipt ({} bytes):", fake.len());
    println!("  median of {runs}: {:?}", median(fakes));
    Ok(())
}
