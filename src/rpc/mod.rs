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
//!    [`commitments`], [`proofs`], [`ledger_info`], and [`citrea`]: what a
//!    Citrea full node answers beyond the seed's 13 methods), parameters
//!    through [`params`];
//! 3. the request is applied against one read transaction of the ledger,
//!    shared by every request of a batch (one consistent snapshot), and its
//!    result is written as JSON by [`crate::wire::write`] straight into the output.
//!
//! The `dev_*` methods ([`dev`]) change the devnet's chain: a body holding
//! one is answered on the devnet's sync thread ([`Rpc::handle_dev`]), each
//! call in order, and a read after a `dev_*` call in a batch sees its effect.
//!
//! Errors are [`RpcError`]s; a ledger failure becomes `-32603` for that one
//! request and the server keeps serving.

pub mod args;
pub mod citrea;
pub mod commitments;
pub mod dev;
pub mod envelope;
mod error;
pub mod ledger_info;
pub mod params;
pub mod proofs;
pub mod soft_confirmations;
pub mod sync_status;

use crate::wire::WireShape;
use std::sync::Arc;

use serde_json::value::RawValue;

use crate::ledger::{Ledger, LedgerReader};
use crate::progress::Progress;
use crate::sync::devnet::{DevExec, DevnetControl};

use envelope::{Body, Call, Entry};
pub use error::RpcError;
use params::{Params, END, HASH, HEIGHT, NUMBER, START};

/// Every method name answered, for `-32601`'s data: the seed's 13 (with
/// `citrea_syncStatus`, Citrea's name of the first), then Citrea's that
/// are beyond them ([`citrea`]).
pub const METHOD_NAMES: [&str; 20] = [
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
    "citrea_getLastCommittedL2Height",
    "citrea_getLastProvenL2Height",
    "citrea_getL2StatusHeightsByL1Height",
    "ledger_getBatchProofsBySlotHeight",
    "ledger_getBatchProofsBySlotHash",
    "health_check",
];

/// Limits and answer shapes of the RPC layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RpcConfig {
    /// Most heights one `ledger_getSoftConfirmationRange` may ask for (default 1000).
    pub max_range: u64,
    /// Most request objects in one batch (default 50).
    pub max_batch: usize,
    /// The answer shapes (`--wire`): ledgerd's own, or a Citrea v0.6 node's.
    pub wire: WireShape,
}

impl Default for RpcConfig {
    fn default() -> RpcConfig {
        RpcConfig {
            max_range: WireShape::Ledgerd.default_max_range(),
            max_batch: args::DEFAULT_MAX_BATCH,
            wire: WireShape::Ledgerd,
        }
    }
}

/// Whether this node answers `dev_*` calls.
#[derive(Clone, Debug, Default)]
pub enum DevAccess {
    /// Not a `--dev` node.
    #[default]
    Off,
    /// A `--dev` node listening on this address, which is not loopback,
    /// started without `--dev-allow-remote-control`.
    Refused(String),
    /// Calls go to the devnet through this.
    On(DevnetControl),
}

/// A typed request of any method.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Command {
    SyncStatus,
    SoftConfirmations(soft_confirmations::Request),
    Commitments(commitments::Request),
    Proofs(proofs::Request),
    LedgerInfo(ledger_info::Request),
    Citrea(citrea::Request),
    Dev(crate::sync::devnet::DevCommand),
}

