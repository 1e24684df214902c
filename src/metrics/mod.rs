//! `GET /metrics`: the node's counters in the Prometheus text format
//! (version 0.0.4), written by hand.
//!
//! The per-request counters live in [`Metrics`], owned by the routes on the
//! server's one loop thread: plain integers in fixed arrays indexed by method
//! and outcome, so counting a request costs a few additions, no lock, no
//! allocation. The sync counters ([`Progress`]), the transport's ([`Stats`]),
//! the ledger's size on disk and finality frontier, and the process's own
//! figures ([`crate::process`], the `process_*` family every Prometheus
//! client library exports) are read when `/metrics` is scraped.

mod bitcoin;

use std::fmt::Display;
use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use crate::ledger::{Frontier, FrontierMark, FrontierRead, Ledger};
use crate::progress::block_time::write_histogram;
use crate::progress::Progress;
use crate::rpc::{dev, CallOutcome, Tally, METHOD_NAMES};
use crate::server::Stats;

/// Method label of a name that is not one of ours (client strings are never
/// used as labels: a label per typo would grow without bound).
const UNKNOWN: usize = METHOD_NAMES.len() + dev::NAMES.len();
/// Method label of a request object (or body) that was not a valid request.
const INVALID: usize = UNKNOWN + 1;
const METHOD_LABELS: usize = UNKNOWN + 2;

/// Method labels by index: ours, the `dev_*` ones, [`UNKNOWN`], [`INVALID`].
fn method_labels() -> impl Iterator<Item = &'static str> {
    let ours = METHOD_NAMES.iter().chain(&dev::NAMES).copied();
    ours.chain(["unknown", "invalid_request"])
}

/// Outcome labels: `ok`, `notification`, then JSON-RPC error codes.
const OUTCOMES: [&str; 11] = [
    "ok",
    "notification",
    "-32700",
    "-32600",
    "-32601",
    "-32602",
    "-32603",
    "-32001",
    "-32010",
    "-32007",
    "other_error",
];

/// The error codes with a label of their own, in [`OUTCOMES`]' order after
/// `ok` and `notification`.
const CODES: [i64; 8] = [
    -32700, -32600, -32601, -32602, -32603, -32001, -32010, -32007,
];

fn outcome_index(outcome: CallOutcome) -> usize {
    match outcome {
        CallOutcome::Ok => 0,
        CallOutcome::Notification => 1,
        CallOutcome::Error(code) => CODES
            .iter()
            .position(|&c| c == code)
            .map_or(OUTCOMES.len() - 1, |i| i + 2),
    }
}

fn method_index(method: Option<&str>) -> usize {
    match method {
        None => INVALID,
        Some(m) => METHOD_NAMES
            .iter()
            .chain(dev::NAMES.iter())
            .position(|known| *known == m)
            .unwrap_or(UNKNOWN),
    }
}

/// Upper bounds of the latency histogram's buckets, in microseconds.
const BUCKETS_US: [u64; 12] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 100_000, 250_000, 1_000_000,
];

/// Which kind of HTTP request was answered (the `route` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    Rpc,
    Health,
    Metrics,
    Preflight,
    /// `GET /` from a browser: the status page ([`crate::status_page`]).
    Page,
    /// Anything else: 405, 404, 413.
    Other,
}

const ROUTES: [&str; 6] = ["rpc", "health", "metrics", "preflight", "page", "other"];

/// The loop thread's own counters.
#[derive(Debug, Clone)]
pub struct Metrics {
    calls: [[u64; OUTCOMES.len()]; METHOD_LABELS],
    http: [u64; ROUTES.len()],
    /// Count per bucket (not cumulative; summed when written), the last one is +Inf.
    latency: [u64; BUCKETS_US.len() + 1],
    latency_sum_us: u64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            calls: [[0; OUTCOMES.len()]; METHOD_LABELS],
            http: [0; ROUTES.len()],
            latency: [0; BUCKETS_US.len() + 1],
            latency_sum_us: 0,
        }
    }
}

impl Tally for Metrics {
    #[inline]
    fn call(&mut self, method: Option<&str>, outcome: CallOutcome) {
        self.calls[method_index(method)][outcome_index(outcome)] += 1;
    }
}

impl Metrics {
    /// Counts one answered HTTP request of `route` that took `took` to handle.
    #[inline]
    pub fn request(&mut self, route: Route, took: Duration) {
        self.http[route as usize] += 1;
        if route == Route::Rpc {
            let us = took.as_micros().min(u64::MAX as u128) as u64;
            let bucket = BUCKETS_US
                .iter()
                .position(|&b| us <= b)
                .unwrap_or(BUCKETS_US.len());
            self.latency[bucket] += 1;
            self.latency_sum_us = self.latency_sum_us.saturating_add(us);
        }
    }

