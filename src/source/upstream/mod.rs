//! The upstream follower's chain source: another node (a ledgerd, or a
//! Citrea v0.6 sequencer or full node) asked over its JSON-RPC interface.
//!
//! L2: `ledger_getHeadSoftConfirmationHeight`, then
//! `ledger_getSoftConfirmationRange` in chunks (shrunk to the upstream's own
//! limit when it answers "requested range too large. Max: N", as a ledgerd
//! does, or "requested batch range too large. Max: 20", as Citrea does). DA:
//! `ledger_getLastScannedL1Height`, then for each slot
//! `ledger_getSequencerCommitmentsOnSlotByNumber` and
//! `ledger_getVerifiedBatchProofsBySlotHeight`, many slots per batch request.
//! Every request has connect and read timeouts. Nothing here is trusted: the
//! sync thread verifies all of it.
//!
//! One client reads both answer shapes, with no flag: a ledgerd's (the
//! seed's: method 11 one object with `height`) and a Citrea v0.6 node's
//! (method 11 an array without `height`, method 12 with `height` outside);
//! see [`crate::wire::read`]. The upstream does not serve a DA slot's own hash:
//! the sync thread learns it from the blocks that point at the slot.
//!
//! An [`Upstream`] is cheap to clone: clones share the HTTP connection pool
//! and what was learnt about the upstream (its range limit, and its
//! [`Pace`]: how many requests it takes at once, how long it takes to
//! answer), so several threads can each have a range request in flight.
//! Each request waits at most [`Pace::timeout`]: the configured read
//! timeout, or longer for an upstream seen to answer slower. An HTTP 429
//! or 503 answer is waited out as the upstream asks (`Retry-After`,
//! capped), and `--upstream-max-rps` spaces the requests ([`pace`]);
//! answers may come gzip-compressed and are decoded within the same size
//! cap ([`MAX_ANSWER_BYTES`]).
//!
//! [`Upstream::identity_and_head`] says which chain the upstream serves (its
//! genesis state root and block 1's hash); [`failover`] compares it with
//! the data dir's before it follows an upstream.

pub mod args;
pub mod failover;
pub mod pace;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::source::rpc_client::{self, ErrorObject, Failed, PostError, Reply};
use crate::source::{ChainIdentity, DaSource, L2Source, RangeFetch, SourceError};
use crate::types::{DaSlot, Hash, SoftConfirmation};
use crate::wire;
use pace::Pace;

/// The log target of this module's INFO lines: the module path
/// they had before the sources moved under `source/` (RUST_LOG filters and
/// log readers name it).
const LOG_TARGET: &str = "ledgerd::sync::upstream";

/// The largest answer read from the upstream (a range of 1000 blocks with
/// large transactions fits many times over), decoded.
pub const MAX_ANSWER_BYTES: u64 = 256 << 20;

/// Timeouts of the upstream client.
#[derive(Clone, Debug)]
pub struct UpstreamConfig {
    /// The node followed: `http://` or `https://`.
    pub url: String,
    /// How long a TCP (and TLS) connect may take.
    pub connect_timeout: Duration,
    /// How long a read of an answer may wait for bytes.
    pub read_timeout: Duration,
    /// `--upstream-ca`: certificates trusted beside the system's roots.
    pub ca_file: Option<PathBuf>,
    /// `--upstream-max-rps`: requests started per second, at most.
    pub max_rps: Option<u32>,
    /// The largest answer read, decoded ([`MAX_ANSWER_BYTES`] for the sync
    /// thread's requests; less for the watcher's head polls).
    pub max_answer_bytes: u64,
}

impl UpstreamConfig {
    pub fn new(url: &str) -> UpstreamConfig {
        UpstreamConfig {
            url: url.to_string(),
            connect_timeout: Duration::from_secs(2),
            read_timeout: Duration::from_secs(10),
            ca_file: None,
            max_rps: None,
            max_answer_bytes: MAX_ANSWER_BYTES,
        }
    }
}

/// A JSON-RPC client of the upstream node (clones share one connection
/// pool and the range limit learnt).
#[derive(Clone)]
pub struct Upstream {
    config: Arc<UpstreamConfig>,
    client: Arc<rpc_client::Client>,
    /// The most blocks the upstream serves in one range request, once it
    /// has said (0: not known yet).
    range_limit: Arc<AtomicU64>,
    /// How the upstream answers: requests to keep in flight, how long to wait.
    pace: Arc<Pace>,
}

