//! The JSON-RPC 2.0 envelope: turning a request body into calls.
//!
//! | body | answer |
//! |---|---|
//! | not UTF-8, not JSON, nested deeper than serde_json's limit (128) | one `-32700`, id null |
//! | JSON that is neither an object nor an array (`1`, `"x"`, `null`) | one `-32600`, id null |
//! | `[]` | one `-32600` object (not an array) |
//! | a batch longer than `max_batch` | one `-32010` |
//! | an element that is not a valid request object | its own `-32600` |
//!
//! A request object needs `jsonrpc` = `"2.0"` and a string `method`;
//! `params` may be left out, or be an array or an object; `id` may be a
//! number (any: `7`, `-0`, `1.5`, `1e3`, 40 digits), a string or null and is
//! echoed as it was written (its raw text); an object, array or boolean id
//! is `-32600`.
//! An invalid request is answered even without an `id` (with id null, as
//! JSON-RPC 2.0's own examples do); a valid request without an `id` is a
//! notification and gets no answer.

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::error::RpcError;
use super::params::Params;

/// A parsed body.
#[derive(Debug)]
pub enum Body<'a> {
    /// The whole body is answered by one error object (id null).
    Error(RpcError),
    /// One request object.
    Single(Entry<'a>),
    /// A batch of at least one element.
    Batch(Vec<Entry<'a>>),
}

/// One request object of a body.
#[derive(Debug)]
pub enum Entry<'a> {
    /// A valid request.
    Call(Call<'a>),
    /// An invalid request: answered with `error`, echoing `id` when it was
    /// readable (else id null).
    Invalid {
        id: Option<&'a RawValue>,
        error: RpcError,
    },
}

/// A valid request object.
#[derive(Debug)]
pub struct Call<'a> {
    /// The raw `id` (`None`: a notification).
    pub id: Option<&'a RawValue>,
    pub method: String,
    pub params: Params<'a>,
}

/// The members a request object may have, unread. Unknown members are ignored.
#[derive(Deserialize)]
struct RawRequest<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
}

/// `Some` whenever the member is present, even as `null` (a plain
/// `Option<&RawValue>` would read `null` as absent).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

const REQUEST_SHAPE: &str = r#"send {"jsonrpc":"2.0","method":"<name>","params":[...],"id":1}"#;

/// Parses a body. Never panics, whatever the input (this is the fuzz surface).
pub fn parse(body: &[u8], max_batch: usize) -> Body<'_> {
    let text = match std::str::from_utf8(body) {
        Ok(text) => text,
        Err(e) => {
            return Body::Error(RpcError::parse_error(format!(
                "the body is not UTF-8 (invalid byte at offset {}); send UTF-8 JSON",
                e.valid_up_to()
            )))
        }
    };
    // Fast path for the common case, one request object: read its members
    // straight from the body (one pass instead of two). Anything this does
    // not take (not an object, bad JSON, duplicate members) takes the general
    // path below, which gives the same answers and the errors.
    if text.trim_start().starts_with('{') {
        if let Ok(req) = serde_json::from_str::<RawRequest>(text) {
            return Body::Single(request(req));
        }
    }
    // serde_json keeps its recursion limit (128) on: a deeply nested body is
    // a parse error, not a stack overflow.
    let root: &RawValue = match serde_json::from_str(text) {
        Ok(root) => root,
        Err(e) => {
            return Body::Error(RpcError::parse_error(format!(
                "the body is not valid JSON ({e}); {REQUEST_SHAPE}"
            )))
        }
    };
    match root.get().as_bytes().first() {
        Some(b'{') => Body::Single(entry(root)),
        Some(b'[') => {
            let items: Vec<&RawValue> = match serde_json::from_str(root.get()) {
                Ok(items) => items,
                Err(e) => return Body::Error(RpcError::parse_error(format!("{e}"))),
            };
            if items.is_empty() {
                return Body::Error(RpcError::invalid_request(format!(
                    "the batch is empty; put at least one request object in it, or {REQUEST_SHAPE}"
                )));
            }
            if items.len() > max_batch {
                return Body::Error(RpcError::batch_too_large(items.len(), max_batch));
            }
            Body::Batch(items.into_iter().map(entry).collect())
        }
        _ => Body::Error(RpcError::invalid_request(format!(
            "the body must be a request object or a batch array of them; {REQUEST_SHAPE}"
        ))),
    }
}

fn invalid(id: Option<&RawValue>, data: impl Into<String>) -> Entry<'_> {
    Entry::Invalid {
        id,
        error: RpcError::invalid_request(data),
    }
}

/// Whether raw JSON text (already valid JSON) is a number that a client can
/// read back. JSON-RPC 2.0 allows any Number as an id (fractions only "SHOULD
/// NOT" be used), so `1.5`, `-0`, `1e3` and 40-digit integers are accepted
/// and echoed as written; a number beyond a double's range (`1e400`, found by
/// fuzzing) is refused, since many JSON parsers, serde_json's among them,
/// would fail on the answer.
fn is_readable_number(text: &str) -> bool {
    text.bytes()
        .next()
        .is_some_and(|b| b == b'-' || b.is_ascii_digit())
        && serde_json::from_str::<f64>(text).is_ok_and(f64::is_finite)
}

/// Reads one request object (or batch element).
fn entry(raw: &RawValue) -> Entry<'_> {
    if !raw.get().starts_with('{') {
        return invalid(
            None,
            format!("a batch element must be a request object; {REQUEST_SHAPE}"),
        );
    }
    match serde_json::from_str(raw.get()) {
        Ok(req) => request(req),
        Err(e) => invalid(None, format!("the request object is malformed ({e})")),
    }
}

/// Checks the members of one request object.
fn request(req: RawRequest<'_>) -> Entry<'_> {
    // The id first: a readable id is echoed even when the rest is invalid.
    let id = req.id;
    if let Some(text) = id.map(RawValue::get) {
        if !(text == "null" || text.starts_with('"') || is_readable_number(text)) {
            return invalid(
                None,
                "`id` must be a number (within a double's range), a string or null (leave it out \
                 for a notification)",
            );
        }
    }
    let version_ok = req.jsonrpc.is_some_and(|v| {
        v.get() == "\"2.0\"" || serde_json::from_str::<String>(v.get()).is_ok_and(|v| v == "2.0")
    });
    if !version_ok {
        return invalid(id, "`jsonrpc` must be the string \"2.0\"");
    }
    let method = match req.method.map(|m| serde_json::from_str::<String>(m.get())) {
        Some(Ok(method)) => method,
        Some(Err(_)) => return invalid(id, "`method` must be a string"),
        None => return invalid(id, format!("the request has no `method`; {REQUEST_SHAPE}")),
    };
    let params = match req.params.map(RawValue::get) {
        None => Some(Params::None),
        Some(p) if p.starts_with('[') => serde_json::from_str(p).map(Params::Array).ok(),
        Some(p) if p.starts_with('{') => serde_json::from_str(p).map(Params::Object).ok(),
        Some(_) => None,
    };
    let Some(params) = params else {
        return invalid(
            id,
            "`params` must be an array (by position) or an object (by name), or be left out",
        );
    };
    Entry::Call(Call { id, method, params })
}
