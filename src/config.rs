//! The command line: flags into a [`Config`].
//!
//! Hand-written (34 flags of `--flag value` form do not need a parser crate). Every flag has a
//! default; an unknown flag or a bad value is an error that names the flag
//! and says what it takes.
//!
//! An optional first word picks the command ([`Command`]): `run` (the
//! default), `serve-readonly`, `import`, `export`, `verify`. `--config FILE` reads
//! `key = value` lines (a key per flag, the flag without `--`) before the
//! command line, which overrides them; its errors name the file, line and key.

use std::path::PathBuf;
use std::time::Duration;

use crate::chain::{ForkTable, Network};
use crate::proof::image_ids::{self, ImagePins};
use crate::proof::ProofRules;
use crate::source::bitcoind::signer::DaPublicKey;
use crate::source::bitcoind::{keys, Credentials, DEFAULT_FINALITY_DEPTH};
use crate::source::devnet::regtest::RegtestConfig;
use crate::source::devnet::DevnetConfig;

/// Everything `ledgerd` is told at start.
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
    pub wire: Wire,
    /// `--max-range`; `None`: the wire's default (1000 ledgerd, 20 citrea).
    pub max_range: Option<u64>,
    pub max_batch: usize,
    pub max_body: usize,
    pub max_connections: usize,
    pub idle_timeout: Duration,
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
    /// `--reuse-port`: SO_REUSEPORT, so several servers share one port.
    pub reuse_port: bool,
    /// `--body-timeout-ms`: the whole request body must arrive within this.
    pub body_timeout: Duration,
    /// `--write-timeout-ms`: longest time spent writing one response to a slow reader.
    pub write_timeout: Duration,
    /// `--max-requests-per-connection`: then the keep-alive connection is closed.
    pub max_requests_per_connection: u32,
    /// `--bitcoin-rpc-user`, `--bitcoin-rpc-password` or `--bitcoin-rpc-cookie`:
    /// how every bitcoind this node talks to is logged into.
    pub bitcoin_auth: BitcoinAuth,
    /// `--ephemeral`: run on a new temporary data dir, removed when the
    /// node stops (`data_dir` is not used).
    pub ephemeral: bool,
    /// `--log-format`: how log lines are written to stderr.
    pub log_format: LogFormat,
}

/// `--log-format`: env_logger's text lines (the default), or one JSON
/// object per line for a log pipeline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
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
    /// bitcoind's RPC URL (`http://HOST:PORT`).
    pub url: String,
    /// The shared credential flags ([`BitcoinAuth`]).
    pub credentials: Credentials,
    /// `--bitcoin-finality-depth`: confirmations before a block is scanned.
    pub finality_depth: u64,
    /// `--sequencer-da-pubkey`, else the network's (regtest's without `--network`).
    pub sequencer_key: DaPublicKey,
    /// `--prover-da-pubkey`, else the network's (regtest's without `--network`).
    pub prover_key: DaPublicKey,
}

/// The bitcoind credential flags, shared by every flag that names a
/// bitcoind (`--dev-bitcoin-rpc`): a user and password, or a cookie file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BitcoinAuth {
    pub user: Option<String>,
    pub password: Option<String>,
    pub cookie: Option<PathBuf>,
}

impl BitcoinAuth {
    /// Whether any credential flag was given.
    pub fn given(&self) -> bool {
        self.user.is_some() || self.password.is_some() || self.cookie.is_some()
    }

    /// The credentials for `flag` (the flag that names the bitcoind, for
    /// messages): exactly one of a cookie file or a user and password.
    pub fn credentials(&self, flag: &str) -> Result<Credentials, ConfigError> {
        match (&self.user, &self.password, &self.cookie) {
            (None, None, Some(path)) => Ok(Credentials::CookieFile(path.clone())),
            (Some(user), Some(password), None) => Ok(Credentials::UserPassword {
                user: user.clone(),
                password: password.clone(),
            }),
            (None, None, None) => Err(ConfigError(format!(
                "{flag} needs bitcoind's credentials: --bitcoin-rpc-cookie FILE (its \
                 <datadir>/regtest/.cookie) or --bitcoin-rpc-user and --bitcoin-rpc-password"
            ))),
            (_, _, Some(_)) => Err(ConfigError(
                "--bitcoin-rpc-cookie and --bitcoin-rpc-user/--bitcoin-rpc-password are two \
                 ways to log in to bitcoind: give one"
                    .into(),
            )),
            (Some(_), None, None) => Err(ConfigError(
                "--bitcoin-rpc-user needs --bitcoin-rpc-password".into(),
            )),
            (None, Some(_), None) => Err(ConfigError(
                "--bitcoin-rpc-password needs --bitcoin-rpc-user".into(),
            )),
        }
    }
}

/// A bitcoind RPC URL (`flag` names it in the message).
fn bitcoin_url(flag: &str, value: &str) -> Result<String, ConfigError> {
    let host = value.strip_prefix("http://").unwrap_or("");
    if host.is_empty() || host.starts_with('/') || host.contains(' ') {
        return Err(ConfigError(format!(
            "{flag} takes bitcoind's RPC URL, http://HOST:PORT (its -rpcport), not {value:?}"
        )));
    }
    Ok(value.trim_end_matches('/').to_string())
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: "127.0.0.1:12346".to_string(),
            data_dir: PathBuf::from("./ledgerd-data"),
            source: SourceConfig::None,
            sync_chunk: 100,
            sync_concurrency: 8,
            allow_missing_tx_bodies: false,
            allow_fake_proofs: false,
            batch_proof_images: ImagePins::default(),
            sequencer_pubkey: None,
            network: None,
            kumquat_height: None,
            wire: Wire::Ledgerd,
            max_range: None,
            max_batch: 50,
            max_body: 10 * 1024 * 1024,
            max_connections: 100,
            idle_timeout: Duration::from_secs(10),
            health_max_lag: Duration::from_secs(60),
            health_max_behind: 100,
            cors_origin: None,
            read_only: false,
            reuse_port: false,
            body_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
            max_requests_per_connection: 1000,
            bitcoin_auth: BitcoinAuth::default(),
            ephemeral: false,
            log_format: LogFormat::Text,
        }
    }
}

/// Which answer shapes the server writes (`--wire`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wire {
    /// ledgerd's own shapes, `docs/API.md` (the default; `--wire ledgerd`,
    /// or `seed`, its earlier name).
    #[default]
    Ledgerd,
    /// A Citrea v0.6 node's: lowercase statuses, method 11 an array without
    /// height, method 12 with height outside, ranges of at most 20 blocks.
    Citrea,
}

impl Wire {
    /// The longest range served when `--max-range` is not given.
    pub fn default_max_range(self) -> u64 {
        match self {
            Wire::Ledgerd => 1000,
            Wire::Citrea => 20,
        }
    }
}

impl Config {
    /// The longest `ledger_getSoftConfirmationRange` served.
    pub fn max_range(&self) -> u64 {
        self.max_range
            .unwrap_or_else(|| self.wire.default_max_range())
    }

    /// The fork table: `--kumquat-height`, else the network's, else Kumquat
    /// from height 0.
    pub fn forks(&self) -> ForkTable {
        match (self.kumquat_height, self.network) {
            (Some(h), _) => ForkTable::kumquat_from(h),
            (None, Some(n)) => n.fork_table(),
            (None, None) => ForkTable::KUMQUAT_ONLY,
        }
    }

    /// The sequencer key blocks must carry: `--sequencer-pubkey`, else the
    /// network's; `None`: the first block's key is pinned.
    pub fn sequencer_key(&self) -> Option<[u8; 32]> {
        self.sequencer_pubkey
            .or_else(|| self.network.and_then(Network::sequencer_key))
    }

    /// Which batch-proof receipts prove heights: `--network`'s images, the
    /// devnet's own, `--batch-proof-image` pins, or (none of these) the
    /// image each receipt claims; fakes count except on a named network
    /// without `--allow-fake-proofs`.
    pub fn receipt_rules(&self) -> ProofRules {
        ProofRules::new(
            self.network,
            self.batch_proof_images,
            self.allow_fake_proofs,
            matches!(self.source, SourceConfig::Devnet(_)),
        )
    }

