//! `ledgerd serve-readonly --data-dir DIR`: a server of a ledger another
//! ledgerd process writes, opened read-only, with no chain source
//! ([`crate::replica`] follows the writer's commits). It takes `run`'s
//! flags and runs as a node does ([`super::run::run`]).

use super::{run, Command};
use crate::config::Given;
use crate::flags::ConfigError;

pub fn resolve(r: run::Args, given: &Given) -> Result<Command, ConfigError> {
    run::resolve(r, true, given)
}
