//! No single request or client can abort, hang or stall a real `ledgerd`
//! (issue 4, item 2). Each hostile client runs over real sockets against a
//! `ledgerd --dev` process; every test then checks that a normal request on
//! another connection is answered, correctly, within 100 ms. Each test is
//! bounded to a few seconds.

use crate::common;

use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use common::http::{long_header_line, many_headers};
use common::{
    assert_normal_request_fast, bounded, connect, post, raise_nofile_limit, read_answer,
    wait_until_value, Ledgerd, PREFILL,
};
use serde_json::{json, Value};

fn assert_too_big(body: &[u8]) {
    let v: Value = serde_json::from_slice(body).expect("a JSON body");
    assert_eq!(v["error"]["code"], -32007, "{v}");
    assert_eq!(v["error"]["message"], "Request is too big", "{v}");
    assert_eq!(v["id"], Value::Null, "{v}");
}

#[test]
fn a_petabyte_content_length_with_a_few_bytes_gets_413_and_the_node_lives() {
    let _one_at_a_time = common::one_at_a_time();
    let mut node = Ledgerd::builder().dev(PREFILL, 0).start();
    let threads_before = node.status_field("Threads");
    for _ in 0..10 {
        let mut s = connect(node.addr);
        s.write_all(
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000000\r\n\r\n{\"a\":",
        )
        .unwrap();
        let a = read_answer(&mut BufReader::new(&mut s)).expect("413 answer");
        assert_eq!(a.status, 413);
        assert_too_big(&a.body);
        assert_normal_request_fast(node.addr, PREFILL);
        // The server closes that connection.
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
    }
    // The process did not abort.
    thread::sleep(Duration::from_millis(200));
    assert!(node.alive(), "ledgerd died: {}", node.stderr());
    assert_normal_request_fast(node.addr, PREFILL);
    // Each such request parks one tiny_http thread for good (README "Limits").
    eprintln!(
        "10 petabyte Content-Lengths: ledgerd threads {threads_before} -> {}",
        node.status_field("Threads")
    );
}

#[test]
fn a_fifty_mib_body_gets_413_and_is_never_buffered_whole() {
    let _one_at_a_time = common::one_at_a_time();
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    let anon_before = node.status_field("RssAnon");
    let n = 50 * 1024 * 1024;
    // The sender's own write timeout is 5 s: it must end well before that.
    let (mut s, sender) = common::http::post_huge_body(node.addr, n, Duration::from_secs(5));
    let a = read_answer(&mut BufReader::new(&mut s)).expect("413 answer");
    let answered = Instant::now();
    assert_eq!(a.status, 413);
    assert_eq!(a.header("Content-Type"), Some("application/json"));
    assert_too_big(&a.body);
    assert_normal_request_fast(node.addr, PREFILL);
    let mut peak = 0;
    while !sender.is_finished() {
        peak = peak.max(node.status_field("RssAnon"));
        thread::sleep(Duration::from_millis(5));
    }
    let sent = sender.join().unwrap();
    // The server resets the connection once it stops reading: the sender
    // ends with an error, long before its own write timeout.
    assert!(
        answered.elapsed() < Duration::from_secs(3),
        "the sender was left hanging for {:?}",
        answered.elapsed()
    );
    peak = peak.max(node.status_field("RssAnon"));
    assert!(
        sent < n,
        "the server should stop taking the body, took all {sent} bytes"
    );
    let grew_kb = peak.saturating_sub(anon_before);
    eprintln!("50 MiB body: RssAnon {anon_before} kB before, peak {peak} kB; the client sent {sent} bytes");
    assert!(
        grew_kb < 12 * 1024,
        "anonymous memory grew by {grew_kb} kB (from {anon_before} kB) for a 50 MiB body"
    );
    assert_normal_request_fast(node.addr, PREFILL);
}

#[test]
fn a_body_sent_one_byte_per_100_ms_does_not_stall_others_and_gets_408() {
    let _one_at_a_time = common::one_at_a_time();
    let node = Ledgerd::builder()
        .dev(PREFILL, 0)
        .args(&["--body-timeout-ms", "1500"])
        .start();
    let mut s = connect(node.addr);
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n")
        .unwrap();
    let w = s.try_clone().unwrap();
    let trickle = thread::spawn(move || common::http::trickle(w, 30, Duration::from_millis(100)));
    for _ in 0..5 {
        thread::sleep(Duration::from_millis(150));
        assert_normal_request_fast(node.addr, PREFILL);
    }
    let started = Instant::now();
    let a = read_answer(&mut BufReader::new(&mut s)).expect("408 answer");
    assert_eq!(a.status, 408);
    assert!(
        a.text().contains("1500 ms"),
        "the answer says why: {}",
        a.text()
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    let _ = trickle.join();
    assert_normal_request_fast(node.addr, PREFILL);
}

#[test]
fn a_client_that_asks_for_the_largest_range_and_never_reads_does_not_block_the_loop() {
    let _one_at_a_time = common::one_at_a_time();
    let node = Ledgerd::builder()
        .dev(200, 0)
        .args(&["--write-timeout-ms", "1500"])
        .start();
    let range =
        json!({"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationRange","params":[1,1000]})
            .to_string();
    // One answer: check its size, so the test does what it says.
    let one = common::rpc(node.addr, range.as_bytes());
    assert_eq!(one.json()["result"].as_array().map(Vec::len), Some(1000));
    assert!(one.body.len() > 200 * 1024, "{} bytes", one.body.len());
    // Now 30 of them pipelined (~8 MB of answers), never read.
    let mut s = connect(node.addr);
    s.write_all(&post(range.as_bytes()).repeat(30)).unwrap();
    thread::sleep(Duration::from_millis(300));
    for _ in 0..5 {
        assert_normal_request_fast(node.addr, 200);
        thread::sleep(Duration::from_millis(50));
    }
    // After the write timeout the server gives up on that connection: reading
    // what is buffered then reaches the end (or a reset) instead of all 30.
    thread::sleep(Duration::from_millis(1500));
    let mut got = 0usize;
    let mut closed = false;
    let mut buf = vec![0u8; 1 << 16];
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => {
                closed = true;
                break;
            }
            Ok(k) => got += k,
        }
    }
    assert!(
        closed,
        "the connection is still open after the write timeout"
    );
    assert!(
        got < 30 * one.body.len(),
        "the server kept writing to a client that did not read ({got} bytes)"
    );
    assert_normal_request_fast(node.addr, 200);
    // Small answers pipelined without reading: 2,000 requests fill the
    // socket buffers both ways, and the loop still serves others.
    let s2 = connect(node.addr);
    let small = post(common::HEAD_HEIGHT.as_bytes()).repeat(2000);
    let mut w = s2.try_clone().unwrap();
    let writer = thread::spawn(move || {
        let _ = w.set_write_timeout(Some(Duration::from_secs(3)));
        let _ = w.write_all(&small);
    });
    thread::sleep(Duration::from_millis(500));
    for _ in 0..3 {
        assert_normal_request_fast(node.addr, 200);
    }
    let _ = writer.join();
    drop(s2);
}

