//! `scripts/nginx/ledgerd.conf` in front of a real ledgerd: the file as it is,
//! with only its listen address, upstream address, pid file, logs and temp
//! paths replaced by temporary ones, then item 2's hostile clients through it,
//! and issue 14's ambiguously framed requests (`common::smuggling`).
//! Each ends by checking that a normal request through nginx is answered
//! within 100 ms.
//!
//! They need nginx, so they are `#[ignore]`d: `cargo test` alone does not run
//! them. `.ci/install` installs nginx from Debian's packages and `.ci/run`
//! runs them with `--include-ignored`, where a missing nginx fails them.

use crate::common;

use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::smuggling;
use common::{
    assert_normal_request_fast, connect, free_port, nginx_path, post, raise_nofile_limit,
    read_answer, Ledgerd, PREFILL,
};
use serde_json::{json, Value};

const CONF: &str = include_str!("../../scripts/nginx/ledgerd.conf");

struct Front {
    addr: SocketAddr,
    node: Ledgerd,
    nginx: Child,
    prefix: tempfile::TempDir,
}

impl Drop for Front {
    fn drop(&mut self) {
        // SIGTERM: nginx's fast shutdown.
        common::process::terminate(&mut self.nginx, Duration::from_secs(3));
    }
}

fn replace_once(conf: &mut String, from: &str, to: &str) {
    common::process::replace_once(conf, from, to, "scripts/nginx/ledgerd.conf");
}

/// Starts a ledgerd and the nginx front before it; fails the test when nginx is missing.
fn start(ledgerd_args: &[&str]) -> Front {
    assert!(
        nginx_path().exists(),
        "{} is missing: these tests run the nginx front. Install it (`apt-get install nginx`, \
         as .ci/install does)",
        nginx_path().display()
    );
    let node = Ledgerd::builder()
        .dev(PREFILL, 0)
        .args(ledgerd_args)
        .start();
    let prefix = tempfile::tempdir().expect("nginx prefix");
    let p = prefix.path().display().to_string();
    let port = free_port();
    let mut conf = CONF.to_string();
    replace_once(
        &mut conf,
        "listen 127.0.0.1:8545;",
        &format!("listen 127.0.0.1:{port};"),
    );
    replace_once(
        &mut conf,
        "server 127.0.0.1:12346 ",
        &format!("server {} ", node.addr),
    );
    replace_once(
        &mut conf,
        "pid /run/nginx-ledgerd.pid;",
        &format!("pid {p}/nginx.pid;"),
    );
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let user = if root { "user root;\n" } else { "" };
    replace_once(
        &mut conf,
        "error_log /var/log/nginx/ledgerd-error.log warn;",
        &format!("error_log stderr warn;\ndaemon off;\n{user}"),
    );
    replace_once(
        &mut conf,
        "access_log /var/log/nginx/ledgerd-access.log;",
        &format!(
            "access_log off;\n    client_body_temp_path {p}/body;\n    proxy_temp_path {p}/proxy;\n    \
             fastcgi_temp_path {p}/fastcgi;\n    uwsgi_temp_path {p}/uwsgi;\n    scgi_temp_path {p}/scgi;"
        ),
    );
    let conf_path = prefix.path().join("ledgerd.conf");
    std::fs::write(&conf_path, conf).expect("write nginx.conf");
    let log = std::fs::File::create(prefix.path().join("nginx.stderr")).expect("log");
    let nginx = Command::new(nginx_path())
        .arg("-p")
        .arg(prefix.path())
        .arg("-c")
        .arg(&conf_path)
        .args(["-e", "stderr"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("start nginx");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let mut front = Front {
        addr,
        node,
        nginx,
        prefix,
    };
    let log = front.prefix.path().join("nginx.stderr");
    common::process::wait_accepting(&mut front.nginx, "nginx", addr, &log);
    // Warm the upstream keep-alive connections.
    for _ in 0..3 {
        assert_eq!(
            common::rpc(front.addr, common::HEAD_HEIGHT.as_bytes()).status,
            200
        );
    }
    front
}

fn assert_json_error(body: &[u8], code: i64) {
    let v: Value = serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(body)));
    assert_eq!(v["error"]["code"], code, "{v}");
    assert!(v["error"]["data"].is_string(), "{v}");
}

