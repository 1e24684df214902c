//! Dates from Unix time, for the log lines (RFC 3339) and HTTP headers
//! (`Date`): the standard library has no calendar.

/// A Unix time in seconds as its UTC date and time of day.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Utc {
    pub year: i64,
    /// 1 to 12.
    pub month: u32,
    /// 1 to 31.
    pub day: u32,
    pub hour: u64,
    pub minute: u64,
    pub second: u64,
    /// 0 (Sunday) to 6.
    pub weekday: usize,
}

impl Utc {
    /// Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    pub fn from_unix(secs: u64) -> Utc {
        let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        Utc {
            year: yoe + era * 400 + i64::from(month <= 2),
            month,
            day,
            hour: rem / 3600,
            minute: rem / 60 % 60,
            second: rem % 60,
            // 1970-01-01 was a Thursday.
            weekday: ((days + 4) % 7) as usize,
        }
    }
}
