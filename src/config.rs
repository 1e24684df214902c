//! The command line: flags into a [`Config`].
//!
//! Hand-written (a dozen flags do not need a parser crate). Every flag has a
//! default; an unknown flag or a bad value is an error that names the flag
//! and says what it takes.

use std::path::PathBuf;
use std::time::Duration;

use crate::devnet::DevnetConfig;

/// Everything `ledgerd` is told at start.
#[derive(Clone, Debug)]
pub struct Config {
    pub bind: String,
    pub data_dir: PathBuf,
    /// `--dev`: run the embedded devnet as the chain source.
    pub dev: Option<DevnetConfig>,
    /// `--upstream URL`: follow another node.
    pub upstream: Option<String>,
    pub sync_chunk: u64,
    pub sequencer_pubkey: Option<[u8; 32]>,
    pub max_range: u64,
    pub max_batch: usize,
    pub max_body: usize,
    pub max_connections: usize,
    pub idle_timeout: Duration,
    /// `--body-timeout-ms`: the whole request body must arrive within this.
    pub body_timeout: Duration,
    /// `--write-timeout-ms`: longest time spent writing one response to a slow reader.
    pub write_timeout: Duration,
    /// `--max-requests-per-connection`: then the keep-alive connection is closed.
    pub max_requests_per_connection: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: "127.0.0.1:12346".to_string(),
            data_dir: PathBuf::from("./ledgerd-data"),
            dev: None,
            upstream: None,
            sync_chunk: 100,
            sequencer_pubkey: None,
            max_range: 1000,
            max_batch: 50,
            max_body: 10 * 1024 * 1024,
            max_connections: 100,
            idle_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
            max_requests_per_connection: 1000,
        }
    }
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    Run(Box<Config>),
    Help,
    Version,
}

/// A command line that cannot be run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

pub const USAGE: &str = "\
ledgerd: a ledger JSON-RPC full node for a Bitcoin ZK rollup

USAGE:
    ledgerd [OPTIONS]

CHAIN SOURCE (one of):
    --dev                     run the embedded devnet (a simulated sequencer and DA chain)
    --upstream URL            follow another node's L2 chain and DA view over JSON-RPC

DEVNET:
    --dev-prefill N           heights 1..=N exist before the server listens [default: 0]
    --dev-block-ms MS         then one new block every MS ms, 0 for none [default: 1000]
    --dev-seed S              the chain derives from this number [default: 1]
    --dev-proof-bytes N       bytes of each batch proof [default: 2048]

FOLLOWER:
    --sync-chunk N            blocks per range request [default: 100]
    --sequencer-pubkey HEX    the sequencer key blocks must carry [default: key of block 1]

SERVER:
    --bind ADDR               address to listen on; port 0 takes a free port [default: 127.0.0.1:12346]
    --data-dir DIR            where the LMDB ledger lives [default: ./ledgerd-data]
    --max-range N             longest ledger_getSoftConfirmationRange [default: 1000]
    --max-batch N             most calls in one batch request [default: 50]
    --max-body BYTES          largest request body [default: 10485760]
    --max-connections N       open connections at once; more get 503 [default: 100]
    --idle-timeout-ms MS      close a connection idle this long [default: 10000]
    --body-timeout-ms MS      a request body must arrive within this, else 408 [default: 5000]
    --write-timeout-ms MS     give up writing an answer to a client that does not read [default: 10000]
    --max-requests-per-connection N
                              then close the keep-alive connection [default: 1000]

    -h, --help                print this help
    -V, --version             print the version

The first line on stdout is `listening on http://HOST:PORT`; logs go to stderr
(RUST_LOG=debug logs every request). Ctrl-C or SIGTERM stops it cleanly.
";

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, ConfigError> {
    value.parse().map_err(|_| {
        ConfigError(format!(
            "{flag} takes a non-negative whole number, not {value:?}"
        ))
    })
}

fn pubkey(value: &str) -> Result<[u8; 32], ConfigError> {
    let digits = value.strip_prefix("0x").unwrap_or(value);
    hex::decode(digits)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| {
            ConfigError(format!(
                "--sequencer-pubkey takes 64 hex digits (a 32-byte Ed25519 key), not {value:?}"
            ))
        })
}

