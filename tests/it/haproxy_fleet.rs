//! A fleet behind HAProxy loses a node without losing a request:
//! `scripts/haproxy/ledgerd.cfg` as it is (only its listen addresses and
//! server addresses replaced by loopback ports) in front of three followers
//! of one devnet, under a bounded load of a few client threads. During the
//! load one follower is killed (SIGKILL) and another's upstream stops
//! handing out blocks so it falls behind; then both come back.
//!
//! Every request must get a correct answer: HTTP 200, a result for each
//! call, a block where one must exist, the devnet's own block, and a head
//! that never goes back by more than `--health-max-behind` plus what the
//! chain makes while HAProxy notices. The dead and the lagging follower
//! must stop getting requests within about 2 s and get them again once
//! healthy. The test prints the request count, errors and per-server share.
//!
//! Needs HAProxy (`.ci/install` installs Debian's package; CI runs ignored
//! tests): `cargo test --test it haproxy_fleet:: -- --include-ignored --nocapture`.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::proxy::Proxy;
use common::{free_port, Ledgerd};
use serde_json::{json, Value};

const CFG: &str = include_str!("../../scripts/haproxy/ledgerd.cfg");
const HAPROXY: &str = "/usr/sbin/haproxy";

/// The devnet makes one block every this many ms.
const BLOCK_MS: u64 = 100;
/// The followers' `--health-max-behind`.
const MAX_BEHIND: u64 = 20;
/// How soon a dead or unhealthy node must stop getting requests.
const OUT_WITHIN: Duration = Duration::from_millis(2000);
/// How far back a client may see the head go: the health limit, plus the
/// blocks made while the follower's watcher (1 s) and then HAProxy
/// ([`OUT_WITHIN`]) notice.
const GO_BACK_BOUND: u64 = MAX_BEHIND + (1000 + 2000) / BLOCK_MS;

/// Client threads of the load.
const CLIENTS: usize = 4;

// The load's timeline, from its start.
const KILL_AT: Duration = Duration::from_millis(1500);
const HOLD_AT: Duration = Duration::from_millis(2000);
const RESTART_AT: Duration = Duration::from_millis(5000);
const RELEASE_AT: Duration = Duration::from_millis(8000);
const END_AT: Duration = Duration::from_millis(12000);

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(2))
        .timeout(Duration::from_secs(10))
        .build()
}

/// HAProxy on the config file, in the foreground; stopped (SIGTERM) when dropped.
struct Haproxy {
    child: Child,
    front: String,
    stats: String,
    dir: tempfile::TempDir,
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        common::process::terminate(&mut self.child, Duration::from_secs(3));
    }
}

fn replace_once(cfg: &mut String, from: &str, to: &str) {
    common::process::replace_once(cfg, from, to, "scripts/haproxy/ledgerd.cfg");
}

impl Haproxy {
    fn start(servers: &[&Ledgerd; 3]) -> Haproxy {
        assert!(
            Path::new(HAPROXY).exists(),
            "{HAPROXY} is missing: this test runs the HAProxy front. Install it (.ci/install, \
             or `apt-get install haproxy`)"
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let (front, stats) = (free_port(), free_port());
        let mut cfg = CFG.to_string();
        replace_once(
            &mut cfg,
            "bind 127.0.0.1:8545",
            &format!("bind 127.0.0.1:{front}"),
        );
        replace_once(
            &mut cfg,
            "bind 127.0.0.1:8404",
            &format!("bind 127.0.0.1:{stats}"),
        );
        for (i, (default, node)) in ["127.0.0.1:12346", "127.0.0.1:12347", "127.0.0.1:12348"]
            .iter()
            .zip(servers)
            .enumerate()
        {
            let name = i + 1;
            replace_once(
                &mut cfg,
                &format!("server n{name} {default}"),
                &format!("server n{name} {}", node.addr),
            );
        }
        let path = dir.path().join("ledgerd.cfg");
        std::fs::write(&path, cfg).expect("write the config");
        let log = std::fs::File::create(dir.path().join("haproxy.stderr")).expect("log");
        let child = Command::new(HAPROXY)
            .arg("-db")
            .arg("-f")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start haproxy");
        let mut h = Haproxy {
            child,
            front: format!("http://127.0.0.1:{front}"),
            stats: format!("http://127.0.0.1:{stats}/;csv"),
            dir,
        };
        let all_up = |up: &BTreeMap<String, bool>| up.len() == 3 && up.values().all(|&u| u);
        let (up, _) = common::poll_until(
            Duration::from_secs(15),
            || {
                let running = matches!(h.child.try_wait(), Ok(None));
                (h.in_rotation(), running)
            },
            |(up, running)| all_up(up) || !running,
        )
        .unwrap_or_else(|last| last);
        assert!(
            all_up(&up),
            "HAProxy did not put all three nodes in rotation ({up:?}):\n{}",
            h.log()
        );
        h
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("haproxy.stderr")).unwrap_or_default()
    }

