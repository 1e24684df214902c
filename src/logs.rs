//! How log records reach stderr: env_logger's text lines (the default), or
//! with `--log-format json` one JSON object per line, for a log pipeline
//! (Loki, Vector, journald's JSON export), as Citrea (`JSON_LOGS=1`), reth
//! and op-node offer.
//!
//! ```text
//! {"time":"2026-11-26T19:22:01.123Z","level":"INFO","target":"ledgerd::node","message":"serving ./ledgerd-data on http://127.0.0.1:12346"}
//! ```
//!
//! Both forms log the same records, filtered the same way (`RUST_LOG`,
//! default `info`), and both drop tiny_http's routine accept time-outs
//! ([`crate::server::QuietAcceptTimeouts`]). ledgerd's records carry their
//! facts (a height, an upstream, a reason) in the message's sentence, not
//! as separate key-values, so an object has the four fields. Each line is
//! written with one `write` call, so lines of different threads never
//! interleave.

use std::fmt::Write as _;
use std::io::Write as _;

use log::{Log, Metadata, Record};

use crate::flags::heading;
use crate::server::QuietAcceptTimeouts;
use crate::wire::write::{write_str, Obj};

/// `--log-format` (`[operations]` in a config file), taken by `run`.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = heading::OPERATIONS)]
pub struct LogArgs {
    /// Log lines on stderr as text, or one JSON object a line (time, level, target, message)
    #[arg(long, value_name = "text|json", default_value = "text", value_parser = log_format)]
    pub log_format: LogFormat,
}

/// `--log-format`: env_logger's text lines (the default), or one JSON
/// object per line for a log pipeline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

fn log_format(value: &str) -> Result<LogFormat, String> {
    match value {
        "text" => Ok(LogFormat::Text),
        "json" => Ok(LogFormat::Json),
        other => Err(format!("takes text or json, not {other:?}")),
    }
}

/// Sets the process's logger: text or JSON, `RUST_LOG` (default `info`).
/// Does nothing if a logger is already set.
pub fn init(format: LogFormat) {
    let max = from_env().build().filter();
    let logger: Box<dyn Log> = match format {
        LogFormat::Text => {
            let text = from_env().target(env_logger::Target::Stderr).build();
            Box::new(QuietAcceptTimeouts::new(text))
        }
        LogFormat::Json => Box::new(QuietAcceptTimeouts::new(JsonLogger::from_env())),
    };
    if log::set_boxed_logger(logger).is_ok() {
        log::set_max_level(max);
    }
}

/// env_logger's filter as `RUST_LOG` sets it (default `info`).
fn from_env() -> env_logger::Builder {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
}

/// Writes each record as one JSON object on a line of stderr.
pub struct JsonLogger {
    /// Used only to filter, as the text form does.
    filter: env_logger::Logger,
}

impl JsonLogger {
    /// Filtered by `RUST_LOG` as env_logger reads it (default `info`).
    pub fn from_env() -> JsonLogger {
        JsonLogger {
            filter: from_env().build(),
        }
    }
}

impl Log for JsonLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.filter.enabled(metadata)
    }

    fn log(&self, record: &Record<'_>) {
        if !self.filter.matches(record) {
            return;
        }
        let line = json_line(record, std::time::SystemTime::now());
        // Nowhere to report a failed write to stderr.
        let _ = std::io::stderr().lock().write_all(&line);
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
    }
}

/// One record as a JSON object and a newline (strings escaped as the
/// node's answers escape them).
pub fn json_line(record: &Record<'_>, at: std::time::SystemTime) -> Vec<u8> {
    let mut time = String::new();
    rfc3339_millis(&mut time, at);
    let message = record.args().to_string();
    let mut out = Vec::with_capacity(160);
    Obj::open(&mut out)
        .with("time", |o| write_str(o, &time))
        .with("level", |o| write_str(o, record.level().as_str()))
        .with("target", |o| write_str(o, record.target()))
        .with("message", |o| write_str(o, &message))
        .close();
    out.push(b'\n');
    out
}

/// Appends `at` as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
fn rfc3339_millis(out: &mut String, at: std::time::SystemTime) {
    let d = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let t = crate::clock::Utc::from_unix(d.as_secs());
    let _ = write!(
        out,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year,
        t.month,
        t.day,
        t.hour,
        t.minute,
        t.second,
        d.subsec_millis()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// The time `ms` milliseconds after the epoch as [`rfc3339_millis`] writes it.
    fn at(ms: u64) -> String {
        let mut s = String::new();
        rfc3339_millis(&mut s, UNIX_EPOCH + Duration::from_millis(ms));
        s
    }

    #[test]
    fn times_are_utc_rfc3339_with_milliseconds() {
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        // 2024-02-29 23:59:59.250 UTC: a leap day.
        assert_eq!(at(1_709_251_199_250), "2024-02-29T23:59:59.250Z");
        assert_eq!(at(1_764_184_921_000), "2025-11-26T19:22:01.000Z");
    }

    #[test]
    fn a_record_is_one_json_object_on_one_line() {
        let record = Record::builder()
            .level(log::Level::Warn)
            .target("ledgerd::sync")
            .args(format_args!("a \"quoted\"\nline\twith\u{1} controls and é"))
            .build();
        let line = String::from_utf8(json_line(&record, UNIX_EPOCH)).unwrap();
        assert!(line.ends_with("}\n"));
        assert_eq!(line.matches('\n').count(), 1, "{line}");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["time"], "1970-01-01T00:00:00.000Z");
        assert_eq!(v["level"], "WARN");
        assert_eq!(v["target"], "ledgerd::sync");
        assert_eq!(v["message"], "a \"quoted\"\nline\twith\u{1} controls and é");
        assert_eq!(v.as_object().unwrap().len(), 4, "{v}");
    }
}
