//! Methods a Citrea full node answers beyond the seed's 13, with Citrea's
//! names and shapes (docs/API.md, "Beyond the 13 methods"):
//!
//! - the finality frontier of Citrea v0.7 (`crates/fullnode/src/rpc.rs` of
//!   its v0.7.0 tag): `citrea_getLastCommittedL2Height`,
//!   `citrea_getLastProvenL2Height` (`{"height":n,"commitment_index":i}` or
//!   `null`) and `citrea_getL2StatusHeightsByL1Height`
//!   (`{"committed":n,"proven":m}`, 0 for none), read from the frontier
//!   index ([`crate::ledger::FrontierRead`]) with one seek each;
//! - `ledger_getBatchProofsBySlotHeight` / `ledger_getBatchProofsBySlotHash`,
//!   which a Citrea v0.6 full node answers `null` whatever the slot (its
//!   `ProofsBySlotNumberV2` table is written by a batch prover only; a full
//!   node keeps verified proofs, `ledger_getVerifiedBatchProofsBySlotHeight`);
//! - `health_check` (Citrea's `crates/common/src/rpc/mod.rs`): `null` while
//!   the head moves, `-32603` "Block number is not increasing" when it does
//!   not.
//!
//! Citrea's `health_check` waits 1.5 block times (the gap between the
//! timestamps of the two newest blocks, at least 1 s) and fails if no block
//! came meanwhile. A wait on the server's one loop would stall every other
//! client, so ledgerd answers at once from when the head last moved: it
//! fails when no new block was stored for 1.5 block times, and, as Citrea,
//! passes on a chain of fewer than 2 blocks. A devnet that makes blocks
//! only when asked (`--dev-block-ms 0`) expects none, and passes.

use super::error::RpcError;
use super::params::{Params, Slot, HASH, HEIGHT};
use crate::ledger::{Frontier, FrontierMark, FrontierRead, LedgerRead, LedgerReader};
use crate::progress::{unix_ms, Progress};
use crate::wire;
use crate::wire::write::Obj;

const L1_HEIGHT: Slot = Slot::at(0, "l1_height");

/// Below this head height `health_check` passes without looking (Citrea's
/// `BLOCK_NUM_THRESHOLD`).
const BLOCK_NUM_THRESHOLD: u64 = 2;

/// A request of one of these methods, parsed from the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// `citrea_getLastCommittedL2Height`
    LastCommitted,
    /// `citrea_getLastProvenL2Height`
    LastProven,
    /// `citrea_getL2StatusHeightsByL1Height`
    StatusHeightsByL1(u64),
    /// `ledger_getBatchProofsBySlotHeight` / `..BySlotHash`: the parameter
    /// is checked, the answer is `null`.
    BatchProofs,
    /// `health_check`
    HealthCheck,
}

impl Request {
    /// Method name + params -> request; `None` for a name not of this family.
    pub fn parse(method: &str, params: &Params) -> Option<Result<Request, RpcError>> {
        Some(match method {
            "citrea_getLastCommittedL2Height" => Ok(Request::LastCommitted),
            "citrea_getLastProvenL2Height" => Ok(Request::LastProven),
            "citrea_getL2StatusHeightsByL1Height" => {
                params.height(L1_HEIGHT).map(Request::StatusHeightsByL1)
            }
            "ledger_getBatchProofsBySlotHeight" => {
                params.height(HEIGHT).map(|_| Request::BatchProofs)
            }
            "ledger_getBatchProofsBySlotHash" => params.hash(HASH).map(|_| Request::BatchProofs),
            "health_check" => Ok(Request::HealthCheck),
            _ => return None,
        })
    }

    /// Writes the result.
    /// `blocks_on_demand`: the chain makes blocks only when asked (a devnet
    /// with `--dev-block-ms 0`), so `health_check` expects none.
    pub fn apply(
        &self,
        reader: &LedgerReader,
        progress: &Progress,
        blocks_on_demand: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), RpcError> {
        match *self {
            Request::LastCommitted => write_mark(out, reader.frontier(Frontier::Committed)?),
            Request::LastProven => write_mark(out, reader.frontier(Frontier::Proven)?),
            Request::StatusHeightsByL1(l1) => {
                let height = |which| {
                    reader
                        .frontier_at_l1(which, l1)
                        .map(|m| m.map_or(0, |m| m.l2_height))
                };
                let (committed, proven) = (height(Frontier::Committed)?, height(Frontier::Proven)?);
                Obj::open(out)
                    .u64("committed", committed)
                    .u64("proven", proven)
                    .close();
            }
            Request::BatchProofs => wire::write::write_null(out),
            Request::HealthCheck => {
                if !blocks_on_demand {
                    health_check(reader, progress, unix_ms())?;
                }
                wire::write::write_null(out);
            }
        }
        Ok(())
    }
}

/// `{"height":n,"commitment_index":i}` or `null`.
fn write_mark(out: &mut Vec<u8>, mark: Option<FrontierMark>) {
    match mark {
        None => wire::write::write_null(out),
        Some(m) => Obj::open(out)
            .u64("height", m.l2_height)
            .u64("commitment_index", m.commitment_index)
            .close(),
    }
}

/// Citrea's `health_check`, answered at once (see the module docs).
fn health_check(reader: &LedgerReader, progress: &Progress, now_ms: u64) -> Result<(), RpcError> {
    let head = reader.head_height()?;
    if head < BLOCK_NUM_THRESHOLD {
        return Ok(());
    }
    let stamp = |h| {
        reader
            .soft_confirmation(h)
            .map(|sc| sc.map_or(0, |sc| sc.timestamp))
    };
    let block_time_s = stamp(head)?.saturating_sub(stamp(head - 1)?).max(1);
    let last = progress
        .last_block_unix_ms
        .load(std::sync::atomic::Ordering::Relaxed);
    let since_ms = now_ms.saturating_sub(last);
    if last != 0 && since_ms <= block_time_s * 1500 {
        return Ok(());
    }
    let since = if last == 0 {
        "no block was stored since the node started".to_string()
    } else {
        format!("no block was stored for {:.1} s", since_ms as f64 / 1000.0)
    };
    // Citrea's words first, so a client matching them keeps working.
    Err(RpcError::internal(format!(
        "Block number is not increasing: the head is {head}, and {since} (more than 1.5 block \
         times of {block_time_s} s)"
    )))
}
