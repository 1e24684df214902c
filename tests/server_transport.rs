//! Transport guarantees of `ledgerd::server` against hostile clients. Each
//! hostile case ends by checking that a normal request on another connection
//! is answered within 100 ms.

mod common;

use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use common::http::{
    connect, exchange, keep_alive_answers, long_header_line, many_headers, post, post_to,
    quick_rpc, read_answer, NORMAL_WITHIN,
};
use ledgerd::server::{Defer, Handler, HttpRequest, HttpResponse, Server, ServerConfig, Stopper};

struct Echo;

/// How long `/later` takes to be answered, from another thread.
const LATER_AFTER: Duration = Duration::from_millis(300);

impl Handler for Echo {
    /// `/later` is answered from another thread after [`LATER_AFTER`];
    /// `/dropped` is kept and never answered (its `Later` is dropped).
    fn handle_deferrable(
        &mut self,
        rq: &HttpRequest<'_>,
        defer: &mut Defer<'_>,
    ) -> Option<HttpResponse> {
        match rq.path {
            "/later" => {
                let later = defer.later();
                thread::spawn(move || {
                    thread::sleep(LATER_AFTER);
                    later.answer(HttpResponse {
                        status: 200,
                        content_type: "application/json",
                        body: br#"{"jsonrpc":"2.0","id":1,"result":"later"}"#.to_vec(),
                        headers: Vec::new(),
                    });
                });
                None
            }
            "/dropped" => {
                drop(defer.later());
                None
            }
            _ => Some(self.handle(rq)),
        }
    }

    fn handle(&mut self, rq: &HttpRequest<'_>) -> HttpResponse {
        let body = if rq.path == "/big" {
            vec![b'x'; 1024 * 1024]
        } else if rq.body.is_empty() {
            br#"{"jsonrpc":"2.0","id":1,"result":"pong"}"#.to_vec()
        } else {
            rq.body.to_vec()
        };
        HttpResponse {
            status: 200,
            content_type: "application/json",
            body,
            headers: vec![("X-Test", "1".to_string())],
        }
    }

    fn too_large(&mut self, limit: usize) -> HttpResponse {
        HttpResponse {
            status: 413,
            content_type: "application/json",
            body: format!(
                r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32007,"message":"Request is too big","data":"limit {limit}"}}}}"#
            )
            .into_bytes(),
            headers: Vec::new(),
        }
    }
}

