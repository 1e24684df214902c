//! CORS in a real browser: headless Chromium loads a page from a second
//! origin (a tiny HTTP server in this test, on another port) whose script
//! calls the node with `fetch` (a JSON POST, so the browser sends a
//! preflight first) and writes the answer into the DOM; `--dump-dom` prints
//! the DOM after the script ran.
//!
//! Needs Debian's `chromium`, so the tests are `#[ignore]`d: `.ci/install`
//! installs it and `.ci/run` runs them with `--include-ignored`, where a
//! missing chromium fails them.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::http::{exchange, metric};
use ledgerd::Node;

/// Serves one HTML page on 127.0.0.1 (another origin than the node) until dropped.
struct PageServer {
    addr: SocketAddr,
    html: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PageServer {
    fn start() -> PageServer {
        let html = Arc::new(Mutex::new(String::new()));
        let page = html.clone();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                let (stream, _) = match listener.accept() {
                    Ok(c) => c,
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    }
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut reader = BufReader::new(stream);
                let mut first = String::new();
                let _ = reader.read_line(&mut first);
                loop {
                    let mut line = String::new();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) if line == "\r\n" => break,
                        Ok(_) => {}
                    }
                }
                let (status, body) = if first.starts_with("GET / ") {
                    ("200 OK", page.lock().unwrap().clone())
                } else {
                    ("404 Not Found", String::new())
                };
                let mut stream = reader.into_inner();
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        PageServer {
            addr,
            html,
            stop,
            thread: Some(thread),
        }
    }
}

impl PageServer {
    fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn serve(&self, html: String) {
        *self.html.lock().unwrap() = html;
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A page whose script POSTs one JSON-RPC call to `node_url` and writes
/// `ANSWER <body>` or `FAILED <error>` into `#out`.
fn page(node_url: &str) -> String {
    format!(
        r#"<!doctype html>
<html><head><title>explorer</title></head><body>
<pre id="out">PENDING</pre>
<script>
fetch("{node_url}/", {{
  method: "POST",
  headers: {{ "Content-Type": "application/json" }},
  body: JSON.stringify({{ jsonrpc: "2.0", id: 7, method: "ledger_getHeadSoftConfirmationHeight", params: [] }})
}})
  .then(r => r.text())
  .then(t => {{ document.getElementById("out").textContent = "ANSWER " + t; }})
  .catch(e => {{ document.getElementById("out").textContent = "FAILED " + e; }});
</script>
</body></html>"#
    )
}

/// Loads `url` in headless Chromium and returns the DOM after its scripts
/// ran (10 s of page time; a missing chromium fails the test).
fn dump_dom(url: &str) -> String {
    common::browser::load(url, 10_000).dom
}

fn preflights(node: &Node) -> u64 {
    let a = exchange(
        node.local_addr(),
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    metric(
        &a.text(),
        "ledgerd_http_requests_total{route=\"preflight\"}",
    )
}

#[test]
#[ignore = "needs chromium: apt-get install chromium"]
fn a_page_on_another_origin_reads_the_nodes_answer_with_fetch() {
    let dir = tempfile::tempdir().unwrap();
    let node = common::browser::dev_node(dir.path(), 20, None);
    let site = PageServer::start();
    site.serve(page(&node.url()));
    let dom = dump_dom(&format!("{}/", site.origin()));
    assert!(
        dom.contains(r#"<pre id="out">ANSWER {"jsonrpc":"2.0","id":7,"result":20}</pre>"#),
        "the DOM should show the node's answer:\n{dom}"
    );
    assert!(preflights(&node) >= 1, "the browser sent a preflight");
}

#[test]
#[ignore = "needs chromium: apt-get install chromium"]
fn cors_origin_lets_only_that_origin_read_answers() {
    let dir = tempfile::tempdir().unwrap();
    let site = PageServer::start();

    // The node allows some other origin: the browser refuses the answer.
    let node = common::browser::dev_node(dir.path(), 20, Some("https://explorer.example"));
    site.serve(page(&node.url()));
    let dom = dump_dom(&format!("{}/", site.origin()));
    assert!(
        dom.contains(r#"<pre id="out">FAILED TypeError"#),
        "fetch from a page on another origin must fail:\n{dom}"
    );
    assert!(!dom.contains(r#"<pre id="out">ANSWER"#), "{dom}");
    node.shutdown();

    // The node allows exactly the page's origin: the page reads the answer.
    let node = common::browser::dev_node(dir.path(), 20, Some(&site.origin()));
    site.serve(page(&node.url()));
    let dom = dump_dom(&format!("{}/", site.origin()));
    assert!(
        dom.contains(r#"<pre id="out">ANSWER {"jsonrpc":"2.0","id":7,"result":20}</pre>"#),
        "the allowed origin reads the answer:\n{dom}"
    );
}
