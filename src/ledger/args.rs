//! `--data-dir` (`[ledger]` in a config file): where the LMDB ledger lives,
//! for every command that opens one.

use std::path::PathBuf;

use crate::config::heading;

/// The data dir unless `--data-dir` says otherwise.
pub const DEFAULT_DATA_DIR: &str = "./ledgerd-data";

#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = heading::LEDGER)]
pub struct DataDirArgs {
    /// Where the LMDB ledger lives
    #[arg(long, value_name = "DIR", default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
}
