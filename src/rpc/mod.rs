//! The JSON-RPC 2.0 layer: request bytes in, response bytes out.
//!
//! [`Rpc::handle`] is a pure function of the body and the ledger snapshot (no
//! sockets), so it is also the fuzz target. The flow, in the style of
//! mini-redis:
//!
//! 1. [`envelope`] splits the body into request objects (or answers one
//!    envelope error for the whole body);
//! 2. each request's method name and params are parsed into a typed request
//!    of its method family ([`sync_status`], [`soft_confirmations`],
//!    [`commitments`], [`proofs`], [`counters`]), parameters through
//!    [`params`];
//! 3. the request is applied against one read transaction of the ledger,
//!    shared by every request of a batch (one consistent snapshot), and its
//!    result is written as JSON by [`crate::json`] straight into the output.
//!
//! Errors are [`RpcError`]s; a ledger failure becomes `-32603` for that one
//! request and the server keeps serving.

pub mod commitments;
pub mod counters;
pub mod envelope;
pub mod error;
pub mod params;
pub mod proofs;
pub mod soft_confirmations;
pub mod sync_status;

use std::sync::Arc;

use serde_json::value::RawValue;

pub use crate::config::Wire;
use crate::ledger::{Ledger, LedgerReader};
use crate::sync::progress::Progress;
use envelope::{Body, Call, Entry};
pub use error::RpcError;
use params::Params;

/// Every method name answered, for `-32601`'s data.
pub const METHOD_NAMES: [&str; 14] = [
    "svc_syncStatus",
    "citrea_syncStatus",
    "ledger_getSoftConfirmationByNumber",
    "ledger_getSoftConfirmationByHash",
    "ledger_getSoftConfirmationRange",
    "ledger_getSoftConfirmationStatus",
    "ledger_getL2GenesisStateRoot",
    "ledger_getSequencerCommitmentsOnSlotByNumber",
    "ledger_getSequencerCommitmentsOnSlotByHash",
    "ledger_getHeadSoftConfirmation",
    "ledger_getHeadSoftConfirmationHeight",
    "ledger_getVerifiedBatchProofsBySlotHeight",
    "ledger_getLastVerifiedBatchProof",
    "ledger_getLastScannedL1Height",
];

/// Limits and answer shapes of the RPC layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RpcConfig {
    /// Most heights one `ledger_getSoftConfirmationRange` may ask for (default 1000).
    pub max_range: u64,
    /// Most request objects in one batch (default 50).
    pub max_batch: usize,
    /// The answer shapes (`--wire`): the spec's, or a Citrea v0.6 node's.
    pub wire: Wire,
}

impl Default for RpcConfig {
    fn default() -> RpcConfig {
        RpcConfig {
            max_range: 1000,
            max_batch: 50,
            wire: Wire::Seed,
        }
    }
}

/// A typed request of any method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Command {
    SyncStatus,
    SoftConfirmations(soft_confirmations::Request),
    Commitments(commitments::Request),
    Proofs(proofs::Request),
    Counters(counters::Request),
}

impl Command {
    /// Method name + params -> typed request.
    fn parse(method: &str, params: &Params) -> Result<Command, RpcError> {
        use soft_confirmations::Request as Sc;
        use Command::*;
        Ok(match method {
            "svc_syncStatus" | "citrea_syncStatus" => SyncStatus,
            "ledger_getSoftConfirmationByNumber" => SoftConfirmations(Sc::parse_by_number(params)?),
            "ledger_getSoftConfirmationByHash" => SoftConfirmations(Sc::parse_by_hash(params)?),
            "ledger_getSoftConfirmationRange" => SoftConfirmations(Sc::parse_range(params)?),
            "ledger_getSoftConfirmationStatus" => SoftConfirmations(Sc::parse_status(params)?),
            "ledger_getHeadSoftConfirmation" => SoftConfirmations(Sc::Head),
            "ledger_getHeadSoftConfirmationHeight" => SoftConfirmations(Sc::HeadHeight),
            "ledger_getSequencerCommitmentsOnSlotByNumber" => {
                Commitments(commitments::Request::parse_by_number(params)?)
            }
            "ledger_getSequencerCommitmentsOnSlotByHash" => {
                Commitments(commitments::Request::parse_by_hash(params)?)
            }
            "ledger_getVerifiedBatchProofsBySlotHeight" => {
                Proofs(proofs::Request::parse_by_slot_height(params)?)
            }
            "ledger_getLastVerifiedBatchProof" => Proofs(proofs::Request::Last),
            "ledger_getL2GenesisStateRoot" => Counters(counters::Request::GenesisStateRoot),
            "ledger_getLastScannedL1Height" => Counters(counters::Request::LastScannedL1Height),
            _ => return Err(RpcError::method_not_found(method)),
        })
    }
}

/// One ledger read transaction, opened on first use and shared by the rest
/// of the body (a batch reads one consistent snapshot).
struct Snapshot<'a> {
    ledger: &'a Ledger,
    reader: Option<LedgerReader<'a>>,
}

impl<'a> Snapshot<'a> {
    fn reader(&mut self) -> Result<&LedgerReader<'a>, RpcError> {
        if self.reader.is_none() {
            self.reader = Some(self.ledger.reader()?);
        }
        self.reader
            .as_ref()
            .ok_or_else(|| RpcError::internal("the ledger snapshot was not opened; retry"))
    }
}