    /// Writes every metric in the Prometheus text format.
    pub fn render(&self, progress: &Progress, stats: Option<&Stats>, ledger: &Ledger) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 * 1024);
        // Writes into a Vec cannot fail.
        let _ = self.write(&mut out, progress, stats, ledger);
        out
    }

    fn write(
        &self,
        out: &mut Vec<u8>,
        progress: &Progress,
        stats: Option<&Stats>,
        ledger: &Ledger,
    ) -> std::io::Result<()> {
        header(
            out,
            "ledgerd_rpc_requests_total",
            "counter",
            "JSON-RPC request objects answered (each element of a batch counts), by method and outcome (ok, notification, or the error code)",
        )?;
        for (method, row) in method_labels().zip(&self.calls) {
            for (o, &n) in row.iter().enumerate() {
                if n > 0 {
                    writeln!(
                        out,
                        "ledgerd_rpc_requests_total{{method=\"{method}\",outcome=\"{}\"}} {n}",
                        OUTCOMES[o]
                    )?;
                }
            }
        }

        by_label(
            out,
            "ledgerd_http_requests_total",
            "counter",
            "HTTP requests answered, by route",
            "route",
            ROUTES.into_iter().zip(self.http),
        )?;
        write_histogram(
            out,
            "ledgerd_rpc_request_duration_seconds",
            "Time to answer one JSON-RPC HTTP request on the server loop (parse, ledger reads, writing the JSON), not counting the socket write",
            &BUCKETS_US,
            self.latency,
            seconds(self.latency_sum_us),
        )?;

        header(
            out,
            "ledgerd_sync_head",
            "gauge",
            "Sync heads: the ledger's (synced) and the chain source's (source), for L2 blocks and L1 DA slots",
        )?;
        for (layer, kind, v) in [
            ("l2", "synced", progress.l2_synced.load(Relaxed)),
            ("l2", "source", progress.l2_source_head.load(Relaxed)),
            ("l1", "synced", progress.l1_synced.load(Relaxed)),
            ("l1", "source", progress.l1_source_head.load(Relaxed)),
        ] {
            writeln!(
                out,
                "ledgerd_sync_head{{layer=\"{layer}\",head=\"{kind}\"}} {v}"
            )?;
        }
        gauge(
            out,
            "ledgerd_sync_source_reachable",
            "1 while the last request to the chain source succeeded",
            u64::from(progress.source_reachable.load(Relaxed)),
        )?;
        gauge(
            out,
            "ledgerd_sync_last_block_timestamp_seconds",
            "Unix time the last new block was stored (0: none since start)",
            progress.last_block_unix_ms.load(Relaxed) / 1000,
        )?;
        counter(
            out,
            "ledgerd_sync_blocks_verified_total",
            "L2 blocks verified and stored since start",
            progress.blocks_verified.load(Relaxed),
        )?;
        counter(
            out,
            "ledgerd_sync_blocks_without_bodies_total",
            "Stored blocks accepted without their transaction bodies (--allow-missing-tx-bodies: \
             the upstream withheld them), over the ledger's life",
            progress.blocks_without_bodies.load(Relaxed),
        )?;
        counter(
            out,
            "ledgerd_sync_proofs_on_fake_receipts_total",
            "Stored batch proofs accepted on fake risc0 receipts, which prove nothing (a devnet, \
             or --allow-fake-proofs), over the ledger's life",
            ledger
                .reader()
                .and_then(|r| crate::proof::fake_proofs_stored(&r))
                .unwrap_or(0),
        )?;
        if let Some(rules) = progress.proof_rules.get() {
            gauge(
                out,
                "ledgerd_sync_batch_proof_images_pinned",
                "1 when batch proofs are held to chosen images (--network, the devnet's own, \
                 --batch-proof-image); 0 when each receipt is held to the image it claims",
                u64::from(rules.images_pinned()),
            )?;
            counter(
                out,
                "ledgerd_sync_proofs_on_unpinned_images_total",
                "Stored batch proofs whose receipts were verified against the image they claim, \
                 no image being pinned, over the ledger's life",
                ledger
                    .reader()
                    .and_then(|r| crate::proof::unpinned_proofs_stored(&r))
                    .unwrap_or(0),
            )?;
        }
        counter(
            out,
            "ledgerd_sync_upstream_errors_total",
            "Requests to the chain source that failed since start",
            progress.upstream_errors.load(Relaxed),
        )?;
        if let Some(urls) = progress.upstream_urls.get() {
            let in_use = progress.upstream_in_use.load(Relaxed);
            by_label(
                out,
                "ledgerd_sync_upstream_in_use",
                "gauge",
                "1 for the upstream the follower syncs from now, 0 for its other --upstream URLs",
                "url",
                urls.iter()
                    .enumerate()
                    .map(|(i, url)| (url.as_str(), u64::from(i == in_use))),
            )?;
            let refused = progress.upstreams_refused.lock().map_or(Vec::new(), |r| {
                r.iter().map(|(i, _)| *i).collect::<Vec<usize>>()
            });
            by_label(
                out,
                "ledgerd_sync_upstream_other_chain",
                "gauge",
                "1 for an upstream refused for serving another chain than the data dir's, 0 \
                 otherwise",
                "url",
                urls.iter()
                    .enumerate()
                    .map(|(i, url)| (url.as_str(), u64::from(refused.contains(&i)))),
            )?;
            if let Some(pushback) = progress.upstream_pushback.get() {
                header(
                    out,
                    "ledgerd_sync_upstream_pushback_total",
                    "counter",
                    "HTTP 429 and 503 answers from each upstream since start, by status code \
                     (each waited out as its Retry-After asks, at most 5 minutes)",
                )?;
                for (url, counts) in urls.iter().zip(pushback) {
                    for (code, n) in [(429, &counts.too_many_requests), (503, &counts.unavailable)]
                    {
                        writeln!(
                            out,
                            "ledgerd_sync_upstream_pushback_total{{url=\"{}\",code=\"{code}\"}} {}",
                            label_value(url),
                            n.load(Relaxed)
                        )?;
                    }
                }
            }
            counter(
                out,
                "ledgerd_sync_upstream_switches_total",
                "Times the follower moved to another upstream since start",
                progress.upstream_switches.load(Relaxed),
            )?;
        }
        bitcoin::write(out, &progress.bitcoin)?;
        let f = &progress.failures;
        let failures = [
            ("prev_hash", &f.prev_hash),
            ("hash", &f.hash),
            ("signature", &f.signature),
            ("pub_key", &f.pub_key),
            ("merkle_root", &f.merkle_root),
            ("proof", &f.proof),
            ("receipt", &f.receipt),
            ("da_slot", &f.da_slot),
            ("other", &f.other),
        ];
        by_label(
            out,
            "ledgerd_sync_verification_failures_total",
            "counter",
            "What the source sent that failed verification, by the check that failed",
            "check",
            failures.map(|(check, v)| (check, v.load(Relaxed))),
        )?;
        gauge(
            out,
            "ledgerd_ledger_size_bytes",
            "Size of the LMDB data file (data.mdb) on disk",
            ledger.disk_size(),
        )?;
        write_frontier(out, ledger)?;
        progress.block_time.write(
            out,
            "ledgerd_sync_block_seconds",
            "Time the sync thread takes to verify and durably store one L2 block (each write \
             transaction's time, its commit included, shared among its blocks; signatures an \
             upstream's fetch threads checked ahead are not in it)",
        )?;
        header(
            out,
            "ledgerd_build_info",
            "gauge",
            "Always 1; the labels say which ledgerd this is",
        )?;
        writeln!(
            out,
            "ledgerd_build_info{{version=\"{}\",layout=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION"),
            crate::ledger::LAYOUT_VERSION,
        )?;
        if let Some(p) = crate::process::ProcessStats::read() {
            p.write(out)?;
        }
        if let Some(stats) = stats {
            gauge(
                out,
                "ledgerd_http_open_connections",
                "Open client connections (counted at most 500 ms ago)",
                stats.open_connections.load(Relaxed) as u64,
            )?;
            counter(
                out,
                "ledgerd_http_requests_received_total",
                "HTTP requests received by the transport, including rejected ones",
                stats.requests.load(Relaxed),
            )?;
            counter(
                out,
                "ledgerd_http_pool_kicks_total",
                "Throw-away connections opened so that a connection stranded in tiny_http's pool queue gets a worker",
                stats.pool_kicks.load(Relaxed),
            )?;
        }
        Ok(())
    }
}

