//! The configuration: what `ledgerd` is told at start, from the command
//! line, the environment and a config file, into a [`Config`].
//!
//! Each flag is defined once, beside the subsystem it configures, as a field
//! of that subsystem's `#[derive(clap::Args)]` struct (`server::args`,
//! `rpc::args`, `source::devnet::args`, `source::bitcoind::args`,
//! `source::upstream::args`, `sync::args`, `chain::args`, `ledger::args`,
//! `ops_args`, `jsonl::args`): its name, help, default and value parser.
//! From that one place come:
//! - the flag (`--data-dir DIR`), grouped in `--help` by its heading;
//! - its variable, `LEDGERD_` + the flag in upper snake case
//!   (`LEDGERD_DATA_DIR`; [`cli::prepare`]);
//! - its config-file key, the flag without `--`, at the top of the TOML file
//!   or under the section named for its heading (`[ledger] data-dir = ...`;
//!   [`file`](mod@file)).
//!
//! The command line wins over the environment, the environment over the
//! file, the file over the default. [`cli`] holds the commands ([`cli::Cli`]);
//! [`resolve`] checks the flags against each other (which go together,
//! which exclude each other) and builds the [`Command`] to run; [`print`](mod@print)
//! writes the effective configuration (`ledgerd config`, `--print-config`).
//!
//! # Adding a flag
//!
//! One field in the subsystem's `args.rs` struct (a new subsystem: a new
//! `#[derive(clap::Args)]` struct with `#[command(next_help_heading =
//! heading::X)]`, flattened into the commands that take it in [`cli`]):
//!
//! ```text
//! /// One line of help, as --help shows it
//! #[arg(long, value_name = "N", default_value_t = DEFAULT_X, value_parser = number::<u64>)]
//! pub x: u64,
//! ```
//!
//! `DEFAULT_X` is the constant the subsystem's own `Default` uses; a value
//! parser's error is the end of a sentence after the flag's name ([`values`]);
//! a repeatable flag is a `Vec<_>` (a TOML list); a switch is a `bool` with
//! `value_parser = switch()`; a secret gets `hide_env_values = true` (masked
//! by `ledgerd config`). The variable and the TOML key follow by themselves.
//! Then: its use in [`resolve`] (into [`Config`], with any check against
//! other flags), and a row in docs/OPERATIONS.md's flag table (a test holds
//! the table, the help and the parser to the same flags).
//!
//! # Adding a command
//!
//! A variant of [`cli::Sub`] holding a `#[derive(clap::Args)]` struct of the
//! flag structs it takes (`#[command(flatten)]`, with [`cli::FileArgs`]), an
//! arm in [`resolve::finish`] that builds its [`Command`] variant, and the
//! arm in `main` that runs it.

pub mod cli;
pub mod file;
pub mod print;
pub mod resolve;
pub mod values;

use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches};

use crate::chain::args::ChainArgs;
use crate::chain::{ForkTable, Network};
use crate::headers::BitcoinChain;
use crate::proof::image_ids::ImagePins;
use crate::proof::ProofRules;
use crate::server::ServerConfig;
use crate::source::bitcoind::signer::DaPublicKey;
use crate::source::bitcoind::Credentials;
use crate::source::devnet::DevnetConfig;

pub use crate::logs::LogFormat;
pub use crate::rpc::AnswerShape;

/// The `--help` headings; a config file's sections are these, lowercase,
/// spaces as `-` (`[chain-source]`).
pub mod heading {
    pub const CHAIN_SOURCE: &str = "Chain source";
    pub const DEVNET: &str = "Devnet";
    pub const BITCOIN: &str = "Bitcoin";
    pub const FOLLOWER: &str = "Follower";
    pub const CHAIN_RULES: &str = "Chain rules";
    pub const LEDGER: &str = "Ledger";
    pub const SERVER: &str = "Server";
    pub const OPERATIONS: &str = "Operations";
    pub const FIXTURES: &str = "Fixtures";
    pub const ROLLBACK: &str = "Rollback";
    pub const HEADERS: &str = "Headers";
    pub const CONFIGURATION: &str = "Configuration";

    /// The config-file section of a heading: `Chain source` -> `chain-source`.
    pub fn section(heading: &str) -> String {
        heading.to_ascii_lowercase().replace(' ', "-")
    }
}

