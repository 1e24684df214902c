//! Request framing (RFC 9112 section 6) against a real ledgerd over raw
//! sockets: every request whose body length two parsers could read
//! differently gets exactly one answer (400 or 501, a JSON-RPC error that
//! names the header), its connection is closed, and the request that an
//! attacker appended after it is never answered nor handled. Each case ends
//! with a normal request on another connection, answered at once.

mod common;

use std::io::{BufReader, ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::framing_check::check_head;
use common::http::{connect, read_answer, Answer};
use common::{assert_normal_request_fast, Ledgerd, PREFILL};

/// A whole request for `ledger_getL2GenesisStateRoot`, the method no other
/// request here calls: appended after an ambiguous request, it is the
/// smuggled one, and `/metrics` shows whether it was ever handled.
const SMUGGLED_BODY: &str =
    r#"{"jsonrpc":"2.0","id":99,"method":"ledger_getL2GenesisStateRoot","params":[]}"#;
const SMUGGLED_SERIES: &str =
    r#"ledgerd_rpc_requests_total{method="ledger_getL2GenesisStateRoot",outcome="ok"}"#;

const BODY: &str = r#"{"jsonrpc":"2.0","id":7,"method":"ledger_getHeadSoftConfirmationHeight"}"#;

fn smuggled() -> Vec<u8> {
    common::post(SMUGGLED_BODY.as_bytes())
}

/// `POST /` with `headers`, then `body`, then the smuggled request.
fn ambiguous(headers: &[&str], body: &[u8]) -> Vec<u8> {
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

fn chunked(body: &str) -> Vec<u8> {
    format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len()).into_bytes()
}

/// Times the smuggled request was handled, from `/metrics`.
fn smuggled_handled(addr: SocketAddr) -> u64 {
    let a = common::exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(a.status, 200);
    let text = a.text();
    if text.contains(SMUGGLED_SERIES) {
        common::http::metric(&text, SMUGGLED_SERIES)
    } else {
        0
    }
}

/// Sends `raw` on a new connection; returns its one answer after checking
/// that the server then closed the connection with nothing more on it.
fn one_answer_then_closed(addr: SocketAddr, raw: &[u8]) -> Answer {
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

/// The refusal ledgerd writes: `status`, `Connection: close`, a JSON-RPC
/// -32600 error whose data names `header`.
fn assert_refusal(a: &Answer, status: u16, header: &str, what: &str) {
    assert_eq!(a.status, status, "{what}: {}", a.text());
    let v = a.json();
    assert_eq!(v["error"]["code"], -32600, "{what}: {v}");
    assert_eq!(v["id"], serde_json::Value::Null, "{what}: {v}");
    let data = v["error"]["data"].as_str().unwrap_or_default();
    assert!(
        data.contains(header),
        "{what}: data {data:?} does not name {header}"
    );
    if a.header("Content-Length").is_some() {
        assert_eq!(a.header("Connection"), Some("close"), "{what}");
    }
}

#[test]
fn each_ambiguous_request_gets_one_answer_and_its_connection_is_closed() {
    let mut node = Ledgerd::start(&[]);
    let smuggled_len = smuggled().len().to_string();
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
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
            "two equal Content-Lengths",
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
    ];
    for (what, raw, status, header) in &cases {
        let a = one_answer_then_closed(node.addr, raw);
        assert_refusal(&a, *status, header, what);
        assert_normal_request_fast(node.addr, PREFILL);
    }
    // None of the smuggled requests was handled, though tiny_http parsed
    // several of them (it reads ahead on a connection)...
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(smuggled_handled(node.addr), 0);
    // ...while the same request sent on its own is, and counted.
    let a = common::rpc(node.addr, SMUGGLED_BODY.as_bytes());
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(smuggled_handled(node.addr), 1);
    assert!(node.alive());
}

#[test]
fn a_content_length_tiny_http_reads_lazily_is_refused_without_waiting_for_the_body() {
    let mut node = Ledgerd::start(&[]);
    // tiny_http takes the first, 2,000, and would wait for 2,000 bytes (and
    // ledgerd answer 408 after --body-timeout): the refusal comes at once.
    let started = Instant::now();
    let a = one_answer_then_closed(
        node.addr,
        &ambiguous(&["Content-Length: 2000", "Content-Length: 5"], b"12345"),
    );
    assert_refusal(&a, 400, "Content-Length", "2000 then 5");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the refusal took {:?}",
        started.elapsed()
    );
    assert_normal_request_fast(node.addr, PREFILL);
    // A first Content-Length that tiny_http would drain with one allocation
    // of its size (a petabyte aborts the process): refused, node alive.
    let a = one_answer_then_closed(
        node.addr,
        &ambiguous(
            &["Content-Length: 1000000000000000", "Content-Length: 1"],
            b"1",
        ),
    );
    assert_refusal(&a, 400, "Content-Length", "a petabyte then 1");
    assert_normal_request_fast(node.addr, PREFILL);
    assert!(node.alive());
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(smuggled_handled(node.addr), 0);
}