/// An answer: the result's JSON text, or the upstream's error.
type Answer = Result<String, ErrorObject>;

/// An HTTP error status from an upstream: what it was, and, when its body
/// is not a JSON-RPC answer, that the URL may not be a JSON-RPC server.
fn http_error(url: &str, code: u16, body: &[u8]) -> SourceError {
    let json_rpc = serde_json::from_slice::<serde_json::Value>(body)
        .is_ok_and(|v| v.get("jsonrpc").is_some() || v.get("error").is_some());
    let what = format!("upstream {url} answered with an HTTP error, status {code}");
    if json_rpc {
        SourceError::bad_answer(what)
    } else {
        SourceError::unreadable(
            what,
            "its answer is not JSON-RPC, so the URL may name a web server, not a Citrea node or a \
             ledgerd: check its port (the node's RPC port) and path",
        )
    }
}

fn err(what: impl std::fmt::Display) -> SourceError {
    SourceError::bad_answer(what.to_string())
}

fn answer_of(r: Reply<'_>) -> Answer {
    match (r.result, r.error) {
        (_, Some(e)) => Err(e),
        (Some(raw), None) => Ok(raw.get().to_string()),
        (None, None) => Ok("null".to_string()),
    }
}

/// `answer`'s result, or the upstream's error to `method` as a refusal.
fn result_of(answer: Answer, method: &str) -> Result<String, SourceError> {
    answer.map_err(|e| {
        let what = format!("upstream {method} answered {} ({})", e.message, e.code);
        SourceError::refused(e.code, what, Some(e.data_text()))
    })
}

impl Upstream {
    pub fn new(config: UpstreamConfig) -> Upstream {
        let pace = Arc::new(Pace::with_max_rps(config.max_rps));
        Upstream::with_pace(config, pace)
    }

    /// A client with its own connections and timeouts that shares `pace`
    /// with other clients of the same upstream (the failover watcher's head
    /// polls and the sync thread's requests queue at the same node).
    pub fn with_pace(config: UpstreamConfig, pace: Arc<Pace>) -> Upstream {
        // Each request's deadline is set from the pace (see `post`).
        let client = rpc_client::Client::new(
            &config.url,
            config.connect_timeout,
            config.max_answer_bytes,
            config.ca_file.clone(),
        );
        Upstream {
            config: Arc::new(config),
            client: Arc::new(client),
            range_limit: Arc::new(AtomicU64::new(0)),
            pace,
        }
    }

    /// The upstream's URL.
    pub fn url(&self) -> &str {
        &self.config.url
    }

    /// What has been learnt of how this upstream answers.
    pub fn pace(&self) -> &Arc<Pace> {
        &self.pace
    }

    /// The most blocks the upstream serves per range request, once it has said.
    pub fn range_limit(&self) -> Option<u64> {
        Some(self.range_limit.load(Relaxed)).filter(|n| *n > 0)
    }

    /// The upstream's own sync status, asked as `citrea_syncStatus` (what a
    /// Citrea node answers; a ledgerd answers it too) and, when the
    /// upstream does not know that name, as `svc_syncStatus`.
    pub fn sync_status(&self) -> Result<wire::read::SyncStatus, SourceError> {
        let mut answer = self.call("citrea_syncStatus", "[]")?;
        if matches!(&answer, Err(e) if e.code == -32601) {
            answer = self.call("svc_syncStatus", "[]")?;
        }
        let text = result_of(answer, "citrea_syncStatus")?;
        wire::read::sync_status(&text)
            .map_err(|e| err(format!("upstream answered an unreadable sync status: {e}")))
    }

    /// Which chain the upstream serves: its genesis state root and its
    /// block 1's hash, each once it has one, and, `with_head`, the head too.
    /// All in one batch request: one round trip, which counts at an
    /// upstream that answers one request at a time (a slow upstream's first
    /// answer then already says where its chain ends).
    pub fn identity_and_head(
        &self,
        with_head: bool,
    ) -> Result<(ChainIdentity, Option<u64>), SourceError> {
        let (root, block, height) = (
            "ledger_getL2GenesisStateRoot",
            "ledger_getSoftConfirmationByNumber",
            "ledger_getHeadSoftConfirmationHeight",
        );
        let mut calls = vec![(root, "[]".to_string()), (block, "[1]".to_string())];
        if with_head {
            calls.push((height, "[]".to_string()));
        }
        let mut answers = self.batch(&calls)?.into_iter();
        let (Some(r), Some(b)) = (answers.next(), answers.next()) else {
            return Err(err("upstream answered a batch short"));
        };
        let identity = ChainIdentity {
            genesis_root: genesis_root_of(&result_of(r, root)?)?,
            block_one: block_one_of(&result_of(b, block)?)?.map(|b| b.hash),
        };
        let head = (answers.next())
            .map(|h| height_of(height, &result_of(h, height)?))
            .transpose()?;
        Ok((identity, head))
    }

