//! Measures `dev_mine` and the reads answered while it runs (used by
//! `scripts/devnet_mine.sh`).
//!
//! `mine_probe URL [BLOCKS] [CONNECTIONS] [QUERIES_PER_SECOND_EACH]`
//! (defaults: 100000, 4, 200)
//!
//! Opens CONNECTIONS keep-alive connections that each ask a query at a
//! steady rate (a block by number at a random stored height, its status, the
//! head height, in turn), then sends `dev_mine BLOCKS` on another connection
//! and times its answer. Each read is timed from when it was due, not from
//! when it was sent, so a stalled server counts the wait it caused
//! (coordinated omission corrected). Prints the mine's time and the p50,
//! p99 and max of the reads answered while the mine was running, and of
//! those answered in the 2 s before it (the same reads on the same
//! machine without the mine, for comparison).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

#[path = "support/probe.rs"]
mod probe;

use probe::{call, next_rand, percentile};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(url) = args.get(1).cloned() else {
        eprintln!("usage: mine_probe URL [BLOCKS] [CONNECTIONS] [QUERIES_PER_SECOND_EACH]");
        std::process::exit(2);
    };
    let blocks: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let connections: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(4);
    let rate: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(200);
    let agent = || {
        ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(120))
            .max_idle_connections(1)
            .build()
    };
    let start_head = call(
        &agent(),
        &url,
        "ledger_getHeadSoftConfirmationHeight",
        json!([]),
    )
    .and_then(|v| {
        v.as_u64()
            .ok_or_else(|| "head height is not a number".to_string())
    })
    .unwrap_or_else(|e| {
        eprintln!("mine_probe: {e}");
        std::process::exit(1)
    });
    let head = Arc::new(AtomicU64::new(start_head));
    // 0: before the mine, 1: during it, 2: after it.
    let phase = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let gap = Duration::from_micros(1_000_000 / rate.max(1));
    let readers: Vec<_> = (0..connections)
        .map(|c| {
            let (url, head, phase, done) = (url.clone(), head.clone(), phase.clone(), done.clone());
            let agent = agent();
            std::thread::spawn(move || {
                let mut seed = 0x9e37_79b9_7f4a_7c15 ^ (c + 1);
                let (mut before, mut during) = (Vec::new(), Vec::new());
                let mut failed = 0u64;
                let mut due = Instant::now();
                let mut turn = 0u64;
                while !done.load(Ordering::Relaxed) {
                    let now = Instant::now();
                    if now < due {
                        std::thread::sleep(due - now);
                    }
                    let known = head.load(Ordering::Relaxed);
                    let h = 1 + next_rand(&mut seed) % known.max(1);
                    // Nothing stored yet: only the head height can be asked.
                    let kind = if known == 0 { 2 } else { turn % 3 };
                    let answer = match kind {
                        0 => call(
                            &agent,
                            &url,
                            "ledger_getSoftConfirmationByNumber",
                            json!([h]),
                        ),
                        1 => call(&agent, &url, "ledger_getSoftConfirmationStatus", json!([h])),
                        _ => call(
                            &agent,
                            &url,
                            "ledger_getHeadSoftConfirmationHeight",
                            json!([]),
                        ),
                    };
                    let took = due.elapsed();
                    turn += 1;
                    let now_phase = phase.load(Ordering::Relaxed);
                    match answer {
                        Ok(v) => {
                            if let Some(n) = v.as_u64().filter(|_| kind == 2) {
                                head.fetch_max(n, Ordering::Relaxed);
                            }
                        }
                        Err(_) if now_phase == 1 => failed += 1,
                        Err(_) => {}
                    }
                    match now_phase {
                        0 => before.push(took),
                        1 => during.push((took, due)),
                        _ => {}
                    }
                    due += gap;
                }
                (before, during, failed)
            })
        })
        .collect();
    // The same reads without the mine first.
    std::thread::sleep(Duration::from_secs(2));
    phase.store(1, Ordering::Relaxed);
    let t = Instant::now();
    let mined = call(&agent(), &url, "dev_mine", json!([blocks]));
    let took = t.elapsed();
    phase.store(2, Ordering::Relaxed);
    done.store(true, Ordering::Relaxed);
    let (mut before, mut during) = (Vec::new(), Vec::new());
    let mut failed = 0;
    for r in readers {
        let (b, d, f) = r.join().unwrap_or_default();
        before.extend(b);
        during.extend(d);
        failed += f;
    }
    before.sort_unstable();
    // The slowest reads, and when they were due (from the mine's start).
    let mut slowest = during.clone();
    slowest.sort_unstable_by_key(|(took, _)| std::cmp::Reverse(*took));
    slowest.truncate(5);
    let mut during: Vec<Duration> = during.into_iter().map(|(took, _)| took).collect();
    during.sort_unstable();
    match mined {
        Ok(h) => println!(
            "dev_mine {blocks} (head {start_head} -> {h}): answered after {:.2} s ({:.0} blocks/s)",
            took.as_secs_f64(),
            blocks as f64 / took.as_secs_f64()
        ),
        Err(e) => {
            eprintln!("mine_probe: {e}");
            std::process::exit(1);
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let summary = |reads: &[Duration]| {
        format!(
            "p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            ms(percentile(reads, 0.50)),
            ms(percentile(reads, 0.99)),
            ms(reads.last().copied().unwrap_or_default()),
        )
    };
    println!(
        "reads during the mine: {} answered ({failed} failed) on {connections} connections at \
         {rate}/s each: {}",
        during.len(),
        summary(&during)
    );
    println!(
        "reads in the 2 s before it (no mine): {} answered: {}",
        before.len(),
        summary(&before)
    );
    let slow: Vec<String> = slowest
        .iter()
        .map(|(took, due)| {
            let at = due.saturating_duration_since(t).as_secs_f64();
            format!("{:.1} ms at +{at:.2} s", ms(*took))
        })
        .collect();
    println!("slowest reads during the mine: {}", slow.join(", "));
}
