//! HAProxy in front of a real ledgerd, sent the ambiguous requests of
//! RFC 9112 section 6 (`common::smuggling`), each followed by a smuggled
//! request: every one gets exactly one answer, its connection is closed, and
//! the smuggled request never reaches ledgerd. HAProxy normalises framing
//! itself: it refuses most of these (400, or 422 for a coding it does not
//! know) and passes `Transfer-Encoding` + `Content-Length` on by its chunked
//! body alone, closing the client's connection after the answer.
//!
//! Two configurations: a minimal one written here, and the project's own
//! `scripts/haproxy/ledgerd.cfg` as it is (listen and server addresses moved
//! to loopback ports). They need haproxy, so they are `#[ignore]`d:
//! `.ci/install` installs it from Debian's packages and `.ci/run` runs them
//! with `--ignored`.

use crate::common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use common::smuggling::{cases, one_answer_then_closed, smuggled_handled, SMUGGLED_BODY};
use common::{assert_normal_request_fast, free_port, Ledgerd, PREFILL};

const HAPROXY: &str = "/usr/sbin/haproxy";

const CFG: &str = include_str!("../../scripts/haproxy/ledgerd.cfg");

/// The least HAProxy setup: one frontend, one backend, default framing rules.
const MINIMAL: &str = "\
global
    maxconn 1000

defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 30s

frontend ledgerd
    bind 127.0.0.1:8545
    default_backend ledgerd

backend ledgerd
    server n1 127.0.0.1:12346
";

struct Front {
    addr: SocketAddr,
    node: Ledgerd,
    haproxy: Child,
    dir: tempfile::TempDir,
}

impl Drop for Front {
    fn drop(&mut self) {
        common::process::terminate(&mut self.haproxy, Duration::from_secs(3));
    }
}

/// `cfg` made runnable here: each `bind` on a free loopback port (the first
/// is the one returned, the clients' front), each `server` pointed at `node`,
/// and the lines that need root or fixed paths dropped.
fn adapt(cfg: &str, node: SocketAddr) -> (String, u16) {
    let mut front = None;
    let mut out = String::new();
    for line in cfg.lines() {
        let indent = &line[..line.len() - line.trim_start().len()];
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.first().copied() {
            Some("bind") => {
                let port = free_port();
                front.get_or_insert(port);
                out.push_str(&format!("{indent}bind 127.0.0.1:{port}\n"));
            }
            Some("server") if words.len() >= 3 => {
                let rest = words[3..].join(" ");
                out.push_str(&format!("{indent}server {} {node} {rest}\n", words[1]));
            }
            Some("chroot" | "pidfile" | "user" | "group" | "daemon") => {}
            Some("stats") if words.get(1) == Some(&"socket") => {}
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    (out, front.expect("the configuration has no bind line"))
}

fn start(cfg: &str) -> Front {
    assert!(
        Path::new(HAPROXY).exists(),
        "{HAPROXY} is missing: apt-get install haproxy"
    );
    let node = Ledgerd::builder().dev(PREFILL, 0).start();
    let dir = tempfile::tempdir().expect("haproxy dir");
    let (cfg, port) = adapt(cfg, node.addr);
    let path = dir.path().join("haproxy.cfg");
    std::fs::write(&path, cfg).expect("write haproxy.cfg");
    let log = std::fs::File::create(dir.path().join("haproxy.log")).expect("log");
    let haproxy = Command::new(HAPROXY)
        .arg("-db")
        .arg("-f")
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log.try_clone().expect("log")))
        .stderr(Stdio::from(log))
        .spawn()
        .expect("start haproxy");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let mut front = Front {
        addr,
        node,
        haproxy,
        dir,
    };
    let log = front.dir.path().join("haproxy.log");
    common::process::wait_accepting(&mut front.haproxy, "haproxy", addr, &log);
    assert_eq!(
        common::rpc(front.addr, common::HEAD_HEIGHT.as_bytes()).status,
        200,
        "a normal request through haproxy"
    );
    front
}

/// Whether the head of `raw` has a header line named `name`.
fn has_header(raw: &[u8], name: &str) -> bool {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end])
        .lines()
        .skip(1)
        .any(|l| {
            l.split(':')
                .next()
                .is_some_and(|n| n.trim().eq_ignore_ascii_case(name))
        })
}

fn assert_nothing_smuggled_through(f: &Front) {
    // HAProxy takes equal Content-Lengths as one (RFC 9110 8.6): no
    // ambiguity left, and what follows is a second request to it too.
    for case in cases().into_iter().filter(|c| !c.one_reading) {
        let a = one_answer_then_closed(f.addr, &case.raw);
        eprintln!("{}: {}", case.what, a.status);
        if a.status == 200 {
            // Only where RFC 9112 lets a recipient go by the chunked body and
            // drop Content-Length; that body is the honest request.
            assert!(
                has_header(&case.raw, "Transfer-Encoding")
                    && has_header(&case.raw, "Content-Length"),
                "{}: passed on: {}",
                case.what,
                a.text()
            );
            assert_eq!(a.json()["id"], 7, "{}: {}", case.what, a.text());
        } else {
            assert!(
                (400..=599).contains(&a.status),
                "{}: {} {}",
                case.what,
                a.status,
                a.text()
            );
        }
        assert_normal_request_fast(f.addr, PREFILL);
    }
    thread::sleep(Duration::from_millis(200));
    assert_eq!(
        smuggled_handled(f.node.addr),
        0,
        "a smuggled request reached ledgerd"
    );
    // The same request on its own does reach it (so the count would show it).
    let a = common::rpc(f.addr, SMUGGLED_BODY.as_bytes());
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(smuggled_handled(f.node.addr), 1);
}

#[test]
#[ignore = "needs haproxy: apt-get install haproxy"]
fn ambiguous_framing_gets_one_answer_through_a_minimal_haproxy() {
    let _one_at_a_time = common::one_at_a_time();
    let f = start(MINIMAL);
    assert_nothing_smuggled_through(&f);
}

/// The project's HAProxy front, `scripts/haproxy/ledgerd.cfg`, as it is
/// (its three `server` lines all pointed at the one node).
#[test]
#[ignore = "needs haproxy: apt-get install haproxy"]
fn ambiguous_framing_gets_one_answer_through_scripts_haproxy_ledgerd_cfg() {
    let _one_at_a_time = common::one_at_a_time();
    let f = start(CFG);
    assert_nothing_smuggled_through(&f);
}

/// The status page (`GET /` in a browser) and its reads through the
/// project's HAProxy front.
#[test]
#[ignore = "needs haproxy: apt-get install haproxy"]
fn the_status_page_and_what_it_reads_pass_through_scripts_haproxy_ledgerd_cfg() {
    let _one_at_a_time = common::one_at_a_time();
    let f = start(CFG);
    common::http::assert_status_page_passes(f.addr, f.node.addr);
}
