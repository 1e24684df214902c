//! What the loop reads off a tiny_http request before it dispatches it:
//! the method, the body's kind (length, chunked, too large), and the JSON
//! error bodies the transport itself answers with.

use super::*;

pub(super) fn method_of(m: &tiny_http::Method) -> HttpMethod {
    match m {
        tiny_http::Method::Get => HttpMethod::Get,
        tiny_http::Method::Post => HttpMethod::Post,
        tiny_http::Method::Options => HttpMethod::Options,
        tiny_http::Method::Head => HttpMethod::Head,
        _ => HttpMethod::Other,
    }
}

/// An answer the transport gives on its own: a JSON-RPC error `-32000`
/// (the request was refused or dropped before any method ran), the data
/// escaped.
pub(super) fn json_error(status: u16, message: &'static str, data: &str) -> HttpResponse {
    let body = crate::wire::write::error_answer(-32000, message, data);
    HttpResponse::new(status, "application/json", body)
}

/// How tiny_http reads the body of `rq`, by its own rules, whatever
/// framing.rs says of them: with any `Transfer-Encoding` it decodes chunks
/// and ignores `Content-Length`; else it takes the first `Content-Length`
/// that parses as a usize.
pub(super) fn body_kind(rq: &tiny_http::Request, max_body: usize) -> BodyKind {
    let mut expect = false;
    let mut chunked = false;
    let mut upgrade = false;
    for h in rq.headers() {
        if h.field.equiv("Expect") {
            expect = true;
        } else if h.field.equiv("Transfer-Encoding") {
            chunked = true;
        } else if h.field.equiv("Connection")
            && h.value.as_str().to_ascii_lowercase().contains("upgrade")
        {
            upgrade = true;
        }
    }
    match (chunked, rq.body_length()) {
        (true, _) => BodyKind::Lazy(None),
        (false, Some(n)) if n > max_body => BodyKind::TooLarge(n),
        (false, None) | (false, Some(0)) => BodyKind::Ready,
        (false, Some(n)) if n <= 1024 && !expect && !upgrade => BodyKind::Ready,
        (false, Some(n)) => BodyKind::Lazy(Some(n)),
    }
}

/// What the headers say about the body.
pub(super) enum BodyKind {
    /// Already in memory (or none).
    Ready,
    /// Declared larger than max_body.
    TooLarge(usize),
    /// Must be read from the socket.
    Lazy(Option<usize>),
}
