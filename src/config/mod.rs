//! The configuration: how flags become `LEDGERD_*` variables and config-file
//! keys, how the three are read, and what a node is told at start
//! ([`Config`]). The commands and their flags are [`crate::cmd`]'s.
//!
//! Each flag is defined once, beside the subsystem it configures, as a field
//! of that subsystem's `#[derive(clap::Args)]` struct (`server::args`,
//! `rpc::args`, `source::devnet::args`, `source::bitcoin::args`,
//! `source::upstream::args`, `sync::args`, `chain::args`, `ledger::args`,
//! `routes::args`), with the headings and value parsers of [`crate::flags`]:
//! its name, help, default and value parser. From that one place come:
//! - the flag (`--data-dir DIR`), grouped in `--help` by its heading;
//! - its variable, `LEDGERD_` + the flag in upper snake case
//!   (`LEDGERD_DATA_DIR`; [`env::prepare`]);
//! - its config-file key, the flag without `--`, at the top of the TOML file
//!   or under the section named for its heading (`[ledger] data-dir = ...`;
//!   [`file`](mod@file)).
//!
//! The command line wins over the environment, the environment over the
//! file, the file over the default. [`parse_flags`] reads all three into a
//! command's flags and says which were [`Given`] on purpose; the command
//! checks them against each other ([`crate::cmd`]); [`print`](mod@print)
//! writes the effective configuration (`ledgerd config`, `--print-config`).
//!
//! # Adding a flag
//!
//! One field in the subsystem's `args.rs` struct (a new subsystem: a new
//! `#[derive(clap::Args)]` struct with `#[command(next_help_heading =
//! heading::X)]`, flattened into the commands that take it in [`crate::cmd`]):
//!
//! ```text
//! /// One line of help, as --help shows it
//! #[arg(long, value_name = "N", default_value_t = DEFAULT_X, value_parser = number::<u64>)]
//! pub x: u64,
//! ```
//!
//! `DEFAULT_X` is the constant the subsystem's own `Default` uses; a value
//! parser's error is the end of a sentence after the flag's name
//! ([`crate::flags`]); a repeatable flag is a `Vec<_>` (a TOML list); a
//! switch is a `bool` with `value_parser = switch`; a secret gets
//! `hide_env_values = true` (never printed by `ledgerd config`). The variable and
//! the TOML key follow by themselves. Then: its use in the command
//! (`cmd/run.rs` for a node: into [`Config`], with any check against other
//! flags), and a row in docs/OPERATIONS.md's flag table (a test holds the
//! table, the help and the parser to the same flags).

pub mod env;
pub mod file;
mod given;
pub mod print;

use std::path::PathBuf;
use std::time::Duration;

use crate::chain_rules::args::ChainRulesArgs;
use crate::flags::ConfigError;
use crate::proof::image_ids::ImagePins;
use crate::proof::ProofRules;
use crate::server::ServerConfig;
use crate::source::bitcoin::config::BitcoinConfig;
use crate::source::devnet::DevnetConfig;

use crate::logs::LogFormat;
use crate::wire::WireShape;
pub use given::Given;