/// Everything a node is told at start (what `ledgerd run` resolves to).
#[derive(Clone, Debug)]
pub struct Config {
    pub bind: String,
    pub data_dir: PathBuf,
    /// Where the chain comes from: `--dev`, `--upstream` (with
    /// `--bitcoin-rpc`), or nothing.
    pub source: SourceConfig,
    pub sync_chunk: u64,
    /// `--sync-concurrency`: range requests a follower keeps in flight.
    pub sync_concurrency: usize,
    /// `--allow-missing-tx-bodies`: accept blocks whose bodies the upstream withheld.
    pub allow_missing_tx_bodies: bool,
    /// `--allow-fake-proofs`: fake risc0 receipts prove heights on a named network.
    pub allow_fake_proofs: bool,
    /// `--batch-proof-image FORK=HEX` (repeatable): the batch-proof image
    /// of each fork, for a chain without a network name (or a network
    /// whose images Citrea does not ship).
    pub batch_proof_images: ImagePins,
    /// `--sequencer-pubkey`: overrides the network's key.
    pub sequencer_pubkey: Option<[u8; 32]>,
    /// `--network`: a public Citrea network's fork table and sequencer key.
    pub network: Option<Network>,
    /// `--kumquat-height`: overrides the network's Kumquat height.
    pub kumquat_height: Option<u64>,
    /// `--wire`: the answer shapes served.
    pub wire: AnswerShape,
    /// `--max-range`; `None`: the wire's default (1000 ledgerd, 20 citrea).
    pub max_range: Option<u64>,
    pub max_batch: usize,
    /// The transport's limits (`--max-body`, `--idle-timeout-ms`, `--reuse-port`, ...).
    pub server: ServerConfig,
    /// `--health-max-lag-s`: `/health` answers 503 once the sync thread has
    /// stalled this long.
    pub health_max_lag: Duration,
    /// `--health-max-behind`: `/health` answers 503 while a follower's L2
    /// head is more than this many blocks below its upstreams' newest head.
    pub health_max_behind: u64,
    /// `--cors-origin`: the one browser origin allowed to read answers (none: any).
    pub cors_origin: Option<String>,
    /// `serve-readonly`: open the ledger read-only and serve it, no chain source.
    pub read_only: bool,
    /// `--ephemeral`: run on a new temporary data dir, removed when the
    /// node stops (`data_dir` is not used).
    pub ephemeral: bool,
    /// `--log-format`: how log lines are written to stderr.
    pub log_format: LogFormat,
}

/// Where a node's chain comes from: one of these, picked by the flags.
#[derive(Clone, Debug, Default)]
pub enum SourceConfig {
    /// `--dev`: the embedded devnet makes both layers.
    Devnet(DevnetConfig),
    /// `--upstream URL` (repeatable, or a comma list): another node serves
    /// the L2 chain (the first preferred, the others fallbacks), and the DA
    /// slots too unless `--bitcoin-rpc` reads them from Bitcoin.
    Upstream {
        urls: Vec<String>,
        bitcoin: Option<BitcoinConfig>,
    },
    /// No chain source: the stored ledger is served as it is (also
    /// `serve-readonly`).
    #[default]
    None,
}

impl SourceConfig {
    /// What `/health` reports as this source.
    pub fn kind(&self) -> crate::health::SourceKind {
        use crate::health::SourceKind;
        match self {
            SourceConfig::Devnet(_) => SourceKind::Devnet,
            SourceConfig::Upstream { bitcoin, .. } => SourceKind::Upstream {
                bitcoind: bitcoin.is_some(),
            },
            SourceConfig::None => SourceKind::None,
        }
    }

    /// The devnet's settings, with `--dev`.
    pub fn devnet(&self) -> Option<&DevnetConfig> {
        match self {
            SourceConfig::Devnet(d) => Some(d),
            _ => None,
        }
    }

    /// The upstream URLs (empty unless following upstreams).
    pub fn upstreams(&self) -> &[String] {
        match self {
            SourceConfig::Upstream { urls, .. } => urls,
            _ => &[],
        }
    }

    /// The Bitcoin DA source, with `--bitcoin-rpc`.
    pub fn bitcoin(&self) -> Option<&BitcoinConfig> {
        match self {
            SourceConfig::Upstream { bitcoin, .. } => bitcoin.as_ref(),
            _ => None,
        }
    }
}

/// `--bitcoin-rpc` and its flags: the DA layer read from Bitcoin Core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitcoinConfig {
    /// bitcoind's RPC URL (`http://HOST:PORT`); `None`: peers only.
    pub url: Option<String>,
    /// From the shared credential flags (`--bitcoin-rpc-cookie`, ...);
    /// [`Credentials::None`] without `--bitcoin-rpc`.
    pub credentials: Credentials,
    /// `--bitcoin-peer HOST:PORT` (repeatable): Bitcoin nodes to read
    /// headers and blocks from over the P2P protocol.
    pub peers: Vec<String>,
    /// `--bitcoin-chain`, else the one `--network` reads.
    pub chain: BitcoinChain,
    /// `--bitcoin-finality-depth`: confirmations before a block is scanned.
    pub finality_depth: u64,
    /// `--sequencer-da-pubkey`, else the network's (regtest's without `--network`).
    pub sequencer_key: DaPublicKey,
    /// `--prover-da-pubkey`, else the network's (regtest's without `--network`).
    pub prover_key: DaPublicKey,
}

