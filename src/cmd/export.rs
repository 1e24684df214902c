//! `ledgerd export`: heights A..=B of a data dir as a fixture on stdout,
//! from one read snapshot ([`crate::jsonl::export`]); it opens the ledger
//! read-only, so it runs beside a writing node.

use std::path::PathBuf;
use std::process::ExitCode;

use super::FileArgs;
use crate::flags::{heading, number, ConfigError};
use crate::ledger::args::DataDirArgs;

/// `ledgerd export`: heights A..=B as a fixture on stdout.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// The first height to write
    #[arg(long, value_name = "A", default_value_t = 1, value_parser = number::<u64>, help_heading = heading::FIXTURES)]
    pub from: u64,
    /// The last height to write [default: the head]
    #[arg(long, value_name = "B", value_parser = number::<u64>, help_heading = heading::FIXTURES)]
    pub to: Option<u64>,
    #[command(flatten)]
    pub ledger: DataDirArgs,
    #[command(flatten)]
    pub file_args: FileArgs,
}

/// `ledgerd export [--from A] [--to B] [--data-dir DIR]`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Export {
    pub data_dir: PathBuf,
    pub from: u64,
    /// Default: the head.
    pub to: Option<u64>,
}

pub fn resolve(x: Args) -> Result<Export, ConfigError> {
    if let Some(to) = x.to.filter(|to| x.from > *to) {
        return Err(ConfigError(format!(
            "--from {} is above --to {to}: export takes heights from A up to B",
            x.from
        )));
    }
    Ok(Export {
        data_dir: x.ledger.data_dir,
        from: x.from,
        to: x.to,
    })
}

impl Export {
    /// Writes the fixture on stdout.
    pub fn run(&self) -> ExitCode {
        use crate::ledger::{Ledger, OpenOptions};
        let open = OpenOptions {
            read_only: true,
            ..OpenOptions::default()
        };
        let ledger = match Ledger::open(&self.data_dir, &open) {
            Ok(l) => l,
            Err(e) => return super::fail("export", e),
        };
        let mut out = std::io::stdout().lock();
        match crate::jsonl::export(&ledger, self.from, self.to, &mut out) {
            Ok(r) => {
                log::info!(
                    "exported heights {}..={}: {} records",
                    r.from,
                    r.to,
                    r.records
                );
                ExitCode::SUCCESS
            }
            Err(e) => super::fail("export", e),
        }
    }
}
