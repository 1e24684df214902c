//! `ledgerd config [FLAGS]` (and `--print-config` on any command): the
//! configuration `run` would use, as TOML, each value with where it came
//! from. It takes `run`'s flags, and `--convert OLD`: a file of the older
//! `key = value` form read as it always was, to print it as TOML (a file
//! given with `--config` must be TOML). The printing is the
//! configuration's own ([`crate::config::print`]), done while the command
//! line is parsed, where the flags' sources are known, and
//! [`super::Command::PrintConfig`] carries the text.

use std::path::PathBuf;

use crate::flags::heading;

/// `ledgerd config`: `run`'s flags and `--convert`.
#[derive(clap::Args, Clone, Debug)]
#[group(skip)]
pub struct Args {
    #[command(flatten)]
    pub run: super::run::Args,
    /// Read OLD, a config file of the older `key = value` form, and print it as TOML (instead of --config)
    #[arg(long, value_name = "OLD", help_heading = heading::CONFIGURATION)]
    pub convert: Option<PathBuf>,
}
