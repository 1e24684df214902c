//! The `process_*` metrics, as Prometheus client libraries export them on
//! Linux (client_golang's process collector: same names, types and units),
//! read from `/proc/self` when `/metrics` is scraped: CPU time, resident
//! and virtual memory, open and allowed file descriptors, start time.
//!
//! Nothing is sampled in between: a scrape reads three small files and
//! lists one directory. Where `/proc` is missing (not Linux) the family is
//! left out rather than written as zeros.

use std::fs;
use std::io::Write;
use std::sync::OnceLock;

/// One reading of the process's figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProcessStats {
    /// User + system CPU time, seconds.
    pub cpu_seconds: f64,
    /// Resident set size (`/proc/self/stat` field 24, in pages), bytes.
    pub resident_bytes: u64,
    /// Virtual memory size (`/proc/self/stat` field 23), bytes.
    pub virtual_bytes: u64,
    /// Open file descriptors (entries of `/proc/self/fd`).
    pub open_fds: u64,
    /// The soft limit of open files (`None`: unlimited).
    pub max_fds: Option<u64>,
    /// The soft limit of the address space (`None`: unlimited).
    pub max_virtual_bytes: Option<u64>,
    /// Unix time the process started, seconds.
    pub start_time_seconds: f64,
}

/// `sysconf(name)`, or `fallback` where the system does not say.
fn sysconf(name: libc::c_int, fallback: u64) -> u64 {
    // SAFETY: sysconf only reads a constant of the system.
    let v = unsafe { libc::sysconf(name) };
    u64::try_from(v).ok().filter(|&v| v > 0).unwrap_or(fallback)
}

/// The boot time (`btime` of `/proc/stat`), read once.
fn boot_time() -> Option<u64> {
    static BOOT: OnceLock<Option<u64>> = OnceLock::new();
    *BOOT.get_or_init(|| {
        fs::read_to_string("/proc/stat")
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("btime ")?.trim().parse().ok())
    })
}

/// A limit of `/proc/self/limits` (soft value), by its name; `Some(None)`
/// when unlimited.
fn limit(limits: &str, name: &str) -> Option<Option<u64>> {
    let rest = limits.lines().find_map(|l| l.strip_prefix(name))?;
    let soft = rest.split_whitespace().next()?;
    if soft == "unlimited" {
        Some(None)
    } else {
        soft.parse().ok().map(Some)
    }
}

/// The fields of `/proc/self/stat` after the command name (the name may
/// hold spaces and parentheses: everything up to the last `)` is skipped).
/// Index 0 is field 3 of proc(5) (`state`).
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let after = &stat[stat.rfind(')')? + 1..];
    Some(after.split_whitespace().collect())
}

impl ProcessStats {
    /// Reads `/proc/self`; `None` where it cannot be read.
    pub fn read() -> Option<ProcessStats> {
        let stat = fs::read_to_string("/proc/self/stat").ok()?;
        let f = stat_fields(&stat)?;
        let num = |field: usize| -> Option<u64> { f.get(field - 3)?.parse().ok() };
        let ticks = sysconf(libc::_SC_CLK_TCK, 100) as f64;
        let limits = fs::read_to_string("/proc/self/limits").unwrap_or_default();
        Some(ProcessStats {
            cpu_seconds: (num(14)? + num(15)?) as f64 / ticks,
            resident_bytes: num(24)? * sysconf(libc::_SC_PAGESIZE, 4096),
            virtual_bytes: num(23)?,
            open_fds: fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64),
            max_fds: limit(&limits, "Max open files").flatten(),
            max_virtual_bytes: limit(&limits, "Max address space").flatten(),
            start_time_seconds: boot_time().unwrap_or(0) as f64 + num(22)? as f64 / ticks,
        })
    }

    /// Writes the family in the Prometheus text format. An unlimited
    /// limit is written as client_golang writes it: the largest u64.
    pub fn write(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
        let unlimited = u64::MAX as f64;
        let lines: [(&str, &str, &str, f64); 7] = [
            (
                "process_cpu_seconds_total",
                "counter",
                "Total user and system CPU time spent in seconds.",
                self.cpu_seconds,
            ),
            (
                "process_open_fds",
                "gauge",
                "Number of open file descriptors.",
                self.open_fds as f64,
            ),
            (
                "process_max_fds",
                "gauge",
                "Maximum number of open file descriptors.",
                self.max_fds.map_or(unlimited, |v| v as f64),
            ),
            (
                "process_virtual_memory_bytes",
                "gauge",
                "Virtual memory size in bytes.",
                self.virtual_bytes as f64,
            ),
            (
                "process_virtual_memory_max_bytes",
                "gauge",
                "Maximum amount of virtual memory available in bytes.",
                self.max_virtual_bytes.map_or(unlimited, |v| v as f64),
            ),
            (
                "process_resident_memory_bytes",
                "gauge",
                "Resident memory size in bytes.",
                self.resident_bytes as f64,
            ),
            (
                "process_start_time_seconds",
                "gauge",
                "Start time of the process since unix epoch in seconds.",
                self.start_time_seconds,
            ),
        ];
        for (name, kind, help, v) in lines {
            writeln!(out, "# HELP {name} {help}")?;
            writeln!(out, "# TYPE {name} {kind}")?;
            writeln!(out, "{name} {}", float(v))?;
        }
        Ok(())
    }
}

/// A value as the text format takes it: integers without a fraction,
/// large ones in exponent form as Go writes them.
fn float(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() >= 1e15 {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_skip_a_command_name_with_spaces_and_parentheses() {
        let stat =
            "4242 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 111 222 13 14 15 16 17 18 999 123456 77 rest";
        let f = stat_fields(stat).unwrap();
        assert_eq!(f[0], "S");
        assert_eq!(f[14 - 3], "111", "utime");
        assert_eq!(f[15 - 3], "222", "stime");
        assert_eq!(f[22 - 3], "999", "starttime");
        assert_eq!(f[23 - 3], "123456", "vsize");
        assert_eq!(f[24 - 3], "77", "rss");
    }

    #[test]
    fn limits_are_read_by_name_and_unlimited_is_none() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1024                 524288               files\n\
                      Max address space         unlimited            unlimited            bytes\n";
        assert_eq!(limit(limits, "Max open files"), Some(Some(1024)));
        assert_eq!(limit(limits, "Max address space"), Some(None));
        assert_eq!(limit(limits, "Max nothing"), None);
    }

    #[test]
    fn this_process_reads_as_running_with_memory_and_open_files() {
        let s = ProcessStats::read().expect("/proc/self on Linux");
        assert!(s.resident_bytes > 1 << 20, "{s:?}");
        assert!(s.virtual_bytes >= s.resident_bytes, "{s:?}");
        assert!(s.open_fds >= 3, "{s:?}");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(
            s.start_time_seconds > now - 86_400.0 * 365.0 && s.start_time_seconds <= now + 1.0,
            "{s:?}"
        );
        let mut out = Vec::new();
        s.write(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("# TYPE process_cpu_seconds_total counter\n"));
        assert!(text.contains(&format!("process_open_fds {}\n", s.open_fds)));
    }

    #[test]
    fn values_are_written_as_go_writes_them() {
        assert_eq!(float(3.0), "3");
        assert_eq!(float(0.25), "0.25");
        assert_eq!(float(u64::MAX as f64), "1.8446744073709552e19");
    }
}
