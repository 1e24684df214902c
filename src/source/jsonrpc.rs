//! The blocking JSON-RPC 2.0 client the upstream and bitcoind sources share:
//! requests and batches written once (method names escaped, ids numbered),
//! answers matched to their calls by id, and one HTTP POST with a connect
//! timeout, a per-request timeout, an `Authorization` header and a cap on
//! the answer's size. What an answer means, and how a failure is worded, is
//! each source's own (`upstream`, `bitcoind::rpc`).

use std::io::Read;
use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;

/// One answer object: `result` on success, `error` otherwise (Bitcoin
/// Core's legacy form sends both keys, one of them null).
#[derive(Deserialize, Debug)]
pub struct Reply<'a> {
    #[serde(borrow, default)]
    pub result: Option<&'a RawValue>,
    #[serde(default)]
    pub error: Option<ErrorObject>,
    #[serde(default)]
    pub id: Option<u64>,
}

/// A JSON-RPC error object.
#[derive(Deserialize, Debug, Clone)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(default)]
    pub data: Option<serde_json::Value>,
}

impl ErrorObject {
    /// `data` as text: a string as it is, anything else as its JSON.
    pub fn data_text(&self) -> String {
        match &self.data {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        }
    }
}

/// One request object: `{"jsonrpc":"2.0","id":ID,"method":M,"params":P}`,
/// `params` being JSON text (an array).
pub fn request(id: u64, method: &str, params: &str) -> String {
    let method = serde_json::Value::from(method);
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{method},"params":{params}}}"#)
}

/// A batch: one request per `(method, params)`, ids `first_id`, `first_id + 1`, ...
pub fn batch<'a>(first_id: u64, calls: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut body = String::from("[");
    for (i, (method, params)) in calls.into_iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&request(first_id + i as u64, method, params));
    }
    body.push(']');
    body
}

/// The answers of a batch of `count` calls numbered from `first_id`, in
/// call order; the error says what is wrong with the batch as a whole (an
/// id that was not sent, one answered twice, one left unanswered).
pub fn by_id(
    replies: Vec<Reply<'_>>,
    first_id: u64,
    count: usize,
) -> Result<Vec<Reply<'_>>, String> {
    let mut out: Vec<Option<Reply<'_>>> = (0..count).map(|_| None).collect();
    for reply in replies {
        let slot = reply
            .id
            .and_then(|id| id.checked_sub(first_id))
            .filter(|i| *i < count as u64)
            .ok_or_else(|| format!("an answer with an id that was not asked: {:?}", reply.id))?
            as usize;
        if out[slot].replace(reply).is_some() {
            return Err(format!("two answers with id {}", first_id + slot as u64));
        }
    }
    out.into_iter()
        .enumerate()
        .map(|(i, r)| r.ok_or_else(|| format!("call {i} of the batch was left unanswered")))
        .collect()
}

/// Why a POST got no answer body.
#[derive(Debug)]
pub enum PostError {
    /// No HTTP answer: refused, reset, timed out (the transport's reason).
    Transport(String),
    /// An HTTP status other than 2xx, and its body (read within the cap;
    /// empty if it could not be read).
    Status { code: u16, body: Vec<u8> },
    /// The answer is larger than the cap.
    TooLarge { limit: u64 },
    /// The answer broke off while it was read.
    Broken(String),
}

/// One JSON-RPC endpoint over HTTP.
pub struct Client {
    agent: ureq::Agent,
    url: String,
    /// The `Authorization` header value, if any (a cookie's changes at
    /// every bitcoind start: [`Client::set_authorization`]).
    authorization: Mutex<Option<String>>,
    max_answer_bytes: u64,
}

impl Client {
    /// A client for `url`; `timeout`, when given, bounds every request
    /// (a caller may pass its own per request to [`Client::post`]).
    pub fn new(
        url: &str,
        connect_timeout: Duration,
        timeout: Option<Duration>,
        max_answer_bytes: u64,
    ) -> Client {
        let mut agent = ureq::AgentBuilder::new()
            .timeout_connect(connect_timeout)
            .max_idle_connections_per_host(16);
        if let Some(t) = timeout {
            agent = agent.timeout(t);
        }
        Client {
            agent: agent.build(),
            url: url.to_string(),
            authorization: Mutex::new(None),
            max_answer_bytes,
        }
    }

    /// The endpoint's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The `Authorization` header sent from now on.
    pub fn set_authorization(&self, value: Option<String>) {
        *self
            .authorization
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = value;
    }

    /// Whether an `Authorization` header is set.
    pub fn has_authorization(&self) -> bool {
        self.authorization
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .is_some()
    }

    /// POSTs `body` (JSON) and returns the answer's body, at most the cap.
    pub fn post(&self, body: &[u8], timeout: Option<Duration>) -> Result<Vec<u8>, PostError> {
        let mut request = self
            .agent
            .post(&self.url)
            .set("Content-Type", "application/json");
        if let Some(t) = timeout {
            request = request.timeout(t);
        }
        let auth = self
            .authorization
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        if let Some(auth) = auth {
            request = request.set("Authorization", &auth);
        }
        match request.send_bytes(body) {
            Ok(response) => self.read(response),
            Err(ureq::Error::Status(code, response)) => Err(PostError::Status {
                code,
                body: self.read(response).unwrap_or_default(),
            }),
            Err(ureq::Error::Transport(t)) => Err(PostError::Transport(t.to_string())),
        }
    }

    fn read(&self, response: ureq::Response) -> Result<Vec<u8>, PostError> {
        let mut bytes = Vec::with_capacity(64 * 1024);
        response
            .into_reader()
            .take(self.max_answer_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| PostError::Broken(e.to_string()))?;
        if bytes.len() as u64 > self.max_answer_bytes {
            return Err(PostError::TooLarge {
                limit: self.max_answer_bytes,
            });
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_escapes_method_names_and_numbers_its_calls() {
        let body = batch(7, [("a\"b", "[1]"), ("c", "[]")]);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v[0]["method"], "a\"b");
        assert_eq!(
            (v[0]["id"].as_u64(), v[1]["id"].as_u64()),
            (Some(7), Some(8))
        );
        assert_eq!(v[1]["params"], serde_json::json!([]));
    }

    #[test]
    fn answers_are_put_in_call_order_and_a_wrong_batch_is_named() {
        let text = r#"[{"id":8,"result":2},{"id":7,"result":1}]"#;
        let replies: Vec<Reply> = serde_json::from_str(text).unwrap();
        let ordered = by_id(replies, 7, 2).unwrap();
        assert_eq!(ordered[0].result.map(|r| r.get()), Some("1"));
        let short: Vec<Reply> = serde_json::from_str(r#"[{"id":7,"result":1}]"#).unwrap();
        assert!(by_id(short, 7, 2).unwrap_err().contains("left unanswered"));
        let stray: Vec<Reply> = serde_json::from_str(r#"[{"id":3,"result":1}]"#).unwrap();
        assert!(by_id(stray, 7, 1).unwrap_err().contains("not asked"));
        let twice: Vec<Reply> =
            serde_json::from_str(r#"[{"id":7,"result":1},{"id":7,"result":1}]"#).unwrap();
        assert!(by_id(twice, 7, 2).unwrap_err().contains("two answers"));
    }
}