impl Default for Config {
    fn default() -> Self {
        use crate::ops_args::{DEFAULT_HEALTH_MAX_BEHIND, DEFAULT_HEALTH_MAX_LAG_S};
        use crate::sync::args::{DEFAULT_SYNC_CHUNK, DEFAULT_SYNC_CONCURRENCY};
        Config {
            bind: crate::server::args::DEFAULT_BIND.to_string(),
            data_dir: PathBuf::from(crate::ledger::args::DEFAULT_DATA_DIR),
            source: SourceConfig::None,
            sync_chunk: DEFAULT_SYNC_CHUNK,
            sync_concurrency: DEFAULT_SYNC_CONCURRENCY,
            allow_missing_tx_bodies: false,
            allow_fake_proofs: false,
            batch_proof_images: ImagePins::default(),
            sequencer_pubkey: None,
            network: None,
            kumquat_height: None,
            wire: AnswerShape::default(),
            max_range: None,
            max_batch: crate::rpc::args::DEFAULT_MAX_BATCH,
            server: ServerConfig::default(),
            health_max_lag: Duration::from_secs(DEFAULT_HEALTH_MAX_LAG_S),
            health_max_behind: DEFAULT_HEALTH_MAX_BEHIND,
            cors_origin: None,
            read_only: false,
            ephemeral: false,
            log_format: LogFormat::Text,
        }
    }
}

impl Config {
    /// The longest `ledger_getSoftConfirmationRange` served.
    pub fn max_range(&self) -> u64 {
        self.max_range
            .unwrap_or_else(|| self.wire.default_max_range())
    }

    /// The chain-rule settings, whose methods say what they mean.
    fn chain(&self) -> ChainArgs {
        ChainArgs {
            network: self.network,
            kumquat_height: self.kumquat_height,
            sequencer_pubkey: self.sequencer_pubkey,
            allow_fake_proofs: self.allow_fake_proofs,
            batch_proof_image: vec![self.batch_proof_images],
        }
    }

    /// The fork table ([`ChainArgs::forks`]).
    pub fn forks(&self) -> ForkTable {
        self.chain().forks()
    }

    /// The sequencer key blocks must carry ([`ChainArgs::sequencer_key`]).
    pub fn sequencer_key(&self) -> Option<[u8; 32]> {
        self.chain().sequencer_key()
    }

    /// Which batch-proof receipts prove heights: `--network`'s images, the
    /// devnet's own, `--batch-proof-image` pins, or (none of these) the
    /// image each receipt claims ([`ProofRules::new`]).
    pub fn receipt_rules(&self) -> ProofRules {
        ProofRules::new(
            self.network,
            self.batch_proof_images,
            self.allow_fake_proofs,
            matches!(self.source, SourceConfig::Devnet(_)),
        )
    }

    /// Where the sequencer key comes from ([`ChainArgs::sequencer_key_name`]).
    pub fn sequencer_key_name(&self) -> String {
        self.chain().sequencer_key_name()
    }
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    /// Run a node; `serve-readonly` is a run with `read_only` set.
    Run(Box<Config>),
    /// `ledgerd import FILE` (`-` is stdin).
    Import(ImportArgs),
    /// `ledgerd export --from A --to B`.
    Export(ExportArgs),
    /// `ledgerd verify FILE` (`-` is stdin).
    Verify(VerifyArgs),
    /// `ledgerd verify-proof FILE` (`-` is stdin).
    VerifyProof(VerifyProofArgs),
    /// `ledgerd rollback --data-dir DIR (--to-l2 H | --to-l1 S) [--dry-run]`.
    Rollback(RollbackArgs),
    /// `ledgerd verify-headers --bitcoin-chain C [--start-height H] FILE`.
    VerifyHeaders(VerifyHeadersArgs),
    /// `--help`: the text to print.
    Help(String),
    Version,
    /// `ledgerd config` or `--print-config`: the effective configuration as TOML.
    PrintConfig(String),
}

