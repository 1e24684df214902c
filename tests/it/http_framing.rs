//! Request framing (RFC 9112 section 6) against a real ledgerd over raw
//! sockets: every request whose body length two parsers could read
//! differently gets exactly one answer (400 or 501, a JSON-RPC error that
//! names the header), its connection is closed, and the request that an
//! attacker appended after it is never answered nor handled. Each case ends
//! with a normal request on another connection, answered at once.

use crate::common;

use std::io::{BufReader, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::framing_check::check_head;
use common::http::{connect, read_answer, Answer};
use common::smuggling::{
    ambiguous, cases, chunked, one_answer_then_closed, smuggled, smuggled_handled, BODY,
    SMUGGLED_BODY,
};
use common::{assert_normal_request_fast, Ledgerd, PREFILL};

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
    let mut node = Ledgerd::builder().dev(PREFILL, 0).start();
    for case in cases() {
        let a = one_answer_then_closed(node.addr, &case.raw);
        assert_refusal(&a, case.status, case.header, case.what);
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
    let mut node = Ledgerd::builder().dev(PREFILL, 0).start();
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
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
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
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
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

/// A client socket bound to 127.0.0.1:`port` (SO_REUSEADDR) and connected
/// to `to`, with the usual 5 s timeouts.
fn connect_from(port: u16, to: SocketAddr) -> std::io::Result<std::net::TcpStream> {
    use std::os::unix::io::FromRawFd;
    let sockaddr = |port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket calls on a fresh fd that the TcpStream then owns.
    let stream = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let stream = std::net::TcpStream::from_raw_fd(fd);
        let one: libc::c_int = 1;
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            &one as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        let me = sockaddr(port);
        if libc::bind(fd, &me as *const _ as *const libc::sockaddr, len) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let them = sockaddr(to.port());
        if libc::connect(fd, &them as *const _ as *const libc::sockaddr, len) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        stream
    };
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    Ok(stream)
}

/// The loop drops requests that tiny_http parsed behind a refused one on the
/// same connection. A new connection from the same address and port right
/// after is another socket, and its requests are answered.
#[test]
fn a_new_connection_from_the_port_of_a_refused_one_is_served() {
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    for round in 0..3 {
        // A port of its own each round: the client closes the second
        // connection first, so its port then waits in TIME_WAIT.
        let port = common::free_port();
        let mut s = connect_from(port, node.addr).expect("connect from the port");
        s.write_all(&ambiguous(&["Content-Length: abc"], BODY.as_bytes()))
            .unwrap();
        let mut r = BufReader::new(s);
        assert_eq!(read_answer(&mut r).expect("the refusal").status, 400);
        let mut rest = Vec::new();
        let _ = std::io::Read::read_to_end(&mut r, &mut rest);
        assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
        drop(r);
        // At once, from the same port (the kernel may refuse it for a moment).
        let mut s = common::poll_until(
            Duration::from_secs(5),
            || connect_from(port, node.addr),
            Result::is_ok,
        )
        .unwrap_or_else(|e| e)
        .unwrap_or_else(|e| panic!("round {round}: cannot reconnect from port {port}: {e}"));
        s.write_all(&common::post(BODY.as_bytes())).unwrap();
        let a = read_answer(&mut BufReader::new(&mut s))
            .unwrap_or_else(|e| panic!("round {round}: no answer on the new connection: {e}"));
        assert_eq!(a.status, 200, "round {round}: {}", a.text());
        assert_eq!(a.json()["result"], PREFILL, "round {round}");
    }
}
