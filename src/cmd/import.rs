//! `ledgerd import FILE`: a fixture (JSON Lines, `ledgerd export`'s form)
//! loaded into a data dir, all of it or nothing ([`crate::jsonl::import`]).

use std::path::PathBuf;
use std::process::ExitCode;

use super::{input_file, FileArgs};
use crate::chain_rules::args::ChainRulesArgs;
use crate::flags::{heading, switch, ConfigError};
use crate::jsonl::ImportOptions;
use crate::ledger::args::DataDirArgs;
use crate::proof::args::ProofArgs;

/// `ledgerd import FILE.jsonl`: load a fixture (`-` reads stdin).
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// One JSON record per line; - reads stdin
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Store records without the chain-rule checks
    #[arg(long, value_parser = switch, help_heading = heading::FIXTURES)]
    pub no_verify: bool,
    #[command(flatten)]
    pub ledger: DataDirArgs,
    #[command(flatten)]
    pub chain: ChainRulesArgs,
    #[command(flatten)]
    pub proof: ProofArgs,
    #[command(flatten)]
    pub file_args: FileArgs,
}

/// `ledgerd import FILE.jsonl [--data-dir DIR] [--no-verify]`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    /// The fixture; `-` reads stdin.
    pub file: PathBuf,
    pub data_dir: PathBuf,
    /// `--no-verify`, `--network`, `--kumquat-height`, `--sequencer-pubkey`,
    /// `--allow-fake-proofs`.
    pub options: ImportOptions,
}

pub fn resolve(i: Args) -> Result<Import, ConfigError> {
    Ok(Import {
        file: input_file(
            i.file,
            "import needs a FILE (one JSON record per line; `-` reads stdin)",
        )?,
        data_dir: i.ledger.data_dir,
        options: ImportOptions {
            verify: !i.no_verify,
            forks: i.chain.forks(),
            sequencer_pubkey: i.chain.sequencer_key(),
            receipts: i
                .proof
                .receipt_rules(i.chain.network, false)
                .map_err(ConfigError)?,
        },
    })
}

impl Import {
    /// Loads the file: all of it or nothing; exit 1 with the bad lines.
    pub fn run(&self) -> ExitCode {
        use crate::ledger::{Ledger, OpenOptions};
        let name = self.file.display().to_string();
        let input: Box<dyn std::io::BufRead> = if name == "-" {
            Box::new(std::io::stdin().lock())
        } else {
            match std::fs::File::open(&self.file) {
                Ok(f) => Box::new(std::io::BufReader::new(f)),
                Err(e) => return super::fail("import", format_args!("cannot open {name}: {e}")),
            }
        };
        let ledger = match Ledger::open(&self.data_dir, &OpenOptions::default()) {
            Ok(l) => l,
            Err(e) => return super::fail("import", e),
        };
        let options = self.options;
        match crate::jsonl::import(&ledger, input, options) {
            Ok(report) => {
                println!("{report} in {}", self.data_dir.display());
                if options.verify && report.proofs > 0 && !options.receipts.images_pinned() {
                    eprintln!(
                    "ledgerd import: note: batch-proof images are not pinned (no --network, no \
                     {flag}): the {} proofs were verified against the images their receipts \
                     claim; pin them with {flag} FORK=HEX",
                    report.proofs,
                    flag = crate::proof::image_ids::BATCH_PROOF_IMAGE
                );
                }
                ExitCode::SUCCESS
            }
            Err(e) => super::fail("import", format_args!("{name}: {e}")),
        }
    }
}
