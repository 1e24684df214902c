//! `ledgerd verify-headers FILE`: Bitcoin headers (raw 80-byte headers back
//! to back, or hex lines) checked by Bitcoin Core's rules
//! ([`crate::headers::file`]), offline.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{input_file, FileArgs};
use crate::flags::{heading, number, ConfigError};
use crate::headers::BitcoinNetwork;

/// `ledgerd verify-headers FILE`: Bitcoin headers checked by Core's rules.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Raw 80-byte headers back to back, or hex, one header per line; - reads stdin
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The height of the file's first header [default: 0, the chain's genesis]
    #[arg(long, value_name = "H", value_parser = number::<u64>, help_heading = heading::HEADERS)]
    pub start_height: Option<u64>,
    // Not `headers::args::BitcoinNetworkArgs`: verify-headers takes no
    // `--network`, so its help names its own default, not the one
    // `--network` reads.
    /// The Bitcoin network of the headers (main, testnet4, signet or regtest): its genesis and header rules [default: regtest]
    #[arg(long, value_name = "CHAIN", value_parser = crate::headers::args::chain, help_heading = heading::BITCOIN)]
    pub bitcoin_chain: Option<BitcoinNetwork>,
    #[command(flatten)]
    pub file_args: FileArgs,
}

/// `ledgerd verify-headers [--bitcoin-chain C] [--start-height H] FILE`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyHeaders {
    /// Raw 80-byte headers or hex lines; `-` reads stdin.
    pub file: PathBuf,
    /// `--bitcoin-chain` (regtest when not given).
    pub chain: BitcoinNetwork,
    /// `--start-height`: the first header's height (`None`: genesis).
    pub start_height: Option<u64>,
}

pub fn resolve(v: Args) -> Result<VerifyHeaders, ConfigError> {
    Ok(VerifyHeaders {
        file: input_file(
            v.file,
            "verify-headers needs a FILE of Bitcoin headers: raw 80-byte headers back to back, \
             or hex, one header per line (`-` reads stdin)",
        )?,
        chain: v.bitcoin_chain.unwrap_or(BitcoinNetwork::Regtest),
        start_height: v.start_height,
    })
}

impl VerifyHeaders {
    /// The report on stdout; exit 0 only when every check made passed, 1
    /// when a header failed one, 2 when the input cannot be read.
    pub fn run(&self) -> ExitCode {
        use crate::headers::{file, unix_now};
        let bytes = match super::read_input("verify-headers", &self.file) {
            Ok(b) => b,
            Err(code) => return code,
        };
        let started = std::time::Instant::now();
        let outcome =
            file::verify_bytes(&bytes, self.chain, self.start_height, unix_now()).map(|outcome| {
                let secs = started.elapsed().as_secs_f64();
                println!("{outcome}");
                let count = outcome.verifier.count();
                let rate = count as f64 / secs.max(1e-9);
                (
                    outcome.passed(),
                    format!("{count} headers in {secs:.3} s ({rate:.0} headers/s)"),
                )
            });
        super::check_exit("verify-headers", &self.file, outcome)
    }
}
