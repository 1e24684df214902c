//! The request-framing decision without sockets, shared by the cargo-fuzz
//! target (`fuzz/fuzz_targets/http_framing.rs` includes this file) and the
//! bounded property test in `tests/it/fuzz_regressions.rs`: a raw request head
//! is split into header lines the way tiny_http 0.12 splits them,
//! `ledgerd::server::framing::check` decides, and what it accepts must be
//! framed exactly the same way by tiny_http itself (its own `Request`,
//! built through `tiny_http::TestRequest`).

use std::str::FromStr;
use std::sync::OnceLock;

use ledgerd::server::framing::{self, Framing, Refusal};

/// A request head as tiny_http hands it to ledgerd.
pub struct Head {
    pub version: (u8, u8),
    pub headers: Vec<tiny_http::Header>,
}

impl Head {
    fn values(&self, name: &'static str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|h| h.field.equiv(name))
            .map(|h| h.value.as_str())
            .collect()
    }
}

/// The head of `raw` as tiny_http 0.12 reads it (client.rs): lines end at
/// CRLF, each is trimmed, the request line is `METHOD PATH VERSION`, every
/// header line parses as `tiny_http::Header`. None where tiny_http answers
/// by itself (400, 505) or waits for more bytes: ledgerd never sees those.
pub fn parse_head(raw: &[u8]) -> Option<Head> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let text = std::str::from_utf8(&raw[..end]).ok()?;
    if !text.is_ascii() {
        return None;
    }
    let mut lines = text.split("\r\n");
    let mut request_line = lines.next()?.trim().split(' ');
    tiny_http::Method::from_str(request_line.next()?).ok()?;
    request_line.next()?;
    let version = match request_line.next()? {
        "HTTP/0.9" => (0, 9),
        "HTTP/1.0" => (1, 0),
        "HTTP/1.1" => (1, 1),
        _ => return None,
    };
    let headers = lines
        .map(|l| tiny_http::Header::from_str(l.trim()).ok())
        .collect::<Option<Vec<_>>>()?;
    Some(Head { version, headers })
}

/// ledgerd's decision for `head`.
pub fn decide(head: &Head) -> Result<Framing, Refusal> {
    framing::check(
        head.version <= (1, 0),
        head.headers
            .iter()
            .map(|h| (h.field.as_str().as_str(), h.value.as_str())),
    )
}

/// 1,024 bytes of body for tiny_http to read (it reads bodies up to that
/// size when the request is built).
fn pad() -> &'static str {
    static PAD: OnceLock<&'static str> = OnceLock::new();
    PAD.get_or_init(|| Box::leak(" ".repeat(1024).into_boxed_str()))
}

/// tiny_http's own body length for `head`, or None where building its
/// `Request` here would not tell (an `Expect` header, which it answers
/// itself unless `100-continue`; a body larger than [`pad`]).
fn tiny_body_length(head: &Head, declared: u64) -> Option<Option<usize>> {
    if !head.values("Expect").is_empty() || declared > pad().len() as u64 {
        return None;
    }
    let mut t = tiny_http::TestRequest::new()
        .with_method(tiny_http::Method::Post)
        .with_http_version(tiny_http::HTTPVersion::from(head.version))
        .with_body(pad());
    for h in &head.headers {
        t = t.with_header(h.clone());
    }
    let rq: tiny_http::Request = t.into();
    Some(rq.body_length())
}

/// Decides `raw` and panics unless the decision is sound: an accepted
/// request has exactly one unambiguous framing, which tiny_http applies too;
/// a refused one gets 400 or 501 and a JSON-RPC error body that says why.
/// None where tiny_http itself refuses the head (see [`parse_head`]).
pub fn check_head(raw: &[u8]) -> Option<Result<Framing, Refusal>> {
    let head = parse_head(raw)?;
    let verdict = decide(&head);
    let lengths = head.values("Content-Length");
    let codings = head.values("Transfer-Encoding");
    match &verdict {
        Ok(Framing::NoBody) => {
            // (TestRequest adds a Content-Length when there is none, so
            // tiny_http's side cannot be asked here.)
            assert!(
                lengths.is_empty() && codings.is_empty(),
                "{lengths:?} {codings:?}"
            );
        }
        Ok(Framing::Length(n)) => {
            assert!(
                codings.is_empty(),
                "Content-Length {n} accepted with {codings:?}"
            );
            assert_eq!(lengths.len(), 1, "{lengths:?}");
            let v = lengths[0];
            assert!(
                !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()),
                "{v:?}"
            );
            assert_eq!(v.parse::<u64>().ok(), Some(*n));
            if let Some(tiny) = tiny_body_length(&head, *n) {
                assert_eq!(tiny, Some(*n as usize), "tiny_http frames {v:?} otherwise");
            }
        }
        Ok(Framing::Chunked) => {
            assert!(lengths.is_empty(), "chunked accepted with {lengths:?}");
            assert_eq!(codings.len(), 1, "{codings:?}");
            assert!(codings[0].eq_ignore_ascii_case("chunked"), "{codings:?}");
            assert!(head.version > (1, 0), "chunked accepted in HTTP/1.0");
            if let Some(tiny) = tiny_body_length(&head, 0) {
                assert_eq!(tiny, None, "tiny_http does not decode chunks here");
            }
        }
        Err(r) => {
            assert!(r.status == 400 || r.status == 501, "{r:?}");
            assert!(
                !lengths.is_empty() || !codings.is_empty(),
                "refused without a framing header: {r:?}"
            );
            let v: serde_json::Value = serde_json::from_slice(&r.body())
                .unwrap_or_else(|e| panic!("refusal body is not JSON ({e}): {r:?}"));
            assert_eq!(v["jsonrpc"], "2.0");
            assert_eq!(v["id"], serde_json::Value::Null);
            assert_eq!(v["error"]["code"], -32600);
            assert_eq!(v["error"]["data"].as_str(), Some(r.data.as_str()));
            assert!(
                r.data.contains("Content-Length") || r.data.contains("Transfer-Encoding"),
                "the data does not name the header: {}",
                r.data
            );
        }
    }
    Some(verdict)
}
