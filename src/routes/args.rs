//! The operations flags (`[operations]` in a config file): when `GET
//! /health` turns 503 ([`crate::health`]), and which browser origin may read
//! answers ([`crate::routes`]).

use crate::flags::heading;
use crate::flags::{at_least_one, number};

pub const DEFAULT_HEALTH_MAX_LAG_S: u64 = 60;
pub const DEFAULT_HEALTH_MAX_BEHIND: u64 = 100;

#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = heading::OPERATIONS)]
pub struct OpsArgs {
    /// GET /health answers 503 once sync has stalled this long
    #[arg(long, value_name = "S", default_value_t = DEFAULT_HEALTH_MAX_LAG_S, value_parser = at_least_one::<u64>)]
    pub health_max_lag_s: u64,
    /// ... or while a follower's L2 head is more than N blocks behind its upstream's
    #[arg(long, value_name = "N", default_value_t = DEFAULT_HEALTH_MAX_BEHIND, value_parser = number::<u64>)]
    pub health_max_behind: u64,
    /// Only this browser origin may read answers [default: any (*)]
    #[arg(long, value_name = "ORIGIN", value_parser = cors_origin)]
    pub cors_origin: Option<String>,
}

impl OpsArgs {
    /// `--cors-origin`; `None`: any origin (`*`).
    pub fn cors_origin(&self) -> Option<String> {
        self.cors_origin.clone().filter(|o| o != "*")
    }
}

/// `*`, or `scheme://host[:port]` as a browser sends it in `Origin`.
fn cors_origin(value: &str) -> Result<String, String> {
    let rest = value
        .strip_prefix("http://")
        .or_else(|| value.strip_prefix("https://"));
    match rest {
        _ if value == "*" => Ok(value.to_string()),
        Some(host) if !host.is_empty() && !host.contains(['/', '?', '#', ' ']) => {
            Ok(value.to_string())
        }
        _ => Err(format!(
            "takes an origin like https://explorer.example or http://127.0.0.1:8080 (scheme and \
             host, no path), or * for any, not {value:?}"
        )),
    }
}
