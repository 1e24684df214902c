//! `--data-dir` (`[ledger]` in a config file): where the LMDB ledger lives,
//! for every command that opens one.

use std::path::PathBuf;

use crate::config::cli::FileArgs;
use crate::config::heading;
use crate::config::values::{number, switch};

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
    #[arg(long, value_parser = switch())]
    pub ephemeral: bool,
}

/// `ledgerd rollback`: take a stopped node's ledger back to an L2 height or
/// a DA slot (`[rollback]` in a config file).
#[derive(clap::Args, Clone, Debug)]
pub struct RollbackCmd {
    /// Keep L2 heights 1..=H, drop the rest and what depends on it
    #[arg(long, value_name = "H", value_parser = number::<u64>, help_heading = heading::ROLLBACK)]
    pub to_l2: Option<u64>,
    /// Keep DA slots up to S, and the L2 blocks that point at them
    #[arg(long, value_name = "S", value_parser = number::<u64>, help_heading = heading::ROLLBACK)]
    pub to_l1: Option<u64>,
    /// Print what would be removed, remove nothing
    #[arg(long, value_parser = switch(), help_heading = heading::ROLLBACK)]
    pub dry_run: bool,
    #[command(flatten)]
    pub ledger: DataDirArgs,
    #[command(flatten)]
    pub file_args: FileArgs,
}