/// `ledgerd import FILE.jsonl [--data-dir DIR] [--no-verify]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportArgs {
    /// The fixture; `-` reads stdin.
    pub file: PathBuf,
    pub data_dir: PathBuf,
    /// Check records by the chain rules (false with `--no-verify`).
    pub verify: bool,
    /// `--network` / `--kumquat-height`.
    pub forks: ForkTable,
    /// `--sequencer-pubkey`, else the network's key.
    pub sequencer_pubkey: Option<[u8; 32]>,
    /// `--network`'s batch-proof images; `--allow-fake-proofs`.
    pub receipts: ProofRules,
}

/// `ledgerd verify [--network N | --kumquat-height H] [--sequencer-pubkey K] FILE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyArgs {
    /// Soft confirmations as the RPC answers them; `-` reads stdin.
    pub file: PathBuf,
    /// `--network` / `--kumquat-height`.
    pub forks: ForkTable,
    /// `--sequencer-pubkey`, else the network's key; `None`: the first block's.
    pub sequencer_key: Option<[u8; 32]>,
    /// Where the key comes from, for the report (`testnet key`).
    pub sequencer_key_name: String,
}

/// `ledgerd verify-proof [--network N] [--allow-fake-proofs] FILE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyProofArgs {
    /// Proofs as the RPC answers them, or raw receipt bytes; `-` reads stdin.
    pub file: PathBuf,
    /// `--network`'s images; `--allow-fake-proofs`.
    pub receipts: ProofRules,
    /// `--network` / `--kumquat-height`: the fork of a new-layout journal.
    pub forks: ForkTable,
}

/// `ledgerd verify-headers [--bitcoin-chain C] [--start-height H] FILE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyHeadersArgs {
    /// Raw 80-byte headers or hex lines; `-` reads stdin.
    pub file: PathBuf,
    /// `--bitcoin-chain` (regtest when not given).
    pub chain: BitcoinChain,
    /// `--start-height`: the first header's height (`None`: genesis).
    pub start_height: Option<u64>,
}

/// `ledgerd rollback --data-dir DIR (--to-l2 H | --to-l1 S) [--dry-run]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RollbackArgs {
    pub data_dir: PathBuf,
    /// Where the ledger goes back to.
    pub to: RollbackTo,
    /// `--dry-run`: print what would be removed, remove nothing.
    pub dry_run: bool,
}

/// `--to-l2 H` or `--to-l1 S`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RollbackTo {
    /// Keep L2 heights up to H (and the DA slots scanned while only they existed).
    L2(u64),
    /// Keep DA slots up to S (and the L2 blocks that point at them).
    L1(u64),
}

/// `ledgerd export [--from A] [--to B] [--data-dir DIR]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportArgs {
    pub data_dir: PathBuf,
    pub from: u64,
    /// Default: the head.
    pub to: Option<u64>,
}

/// A configuration that cannot be run: one sentence that names the flag
/// (and the file, line and key, for a config file's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    /// clap's error as one sentence in our words: the flag and what it
    /// takes. `sub` is the command being parsed; `cmd` the whole command
    /// line, to tell a flag of another command from an unknown one.
    fn from_clap(e: &clap::Error, sub: &str, cmd: &clap::Command) -> ConfigError {
        use clap::error::{ContextKind, ContextValue, ErrorKind};
        let context = |kind| match e.get(kind) {
            Some(ContextValue::String(s)) => s.clone(),
            Some(ContextValue::Strings(s)) => s.join(" "),
            _ => String::new(),
        };
        let arg = context(ContextKind::InvalidArg);
        // "--max-range <N>" -> "--max-range".
        let flag = arg.split([' ', '=']).next().unwrap_or("").to_string();
        ConfigError(match e.kind() {
            ErrorKind::ValueValidation => {
                let why = std::error::Error::source(e)
                    .map(|s| s.to_string())
                    .unwrap_or_default();
                if why.starts_with("--") {
                    why
                } else {
                    format!("{flag} {why}")
                }
            }
            ErrorKind::InvalidValue => format!("{flag} needs a value"),
            ErrorKind::InvalidSubcommand => {
                unknown_command(&context(ContextKind::InvalidSubcommand), cmd)
            }
            ErrorKind::UnknownArgument if !flag.starts_with('-') => match sub {
                "import" | "verify" | "verify-proof" => {
                    format!("{sub} takes one FILE; {flag:?} is a second one")
                }
                _ => unknown_command(&flag, cmd),
            },
            ErrorKind::UnknownArgument
                if all_longs(cmd).iter().any(|l| format!("--{l}") == flag) =>
            {
                format!("{flag} does not apply to `ledgerd {sub}`; see ledgerd --help")
            }
            ErrorKind::UnknownArgument => {
                format!("unknown argument {flag:?}; see ledgerd --help")
            }
            _ => {
                let text = e.to_string();
                let line = text.lines().next().unwrap_or("");
                format!("{}; see ledgerd --help", line.trim_start_matches("error: "))
            }
        })
    }
}

