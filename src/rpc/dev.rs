//! `dev_*` methods: a test drives the devnet (mine, commit, prove, inject).
//!
//! Answered only by a `--dev` node whose address is loopback (or that was
//! started with `--dev-allow-remote-control`); elsewhere they are `-32601`
//! saying why. The server hands a body holding one to the devnet's sync
//! thread ([`crate::sync::devnet`]), which runs it there and answers
//! once its effect is readable.

use super::error::{shorten, RpcError};
use super::params::{hex_text, parse_height, Params, Slot};
use crate::sync::devnet::{DevCommand, DevError, DevExec, DevOutcome};
use crate::wire;

/// Every `dev_*` method name.
pub const NAMES: [&str; 13] = [
    "dev_mine",
    "dev_setBlockInterval",
    "dev_commit",
    "dev_prove",
    "dev_setAutoCommit",
    "dev_setAutoProve",
    "dev_sendTransaction",
    "dev_addDeposit",
    "dev_setNextTimestamp",
    "dev_setL1FeeRate",
    "dev_snapshot",
    "dev_revert",
    "dev_reset",
];

/// Whether `method` is one of [`NAMES`].
pub fn is_dev_method(method: &str) -> bool {
    NAMES.contains(&method)
}

const BLOCKS: Slot = Slot::at(0, "blocks");
const MS: Slot = Slot::at(0, "ms");
const COMMITMENTS: Slot = Slot::at(0, "commitments");
const TX: Slot = Slot::at(0, "tx");
const DEPOSIT: Slot = Slot::at(0, "deposit");
const TIMESTAMP: Slot = Slot::at(0, "timestamp");
const RATE: Slot = Slot::at(0, "rate");
const ID: Slot = Slot::at(0, "id");

fn blob_error(name: &str, raw: &str, why: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "`{name}` {why} (got {}); give the raw bytes as a string of hex digits (two per \
         byte, at least one byte), with or without 0x",
        shorten(raw)
    ))
}

/// Reads a blob: a string of hex digit pairs, optional `0x`, any case.
fn parse_blob(params: &Params, slot: Slot) -> Result<Vec<u8>, RpcError> {
    let raw = params.required(slot)?.get();
    let error = |why| blob_error(slot.name, raw, why);
    let digits = hex_text(raw).map_err(error)?;
    if digits.is_empty() {
        return Err(error("is empty"));
    }
    if digits.len() % 2 == 1 {
        return Err(error("has an odd number of hex digits"));
    }
    hex::decode(digits).map_err(|_| error("holds a character that is not a hex digit"))
}

/// Method name + params -> the call to make.
pub fn parse(method: &str, params: &Params) -> Result<DevCommand, RpcError> {
    use DevCommand::*;
    Ok(match method {
        "dev_mine" => Mine(match params.get(BLOCKS) {
            Some(raw) => parse_height(BLOCKS.name, raw)?,
            None => 1,
        }),
        "dev_setBlockInterval" => SetBlockInterval(params.height(MS)?),
        "dev_commit" => Commit,
        "dev_prove" => Prove,
        "dev_setAutoCommit" => SetAutoCommit(params.height(BLOCKS)?),
        "dev_setAutoProve" => SetAutoProve(params.height(COMMITMENTS)?),
        "dev_sendTransaction" => SendTransaction(parse_blob(params, TX)?),
        "dev_addDeposit" => AddDeposit(parse_blob(params, DEPOSIT)?),
        "dev_setNextTimestamp" => SetNextTimestamp(params.height(TIMESTAMP)?),
        "dev_setL1FeeRate" => SetL1FeeRate(u128::from(params.height(RATE)?)),
        "dev_snapshot" => Snapshot,
        "dev_revert" => Revert(params.height(ID)?),
        "dev_reset" => Reset,
        _ => return Err(RpcError::method_not_found(method, &NAMES)),
    })
}

/// Runs the call on the sync thread's `exec` and writes its result.
pub fn apply(cmd: DevCommand, exec: &mut dyn DevExec, out: &mut Vec<u8>) -> Result<(), RpcError> {
    match exec.exec(cmd) {
        Ok(DevOutcome::Number(n)) => wire::write::write_u64(out, n),
        Ok(DevOutcome::Commitment(Some(c))) => wire::write::write_commitment(out, &c),
        Ok(DevOutcome::Proof(Some(p))) => wire::write::write_verified_batch_proof(out, &p),
        Ok(DevOutcome::Commitment(None) | DevOutcome::Proof(None)) => wire::write::write_null(out),
        Ok(DevOutcome::Bool(b)) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        Err(DevError::Invalid(why)) => return Err(RpcError::invalid_params(why)),
        Err(e) => {
            return Err(RpcError::internal(format!(
                "{e}; the node keeps serving: retry, and check the node's log if it persists"
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    fn params(text: &str) -> Params<'_> {
        let items: Vec<&RawValue> = serde_json::from_str(text).expect("json array");
        Params::Array(items)
    }

    #[test]
    fn every_method_parses_its_parameter() {
        use DevCommand::*;
        let cases: [(&str, &str, DevCommand); 11] = [
            ("dev_mine", "[]", Mine(1)),
            ("dev_mine", "[\"0x10\"]", Mine(16)),
            ("dev_setBlockInterval", "[0]", SetBlockInterval(0)),
            ("dev_commit", "[]", Commit),
            ("dev_prove", "[]", Prove),
            ("dev_setAutoCommit", "[\"5\"]", SetAutoCommit(5)),
            ("dev_setAutoProve", "[2]", SetAutoProve(2)),
            (
                "dev_sendTransaction",
                "[\"0xABcd\"]",
                SendTransaction(vec![0xab, 0xcd]),
            ),
            ("dev_addDeposit", "[\"00\"]", AddDeposit(vec![0])),
            (
                "dev_setNextTimestamp",
                "[1800000000]",
                SetNextTimestamp(1_800_000_000),
            ),
            ("dev_setL1FeeRate", "[7]", SetL1FeeRate(7)),
        ];
        for (method, p, want) in cases {
            assert_eq!(parse(method, &params(p)), Ok(want), "{method}{p}");
        }
    }

    #[test]
    fn bad_parameters_say_what_to_give() {
        let cases = [
            ("dev_mine", "[-1]", "non-negative integer"),
            ("dev_mine", "[1.5]", "non-negative integer"),
            ("dev_setBlockInterval", "[]", "missing parameter `ms`"),
            (
                "dev_sendTransaction",
                r#"["0xabc"]"#,
                "odd number of hex digits",
            ),
            ("dev_sendTransaction", r#"["zz"]"#, "not a hex digit"),
            ("dev_addDeposit", r#"["0x"]"#, "is empty"),
            ("dev_addDeposit", "[12]", "is not a string"),
            (
                "dev_setL1FeeRate",
                r#"["18446744073709551616"]"#,
                "too large",
            ),
        ];
        for (method, p, says) in cases {
            let e = parse(method, &params(p)).expect_err(p);
            assert_eq!(e.code, -32602, "{method}{p}");
            assert!(e.data.contains(says), "{method}{p}: {}", e.data);
        }
    }
}