    /// Block 1, once the upstream has it.
    fn block_one(&self) -> Result<Option<SoftConfirmation>, SourceError> {
        block_one_of(&self.result("ledger_getSoftConfirmationByNumber", "[1]")?)
    }

    fn post(&self, body: String) -> Result<Vec<u8>, SourceError> {
        let url = &self.config.url;
        // Asked to wait (429, 503): nothing is sent until the wait is over.
        if let Some((code, left)) = self.pace.waiting() {
            return Err(SourceError::unreachable(
                pushed_back(url, code),
                format!(
                    "not asked again for {:.0} s more, as it asked",
                    left.as_secs_f64().ceil()
                ),
            ));
        }
        let turn = self.pace.turn();
        if !turn.is_zero() {
            std::thread::sleep(turn);
        }
        let timeout = self.pace.timeout(self.config.read_timeout);
        let sent = Instant::now();
        // A failure after (about) the whole wait is a timeout: the pace
        // waits longer next time. Any answer, even an HTTP error, is timed.
        let failed = |what: String, why: String| {
            if sent.elapsed() + Duration::from_millis(50) >= timeout {
                self.pace.timed_out(sent);
                SourceError::unreachable(what, format!("{why} (no answer within {timeout:.1?})"))
            } else {
                SourceError::unreachable(what, why)
            }
        };
        let Failed { error, retry_after } = match self.client.post(body.as_bytes(), timeout) {
            Ok(body) => {
                self.pace.answered(sent);
                self.pace.not_pushed_back();
                return Ok(body);
            }
            Err(f) => f,
        };
        Err(match error {
            PostError::Status {
                code: code @ (429 | 503),
                ..
            } => {
                self.pace.answered(sent);
                let asked = retry_after
                    .as_deref()
                    .and_then(|v| pace::retry_after(v, SystemTime::now()));
                let wait = self.pace.pushed_back(code, asked);
                let said = match (&retry_after, asked) {
                    (Some(v), Some(_)) => format!("Retry-After: {v}"),
                    (Some(v), None) => format!("an unreadable Retry-After {v:?}"),
                    (None, _) => "no Retry-After".to_string(),
                };
                SourceError::unreachable(
                    pushed_back(url, code),
                    format!(
                        "not asked again for {:.0} s ({said}; at most {} s)",
                        wait.as_secs_f64().ceil(),
                        pace::MAX_PUSHBACK_WAIT.as_secs()
                    ),
                )
            }
            PostError::Status { code, body } => {
                // An answer, if not the one wanted: a push-back is over.
                self.pace.answered(sent);
                self.pace.not_pushed_back();
                http_error(url, code, &body)
            }
            PostError::TooLarge { limit } => {
                self.pace.answered(sent);
                err(format!(
                    "upstream {url} sent an answer larger than {limit} bytes"
                ))
            }
            PostError::Transport(why) => failed(format!("upstream {url} cannot be reached"), why),
            PostError::Tls(why) => SourceError::unreachable(format!("upstream {url} refused"), why),
            PostError::Broken(why) => {
                failed(format!("upstream {url} sent an unreadable body"), why)
            }
        })
    }