/// How one request object of a body was answered (told to a [`Tally`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallOutcome {
    Ok,
    /// A JSON-RPC error with this code.
    Error(i64),
    /// A notification: not answered.
    Notification,
}

/// Told about each request object a body holds, for `/metrics`: its method
/// name (`None` when the object, or the whole body, was invalid) and how it
/// was answered. `()` tells nobody.
pub trait Tally {
    fn call(&mut self, method: Option<&str>, outcome: CallOutcome);
}

impl Tally for () {
    #[inline]
    fn call(&mut self, _: Option<&str>, _: CallOutcome) {}
}

/// The JSON-RPC handler: ledger, sync progress and limits.
pub struct Rpc {
    ledger: Arc<Ledger>,
    progress: Arc<Progress>,
    config: RpcConfig,
}

impl Rpc {
    pub fn new(ledger: Arc<Ledger>, progress: Arc<Progress>, config: RpcConfig) -> Rpc {
        Rpc {
            ledger,
            progress,
            config,
        }
    }

    /// The ledger it reads.
    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }

    /// The sync progress it reports.
    pub fn progress(&self) -> &Arc<Progress> {
        &self.progress
    }

    /// The limits in use.
    pub fn config(&self) -> RpcConfig {
        self.config
    }

    /// Answers one request body. `None` = nothing to send (a notification,
    /// or a batch of only notifications): HTTP 200 with an empty body.
    pub fn handle(&self, body: &[u8]) -> Option<Vec<u8>> {
        self.handle_tallied(body, &mut ())
    }

    /// [`Rpc::handle`], telling `tally` how each request object was answered.
    pub fn handle_tallied(&self, body: &[u8], tally: &mut dyn Tally) -> Option<Vec<u8>> {
        // Sized for one soft confirmation (~1.1 KB), so a typical answer is
        // one allocation instead of a chain of doublings.
        let mut out = Vec::with_capacity(2048);
        let mut snapshot = Snapshot {
            ledger: &self.ledger,
            reader: None,
        };
        match envelope::parse(body, self.config.max_batch) {
            Body::Error(error) => {
                tally.call(None, CallOutcome::Error(error.code));
                write_error(&mut out, None, &error);
                Some(out)
            }
            Body::Single(entry) => self
                .answer(&entry, &mut snapshot, &mut out, tally)
                .then_some(out),
            Body::Batch(entries) => {
                out.push(b'[');
                let mut answered = false;
                for entry in &entries {
                    let mark = out.len();
                    if answered {
                        out.push(b',');
                    }
                    if self.answer(entry, &mut snapshot, &mut out, tally) {
                        answered = true;
                    } else {
                        out.truncate(mark);
                    }
                }
                out.push(b']');
                answered.then_some(out)
            }
        }
    }

    /// The body of the HTTP 413 answer to a body over `limit` bytes.
    pub fn too_large_body(limit: usize) -> Vec<u8> {
        let mut out = Vec::new();
        write_error(&mut out, None, &RpcError::too_big(limit));
        out
    }

    /// Writes the response object of one entry; `false` when it gets none
    /// (a notification).
    fn answer(
        &self,
        entry: &Entry,
        snapshot: &mut Snapshot,
        out: &mut Vec<u8>,
        tally: &mut dyn Tally,
    ) -> bool {
        match entry {
            Entry::Invalid { id, error } => {
                tally.call(None, CallOutcome::Error(error.code));
                write_error(out, *id, error);
                true
            }
            // Every method only reads: a notification has nothing to do.
            Entry::Call(Call {
                id: None, method, ..
            }) => {
                tally.call(Some(method), CallOutcome::Notification);
                false
            }
            Entry::Call(call) => {
                let start = out.len();
                write_head(out, call.id);
                out.extend_from_slice(b",\"result\":");
                if let Err(error) = self.call(call, snapshot, out) {
                    out.truncate(start);
                    write_error(out, call.id, &error);
                    tally.call(Some(&call.method), CallOutcome::Error(error.code));
                } else {
                    out.push(b'}');
                    tally.call(Some(&call.method), CallOutcome::Ok);
                }
                true
            }
        }
    }

    /// Parses and applies one call, writing its `result` value.
    fn call(
        &self,
        call: &Call,
        snapshot: &mut Snapshot,
        out: &mut Vec<u8>,
    ) -> Result<(), RpcError> {
        match Command::parse(&call.method, &call.params)? {
            Command::SyncStatus => {
                sync_status::apply(&self.progress, out);
                Ok(())
            }
            Command::SoftConfirmations(req) => req.apply(snapshot.reader()?, &self.config, out),
            Command::Commitments(req) => req.apply(snapshot.reader()?, out),
            Command::Proofs(req) => req.apply(snapshot.reader()?, self.config.wire, out),
            Command::Counters(req) => req.apply(snapshot.reader()?, out),
        }
    }
}

/// Writes `{"jsonrpc":"2.0","id":<id>` (raw id text echoed, or null).
fn write_head(out: &mut Vec<u8>, id: Option<&RawValue>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    match id {
        Some(id) => out.extend_from_slice(id.get().as_bytes()),
        None => crate::json::write_null(out),
    }
}

/// Writes a whole error response object.
fn write_error(out: &mut Vec<u8>, id: Option<&RawValue>, error: &RpcError) {
    write_head(out, id);
    out.extend_from_slice(b",\"error\":");
    error.write(out);
    out.push(b'}');
}

#[cfg(test)]
mod tests;