#[test]
fn well_framed_requests_keep_their_connection_and_pipeline() {
    let node = Ledgerd::start(&[]);
    let mut s = connect(node.addr);
    let mut raw = Vec::new();
    // Plain, leading zeros (still 1*DIGIT), chunked (any case), a body
    // tiny_http reads lazily, then one more.
    raw.extend_from_slice(&common::post(BODY.as_bytes()));
    raw.extend_from_slice(
        format!(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 000{}\r\n\r\n{BODY}",
            BODY.len()
        )
        .as_bytes(),
    );
    raw.extend_from_slice(b"POST / HTTP/1.1\r\nHost: x\r\ntransfer-encoding: Chunked\r\n\r\n");
    raw.extend_from_slice(&chunked(BODY));
    let padded = format!("{BODY}{}", " ".repeat(1500));
    raw.extend_from_slice(&common::post(padded.as_bytes()));
    raw.extend_from_slice(&smuggled());
    s.write_all(&raw).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    for i in 0..4 {
        let a = read_answer(&mut r).unwrap_or_else(|e| panic!("answer {i}: {e}"));
        assert_eq!(a.status, 200, "answer {i}: {}", a.text());
        assert_eq!(a.header("Connection"), None, "answer {i}");
        assert_eq!(
            a.json(),
            serde_json::json!({"jsonrpc":"2.0","id":7,"result":PREFILL}),
            "answer {i}"
        );
    }
    let a = read_answer(&mut r).expect("the fifth answer");
    assert_eq!(a.json()["id"], 99);
    // Still open: one more request on it is answered.
    s.write_all(&common::post(BODY.as_bytes())).unwrap();
    assert_eq!(read_answer(&mut r).expect("after").status, 200);
}

/// `fuzz/seeds/http_framing/`: whatever the framing check decides for a
/// seed is what a real ledgerd does with it over a socket. Refused seeds
/// (and those tiny_http refuses itself) get one answer and a closed
/// connection; accepted ones are answered 200.
#[test]
fn every_framing_seed_gets_over_a_socket_what_the_check_decides() {
    let node = Ledgerd::start(&[]);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/http_framing");
    let mut seeds: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    seeds.sort();
    assert!(seeds.len() >= 20, "framing seeds missing");
    for path in &seeds {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let raw = std::fs::read(path).expect("read seed");
        match check_head(&raw) {
            // tiny_http's own 400 (an empty body), then it closes.
            None => {
                let a = one_answer_then_closed(node.addr, &raw);
                assert_eq!(a.status, 400, "{name}");
            }
            Some(Err(refusal)) => {
                let a = one_answer_then_closed(node.addr, &raw);
                assert_eq!(a.status, refusal.status, "{name}");
                assert_eq!(a.json()["error"]["data"], refusal.data.as_str(), "{name}");
            }
            Some(Ok(_)) => {
                let mut s = connect(node.addr);
                s.write_all(&raw).unwrap();
                let a = read_answer(&mut BufReader::new(&mut s)).expect("an answer");
                assert_eq!(a.status, 200, "{name}: {}", a.text());
            }
        }
    }
    assert_normal_request_fast(node.addr, PREFILL);
}
