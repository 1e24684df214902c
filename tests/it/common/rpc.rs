//! JSON-RPC calls to a running `ledgerd`: over ureq by URL, or raw (see
//! [`super::http`]) by address; and what many tests ask of every answer.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::http::{quick_rpc, NORMAL_WITHIN};
use super::process::{run, Ledgerd};
use super::wait::poll_until;

pub const HEAD_HEIGHT: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"ledger_getHeadSoftConfirmationHeight","params":[]}"#;

/// The request text for `method` with `params` (JSON text), id 1.
pub fn request(method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#)
}

/// Posts `body` to `url` (at most 30 s); returns the HTTP status and the body text.
pub fn post_raw(url: &str, body: &str) -> (u16, String) {
    post_raw_within(url, body, Duration::from_secs(30))
}

/// Posts `body` to `url` (at most `limit`); returns the HTTP status and the body text.
pub fn post_raw_within(url: &str, body: &str, limit: Duration) -> (u16, String) {
    post_raw_by(&ureq::AgentBuilder::new().timeout(limit).build(), url, body)
}

/// Posts `body` to `url` with `agent` (and so within its timeouts); returns
/// the HTTP status and the body text.
pub fn post_raw_by(agent: &ureq::Agent, url: &str, body: &str) -> (u16, String) {
    match agent
        .post(url)
        .set("Content-Type", "application/json")
        .send_string(body)
    {
        Ok(r) => {
            let status = r.status();
            (status, r.into_string().expect("answer body"))
        }
        Err(ureq::Error::Status(status, r)) => (status, r.into_string().unwrap_or_default()),
        Err(e) => panic!("POST {url} failed: {e}"),
    }
}

/// POSTs a JSON-RPC call (at most 10 s) and returns the whole response body;
/// panics on an HTTP error status.
pub fn call_raw(url: &str, method: &str, params: &str) -> String {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .build();
    call_raw_by(&agent, url, method, params)
}

/// [`call_raw`] with `agent` (and so within its timeouts).
pub fn call_raw_by(agent: &ureq::Agent, url: &str, method: &str, params: &str) -> String {
    let (status, text) = post_raw_by(agent, url, &request(method, params));
    assert!(status < 400, "POST {url}: HTTP {status}: {text}");
    text
}

/// The `result` of a call, as a JSON value (panics on an error answer).
pub fn call(url: &str, method: &str, params: &str) -> Value {
    result_of(method, params, &call_raw(url, method, params))
}

/// [`call`] with `agent` (and so within its timeouts).
pub fn call_by(agent: &ureq::Agent, url: &str, method: &str, params: &str) -> Value {
    result_of(method, params, &call_raw_by(agent, url, method, params))
}

/// The `result` of the answer `text` to `method` `params` (panics on an error answer).
fn result_of(method: &str, params: &str, text: &str) -> Value {
    let v: Value = serde_json::from_str(text).expect("json");
    assert!(v.get("error").is_none(), "{method}{params}: {text}");
    v["result"].clone()
}

/// The results of `calls` (method, params) on `url`, in call order, asked
/// in batches of 50 (ledgerd's default `--max-batch`), each within 30 s.
/// Fails on an HTTP error, a missing or out-of-order answer, or an error
/// answer.
pub fn batch(url: &str, calls: &[(&str, Value)]) -> Vec<Value> {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();
    batch_by(&agent, url, calls)
}

/// [`batch`] with `agent` (and so within its timeouts).
pub fn batch_by(agent: &ureq::Agent, url: &str, calls: &[(&str, Value)]) -> Vec<Value> {
    let mut out = Vec::with_capacity(calls.len());
    for part in calls.chunks(50) {
        let body: Vec<Value> = part
            .iter()
            .enumerate()
            .map(|(i, (m, p))| json!({"jsonrpc":"2.0","id":i,"method":m,"params":p}))
            .collect();
        let (status, text) = post_raw_by(agent, url, &Value::Array(body).to_string());
        assert_eq!(status, 200, "batch on {url}: {text:.300}");
        let answers: Value = serde_json::from_str(&text).expect("a JSON answer");
        let answers = answers.as_array().expect("a batch answer");
        assert_eq!(answers.len(), part.len());
        for (i, a) in answers.iter().enumerate() {
            assert_eq!(a["id"], json!(i), "answers in order");
            assert!(
                a.get("error").is_none(),
                "batch on {url}: {:?}: {a}",
                part[i]
            );
            out.push(a["result"].clone());
        }
    }
    out
}

