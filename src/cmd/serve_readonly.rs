//! `ledgerd serve-readonly --data-dir DIR`: a server of a ledger another
//! ledgerd process writes, opened read-only, with no chain source
//! ([`crate::replica`] follows the writer's commits). It takes only the
//! flags that apply to serving a stored ledger (the data dir, the server,
//! the answers, operations, logs), none of a chain source's or a chain's
//! rules (the writer holds those), and runs as a node does
//! ([`super::run::run`]).

use super::{Command, FileArgs, ServeArgs};
use crate::config::Config;
use crate::flags::ConfigError;
use crate::ledger::args::DataDirArgs;

/// `ledgerd serve-readonly`: the flags of a server of a stored ledger.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    #[command(flatten)]
    pub ledger: DataDirArgs,
    #[command(flatten)]
    pub serve: ServeArgs,
    #[command(flatten)]
    pub file_args: FileArgs,
}

/// A node with `read_only` set and no chain source.
pub fn resolve(r: Args) -> Result<Command, ConfigError> {
    Ok(Command::Run(Box::new(r.serve.into_config(Config {
        data_dir: r.ledger.data_dir,
        read_only: true,
        ..Config::default()
    }))))
}
