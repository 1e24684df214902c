//! The commands: one file each, holding its flags (a `clap::Args` struct
//! of the subsystems' flag structs, flattened), the checks of those flags
//! against each other, and the call into the library that does the work.
//! `main` parses ([`parse_with_warnings`]) and runs what it got
//! ([`Command::execute`]).
//!
//! | command | file |
//! |---|---|
//! | `ledgerd [run]` | [`run`] |
//! | `ledgerd serve-readonly` | [`serve_readonly`] |
//! | `ledgerd import` / `export` | [`import`], [`export`] |
//! | `ledgerd verify` / `verify-proof` / `verify-headers` | [`verify`], [`verify_proof`], [`verify_headers`] |
//! | `ledgerd rollback` | [`rollback`] |
//! | `ledgerd config` | [`config`](mod@config) |
//!
//! How a flag becomes a variable and a config-file key, and how the three
//! are read: [`crate::config`].
//!
//! # Adding a command
//!
//! A file here with its `Args` (`#[derive(clap::Args)]`, the flag structs it
//! takes flattened, with [`FileArgs`]), its resolved form and a `run`; a
//! variant of [`Sub`] and of [`Command`]; its arm in `finish` and in
//! [`Command::execute`].

pub mod config;
pub mod export;
pub mod import;
pub mod rollback;
pub mod run;
pub mod serve_readonly;
pub mod verify;
pub mod verify_headers;
pub mod verify_proof;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use crate::config::{parse_flags, Given, Parsed};
use crate::flags::{heading, ConfigError};
use crate::stop::Stop;

const AFTER_HELP: &str = "\
Every flag can also be set by the environment (LEDGERD_ and the flag in upper snake case:
LEDGERD_DATA_DIR) or a TOML config file (--config FILE: keys are the flags without --, at the
top or under their heading's section, [server], [bitcoin], ...); the command line wins over
the environment, the environment over the file. `ledgerd config` prints what is in effect.

Every batch proof's bytes must be a risc0 receipt of the network's batch-proof image whose
journal is its proofOutput. A data dir keeps the fork table it was started with and refuses
another.

The first line on stdout is `listening on http://HOST:PORT`; logs go to stderr
(RUST_LOG=debug logs every request). Ctrl-C or SIGTERM stops it cleanly.";

/// `ledgerd [COMMAND] [FLAGS]`: no command is `run`.
#[derive(clap::Parser, Debug)]
#[command(
    name = "ledgerd",
    version,
    about = "ledgerd: a ledger JSON-RPC full node for a Bitcoin ZK rollup",
    args_conflicts_with_subcommands = true,
    after_help = AFTER_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Sub>,
    #[command(flatten)]
    pub run: Box<run::Args>,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    /// Run a node (the default: `ledgerd [FLAGS]` is `ledgerd run [FLAGS]`)
    Run(Box<run::Args>),
    /// Serve a ledger another ledgerd writes (--data-dir DIR), read-only
    ServeReadonly(Box<serve_readonly::Args>),
    /// Load a fixture (- reads stdin)
    Import(import::Args),
    /// Write heights A..=B as a fixture to stdout
    Export(export::Args),
    /// Check soft confirmations (RPC answers; - reads stdin): hashes, signatures, links
    Verify(verify::Args),
    /// Check batch proofs (RPC answers or raw receipt bytes): journal, receipt, image
    VerifyProof(verify_proof::Args),
    /// Check Bitcoin headers (raw 80-byte or hex lines) by Bitcoin Core's rules
    VerifyHeaders(verify_headers::Args),
    /// Take a stopped node's ledger (--data-dir DIR) back to L2 height H or DA slot S, in one transaction
    Rollback(rollback::Args),
    /// Print run's effective configuration as TOML, each value with where it came from (--print-config does it for any command)
    Config(Box<config::Args>),
}

/// The flags of a server of a ledger (`run` and `serve-readonly` both take them):
/// where it listens, the answers, operations, logs.
#[derive(clap::Args, Clone, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    pub server: crate::server::args::ServerArgs,
    #[command(flatten)]
    pub rpc: crate::rpc::args::RpcArgs,
    #[command(flatten)]
    pub ops: crate::routes::args::OpsArgs,
    #[command(flatten)]
    pub logs: crate::logs::LogArgs,
}

impl ServeArgs {
    /// `config` with the serving settings these flags give.
    pub fn into_config(self, config: crate::config::Config) -> crate::config::Config {
        crate::config::Config {
            bind: self.server.bind.clone(),
            wire: self.rpc.wire,
            max_range: self.rpc.max_range,
            max_batch: self.rpc.max_batch,
            server: self.server.server_config(),
            health_max_lag: std::time::Duration::from_secs(self.ops.health_max_lag_s),
            health_max_behind: self.ops.health_max_behind,
            cors_origin: self.ops.cors_origin(),
            log_format: self.logs.log_format,
            ..config
        }
    }
}

/// The configuration's own flags, on every command.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = heading::CONFIGURATION)]
pub struct FileArgs {
    /// Read settings from this TOML file; the environment and the command line override it
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print the effective configuration as TOML, each value with its source, and exit
    #[arg(long)]
    pub print_config: bool,
}

