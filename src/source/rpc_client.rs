//! The blocking JSON-RPC 2.0 client the upstream and bitcoind sources share:
//! requests and batches written once (method names escaped, ids numbered),
//! answers matched to their calls by id, and one HTTP POST with a connect
//! timeout, a per-request timeout, an `Authorization` header and a cap on
//! the answer's size. What an answer means, and how a failure is worded, is
//! each source's own (`upstream`, `bitcoind::rpc`).

use std::io::Read;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::tls;

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
    let requests: Vec<String> = (calls.into_iter().enumerate())
        .map(|(i, (method, params))| request(first_id + i as u64, method, params))
        .collect();
    format!("[{}]", requests.join(","))
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
    /// TLS refused the endpoint, or it speaks another protocol than the
    /// URL says (`http://` to a TLS port, `https://` to a plain one): the
    /// end of a sentence that says which.
    Tls(String),
}

/// One JSON-RPC endpoint over HTTP.
pub struct Client {
    /// Built at the first request (an `https://` URL's roots are read
    /// then, not at start); a sentence when TLS cannot be set up.
    agent: OnceLock<Result<ureq::Agent, String>>,
    connect_timeout: Duration,
    /// `--upstream-ca`: certificates trusted beside the system's.
    ca_file: Option<PathBuf>,
    url: String,
    /// The `Authorization` header value, if any (a cookie's changes at
    /// every bitcoind start: [`Client::set_authorization`]).
    authorization: Mutex<Option<String>>,
    max_answer_bytes: u64,
}

impl Client {
    /// A client for `url`, trusting the certificates of `ca_file` too,
    /// beside the system's roots (`--upstream-ca`).
    pub fn new(
        url: &str,
        connect_timeout: Duration,
        max_answer_bytes: u64,
        ca_file: Option<PathBuf>,
    ) -> Client {
        Client {
            agent: OnceLock::new(),
            connect_timeout,
            ca_file,
            url: url.to_string(),
            authorization: Mutex::new(None),
            max_answer_bytes,
        }
    }

    fn agent(&self) -> Result<&ureq::Agent, PostError> {
        self.agent
            .get_or_init(|| {
                let mut agent = ureq::AgentBuilder::new()
                    .timeout_connect(self.connect_timeout)
                    .max_idle_connections_per_host(16);
                if self.url.starts_with("https://") {
                    agent = agent.tls_config(tls::client_config(self.ca_file.as_deref())?);
                }
                Ok(agent.build())
            })
            .as_ref()
            .map_err(|e| PostError::Tls(e.clone()))
    }

    /// The endpoint's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The `Authorization` header's value (a poisoned lock still holds it).
    fn auth(&self) -> MutexGuard<'_, Option<String>> {
        (self.authorization.lock()).unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The `Authorization` header sent from now on.
    pub fn set_authorization(&self, value: String) {
        *self.auth() = Some(value);
    }

    /// Whether an `Authorization` header is set.
    pub fn has_authorization(&self) -> bool {
        self.auth().is_some()
    }

    /// POSTs `body` (JSON), waiting at most `timeout` for the whole
    /// answer, and returns the answer's body, at most the cap; on an HTTP
    /// error status, the answer's `Retry-After` header too, if it has one.
    pub fn post(&self, body: &[u8], timeout: Duration) -> Result<Vec<u8>, Failed> {
        let failed = |error: PostError| Failed {
            error,
            retry_after: None,
        };
        let mut request = self
            .agent()
            .map_err(failed)?
            .post(&self.url)
            .set("Content-Type", "application/json")
            .timeout(timeout);
        let auth = self.auth().clone();
        if let Some(auth) = auth {
            request = request.set("Authorization", &auth);
        }
        match request.send_bytes(body) {
            Ok(response) => self.read(response).map_err(failed),
            Err(ureq::Error::Status(code, response)) => {
                let retry_after = response.header("Retry-After").map(str::to_string);
                let body = self.read(response).unwrap_or_default();
                if tls::plain_http_to_tls_port(code, &body) {
                    return Err(failed(PostError::Tls(
                        "it speaks TLS: http:// was given for a port that answers only TLS (use \
                         https://)"
                            .into(),
                    )));
                }
                Err(Failed {
                    error: PostError::Status { code, body },
                    retry_after,
                })
            }
            Err(ureq::Error::Transport(t)) => Err(failed(match tls::explain(&self.url, &t) {
                Some(why) => PostError::Tls(why),
                None => PostError::Transport(t.to_string()),
            })),
        }
    }

    fn read(&self, response: ureq::Response) -> Result<Vec<u8>, PostError> {
        read_capped(response.into_reader(), self.max_answer_bytes)
    }
}

/// A failed POST ([`Client::post`]): why, and the answer's
/// `Retry-After` header when it had one.
#[derive(Debug)]
pub struct Failed {
    pub error: PostError,
    pub retry_after: Option<String>,
}

/// Reads `reader` to its end, at most `limit` bytes, never holding more
/// than `limit` bytes (and a read's worth): a compressed answer that
/// decodes to more (a gzip bomb) is [`PostError::TooLarge`] once the
/// decoded bytes pass the limit, with no buffer grown past it.
fn read_capped(mut reader: impl Read, limit: u64) -> Result<Vec<u8>, PostError> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut bytes: Vec<u8> = Vec::with_capacity(limit.min(64 * 1024));
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(bytes),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(PostError::Broken(e.to_string())),
        };
        let len = bytes.len() + n;
        if len > limit {
            return Err(PostError::TooLarge {
                limit: limit as u64,
            });
        }
        if len > bytes.capacity() {
            // Doubling, as a Vec grows, but never past the limit.
            let to = bytes.capacity().saturating_mul(2).max(len).min(limit);
            bytes.reserve_exact(to - bytes.len());
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_read_within_its_cap_and_no_buffer_grows_past_it() {
        let small = read_capped(&[7u8; 1000][..], 1000).unwrap();
        assert_eq!(small.len(), 1000);
        let limit = 300_000u64;
        // Endless zeros: a compressed answer that decodes forever.
        let e = read_capped(std::io::repeat(0), limit).unwrap_err();
        assert!(matches!(e, PostError::TooLarge { limit: 300_000 }), "{e:?}");
        // Just under the cap: held in a buffer no larger than the cap.
        let under = read_capped(std::io::repeat(1).take(limit - 1), limit).unwrap();
        assert_eq!(under.len() as u64, limit - 1);
        assert!(under.capacity() as u64 <= limit, "{}", under.capacity());
    }

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