    fn call(&self, method: &str, params: &str) -> Result<Answer, SourceError> {
        let text = self.post(rpc_client::request(1, method, params))?;
        let response: Reply<'_> = serde_json::from_slice(&text).map_err(|e| {
            err(format!(
                "upstream {method} answered something that is not JSON-RPC: {e}"
            ))
        })?;
        Ok(answer_of(response))
    }

    /// [`Upstream::call`]'s result, an error answered being a refusal.
    fn result(&self, method: &str, params: &str) -> Result<String, SourceError> {
        result_of(self.call(method, params)?, method)
    }

    /// Several calls in one batch request; answers in call order.
    fn batch(&self, calls: &[(&str, String)]) -> Result<Vec<Answer>, SourceError> {
        let body = rpc_client::batch(0, calls.iter().map(|(m, p)| (*m, p.as_str())));
        let text = self.post(body)?;
        let responses: Vec<Reply<'_>> = serde_json::from_slice(&text).map_err(|e| {
            err(format!(
                "upstream answered a batch with something that is not a JSON-RPC batch: {e}"
            ))
        })?;
        let ordered = rpc_client::by_id(responses, 0, calls.len())
            .map_err(|why| err(format!("upstream answered a wrong batch: {why}")))?;
        Ok(ordered.into_iter().map(answer_of).collect())
    }

    fn number(&self, method: &str) -> Result<u64, SourceError> {
        height_of(method, &self.result(method, "[]")?)
    }
}

/// A height `method` answered.
fn height_of(method: &str, text: &str) -> Result<u64, SourceError> {
    text.trim().parse().map_err(|_| {
        err(format!(
            "upstream {method} answered {text:.80}, not a height"
        ))
    })
}

/// `ledger_getSoftConfirmationByNumber [1]`'s result: block 1, or `None`.
fn block_one_of(text: &str) -> Result<Option<SoftConfirmation>, SourceError> {
    if text.trim() == "null" {
        return Ok(None);
    }
    wire::read::soft_confirmation(text).map(Some).map_err(|e| {
        err(format!(
            "upstream ledger_getSoftConfirmationByNumber answered an unreadable block: {e}"
        ))
    })
}

/// `ledger_getL2GenesisStateRoot`'s result: the root, or `None`.
fn genesis_root_of(text: &str) -> Result<Option<Hash>, SourceError> {
    let method = "ledger_getL2GenesisStateRoot";
    let bytes: Option<Vec<u8>> = serde_json::from_str(text).map_err(|e| {
        SourceError::unreadable(format!("upstream {method} answered {text:.80}"), e)
    })?;
    match bytes {
        None => Ok(None),
        Some(b) => b.try_into().map(Some).map_err(|_| {
            err(format!(
                "upstream {method} answered a root that is not 32 bytes"
            ))
        }),
    }
}

/// What a 429 or 503 answer is said as (the same through one episode, so
/// that it is logged once).
fn pushed_back(url: &str, code: u16) -> String {
    let name = match code {
        429 => "429 Too Many Requests",
        _ => "503 Service Unavailable",
    };
    format!("upstream {url} answered HTTP {name}: backing off as it asks")
}