/// What the command line asks for, its flags checked.
#[derive(Debug)]
pub enum Command {
    /// Run a node; `serve-readonly` is a run with `read_only` set.
    Run(Box<crate::config::Config>),
    Import(import::Import),
    Export(export::Export),
    Verify(verify::Verify),
    VerifyProof(verify_proof::VerifyProof),
    Rollback(rollback::Rollback),
    VerifyHeaders(verify_headers::VerifyHeaders),
    /// `--help`: the text to print.
    Help(String),
    Version,
    /// `ledgerd config` or `--print-config`: the effective configuration as TOML.
    PrintConfig(String),
}

impl Command {
    /// Runs the command to its end (a node: until `stop`); its exit status.
    pub fn execute(self, stop: Arc<Stop>) -> ExitCode {
        match self {
            Command::Run(config) => run::run(*config, stop),
            Command::Import(x) => x.run(),
            Command::Export(x) => x.run(),
            Command::Verify(x) => x.run(),
            Command::VerifyProof(x) => x.run(),
            Command::Rollback(x) => x.run(),
            Command::VerifyHeaders(x) => x.run(),
            Command::Help(text) | Command::PrintConfig(text) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            Command::Version => {
                println!("ledgerd {}", env!("CARGO_PKG_VERSION"));
                ExitCode::SUCCESS
            }
        }
    }
}

/// Parses the arguments after the program name, with the environment and
/// the config file (`--config FILE` or `LEDGERD_CONFIG`) beneath them; what
/// the operator should know (a `LEDGERD_` variable no setting has) is
/// returned beside it, for the caller to log once its logger is set up (it
/// depends on the configuration).
pub fn parse_with_warnings<I: IntoIterator<Item = String>>(
    args: I,
) -> (Result<Command, ConfigError>, Vec<String>) {
    let mut warnings = Vec::new();
    let command = match parse_flags::<Cli>(args.into_iter().collect(), &mut warnings) {
        Ok(Parsed::Flags(cli, given)) => finish(cli, &given),
        Ok(Parsed::Help(text)) => Ok(Command::Help(text)),
        Ok(Parsed::Version) => Ok(Command::Version),
        Ok(Parsed::PrintConfig(text)) => Ok(Command::PrintConfig(text)),
        Err(e) => Err(e),
    };
    (command, warnings)
}

/// Checks the flags against each other and builds the command.
fn finish(cli: Cli, given: &Given) -> Result<Command, ConfigError> {
    match cli.command {
        None => run::resolve(*cli.run, given),
        Some(Sub::Run(r)) => run::resolve(*r, given),
        Some(Sub::Config(c)) => run::resolve(c.run, given),
        Some(Sub::ServeReadonly(r)) => serve_readonly::resolve(*r),
        Some(Sub::Import(x)) => import::resolve(x).map(Command::Import),
        Some(Sub::Export(x)) => export::resolve(x).map(Command::Export),
        Some(Sub::Verify(x)) => verify::resolve(x).map(Command::Verify),
        Some(Sub::VerifyProof(x)) => verify_proof::resolve(x).map(Command::VerifyProof),
        Some(Sub::VerifyHeaders(x)) => verify_headers::resolve(x).map(Command::VerifyHeaders),
        Some(Sub::Rollback(x)) => rollback::resolve(x, given).map(Command::Rollback),
    }
}

/// A command's input FILE, or the sentence that says it is missing.
fn input_file(file: Option<PathBuf>, missing: &str) -> Result<PathBuf, ConfigError> {
    file.ok_or_else(|| ConfigError(missing.to_string()))
}

/// Says `e` on stderr, `ledgerd COMMAND: e`; exit status 1.
fn fail(command: &str, e: impl std::fmt::Display) -> ExitCode {
    eprintln!("ledgerd {command}: {e}");
    ExitCode::from(1)
}

/// The bytes of a command's input FILE (`-`: stdin); when it cannot be
/// read, the one line that says so on stderr and exit status 2.
fn read_input(command: &str, file: &Path) -> Result<Vec<u8>, ExitCode> {
    let read = if file == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes).map(|_| bytes)
    } else {
        std::fs::read(file)
    };
    read.map_err(|e| {
        eprintln!("ledgerd {command}: cannot read {}: {e}", file.display());
        ExitCode::from(2)
    })
}

/// The exit code of a check command (`verify`, `verify-proof`,
/// `verify-headers`): 0 when every check passed, 1 when one failed, 2 when
/// the input could not be read; the summary or the error on stderr.
fn check_exit(
    command: &str,
    file: &Path,
    outcome: Result<(bool, String), impl std::fmt::Display>,
) -> ExitCode {
    let (said, code) = match outcome {
        Ok((passed, summary)) => (summary, u8::from(!passed)),
        Err(e) => (e.to_string(), 2),
    };
    eprintln!("ledgerd {command}: {}: {said}", file.display());
    ExitCode::from(code)
}

#[cfg(test)]
mod tests;
