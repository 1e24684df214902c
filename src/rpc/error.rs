//! JSON-RPC error objects: `code`, `message`, and a `data` string that tells
//! a person what to fix.

use std::fmt;

use crate::wire;

/// One JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcError {
    pub code: i64,
    pub message: &'static str,
    pub data: String,
}

impl RpcError {
    fn new(code: i64, message: &'static str, data: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message,
            data: data.into(),
        }
    }

    /// `-32700`: the body is not JSON (or not UTF-8).
    pub fn parse_error(data: impl Into<String>) -> RpcError {
        RpcError::new(-32700, "Parse error", data)
    }

    /// `-32600`: valid JSON, but not a JSON-RPC 2.0 request object.
    pub fn invalid_request(data: impl Into<String>) -> RpcError {
        RpcError::new(-32600, "Invalid request", data)
    }

    /// `-32601`: no method of that name; the closest known one when it
    /// is near (a slip), then every known one: [`super::METHOD_NAMES`] and
    /// `more` (a `--dev` node's `dev_*` methods).
    pub fn method_not_found(method: &str, more: &[&str]) -> RpcError {
        let shown = shorten(method);
        let known: Vec<&str> = super::METHOD_NAMES.iter().chain(more).copied().collect();
        let hint = match crate::flags::closest(method, known.iter().copied()) {
            Some(near) => format!(" (did you mean \"{near}\"?)"),
            None => String::new(),
        };
        RpcError::new(
            -32601,
            "Method not found",
            format!(
                "no method named \"{shown}\"{hint}; known methods: {}",
                known.join(", ")
            ),
        )
    }

    /// `-32601`: a method this node does not answer; `data` says why.
    pub fn unavailable(data: impl Into<String>) -> RpcError {
        RpcError::new(-32601, "Method not found", data)
    }

    /// `-32602`: a parameter is missing or malformed.
    pub fn invalid_params(data: impl Into<String>) -> RpcError {
        RpcError::new(-32602, "Invalid params", data)
    }

    /// `-32001`: the ledger refuses the query as asked (bad range, future height).
    pub fn ledger(data: impl Into<String>) -> RpcError {
        RpcError::new(-32001, "LEDGER_RPC_ERROR", data)
    }

    /// `-32603`: storage or internal failure; the server keeps serving.
    pub fn internal(data: impl Into<String>) -> RpcError {
        RpcError::new(-32603, "Internal error", data)
    }

    /// `-32010`: a batch with more requests than the limit.
    pub fn batch_too_large(len: usize, max: usize) -> RpcError {
        RpcError::new(
            -32010,
            "The batch request was too large",
            format!(
                "the batch holds {len} requests; the limit is {max}: split it into smaller batches"
            ),
        )
    }

    /// `-32007`: a body over the size limit (answered with HTTP 413).
    pub fn too_big(limit: usize) -> RpcError {
        RpcError::new(
            -32007,
            "Request is too big",
            format!(
                "the request body is larger than the limit of {limit} bytes; send a smaller \
                 request or batch, or start the node with a larger --max-body"
            ),
        )
    }

    /// The whole answer to a request that has no id to echo:
    /// `{"jsonrpc":"2.0","id":null,"error":{...}}`. Every error body the
    /// node sends is built here or by [`super::Rpc`]'s envelope.
    pub fn body(&self) -> Vec<u8> {
        wire::write::error_answer(self.code, self.message, &self.data)
    }

    /// Writes `{"code":..,"message":"..","data":".."}`.
    pub fn write(&self, out: &mut Vec<u8>) {
        wire::write::write_error_object(out, self.code, self.message, &self.data);
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.code, self.message, self.data)
    }
}

impl std::error::Error for RpcError {}

impl From<crate::ledger::LedgerError> for RpcError {
    fn from(e: crate::ledger::LedgerError) -> RpcError {
        RpcError::internal(format!(
            "the ledger could not be read ({e}); the node keeps serving: retry, and check the node's log if it persists"
        ))
    }
}

/// Longest piece of a caller's input quoted back in an error's `data`.
const SHOWN_MAX: usize = 64;

/// `text` cut to [`SHOWN_MAX`] characters (with `...`), for quoting in an
/// error's `data`.
pub(crate) fn shorten(text: &str) -> String {
    match text.char_indices().nth(SHOWN_MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_write_valid_json() {
        let e = RpcError::invalid_params("bad \"x\"\n");
        let mut out = Vec::new();
        e.write(&mut out);
        let v: serde_json::Value = serde_json::from_slice(&out).expect("valid");
        assert_eq!(v["code"], -32602);
        assert_eq!(v["message"], "Invalid params");
        assert_eq!(v["data"], "bad \"x\"\n");
    }

    #[test]
    fn ledger_failures_are_internal_errors() {
        let e = RpcError::from(crate::ledger::LedgerError::AlreadyStored(3));
        assert_eq!((e.code, e.message), (-32603, "Internal error"));
        assert!(e.data.contains("retry"), "{}", e.data);
    }

    #[test]
    fn shown_input_is_cut() {
        assert_eq!(shorten("abc"), "abc");
        let long = "é".repeat(100);
        assert_eq!(shorten(&long).chars().count(), SHOWN_MAX + 3);
    }

    #[test]
    fn an_error_body_escapes_what_it_quotes() {
        let body =
            RpcError::new(-32600, "Invalid request framing", "Content-Length \"1\\2\"").body();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["id"], serde_json::Value::Null);
        assert_eq!(v["error"]["code"], -32600);
        assert_eq!(v["error"]["data"], "Content-Length \"1\\2\"");
    }
}
