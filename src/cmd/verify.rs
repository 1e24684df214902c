//! `ledgerd verify FILE`: checks soft confirmations as an RPC answered them,
//! without a data dir.
//!
//! The input is what `ledger_getSoftConfirmation*` answers: one JSON object
//! per line, a JSON array (a range answer, `null` at heights the node does
//! not hold), a whole JSON-RPC response (`{"jsonrpc":..,"result":..}`, or a
//! batch of them), or `ledgerd export` lines (`{"softConfirmation":..}`;
//! its other records are skipped). Every block is checked by the rules of
//! its height's fork ([`crate::chain_rules`]):
//!
//! - its hash recomputes from its fields;
//! - its pubKey is the sequencer key (`--sequencer-pubkey`, the network's,
//!   else the first block's), and its signature verifies under that key;
//! - its prevHash is the hash of the block before it in the input, when
//!   that block is the height below.
//!
//! One line per block goes to the output: `ok 78`, or `FAIL 79: ...` with
//! every check it failed. Nothing else is checked: not state roots, not DA
//! slots, not that height 1's prevHash is zero (a dump rarely starts at 1).

use std::fmt;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{input_file, FileArgs};
use crate::chain_rules::args::ChainRulesArgs;
use crate::chain_rules::{block_hash, verify_block_signature, Fork, ForkTable};
use crate::checks::{self, Check};
use crate::flags::ConfigError;
use crate::types::SoftConfirmation;
use crate::wire;

/// What `verify` checks against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyOptions {
    pub forks: ForkTable,
    /// The sequencer key; `None`: the first block's pubKey.
    pub sequencer_key: Option<[u8; 32]>,
    /// Where the key comes from, named in failures (`testnet key`).
    pub sequencer_key_name: String,
}

/// Why the input could not be read as soft confirmations (nothing was
/// verified).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputError {
    /// Not JSON (serde_json's message names the line and column).
    Json(String),
    /// A JSON value that is not a soft confirmation (items count from 1).
    NotABlock { item: usize, why: String },
    /// A JSON-RPC error answer where blocks were expected.
    RpcError(String),
    /// No soft confirmation at all.
    Empty,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Json(e) => write!(f, "not JSON: {e}"),
            InputError::NotABlock { item, why } => {
                write!(f, "value {item} of the input is not a soft confirmation: {why}")
            }
            InputError::RpcError(e) => write!(
                f,
                "the input is a JSON-RPC error answer, not soft confirmations: {e}"
            ),
            InputError::Empty => f.write_str(
                "the input holds no soft confirmation (give RPC answers: objects, one per line, or an array)",
            ),
        }
    }
}

impl std::error::Error for InputError {}

/// How a run went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: u64,
    pub failed: u64,
    /// `null` entries (heights the node did not hold), skipped.
    pub nulls: u64,
    /// Heights after which the next block in the input is not the next
    /// height: links across these gaps were not checked.
    pub gaps_after: Vec<u64>,
}

impl Summary {
    /// True when at least one block was checked and none failed.
    pub fn all_passed(&self) -> bool {
        self.failed == 0 && self.passed > 0
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} block(s): {} ok, {} failed",
            self.passed + self.failed,
            self.passed,
            self.failed
        )?;
        if self.nulls > 0 {
            write!(f, "; {} null entr(ies) skipped", self.nulls)?;
        }
        if !self.gaps_after.is_empty() {
            let shown: Vec<String> = self.gaps_after.iter().take(5).map(u64::to_string).collect();
            write!(
                f,
                "; the input skips heights after {}{} (links across a gap are not checked)",
                shown.join(", "),
                if self.gaps_after.len() > 5 {
                    ", ..."
                } else {
                    ""
                }
            )?;
        }
        Ok(())
    }
}

/// Reads every soft confirmation of `text` (`None` for a `null` entry), in
/// input order.
pub fn read_blocks(text: &str) -> Result<Vec<Option<SoftConfirmation>>, InputError> {
    let mut blocks = Vec::new();
    let mut items = 0usize;
    for value in serde_json::Deserializer::from_str(text).into_iter::<&RawValue>() {
        let value = value.map_err(|e| InputError::Json(e.to_string()))?;
        collect(value, &mut blocks, &mut items)?;
    }
    if blocks.iter().all(Option::is_none) {
        return Err(InputError::Empty);
    }
    Ok(blocks)
}

