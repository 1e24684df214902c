//! Measures a follower's catch-up (used by `scripts/catchup.sh`).
//!
//! `catchup_probe FOLLOWER_URL UPSTREAM_URL [QUERIES_PER_SECOND] [LIMIT_SECONDS]`
//!
//! While the follower catches up, this asks it queries at a steady rate on
//! one keep-alive connection (a block by number at a random stored height,
//! its status, the sync status) and times each answer. It stops when the
//! follower's sync status says `Synced` on both layers at the upstream's
//! heads, or after LIMIT_SECONDS, and prints the catch-up rate (from the
//! follower's own sync status) and the query latencies (p50, p99, max).
//!
//! With `PROBE_CONTROL=1` a second thread asks the upstream the same mix of
//! queries at the same rate meanwhile, and their latencies are printed too:
//! a control, a ledgerd on the same host at the same moment that does no
//! catch-up of its own (the host's share of a slow read).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "support/probe.rs"]
mod probe;

use probe::{call, next_rand, percentile};

/// (synced L2 height, whether both layers are Synced at the given heads).
fn progress(status: &Value, l2_head: u64, l1_head: u64) -> (u64, bool) {
    let l2 = &status["l2Status"];
    let synced = l2["Synced"]
        .as_u64()
        .or_else(|| l2["Syncing"]["syncedBlockNumber"].as_u64())
        .unwrap_or(0);
    let done = l2["Synced"].as_u64() == Some(l2_head)
        && status["l1Status"]["Synced"].as_u64() == Some(l1_head);
    (synced, done)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!(
            "usage: catchup_probe FOLLOWER_URL UPSTREAM_URL [QUERIES_PER_SECOND] [LIMIT_SECONDS]"
        );
        std::process::exit(2);
    }
    let (follower, upstream) = (&args[1], &args[2]);
    let rate: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(200);
    let limit = Duration::from_secs(args.get(4).and_then(|s| s.parse().ok()).unwrap_or(120));
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(2))
        .timeout(Duration::from_secs(10))
        .build();
    let heads = call(
        &agent,
        upstream,
        "ledger_getHeadSoftConfirmationHeight",
        json!([]),
    )
    .and_then(|h| {
        let l1 = call(&agent, upstream, "ledger_getLastScannedL1Height", json!([]))?;
        Ok((h.as_u64().unwrap_or(0), l1.as_u64().unwrap_or(0)))
    });
    let (l2_head, l1_head) = match heads {
        Ok(h) => h,
        Err(e) => {
            eprintln!("the upstream does not answer: {e}");
            std::process::exit(1);
        }
    };

    let gap = Duration::from_micros(1_000_000 / rate.max(1));
    let stop = Arc::new(AtomicBool::new(false));
    let control = std::env::var_os("PROBE_CONTROL").map(|_| {
        let (agent, upstream, stop) = (agent.clone(), upstream.clone(), stop.clone());
        std::thread::spawn(move || control_reads(&agent, &upstream, l2_head, gap, &stop))
    });
    let mut latencies = Vec::new();
    // (latency, method, when asked since the start) of every answered query.
    let mut timed: Vec<(Duration, &str, Duration)> = Vec::new();
    let mut errors = 0u64;
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let start = Instant::now();
    let mut first: Option<(Instant, u64)> = None;
    let mut synced = 0;
    let mut done = false;
    let mut l2_done: Option<Instant> = None;
    let mut failures: Vec<String> = Vec::new();
    // Each L1 scanned height the sync status showed, in order (how it moves).
    let mut l1_seen: Vec<u64> = Vec::new();
    // When the first L1 slot was seen stored: (then, its height).
    let mut l1_first: Option<(Instant, u64)> = None;
    let mut i = 0u64;
    while start.elapsed() < limit {
        // Until a block is stored, only the sync status has an answer.
        let (method, params) = match synced {
            0 => ("svc_syncStatus", json!([])),
            _ => query(i, &mut rng, synced),
        };
        i += 1;
        let asked = Instant::now();
        match call(&agent, follower, method, params) {
            Ok(v) => {
                latencies.push(asked.elapsed());
                timed.push((asked.elapsed(), method, asked - start));
                if method == "svc_syncStatus" {
                    let l1 = &v["l1Status"];
                    if let Some(h) = l1["Synced"]
                        .as_u64()
                        .or_else(|| l1["Syncing"]["syncedBlockNumber"].as_u64())
                    {
                        l1_seen.push(h);
                        if h > 0 {
                            l1_first.get_or_insert((asked, h));
                        }
                    }
                    let (s, d) = progress(&v, l2_head, l1_head);
                    synced = s;
                    first.get_or_insert((asked, s));
                    if s == l2_head && l2_done.is_none() {
                        l2_done = Some(asked);
                    }
                    if d {
                        done = true;
                        break;
                    }
                }
            }
            Err(e) => {
                errors += 1;
                if failures.len() < 3 {
                    failures.push(e);
                }
            }
        }
        if let Some(rest) = gap.checked_sub(asked.elapsed()) {
            std::thread::sleep(rest);
        }
    }
    let end = Instant::now();
    stop.store(true, Ordering::Relaxed);
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    match (done, first) {
        (true, Some((t0, s0))) => {
            let secs = (end - t0).as_secs_f64();
            println!(
                "caught up: L2 {s0} -> {l2_head} and L1 to slot {l1_head} in {secs:.2} s = {:.0} blocks/s",
                (l2_head - s0) as f64 / secs
            );
            if let Some(t) = l2_done {
                let l2_secs = (t - t0).as_secs_f64();
                println!(
                    "  of which L2 {l2_secs:.2} s ({:.0} blocks/s), then the rest of the DA slots {:.2} s",
                    (l2_head - s0) as f64 / l2_secs,
                    (end - t).as_secs_f64()
                );
            }
        }
        _ => println!("NOT caught up within {limit:?}: L2 at {synced} of {l2_head}"),
    }
    println!(
        "queries during catch-up: {} answered ({} failed) at ~{rate}/s: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        latencies.len(),
        errors,
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99)),
        ms(percentile(&latencies, 1.0)),
    );
    if let Some(Ok((mut control, errors))) = control.map(|t| t.join()) {
        control.sort();
        println!(
            "control queries to the upstream meanwhile (it does no catch-up): {} answered ({errors} \
             failed): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            control.len(),
            ms(percentile(&control, 0.5)),
            ms(percentile(&control, 0.99)),
            ms(percentile(&control, 1.0)),
        );
    }
    // How the L1 scanned height moved between two looks at it that saw it
    // move, from the first slot stored on (before it, the height is 0).
    let stored = l1_seen.iter().position(|h| *h > 0).unwrap_or(l1_seen.len());
    let mut steps: Vec<u64> = l1_seen[stored..]
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .filter(|step| *step > 0)
        .collect();
    steps.sort();
    if let (Some(first), Some(last)) = (l1_seen.first(), l1_seen.last()) {
        println!(
            "L1 scanned height: {} looks ({:.0} a second) saw it at {} heights from {first} to \
             {last}; steps between looks that saw it move (after the first slot stored): \
             median {}, largest {}",
            l1_seen.len(),
            l1_seen.len() as f64 / (end - start).as_secs_f64(),
            {
                let mut d = l1_seen.clone();
                d.dedup();
                d.len()
            },
            steps.get(steps.len() / 2).copied().unwrap_or(0),
            steps.last().copied().unwrap_or(0),
        );
    }
    // The scan's own pace: from the first look that saw a slot stored (the
    // connection, the headers and the first blocks behind it) to the end.
    if let (true, Some((t, h))) = (done, l1_first) {
        let secs = (end - t).as_secs_f64();
        println!(
            "L1 scan from the first slot seen stored: {h} -> {l1_head} in {secs:.2} s = {:.0} blocks/s",
            (l1_head - h) as f64 / secs
        );
    }
    timed.sort_by_key(|t| std::cmp::Reverse(t.0));
    let slowest: Vec<String> = timed
        .iter()
        .take(5)
        .map(|(d, m, at)| format!("{:.2} ms {m} at +{:.3} s", ms(*d), at.as_secs_f64()))
        .collect();
    println!("  slowest: {}", slowest.join(", "));
    for e in &failures {
        println!("  a failed query: {e}");
    }
    if !done {
        std::process::exit(1);
    }
}

