//! Manners towards public endpoints: HTTP 429 and 503 answers waited out as
//! their `Retry-After` asks, `--upstream-max-rps`, and a gzip bomb refused
//! within the answer cap. A real ledgerd devnet behind a tiny HTTP proxy
//! written here (it answers 429/503 as a rate-limited endpoint does, with
//! `Retry-After` in seconds or as an HTTP date), and a tiny server that
//! answers every request with a small gzip body that decodes past 256 MiB.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use common::http::metric;
use common::{call, head, Ledgerd};

/// What the proxy answers instead of passing a request on.
#[derive(Clone, Debug)]
struct PushBack {
    code: u16,
    /// The `Retry-After` value, made when the answer is sent.
    retry_after: fn() -> String,
}

#[derive(Default)]
struct Shared {
    /// Push-backs to answer, first first.
    queue: Vec<PushBack>,
    /// Every request: when it arrived, and whether it was pushed back.
    log: Vec<(Instant, bool)>,
    /// Whether every request asked for gzip.
    all_accept_gzip: bool,
}

/// A proxy on 127.0.0.1 before `upstream`: one request per connection.
struct Proxy {
    url: String,
    shared: Arc<Mutex<Shared>>,
}

impl Proxy {
    fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let shared = Arc::new(Mutex::new(Shared {
            all_accept_gzip: true,
            ..Shared::default()
        }));
        let (upstream, state) = (upstream.to_string(), shared.clone());
        thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (upstream, state) = (upstream.clone(), state.clone());
                thread::spawn(move || {
                    let _ = pass(conn, &upstream, &state);
                });
            }
        });
        Proxy { url, shared }
    }

    fn push_back(&self, answers: &[PushBack]) {
        self.shared.lock().unwrap().queue.extend_from_slice(answers);
    }

    fn log(&self) -> Vec<(Instant, bool)> {
        self.shared.lock().unwrap().log.clone()
    }
}

/// A request's headers (lower-cased names, values) and body.
type Request = (Vec<(String, String)>, Vec<u8>);

/// Reads one request: its headers and body.
fn read_request(r: &mut impl BufRead) -> std::io::Result<Request> {
    let mut headers = Vec::new();
    let mut line = String::new();
    r.read_line(&mut line)?;
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    r.read_exact(&mut body)?;
    Ok((headers, body))
}

fn pass(conn: TcpStream, upstream: &str, state: &Mutex<Shared>) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let (headers, body) = read_request(&mut reader)?;
    let gzip = headers
        .iter()
        .any(|(k, v)| k == "accept-encoding" && v.contains("gzip"));
    let push = {
        let mut s = state.lock().unwrap();
        s.all_accept_gzip &= gzip;
        let push = (!s.queue.is_empty()).then(|| s.queue.remove(0));
        s.log.push((Instant::now(), push.is_some()));
        push
    };
    let mut out = conn;
    if let Some(p) = push {
        let text = "busy";
        let reason = if p.code == 429 {
            "Too Many Requests"
        } else {
            "Service Unavailable"
        };
        return write!(
            out,
            "HTTP/1.1 {} {reason}\r\nRetry-After: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
            p.code,
            (p.retry_after)(),
            text.len()
        );
    }
    let answer = ureq::post(upstream)
        .set("Content-Type", "application/json")
        .send_bytes(&body)
        .map_err(std::io::Error::other)?
        .into_string()?;
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    )
}

/// The gaps after each pushed-back request to the next request.
fn waits_after_push_backs(log: &[(Instant, bool)]) -> Vec<Duration> {
    log.windows(2)
        .filter(|w| w[0].1)
        .map(|w| w[1].0 - w[0].0)
        .collect()
}