/// The keys that tell an object's kind (every other key is ignored here).
#[derive(Deserialize)]
struct Kind<'a> {
    #[serde(rename = "l2Height", default)]
    l2_height: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    jsonrpc: Option<serde::de::IgnoredAny>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(rename = "softConfirmation", borrow, default)]
    soft_confirmation: Option<&'a RawValue>,
}

/// `ledgerd export` record keys that are not soft confirmations.
const OTHER_FIXTURE_RECORDS: [&str; 6] = [
    "genesisStateRoot",
    "daSlot",
    "commitment",
    "verifiedBatchProof",
    "status",
    "lastScannedL1Height",
];

fn collect(
    value: &RawValue,
    blocks: &mut Vec<Option<SoftConfirmation>>,
    items: &mut usize,
) -> Result<(), InputError> {
    let text = value.get().trim_start();
    if text.starts_with('[') {
        let list: Vec<&RawValue> =
            serde_json::from_str(value.get()).map_err(|e| InputError::Json(e.to_string()))?;
        for v in list {
            collect(v, blocks, items)?;
        }
        return Ok(());
    }
    *items += 1;
    let item = *items;
    if text == "null" {
        blocks.push(None);
        return Ok(());
    }
    let not_a_block = |why: String| InputError::NotABlock { item, why };
    if !text.starts_with('{') {
        return Err(not_a_block(format!(
            "it is {}, not an object",
            text.chars().take(20).collect::<String>()
        )));
    }
    let kind: Kind = serde_json::from_str(value.get()).map_err(|e| not_a_block(e.to_string()))?;
    if kind.l2_height.is_some() {
        let sc =
            wire::read::soft_confirmation(value.get()).map_err(|e| not_a_block(e.to_string()))?;
        blocks.push(Some(sc));
        return Ok(());
    }
    if let Some(sc) = kind.soft_confirmation {
        *items -= 1;
        return collect(sc, blocks, items);
    }
    if let Some(error) = kind.error {
        return Err(InputError::RpcError(error.get().to_string()));
    }
    if kind.jsonrpc.is_some() || kind.result.is_some() {
        *items -= 1;
        return match kind.result {
            Some(result) => collect(result, blocks, items),
            // `"result": null`: the node holds no such block.
            None => {
                blocks.push(None);
                Ok(())
            }
        };
    }
    let key = serde_json::from_str::<std::collections::BTreeMap<String, serde::de::IgnoredAny>>(
        value.get(),
    )
    .ok()
    .and_then(|m| m.into_keys().next());
    match key {
        Some(k) if OTHER_FIXTURE_RECORDS.contains(&k.as_str()) => {
            *items -= 1;
            Ok(())
        }
        _ => Err(not_a_block(
            "it has no l2Height (nor result or softConfirmation holding one)".into(),
        )),
    }
}

/// Every check `sc` fails, by its fork's rules, against `key` and the block
/// before it in the input (`prev`).
pub fn check_block(
    sc: &SoftConfirmation,
    prev: Option<&SoftConfirmation>,
    forks: &ForkTable,
    key: &[u8; 32],
    key_name: &str,
) -> Vec<String> {
    let fork = forks.fork_at(sc.l2_height);
    let mut failures = Vec::new();
    if let Some(prev) = prev {
        if sc.l2_height <= prev.l2_height {
            failures.push(format!(
                "comes after {} in the input: heights must increase",
                prev.l2_height
            ));
        } else if sc.l2_height == prev.l2_height + 1
            && checks::verify_link(sc, (prev.l2_height, prev.hash)).is_err()
        {
            failures.push(format!(
                "prevHash {} does not link to the hash {} of {}",
                hex::encode(sc.prev_hash),
                hex::encode(prev.hash),
                prev.l2_height
            ));
        }
    }
    for check in checks::block_failures(sc, key, forks) {
        failures.push(match check {
            Check::Hash => hash_failure(sc, fork, key),
            Check::PubKey => format!(
                "pubKey {} is not the {key_name} {}",
                hex::encode(sc.pub_key),
                hex::encode(key)
            ),
            _ => format!("signature does not verify ({fork} rules, {key_name})"),
        });
    }
    failures
}

