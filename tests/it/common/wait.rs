//! Waiting for something to become true, with a limit: the one deadline loop
//! of the tests. A wait that runs out panics with what it waited for and the
//! last value it saw, so a failure says how far things got.

use std::fmt::Debug;
use std::time::{Duration, Instant};

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(20);

/// Reads `probe()` every 20 ms until `done` holds for the value, at most
/// `limit`, and returns that value; panics with `what` and the last value
/// read when it runs out.
pub fn wait_until_value<T: Debug>(
    limit: Duration,
    what: &str,
    probe: impl FnMut() -> T,
    done: impl Fn(&T) -> bool,
) -> T {
    poll_until(limit, probe, done)
        .unwrap_or_else(|last| panic!("waited {limit:?} for {what}; last seen: {last:?}"))
}

/// Waits until `held()` is true (looking every 20 ms), at most `limit`;
/// panics with `what` when it runs out.
pub fn wait_until(limit: Duration, what: &str, held: impl FnMut() -> bool) {
    wait_until_value(limit, what, held, |held| *held);
}

/// [`wait_until_value`] that does not panic: `Ok(value)` once `done` holds,
/// `Err(last value)` when `limit` runs out first (for a caller that asserts
/// on the value itself, or adds its own context).
pub fn poll_until<T>(
    limit: Duration,
    mut probe: impl FnMut() -> T,
    done: impl Fn(&T) -> bool,
) -> Result<T, T> {
    let start = Instant::now();
    loop {
        let value = probe();
        if done(&value) {
            return Ok(value);
        }
        if start.elapsed() >= limit {
            return Err(value);
        }
        std::thread::sleep(POLL);
    }
}