#[test]
#[ignore = "needs nginx: apt-get install nginx"]
fn requests_pass_through_nginx_unchanged() {
    let _one_at_a_time = common::one_at_a_time();
    let f = start(&[]);
    let body = json!([
        {"jsonrpc":"2.0","id":"a","method":"ledger_getHeadSoftConfirmationHeight"},
        {"jsonrpc":"2.0","id":1.5,"method":"ledger_nope"}
    ])
    .to_string();
    let direct = common::rpc(f.node.addr, body.as_bytes());
    let fronted = common::rpc(f.addr, body.as_bytes());
    assert_eq!(fronted.status, 200);
    assert_eq!(fronted.header("Content-Type"), Some("application/json"));
    assert_eq!(fronted.body, direct.body);
    // A notification: 200 with an empty body through nginx too.
    let note = br#"{"jsonrpc":"2.0","method":"svc_syncStatus"}"#;
    let a = common::rpc(f.addr, note);
    assert_eq!((a.status, a.body.len()), (200, 0));
    // ledgerd's own errors pass through: GET is 405.
    let a = common::exchange(f.addr, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(a.status, 405);
    assert_normal_request_fast(f.addr, PREFILL);
}

#[test]
#[ignore = "needs nginx: apt-get install nginx"]
fn the_status_page_and_what_it_reads_pass_through_nginx() {
    let _one_at_a_time = common::one_at_a_time();
    let f = start(&[]);
    common::http::assert_status_page_passes(f.addr, f.node.addr);
}

#[test]
#[ignore = "needs nginx: apt-get install nginx"]
fn a_petabyte_content_length_is_refused_by_nginx_with_413() {
    let _one_at_a_time = common::one_at_a_time();
    let mut f = start(&[]);
    let mut s = connect(f.addr);
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000000\r\n\r\n{\"a\":")
        .unwrap();
    let a = read_answer(&mut BufReader::new(&mut s)).expect("413 answer");
    assert_eq!(a.status, 413);
    assert_json_error(&a.body, -32007);
    assert_normal_request_fast(f.addr, PREFILL);
    assert!(f.node.alive());
}

#[test]
#[ignore = "needs nginx: apt-get install nginx"]
fn a_fifty_mib_body_is_refused_by_nginx_and_never_reaches_ledgerd() {
    let _one_at_a_time = common::one_at_a_time();
    let f = start(&[]);
    let anon_before = f.node.status_field("RssAnon");
    let n = 50 * 1024 * 1024;
    let (mut s, sender) = common::http::post_huge_body(f.addr, n, Duration::from_secs(3));
    let a = read_answer(&mut BufReader::new(&mut s)).expect("413 answer");
    assert_eq!(a.status, 413);
    assert_json_error(&a.body, -32007);
    assert_normal_request_fast(f.addr, PREFILL);
    // nginx reads the rest of the body and discards it (lingering close);
    // it never stores it: its body temp dir stays empty.
    let _sent = sender.join().unwrap();
    let stored = std::fs::read_dir(f.prefix.path().join("body"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(stored, 0, "nginx stored body files");
    let grew = f.node.status_field("RssAnon").saturating_sub(anon_before);
    assert!(
        grew < 4 * 1024,
        "ledgerd's anonymous memory grew by {grew} kB"
    );
    assert_normal_request_fast(f.addr, PREFILL);
}

#[test]
#[ignore = "needs nginx: apt-get install nginx"]
fn a_slow_body_is_buffered_by_nginx_and_stalls_nobody() {
    let _one_at_a_time = common::one_at_a_time();
    let f = start(&[]);
    let mut s = connect(f.addr);
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n")
        .unwrap();
    for _ in 0..15 {
        s.write_all(b" ").unwrap();
        thread::sleep(Duration::from_millis(100));
        assert_normal_request_fast(f.addr, PREFILL);
    }
}

#[test]
#[ignore = "needs nginx: apt-get install nginx"]
fn a_client_that_never_reads_the_largest_range_does_not_hold_ledgerd() {
    let _one_at_a_time = common::one_at_a_time();
    let f = start(&[]);
    let range =
        json!({"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationRange","params":[1,1000]})
            .to_string();
    let mut s = connect(f.addr);
    s.write_all(&post(range.as_bytes()).repeat(30)).unwrap();
    thread::sleep(Duration::from_millis(300));
    for _ in 0..5 {
        assert_normal_request_fast(f.addr, PREFILL);
        // ledgerd itself is never kept waiting either.
        assert_normal_request_fast(f.node.addr, PREFILL);
        thread::sleep(Duration::from_millis(50));
    }
    drop(s);
}

#[test]
#[ignore = "needs nginx: apt-get install nginx"]
fn a_hundred_thousand_deep_array_passes_through_as_a_parse_error() {
    let _one_at_a_time = common::one_at_a_time();
    let f = start(&[]);
    let a = common::rpc(f.addr, "[".repeat(100_000).as_bytes());
    assert_eq!(a.status, 200);
    assert_json_error(&a.body, -32700);
    assert_normal_request_fast(f.addr, PREFILL);
}

#[test]
#[ignore = "needs nginx: apt-get install nginx"]
fn huge_headers_are_refused_by_nginx() {
    let _one_at_a_time = common::one_at_a_time();
    let f = start(&[]);
    let addr = f.addr;
    let long = thread::spawn(move || {
        let mut s = connect(addr);
        let _ = s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nX-Long: ");
        let chunk = vec![b'a'; 1024 * 1024];
        for _ in 0..64 {
            if s.write_all(&chunk).is_err() {
                break;
            }
        }
        read_answer(&mut BufReader::new(&mut s)).map(|a| (a.status, a.body))
    });
    let many = thread::spawn(move || {
        let mut s = connect(addr);
        let mut req = b"POST / HTTP/1.1\r\nHost: x\r\n".to_vec();
        for i in 0..100_000 {
            req.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
        }
        req.extend_from_slice(b"Content-Length: 0\r\n\r\n");
        let _ = s.write_all(&req);
        read_answer(&mut BufReader::new(&mut s)).map(|a| (a.status, a.body))
    });
    while !(long.is_finished() && many.is_finished()) {
        assert_normal_request_fast(addr, PREFILL);
        thread::sleep(Duration::from_millis(50));
    }
    for (what, got) in [
        ("64 MiB header line", long.join()),
        ("100,000 headers", many.join()),
    ] {
        let (status, body) = got
            .expect("client thread")
            .unwrap_or_else(|e| panic!("{what}: no answer from nginx ({e})"));
        assert_eq!(status, 400, "{what}");
        assert_json_error(&body, -32600);
    }
    assert_normal_request_fast(addr, PREFILL);
}

#[test]
#[ignore = "needs nginx: apt-get install nginx"]
fn two_thousand_idle_connections_to_nginx_do_not_block_new_requests() {
    let _one_at_a_time = common::one_at_a_time();
    raise_nofile_limit();
    let f = start(&[]);
    let mut idle = Vec::new();
    for _ in 0..2000 {
        idle.push(TcpStream::connect(f.addr).expect("idle connect"));
    }
    thread::sleep(Duration::from_millis(300));
    for _ in 0..3 {
        assert_normal_request_fast(f.addr, PREFILL);
    }
    // None of them reached ledgerd: it is far under its 100-connection cap.
    assert_normal_request_fast(f.node.addr, PREFILL);
    let mut b = [0u8; 1];
    let _ = idle[0].set_read_timeout(Some(Duration::from_millis(1)));
    assert!(idle[0].read(&mut b).is_err(), "still open, nothing to read");
}

#[test]
#[ignore = "needs nginx: apt-get install nginx"]
fn sixty_four_keep_alive_clients_through_nginx_every_one_gets_answers() {
    let _one_at_a_time = common::one_at_a_time();
    let f = start(&[]);
    let addr = f.addr;
    let req = post(common::HEAD_HEIGHT.as_bytes());
    let clients: Vec<_> = (0..64)
        .map(|_| {
            let req = req.clone();
            thread::spawn(move || {
                let end = Instant::now() + Duration::from_secs(3);
                common::http::keep_alive_answers(addr, &req, end)
            })
        })
        .collect();
    let counts: Vec<usize> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    eprintln!(
        "through nginx, 64 clients, 3 s: min {} max {} total {}",
        counts.iter().min().unwrap_or(&0),
        counts.iter().max().unwrap_or(&0),
        counts.iter().sum::<usize>()
    );
    assert!(
        counts.iter().all(|&n| n >= 10),
        "answers per client: {counts:?}"
    );
    assert_normal_request_fast(addr, PREFILL);
}

/// True while nginx has neither answered `s` nor closed it.
fn still_waiting(s: &TcpStream) -> bool {
    s.set_nonblocking(true).expect("nonblocking");
    let mut byte = [0u8; 1];
    let waiting = matches!(s.peek(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    s.set_nonblocking(false).expect("blocking");
    waiting
}

#[test]
#[ignore = "needs nginx: apt-get install nginx"]
fn over_64_requests_at_once_from_one_address_get_503_from_nginx() {
    let _one_at_a_time = common::one_at_a_time();
    let f = start(&[]);
    // 64 requests in flight: headers sent, body still coming.
    let hold = || {
        let mut s = connect(f.addr);
        s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            .unwrap();
        s
    };
    let mut held: Vec<TcpStream> = (0..64).map(|_| hold()).collect();
    // nginx counts a connection once it has read its headers, and on a
    // loaded machine a probe can be counted before the last held request
    // is: then that held request is the one refused, and the probe passes.
    // So ask until the 65th is refused, each time first replacing any held
    // request nginx has answered or closed (each probe is a connection of
    // its own, answered and closed, so it never holds a slot itself).
    let a = common::poll_until(
        Duration::from_secs(5),
        || {
            for s in held.iter_mut() {
                if !still_waiting(s) {
                    *s = hold();
                }
            }
            common::rpc(f.addr, common::HEAD_HEIGHT.as_bytes())
        },
        |a| a.status == 503,
    )
    .unwrap_or_else(|last| last);
    assert_eq!(a.status, 503, "{}", a.text());
    assert_json_error(&a.body, -32000);
    assert!(a.text().contains("64"), "{}", a.text());
    drop(held);
    thread::sleep(Duration::from_millis(100));
    assert_normal_request_fast(f.addr, PREFILL);
}

#[test]
#[ignore = "needs nginx: apt-get install nginx"]
fn ambiguous_framing_gets_one_answer_through_nginx_and_nothing_smuggled_reaches_ledgerd() {
    let _one_at_a_time = common::one_at_a_time();
    let f = start(&[]);
    for case in smuggling::cases() {
        // nginx refuses each itself (400, or 501 for a coding it does not
        // know), with one of its JSON errors, and closes the connection.
        let a = smuggling::one_answer_then_closed(f.addr, &case.raw);
        assert!(
            a.status == 400 || a.status == 501,
            "{}: {} {}",
            case.what,
            a.status,
            a.text()
        );
        assert_json_error(&a.body, -32600);
        assert_normal_request_fast(f.addr, PREFILL);
    }
    // The smuggled request never reached ledgerd.
    thread::sleep(Duration::from_millis(200));
    assert_eq!(smuggling::smuggled_handled(f.node.addr), 0);
    // nginx passes it on when it is sent on its own (so the count above
    // would have seen it).
    let a = common::rpc(f.addr, smuggling::SMUGGLED_BODY.as_bytes());
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(smuggling::smuggled_handled(f.node.addr), 1);
}
