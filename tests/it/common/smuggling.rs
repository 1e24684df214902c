//! Request-smuggling attempts (RFC 9112 section 6) for the tests that send
//! them to ledgerd, bare or behind a front: requests whose body length two
//! parsers could read differently, each followed by a second, smuggled
//! request, and the checks that only one answer comes back and the smuggled
//! request is never handled.

use std::io::{BufReader, ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::time::Instant;

use super::http::{connect, read_answer, Answer};

/// A whole request for `ledger_getL2GenesisStateRoot`, the method no other
/// request here calls: appended after an ambiguous request, it is the
/// smuggled one, and `/metrics` shows whether it was ever handled.
pub const SMUGGLED_BODY: &str =
    r#"{"jsonrpc":"2.0","id":99,"method":"ledger_getL2GenesisStateRoot","params":[]}"#;
pub const SMUGGLED_SERIES: &str =
    r#"ledgerd_rpc_requests_total{method="ledger_getL2GenesisStateRoot",outcome="ok"}"#;

pub const BODY: &str =
    r#"{"jsonrpc":"2.0","id":7,"method":"ledger_getHeadSoftConfirmationHeight"}"#;

pub fn smuggled() -> Vec<u8> {
    super::http::post(SMUGGLED_BODY.as_bytes())
}

/// `POST /` with `headers`, then `body`, then the smuggled request.
pub fn ambiguous(headers: &[&str], body: &[u8]) -> Vec<u8> {
    let mut raw = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".to_vec();
    for h in headers {
        raw.extend_from_slice(h.as_bytes());
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(b"\r\n");
    raw.extend_from_slice(body);
    raw.extend_from_slice(&smuggled());
    raw
}

pub fn chunked(body: &str) -> Vec<u8> {
    format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len()).into_bytes()
}

/// Times the smuggled request was handled, from `/metrics`.
pub fn smuggled_handled(addr: SocketAddr) -> u64 {
    let a = super::http::exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(a.status, 200);
    let text = a.text();
    if text.contains(SMUGGLED_SERIES) {
        super::http::metric(&text, SMUGGLED_SERIES)
    } else {
        0
    }
}

/// Sends `raw` on a new connection; returns its one answer after checking
/// that the server then closed the connection with nothing more on it.
pub fn one_answer_then_closed(addr: SocketAddr, raw: &[u8]) -> Answer {
    let mut s = connect(addr);
    s.write_all(raw).expect("send");
    let mut r = BufReader::new(s);
    let a = read_answer(&mut r).expect("an answer");
    if a.header("Content-Length").is_none() {
        // An answer that ends at the close: its body must be the one JSON
        // error and nothing else (a second answer would follow it).
        let v: serde_json::Value = serde_json::from_slice(&a.body).unwrap_or_else(|e| {
            panic!(
                "an answer ending at the close holds more than one JSON value ({e}): {}",
                a.text()
            )
        });
        assert!(v.is_object(), "{v}");
        return a;
    }
    let mut rest = Vec::new();
    let started = Instant::now();
    match r.read_to_end(&mut rest) {
        Ok(_) => {}
        // A reset after the whole answer is a close too.
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        Err(e) => panic!(
            "the connection was not closed after the answer ({e} after {:?}); read so far: {:?}",
            started.elapsed(),
            String::from_utf8_lossy(&rest)
        ),
    }
    assert!(
        rest.is_empty(),
        "a second answer on the same connection: {:?}",
        String::from_utf8_lossy(&rest)
    );
    a
}

/// One ambiguous request: what it is, its bytes (the smuggled request
/// included), the status ledgerd answers, the header its `data` names.
pub struct Case {
    pub what: &'static str,
    pub raw: Vec<u8>,
    pub status: u16,
    pub header: &'static str,
    /// RFC 9110 8.6 lets a recipient read it one way (equal Content-Length
    /// values taken as one): ledgerd refuses it, a front may pass it on as
    /// one request, and what follows as a second, honest one.
    pub one_reading: bool,
}

/// The case a front may read one way (see [`Case::one_reading`]).
const EQUAL_LENGTHS: &str = "two equal Content-Lengths";

/// Every ambiguous request of issue 14, and a few more of the same kind.
pub fn cases() -> Vec<Case> {
    let smuggled_len = smuggled().len().to_string();
    vec![
        (
            "Content-Length: 0 and Content-Length: <the smuggled request>",
            ambiguous(
                &[
                    "Content-Length: 0",
                    &format!("Content-Length: {smuggled_len}"),
                ],
                b"",
            ),
            400,
            "Content-Length",
        ),
        (
            EQUAL_LENGTHS,
            ambiguous(
                &[
                    &format!("Content-Length: {}", BODY.len()),
                    &format!("Content-Length: {}", BODY.len()),
                ],
                BODY.as_bytes(),
            ),
            400,
            "Content-Length",
        ),
        (
            "Transfer-Encoding: chunked with Content-Length: 4",
            ambiguous(
                &["Transfer-Encoding: chunked", "Content-Length: 4"],
                &chunked(BODY),
            ),
            400,
            "Transfer-Encoding",
        ),
        (
            "Content-Length: 4 before Transfer-Encoding: chunked",
            ambiguous(
                &["Content-Length: 4", "Transfer-Encoding: chunked"],
                &chunked(BODY),
            ),
            400,
            "Transfer-Encoding",
        ),
        (
            "Content-Length: abc",
            ambiguous(&["Content-Length: abc"], BODY.as_bytes()),
            400,
            "Content-Length",
        ),
        (
            "Content-Length: -1",
            ambiguous(&["Content-Length: -1"], BODY.as_bytes()),
            400,
            "Content-Length",
        ),
        (
            "Content-Length: 1, 2",
            ambiguous(&["Content-Length: 1, 2"], BODY.as_bytes()),
            400,
            "Content-Length",
        ),
        (
            "Content-Length: 10^23",
            ambiguous(
                &["Content-Length: 100000000000000000000000"],
                BODY.as_bytes(),
            ),
            400,
            "Content-Length",
        ),
        (
            // tiny_http reads `+72` as 72.
            "Content-Length with a plus sign",
            ambiguous(
                &[&format!("Content-Length: +{}", BODY.len())],
                BODY.as_bytes(),
            ),
            400,
            "Content-Length",
        ),
        (
            "an empty Content-Length",
            ambiguous(&["Content-Length:"], BODY.as_bytes()),
            400,
            "Content-Length",
        ),
        (
            "Transfer-Encoding: gzip",
            ambiguous(&["Transfer-Encoding: gzip"], &chunked(BODY)),
            400,
            "Transfer-Encoding",
        ),
        (
            "Transfer-Encoding: gzip, chunked",
            ambiguous(&["Transfer-Encoding: gzip, chunked"], &chunked(BODY)),
            501,
            "Transfer-Encoding",
        ),
        (
            "two Transfer-Encoding: chunked lines",
            ambiguous(
                &["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"],
                &chunked(BODY),
            ),
            501,
            "Transfer-Encoding",
        ),
        (
            "Transfer-Encoding in an HTTP/1.0 request",
            {
                let mut raw =
                    b"POST / HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
                raw.extend_from_slice(&chunked(BODY));
                raw.extend_from_slice(&smuggled());
                raw
            },
            400,
            "Transfer-Encoding",
        ),
    ]
    .into_iter()
    .map(|(what, raw, status, header)| Case {
        what,
        raw,
        status,
        header,
        one_reading: what == EQUAL_LENGTHS,
    })
    .collect()
}
