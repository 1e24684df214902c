//! `ledgerd rollback --data-dir DIR (--to-l2 H | --to-l1 S) [--dry-run]`: a
//! stopped node's ledger taken back, in one transaction
//! ([`crate::rollback`]).

use std::path::PathBuf;
use std::process::ExitCode;

use super::FileArgs;
use crate::config::Given;
use crate::flags::{heading, number, switch, ConfigError};
use crate::ledger::args::DataDirArgs;
use crate::rollback::Target;

/// `ledgerd rollback`: take a stopped node's ledger back to an L2 height or
/// a DA slot (`[rollback]` in a config file).
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Keep L2 heights 1..=H, drop the rest and what depends on it
    #[arg(long, value_name = "H", value_parser = number::<u64>, help_heading = heading::ROLLBACK)]
    pub to_l2: Option<u64>,
    /// Keep DA slots up to S, and the L2 blocks that point at them
    #[arg(long, value_name = "S", value_parser = number::<u64>, help_heading = heading::ROLLBACK)]
    pub to_l1: Option<u64>,
    /// Print what would be removed, remove nothing
    #[arg(long, value_parser = switch, help_heading = heading::ROLLBACK)]
    pub dry_run: bool,
    #[command(flatten)]
    pub ledger: DataDirArgs,
    #[command(flatten)]
    pub file_args: FileArgs,
}

/// The rollback asked for, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rollback {
    pub data_dir: PathBuf,
    /// Where the ledger goes back to: `--to-l2 H` or `--to-l1 S`.
    pub to: Target,
    /// `--dry-run`: print what would be removed, remove nothing.
    pub dry_run: bool,
}

pub fn resolve(r: Args, given: &Given) -> Result<Rollback, ConfigError> {
    let to = match (r.to_l2, r.to_l1) {
        (Some(h), None) => Target::L2(h),
        (None, Some(s)) => Target::L1(s),
        (Some(_), Some(_)) => {
            return Err(ConfigError(
                "rollback takes one target: --to-l2 H (an L2 height) or --to-l1 S (a DA \
                 slot), not both"
                    .into(),
            ))
        }
        (None, None) => {
            return Err(ConfigError(
                "rollback needs a target: --to-l2 H keeps L2 heights up to H, --to-l1 S \
                 keeps DA slots up to S"
                    .into(),
            ))
        }
    };
    if !given.contains("data-dir") {
        return Err(ConfigError(
            "rollback needs --data-dir DIR: the data dir of the stopped node to take back".into(),
        ));
    }
    Ok(Rollback {
        data_dir: r.ledger.data_dir,
        to,
        dry_run: r.dry_run,
    })
}

impl Rollback {
    /// The report on stdout; exit 1 with a sentence when refused (a
    /// running node) or failed (nothing written).
    pub fn run(&self) -> ExitCode {
        match crate::rollback::run(&self.data_dir, self.to, self.dry_run) {
            Ok(report) => {
                println!("{report}");
                ExitCode::SUCCESS
            }
            Err(e) => super::fail("rollback", e),
        }
    }
}
