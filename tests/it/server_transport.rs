//! What `ledgerd::server` guarantees to any [`Handler`], with a handler of
//! the test's own: its content type and headers, chunked bodies held to its
//! limit, the per-connection request cap, a stop within a second, and
//! deferred answers. Hostile clients against the whole node (huge or slow
//! bodies, clients that never read, header floods, idle connections, many
//! keep-alive clients, the connection cap) have their one home in
//! `hostile.rs`, against a real `ledgerd`.

use crate::common;

use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use common::http::{connect, exchange, post, post_to, quick_rpc, read_answer, NORMAL_WITHIN};
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
