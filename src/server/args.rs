//! The server's flags (`[server]` in a config file): where it listens and
//! the transport's limits. Their defaults are [`ServerConfig::default`]'s.

use std::time::Duration;

use super::ServerConfig;
use crate::flags::heading;
use crate::flags::{at_least_one, number, switch};

/// Where a node listens unless `--bind` says otherwise.
pub const DEFAULT_BIND: &str = "127.0.0.1:12346";
pub const DEFAULT_MAX_BODY: usize = 10 * 1024 * 1024;
pub const DEFAULT_MAX_CONNECTIONS: usize = 100;
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 10_000;
pub const DEFAULT_BODY_TIMEOUT_MS: u64 = 5_000;
pub const DEFAULT_WRITE_TIMEOUT_MS: u64 = 10_000;
pub const DEFAULT_MAX_REQUESTS_PER_CONNECTION: u32 = 1000;

#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = heading::SERVER)]
pub struct ServerArgs {
    /// Address to listen on; port 0 takes a free port
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_BIND)]
    pub bind: String,
    /// Largest request body (over it: HTTP 413)
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BODY, value_parser = number::<usize>)]
    pub max_body: usize,
    /// Open connections at once; more get 503
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS, value_parser = number::<usize>)]
    pub max_connections: usize,
    /// Close a connection idle this long
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_IDLE_TIMEOUT_MS, value_parser = number::<u64>)]
    pub idle_timeout_ms: u64,
    /// A request body must arrive within this, else 408
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_BODY_TIMEOUT_MS, value_parser = number::<u64>)]
    pub body_timeout_ms: u64,
    /// Give up writing an answer to a client that does not read
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_WRITE_TIMEOUT_MS, value_parser = number::<u64>)]
    pub write_timeout_ms: u64,
    /// Then close the keep-alive connection
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_REQUESTS_PER_CONNECTION, value_parser = at_least_one::<u32>)]
    pub max_requests_per_connection: u32,
    /// Set SO_REUSEPORT: several servers may bind one port
    #[arg(long, value_parser = switch)]
    pub reuse_port: bool,
}

impl ServerArgs {
    /// The transport limits these flags set.
    pub fn server_config(&self) -> ServerConfig {
        ServerConfig {
            max_body: self.max_body,
            max_connections: self.max_connections,
            idle_timeout: Duration::from_millis(self.idle_timeout_ms),
            body_timeout: Duration::from_millis(self.body_timeout_ms),
            write_timeout: Duration::from_millis(self.write_timeout_ms),
            max_requests_per_connection: self.max_requests_per_connection,
            reuse_port: self.reuse_port,
        }
    }
}