/// Parses the arguments after the program name.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, ConfigError> {
    let mut config = Config::default();
    let mut dev = DevnetConfig::default();
    let mut dev_on = false;
    let mut dev_flags = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |flag: &str| -> Result<String, ConfigError> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => args
                    .next()
                    .ok_or_else(|| ConfigError(format!("{flag} needs a value"))),
            }
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "-V" | "--version" => return Ok(Command::Version),
            "--dev" => dev_on = true,
            "--dev-prefill" => {
                dev.prefill = number(&flag, &value(&flag)?)?;
                dev_flags.push(flag);
            }
            "--dev-block-ms" => {
                dev.block_ms = number(&flag, &value(&flag)?)?;
                dev_flags.push(flag);
            }
            "--dev-seed" => {
                dev.seed = number(&flag, &value(&flag)?)?;
                dev_flags.push(flag);
            }
            "--dev-proof-bytes" => {
                dev.proof_bytes = number(&flag, &value(&flag)?)?;
                dev_flags.push(flag);
            }
            "--upstream" => config.upstream = Some(value(&flag)?),
            "--sync-chunk" => {
                config.sync_chunk = number(&flag, &value(&flag)?)?;
                if config.sync_chunk == 0 {
                    return Err(ConfigError("--sync-chunk must be at least 1".into()));
                }
            }
            "--sequencer-pubkey" => config.sequencer_pubkey = Some(pubkey(&value(&flag)?)?),
            "--bind" => config.bind = value(&flag)?,
            "--data-dir" => config.data_dir = PathBuf::from(value(&flag)?),
            "--max-range" => config.max_range = number(&flag, &value(&flag)?)?,
            "--max-batch" => config.max_batch = number(&flag, &value(&flag)?)?,
            "--max-body" => config.max_body = number(&flag, &value(&flag)?)?,
            "--max-connections" => config.max_connections = number(&flag, &value(&flag)?)?,
            "--idle-timeout-ms" => {
                config.idle_timeout = Duration::from_millis(number(&flag, &value(&flag)?)?)
            }
            "--body-timeout-ms" => {
                config.body_timeout = Duration::from_millis(number(&flag, &value(&flag)?)?)
            }
            "--write-timeout-ms" => {
                config.write_timeout = Duration::from_millis(number(&flag, &value(&flag)?)?)
            }
            "--max-requests-per-connection" => {
                config.max_requests_per_connection = number(&flag, &value(&flag)?)?;
                if config.max_requests_per_connection == 0 {
                    return Err(ConfigError(
                        "--max-requests-per-connection must be at least 1".into(),
                    ));
                }
            }
            other => {
                return Err(ConfigError(format!(
                    "unknown argument {other:?}; see ledgerd --help"
                )))
            }
        }
    }
    if dev_on && config.upstream.is_some() {
        return Err(ConfigError(
            "--dev and --upstream are two chain sources: choose one".into(),
        ));
    }
    if !dev_on {
        if let Some(flag) = dev_flags.first() {
            return Err(ConfigError(format!("{flag} only applies with --dev")));
        }
    }
    if dev_on {
        config.dev = Some(dev);
    }
    Ok(Command::Run(Box::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Config, ConfigError> {
        match parse(args.iter().map(|s| s.to_string()))? {
            Command::Run(c) => Ok(*c),
            other => panic!("expected a run, got {other:?}"),
        }
    }

    #[test]
    fn defaults_match_the_documented_ones() {
        let c = run(&[]).unwrap();
        assert_eq!(c.bind, "127.0.0.1:12346");
        assert_eq!(c.data_dir, PathBuf::from("./ledgerd-data"));
        assert_eq!((c.max_range, c.max_batch, c.max_body), (1000, 50, 10 << 20));
        assert!(c.dev.is_none());
    }

    #[test]
    fn dev_flags_take_values_in_both_spellings() {
        let c = run(&[
            "--dev",
            "--dev-prefill",
            "100",
            "--dev-block-ms=0",
            "--dev-seed",
            "9",
        ])
        .unwrap();
        let d = c.dev.unwrap();
        assert_eq!((d.prefill, d.block_ms, d.seed), (100, 0, 9));
    }

    #[test]
    fn bad_values_name_the_flag() {
        let e = run(&["--max-range", "-1"]).unwrap_err();
        assert!(e.0.contains("--max-range"), "{e}");
        let e = run(&["--dev-prefill", "5"]).unwrap_err();
        assert!(e.0.contains("only applies with --dev"), "{e}");
        let e = run(&["--frobnicate"]).unwrap_err();
        assert!(e.0.contains("--frobnicate"), "{e}");
        let e = run(&["--dev", "--upstream", "http://x"]).unwrap_err();
        assert!(e.0.contains("choose one"), "{e}");
    }
}
