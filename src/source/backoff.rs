//! The one retry schedule after repeated failures: 100 ms, doubling, at
//! most the longest back-off (`SyncConfig::max_backoff`, 5 s by default).
//! The sync thread waits by it between failed passes; upstream failover
//! (`source::upstream::failover`) by it before asking a failed upstream
//! again.

use std::time::Duration;

/// Failures in a row and the wait they earn.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    failures: u32,
    max: Duration,
}

impl Backoff {
    /// The wait after the first failure.
    pub const FIRST: Duration = Duration::from_millis(100);

    /// No failure yet; waits grow up to `max`.
    pub fn new(max: Duration) -> Backoff {
        Backoff { failures: 0, max }
    }

    /// Records one more failure and returns how long to wait before the
    /// next try: 100 ms, 200 ms, 400 ms, ... at most `max`.
    pub fn fail(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        Backoff::FIRST
            .saturating_mul(1 << self.failures.min(16).saturating_sub(1))
            .min(self.max)
    }

    /// A success: the next failure waits the first back-off again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// Failures in a row so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_from_100_ms_up_to_the_longest_and_start_over_after_a_success() {
        let mut b = Backoff::new(Duration::from_millis(500));
        let waits: Vec<u128> = (0..5).map(|_| b.fail().as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 500, 500]);
        b.reset();
        assert_eq!(b.fail(), Backoff::FIRST);
        assert_eq!(b.failures(), 1);
    }
}