impl Command {
    /// Method name + params -> typed request.
    fn parse(method: &str, params: &Params, access: &DevAccess) -> Result<Command, RpcError> {
        use commitments::Request as Cm;
        use ledger_info::Request as Li;
        use proofs::Request as Pr;
        use soft_confirmations::Request as Sc;
        use Command::*;
        // A `--dev` node knows its `dev_*` methods (even where it refuses them).
        let dev_names: &[&str] = match access {
            DevAccess::Off => &[],
            DevAccess::Refused(_) | DevAccess::On(_) => &dev::NAMES,
        };
        if dev::is_dev_method(method) {
            return match access {
                DevAccess::Off => Err(RpcError::unavailable(format!(
                    "{method} drives the embedded devnet: it needs a node started with --dev \
                     (this one follows an upstream or serves a stored ledger)"
                ))),
                DevAccess::Refused(addr) => Err(RpcError::unavailable(format!(
                    "{method} changes the chain, and this node listens on {addr}, which is not \
                     a loopback address: restart it with --dev-allow-remote-control to take \
                     dev_* calls from other hosts, or bind it to 127.0.0.1"
                ))),
                DevAccess::On(_) => Ok(Dev(dev::parse(method, params)?)),
            };
        }
        Ok(match method {
            "svc_syncStatus" | "citrea_syncStatus" => SyncStatus,
            "ledger_getSoftConfirmationByNumber" => {
                SoftConfirmations(Sc::ByNumber(params.height(NUMBER)?))
            }
            "ledger_getSoftConfirmationByHash" => SoftConfirmations(Sc::ByHash(params.hash(HASH)?)),
            "ledger_getSoftConfirmationRange" => SoftConfirmations(Sc::Range {
                start: params.height(START)?,
                end: params.height(END)?,
            }),
            "ledger_getSoftConfirmationStatus" => {
                SoftConfirmations(Sc::Status(params.height(NUMBER)?))
            }
            "ledger_getHeadSoftConfirmation" => SoftConfirmations(Sc::Head),
            "ledger_getHeadSoftConfirmationHeight" => SoftConfirmations(Sc::HeadHeight),
            "ledger_getSequencerCommitmentsOnSlotByNumber" => {
                Commitments(Cm::BySlotNumber(params.height(HEIGHT)?))
            }
            "ledger_getSequencerCommitmentsOnSlotByHash" => {
                Commitments(Cm::BySlotHash(params.hash(HASH)?))
            }
            "ledger_getVerifiedBatchProofsBySlotHeight" => {
                Proofs(Pr::BySlotHeight(params.height(HEIGHT)?))
            }
            "ledger_getLastVerifiedBatchProof" => Proofs(Pr::Last),
            "ledger_getL2GenesisStateRoot" => LedgerInfo(Li::GenesisStateRoot),
            "ledger_getLastScannedL1Height" => LedgerInfo(Li::LastScannedL1Height),
            _ => match citrea::Request::parse(method, params) {
                Some(request) => Citrea(request?),
                None => return Err(RpcError::method_not_found(method, dev_names)),
            },
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
        Ok(match &mut self.reader {
            Some(reader) => reader,
            none => none.insert(self.ledger.reader()?),
        })
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

impl Tally for Vec<(Option<String>, CallOutcome)> {
    fn call(&mut self, method: Option<&str>, outcome: CallOutcome) {
        self.push((method.map(str::to_string), outcome));
    }
}

/// The JSON-RPC handler: ledger, sync progress and limits.
pub struct Rpc {
    ledger: Arc<Ledger>,
    progress: Arc<Progress>,
    config: RpcConfig,
    dev: DevAccess,
    /// The chain makes blocks only when asked (`--dev --dev-block-ms 0`).
    blocks_on_demand: bool,
}

impl Rpc {
    pub fn new(ledger: Arc<Ledger>, progress: Arc<Progress>, config: RpcConfig) -> Rpc {
        Rpc {
            ledger,
            progress,
            config,
            dev: DevAccess::Off,
            blocks_on_demand: false,
        }
    }

    /// Says that the chain makes blocks only when asked (a devnet with
    /// `--dev-block-ms 0`): `health_check` then expects none (default: it
    /// expects the head to move, as on Citrea).
    pub fn with_blocks_on_demand(mut self, on_demand: bool) -> Rpc {
        self.blocks_on_demand = on_demand;
        self
    }

    /// Sets whether `dev_*` calls are answered (default: they are not).
    pub fn with_dev(mut self, access: DevAccess) -> Rpc {
        self.dev = access;
        self
    }

    /// Where `dev_*` calls go, when this node answers them.
    pub fn dev_control(&self) -> Option<&DevnetControl> {
        match &self.dev {
            DevAccess::On(control) => Some(control),
            _ => None,
        }
    }

    /// Whether `body` holds a `dev_*` call that this node answers: then it
    /// is answered by [`Rpc::handle_dev`] on the devnet's sync thread.
    pub fn defers(&self, body: &[u8]) -> bool {
        if self.dev_control().is_none() || !body.windows(4).any(|w| w == b"dev_") {
            return false;
        }
        let is_dev = |e: &Entry| matches!(e, Entry::Call(c) if dev::is_dev_method(&c.method));
        match envelope::parse(body, self.config.max_batch) {
            Body::Single(entry) => is_dev(&entry),
            Body::Batch(entries) => entries.iter().any(is_dev),
            Body::Error(_) => false,
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

    /// Answers one request body. `None` = nothing to send (a notification,
    /// or a batch of only notifications): HTTP 200 with an empty body.
    pub fn handle(&self, body: &[u8]) -> Option<Vec<u8>> {
        self.handle_tallied(body, &mut ())
    }

    /// [`Rpc::handle`], telling `tally` how each request object was answered.
    pub fn handle_tallied(&self, body: &[u8], tally: &mut dyn Tally) -> Option<Vec<u8>> {
        self.handle_with(body, tally, None)
    }

    /// [`Rpc::handle_tallied`] on the devnet's sync thread: `dev_*` calls
    /// (notifications too) run on `exec`, in order, and what a batch reads
    /// after one sees its effect.
    pub fn handle_dev(
        &self,
        body: &[u8],
        exec: &mut dyn DevExec,
        tally: &mut dyn Tally,
    ) -> Option<Vec<u8>> {
        self.handle_with(body, tally, Some(exec))
    }

    fn handle_with(
        &self,
        body: &[u8],
        tally: &mut dyn Tally,
        mut exec: Option<&mut dyn DevExec>,
    ) -> Option<Vec<u8>> {
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
                .answer(&entry, &mut snapshot, &mut out, tally, &mut exec)
                .then_some(out),
            Body::Batch(entries) => {
                out.push(b'[');
                let mut answered = false;
                for entry in &entries {
                    let mark = out.len();
                    if answered {
                        out.push(b',');
                    }
                    if self.answer(entry, &mut snapshot, &mut out, tally, &mut exec) {
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

    /// Writes the response object of one entry; `false` when it gets none
    /// (a notification).
    fn answer(
        &self,
        entry: &Entry,
        snapshot: &mut Snapshot,
        out: &mut Vec<u8>,
        tally: &mut dyn Tally,
        exec: &mut Option<&mut dyn DevExec>,
    ) -> bool {
        match entry {
            Entry::Invalid { id, error } => {
                tally.call(None, CallOutcome::Error(error.code));
                write_error(out, *id, error);
                true
            }
            // A notification of a method that only reads has nothing to do;
            // one of a dev_* method is run, its answer dropped.
            Entry::Call(
                call @ Call {
                    id: None, method, ..
                },
            ) => {
                if exec.is_some() && dev::is_dev_method(method) {
                    let _ = self.call(call, snapshot, &mut Vec::new(), exec);
                }
                tally.call(Some(method), CallOutcome::Notification);
                false
            }
            Entry::Call(call) => {
                let start = out.len();
                write_head(out, call.id);
                out.extend_from_slice(b",\"result\":");
                if let Err(error) = self.call(call, snapshot, out, exec) {
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
        exec: &mut Option<&mut dyn DevExec>,
    ) -> Result<(), RpcError> {
        match Command::parse(&call.method, &call.params, &self.dev)? {
            Command::SyncStatus => {
                sync_status::apply(&self.progress, out);
                Ok(())
            }
            Command::SoftConfirmations(req) => req.apply(snapshot.reader()?, &self.config, out),
            Command::Commitments(req) => req.apply(snapshot.reader()?, out),
            Command::Proofs(req) => req.apply(snapshot.reader()?, self.config.wire, out),
            Command::LedgerInfo(req) => req.apply(snapshot.reader()?, out),
            Command::Citrea(req) => req.apply(
                snapshot.reader()?,
                &self.progress,
                self.blocks_on_demand,
                out,
            ),
            Command::Dev(cmd) => {
                let Some(exec) = exec.as_deref_mut() else {
                    return Err(RpcError::internal(
                        "dev_* calls run on the devnet's sync thread, and this one reached the \
                         server's; retry, and report it if it persists",
                    ));
                };
                // What the batch reads next must see the call's effect.
                snapshot.reader = None;
                dev::apply(cmd, exec, out)
            }
        }
    }
}

/// Writes `{"jsonrpc":"2.0","id":<id>` (raw id text echoed, or null).
fn write_head(out: &mut Vec<u8>, id: Option<&RawValue>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    match id {
        Some(id) => out.extend_from_slice(id.get().as_bytes()),
        None => crate::wire::write::write_null(out),
    }
}

/// Writes a whole error response object.
pub(crate) fn write_error(out: &mut Vec<u8>, id: Option<&RawValue>, error: &RpcError) {
    write_head(out, id);
    out.extend_from_slice(b",\"error\":");
    error.write(out);
    out.push(b'}');
}

#[cfg(test)]
mod tests;