/// Everything a node is told at start (what `ledgerd run` resolves to).
#[derive(Clone, Debug)]
pub struct Config {
    /// `--bind`: the address the server listens on (port 0: any free one).
    pub bind: String,
    /// `--data-dir`: where the ledger lives.
    pub data_dir: PathBuf,
    /// Where the chain comes from: `--dev`, `--upstream` (with
    /// `--bitcoin-rpc`), or nothing.
    pub source: SourceConfig,
    /// `--sync-chunk`: blocks per range request (cut to the upstream's limit).
    pub sync_chunk: u64,
    /// `--sync-concurrency`: range requests a follower keeps in flight.
    pub sync_concurrency: usize,
    /// `--upstream-ca`: CA certificates trusted beside the system's roots
    /// for `https://` upstreams.
    pub upstream_ca: Option<PathBuf>,
    /// `--upstream-max-rps`: requests started per second at each upstream
    /// (`None`: no cap).
    pub upstream_max_rps: Option<u32>,
    /// `--allow-missing-tx-bodies`: accept blocks whose bodies the upstream withheld.
    pub allow_missing_tx_bodies: bool,
    /// `--allow-fake-proofs`: fake risc0 receipts prove heights on a named network.
    pub allow_fake_proofs: bool,
    /// `--batch-proof-image FORK=HEX` (repeatable): the batch-proof image
    /// of each fork, for a chain without a network name (or a network
    /// whose images Citrea does not ship).
    pub batch_proof_images: ImagePins,
    /// `--network`, `--kumquat-height`, `--sequencer-pubkey`: the fork
    /// table and the sequencer key.
    pub chain: ChainRulesArgs,
    /// `--wire`: the answer shapes served.
    pub wire: WireShape,
    /// `--max-range`; `None`: the wire's default (1000 ledgerd, 20 citrea).
    pub max_range: Option<u64>,
    /// `--max-batch`: calls one JSON-RPC batch may hold.
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
}

