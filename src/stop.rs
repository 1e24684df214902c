//! A stop signal that sleeping threads wake up for.
//!
//! Ctrl-C, SIGTERM and `Node::shutdown` all end in [`Stop::stop`]; the sync
//! thread sleeps with [`Stop::sleep`] so it leaves within milliseconds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Set once, seen by every thread.
#[derive(Debug, Default)]
pub struct Stop {
    stopped: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

impl Stop {
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Asks every thread to stop, and wakes those sleeping.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let _guard = self.lock.lock();
        self.wake.notify_all();
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Sleeps for `d` or until stopped; true when stopped.
    pub fn sleep(&self, d: Duration) -> bool {
        let Ok(guard) = self.lock.lock() else {
            return self.is_stopped();
        };
        if self.is_stopped() {
            return true;
        }
        let _ = self
            .wake
            .wait_timeout_while(guard, d, |_| !self.is_stopped());
        self.is_stopped()
    }
}