/// Everything a node serves about its chain, read over RPC by a test; `S`
/// is what the test reads of one DA slot (see [`SlotRead`]).
#[derive(Debug, PartialEq)]
pub struct View<S> {
    pub head: u64,
    pub genesis: Value,
    pub blocks: Vec<Value>,
    pub statuses: Vec<Value>,
    pub last_scanned: u64,
    /// What was read of every DA slot from the first on.
    pub slots: Vec<S>,
    pub last_proof: Value,
}

/// What a test reads of one DA slot: a tuple of its number, then its
/// answers (commitments, proofs, ...).
pub trait SlotRead: PartialEq + std::fmt::Debug {
    /// The slot's number.
    fn number(&self) -> u64;
}

/// (slot, commitments on it, proofs on it).
impl SlotRead for (u64, Value, Value) {
    fn number(&self) -> u64 {
        self.0
    }
}

/// (slot, commitments by number, commitments by the slot's hash, proofs).
impl SlotRead for (u64, Value, Value, Value) {
    fn number(&self) -> u64 {
        self.0
    }
}

/// Asserts two views are equal, naming the first difference.
pub fn assert_same_view<S: SlotRead>(follower: &View<S>, upstream: &View<S>) {
    assert_eq!(follower.head, upstream.head, "head");
    assert_eq!(follower.genesis, upstream.genesis, "genesis state root");
    assert_eq!(
        follower.last_scanned, upstream.last_scanned,
        "last scanned L1"
    );
    for (i, (a, b)) in follower.blocks.iter().zip(&upstream.blocks).enumerate() {
        assert_eq!(a, b, "soft confirmation {}", i + 1);
    }
    for (i, (a, b)) in follower.statuses.iter().zip(&upstream.statuses).enumerate() {
        assert_eq!(a, b, "status of {}", i + 1);
    }
    for (a, b) in follower.slots.iter().zip(&upstream.slots) {
        assert_eq!(a, b, "commitments and proofs of DA slot {}", b.number());
    }
    assert_eq!(follower.last_proof, upstream.last_proof, "last proof");
    assert_eq!(follower, upstream);
}

impl Ledgerd {
    /// Posts `body` and returns the HTTP status and the body text.
    pub fn post_raw(&self, body: &str) -> (u16, String) {
        post_raw(&self.url, body)
    }

    /// Posts a JSON-RPC body and parses the answer.
    pub fn post(&self, body: &str) -> Value {
        let (status, text) = self.post_raw(body);
        assert_eq!(status, 200, "HTTP status for {body}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("answer {text:?} is not JSON: {e}"))
    }

    /// Calls `method` with `params` (JSON text) and returns the whole answer object.
    pub fn call(&self, method: &str, params: &str) -> Value {
        let answer = self.post(&request(method, params));
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert_eq!(answer["id"], 1, "{answer}");
        answer
    }

    /// Calls `method` and returns its `result`, failing on an error answer.
    pub fn result(&self, method: &str, params: &str) -> Value {
        let answer = self.call(method, params);
        assert!(
            answer.get("error").is_none(),
            "{method} {params} answered an error: {answer}"
        );
        answer["result"].clone()
    }

    /// [`Ledgerd::result`] for a call that does a lot of work before it
    /// answers (a regtest devnet's `dev_mine`, which grinds and inscribes
    /// each commitment and proof on bitcoind): waits up to `limit`, not the
    /// 30 s of a read, so a loaded host's slow setup is not taken for a
    /// failure of what the test checks.
    pub fn result_within(&self, method: &str, params: &str, limit: Duration) -> Value {
        let (status, text) = post_raw_within(&self.url, &request(method, params), limit);
        assert_eq!(status, 200, "HTTP status for {method} {params}: {text}");
        let answer: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("answer {text:?} is not JSON: {e}"));
        assert!(
            answer.get("error").is_none(),
            "{method} {params} answered an error: {answer}"
        );
        answer["result"].clone()
    }

