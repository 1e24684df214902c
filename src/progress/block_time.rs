//! The time to verify and store one L2 block, as a histogram for
//! `/metrics` (`ledgerd_sync_block_seconds`).
//!
//! The sync thread verifies and stores blocks a chunk at a time, and makes
//! them durable a write transaction (up to a few hundred blocks) at a time,
//! so a block's own time is not measured alone: each committed transaction
//! adds its blocks, each observed at the transaction's time (verifying and
//! writing its chunks, then the commit and its fsync) divided by its block
//! count. Atomics: the sync thread adds, `/metrics` reads.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds of the buckets, in microseconds.
pub const BUCKETS_US: [u64; 12] = [
    10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 100_000, 1_000_000,
];

/// The histogram (counts per bucket, not cumulative; the last is +Inf).
#[derive(Debug, Default)]
pub struct BlockTimes {
    counts: [AtomicU64; BUCKETS_US.len() + 1],
    sum_ns: AtomicU64,
}

impl BlockTimes {
    /// Adds `blocks` blocks verified and stored in `took` altogether.
    pub fn observe(&self, blocks: u64, took: Duration) {
        if blocks == 0 {
            return;
        }
        let total_ns = took.as_nanos().min(u64::MAX as u128) as u64;
        let each_us = total_ns / blocks / 1000;
        let bucket = BUCKETS_US
            .iter()
            .position(|&b| each_us <= b)
            .unwrap_or(BUCKETS_US.len());
        self.counts[bucket].fetch_add(blocks, Relaxed);
        self.sum_ns.fetch_add(total_ns, Relaxed);
    }

    /// Writes the histogram `name` in the Prometheus text format.
    pub fn write(&self, out: &mut Vec<u8>, name: &str, help: &str) -> std::io::Result<()> {
        let counts = self.counts.iter().map(|c| c.load(Relaxed));
        let sum = self.sum_ns.load(Relaxed) as f64 / 1e9;
        write_histogram(out, name, help, &BUCKETS_US, counts, sum)
    }
}

/// Writes histogram `name` in the Prometheus text format: `counts` per
/// bucket of `bounds_us` (microseconds; not cumulative, the last one +Inf),
/// and `sum`, in seconds.
pub fn write_histogram(
    out: &mut Vec<u8>,
    name: &str,
    help: &str,
    bounds_us: &[u64],
    counts: impl IntoIterator<Item = u64>,
    sum: impl std::fmt::Display,
) -> std::io::Result<()> {
    writeln!(out, "# HELP {name} {help}")?;
    writeln!(out, "# TYPE {name} histogram")?;
    let bounds = bounds_us.iter().map(|&b| (b as f64 / 1e6).to_string());
    let mut cumulative = 0;
    for (le, n) in bounds.chain(["+Inf".to_string()]).zip(counts) {
        cumulative += n;
        writeln!(out, "{name}_bucket{{le=\"{le}\"}} {cumulative}")?;
    }
    writeln!(out, "{name}_sum {sum}")?;
    writeln!(out, "{name}_count {cumulative}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transaction_adds_each_of_its_blocks_at_its_share_of_the_time() {
        let t = BlockTimes::default();
        t.observe(300, Duration::from_millis(60)); // 200 us a block
        t.observe(1, Duration::from_secs(3)); // past the last bound
        t.observe(0, Duration::from_secs(1)); // nothing stored: nothing added
        assert_eq!(t.counts.iter().map(|c| c.load(Relaxed)).sum::<u64>(), 301);
        let mut out = Vec::new();
        t.write(&mut out, "x", "help").unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("x_bucket{le=\"0.0001\"} 0\n"), "{text}");
        assert!(text.contains("x_bucket{le=\"0.00025\"} 300\n"), "{text}");
        assert!(text.contains("x_bucket{le=\"1\"} 300\n"), "{text}");
        assert!(text.contains("x_bucket{le=\"+Inf\"} 301\n"), "{text}");
        assert!(text.contains("x_sum 3.06\n"), "{text}");
        assert!(text.contains("x_count 301\n"), "{text}");
    }
}
