//! The command line as clap sees it: the commands, each a list of the
//! subsystems' flag structs ([`crate::server::args`], [`crate::rpc::args`],
//! [`crate::source::devnet::args`], ...) flattened in, and [`prepare`],
//! which gives every flag its `LEDGERD_*` variable by one rule.

use std::path::PathBuf;

use crate::chain::args::ChainArgs;
use crate::config::heading;
use crate::jsonl::args::{ExportCmd, ImportCmd};
use crate::ledger::args::{DataDirArgs, EphemeralArgs, RollbackCmd};
use crate::ops_args::OpsArgs;
use crate::rpc::args::RpcArgs;
use crate::server::args::ServerArgs;
use crate::source::bitcoind::args::BitcoinArgs;
use crate::source::devnet::args::DevArgs;
use crate::source::upstream::args::UpstreamArgs;
use crate::sync::args::FollowerArgs;

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
    pub run: Box<RunCmd>,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    /// Run a node (the default: `ledgerd [FLAGS]` is `ledgerd run [FLAGS]`)
    Run(Box<RunCmd>),
    /// Serve a ledger another ledgerd writes (--data-dir DIR), read-only
    ServeReadonly(Box<RunCmd>),
    /// Load a fixture (- reads stdin)
    Import(ImportCmd),
    /// Write heights A..=B as a fixture to stdout
    Export(ExportCmd),
    /// Check soft confirmations (RPC answers; - reads stdin): hashes, signatures, links
    Verify(VerifyCmd),
    /// Check batch proofs (RPC answers or raw receipt bytes): journal, receipt, image
    VerifyProof(VerifyCmd),
    /// Check Bitcoin headers (raw 80-byte or hex lines) by Bitcoin Core's rules
    VerifyHeaders(crate::headers::args::VerifyHeadersCmd),
    /// Take a stopped node's ledger (--data-dir DIR) back to L2 height H or DA slot S, in one transaction
    Rollback(RollbackCmd),
    /// Print run's effective configuration as TOML, each value with where it came from (--print-config does it for any command)
    Config(Box<RunCmd>),
}

/// `ledgerd run`: every subsystem's flags.
#[derive(clap::Args, Clone, Debug)]
pub struct RunCmd {
    #[command(flatten)]
    pub dev: DevArgs,
    #[command(flatten)]
    pub upstream: UpstreamArgs,
    #[command(flatten)]
    pub bitcoin: BitcoinArgs,
    #[command(flatten)]
    pub follower: FollowerArgs,
    #[command(flatten)]
    pub chain: ChainArgs,
    #[command(flatten)]
    pub ledger: DataDirArgs,
    #[command(flatten)]
    pub ephemeral: EphemeralArgs,
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(flatten)]
    pub rpc: RpcArgs,
    #[command(flatten)]
    pub ops: OpsArgs,
    #[command(flatten)]
    pub logs: crate::logs::LogArgs,
    #[command(flatten)]
    pub file_args: FileArgs,
}

/// `ledgerd verify FILE` and `ledgerd verify-proof FILE`: an input and the chain rules.
#[derive(clap::Args, Clone, Debug)]
pub struct VerifyCmd {
    /// What a node answered (soft confirmations; proofs, or raw receipt bytes); - reads stdin
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub chain: ChainArgs,
    #[command(flatten)]
    pub file_args: FileArgs,
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

/// Flags that are no setting: no variable, no config-file key.
pub const NOT_SETTINGS: [&str; 4] = ["help", "version", "config", "print-config"];

/// The variable that sets `--flag`: `LEDGERD_FLAG` (`--data-dir`: `LEDGERD_DATA_DIR`).
pub fn env_name(long: &str) -> String {
    format!("LEDGERD_{}", long.to_ascii_uppercase().replace('-', "_"))
}

/// Gives every setting of `cmd` and its subcommands its variable, lets a
/// flag given twice take its last value (as the command line overrides a
/// config file's key) and a number value start with `-` (to be refused
/// by its parser in words that name the flag).
pub fn prepare(cmd: clap::Command) -> clap::Command {
    with_env(cmd, true).mut_subcommands(|c| with_env(c, true))
}

/// [`prepare`] for a command line that names its command: the flags of
/// the bare form (`ledgerd [FLAGS]`, which is `run`) read no variables, so
/// that a variable of `run` does not count for `import`.
pub fn prepare_for_command(cmd: clap::Command) -> clap::Command {
    with_env(cmd, false).mut_subcommands(|c| with_env(c, true))
}

fn with_env(cmd: clap::Command, env: bool) -> clap::Command {
    cmd.args_override_self(true)
        .allow_negative_numbers(true)
        .mut_args(|a| {
            if !env {
                return a;
            }
            let setting = a
                .get_long()
                .filter(|l| !NOT_SETTINGS.contains(l) || *l == "config")
                .map(env_name);
            match setting {
                Some(name) => a.env(name),
                None => a,
            }
        })
}