    /// Calls `method` and returns its `error` object, failing on a result.
    pub fn error(&self, method: &str, params: &str) -> Value {
        let answer = self.call(method, params);
        assert!(
            answer.get("result").is_none(),
            "{method} {params} answered a result: {answer}"
        );
        answer["error"].clone()
    }

    /// Waits until `f` holds (looking every 20 ms), at most `limit`; panics
    /// with `what` and the node's stderr when it runs out.
    pub fn wait_for(&self, limit: Duration, what: &str, mut f: impl FnMut(&Ledgerd) -> bool) {
        self.wait_for_value(limit, what, |n| f(n), |held| *held);
    }

    /// Reads `probe` every 20 ms until `done` holds for the value (at most
    /// `limit`) and returns it; panics with `what`, the last value read and
    /// the node's stderr when it runs out.
    pub fn wait_for_value<T: std::fmt::Debug>(
        &self,
        limit: Duration,
        what: &str,
        mut probe: impl FnMut(&Ledgerd) -> T,
        done: impl Fn(&T) -> bool,
    ) -> T {
        poll_until(limit, || probe(self), done).unwrap_or_else(|last| {
            panic!(
                "waited {limit:?} for {what}; last seen: {last:?}; stderr:\n{}",
                self.stderr()
            )
        })
    }

    /// `GET /health`: its HTTP status and its JSON body (200 or 503).
    pub fn health(&self) -> (u16, Value) {
        let (status, text) = match ureq::get(&format!("{}/health", self.url)).call() {
            Ok(r) => (r.status(), r.into_string().expect("a /health body")),
            Err(ureq::Error::Status(code, r)) => (code, r.into_string().expect("a /health body")),
            Err(e) => panic!("/health: {e}"),
        };
        let body = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("/health answered {text:?}, not JSON: {e}"));
        (status, body)
    }

    /// `GET /metrics`, the whole text.
    pub fn metrics_text(&self) -> String {
        ureq::get(&format!("{}/metrics", self.url))
            .call()
            .expect("/metrics answers")
            .into_string()
            .expect("a /metrics body")
    }

    /// `ledger_getHeadSoftConfirmationHeight`.
    pub fn head(&self) -> u64 {
        head(&self.url)
    }

    /// What it serves, by number (the same after a reorg, whose chain has
    /// other hashes): its head, every block with its status, the
    /// commitments and proofs on DA slots `first..=last`, the last proof.
    pub fn served(&self, first: u64, last: u64) -> Value {
        let head = self.head();
        let blocks: Vec<Value> = (1..=head)
            .map(|h| {
                json!([
                    self.result("ledger_getSoftConfirmationByNumber", &format!("[{h}]")),
                    self.status(h),
                ])
            })
            .collect();
        let slots: Vec<Value> = (first..=last)
            .map(|s| {
                let on = |method: &str| self.result(method, &format!("[{s}]"));
                json!([
                    on("ledger_getSequencerCommitmentsOnSlotByNumber"),
                    on("ledger_getVerifiedBatchProofsBySlotHeight"),
                ])
            })
            .collect();
        json!({
            "head": head,
            "blocks": blocks,
            "slots": slots,
            "lastProof": self.result("ledger_getLastVerifiedBatchProof", "[]"),
        })
    }

    /// `ledger_getSoftConfirmationStatus` of height `h` (`"Trusted"`, ...).
    pub fn status(&self, h: u64) -> Value {
        self.result("ledger_getSoftConfirmationStatus", &format!("[{h}]"))
    }

    /// `svc_syncStatus`.
    pub fn sync_status(&self) -> Value {
        self.result("svc_syncStatus", "[]")
    }

    /// The value of the series `name{labels}` in `GET /metrics` (labels in
    /// the order ledgerd writes them); panics when there is no such line.
    pub fn metric(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        metric(self.addr, name, labels)
    }

    /// Waits (at most `limit`) until the series `name{labels}` reaches `at_least`.
    pub fn wait_for_metric(
        &self,
        limit: Duration,
        name: &str,
        labels: &[(&str, &str)],
        at_least: u64,
    ) {
        let what = format!("{} >= {at_least}", series(name, labels));
        self.wait_for_value(limit, &what, |n| n.metric(name, labels), |v| *v >= at_least);
    }

    /// Waits (at most `limit`) until the sync has refused something its
    /// source sent for failing `check` (`hash`, `merkle_root`, `receipt`...:
    /// the labels of `ledgerd_sync_verification_failures_total`).
    pub fn wait_for_refusal(&self, limit: Duration, check: &str) {
        self.wait_for_metric(
            limit,
            "ledgerd_sync_verification_failures_total",
            &[("check", check)],
            1,
        );
    }
}