/// serde_json reads the envelope's members as raw values (an iterative
/// scan, no recursion) and nothing deserialises a caller's nested value
/// recursively, so depth costs no stack: an unclosed nest is `-32700`, a
/// closed one is a batch whose element is not a request object (`-32600`),
/// and nested params are `-32602`; at every depth up to 100,000.
#[test]
fn deep_nesting_up_to_a_hundred_thousand_levels_is_an_error_answer_not_a_crash() {
    let _one_at_a_time = common::one_at_a_time();
    let mut node = Ledgerd::builder().dev(PREFILL, 0).start();
    let by_position = |params: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationByNumber","params":{params}}}"#
        )
    };
    for depth in [129, 1000, 100_000] {
        let nest = |open: &str, middle: &str, close: &str| {
            format!("{}{middle}{}", open.repeat(depth), close.repeat(depth))
        };
        let cases: [(String, Value); 8] = [
            // Unbalanced: not JSON.
            ("[".repeat(depth), json!(-32700)),
            (r#"{"a":"#.repeat(depth / 2), json!(-32700)),
            // Objects without a value inside: not JSON.
            (nest(r#"{"a":"#, "", "}"), json!(-32700)),
            // Balanced: a batch of one element that is not a request object.
            (nest("[", "", "]"), json!([-32600])),
            // Balanced objects: not a request object.
            (nest(r#"{"a":"#, "1", "}"), json!(-32600)),
            // Deep params: the parameter is not a number.
            (by_position(&nest("[", "", "]")), json!(-32602)),
            (
                by_position(&format!("[{}]", nest(r#"{"a":"#, "1", "}"))),
                json!(-32602),
            ),
            // An unclosed nest in the id: not JSON.
            (
                format!(
                    r#"{{"jsonrpc":"2.0","method":"x","id":{}"#,
                    r#"{"a":"#.repeat(depth)
                ),
                json!(-32700),
            ),
        ];
        for (body, code) in cases {
            let a = common::rpc(node.addr, body.as_bytes());
            assert_eq!(a.status, 200);
            let v = a.json();
            let got = match &v {
                Value::Array(items) => json!(items
                    .iter()
                    .map(|i| i["error"]["code"].clone())
                    .collect::<Vec<_>>()),
                one => one["error"]["code"].clone(),
            };
            assert_eq!(got, code, "depth {depth}: {:.200}", a.text());
            assert_normal_request_fast(node.addr, PREFILL);
        }
    }
    assert!(node.alive());
}

#[test]
fn a_64_mib_header_line_and_100_000_headers_do_not_stall_the_loop() {
    let _one_at_a_time = common::one_at_a_time();
    let mut node = Ledgerd::builder().dev(PREFILL, 0).start();
    let addr = node.addr;
    let long = thread::spawn(move || long_header_line(addr, 64));
    let many = thread::spawn(move || many_headers(addr, 100_000));
    let mut peak = 0;
    while !(long.is_finished() && many.is_finished()) {
        assert_normal_request_fast(addr, PREFILL);
        peak = peak.max(node.status_field("RssAnon"));
        thread::sleep(Duration::from_millis(50));
    }
    eprintln!("huge headers: ledgerd RssAnon peak {peak} kB");
    // Either answered (tiny_http has no header limits: see README "Limits") or
    // cut off; never a dead node.
    let long = long.join().unwrap();
    let many = many.join().unwrap();
    assert!(node.alive(), "ledgerd died: {}", node.stderr());
    eprintln!("64 MiB header line: {long:?}; 100,000 headers: {many:?}");
    assert_normal_request_fast(addr, PREFILL);
}

#[test]
fn two_thousand_idle_connections_do_not_block_new_requests_and_are_closed_when_idle() {
    let _one_at_a_time = common::one_at_a_time();
    raise_nofile_limit();
    let node = Ledgerd::builder()
        .dev(PREFILL, 0)
        .args(&["--max-connections", "2100", "--idle-timeout-ms", "1500"])
        .start();
    let mut idle = Vec::new();
    let started = Instant::now();
    for _ in 0..2000 {
        idle.push(TcpStream::connect(node.addr).expect("idle connect"));
    }
    thread::sleep(Duration::from_millis(300));
    for _ in 0..3 {
        assert_normal_request_fast(node.addr, PREFILL);
    }
    // The server closes every idle connection after the idle timeout (1.5 s).
    // A connection that tiny_http's pool queued behind busy threads starts
    // its clock when a thread takes it, so allow three timeouts.
    let (open_after, last_closed) = bounded(Duration::from_secs(8), move || {
        for s in &idle {
            s.set_nonblocking(true).expect("nonblocking");
        }
        let mut open: Vec<TcpStream> = idle;
        let mut last_closed = started.elapsed();
        while !open.is_empty() && started.elapsed() < Duration::from_millis(4500) {
            open.retain_mut(|s| {
                let mut b = [0u8; 1];
                // End of file (Ok(0)) or a reset: closed. WouldBlock: still open.
                matches!(s.read(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
            });
            last_closed = started.elapsed();
            thread::sleep(Duration::from_millis(50));
        }
        (open.len(), last_closed)
    });
    eprintln!("2,000 idle connections: the last closed {last_closed:?} after connecting");
    assert_eq!(
        open_after, 0,
        "idle connections still open {last_closed:?} after connecting (idle timeout 1.5 s)"
    );
    assert_normal_request_fast(node.addr, PREFILL);
}

#[test]
fn over_the_default_connection_cap_new_connections_get_503_then_close() {
    let _one_at_a_time = common::one_at_a_time();
    raise_nofile_limit();
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    let mut idle = Vec::new();
    for _ in 0..2000 {
        idle.push(TcpStream::connect(node.addr).expect("idle connect"));
    }
    thread::sleep(Duration::from_millis(700)); // the count is refreshed every 500 ms when idle
    let started = Instant::now();
    let mut s = connect(node.addr);
    s.write_all(&post(common::HEAD_HEIGHT.as_bytes())).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let a = read_answer(&mut r).expect("503 answer");
    // Refused promptly, not queued behind the idle connections.
    let took = started.elapsed();
    assert!(took < Duration::from_millis(500), "503 after {took:?}");
    assert_eq!(a.status, 503);
    assert_eq!(a.header("Content-Type"), Some("application/json"));
    assert_eq!(a.header("Connection"), Some("close"));
    let v = a.json();
    assert!(
        v["error"]["data"]
            .as_str()
            .is_some_and(|d| d.contains("100")),
        "{v}"
    );
    let mut rest = Vec::new();
    assert_eq!(r.read_to_end(&mut rest).unwrap_or(0), 0, "closed after 503");
    // Once the idle connections go, normal service resumes.
    drop(idle);
    wait_until_value(
        Duration::from_secs(3),
        "a 200 after the idle clients left",
        || common::rpc(node.addr, common::HEAD_HEIGHT.as_bytes()).status,
        |status| *status == 200,
    );
    assert_normal_request_fast(node.addr, PREFILL);
}

/// What one keep-alive client saw.
struct ClientRun {
    /// Answers per connection.
    per_connection: Vec<usize>,
    /// The longest wait for a connection's first answer.
    worst_first: Duration,
    /// Why connections ended without any answer (status or error).
    unanswered: Vec<String>,
}

/// One keep-alive client for `run`: reconnects when the server closes (the
/// per-connection request cap).
fn keep_alive_client(addr: SocketAddr, run: Duration) -> ClientRun {
    let end = Instant::now() + run;
    let mut out = ClientRun {
        per_connection: Vec::new(),
        worst_first: Duration::ZERO,
        unanswered: Vec::new(),
    };
    let req = post(common::HEAD_HEIGHT.as_bytes());
    while Instant::now() < end {
        let mut s = connect(addr);
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut answers = 0;
        let opened = Instant::now();
        // Always wait for the first answer, even past `end`: a connection that
        // never gets one is what starvation looks like.
        while answers == 0 || Instant::now() < end {
            if let Err(e) = s.write_all(&req) {
                if answers == 0 {
                    out.unanswered.push(format!("send: {e}"));
                }
                break;
            }
            match read_answer(&mut r) {
                Ok(a) if a.status == 200 => {
                    if answers == 0 {
                        out.worst_first = out.worst_first.max(opened.elapsed());
                    }
                    answers += 1;
                    if a.header("Connection") == Some("close") {
                        break;
                    }
                }
                other => {
                    if answers == 0 {
                        let why = match other {
                            Ok(a) => format!("HTTP {} {}", a.status, a.text()),
                            Err(e) => format!("{e} after {:?}", opened.elapsed()),
                        };
                        out.unanswered.push(why);
                    }
                    break;
                }
            }
        }
        out.per_connection.push(answers);
    }
    out
}

#[test]
fn sixty_four_keep_alive_clients_at_once_every_one_gets_answers() {
    let _one_at_a_time = common::one_at_a_time();
    let node = Ledgerd::builder()
        .dev(PREFILL, 0)
        .args(&["--max-requests-per-connection", "200"])
        .start();
    let addr = node.addr;
    let clients: Vec<_> = (0..64)
        .map(|_| thread::spawn(move || keep_alive_client(addr, Duration::from_secs(3))))
        .collect();
    let results: Vec<ClientRun> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let per_client: Vec<usize> = results
        .iter()
        .map(|c| c.per_connection.iter().sum())
        .collect();
    let connections: usize = results.iter().map(|c| c.per_connection.len()).sum();
    let unanswered: Vec<&String> = results.iter().flat_map(|c| c.unanswered.iter()).collect();
    let worst_first = results
        .iter()
        .map(|c| c.worst_first)
        .max()
        .unwrap_or_default();
    eprintln!(
        "64 clients, 3 s: answers per client min {} max {} total {}; {connections} connections; \
         longest wait for a first answer {worst_first:?}",
        per_client.iter().min().unwrap_or(&0),
        per_client.iter().max().unwrap_or(&0),
        per_client.iter().sum::<usize>()
    );
    assert!(
        unanswered.is_empty(),
        "connections that got no answer at all: {unanswered:?}"
    );
    assert!(
        per_client.iter().all(|&n| n >= 10),
        "answers per client: {per_client:?}"
    );
    assert_normal_request_fast(addr, PREFILL);
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let _one_at_a_time = common::one_at_a_time();
    let node = Ledgerd::builder()
        .dev(PREFILL, 0)
        .args(&["--idle-timeout-ms", "500"])
        .start();
    let mut s = connect(node.addr);
    s.write_all(&post(common::HEAD_HEIGHT.as_bytes())).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    assert_eq!(read_answer(&mut r).unwrap().status, 200);
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = r.read_to_end(&mut rest);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_millis(1500),
        "idle connection closed after {took:?} (timeout 500 ms)"
    );
    // tiny_http's accept thread timed out too and was restarted: still serving,
    // and the routine restart is not logged as an error.
    thread::sleep(Duration::from_millis(700));
    assert_normal_request_fast(node.addr, PREFILL);
    let log = node.stderr();
    assert!(
        !log.contains("Error accepting new client") && !log.contains("ERROR"),
        "routine accept timeouts are not errors:\n{log}"
    );
}

#[test]
fn a_burst_of_connections_that_never_close_is_answered_at_once() {
    // No rotation and no idle timeout to free a tiny_http worker: a
    // connection its pool queued behind the busy workers (tiny_http starts a pool thread only when none is idle) would
    // wait for the whole test. The node must get it a worker by itself.
    let _one_at_a_time = common::one_at_a_time();
    let node = Ledgerd::builder()
        .dev(PREFILL, 0)
        .args(&[
            "--max-requests-per-connection",
            "1000000",
            "--idle-timeout-ms",
            "60000",
        ])
        .start();
    let addr = node.addr;
    let n = 64;
    let go = std::sync::Arc::new(std::sync::Barrier::new(n));
    let hold = std::sync::Arc::new(std::sync::Barrier::new(n));
    let clients: Vec<_> = (0..n)
        .map(|_| {
            let (go, hold) = (go.clone(), hold.clone());
            thread::spawn(move || {
                go.wait();
                let started = Instant::now();
                let mut s = connect(addr);
                s.set_read_timeout(Some(Duration::from_secs(4))).unwrap();
                s.write_all(&post(common::HEAD_HEIGHT.as_bytes())).unwrap();
                let answer = read_answer(&mut BufReader::new(&mut s));
                let took = started.elapsed();
                // Keep the connection (and its worker) until every client is done.
                hold.wait();
                match answer {
                    Ok(a) if a.status == 200 => Ok(took),
                    Ok(a) => Err(format!("HTTP {} after {took:?}", a.status)),
                    Err(e) => Err(format!("{e} after {took:?}")),
                }
            })
        })
        .collect();
    let results: Vec<Result<Duration, String>> =
        clients.into_iter().map(|c| c.join().unwrap()).collect();
    let metrics = common::http::request(addr, "GET", "/metrics", &[], "").text();
    let kicks = common::http::metric(&metrics, "ledgerd_http_pool_kicks_total");
    let slowest = results.iter().filter_map(|r| r.as_ref().ok()).max();
    eprintln!("{n} connections at once: slowest answer {slowest:?}; pool kicks {kicks}");
    let failed: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(failed.is_empty(), "connections not answered: {failed:?}");
    assert_normal_request_fast(addr, PREFILL);
}