/// Why a block's hash does not recompute, with what an operator can do:
/// the other fork's rules would fit (a wrong fork table), or the node
/// withholds transaction bodies.
fn hash_failure(sc: &SoftConfirmation, fork: Fork, key: &[u8; 32]) -> String {
    let mut why = format!("hash does not recompute from the fields ({fork} rules)");
    let other = match fork {
        Fork::Genesis => Fork::Kumquat,
        Fork::Kumquat => Fork::Genesis,
    };
    if block_hash(sc, other) == sc.hash {
        why.push_str(&format!(
            "; it does by the {other} rules: check --network / --kumquat-height"
        ));
    } else if sc.txs.is_empty() {
        // Under Kumquat the signature is over the stated hash: when it
        // verifies, only the (withheld) bodies are missing. Under Genesis
        // it is over the bodies too, so nothing tells.
        let signed = verify_block_signature(sc, fork, key).is_ok();
        match fork {
            Fork::Kumquat if signed => why.push_str(
                "; its txs are empty and its signature verifies over its stated hash: \
                 the node withholds transaction bodies (include_tx_body = false)",
            ),
            Fork::Kumquat => {}
            Fork::Genesis => why.push_str(
                "; its txs are empty: the node may withhold transaction bodies (include_tx_body = false)",
            ),
        }
    }
    why
}

/// Verifies every block of `text`, writing one line per block to `out`.
pub fn check_all(
    text: &str,
    options: &VerifyOptions,
    out: &mut impl Write,
) -> Result<Summary, RunError> {
    let blocks = read_blocks(text)?;
    let mut summary = Summary::default();
    let first_key = blocks.iter().flatten().next().map(|sc| sc.pub_key);
    let (key, key_name) = match (options.sequencer_key, first_key) {
        (Some(k), _) => (k, options.sequencer_key_name.as_str()),
        (None, Some(k)) => (k, "key of the first block"),
        (None, None) => return Err(InputError::Empty.into()),
    };
    let mut prev: Option<&SoftConfirmation> = None;
    for sc in &blocks {
        let Some(sc) = sc else {
            summary.nulls += 1;
            continue;
        };
        if let Some(p) = prev {
            if sc.l2_height > p.l2_height + 1 {
                summary.gaps_after.push(p.l2_height);
            }
        }
        let failures = check_block(sc, prev, &options.forks, &key, key_name);
        if failures.is_empty() {
            summary.passed += 1;
            writeln!(out, "ok {}", sc.l2_height)?;
        } else {
            summary.failed += 1;
            writeln!(out, "FAIL {}: {}", sc.l2_height, failures.join("; "))?;
        }
        prev = Some(sc);
    }
    out.flush()?;
    Ok(summary)
}

/// Why `verify` could not run to the end.
#[derive(Debug)]
pub enum RunError {
    Input(InputError),
    /// The report could not be written.
    Output(io::Error),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Input(e) => write!(f, "{e}"),
            RunError::Output(e) => write!(f, "cannot write the report: {e}"),
        }
    }
}

impl std::error::Error for RunError {}

wrap_errors!(RunError {
    Input(InputError),
    Output(io::Error),
});

/// `ledgerd verify FILE`: an input and the chain rules (not the proof
/// flags: it checks no proof).
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Soft confirmations as a node answered them; - reads stdin
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub chain: ChainRulesArgs,
    #[command(flatten)]
    pub file_args: FileArgs,
}

/// `ledgerd verify [--network N | --kumquat-height H] [--sequencer-pubkey K] FILE`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verify {
    /// Soft confirmations as the RPC answers them; `-` reads stdin.
    pub file: PathBuf,
    /// `--network` / `--kumquat-height`; `--sequencer-pubkey`, else the
    /// network's key.
    pub options: VerifyOptions,
}

pub fn resolve(v: Args) -> Result<Verify, ConfigError> {
    Ok(Verify {
        file: input_file(
            v.file,
            "verify needs a FILE of soft confirmations as the RPC answers them (`-` reads stdin)",
        )?,
        options: VerifyOptions {
            forks: v.chain.forks(),
            sequencer_key: v.chain.sequencer_key(),
            sequencer_key_name: v.chain.sequencer_key_name(),
        },
    })
}