#[test]
fn http_429_and_503_are_waited_out_as_retry_after_asks_with_one_warning_per_episode() {
    let dev = Ledgerd::builder().dev(20, 0).start();
    let proxy = Proxy::start(&dev.url);
    let f = Ledgerd::builder().args(&["--upstream", &proxy.url]).start();
    f.wait_for(Duration::from_secs(30), "caught up", |f| head(&f.url) == 20);

    // Episode 1: three 429s in a row, each asking for 1 s.
    proxy.push_back(&vec![
        PushBack {
            code: 429,
            retry_after: || "1".into(),
        };
        3
    ]);
    assert_eq!(call(&dev.url, "dev_mine", "[10]"), 30);
    f.wait_for(Duration::from_secs(30), "caught up after the 429s", |f| {
        head(&f.url) == 30
    });
    let log = proxy.log();
    let waits = waits_after_push_backs(&log);
    assert_eq!(waits.len(), 3, "{log:?}");
    for w in &waits {
        assert!(*w >= Duration::from_millis(950), "asked again after {w:?}");
    }
    let (status, h) = f.health();
    assert_eq!(status, 200, "{h}");

    // Episode 2: one 503 whose Retry-After is an HTTP date 2 s ahead.
    proxy.push_back(&[PushBack {
        code: 503,
        retry_after: || httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(2)),
    }]);
    assert_eq!(call(&dev.url, "dev_mine", "[5]"), 35);
    f.wait_for(Duration::from_secs(30), "caught up after the 503", |f| {
        head(&f.url) == 35
    });
    let waits = waits_after_push_backs(&proxy.log());
    assert_eq!(waits.len(), 4);
    // The date has whole seconds: at least 1 s of the 2 is left.
    assert!(waits[3] >= Duration::from_millis(950), "{waits:?}");

    let m = f.metrics_text();
    let series = |code: u16| {
        format!(
            "ledgerd_sync_upstream_pushback_total{{url=\"{}\",code=\"{code}\"}}",
            proxy.url
        )
    };
    assert_eq!(metric(&m, &series(429)), 3);
    assert_eq!(metric(&m, &series(503)), 1);
    let stderr = f.stderr();
    let warned = |text: &str| {
        stderr
            .lines()
            .filter(|l| l.contains("WARN") && l.contains(text))
            .count()
    };
    assert_eq!(warned("HTTP 429"), 1, "one WARN per episode:\n{stderr}");
    assert_eq!(warned("HTTP 503"), 1, "{stderr}");
    assert!(
        proxy.shared.lock().unwrap().all_accept_gzip,
        "every request asks for gzip"
    );
}

#[test]
fn upstream_max_rps_spaces_the_requests_to_an_upstream() {
    let dev = Ledgerd::builder().dev(30, 0).start();
    let proxy = Proxy::start(&dev.url);
    let f = Ledgerd::builder()
        .args(&[
            "--upstream",
            &proxy.url,
            "--upstream-max-rps",
            "5",
            "--sync-chunk",
            "5",
        ])
        .start();
    f.wait_for(Duration::from_secs(60), "caught up", |f| head(&f.url) == 30);
    let log = proxy.log();
    assert!(log.len() >= 8, "{} requests", log.len());
    // The cap spaces the starts of requests 200 ms apart; the proxy sees
    // them arrive after a thread's scheduling and a connection's setup,
    // which on a loaded host vary by tens of ms a request. What the upstream
    // must see: never more than 5 requests in a second (6 where a second's
    // window catches one early and one late), and 200 ms apart on average.
    let times: Vec<Instant> = log.iter().map(|e| e.0).collect();
    for (i, start) in times.iter().enumerate() {
        let in_a_second = times[i..]
            .iter()
            .take_while(|t| **t - *start < Duration::from_secs(1))
            .count();
        assert!(in_a_second <= 6, "{in_a_second} requests within a second");
    }
    let span = times[times.len() - 1] - times[0];
    let mean = span / (times.len() as u32 - 1);
    assert!(
        mean >= Duration::from_millis(195),
        "requests {mean:?} apart on average"
    );
}

/// A server that answers every request with `body` as `Content-Encoding: gzip`.
fn gzip_server(body: Arc<Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let body = body.clone();
            thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().expect("clone"));
                if read_request(&mut reader).is_err() {
                    return;
                }
                let mut out = conn;
                let _ = write!(
                    out,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = out.write_all(&body);
            });
        }
    });
    url
}

/// The peak resident memory of process `pid`, in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM");
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("kB");
    kb * 1024
}

#[test]
fn a_gzip_bomb_is_refused_within_the_answer_cap() {
    // 320 MiB of zeros, about 320 KB compressed.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let mib = vec![0u8; 1 << 20];
    for _ in 0..320 {
        gz.write_all(&mib).expect("gzip");
    }
    let bomb = gz.finish().expect("gzip");
    assert!(bomb.len() < 1 << 20, "{} bytes", bomb.len());
    let url = gzip_server(Arc::new(bomb));
    let f = Ledgerd::builder().args(&["--upstream", &url]).start();
    f.wait_for(Duration::from_secs(30), "the bomb refused and named", |f| {
        f.health().1["sourceProblem"]
            .as_str()
            .is_some_and(|p| p.contains("sent an answer larger than 268435456 bytes"))
    });
    // Refused again after the back-off, never past the cap.
    std::thread::sleep(Duration::from_secs(2));
    let peak = peak_rss(f.pid());
    assert!(
        peak < (256 + 128) << 20,
        "peak resident memory {} MiB",
        peak >> 20
    );
    assert_eq!(head(&f.url), 0, "nothing stored");
    assert!(f.stderr().contains("larger than 268435456 bytes"));
}