/// The finality frontier ([`crate::ledger::frontier`]): its heights, and
/// the DA slot and time of the commitment and the proof that last moved it.
/// Left out when the ledger cannot be read (`/health` says why).
fn write_frontier(out: &mut Vec<u8>, ledger: &Ledger) -> std::io::Result<()> {
    let Ok(marks) = ledger.reader().and_then(|r| {
        Ok([
            (Frontier::Committed, r.frontier(Frontier::Committed)?),
            (Frontier::Proven, r.frontier(Frontier::Proven)?),
        ])
    }) else {
        return Ok(());
    };
    type Field = fn(&FrontierMark) -> u64;
    let families: [(&str, &str, Field); 3] = [
        (
            "ledgerd_l2_height",
            "Highest L2 height a stored sequencer commitment covers (finalized) and a verified \
             batch proof covers (proven); 0 before the first",
            |m| m.l2_height,
        ),
        (
            "ledgerd_frontier_l1_height",
            "DA slot (L1 height) of the commitment (finalized) and the proof (proven) that last \
             moved the frontier up; 0 before the first",
            |m| m.l1_height,
        ),
        (
            "ledgerd_frontier_timestamp_seconds",
            "Unix time this node stored the commitment (finalized) and the proof (proven) that \
             last moved the frontier up; 0 before the first",
            |m| m.stored_unix_s,
        ),
    ];
    for (name, help, field) in families {
        header(out, name, "gauge", help)?;
        for (which, mark) in &marks {
            let value = mark.as_ref().map_or(0, field);
            writeln!(out, "{name}{{status=\"{}\"}} {value}", which.name())?;
        }
    }
    Ok(())
}