/// `ledger_getHeadSoftConfirmationHeight` of the node (or upstream) at `url`.
pub fn head(url: &str) -> u64 {
    call(url, "ledger_getHeadSoftConfirmationHeight", "[]")
        .as_u64()
        .unwrap_or_else(|| panic!("{url}: the head is not a height"))
}

/// `svc_syncStatus` of the node at `url`.
pub fn sync_status(url: &str) -> Value {
    call(url, "svc_syncStatus", "[]")
}

/// `ledger_getLastScannedL1Height` of the node at `url`.
pub fn last_scanned(url: &str) -> u64 {
    call(url, "ledger_getLastScannedL1Height", "[]")
        .as_u64()
        .unwrap_or_else(|| panic!("{url}: the last scanned L1 height is not a number"))
}

/// The statuses (`"Trusted"`, ...) of `heights` at `url`.
pub fn statuses(url: &str, heights: std::ops::RangeInclusive<u64>) -> Vec<String> {
    heights
        .map(|h| {
            call(url, "ledger_getSoftConfirmationStatus", &format!("[{h}]"))
                .as_str()
                .expect("a status")
                .to_string()
        })
        .collect()
}

/// Waits until `follower` holds and has scanned what `upstream` has now,
/// and says so in its sync status (`Synced` at both).
pub fn wait_synced_with(follower: &super::Ledgerd, upstream: &super::Ledgerd) {
    let (h, l1) = (head(&upstream.url), last_scanned(&upstream.url));
    let synced = serde_json::json!({"l1Status":{"Synced":l1},"l2Status":{"Synced":h}});
    follower.wait_for(
        std::time::Duration::from_secs(60),
        &format!("follower reaches head {h} and slot {l1}"),
        |f| sync_status(&f.url) == synced,
    );
}

/// `name{k="v",...}`, a series as /metrics writes it.
pub fn series(name: &str, labels: &[(&str, &str)]) -> String {
    if labels.is_empty() {
        return name.to_string();
    }
    let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    format!("{name}{{{}}}", labels.join(","))
}

/// The value of the series `name{labels}` in `GET /metrics` of the node at `addr`.
pub fn metric(addr: SocketAddr, name: &str, labels: &[(&str, &str)]) -> u64 {
    let text = super::http::request(addr, "GET", "/metrics", &[], "").text();
    super::http::metric(&text, &series(name, labels))
}

/// A normal request on a fresh connection is answered correctly within
/// [`NORMAL_WITHIN`] (see [`quick_rpc`] for the tries).
pub fn assert_normal_request_fast(addr: SocketAddr, head: u64) {
    let (a, took) = quick_rpc(addr, HEAD_HEIGHT.as_bytes());
    assert_eq!(a.status, 200, "normal request: {}", a.text());
    assert_eq!(
        a.json(),
        serde_json::json!({"jsonrpc":"2.0","id":1,"result":head}),
        "normal request"
    );
    assert!(
        took.last().is_some_and(|t| *t < NORMAL_WITHIN),
        "a normal request on another connection took {took:?} (tries)"
    );
}

/// Decodes a 64-hex-digit string into 32 bytes.
pub fn hash32(v: &Value) -> [u8; 32] {
    let s = v.as_str().unwrap_or_else(|| panic!("{v} is not a string"));
    assert_eq!(s.len(), 64, "{s} is not 64 hex digits");
    assert_eq!(s, s.to_lowercase(), "hex is lowercase");
    hex::decode(s).expect("hex").try_into().expect("32 bytes")
}