/// Reads the limit out of "requested range too large. Max: N" (a ledgerd)
/// or "requested batch range too large. Max: N" (Citrea).
fn range_limit_of(text: &str) -> Option<u64> {
    let (_, tail) = text.split_once("range too large")?;
    let digits: String = tail
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

impl L2Source for Upstream {
    fn first_slot(&mut self) -> Result<Option<u64>, SourceError> {
        Ok(self.block_one()?.map(|b| b.da_slot_height))
    }

    fn head(&mut self) -> Result<u64, SourceError> {
        self.number("ledger_getHeadSoftConfirmationHeight")
    }

    fn blocks(&mut self, from: u64, to: u64) -> Result<Vec<SoftConfirmation>, SourceError> {
        self.fetch_blocks(from, to)
    }

    fn genesis_state_root(&mut self) -> Result<Option<Hash>, SourceError> {
        genesis_root_of(&self.result("ledger_getL2GenesisStateRoot", "[]")?)
    }

    fn parallel(&self) -> Option<Box<dyn RangeFetch<Vec<SoftConfirmation>>>> {
        Some(Box::new(self.clone()))
    }

    fn slow(&self) -> bool {
        self.pace.is_slow()
    }
}

impl RangeFetch<Vec<SoftConfirmation>> for Upstream {
    fn fetch(&self, from: u64, to: u64) -> Result<Vec<SoftConfirmation>, SourceError> {
        self.fetch_blocks(from, to)
    }

    fn preferred_chunk(&self, wanted: u64) -> u64 {
        self.range_limit().map_or(wanted, |limit| wanted.min(limit))
    }

    fn in_flight(&self, wanted: usize) -> usize {
        self.pace.in_flight(wanted)
    }
}

impl Upstream {
    /// `ledger_getSoftConfirmationRange` for `from..=to`, cut to the
    /// upstream's range limit (learnt from its error the first time).
    fn fetch_blocks(&self, from: u64, to: u64) -> Result<Vec<SoftConfirmation>, SourceError> {
        let method = "ledger_getSoftConfirmationRange";
        let mut to = self
            .range_limit()
            .map_or(to, |limit| to.min(from + limit - 1));
        loop {
            let answer = self.call(method, &format!("[{from},{to}]"))?;
            let limit = (answer.as_ref().err())
                .filter(|e| e.code == -32001)
                .and_then(|e| range_limit_of(&e.data_text()))
                .filter(|l| *l >= 1 && to - from + 1 > *l);
            if let Some(limit) = limit {
                if self.range_limit.swap(limit, Relaxed) != limit {
                    log::info!(
                        target: LOG_TARGET,
                        "upstream serves at most {limit} blocks per range; asking for that"
                    );
                }
                to = from + limit - 1;
                continue;
            }
            let text = result_of(answer, method)?;
            let list = wire::read::soft_confirmation_list(&text).map_err(|e| {
                err(format!(
                    "upstream {method} answered an unreadable block: {e}"
                ))
            })?;
            // Stop at the first hole: the chain is followed in order.
            return Ok(list.into_iter().map_while(|b| b).collect());
        }
    }
}

impl DaSource for Upstream {
    fn last_scanned(&mut self) -> Result<u64, SourceError> {
        self.number("ledger_getLastScannedL1Height")
    }

    fn slot(&mut self, number: u64) -> Result<DaSlot, SourceError> {
        self.slots(number, number)?
            .pop()
            .ok_or_else(|| err(format!("upstream did not answer for DA slot {number}")))
    }

    fn slots(&mut self, from: u64, to: u64) -> Result<Vec<DaSlot>, SourceError> {
        self.fetch_slots(from, to)
    }

    fn parallel_slots(&self) -> Option<Box<dyn RangeFetch<Vec<DaSlot>>>> {
        Some(Box::new(self.clone()))
    }
}

impl RangeFetch<Vec<DaSlot>> for Upstream {
    fn fetch(&self, from: u64, to: u64) -> Result<Vec<DaSlot>, SourceError> {
        self.fetch_slots(from, to)
    }

    fn in_flight(&self, wanted: usize) -> usize {
        self.pace.in_flight(wanted)
    }
}

impl Upstream {
    /// DA slots `from..=to`: each slot's commitments and proofs, in one
    /// batch request.
    fn fetch_slots(&self, from: u64, to: u64) -> Result<Vec<DaSlot>, SourceError> {
        let commitments = "ledger_getSequencerCommitmentsOnSlotByNumber";
        let proofs = "ledger_getVerifiedBatchProofsBySlotHeight";
        let calls: Vec<(&str, String)> = (from..=to)
            .flat_map(|n| [(commitments, format!("[{n}]")), (proofs, format!("[{n}]"))])
            .collect();
        let mut answers = self.batch(&calls)?.into_iter();
        let mut slots = Vec::new();
        for number in from..=to {
            let (Some(c), Some(p)) = (answers.next(), answers.next()) else {
                return Err(err("upstream answered a batch short"));
            };
            let commitments =
                wire::read::commitment_list(&result_of(c, commitments)?).map_err(|e| {
                    err(format!(
                        "upstream {commitments} answered unreadable commitments: {e}"
                    ))
                })?;
            let proofs = wire::read::verified_batch_proofs_on_slot(&result_of(p, proofs)?, number)
                .map_err(|e| {
                    err(format!(
                        "upstream {proofs} for DA slot {number} answered an unreadable proof: {e}"
                    ))
                })?;
            // A proof's daSlotHash is the hash of the slot whose commitments
            // it proves, not of this one: the slot's own hash comes from
            // the blocks that point at it.
            slots.push(DaSlot {
                number,
                commitments,
                proofs,
                ..DaSlot::default()
            });
        }
        Ok(slots)
    }
}

#[cfg(test)]
mod tests {
    use super::range_limit_of;

    #[test]
    fn the_range_limit_is_read_from_the_error_data() {
        assert_eq!(
            range_limit_of("LEDGER_RPC_ERROR (-32001): requested range too large. Max: 250"),
            Some(250)
        );
        assert_eq!(
            range_limit_of("LEDGER_RPC_ERROR (-32001): requested batch range too large. Max: 20"),
            Some(20)
        );
        assert_eq!(range_limit_of("start must be <= end"), None);
    }
}
