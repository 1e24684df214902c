//! `ledgerd serve-readonly --data-dir DIR`: a server of a ledger another
//! ledgerd process writes, opened read-only, with no chain source
//! ([`crate::replica`] follows the writer's commits). It takes only the
//! flags that apply to serving a stored ledger (the data dir, the server,
//! the answers, operations, logs), none of a chain source's or a chain's
//! rules (the writer holds those), and runs as a node does
//! ([`super::run::run`]).

use super::{Command, FileArgs};
use crate::config::Config;
use crate::flags::ConfigError;
use crate::ledger::args::DataDirArgs;
use crate::routes::args::OpsArgs;
use crate::rpc::args::RpcArgs;
use crate::server::args::ServerArgs;
use std::time::Duration;

/// `ledgerd serve-readonly`: the flags of a server of a stored ledger.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    #[command(flatten)]
    pub ledger: DataDirArgs,
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(flatten)]
    pub rpc: RpcArgs,
    #[command(flatten)]
    pub ops: OpsArgs,
    #[command(flatten)]
    pub logs: crate::logs::LogArgs,
    #[command(flatten)]
    pub file_args: FileArgs,
}

/// A node with `read_only` set and no chain source.
pub fn resolve(r: Args) -> Result<Command, ConfigError> {
    Ok(Command::Run(Box::new(Config {
        bind: r.server.bind.clone(),
        data_dir: r.ledger.data_dir,
        wire: r.rpc.wire,
        max_range: r.rpc.max_range,
        max_batch: r.rpc.max_batch,
        server: r.server.server_config(),
        health_max_lag: Duration::from_secs(r.ops.health_max_lag_s),
        health_max_behind: r.ops.health_max_behind,
        cors_origin: r.ops.cors_origin(),
        read_only: true,
        log_format: r.logs.log_format,
        ..Config::default()
    })))
}
