//! `--data-dir` (`[ledger]` in a config file): where the LMDB ledger lives,
//! for every command that opens one.

use std::path::PathBuf;

use crate::flags::heading;
use crate::flags::switch;

/// The data dir unless `--data-dir` says otherwise.
pub const DEFAULT_DATA_DIR: &str = "./ledgerd-data";

#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = heading::LEDGER)]
pub struct DataDirArgs {
    /// Where the LMDB ledger lives
    #[arg(long, value_name = "DIR", default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
}

/// `--ephemeral` (`[ledger]` in a config file), taken by `run` only.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = heading::LEDGER)]
pub struct EphemeralArgs {
    /// Run on a new temporary data dir, removed when the node stops (for test harnesses: --dev --ephemeral starts a fresh chain every time); instead of --data-dir
    #[arg(long, value_parser = switch)]
    pub ephemeral: bool,
}