/// The `i`th query of the mix both loops ask: the sync status, a block at
/// a random height of `1..=stored`, its status.
fn query(i: u64, rng: &mut u64, stored: u64) -> (&'static str, Value) {
    match i % 3 {
        0 => ("svc_syncStatus", json!([])),
        1 => (
            "ledger_getSoftConfirmationByNumber",
            json!([1 + next_rand(rng) % stored.max(1)]),
        ),
        _ => (
            "ledger_getSoftConfirmationStatus",
            json!([1 + *rng % stored.max(1)]),
        ),
    }
}

/// The control's queries: the main loop's mix (sync status, a block, its
/// status) asked of `url` every `gap` until `stop`; their latencies and the
/// count of failed ones.
fn control_reads(
    agent: &ureq::Agent,
    url: &str,
    head: u64,
    gap: Duration,
    stop: &AtomicBool,
) -> (Vec<Duration>, u64) {
    let (mut latencies, mut errors) = (Vec::new(), 0u64);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let (method, params) = query(i, &mut rng, head);
        i += 1;
        let asked = Instant::now();
        match call(agent, url, method, params) {
            Ok(_) => latencies.push(asked.elapsed()),
            Err(_) => errors += 1,
        }
        if let Some(rest) = gap.checked_sub(asked.elapsed()) {
            std::thread::sleep(rest);
        }
    }
    (latencies, errors)
}