impl Default for Config {
    fn default() -> Self {
        use crate::routes::args::{DEFAULT_HEALTH_MAX_BEHIND, DEFAULT_HEALTH_MAX_LAG_S};
        use crate::sync::args::{DEFAULT_SYNC_CHUNK, DEFAULT_SYNC_CONCURRENCY};
        Config {
            bind: crate::server::args::DEFAULT_BIND.to_string(),
            data_dir: PathBuf::from(crate::ledger::args::DEFAULT_DATA_DIR),
            source: SourceConfig::None,
            sync_chunk: DEFAULT_SYNC_CHUNK,
            sync_concurrency: DEFAULT_SYNC_CONCURRENCY,
            upstream_ca: None,
            upstream_max_rps: None,
            allow_missing_tx_bodies: false,
            allow_fake_proofs: false,
            batch_proof_images: ImagePins::default(),
            chain: ChainRulesArgs::default(),
            wire: WireShape::default(),
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

    /// Which batch-proof receipts prove heights: `--network`'s images, the
    /// devnet's own, `--batch-proof-image` pins, or (none of these) the
    /// image each receipt claims ([`ProofRules::new`]).
    pub fn receipt_rules(&self) -> ProofRules {
        ProofRules::new(
            self.chain.network,
            self.batch_proof_images,
            self.allow_fake_proofs,
            matches!(self.source, SourceConfig::Devnet(_)),
        )
    }
}

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
        // Where `sub`'s flags are listed: `ledgerd --help` for the bare
        // form (`run`), `ledgerd CMD --help` for a command.
        let help = match sub {
            "run" => "ledgerd --help".to_string(),
            _ => format!("ledgerd {sub} --help"),
        };
        // "Did you mean": the nearest flag of this command.
        let this = cmd.find_subcommand(sub).unwrap_or(cmd);
        let suggested = flag
            .strip_prefix("--")
            .and_then(|f| {
                crate::flags::closest(f, this.get_arguments().filter_map(|a| a.get_long()))
            })
            .map(|l| format!("--{l}"));
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
                "import" | "verify" | "verify-proof" | "verify-headers" => {
                    format!("{sub} takes one FILE; {flag:?} is a second one")
                }
                _ => unknown_command(&flag, cmd),
            },
            ErrorKind::UnknownArgument
                if env::all_args(cmd)
                    .any(|a| a.get_long().is_some_and(|l| format!("--{l}") == flag)) =>
            {
                format!("{flag} does not apply to `ledgerd {sub}`; see {help}")
            }
            ErrorKind::UnknownArgument => match suggested {
                Some(near) => format!("unknown argument {flag:?}: did you mean {near}? see {help}"),
                None => format!("unknown argument {flag:?}; see {help}"),
            },
            _ => {
                let text = e.to_string();
                let line = text.lines().next().unwrap_or("");
                format!("{}; see {help}", line.trim_start_matches("error: "))
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
    let near = crate::flags::did_you_mean(name, commands.iter().copied());
    format!(
        "unknown command {name:?}{near}; the commands are {}; see ledgerd --help",
        commands.join(", ")
    )
}

/// What a command line asks for, before a command checks its flags
/// against each other.
pub enum Parsed<C> {
    /// The flags (command line over environment over config file), and
    /// which of them were given on purpose.
    Flags(C, Given),
    /// `--help`: the text to print.
    Help(String),
    Version,
    /// `ledgerd config` or `--print-config`: the effective configuration as TOML.
    PrintConfig(String),
}

/// Parses the arguments after the program name into `C` (the commands,
/// [`crate::cmd`]), with every flag's variable and the config file
/// (`--config FILE` or `LEDGERD_CONFIG`) beneath them; what the operator
/// should know (a `LEDGERD_` variable no setting has) goes to `warnings`.
pub fn parse_flags<C: clap::Parser>(
    args: Vec<String>,
    warnings: &mut Vec<String>,
) -> Result<Parsed<C>, ConfigError> {
    let base = C::command();
    let named = args
        .first()
        .filter(|a| base.find_subcommand(a.as_str()).is_some());
    let sub = named.map_or("run", String::as_str).to_string();
    let mut cmd = match named {
        Some(_) => env::prepare_for_command(base),
        None => env::prepare(base),
    };
    warnings.extend(env::unknown_variables(&cmd));
    let convert = flag_value(&args, "--convert").filter(|_| sub == "config");
    let file = match (convert, config_path(&args)) {
        (Some(_), Some(_)) if args.iter().any(|a| a.starts_with("--config")) => {
            return Err(ConfigError(
                "--convert reads a file of the older form and --config a TOML file: give one"
                    .into(),
            ))
        }
        (Some(old), _) => Some(file::read_old_form(&old)?),
        (None, Some(path)) => Some(file::read(&path)?),
        (None, None) => None,
    };
    if let Some(file) = &file {
        cmd = file.apply(cmd)?;
    }
    let argv = std::iter::once("ledgerd".to_string()).chain(args.iter().cloned());
    let matches = match cmd.try_get_matches_from_mut(argv) {
        Ok(m) => m,
        Err(e) => {
            use clap::error::ErrorKind;
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    Ok(Parsed::Help(e.render().to_string()))
                }
                ErrorKind::DisplayVersion => Ok(Parsed::Version),
                _ => Err(from_variable(
                    &e,
                    &args,
                    ConfigError::from_clap(&e, &sub, &cmd),
                )),
            };
        }
    };
    let parsed =
        C::from_arg_matches(&matches).map_err(|e| ConfigError::from_clap(&e, &sub, &cmd))?;
    let (sub_cmd, sub_matches) = match matches.subcommand() {
        Some((name, m)) => (cmd.find_subcommand(name).unwrap_or(&cmd), m),
        None => (&cmd, &matches),
    };
    let given = Given::new(sub_cmd, sub_matches, file.as_ref());
    if sub == "config" || sub_matches.get_flag("print_config") {
        let text = print::effective(sub_cmd, sub_matches, file.as_ref());
        return Ok(Parsed::PrintConfig(text));
    }
    Ok(Parsed::Flags(parsed, given))
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
    let var = env::env_name(flag.trim_start_matches("--"));
    match std::env::var_os(&var) {
        Some(_) if !on_command_line && flag.starts_with("--") => {
            ConfigError(format!("{var}: {}", error.0))
        }
        _ => error,
    }
}

/// `--config FILE` on the command line (the last one), else `LEDGERD_CONFIG`.
fn config_path(args: &[String]) -> Option<PathBuf> {
    flag_value(args, "--config").or_else(|| {
        std::env::var_os(env::env_name("config"))
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

/// The value of `flag` on the command line (its last), as `FLAG V` or `FLAG=V`.
fn flag_value(args: &[String], flag: &str) -> Option<PathBuf> {
    let mut found = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == flag {
            found = it.next().map(PathBuf::from);
        } else if let Some(v) = a.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
            found = Some(PathBuf::from(v));
        }
    }
    found
}