    /// Where [`Config::sequencer_key`] comes from, for messages: `testnet
    /// key`, `--sequencer-pubkey key`, or `key of the first block`.
    pub fn sequencer_key_name(&self) -> String {
        match (self.sequencer_pubkey, self.network) {
            (Some(_), _) => "--sequencer-pubkey key".to_string(),
            (None, Some(n)) if n.sequencer_key().is_some() => format!("{n} key"),
            _ => "key of the first block".to_string(),
        }
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
    Help,
    Version,
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
    /// `--network`'s batch-proof images or `--batch-proof-image`; `--allow-fake-proofs`.
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

/// `ledgerd verify-proof [--network N] [--batch-proof-image FORK=HEX] [--allow-fake-proofs] FILE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyProofArgs {
    /// Proofs as the RPC answers them, or raw receipt bytes; `-` reads stdin.
    pub file: PathBuf,
    /// `--network`'s images or `--batch-proof-image`; `--allow-fake-proofs`.
    pub receipts: ProofRules,
    /// `--network` / `--kumquat-height`: the fork of a new-layout journal.
    pub forks: ForkTable,
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

/// The subcommand and the flags only a subcommand takes.
#[derive(Debug, Default)]
struct Extra {
    subcommand: Option<&'static str>,
    file: Option<PathBuf>,
    no_verify: bool,
    from: Option<u64>,
    to: Option<u64>,
    to_l2: Option<u64>,
    to_l1: Option<u64>,
    dry_run: bool,
    /// `--data-dir` was given (the config file's counts too).
    data_dir_given: bool,
    /// Which flags were given (for "only applies to" errors).
    given: Vec<String>,
    /// The upstreams so far came from the config file: the command line's
    /// first `--upstream` replaces them instead of adding to them.
    upstreams_from_file: bool,
}

const SUBCOMMANDS: [&str; 7] = [
    "run",
    "serve-readonly",
    "import",
    "export",
    "verify",
    "verify-proof",
    "rollback",
];

/// Config-file keys that are switches (`key = true|false`); every other key takes a value.
const SWITCHES: [&str; 8] = [
    "dev",
    "dry-run",
    "ephemeral",
    "no-verify",
    "reuse-port",
    "allow-missing-tx-bodies",
    "allow-fake-proofs",
    "dev-allow-remote-control",
];

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
    ledgerd [run] [OPTIONS]                           run a node (the default)
    ledgerd serve-readonly --data-dir DIR [OPTIONS]   serve a ledger another ledgerd writes
    ledgerd import FILE.jsonl [--data-dir DIR] [--no-verify]
                                                      load a fixture (`-` reads stdin)
    ledgerd export [--from A] [--to B] [--data-dir DIR]
                                                      write heights A..=B as a fixture to stdout
    ledgerd verify [--network N | --kumquat-height H] [--sequencer-pubkey HEX] FILE
                                                      check soft confirmations (RPC answers;
                                                      `-` reads stdin): hashes, signatures, links
    ledgerd verify-proof [--network N] [--batch-proof-image FORK=HEX] [--allow-fake-proofs] FILE
                                                      check batch proofs (RPC answers or raw
                                                      receipt bytes): journal, receipt, image
    ledgerd rollback --data-dir DIR (--to-l2 H | --to-l1 S) [--dry-run]
                                                      take a stopped node's ledger back to L2
                                                      height H or DA slot S (one transaction)

CHAIN SOURCE (one of):
    --dev                     run the embedded devnet (a simulated sequencer and DA chain)
    --upstream URL            follow another node's L2 chain and DA view over JSON-RPC;
                              give it again (or a comma list) for fallbacks, the first preferred

DEVNET:
    --dev-prefill N           heights 1..=N exist before the server listens [default: 0]
    --dev-block-ms MS         then one new block every MS ms, 0 for none [default: 1000]
    --dev-seed S              the chain derives from this number [default: 1]
    --dev-proof-bytes N       bytes of each batch proof [default: 2048]
    --ephemeral               run on a new temporary data dir, removed when the node stops
                              (for test harnesses; not with --data-dir DIR)
    --dev-allow-remote-control
                              answer the dev_* methods (mine, commit, prove...) on a
                              non-loopback --bind too [default: loopback only]
    --dev-bitcoin-rpc URL     DA slots are real blocks the devnet mines on this regtest
                              bitcoind (http://HOST:PORT), its commitments and proofs
                              published in Citrea's format; it must be the only miner
                              [default: a simulated DA chain]

BITCOIND CREDENTIALS (for every flag that names a bitcoind):
    --bitcoin-rpc-cookie FILE bitcoind's cookie file (<datadir>/regtest/.cookie), read again
                              when bitcoind restarts
    --bitcoin-rpc-user USER, --bitcoin-rpc-password PASSWORD
                              bitcoind's -rpcuser/-rpcpassword (or an -rpcauth entry)

BITCOIN DA (a follower, beside --upstream URL; see docs/BITCOIN.md):
    --bitcoin-rpc URL         read the DA layer (commitments, proofs, the blocks L2 blocks
                              name) from this bitcoind (http://HOST:PORT, -txindex=1), not
                              from the upstream
    --bitcoin-finality-depth N
                              scan blocks with at least N confirmations [default: 30]
    --sequencer-da-pubkey HEX who signs sequencer commitments (33-byte compressed key)
                              [default: the network's, else Citrea's regtest key]
    --prover-da-pubkey HEX    who signs proofs [default: the network's, else regtest's]

FOLLOWER:
    --sync-chunk N            blocks per range request (cut to the upstream's limit) [default: 100]
    --sync-concurrency N      range requests kept in flight at once [default: 8]
    --allow-missing-tx-bodies accept blocks an upstream answers without their transactions
                              (Citrea's include_tx_body = false): Kumquat blocks on the
                              sequencer's signature over their stated hash, Genesis blocks
                              on their link to the block below

CHAIN RULES (run, import, verify, verify-proof):
    --network NAME            testnet, devnet, mainnet or nightly: Citrea v0.6.2's Kumquat
                              height and sequencer key for that network
    --kumquat-height H        Genesis rules below L2 height H, Kumquat from H
                              [default: the network's, else 0: Kumquat for every block]
    --sequencer-pubkey HEX    the sequencer key blocks must carry
                              [default: the network's, else the key of block 1]
    --allow-fake-proofs       let fake risc0 receipts (RISC0_DEV_MODE's) prove heights on a
                              named --network [default: only with no --network, any chain]
    --batch-proof-image FORK=HEX
                              the batch-proof image ID (64 hex digits, as risc0 prints it)
                              of fork genesis or kumquat, for a chain without --network
                              (repeat for both forks) [default: the network's images; the
                              devnet's own; else not pinned: each receipt's claimed image,
                              counted in /health and /metrics]
    Every batch proof's bytes must be a risc0 receipt of the chain's batch-proof
    image whose journal is its proofOutput.
    A data dir keeps the fork table it was started with and refuses another.

SERVER:
    --bind ADDR               address to listen on; port 0 takes a free port [default: 127.0.0.1:12346]
    --data-dir DIR            where the LMDB ledger lives [default: ./ledgerd-data]
    --wire ledgerd|citrea     answer shapes: ledgerd's own, or a Citrea v0.6 node's [default: ledgerd]
    --max-range N             longest ledger_getSoftConfirmationRange [default: 1000; 20 with --wire citrea]
    --max-batch N             most calls in one batch request [default: 50]
    --max-body BYTES          largest request body [default: 10485760]
    --max-connections N       open connections at once; more get 503 [default: 100]
    --idle-timeout-ms MS      close a connection idle this long [default: 10000]
    --body-timeout-ms MS      a request body must arrive within this, else 408 [default: 5000]
    --write-timeout-ms MS     give up writing an answer to a client that does not read [default: 10000]
    --max-requests-per-connection N
                              then close the keep-alive connection [default: 1000]
    --reuse-port              set SO_REUSEPORT: several servers may bind one port

FIXTURES:
    --no-verify               import: store records without the chain-rule checks
    --from A, --to B          export: the heights to write [default: 1 to the head]

ROLLBACK (on a stopped node's data dir; see docs/OPERATIONS.md):
    --to-l2 H                 keep L2 heights 1..=H, drop the rest and what depends on it
    --to-l1 S                 keep DA slots up to S, and the L2 blocks that point at them
    --dry-run                 print what would be removed, remove nothing

    --config FILE             read flags from FILE: `key = value` lines, one per flag
                              (the flag without `--`; switches take true/false);
                              flags on the command line override the file

OPERATIONS:
    --health-max-lag-s S      GET /health answers 503 once sync has stalled this long [default: 60]
    --health-max-behind N     ... or while a follower's L2 head is more than N blocks behind its
                              upstream's [default: 100]
    --cors-origin ORIGIN      only this browser origin may read answers [default: any (*)]
    --log-format text|json    log lines on stderr as text, or one JSON object a line [default: text]

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
    crate::hexstr::decode_array(value).map_err(|_| {
        ConfigError(format!(
            "--sequencer-pubkey takes 64 hex digits (a 32-byte Ed25519 key), not {value:?}"
        ))
    })
}

/// `--cors-origin`: `*`, or `scheme://host[:port]` as a browser sends it in `Origin`.
fn cors_origin(value: &str) -> Result<Option<String>, ConfigError> {
    if value == "*" {
        return Ok(None);
    }
    let rest = value
        .strip_prefix("http://")
        .or_else(|| value.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() && !host.contains(['/', '?', '#', ' ']) => {
            Ok(Some(value.to_string()))
        }
        _ => Err(ConfigError(format!(
            "--cors-origin takes an origin like https://explorer.example or http://127.0.0.1:8080 \
             (scheme and host, no path), or * for any, not {value:?}"
        ))),
    }
}

/// Adds the URLs of one `--upstream` value (one URL, or a comma list) to `list`.
fn upstream_urls(list: &mut Vec<String>, value: &str) -> Result<(), ConfigError> {
    for url in value.split(',').map(str::trim) {
        let host = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .unwrap_or("");
        if host.is_empty() || host.starts_with('/') || host.contains(' ') {
            return Err(ConfigError(format!(
                "--upstream takes an http:// or https:// URL of a node's JSON-RPC \
                 (several as a comma list, or the flag again), not {url:?}"
            )));
        }
        if list.iter().any(|u| u == url) {
            return Err(ConfigError(format!(
                "--upstream {url} is given twice; each upstream once, the preferred first"
            )));
        }
        list.push(url.to_string());
    }
    Ok(())
}

/// What the flags have set so far (the config file's, then the command line's).
#[derive(Default)]
struct State {
    config: Config,
    dev: DevnetConfig,
    dev_on: bool,
    dev_flags: Vec<String>,
    upstreams: Vec<String>,
    bitcoin: BitcoinFlags,
    extra: Extra,
}

/// `--bitcoin-rpc` and the flags that only apply with it, as given.
#[derive(Default)]
struct BitcoinFlags {
    url: Option<String>,
    finality_depth: Option<u64>,
    sequencer_key: Option<DaPublicKey>,
    prover_key: Option<DaPublicKey>,
    /// The flags given that need `--bitcoin-rpc`.
    given: Vec<String>,
}

fn da_pubkey(flag: &str, value: &str) -> Result<DaPublicKey, ConfigError> {
    DaPublicKey::from_hex(value.trim_start_matches("0x")).map_err(|e| {
        ConfigError(format!(
            "{flag} takes a 33-byte compressed secp256k1 key as 66 hex digits (02... or 03...): \
             {e}"
        ))
    })
}

/// Parses the arguments after the program name: an optional subcommand,
/// then flags; `--config FILE` is read first, and the command line
/// overrides it.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, ConfigError> {
    let mut args: Vec<String> = args.into_iter().collect();
    let mut state = State::default();
    if let Some(first) = args.first() {
        if let Some(sub) = SUBCOMMANDS.iter().find(|s| **s == first.as_str()) {
            state.extra.subcommand = Some(sub);
            args.remove(0);
        }
    }
    if let Some(path) = config_file_arg(&args)? {
        let text = std::fs::read_to_string(&path).map_err(|e| {
            ConfigError(format!(
                "config file {} cannot be read: {e}",
                path.display()
            ))
        })?;
        apply_file(&mut state, &path, &text)?;
    }
    if let Some(help) = parse_into(&mut state, args)? {
        return Ok(help);
    }
    finish(state)
}

/// The value of `--config` on the command line, if given.
fn config_file_arg(args: &[String]) -> Result<Option<PathBuf>, ConfigError> {
    let mut found = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--config" {
            let v = it
                .next()
                .ok_or_else(|| ConfigError("--config needs a value".into()))?;
            found = Some(PathBuf::from(v));
        } else if let Some(v) = a.strip_prefix("--config=") {
            found = Some(PathBuf::from(v));
        }
    }
    Ok(found)
}

/// Applies a config file: `key = value` per line (`#` comments, blank
/// lines; values may be in double quotes). Each key is a flag without `--`.
fn apply_file(state: &mut State, path: &std::path::Path, text: &str) -> Result<(), ConfigError> {
    for (i, raw) in text.lines().enumerate() {
        let at = |key: &str, what: String| {
            ConfigError(if key.is_empty() {
                format!("config file {} line {}: {what}", path.display(), i + 1)
            } else {
                format!(
                    "config file {} line {}, key {key}: {what}",
                    path.display(),
                    i + 1
                )
            })
        };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(at(
                "",
                format!("{line:?} is not `key = value` (keys are the flags without --, e.g. `bind = 127.0.0.1:8080`)"),
            ));
        };
        let key = key.trim();
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        if key == "config" || key == "help" || key == "version" || key.starts_with('-') {
            return Err(at(
                key,
                "not a setting; keys are the flags without --, such as data-dir".into(),
            ));
        }
        let tokens = if SWITCHES.contains(&key) {
            match value {
                "true" => vec![format!("--{key}")],
                "false" => Vec::new(),
                other => {
                    return Err(at(
                        key,
                        format!("is a switch: write true or false, not {other:?}"),
                    ))
                }
            }
        } else {
            vec![format!("--{key}={value}")]
        };
        // A file may hold keys for other commands (one file for the node,
        // its replicas and import/export): only the command line's are checked.
        let mark = state.extra.given.len();
        parse_into(state, tokens).map_err(|e| {
            let msg = if e.0.starts_with("unknown argument") {
                "unknown key; keys are the flags of ledgerd --help without --".to_string()
            } else {
                e.0
            };
            at(key, msg)
        })?;
        state.extra.given.truncate(mark);
    }
    state.extra.upstreams_from_file = !state.upstreams.is_empty();
    Ok(())
}

/// Applies flags to `state`; `Some` for --help / --version.
fn parse_into<I: IntoIterator<Item = String>>(
    state: &mut State,
    args: I,
) -> Result<Option<Command>, ConfigError> {
    let State {
        config,
        dev,
        dev_on,
        dev_flags,
        upstreams,
        bitcoin,
        extra,
    } = state;
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
            "-h" | "--help" => return Ok(Some(Command::Help)),
            "-V" | "--version" => return Ok(Some(Command::Version)),
            "--dev" => *dev_on = true,
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
            "--dev-allow-remote-control" => {
                dev.allow_remote_control = true;
                dev_flags.push(flag);
            }
            "--dev-proof-bytes" => {
                dev.proof_bytes = number(&flag, &value(&flag)?)?;
                dev_flags.push(flag);
            }
            "--dev-bitcoin-rpc" => {
                dev.bitcoin = Some(RegtestConfig {
                    url: bitcoin_url(&flag, &value(&flag)?)?,
                    credentials: Credentials::None,
                });
                dev_flags.push(flag);
            }
            "--bitcoin-rpc-user" => config.bitcoin_auth.user = Some(value(&flag)?),
            "--bitcoin-rpc-password" => config.bitcoin_auth.password = Some(value(&flag)?),
            "--bitcoin-rpc-cookie" => {
                config.bitcoin_auth.cookie = Some(PathBuf::from(value(&flag)?))
            }
            "--bitcoin-rpc" => bitcoin.url = Some(bitcoin_url(&flag, &value(&flag)?)?),
            "--bitcoin-finality-depth" => {
                let depth: u64 = number(&flag, &value(&flag)?)?;
                if depth == 0 {
                    return Err(ConfigError(
                        "--bitcoin-finality-depth must be at least 1 (1: every block is final)"
                            .into(),
                    ));
                }
                bitcoin.finality_depth = Some(depth);
                bitcoin.given.push(flag);
            }
            "--sequencer-da-pubkey" => {
                bitcoin.sequencer_key = Some(da_pubkey(&flag, &value(&flag)?)?);
                bitcoin.given.push(flag);
            }
            "--prover-da-pubkey" => {
                bitcoin.prover_key = Some(da_pubkey(&flag, &value(&flag)?)?);
                bitcoin.given.push(flag);
            }
            "--upstream" => {
                if extra.upstreams_from_file {
                    upstreams.clear();
                    extra.upstreams_from_file = false;
                }
                upstream_urls(upstreams, &value(&flag)?)?;
            }
            "--sync-chunk" => {
                config.sync_chunk = number(&flag, &value(&flag)?)?;
                if config.sync_chunk == 0 {
                    return Err(ConfigError("--sync-chunk must be at least 1".into()));
                }
            }
            "--sync-concurrency" => {
                config.sync_concurrency = number(&flag, &value(&flag)?)?;
                if config.sync_concurrency == 0 || config.sync_concurrency > 64 {
                    return Err(ConfigError(
                        "--sync-concurrency takes 1 to 64 (range requests in flight at once)"
                            .into(),
                    ));
                }
            }
            "--allow-missing-tx-bodies" => config.allow_missing_tx_bodies = true,
            "--allow-fake-proofs" => config.allow_fake_proofs = true,
            "--batch-proof-image" => config
                .batch_proof_images
                .add(&value(&flag)?)
                .map_err(ConfigError)?,
            "--wire" => {
                config.wire = match value(&flag)?.as_str() {
                    "ledgerd" | "seed" => Wire::Ledgerd,
                    "citrea" => Wire::Citrea,
                    other => {
                        return Err(ConfigError(format!(
                            "--wire takes ledgerd (ledgerd's own answer shapes) or citrea (a \
                             Citrea v0.6 node's), not {other:?}"
                        )))
                    }
                }
            }
            "--sequencer-pubkey" => config.sequencer_pubkey = Some(pubkey(&value(&flag)?)?),
            "--network" => {
                let name = value(&flag)?;
                config.network = Some(
                    name.parse()
                        .map_err(|e| ConfigError(format!("--network: {e}")))?,
                );
            }
            "--kumquat-height" => config.kumquat_height = Some(number(&flag, &value(&flag)?)?),
            "--bind" => config.bind = value(&flag)?,
            "--data-dir" => {
                config.data_dir = PathBuf::from(value(&flag)?);
                extra.data_dir_given = true;
            }
            "--ephemeral" => {
                config.ephemeral = true;
                extra.given.push(flag);
            }
            "--to-l2" => {
                extra.to_l2 = Some(number(&flag, &value(&flag)?)?);
                extra.given.push(flag);
            }
            "--to-l1" => {
                extra.to_l1 = Some(number(&flag, &value(&flag)?)?);
                extra.given.push(flag);
            }
            "--dry-run" => {
                extra.dry_run = true;
                extra.given.push(flag);
            }
            "--max-range" => config.max_range = Some(number(&flag, &value(&flag)?)?),
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
            "--health-max-lag-s" => {
                let s: u64 = number(&flag, &value(&flag)?)?;
                if s == 0 {
                    return Err(ConfigError("--health-max-lag-s must be at least 1".into()));
                }
                config.health_max_lag = Duration::from_secs(s);
            }
            "--health-max-behind" => config.health_max_behind = number(&flag, &value(&flag)?)?,
            "--cors-origin" => config.cors_origin = cors_origin(&value(&flag)?)?,
            "--log-format" => {
                config.log_format = match value(&flag)?.as_str() {
                    "text" => LogFormat::Text,
                    "json" => LogFormat::Json,
                    other => {
                        return Err(ConfigError(format!(
                            "--log-format takes text or json, not {other:?}"
                        )))
                    }
                }
            }
            // Subcommands' flags (checked against the subcommand in `finish`).
            "--config" => {
                value(&flag)?; // read before the other flags
            }
            "--reuse-port" => {
                config.reuse_port = true;
                extra.given.push(flag);
            }
            "--no-verify" => {
                extra.no_verify = true;
                extra.given.push(flag);
            }
            "--from" => {
                extra.from = Some(number(&flag, &value(&flag)?)?);
                extra.given.push(flag);
            }
            "--to" => {
                extra.to = Some(number(&flag, &value(&flag)?)?);
                extra.given.push(flag);
            }
            other
                if (other == "-" || !other.starts_with('-'))
                    && matches!(extra.subcommand, Some("import" | "verify" | "verify-proof")) =>
            {
                if extra.file.is_some() {
                    return Err(ConfigError(format!(
                        "{} takes one FILE; {other:?} is a second one",
                        extra.subcommand.unwrap_or("import")
                    )));
                }
                extra.file = Some(PathBuf::from(other));
            }
            other if !other.starts_with('-') && extra.subcommand.is_none() => {
                return Err(ConfigError(format!(
                    "unknown command {other:?}; the commands are {}; see ledgerd --help",
                    SUBCOMMANDS.join(", ")
                )))
            }
            other => {
                return Err(ConfigError(format!(
                    "unknown argument {other:?}; see ledgerd --help"
                )))
            }
        }
    }
    Ok(None)
}

/// Checks the flags against each other and the subcommand.
fn finish(state: State) -> Result<Command, ConfigError> {
    let State {
        mut config,
        mut dev,
        dev_on,
        dev_flags,
        upstreams,
        bitcoin,
        extra,
    } = state;
    let sub = extra.subcommand.unwrap_or("run");
    let allowed: &[&str] = match sub {
        "import" => &["--no-verify"],
        "export" => &["--from", "--to"],
        "verify" | "verify-proof" => &[],
        "rollback" => &["--to-l2", "--to-l1", "--dry-run"],
        "serve-readonly" => &["--reuse-port"],
        _ => &["--reuse-port", "--ephemeral"],
    };
    if let Some(flag) = extra.given.iter().find(|f| !allowed.contains(&f.as_str())) {
        return Err(ConfigError(format!(
            "{flag} does not apply to `ledgerd {sub}`; see ledgerd --help"
        )));
    }
    if let Some(n) = config.network {
        for fork in [crate::chain::Fork::Genesis, crate::chain::Fork::Kumquat] {
            let (Some(pin), Ok(own)) = (
                config.batch_proof_images.get(fork),
                image_ids::batch_image(Some(n), fork),
            ) else {
                continue;
            };
            if pin != own.id {
                return Err(ConfigError(format!(
                    "{} {}={} is not {own} {}: --network {n} pins its own; drop the pin, or \
                     --network for a chain without a name",
                    image_ids::BATCH_PROOF_IMAGE,
                    image_ids::fork_word(fork),
                    hex::encode(pin),
                    hex::encode(own.id)
                )));
            }
        }
    }
    match sub {
        "import" => {
            let file = extra.file.ok_or_else(|| {
                ConfigError(
                    "import needs a FILE (one JSON record per line; `-` reads stdin)".into(),
                )
            })?;
            return Ok(Command::Import(ImportArgs {
                forks: config.forks(),
                sequencer_pubkey: config.sequencer_key(),
                receipts: config.receipt_rules(),
                file,
                data_dir: config.data_dir,
                verify: !extra.no_verify,
            }));
        }
        "verify" => {
            let file = extra.file.ok_or_else(|| {
                ConfigError(
                    "verify needs a FILE of soft confirmations as the RPC answers them (`-` reads stdin)"
                        .into(),
                )
            })?;
            return Ok(Command::Verify(VerifyArgs {
                file,
                forks: config.forks(),
                sequencer_key: config.sequencer_key(),
                sequencer_key_name: config.sequencer_key_name(),
            }));
        }
        "verify-proof" => {
            let file = extra.file.ok_or_else(|| {
                ConfigError(
                    "verify-proof needs a FILE: a proof as the RPC answers it, or raw receipt \
                     bytes (`-` reads stdin)"
                        .into(),
                )
            })?;
            return Ok(Command::VerifyProof(VerifyProofArgs {
                file,
                receipts: config.receipt_rules(),
                forks: config.forks(),
            }));
        }
        "rollback" => {
            let to =
                match (extra.to_l2, extra.to_l1) {
                    (Some(h), None) => RollbackTo::L2(h),
                    (None, Some(s)) => RollbackTo::L1(s),
                    (Some(_), Some(_)) => {
                        return Err(ConfigError(
                            "rollback takes one target: --to-l2 H (an L2 height) or --to-l1 S \
                         (a DA slot), not both"
                                .into(),
                        ))
                    }
                    (None, None) => return Err(ConfigError(
                        "rollback needs a target: --to-l2 H keeps L2 heights up to H, --to-l1 S \
                         keeps DA slots up to S"
                            .into(),
                    )),
                };
            if !extra.data_dir_given {
                return Err(ConfigError(
                    "rollback needs --data-dir DIR: the data dir of the stopped node to take back"
                        .into(),
                ));
            }
            return Ok(Command::Rollback(RollbackArgs {
                data_dir: config.data_dir,
                to,
                dry_run: extra.dry_run,
            }));
        }
        "export" => {
            let from = extra.from.unwrap_or(1);
            if let Some(to) = extra.to {
                if from > to {
                    return Err(ConfigError(format!(
                        "--from {from} is above --to {to}: export takes heights from A up to B"
                    )));
                }
            }
            return Ok(Command::Export(ExportArgs {
                data_dir: config.data_dir,
                from,
                to: extra.to,
            }));
        }
        "serve-readonly" => {
            if dev_on || !upstreams.is_empty() {
                return Err(ConfigError(
                    "serve-readonly has no chain source: it serves the ledger another ledgerd writes; drop --dev / --upstream".into(),
                ));
            }
            config.read_only = true;
        }
        _ => {}
    }
    if config.ephemeral && extra.data_dir_given {
        return Err(ConfigError(
            "--ephemeral runs on a new temporary data dir, removed at exit: drop --data-dir (or \
             --ephemeral, to keep the ledger)"
                .into(),
        ));
    }
    if dev_on && !upstreams.is_empty() {
        return Err(ConfigError(
            "--dev and --upstream are two chain sources: choose one".into(),
        ));
    }
    if dev_on && !config.batch_proof_images.is_empty() {
        return Err(ConfigError(format!(
            "{} pins the images of a chain a follower reads; the devnet's proofs claim its own \
             image (its /health shows it): drop the flag, or give it to the follower",
            image_ids::BATCH_PROOF_IMAGE
        )));
    }
    if dev_on {
        if let Some(n) = config.network {
            return Err(ConfigError(format!(
                "--network {n} names a public Citrea network, whose sequencer key the devnet does not hold: \
                 give the devnet a fork height with --kumquat-height H instead"
            )));
        }
    }
    if !dev_on {
        if let Some(flag) = dev_flags.first() {
            return Err(ConfigError(format!("{flag} only applies with --dev")));
        }
    }
    if let Some(flag) = bitcoin.given.first().filter(|_| bitcoin.url.is_none()) {
        return Err(ConfigError(format!(
            "{flag} only applies with --bitcoin-rpc"
        )));
    }
    if bitcoin.url.is_some() && upstreams.is_empty() {
        return Err(ConfigError(
            "--bitcoin-rpc reads the DA layer from Bitcoin; the L2 chain still comes from a \
             sequencer or full node: give --upstream URL too (the devnet on a regtest takes \
             --dev --dev-bitcoin-rpc URL)"
                .into(),
        ));
    }
    // One set of credential flags for every bitcoind this node talks to.
    match (&mut dev.bitcoin, &bitcoin.url) {
        (Some(b), _) => b.credentials = config.bitcoin_auth.credentials("--dev-bitcoin-rpc")?,
        (None, None) if config.bitcoin_auth.given() => {
            return Err(ConfigError(
                "--bitcoin-rpc-user, --bitcoin-rpc-password and --bitcoin-rpc-cookie only \
                 apply with --bitcoin-rpc or --dev-bitcoin-rpc"
                    .into(),
            ))
        }
        _ => {}
    }
    let bitcoin = match bitcoin.url {
        Some(url) => {
            // Without --network: Citrea's regtest keys (the devnet's).
            let preset = match config.network {
                Some(n) => keys::for_network(&n.to_string()),
                None => Some(keys::REGTEST),
            };
            let preset_key = |pick: fn(&keys::NetworkDaKeys) -> &'static str, flag: &str| {
                preset
                    .and_then(|k| DaPublicKey::from_hex(pick(&k)).ok())
                    .ok_or_else(|| {
                        ConfigError(format!(
                            "--network {} has no DA keys in Citrea v0.6.2: give {flag}",
                            config.network.map(|n| n.to_string()).unwrap_or_default()
                        ))
                    })
            };
            let sequencer_key = match bitcoin.sequencer_key {
                Some(k) => k,
                None => preset_key(|k| k.sequencer, "--sequencer-da-pubkey")?,
            };
            let prover_key = match bitcoin.prover_key {
                Some(k) => k,
                None => preset_key(|k| k.prover, "--prover-da-pubkey")?,
            };
            Some(BitcoinConfig {
                credentials: config.bitcoin_auth.credentials("--bitcoin-rpc")?,
                url,
                finality_depth: bitcoin.finality_depth.unwrap_or(DEFAULT_FINALITY_DEPTH),
                sequencer_key,
                prover_key,
            })
        }
        None => None,
    };
    config.source = if dev_on {
        SourceConfig::Devnet(dev)
    } else if !upstreams.is_empty() {
        SourceConfig::Upstream {
            urls: upstreams,
            bitcoin,
        }
    } else {
        SourceConfig::None
    };
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
    fn sequencer_pubkey_reads_hex_as_every_other_input_does() {
        let key = "52f41a5076498d1ae8bdfa57d19e91e3c2c94b6de21985d099cd48cfa7aef174";
        for form in [
            key.to_string(),
            format!("0x{key}"),
            format!("0X{}", key.to_uppercase()),
        ] {
            let c = run(&["--sequencer-pubkey", &form]).unwrap();
            assert_eq!(c.sequencer_pubkey.map(hex::encode).as_deref(), Some(key));
        }
        let e = run(&["--sequencer-pubkey", "0x52f4"]).unwrap_err();
        assert!(e.0.contains("takes 64 hex digits"), "{e}");
    }

    #[test]
    fn defaults_match_the_documented_ones() {
        let c = run(&[]).unwrap();
        assert_eq!(c.bind, "127.0.0.1:12346");
        assert_eq!(c.data_dir, PathBuf::from("./ledgerd-data"));
        assert_eq!(
            (c.max_range(), c.max_batch, c.max_body),
            (1000, 50, 10 << 20)
        );
        assert_eq!((c.wire, c.sync_concurrency), (Wire::Ledgerd, 8));
        assert!(!c.allow_missing_tx_bodies);
        assert!(c.source.devnet().is_none());
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
        let d = c.source.devnet().unwrap();
        assert_eq!((d.prefill, d.block_ms, d.seed), (100, 0, 9));
    }

    #[test]
    fn ops_flags_parse_and_check_their_values() {
        let c = run(&[]).unwrap();
        assert_eq!(c.health_max_lag, Duration::from_secs(60));
        assert_eq!(c.cors_origin, None);
        let c = run(&[
            "--health-max-lag-s",
            "5",
            "--cors-origin",
            "http://127.0.0.1:8080",
        ])
        .unwrap();
        assert_eq!(c.health_max_lag, Duration::from_secs(5));
        assert_eq!(c.cors_origin.as_deref(), Some("http://127.0.0.1:8080"));
        assert_eq!(run(&["--cors-origin=*"]).unwrap().cors_origin, None);
        let e = run(&["--cors-origin", "explorer.example/x"]).unwrap_err();
        assert!(e.0.contains("--cors-origin"), "{e}");
        let e = run(&["--health-max-lag-s", "0"]).unwrap_err();
        assert!(e.0.contains("at least 1"), "{e}");
    }

    #[test]
    fn log_format_is_text_unless_json_is_asked_for() {
        assert_eq!(run(&[]).unwrap().log_format, LogFormat::Text);
        assert_eq!(
            run(&["--log-format", "json"]).unwrap().log_format,
            LogFormat::Json
        );
        assert_eq!(
            run(&["--log-format=text"]).unwrap().log_format,
            LogFormat::Text
        );
        let e = run(&["--log-format", "yaml"]).unwrap_err();
        assert!(e.0.contains("--log-format takes text or json"), "{e}");
    }

    #[test]
    fn wire_citrea_serves_20_block_ranges_unless_max_range_says_otherwise() {
        let c = run(&["--wire", "citrea"]).unwrap();
        assert_eq!((c.wire, c.max_range()), (Wire::Citrea, 20));
        let c = run(&["--wire=citrea", "--max-range", "50"]).unwrap();
        assert_eq!(c.max_range(), 50);
        let e = run(&["--wire", "json"]).unwrap_err();
        assert!(e.0.contains("--wire takes ledgerd"), "{e}");
        let c = run(&[
            "--upstream",
            "http://x",
            "--sync-concurrency",
            "3",
            "--allow-missing-tx-bodies",
        ])
        .unwrap();
        assert_eq!((c.sync_concurrency, c.allow_missing_tx_bodies), (3, true));
        let e = run(&["--sync-concurrency", "0"]).unwrap_err();
        assert!(e.0.contains("1 to 64"), "{e}");
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

    #[test]
    fn upstreams_are_listed_in_order_by_repeating_the_flag_or_a_comma_list() {
        let c = run(&[
            "--upstream",
            "http://a:1",
            "--upstream=http://b:2, https://c:3",
        ])
        .unwrap();
        assert_eq!(
            c.source.upstreams(),
            ["http://a:1", "http://b:2", "https://c:3"]
        );
        assert!(run(&[]).unwrap().source.upstreams().is_empty());
        let e = run(&["--upstream", "a:1"]).unwrap_err();
        assert!(e.0.contains("http:// or https:// URL"), "{e}");
        let e = run(&["--upstream", "http://a:1,"]).unwrap_err();
        assert!(e.0.contains("not \"\""), "{e}");
        let e = run(&["--upstream", "http://a:1", "--upstream", "http://a:1"]).unwrap_err();
        assert!(e.0.contains("given twice"), "{e}");
    }

    #[test]
    fn the_command_lines_upstreams_replace_the_config_files() {
        let text = "upstream = http://a:1\nupstream = http://b:2\n";
        let c = run_with_file(text, &[]).unwrap();
        assert_eq!(c.source.upstreams(), ["http://a:1", "http://b:2"]);
        let c = run_with_file(
            text,
            &["--upstream", "http://c:3", "--upstream", "http://a:1"],
        )
        .unwrap();
        assert_eq!(c.source.upstreams(), ["http://c:3", "http://a:1"]);
    }

    #[test]
    fn health_max_behind_defaults_to_100_blocks() {
        assert_eq!(run(&[]).unwrap().health_max_behind, 100);
        assert_eq!(
            run(&["--health-max-behind", "7"])
                .unwrap()
                .health_max_behind,
            7
        );
        let e = run(&["--health-max-behind", "x"]).unwrap_err();
        assert!(e.0.contains("--health-max-behind"), "{e}");
    }

    fn with_file(sub: Option<&str>, text: &str, args: &[&str]) -> Result<Command, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledgerd.conf");
        std::fs::write(&path, text).unwrap();
        let mut all: Vec<String> = sub.iter().map(|s| s.to_string()).collect();
        all.push("--config".into());
        all.push(path.display().to_string());
        all.extend(args.iter().map(|s| s.to_string()));
        parse(all)
    }

    fn run_with_file(text: &str, args: &[&str]) -> Result<Config, ConfigError> {
        match with_file(None, text, args)? {
            Command::Run(c) => Ok(*c),
            other => panic!("expected a run, got {other:?}"),
        }
    }

    #[test]
    fn a_config_file_sets_flags_and_the_command_line_overrides_it() {
        let text = "# ledgerd\n\nbind = 0.0.0.0:9000\nmax-range = \"7\"\ndev = true\ndev-seed=3\nreuse-port = true\n";
        let c = run_with_file(text, &[]).unwrap();
        assert_eq!(c.bind, "0.0.0.0:9000");
        assert_eq!(c.max_range(), 7);
        assert_eq!(c.source.devnet().unwrap().seed, 3);
        assert!(c.reuse_port);
        let c = run_with_file(text, &["--max-range", "9", "--bind=127.0.0.1:0"]).unwrap();
        assert_eq!((c.bind.as_str(), c.max_range()), ("127.0.0.1:0", 9));
        assert_eq!(
            c.source.devnet().unwrap().seed,
            3,
            "what the command line leaves alone stays"
        );
        let c = run_with_file("dev = false\n", &[]).unwrap();
        assert!(c.source.devnet().is_none());
        // One file for every command: keys of other commands are ignored.
        let shared = "data-dir = /srv/l\nreuse-port = true\nno-verify = true\n";
        assert!(!run_with_file(shared, &[]).unwrap().read_only);
        let Ok(Command::Import(i)) = with_file(Some("import"), shared, &["f.jsonl"]) else {
            panic!("not an import")
        };
        assert_eq!((i.data_dir.to_str(), i.verify), (Some("/srv/l"), false));
    }

    #[test]
    fn config_file_errors_name_the_file_line_and_key() {
        let e = run_with_file("bind = 127.0.0.1:0\nmax-range = many\n", &[]).unwrap_err();
        assert!(e.0.contains("ledgerd.conf line 2, key max-range:"), "{e}");
        assert!(e.0.contains("non-negative whole number"), "{e}");
        let e = run_with_file("\n\nfrobnicate = 1\n", &[]).unwrap_err();
        assert!(e.0.contains("line 3, key frobnicate: unknown key"), "{e}");
        let e = run_with_file("max-range 5\n", &[]).unwrap_err();
        assert!(
            e.0.contains("line 1: \"max-range 5\" is not `key = value`"),
            "{e}"
        );
        let e = run_with_file("dev = yes\n", &[]).unwrap_err();
        assert!(
            e.0.contains("key dev: is a switch: write true or false"),
            "{e}"
        );
        let e = run_with_file("dev-seed = 4\n", &[]).unwrap_err();
        assert!(e.0.contains("--dev-seed only applies with --dev"), "{e}");
        let e = parse(["--config".to_string(), "/nonexistent/ledgerd.conf".into()]).unwrap_err();
        assert!(
            e.0.contains("config file /nonexistent/ledgerd.conf cannot be read"),
            "{e}"
        );
    }

    #[test]
    fn dev_bitcoin_rpc_takes_one_set_of_the_shared_bitcoind_credentials() {
        let c = run(&[
            "--dev",
            "--dev-bitcoin-rpc",
            "http://127.0.0.1:18443/",
            "--bitcoin-rpc-cookie",
            "/d/regtest/.cookie",
        ])
        .unwrap();
        let b = c.source.devnet().unwrap().bitcoin.clone().unwrap();
        assert_eq!(b.url, "http://127.0.0.1:18443");
        assert_eq!(
            b.credentials,
            Credentials::CookieFile("/d/regtest/.cookie".into())
        );
        let c = run(&[
            "--dev",
            "--dev-bitcoin-rpc=http://h:1",
            "--bitcoin-rpc-user=u",
            "--bitcoin-rpc-password=p",
        ])
        .unwrap();
        assert_eq!(
            c.source
                .devnet()
                .unwrap()
                .bitcoin
                .clone()
                .unwrap()
                .credentials,
            Credentials::UserPassword {
                user: "u".into(),
                password: "p".into()
            }
        );
        let e = run(&["--dev", "--dev-bitcoin-rpc", "http://h:1"]).unwrap_err();
        assert!(e.0.contains("needs bitcoind's credentials"), "{e}");
        let e = run(&[
            "--dev",
            "--dev-bitcoin-rpc=http://h:1",
            "--bitcoin-rpc-user=u",
        ])
        .unwrap_err();
        assert!(e.0.contains("needs --bitcoin-rpc-password"), "{e}");
        let e = run(&[
            "--dev",
            "--dev-bitcoin-rpc=http://h:1",
            "--bitcoin-rpc-cookie=c",
            "--bitcoin-rpc-user=u",
            "--bitcoin-rpc-password=p",
        ])
        .unwrap_err();
        assert!(e.0.contains("give one"), "{e}");
        let e = run(&["--dev", "--dev-bitcoin-rpc", "127.0.0.1:1"]).unwrap_err();
        assert!(e.0.contains("http://HOST:PORT"), "{e}");
        let e = run(&["--dev", "--bitcoin-rpc-cookie", "c"]).unwrap_err();
        assert!(e.0.contains("or --dev-bitcoin-rpc"), "{e}");
        let e = run(&["--dev-bitcoin-rpc", "http://h:1"]).unwrap_err();
        assert!(e.0.contains("only applies with --dev"), "{e}");
    }

    #[test]
    fn bitcoin_rpc_reads_the_da_layer_beside_an_upstream_with_the_networks_da_keys() {
        let c = run(&[
            "--upstream",
            "http://u:1",
            "--bitcoin-rpc",
            "http://b:2",
            "--bitcoin-rpc-cookie",
            "/d/.cookie",
        ])
        .unwrap();
        let b = c.source.bitcoin().unwrap();
        assert_eq!(b.url, "http://b:2");
        assert_eq!(b.credentials, Credentials::CookieFile("/d/.cookie".into()));
        assert_eq!(b.finality_depth, 30);
        // No --network: Citrea's regtest keys, which the devnet signs with.
        assert_eq!(b.sequencer_key.to_string(), keys::REGTEST.sequencer);
        assert_eq!(b.prover_key.to_string(), keys::REGTEST.prover);
        assert_eq!(c.source.upstreams(), ["http://u:1"]);

        let other = keys::DEVNET.prover;
        let c = run(&[
            "--network",
            "testnet",
            "--upstream=http://u:1",
            "--bitcoin-rpc=http://b:2",
            "--bitcoin-rpc-user=u",
            "--bitcoin-rpc-password=p",
            "--bitcoin-finality-depth=1",
            "--prover-da-pubkey",
            other,
        ])
        .unwrap();
        let b = c.source.bitcoin().unwrap();
        assert_eq!(b.finality_depth, 1);
        assert_eq!(b.sequencer_key.to_string(), keys::TESTNET.sequencer);
        assert_eq!(b.prover_key.to_string(), other);

        let e = run(&["--bitcoin-rpc", "http://b:2", "--bitcoin-rpc-cookie", "c"]).unwrap_err();
        assert!(e.0.contains("give --upstream URL too"), "{e}");
        let e = run(&["--upstream", "http://u:1", "--bitcoin-rpc", "http://b:2"]).unwrap_err();
        assert!(e.0.contains("needs bitcoind's credentials"), "{e}");
        let e = run(&["--upstream", "http://u:1", "--bitcoin-finality-depth", "3"]).unwrap_err();
        assert!(e.0.contains("only applies with --bitcoin-rpc"), "{e}");
        let e = run(&["--bitcoin-finality-depth", "0"]).unwrap_err();
        assert!(e.0.contains("at least 1"), "{e}");
        let e = run(&["--sequencer-da-pubkey", "02ab"]).unwrap_err();
        assert!(e.0.contains("66 hex digits"), "{e}");
        let e = run(&[
            "--network=mainnet",
            "--upstream=http://u:1",
            "--bitcoin-rpc=http://b:2",
            "--bitcoin-rpc-cookie=c",
        ])
        .unwrap_err();
        assert!(e.0.contains("has no DA keys"), "{e}");
    }

    /// A sample value for a flag in a config file.
    fn sample(flag: &str) -> &'static str {
        match flag {
            "bind" => "127.0.0.1:0",
            "data-dir" => "/tmp/x",
            "upstream" => "http://127.0.0.1:1",
            "sequencer-pubkey" => {
                "92c5f7b9205a71b792b99c372c49d4d5256bb0d4a6db095520586d4330a15503"
            }
            "network" => "testnet",
            "cors-origin" => "http://127.0.0.1:8080",
            "wire" => "citrea",
            "log-format" => "json",
            "dev-bitcoin-rpc" | "bitcoin-rpc" => "http://127.0.0.1:1",
            "sequencer-da-pubkey" => keys::REGTEST.sequencer,
            "prover-da-pubkey" => keys::REGTEST.prover,
            "batch-proof-image" => {
                "kumquat=50757c7c24e165267d92794e59aca4e57758f3ac87cd20c512894aed4b87d4ff"
            }
            f if SWITCHES.contains(&f) => "true",
            _ => "5",
        }
    }

    #[test]
    fn every_flag_in_the_help_has_a_config_file_key() {
        let mut flags: Vec<&str> = USAGE
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter_map(|w| w.strip_prefix("--"))
            .filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
            .filter(|w| !["help", "version", "config"].contains(w))
            .collect();
        flags.sort_unstable();
        flags.dedup();
        assert!(flags.len() >= 18, "{flags:?}");
        for flag in flags {
            let sub = match flag {
                "no-verify" => Some("import"),
                "from" | "to" => Some("export"),
                "to-l2" | "to-l1" | "dry-run" => Some("rollback"),
                _ => None,
            };
            let mut text = format!("{flag} = {}\n", sample(flag));
            if sub == Some("rollback") {
                text.push_str("data-dir = /tmp/x\n");
                if flag == "dry-run" {
                    text.push_str("to-l2 = 5\n");
                }
            }
            if flag.starts_with("dev-") {
                text.push_str("dev = true\n");
            }
            // A bitcoind flag needs its credentials; a credential, its bitcoind.
            text.push_str(match flag {
                "dev-bitcoin-rpc" => "bitcoin-rpc-cookie = /tmp/.cookie\n",
                "bitcoin-rpc-user" => {
                    "dev = true\ndev-bitcoin-rpc = http://127.0.0.1:1\nbitcoin-rpc-password = p\n"
                }
                "bitcoin-rpc-password" => {
                    "dev = true\ndev-bitcoin-rpc = http://127.0.0.1:1\nbitcoin-rpc-user = u\n"
                }
                "bitcoin-rpc-cookie" => "dev = true\ndev-bitcoin-rpc = http://127.0.0.1:1\n",
                "bitcoin-rpc" => "upstream = http://u:1\nbitcoin-rpc-cookie = /tmp/.cookie\n",
                "bitcoin-finality-depth" | "sequencer-da-pubkey" | "prover-da-pubkey" => {
                    "upstream = http://u:1\nbitcoin-rpc = http://b:2\nbitcoin-rpc-cookie = c\n"
                }
                _ => "",
            });
            let args: &[&str] = if sub == Some("import") {
                &["f.jsonl"]
            } else {
                &[]
            };
            let parsed = with_file(sub, &text, args);
            assert!(parsed.is_ok(), "{flag}: {parsed:?}");
        }
    }

    #[test]
    fn network_and_kumquat_height_make_the_fork_table_and_the_key() {
        let c = run(&[]).unwrap();
        assert_eq!(c.forks(), ForkTable::KUMQUAT_ONLY);
        assert_eq!(c.sequencer_key(), None);
        assert_eq!(c.sequencer_key_name(), "key of the first block");
        let c = run(&["--upstream", "http://x", "--network", "testnet"]).unwrap();
        assert_eq!(c.forks(), ForkTable::kumquat_from(5_546_000));
        assert_eq!(c.sequencer_key(), Network::Testnet.sequencer_key());
        assert_eq!(c.sequencer_key_name(), "testnet key");
        // --kumquat-height and --sequencer-pubkey override the network's.
        let key = "92c5f7b9205a71b792b99c372c49d4d5256bb0d4a6db095520586d4330a15503";
        let c = run(&[
            "--network=devnet",
            "--kumquat-height",
            "7",
            "--sequencer-pubkey",
            key,
        ])
        .unwrap();
        assert_eq!(c.forks(), ForkTable::kumquat_from(7));
        assert_eq!(c.sequencer_key().map(hex::encode).as_deref(), Some(key));
        assert_eq!(c.sequencer_key_name(), "--sequencer-pubkey key");
        // Mainnet: Kumquat from 0, and no key in v0.6.2: the first block's.
        let c = run(&["--network", "mainnet"]).unwrap();
        assert_eq!(
            (c.forks(), c.sequencer_key()),
            (ForkTable::KUMQUAT_ONLY, None)
        );
        let c = run(&["--dev", "--kumquat-height", "50"]).unwrap();
        assert_eq!(c.forks().fork_at(49), crate::chain::Fork::Genesis);
        let e = run(&["--network", "signet"]).unwrap_err();
        assert!(e.0.contains("--network: unknown network \"signet\""), "{e}");
        let e = run(&["--dev", "--network", "testnet"]).unwrap_err();
        assert!(e.0.contains("--kumquat-height"), "{e}");
        let e = run(&["--kumquat-height", "x"]).unwrap_err();
        assert!(e.0.contains("--kumquat-height takes"), "{e}");
    }

    #[test]
    fn batch_proof_image_pins_a_chain_without_a_name_and_the_devnet_and_a_network_keep_their_own() {
        use crate::proof::image_ids::{TESTNET_BATCH_0, TESTNET_BATCH_1};
        use crate::proof::Images;
        let k = format!("kumquat={}", hex::encode(TESTNET_BATCH_1));
        let g = format!("genesis={}", hex::encode(TESTNET_BATCH_0));
        let c = run(&["--upstream", "http://x"]).unwrap();
        assert_eq!(c.receipt_rules().images, Images::Unpinned);
        let c = run(&["--upstream", "http://x", "--batch-proof-image", &k]).unwrap();
        let pins = c.batch_proof_images;
        assert_eq!((pins.kumquat, pins.genesis), (Some(TESTNET_BATCH_1), None));
        assert_eq!(c.receipt_rules().images, Images::Pinned(pins));
        let c = run(&[
            "--upstream",
            "http://x",
            "--batch-proof-image",
            &k,
            &format!("--batch-proof-image={g}"),
        ])
        .unwrap();
        assert_eq!(c.batch_proof_images.genesis, Some(TESTNET_BATCH_0));
        assert_eq!(
            run(&["--dev"]).unwrap().receipt_rules().images,
            Images::Devnet
        );
        let e = run(&["--dev", "--batch-proof-image", &k]).unwrap_err();
        assert!(
            e.0.contains("the devnet's proofs claim its own image"),
            "{e}"
        );
        // A network's own image may be repeated, not contradicted; nightly
        // has none, so a pin fills it.
        assert!(run(&["--network", "testnet", "--batch-proof-image", &k]).is_ok());
        let e = run(&["--network", "devnet", "--batch-proof-image", &k]).unwrap_err();
        assert!(e.0.contains("--network devnet pins its own"), "{e}");
        let c = run(&["--network", "nightly", "--batch-proof-image", &k]).unwrap();
        assert!(matches!(c.receipt_rules().images, Images::Network(_, p) if p.kumquat.is_some()));
        let e = run(&["--batch-proof-image", "kumquat=12"]).unwrap_err();
        assert!(e.0.contains("64 hex digits"), "{e}");
        let Command::VerifyProof(v) =
            parse(["verify-proof", "--batch-proof-image", &k, "-"].map(String::from)).unwrap()
        else {
            panic!("verify-proof")
        };
        assert_eq!(v.receipts.images, Images::Pinned(pins));
    }

    #[test]
    fn import_and_verify_take_the_chain_rule_flags() {
        let Command::Import(i) =
            parse(["import", "f.jsonl", "--network", "testnet"].map(String::from)).unwrap()
        else {
            panic!("not an import")
        };
        assert_eq!(i.forks, ForkTable::kumquat_from(5_546_000));
        assert_eq!(i.sequencer_pubkey, Network::Testnet.sequencer_key());
        let Command::Verify(v) =
            parse(["verify", "--kumquat-height", "3", "-"].map(String::from)).unwrap()
        else {
            panic!("not a verify")
        };
        assert_eq!(v.file, PathBuf::from("-"));
        assert_eq!(
            (v.forks, v.sequencer_key),
            (ForkTable::kumquat_from(3), None)
        );
        let e = parse(["verify"].map(String::from)).unwrap_err();
        assert!(e.0.contains("verify needs a FILE"), "{e}");
        let e = parse(["verify", "a", "b"].map(String::from)).unwrap_err();
        assert!(e.0.contains("verify takes one FILE"), "{e}");
        let e = parse(["verify", "-", "--no-verify"].map(String::from)).unwrap_err();
        assert!(
            e.0.contains("--no-verify does not apply to `ledgerd verify`"),
            "{e}"
        );
    }

    #[test]
    fn subcommands_take_their_own_flags() {
        let Command::Import(i) =
            parse(["import", "-", "--no-verify", "--data-dir", "d"].map(String::from)).unwrap()
        else {
            panic!("not an import")
        };
        assert_eq!(
            (i.file.to_str(), i.verify, i.data_dir.to_str()),
            (Some("-"), false, Some("d"))
        );
        let Command::Export(x) = parse(["export", "--to", "9"].map(String::from)).unwrap() else {
            panic!("not an export")
        };
        assert_eq!((x.from, x.to), (1, Some(9)));
        let Command::Run(c) = parse(["serve-readonly", "--reuse-port"].map(String::from)).unwrap()
        else {
            panic!("not a run")
        };
        assert!(c.read_only && c.reuse_port && c.source.devnet().is_none());
        let e = parse(["serve", "--dev"].map(String::from)).unwrap_err();
        assert!(e.0.contains("unknown command \"serve\""), "{e}");
        let e = parse(["--from", "3"].map(String::from)).unwrap_err();
        assert!(
            e.0.contains("--from does not apply to `ledgerd run`"),
            "{e}"
        );
    }

    #[test]
    fn rollback_takes_one_target_and_a_data_dir() {
        let parsed = |args: &[&str]| parse(args.iter().map(|s| s.to_string()));
        let Command::Rollback(r) = parsed(&[
            "rollback",
            "--data-dir",
            "/d",
            "--to-l2",
            "100",
            "--dry-run",
        ])
        .unwrap() else {
            panic!("expected a rollback")
        };
        assert_eq!(
            r,
            RollbackArgs {
                data_dir: PathBuf::from("/d"),
                to: RollbackTo::L2(100),
                dry_run: true
            }
        );
        let Command::Rollback(r) = parsed(&["rollback", "--data-dir=/d", "--to-l1=7"]).unwrap()
        else {
            panic!("expected a rollback")
        };
        assert_eq!((r.to, r.dry_run), (RollbackTo::L1(7), false));
        let e = parsed(&["rollback", "--data-dir", "/d"]).unwrap_err();
        assert!(e.0.contains("needs a target"), "{e}");
        let e = parsed(&[
            "rollback",
            "--data-dir",
            "/d",
            "--to-l2",
            "1",
            "--to-l1",
            "2",
        ])
        .unwrap_err();
        assert!(e.0.contains("not both"), "{e}");
        let e = parsed(&["rollback", "--to-l2", "1"]).unwrap_err();
        assert!(e.0.contains("needs --data-dir"), "{e}");
        let e = parsed(&["--to-l2", "1"]).unwrap_err();
        assert!(e.0.contains("does not apply to `ledgerd run`"), "{e}");
    }

    #[test]
    fn ephemeral_runs_without_a_data_dir() {
        let c = run(&["--dev", "--ephemeral"]).unwrap();
        assert!(c.ephemeral);
        assert!(!run(&["--dev"]).unwrap().ephemeral);
        let e = run(&["--dev", "--ephemeral", "--data-dir", "/d"]).unwrap_err();
        assert!(e.0.contains("drop --data-dir"), "{e}");
        let e = parse(["serve-readonly", "--ephemeral"].map(String::from)).unwrap_err();
        assert!(e.0.contains("does not apply"), "{e}");
    }
}
