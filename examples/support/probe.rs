//! What the probes (`mine_probe`, `catchup_probe`) share: a JSON-RPC call
//! over a keep-alive agent, percentiles of sorted latencies and random
//! heights without a crate. Each probe includes it with
//! `#[path = "support/probe.rs"] mod probe;` (not an example of its own:
//! Cargo only takes `examples/*.rs` and `examples/*/main.rs`).

use std::time::Duration;

use serde_json::{json, Value};

/// The `result` of `method` with `params` on `url`, or a line that says
/// what went wrong (the transport, the body, or an error answer).
pub fn call(agent: &ureq::Agent, url: &str, method: &str, params: Value) -> Result<Value, String> {
    let body = json!({"jsonrpc":"2.0","id":1,"method":method,"params":params}).to_string();
    let text = agent
        .post(url)
        .send_string(&body)
        .map_err(|e| format!("{method}: {e}"))?
        .into_string()
        .map_err(|e| format!("{method}: {e}"))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{method}: {e}"))?;
    match v.get("error") {
        Some(e) => Err(format!("{method}: {e}")),
        None => Ok(v["result"].clone()),
    }
}

/// The `p` (0 to 1) percentile of `sorted` (nearest rank); zero when empty.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// A small xorshift generator (no extra crate for random heights): moves
/// `state` on and returns it.
pub fn next_rand(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}