struct Running {
    addr: SocketAddr,
    stopper: Stopper,
    thread: Option<thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stopper.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn start(config: ServerConfig) -> Running {
    let server = Server::bind("127.0.0.1:0", config).expect("bind");
    let addr = server.local_addr();
    let stopper = server.stopper();
    let thread = thread::spawn(move || {
        server.run(&mut Echo).expect("run");
    });
    Running {
        addr,
        stopper,
        thread: Some(thread),
    }
}

/// A normal request on a fresh connection must be answered within
/// [`NORMAL_WITHIN`] (see [`quick_rpc`] for the tries).
fn assert_normal_request_fast(addr: SocketAddr) {
    let (a, took) = quick_rpc(addr, br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#);
    assert_eq!(a.status, 200);
    assert_eq!(a.body, br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#);
    assert!(
        took.last().is_some_and(|t| *t < NORMAL_WITHIN),
        "normal request took {took:?} (tries)"
    );
}

#[test]
fn answers_keep_alive_requests_with_handler_content_type_and_headers() {
    let _one_at_a_time = common::one_at_a_time();
    let srv = start(ServerConfig::default());
    let mut s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    for i in 0..3 {
        let body = format!(r#"{{"id":{i}}}"#);
        s.write_all(&post(body.as_bytes())).unwrap();
        let a = read_answer(&mut r).unwrap();
        assert_eq!(a.status, 200);
        assert_eq!(a.header("Content-Type"), Some("application/json"));
        assert_eq!(a.header("X-Test"), Some("1"));
        assert_eq!(a.body, body.as_bytes());
    }
    // A body over 1,024 bytes goes through a body thread.
    let big = format!(r#"{{"pad":"{}"}}"#, "a".repeat(5000));
    s.write_all(&post(big.as_bytes())).unwrap();
    assert_eq!(read_answer(&mut r).unwrap().body, big.as_bytes());
    assert_normal_request_fast(srv.addr);
}

#[test]
fn huge_content_length_gets_413_and_does_not_abort_the_node() {
    let _one_at_a_time = common::one_at_a_time();
    let srv = start(ServerConfig::default());
    let mut s = connect(srv.addr);
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000000\r\n\r\n{\"a\":")
        .unwrap();
    let a = read_answer(&mut BufReader::new(&mut s)).expect("413 answer");
    assert_eq!(a.status, 413);
    assert!(String::from_utf8_lossy(&a.body).contains("-32007"));
    assert_normal_request_fast(srv.addr);
    // The connection is closed by the server.
    let mut rest = Vec::new();
    assert!(matches!(s.read_to_end(&mut rest), Ok(_) | Err(_)));
    assert_normal_request_fast(srv.addr);
}

#[test]
fn fifty_mib_body_gets_413_with_handler_body() {
    let _one_at_a_time = common::one_at_a_time();
    let srv = start(ServerConfig::default());
    let n = 50 * 1024 * 1024;
    let (mut s, sender) = common::http::post_huge_body(srv.addr, n, Duration::from_secs(5));
    let a = read_answer(&mut BufReader::new(&mut s)).expect("413 answer");
    assert_eq!(a.status, 413);
    assert!(String::from_utf8_lossy(&a.body).contains("-32007"));
    assert_normal_request_fast(srv.addr);
    drop(s);
    // The server resets the connection once it stops reading: the sender
    // ends with an error, long before its own write timeout.
    let started = Instant::now();
    let _ = sender.join();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the sender was left hanging for {:?}",
        started.elapsed()
    );
    assert_normal_request_fast(srv.addr);
}

#[test]
fn chunked_body_over_the_limit_gets_413() {
    let _one_at_a_time = common::one_at_a_time();
    let srv = start(ServerConfig {
        max_body: 10_000,
        ..ServerConfig::default()
    });
    let mut s = connect(srv.addr);
    let mut req = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..20 {
        req.extend_from_slice(format!("{:x}\r\n{}\r\n", 1000, "a".repeat(1000)).as_bytes());
    }
    s.write_all(&req).unwrap();
    let a = read_answer(&mut BufReader::new(&mut s)).expect("413 answer");
    assert_eq!(a.status, 413);
    assert_normal_request_fast(srv.addr);
}

#[test]
fn slow_body_does_not_stall_other_connections_and_times_out_with_408() {
    let _one_at_a_time = common::one_at_a_time();
    let srv = start(ServerConfig {
        body_timeout: Duration::from_millis(1500),
        ..ServerConfig::default()
    });
    let mut s = connect(srv.addr);
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n")
        .unwrap();
    let w = s.try_clone().unwrap();
    let trickle = thread::spawn(move || common::http::trickle(w, 40, Duration::from_millis(100)));
    for _ in 0..5 {
        thread::sleep(Duration::from_millis(150));
        assert_normal_request_fast(srv.addr);
    }
    let a = read_answer(&mut BufReader::new(&mut s)).expect("408 answer");
    assert_eq!(a.status, 408);
    let _ = trickle.join();
    assert_normal_request_fast(srv.addr);
}

#[test]
fn client_that_never_reads_a_large_answer_does_not_block_the_loop() {
    let _one_at_a_time = common::one_at_a_time();
    let srv = start(ServerConfig::default());
    let mut s = connect(srv.addr);
    // Pipeline many requests for 1 MB answers and never read them.
    let one = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n".repeat(20);
    s.write_all(one.as_bytes()).unwrap();
    thread::sleep(Duration::from_millis(300));
    for _ in 0..3 {
        assert_normal_request_fast(srv.addr);
    }
    // Small answers pipelined without reading: they fill the socket buffers.
    let s2 = connect(srv.addr);
    let small = post("b".repeat(1000).as_bytes()).repeat(2000);
    let mut w = s2.try_clone().unwrap();
    let writer = thread::spawn(move || {
        let _ = w.set_write_timeout(Some(Duration::from_secs(3)));
        let _ = w.write_all(&small);
    });
    thread::sleep(Duration::from_millis(500));
    for _ in 0..3 {
        assert_normal_request_fast(srv.addr);
    }
    let _ = s2.set_read_timeout(Some(Duration::from_millis(10)));
    let _ = writer.join();
    drop(s);
    drop(s2);
}

#[test]
fn huge_header_line_and_many_headers_do_not_stall_the_loop() {
    let _one_at_a_time = common::one_at_a_time();
    let srv = start(ServerConfig::default());
    let addr = srv.addr;
    let long = thread::spawn(move || long_header_line(addr, 64));
    let many = thread::spawn(move || many_headers(addr, 100_000));
    for _ in 0..5 {
        thread::sleep(Duration::from_millis(50));
        assert_normal_request_fast(addr);
    }
    let _ = long.join();
    let _ = many.join();
    assert_normal_request_fast(addr);
}

#[test]
fn two_thousand_idle_connections_do_not_block_new_requests() {
    let _one_at_a_time = common::one_at_a_time();
    let srv = start(ServerConfig {
        max_connections: 5000,
        ..ServerConfig::default()
    });
    let mut idle = Vec::new();
    for _ in 0..2000 {
        idle.push(TcpStream::connect(srv.addr).expect("idle connect"));
    }
    thread::sleep(Duration::from_millis(300));
    for _ in 0..3 {
        assert_normal_request_fast(srv.addr);
    }
    drop(idle);
}

#[test]
fn idle_connection_is_closed_after_idle_timeout() {
    let _one_at_a_time = common::one_at_a_time();
    let srv = start(ServerConfig {
        idle_timeout: Duration::from_millis(500),
        ..ServerConfig::default()
    });
    let mut s = connect(srv.addr);
    s.write_all(&post("{}".as_bytes())).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    assert_eq!(read_answer(&mut r).unwrap().status, 200);
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = r.read_to_end(&mut rest); // tiny_http may write a 408 first
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "idle connection open for {took:?}"
    );
    // The accept thread restarted after its accept() timed out: still serving.
    thread::sleep(Duration::from_millis(700));
    assert_normal_request_fast(srv.addr);
}

/// Sends requests on keep-alive connections for `run`, reconnecting when the
/// server closes; returns the number of answers.
fn keep_alive_client(addr: SocketAddr, run: Duration) -> usize {
    let end = Instant::now() + run;
    let mut answers = 0;
    let req = post(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#);
    while Instant::now() < end {
        answers += keep_alive_answers(addr, &req, end);
    }
    answers
}

#[test]
fn sixty_four_keep_alive_clients_all_get_answers() {
    let _one_at_a_time = common::one_at_a_time();
    let srv = start(ServerConfig {
        max_requests_per_connection: 50,
        ..ServerConfig::default()
    });
    let addr = srv.addr;
    let clients: Vec<_> = (0..64)
        .map(|_| thread::spawn(move || keep_alive_client(addr, Duration::from_secs(3))))
        .collect();
    let counts: Vec<usize> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let starved = counts.iter().filter(|&&c| c < 10).count();
    assert_eq!(starved, 0, "answers per client: {counts:?}");
    assert_normal_request_fast(addr);
}

#[test]
fn connection_is_closed_after_max_requests() {
    let _one_at_a_time = common::one_at_a_time();
    let srv = start(ServerConfig {
        max_requests_per_connection: 3,
        ..ServerConfig::default()
    });
    let mut s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    for i in 1..=3 {
        s.write_all(&post("{}".as_bytes())).unwrap();
        let a = read_answer(&mut r).unwrap();
        assert_eq!(a.status, 200);
        assert_eq!(a.header("Connection") == Some("close"), i == 3);
    }
    let mut rest = Vec::new();
    let started = Instant::now();
    assert_eq!(r.read_to_end(&mut rest).unwrap(), 0);
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[test]
fn connections_over_the_limit_get_503() {
    let _one_at_a_time = common::one_at_a_time();
    let srv = start(ServerConfig {
        max_connections: 4,
        ..ServerConfig::default()
    });
    let mut held = Vec::new();
    for _ in 0..8 {
        let mut s = connect(srv.addr);
        s.write_all(&post("{}".as_bytes())).unwrap();
        let _ = read_answer(&mut BufReader::new(s.try_clone().unwrap()));
        held.push(s);
    }
    thread::sleep(Duration::from_millis(700)); // the count is refreshed periodically
    let mut s = connect(srv.addr);
    s.write_all(&post("{}".as_bytes())).unwrap();
    let a = read_answer(&mut BufReader::new(&mut s)).unwrap();
    assert_eq!(a.status, 503);
    assert_eq!(a.header("Content-Type"), Some("application/json"));
}

#[test]
fn stop_returns_run_within_a_second() {
    let _one_at_a_time = common::one_at_a_time();
    let mut srv = start(ServerConfig::default());
    let _idle = TcpStream::connect(srv.addr).unwrap();
    let started = Instant::now();
    srv.stopper.stop();
    srv.thread.take().unwrap().join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[test]
fn a_deferred_answer_leaves_the_loop_serving_and_its_connection_usable() {
    let s = start(ServerConfig::default());
    let mut held = connect(s.addr);
    let sent = Instant::now();
    held.write_all(&post_to("/later", b"{}")).expect("send");
    // While that answer is pending, other connections are served at once.
    thread::sleep(Duration::from_millis(20));
    let (a, took) = quick_rpc(s.addr, b"");
    assert_eq!(a.text(), r#"{"jsonrpc":"2.0","id":1,"result":"pong"}"#);
    assert!(
        took.last().is_some_and(|t| *t < NORMAL_WITHIN),
        "a request on another connection took {took:?} (tries)"
    );
    assert!(
        sent.elapsed() < LATER_AFTER,
        "the other request was not answered first"
    );
    // Then the deferred answer arrives, and its connection takes the next request.
    let mut r = BufReader::new(held.try_clone().expect("clone"));
    let later = read_answer(&mut r).expect("the deferred answer");
    assert!(sent.elapsed() >= LATER_AFTER);
    assert_eq!(later.text(), r#"{"jsonrpc":"2.0","id":1,"result":"later"}"#);
    held.write_all(&post(b"")).expect("send again");
    let next = read_answer(&mut r).expect("the next answer");
    assert_eq!(next.text(), r#"{"jsonrpc":"2.0","id":1,"result":"pong"}"#);
    // A deferred request whose answer is dropped gets a 500, not silence.
    let dropped = exchange(s.addr, &post_to("/dropped", b"{}"));
    assert_eq!(dropped.status, 500);
    assert!(
        dropped.text().contains("dropped before it was answered"),
        "{}",
        dropped.text()
    );
}