    /// The backend's servers from the stats CSV: column name -> value, by server.
    fn servers(&self) -> BTreeMap<String, HashMap<String, String>> {
        let Some(text) = agent()
            .get(&self.stats)
            .call()
            .ok()
            .and_then(|r| r.into_string().ok())
        else {
            return BTreeMap::new();
        };
        let mut lines = text.lines();
        let header: Vec<&str> = lines
            .next()
            .unwrap_or_default()
            .trim_start_matches("# ")
            .split(',')
            .collect();
        let mut out = BTreeMap::new();
        for line in lines {
            let row: HashMap<String, String> = header
                .iter()
                .zip(line.split(','))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let (Some(px), Some(sv)) = (row.get("pxname"), row.get("svname")) else {
                continue;
            };
            if px == "ledgerd" && sv.starts_with('n') {
                out.insert(sv.clone(), row);
            }
        }
        out
    }

    /// Whether HAProxy sends requests to each server ("UP", or "UP 1/2":
    /// one check failed, still in rotation).
    fn in_rotation(&self) -> BTreeMap<String, bool> {
        self.servers()
            .into_iter()
            .map(|(name, row)| {
                let up = row.get("status").is_some_and(|s| s.starts_with("UP"));
                (name, up)
            })
            .collect()
    }
}

/// One answered request of the load.
struct Record {
    /// Since the load started.
    at: Duration,
    server: String,
    head: u64,
}

/// What one client thread saw.
#[derive(Default)]
struct ClientReport {
    records: Vec<Record>,
    errors: Vec<String>,
    /// The most the head went back from the highest this client had seen.
    max_go_back: u64,
    /// (height, hash) of every block read.
    blocks: HashMap<u64, String>,
}

/// One client: a keep-alive connection to HAProxy, asking in one batch for
/// the head and for the block `GO_BACK_BOUND` below the highest head it has
/// seen (which every node in rotation must hold), until `stop`.
fn client(front: String, started: Instant, stop: Arc<AtomicBool>) -> ClientReport {
    let agent = agent();
    let mut report = ClientReport::default();
    let mut highest = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let probe = highest.saturating_sub(GO_BACK_BOUND).max(1);
        let body = json!([
            {"jsonrpc":"2.0","id":1,"method":"ledger_getHeadSoftConfirmationHeight","params":[]},
            {"jsonrpc":"2.0","id":2,"method":"ledger_getSoftConfirmationByNumber","params":[probe]}
        ])
        .to_string();
        let at = started.elapsed();
        let response = agent
            .post(&front)
            .set("Content-Type", "application/json")
            .send_string(&body);
        let answer = match response {
            Ok(r) => {
                let server = r.header("X-Served-By").unwrap_or("?").to_string();
                r.into_string().map(|text| (server, text))
            }
            Err(ureq::Error::Status(s, r)) => {
                let text = r.into_string().unwrap_or_default();
                report
                    .errors
                    .push(format!("{at:.2?}: HTTP {s}: {text:.200}"));
                continue;
            }
            Err(e) => {
                report.errors.push(format!("{at:.2?}: {e}"));
                continue;
            }
        };
        let (server, text) = match answer {
            Ok(a) => a,
            Err(e) => {
                report
                    .errors
                    .push(format!("{at:.2?}: unreadable body: {e}"));
                continue;
            }
        };
        let parsed: Result<Vec<Value>, _> = serde_json::from_str(&text);
        let (head, block) = match parsed.as_deref() {
            Ok([a, b]) if a["id"] == 1 && b["id"] == 2 => (a["result"].as_u64(), &b["result"]),
            Ok([b, a]) if a["id"] == 1 && b["id"] == 2 => (a["result"].as_u64(), &b["result"]),
            _ => (None, &Value::Null),
        };
        let Some(head) = head else {
            report
                .errors
                .push(format!("{at:.2?} from {server}: no head in {text:.300}"));
            continue;
        };
        let Some(hash) = block["hash"].as_str() else {
            report.errors.push(format!(
                "{at:.2?} from {server}: no block {probe} (head {head}, highest seen {highest}): {text:.300}"
            ));
            continue;
        };
        if block["l2Height"] != json!(probe) {
            report.errors.push(format!(
                "{at:.2?} from {server}: asked for block {probe}, got {block}"
            ));
        }
        if let Some(other) = report.blocks.insert(probe, hash.to_string()) {
            if other != hash {
                report.errors.push(format!(
                    "{at:.2?} from {server}: block {probe} is {hash}, was {other}"
                ));
            }
        }
        report.max_go_back = report.max_go_back.max(highest.saturating_sub(head));
        highest = highest.max(head);
        report.records.push(Record { at, server, head });
    }
    report
}