fn unknown_command(name: &str, cmd: &clap::Command) -> String {
    let commands: Vec<&str> = cmd
        .get_subcommands()
        .map(clap::Command::get_name)
        .filter(|n| *n != "help")
        .collect();
    format!(
        "unknown command {name:?}; the commands are {}; see ledgerd --help",
        commands.join(", ")
    )
}

/// Every long flag of `cmd` and its subcommands.
fn all_longs(cmd: &clap::Command) -> Vec<String> {
    std::iter::once(cmd)
        .chain(cmd.get_subcommands())
        .flat_map(|c| c.get_arguments())
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect()
}

/// Parses the arguments after the program name, with the environment and
/// the config file (`--config FILE` or `LEDGERD_CONFIG`) beneath them; logs
/// what the operator should know about the file (its older form).
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, ConfigError> {
    let (command, warnings) = parse_with_warnings(args);
    for warning in warnings {
        log::warn!("{warning}");
    }
    command
}

/// [`parse`], the warnings returned instead of logged (for a caller whose
/// logger depends on the configuration).
pub fn parse_with_warnings<I: IntoIterator<Item = String>>(
    args: I,
) -> (Result<Command, ConfigError>, Vec<String>) {
    let mut warnings = Vec::new();
    let command = parse_into(args.into_iter().collect(), &mut warnings);
    (command, warnings)
}

fn parse_into(args: Vec<String>, warnings: &mut Vec<String>) -> Result<Command, ConfigError> {
    let base = cli::Cli::command();
    let named = args
        .first()
        .filter(|a| base.find_subcommand(a.as_str()).is_some());
    let sub = named.map_or("run", String::as_str).to_string();
    let mut cmd = match named {
        Some(_) => cli::prepare_for_command(base),
        None => cli::prepare(base),
    };
    let file = match config_path(&args) {
        Some(path) => Some(file::read(&path)?),
        None => None,
    };
    if let Some(file) = &file {
        warnings.extend(file.warning.clone());
        cmd = file.apply(cmd)?;
    }
    let argv = std::iter::once("ledgerd".to_string()).chain(args.iter().cloned());
    let matches = match cmd.try_get_matches_from_mut(argv) {
        Ok(m) => m,
        Err(e) => {
            use clap::error::ErrorKind;
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    Ok(Command::Help(e.render().to_string()))
                }
                ErrorKind::DisplayVersion => Ok(Command::Version),
                _ => Err(from_variable(
                    &e,
                    &args,
                    ConfigError::from_clap(&e, &sub, &cmd),
                )),
            };
        }
    };
    let parsed =
        cli::Cli::from_arg_matches(&matches).map_err(|e| ConfigError::from_clap(&e, &sub, &cmd))?;
    let (sub_cmd, sub_matches) = match matches.subcommand() {
        Some((name, m)) => (cmd.find_subcommand(name).unwrap_or(&cmd).clone(), m.clone()),
        None => (cmd.clone(), matches.clone()),
    };
    let given = resolve::Given::new(&sub_cmd, &sub_matches, file.as_ref());
    if sub == "config" || sub_matches.get_flag("print_config") {
        return Ok(Command::PrintConfig(print::effective(
            &sub_cmd,
            &sub_matches,
            file.as_ref(),
        )));
    }
    resolve::finish(parsed, &given)
}

/// A bad value that came from a variable, not the command line: the
/// message names the variable first (`LEDGERD_MAX_BATCH: --max-batch takes ...`).
fn from_variable(e: &clap::Error, args: &[String], error: ConfigError) -> ConfigError {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return error;
    };
    let flag = arg.split(' ').next().unwrap_or_default();
    let on_command_line = args
        .iter()
        .any(|a| a == flag || a.starts_with(&format!("{flag}=")));
    let var = cli::env_name(flag.trim_start_matches("--"));
    match std::env::var_os(&var) {
        Some(_) if !on_command_line && flag.starts_with("--") => {
            ConfigError(format!("{var}: {}", error.0))
        }
        _ => error,
    }
}

/// `--config FILE` on the command line (the last one), else `LEDGERD_CONFIG`.
fn config_path(args: &[String]) -> Option<PathBuf> {
    let mut found = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--config" {
            found = it.next().map(PathBuf::from);
        } else if let Some(v) = a.strip_prefix("--config=") {
            found = Some(PathBuf::from(v));
        }
    }
    found.or_else(|| {
        std::env::var_os(cli::env_name("config"))
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

#[cfg(test)]
mod tests;