/// A gauge with one value.
fn gauge(out: &mut Vec<u8>, name: &str, help: &str, v: impl Display) -> std::io::Result<()> {
    header(out, name, "gauge", help)?;
    writeln!(out, "{name} {v}")
}

/// A counter with one value.
fn counter(out: &mut Vec<u8>, name: &str, help: &str, v: u64) -> std::io::Result<()> {
    header(out, name, "counter", help)?;
    writeln!(out, "{name} {v}")
}

/// A metric of `kind` with one value per value of `label`.
fn by_label<'a>(
    out: &mut Vec<u8>,
    name: &str,
    kind: &str,
    help: &str,
    label: &str,
    values: impl IntoIterator<Item = (&'a str, u64)>,
) -> std::io::Result<()> {
    header(out, name, kind, help)?;
    for (value, n) in values {
        writeln!(out, "{name}{{{label}=\"{}\"}} {n}", label_value(value))?;
    }
    Ok(())
}

fn header(out: &mut Vec<u8>, name: &str, kind: &str, help: &str) -> std::io::Result<()> {
    writeln!(out, "# HELP {name} {help}")?;
    writeln!(out, "# TYPE {name} {kind}")
}

/// `text` as a label value: backslash, double quote and newline escaped.
fn label_value(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Microseconds as a decimal number of seconds.
fn seconds(us: u64) -> String {
    let s = format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    let s = s.trim_end_matches('0');
    s.strip_suffix('.').unwrap_or(s).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label_value(r#"http://a/"b"\c"#), r#"http://a/\"b\"\\c"#);
    }

    #[test]
    fn seconds_are_written_without_trailing_zeros() {
        assert_eq!(seconds(50), "0.00005");
        assert_eq!(seconds(1_000_000), "1");
        assert_eq!(seconds(2_500), "0.0025");
        assert_eq!(seconds(0), "0");
    }

    #[test]
    fn unknown_names_share_one_label_and_latency_falls_in_its_bucket() {
        let mut m = Metrics::default();
        m.call(Some("ledger_nope"), CallOutcome::Error(-32601));
        m.call(Some("something_else"), CallOutcome::Error(-32601));
        m.call(Some("svc_syncStatus"), CallOutcome::Ok);
        m.call(None, CallOutcome::Error(-32700));
        assert_eq!(m.calls[UNKNOWN][4], 2);
        assert_eq!(
            m.calls[method_index(Some("svc_syncStatus"))][outcome_index(CallOutcome::Ok)],
            1
        );
        assert_eq!(m.calls[INVALID][2], 1);
        m.request(Route::Rpc, Duration::from_micros(300));
        m.request(Route::Rpc, Duration::from_secs(5));
        m.request(Route::Health, Duration::from_secs(5));
        assert_eq!(m.latency[3], 1, "300 us is in the 500 us bucket");
        assert_eq!(m.latency[BUCKETS_US.len()], 1, "5 s is only in +Inf");
        assert_eq!(m.latency.iter().sum::<u64>(), 2, "health is not timed");
        assert_eq!(m.http, [2, 1, 0, 0, 0, 0]);
        for (i, code) in CODES.iter().enumerate() {
            assert_eq!(OUTCOMES[i + 2], code.to_string());
        }
    }
}