/// A devnet ledger with heights 1..=`prefill` in `dir` (the writer is stopped).
pub fn devnet_ledger(dir: &Path, prefill: u64) {
    let mut p = Ledgerd::builder().dev(prefill, 0).data_dir(dir).start();
    assert_eq!(p.stop_timed().0, Some(0));
}

/// `ledgerd export` of `dir` (extra args appended), as text.
pub fn export(dir: &Path, extra: &[&str]) -> String {
    let mut args = vec!["export", "--data-dir", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = run(&args, None);
    assert!(
        out.status.success(),
        "export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Every method's answer about everything a ledger holds, as (call, raw answer) pairs.
pub fn every_answer(url: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut ask = |method: &str, params: String| {
        let answer = call_raw(url, method, &params);
        out.push((format!("{method}{params}"), answer));
    };
    let head = call(url, "ledger_getHeadSoftConfirmationHeight", "[]")
        .as_u64()
        .unwrap();
    for m in [
        "svc_syncStatus",
        "citrea_syncStatus",
        "ledger_getL2GenesisStateRoot",
        "ledger_getHeadSoftConfirmation",
        "ledger_getHeadSoftConfirmationHeight",
        "ledger_getLastVerifiedBatchProof",
        "ledger_getLastScannedL1Height",
    ] {
        ask(m, "[]".into());
    }
    let mut slots = std::collections::BTreeMap::new();
    for h in 0..=head + 2 {
        ask("ledger_getSoftConfirmationByNumber", format!("[{h}]"));
        ask("ledger_getSoftConfirmationStatus", format!("[{h}]"));
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&call_raw(
            url,
            "ledger_getSoftConfirmationByNumber",
            &format!("[{h}]"),
        )) {
            let r = &v["result"];
            if let Some(hash) = r["hash"].as_str() {
                ask("ledger_getSoftConfirmationByHash", format!("[\"{hash}\"]"));
                slots.insert(
                    r["daSlotHeight"].as_u64().unwrap(),
                    r["daSlotHash"].as_str().unwrap().to_string(),
                );
            }
        }
    }
    for start in (1..=head + 1).step_by(50) {
        ask(
            "ledger_getSoftConfirmationRange",
            format!("[{start},{}]", start + 49),
        );
    }
    let (lo, hi) = (
        slots.keys().next().copied().unwrap_or(0).saturating_sub(2),
        slots.keys().last().copied().unwrap_or(0) + 40,
    );
    for slot in lo..=hi {
        ask(
            "ledger_getSequencerCommitmentsOnSlotByNumber",
            format!("[{slot}]"),
        );
        ask(
            "ledger_getVerifiedBatchProofsBySlotHeight",
            format!("[{slot}]"),
        );
    }
    for hash in slots.values() {
        ask(
            "ledger_getSequencerCommitmentsOnSlotByHash",
            format!("[\"{hash}\"]"),
        );
    }
    out
}

/// On a devnet node with no blocks: lands two proofs on one DA slot and
/// returns that slot. Two commitments are made on two slots of their own
/// (`dev_commit`); then the automatic rule proves both at once, and Citrea's
/// rule (a proof proves one slot's commitments) makes that two proofs, on
/// one new slot: the first proves heights 1..=3, the second 4..=6.
pub fn two_proofs_on_one_slot(node: &Ledgerd) -> u64 {
    node.result("dev_setAutoCommit", "[0]");
    node.result("dev_setAutoProve", "[0]");
    node.result("dev_mine", "[3]");
    node.result("dev_commit", "[]");
    node.result("dev_mine", "[3]");
    node.result("dev_commit", "[]");
    node.result("dev_setAutoProve", "[2]");
    // Enough blocks for the proof gap to pass and for blocks to point at
    // the slot the proofs land on.
    node.result("dev_mine", "[60]");
    let last = node.result("ledger_getLastVerifiedBatchProof", "[]");
    // Citrea's shape has the height outside, ledgerd's inside.
    let slot = last["height"]
        .as_u64()
        .or_else(|| last["proof"]["height"].as_u64())
        .unwrap_or_else(|| panic!("no proof was made: {last}"));
    assert!(
        slot <= node
            .result("ledger_getLastScannedL1Height", "[]")
            .as_u64()
            .unwrap(),
        "the slot of the proofs is scanned"
    );
    slot
}
