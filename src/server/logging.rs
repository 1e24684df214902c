//! A log filter for one expected tiny_http message.
//!
//! The idle timeout is set as SO_RCVTIMEO on the listening socket (accepted
//! sockets inherit it), so tiny_http's `accept()` also times out after every
//! idle period. tiny_http then logs `Error accepting new client: Resource
//! temporarily unavailable (os error 11)` at error level and its accept
//! thread ends; the server's supervisor starts a new one. That is routine,
//! so [`QuietAcceptTimeouts`] drops exactly that record (an accept that timed
//! out). At a clean stop the server shuts its listening socket down, and
//! tiny_http's last accept() fails with `Invalid argument (os error 22)`:
//! that record is dropped too. Every other tiny_http record, including real
//! accept errors such as running out of file descriptors, passes through
//! unchanged.

use std::fmt::Write;

use log::{Log, Metadata, Record};

/// Wraps a logger and drops tiny_http's "Error accepting new client" records
/// whose cause is a timeout (EAGAIN / EWOULDBLOCK / ETIMEDOUT) or the
/// listening socket shut down at stop (EINVAL).
pub struct QuietAcceptTimeouts<L> {
    inner: L,
}

impl<L: Log> QuietAcceptTimeouts<L> {
    pub fn new(inner: L) -> Self {
        QuietAcceptTimeouts { inner }
    }
}

/// Whether a record is tiny_http reporting an accept() that timed out, or
/// that failed on the listening socket the server shut down at stop.
pub fn is_accept_timeout(record: &Record<'_>) -> bool {
    if !record.target().starts_with("tiny_http") {
        return false;
    }
    let mut text = String::new();
    if write!(text, "{}", record.args()).is_err() {
        return false;
    }
    text.starts_with("Error accepting new client")
        && ["(os error 11)", "(os error 110)", "(os error 22)"]
            .iter()
            .any(|errno| text.contains(errno))
}

impl<L: Log> Log for QuietAcceptTimeouts<L> {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.inner.enabled(metadata)
    }

    fn log(&self, record: &Record<'_>) {
        if self.inner.enabled(record.metadata()) && !is_accept_timeout(record) {
            self.inner.log(record);
        }
    }

    fn flush(&self) {
        self.inner.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Capture(Mutex<Vec<String>>);

    impl Log for Capture {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn log(&self, record: &Record<'_>) {
            if let Ok(mut lines) = self.0.lock() {
                lines.push(format!("{} {}", record.target(), record.args()));
            }
        }
        fn flush(&self) {}
    }

    fn emit(l: &impl Log, target: &str, text: &str) {
        l.log(
            &Record::builder()
                .target(target)
                .level(log::Level::Error)
                .args(format_args!("{text}"))
                .build(),
        );
    }

    #[test]
    fn drops_only_tiny_http_accept_timeouts_and_the_accept_after_stop() {
        let quiet = QuietAcceptTimeouts::new(Capture::default());
        let accept = |target, why| {
            emit(
                &quiet,
                target,
                &format!("Error accepting new client: {why}"),
            );
        };
        accept(
            "tiny_http",
            "Resource temporarily unavailable (os error 11)",
        );
        accept("tiny_http", "Too many open files (os error 24)");
        accept("tiny_http", "Invalid argument (os error 22)");
        emit(&quiet, "tiny_http", "some other tiny_http error");
        accept("ledgerd", "Resource temporarily unavailable (os error 11)");
        let lines = quiet.inner.0.lock().unwrap().clone();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].contains("os error 24"));
        assert!(lines[1].contains("some other"));
        assert!(lines[2].starts_with("ledgerd "));
    }
}