/// When HAProxy took each server out of rotation and put it back, and when
/// the lagging follower's own /health first turned 503 after `hold_at`.
#[derive(Default, Debug)]
struct Watch {
    /// (since the load started, server, in rotation) at each change.
    changes: Vec<(Duration, String, bool)>,
    /// (since the load started, the JSON body) of the lagging node's first 503.
    lagging_503: Option<(Duration, Value)>,
}

fn watch(
    haproxy: &Haproxy,
    lagging: &str,
    started: Instant,
    stop: &AtomicBool,
    out: &Mutex<Watch>,
) {
    let mut last = haproxy.in_rotation();
    while !stop.load(Ordering::SeqCst) {
        let at = started.elapsed();
        for (name, up) in haproxy.in_rotation() {
            if last.get(&name) != Some(&up) {
                out.lock().unwrap().changes.push((at, name.clone(), up));
                last.insert(name, up);
            }
        }
        if at >= HOLD_AT && out.lock().unwrap().lagging_503.is_none() {
            if let Err(ureq::Error::Status(503, r)) =
                agent().get(&format!("{lagging}/health")).call()
            {
                let v = serde_json::from_str(&r.into_string().unwrap_or_default())
                    .unwrap_or(Value::Null);
                out.lock().unwrap().lagging_503 = Some((at, v));
            }
        }
        thread::sleep(Duration::from_millis(50));
    }
}

fn sleep_until(started: Instant, at: Duration) {
    if let Some(d) = at.checked_sub(started.elapsed()) {
        thread::sleep(d);
    }
}

fn follower_args(upstream: &str) -> Vec<String> {
    [
        "--upstream",
        upstream,
        "--health-max-behind",
        &MAX_BEHIND.to_string(),
    ]
    .map(String::from)
    .to_vec()
}