impl Verify {
    /// One line per block on stdout; exit 0 only when every block passed,
    /// 1 when one failed, 2 when the input cannot be read.
    pub fn run(&self) -> ExitCode {
        let name = self.file.display();
        let text = match super::read_input("verify", &self.file).and_then(|bytes| {
            String::from_utf8(bytes).map_err(|_| {
                eprintln!("ledgerd verify: cannot read {name}: stream did not contain valid UTF-8");
                ExitCode::from(2)
            })
        }) {
            Ok(t) => t,
            Err(code) => return code,
        };
        let mut out = std::io::stdout().lock();
        let outcome =
            check_all(&text, &self.options, &mut out).map(|s| (s.all_passed(), s.to_string()));
        super::check_exit("verify", &self.file, outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain_rules::SequencerKey;

    /// A little chain across a fork at height 3, signed by a test key.
    fn chain(forks: &ForkTable) -> (SequencerKey, Vec<SoftConfirmation>) {
        let key = SequencerKey::from_secret(&[5; 32]);
        let mut prev = crate::types::ZERO_HASH;
        let blocks = (1..=4u64)
            .map(|h| {
                let mut sc = SoftConfirmation {
                    l2_height: h,
                    da_slot_height: 100 + h,
                    da_slot_hash: [h as u8; 32],
                    da_slot_txs_commitment: [7; 32],
                    hash: [0; 32],
                    prev_hash: prev,
                    txs: vec![vec![h as u8; 9], vec![]],
                    state_root: [1; 32],
                    signature: [0; 64],
                    pub_key: key.public_key(),
                    deposit_data: vec![vec![2; 3]],
                    l1_fee_rate: 1 << 70,
                    timestamp: 1_700_000_000 + h,
                };
                let fork = forks.fork_at(h);
                sc.hash = block_hash(&sc, fork);
                sc.signature = key.sign_block(&sc, fork);
                prev = sc.hash;
                sc
            })
            .collect();
        (key, blocks)
    }

    /// [`check_all`] of `blocks` as JSON lines, by `forks`, against the
    /// first block's key: the summary and the report.
    fn report(blocks: &[SoftConfirmation], forks: ForkTable) -> (Summary, String) {
        let mut input = Vec::new();
        for sc in blocks {
            crate::wire::write::write_soft_confirmation(&mut input, sc);
            input.push(b'\n');
        }
        let options = VerifyOptions {
            forks,
            sequencer_key: None,
            sequencer_key_name: String::new(),
        };
        let mut out = Vec::new();
        let summary = check_all(std::str::from_utf8(&input).unwrap(), &options, &mut out).unwrap();
        (summary, String::from_utf8(out).unwrap())
    }

    #[test]
    fn a_chain_across_the_fork_passes_by_its_table_and_each_block_is_reported() {
        let forks = ForkTable::kumquat_from(3);
        let (_, blocks) = chain(&forks);
        let (summary, out) = report(&blocks, forks);
        assert_eq!(out, "ok 1\nok 2\nok 3\nok 4\n");
        assert!(summary.all_passed());
        assert_eq!(summary.to_string(), "4 block(s): 4 ok, 0 failed");
    }

    #[test]
    fn a_kumquat_block_with_withheld_txs_is_told_apart_from_a_tampered_one() {
        let forks = ForkTable::kumquat_from(3);
        let (key, blocks) = chain(&forks);
        let mut withheld = blocks[3].clone();
        withheld.txs.clear();
        let failures = check_block(&withheld, Some(&blocks[2]), &forks, &key.public_key(), "k");
        assert_eq!(
            failures,
            ["hash does not recompute from the fields (Kumquat rules); its txs are empty and its \
              signature verifies over its stated hash: the node withholds transaction bodies \
              (include_tx_body = false)"]
        );
        let mut tampered = withheld.clone();
        tampered.timestamp += 1;
        tampered.hash[0] ^= 1;
        let failures = check_block(&tampered, None, &forks, &key.public_key(), "k");
        assert_eq!(
            failures,
            [
                "hash does not recompute from the fields (Kumquat rules)",
                "signature does not verify (Kumquat rules, k)"
            ]
        );
    }

    #[test]
    fn without_a_key_the_first_blocks_key_is_the_sequencers() {
        let forks = ForkTable::KUMQUAT_ONLY;
        let (_, mut blocks) = chain(&forks);
        let other = SequencerKey::from_secret(&[6; 32]);
        blocks[2].pub_key = other.public_key();
        blocks[2].signature = other.sign_block(&blocks[2], crate::chain_rules::Fork::Kumquat);
        let (summary, out) = report(&blocks, forks);
        assert_eq!(summary.failed, 1, "{out}");
        let line = out.lines().nth(2).unwrap();
        assert!(line.starts_with("FAIL 3: pubKey "), "{line}");
        assert!(line.contains("is not the key of the first block"), "{line}");
        assert!(line.ends_with("signature does not verify (Kumquat rules, key of the first block)"));
    }
}