#[test]
#[ignore = "needs haproxy: apt-get install haproxy"]
fn a_fleet_behind_haproxy_loses_a_node_and_lags_another_without_losing_a_request() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = |name: &str| dir.path().join(name);
    let dev = Ledgerd::builder()
        .dev(200, BLOCK_MS)
        .data_dir(&d("dev"))
        .start();
    let proxy = Proxy::start(&dev.url);
    let n1 = Ledgerd::builder()
        .data_dir(&d("n1"))
        .args(&follower_args(&dev.url))
        .start();
    let n2 = Ledgerd::builder()
        .data_dir(&d("n2"))
        .args(&follower_args(&proxy.url))
        .start();
    let n3 = Ledgerd::builder()
        .data_dir(&d("n3"))
        .args(&follower_args(&dev.url))
        .start();
    for n in [&n1, &n2, &n3] {
        n.wait_for(Duration::from_secs(30), "the follower syncs", |n| {
            n.head() >= 200
        });
    }
    let haproxy = Haproxy::start(&[&n1, &n2, &n3]);
    let (n1_port, n2_url) = (n1.port(), n2.url.clone());

    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (front, stop) = (haproxy.front.clone(), stop.clone());
            thread::spawn(move || client(front, started, stop))
        })
        .collect();
    let watched = Mutex::new(Watch::default());
    let watch_stop = AtomicBool::new(false);
    let mut n1 = Some(n1);
    let (mut killed, mut held, mut restarted, mut released) = (None, None, None, None);
    thread::scope(|s| {
        s.spawn(|| watch(&haproxy, &n2_url, started, &watch_stop, &watched));
        sleep_until(started, KILL_AT);
        n1.take().expect("n1").kill();
        killed = Some(started.elapsed());
        sleep_until(started, HOLD_AT);
        proxy.hold_blocks();
        held = Some(started.elapsed());
        sleep_until(started, RESTART_AT);
        n1 = Some(
            Ledgerd::builder()
                .data_dir(&d("n1"))
                .bind(&format!("127.0.0.1:{n1_port}"))
                .args(&follower_args(&dev.url))
                .start(),
        );
        restarted = Some(started.elapsed());
        sleep_until(started, RELEASE_AT);
        proxy.release();
        released = Some(started.elapsed());
        sleep_until(started, END_AT);
        stop.store(true, Ordering::SeqCst);
        watch_stop.store(true, Ordering::SeqCst);
    });
    let (killed, held, restarted, released) = (
        killed.unwrap(),
        held.unwrap(),
        restarted.unwrap(),
        released.unwrap(),
    );
    let reports: Vec<ClientReport> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let watched = watched.into_inner().unwrap();
    let servers = haproxy.servers();

    // ---- the figures
    let records: Vec<&Record> = reports.iter().flat_map(|r| &r.records).collect();
    let errors: Vec<&String> = reports.iter().flat_map(|r| &r.errors).collect();
    let max_go_back = reports.iter().map(|r| r.max_go_back).max().unwrap_or(0);
    let total = records.len() + errors.len();
    let elapsed = END_AT.as_secs_f64();
    eprintln!(
        "fleet of 3 behind HAProxy, {CLIENTS} clients, {elapsed:.0} s: {total} requests \
         ({:.0}/s), {} errors or non-200; highest head {}",
        total as f64 / elapsed,
        errors.len(),
        records.iter().map(|r| r.head).max().unwrap_or(0)
    );
    let phases = [
        ("all up", Duration::ZERO, killed),
        ("n1 killed", killed, held),
        ("n1 killed, n2 held back", held, restarted),
        ("n1 back, n2 held back", restarted, released),
        ("both back", released, END_AT),
    ];
    for (name, from, to) in phases {
        let in_phase: Vec<&&Record> = records
            .iter()
            .filter(|r| r.at >= from && r.at < to)
            .collect();
        let share = |s: &str| {
            let n = in_phase.iter().filter(|r| r.server == s).count();
            format!(
                "{s} {n} ({:.0}%)",
                100.0 * n as f64 / in_phase.len().max(1) as f64
            )
        };
        eprintln!(
            "  {:>4.1}-{:>4.1} s {name:<24} {:>6} requests: {}, {}, {}",
            from.as_secs_f64(),
            to.as_secs_f64(),
            in_phase.len(),
            share("n1"),
            share("n2"),
            share("n3")
        );
    }
    for (at, name, up) in &watched.changes {
        eprintln!(
            "  {:>5.2} s HAProxy: {name} {}",
            at.as_secs_f64(),
            if *up {
                "back in rotation"
            } else {
                "out of rotation"
            }
        );
    }
    let stat = |sv: &str, col: &str| -> u64 {
        servers
            .get(sv)
            .and_then(|r| r.get(col))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let per_server = |col: &str| {
        ["n1", "n2", "n3"]
            .map(|s| format!("{s} {}", stat(s, col)))
            .join(", ")
    };
    eprintln!(
        "  HAProxy retries: {}; redispatches: {}; connection errors: {}",
        per_server("wretr"),
        per_server("wredis"),
        per_server("econ")
    );
    eprintln!(
        "  largest step back of the head seen by a client: {max_go_back} blocks (bound {GO_BACK_BOUND})"
    );
    if let Some((at, v)) = &watched.lagging_503 {
        eprintln!("  {:>5.2} s n2's /health: 503 {v}", at.as_secs_f64());
    }

    // ---- every request answered, correctly
    assert!(
        errors.is_empty(),
        "{} of {total} requests failed; first ones:\n{:#?}\nHAProxy log:\n{}",
        errors.len(),
        &errors[..errors.len().min(10)],
        haproxy.log()
    );
    assert!(total >= 200, "only {total} requests in {elapsed} s");
    assert!(
        max_go_back <= GO_BACK_BOUND,
        "a client saw the head go back by {max_go_back} (bound {GO_BACK_BOUND})"
    );
    let mut blocks: BTreeMap<u64, String> = BTreeMap::new();
    for r in &reports {
        for (h, hash) in &r.blocks {
            if let Some(other) = blocks.insert(*h, hash.clone()) {
                assert_eq!(&other, hash, "two clients read different blocks {h}");
            }
        }
    }
    for (h, hash) in &blocks {
        let devnet = dev.result("ledger_getSoftConfirmationByNumber", &format!("[{h}]"));
        assert_eq!(
            devnet["hash"],
            json!(hash),
            "block {h} read through HAProxy"
        );
    }

    // ---- the dead node: out within about 2 s, back once restarted
    let out_at = |name: &str, after: Duration| {
        watched
            .changes
            .iter()
            .find(|(at, n, up)| n == name && !up && *at >= after)
            .map(|c| c.0)
    };
    let back_at = |name: &str, after: Duration| {
        watched
            .changes
            .iter()
            .find(|(at, n, up)| n == name && *up && *at >= after)
            .map(|c| c.0)
    };
    let n1_out = out_at("n1", killed).expect("HAProxy took the killed n1 out of rotation");
    assert!(
        n1_out - killed <= OUT_WITHIN,
        "n1 taken out {:.2?} after its kill",
        n1_out - killed
    );
    back_at("n1", restarted).expect("HAProxy put the restarted n1 back");
    assert!(
        records.iter().any(|r| r.server == "n1" && r.at > restarted),
        "the restarted n1 got requests again"
    );

    // ---- the lagging node: unhealthy because it is behind, out within about 2 s, back once caught up
    let (n2_503, v) = watched
        .lagging_503
        .clone()
        .expect("n2's /health turned 503 while its blocks were held back");
    assert_eq!(v["reason"], "behind", "{v}");
    assert!(
        n2_503 < released,
        "503 at {n2_503:?}, released at {released:?}"
    );
    let last_n2 = records
        .iter()
        .filter(|r| r.server == "n2" && r.at >= held && r.at < released)
        .map(|r| r.at)
        .max()
        .unwrap_or(held);
    assert!(
        last_n2 <= n2_503 + OUT_WITHIN,
        "n2 got requests until {last_n2:?}, {:.2?} after its /health turned 503",
        last_n2 - n2_503
    );
    let n2_out = out_at("n2", held).expect("HAProxy took the lagging n2 out of rotation");
    assert!(n2_out - n2_503 <= OUT_WITHIN);
    back_at("n2", released).expect("HAProxy put n2 back once it caught up");
    assert!(
        records.iter().any(|r| r.server == "n2" && r.at > released),
        "n2 got requests again"
    );
    assert!(records.iter().any(|r| r.server == "n3" && r.at > released));

    // ---- HAProxy's own limits answer at once, in JSON-RPC
    let front: std::net::SocketAddr = haproxy.front["http://".len()..].parse().unwrap();
    let t = Instant::now();
    let a = common::exchange(
        front,
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 20000000\r\n\r\n{\"a\":",
    );
    assert_eq!(a.status, 413, "{}", a.text());
    assert_eq!(a.json()["error"]["code"], -32007, "{}", a.text());
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    let held: Vec<std::net::TcpStream> = (0..64).map(|_| common::connect(front)).collect();
    thread::sleep(Duration::from_millis(100));
    let a = common::rpc(front, common::HEAD_HEIGHT.as_bytes());
    assert_eq!(a.status, 503, "{}", a.text());
    assert_eq!(a.json()["error"]["code"], -32000, "{}", a.text());
    drop(held);
}
