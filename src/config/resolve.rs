//! The one validation step: the flags checked against each other (which go
//! together, which exclude each other) and turned into the [`Command`] to
//! run. Single values were checked by their parsers already.

use std::collections::HashSet;
use std::time::Duration;

use clap::parser::ValueSource;

use super::cli::{Cli, RunCmd, Sub};
use super::file::FileConfig;
use super::{
    BitcoinConfig, Command, Config, ConfigError, ExportArgs, ImportArgs, RollbackArgs, RollbackTo,
    SourceConfig, VerifyArgs, VerifyHeadersArgs, VerifyProofArgs,
};
use crate::proof::image_ids::BATCH_PROOF_IMAGE;
use crate::source::bitcoind::keys;
use crate::source::bitcoind::signer::DaPublicKey;

/// The flags set on purpose (command line, environment or config file),
/// not left at their defaults, by long name.
pub struct Given(HashSet<String>);

impl Given {
    pub fn new(
        cmd: &clap::Command,
        matches: &clap::ArgMatches,
        file: Option<&FileConfig>,
    ) -> Given {
        let set = cmd
            .get_arguments()
            .filter_map(|a| {
                let long = a.get_long()?;
                let source = matches.value_source(a.get_id().as_str());
                let from_file = file.and_then(|f| f.get(long)).is_some();
                match source {
                    Some(ValueSource::CommandLine | ValueSource::EnvVariable) => Some(long),
                    Some(ValueSource::DefaultValue) if from_file => Some(long),
                    _ => None,
                }
            })
            .map(str::to_string)
            .collect();
        Given(set)
    }

    /// The first of `A`'s flags (but `except`) that was given, as `--flag`.
    fn first_of<A: clap::Args>(&self, except: &str) -> Option<String> {
        A::augment_args(clap::Command::new("flags"))
            .get_arguments()
            .filter_map(|a| a.get_long())
            .find(|l| *l != except && self.0.contains(*l))
            .map(|l| format!("--{l}"))
    }
}

/// Checks the flags against each other and builds the command.
pub fn finish(cli: Cli, given: &Given) -> Result<Command, ConfigError> {
    match cli.command {
        None => run(*cli.run, false, given),
        Some(Sub::Run(r) | Sub::Config(r)) => run(*r, false, given),
        Some(Sub::ServeReadonly(r)) => run(*r, true, given),
        Some(Sub::Import(i)) => Ok(Command::Import(ImportArgs {
            file: i.file.ok_or_else(|| {
                ConfigError(
                    "import needs a FILE (one JSON record per line; `-` reads stdin)".into(),
                )
            })?,
            data_dir: i.ledger.data_dir,
            verify: !i.no_verify,
            forks: i.chain.forks(),
            sequencer_pubkey: i.chain.sequencer_key(),
            receipts: i.chain.receipt_rules(false).map_err(ConfigError)?,
        })),
        Some(Sub::Verify(v)) => Ok(Command::Verify(VerifyArgs {
            file: v.file.ok_or_else(|| {
                ConfigError(
                    "verify needs a FILE of soft confirmations as the RPC answers them (`-` \
                     reads stdin)"
                        .into(),
                )
            })?,
            forks: v.chain.forks(),
            sequencer_key: v.chain.sequencer_key(),
            sequencer_key_name: v.chain.sequencer_key_name(),
        })),
        Some(Sub::VerifyProof(v)) => Ok(Command::VerifyProof(VerifyProofArgs {
            file: v.file.ok_or_else(|| {
                ConfigError(
                    "verify-proof needs a FILE: a proof as the RPC answers it, or raw receipt \
                     bytes (`-` reads stdin)"
                        .into(),
                )
            })?,
            receipts: v.chain.receipt_rules(false).map_err(ConfigError)?,
            forks: v.chain.forks(),
        })),
        Some(Sub::VerifyHeaders(v)) => Ok(Command::VerifyHeaders(VerifyHeadersArgs {
            file: v.file.ok_or_else(|| {
                ConfigError(
                    "verify-headers needs a FILE of Bitcoin headers: raw 80-byte headers back to \
                     back, or hex, one header per line (`-` reads stdin)"
                        .into(),
                )
            })?,
            chain: v.chain.chain(None),
            start_height: v.start_height,
        })),
        Some(Sub::Rollback(r)) => {
            let to =
                match (r.to_l2, r.to_l1) {
                    (Some(h), None) => RollbackTo::L2(h),
                    (None, Some(s)) => RollbackTo::L1(s),
                    (Some(_), Some(_)) => return Err(ConfigError(
                        "rollback takes one target: --to-l2 H (an L2 height) or --to-l1 S (a DA \
                         slot), not both"
                            .into(),
                    )),
                    (None, None) => return Err(ConfigError(
                        "rollback needs a target: --to-l2 H keeps L2 heights up to H, --to-l1 S \
                         keeps DA slots up to S"
                            .into(),
                    )),
                };
            if !given.0.contains("data-dir") {
                return Err(ConfigError(
                    "rollback needs --data-dir DIR: the data dir of the stopped node to take back"
                        .into(),
                ));
            }
            Ok(Command::Rollback(RollbackArgs {
                data_dir: r.ledger.data_dir,
                to,
                dry_run: r.dry_run,
            }))
        }
        Some(Sub::Export(x)) => {
            if let Some(to) = x.to.filter(|to| x.from > *to) {
                return Err(ConfigError(format!(
                    "--from {} is above --to {to}: export takes heights from A up to B",
                    x.from
                )));
            }
            Ok(Command::Export(ExportArgs {
                data_dir: x.ledger.data_dir,
                from: x.from,
                to: x.to,
            }))
        }
    }
}

/// `run` and `serve-readonly`: the chain source and its flags.
fn run(r: RunCmd, read_only: bool, given: &Given) -> Result<Command, ConfigError> {
    use crate::source::devnet::args::DevArgs;
    let urls = r.upstream.urls().map_err(ConfigError)?;
    let dev_on = r.dev.dev;
    if read_only && (dev_on || !urls.is_empty()) {
        return Err(ConfigError(
            "serve-readonly has no chain source: it serves the ledger another ledgerd writes; \
             drop --dev / --upstream"
                .into(),
        ));
    }
    let ephemeral = r.ephemeral.ephemeral;
    if read_only && ephemeral {
        return Err(ConfigError(
            "--ephemeral does not apply to `ledgerd serve-readonly`: it serves the ledger another \
             ledgerd writes (--data-dir DIR)"
                .into(),
        ));
    }
    if ephemeral && given.0.contains("data-dir") {
        return Err(ConfigError(
            "--ephemeral runs on a new temporary data dir, removed at exit: drop --data-dir (or \
             --ephemeral, to keep the ledger)"
                .into(),
        ));
    }
    if dev_on && !urls.is_empty() {
        return Err(ConfigError(
            "--dev and --upstream are two chain sources: choose one".into(),
        ));
    }
    let batch_proof_images = r.chain.image_pins().map_err(ConfigError)?;
    if dev_on && !batch_proof_images.is_empty() {
        return Err(ConfigError(format!(
            "{BATCH_PROOF_IMAGE} pins the images of a chain a follower reads; the devnet's proofs \
             claim its own image (its /health shows it): drop the flag, or give it to the follower"
        )));
    }
    if let Some(n) = r.chain.network.filter(|_| dev_on) {
        return Err(ConfigError(format!(
            "--network {n} names a public Citrea network, whose sequencer key the devnet does \
             not hold: give the devnet a fork height with --kumquat-height H instead"
        )));
    }
    if let Some(flag) = given.first_of::<DevArgs>("dev").filter(|_| !dev_on) {
        return Err(ConfigError(format!("{flag} only applies with --dev")));
    }
    let bitcoin = &r.bitcoin;
    let reads_bitcoin = bitcoin.reads_bitcoin();
    if !reads_bitcoin {
        if given.0.contains("bitcoin-chain") {
            return Err(ConfigError(
                "--bitcoin-chain only applies with --bitcoin-rpc or --bitcoin-peer (or to \
                 `ledgerd verify-headers`)"
                    .into(),
            ));
        }
        let only_with_bitcoin = [
            "bitcoin-finality-depth",
            "sequencer-da-pubkey",
            "prover-da-pubkey",
        ];
        if let Some(flag) = only_with_bitcoin.iter().find(|f| given.0.contains(**f)) {
            return Err(ConfigError(format!(
                "--{flag} only applies with --bitcoin-rpc or --bitcoin-peer"
            )));
        }
    }
    if reads_bitcoin && urls.is_empty() {
        let flag = match bitcoin.bitcoin_rpc {
            Some(_) => "--bitcoin-rpc",
            None => "--bitcoin-peer",
        };
        return Err(ConfigError(format!(
            "{flag} reads the DA layer from Bitcoin; the L2 chain still comes from a sequencer or \
             full node: give --upstream URL too (the devnet on a regtest takes --dev \
             --dev-bitcoin-rpc URL)"
        )));
    }
    // One set of credential flags for every bitcoind this node talks to.
    let mut dev = r.dev.devnet_config();
    match (&mut dev.bitcoin, &bitcoin.bitcoin_rpc) {
        (Some(b), _) => b.credentials = bitcoin.credentials("--dev-bitcoin-rpc")?,
        (None, None) if bitcoin.credentials_given() => {
            return Err(ConfigError(
                "--bitcoin-rpc-user, --bitcoin-rpc-password and --bitcoin-rpc-cookie only \
                 apply with --bitcoin-rpc or --dev-bitcoin-rpc"
                    .into(),
            ))
        }
        _ => {}
    }
    let bitcoin_config = match reads_bitcoin {
        true => Some(bitcoin_config(bitcoin, r.chain.network)?),
        false => None,
    };
    let source = if dev_on {
        SourceConfig::Devnet(dev)
    } else if !urls.is_empty() {
        SourceConfig::Upstream {
            urls,
            bitcoin: bitcoin_config,
        }
    } else {
        SourceConfig::None
    };
    Ok(Command::Run(Box::new(Config {
        bind: r.server.bind.clone(),
        data_dir: r.ledger.data_dir,
        source,
        sync_chunk: r.follower.sync_chunk,
        sync_concurrency: r.follower.sync_concurrency,
        allow_missing_tx_bodies: r.follower.allow_missing_tx_bodies,
        allow_fake_proofs: r.chain.allow_fake_proofs,
        batch_proof_images,
        sequencer_pubkey: r.chain.sequencer_pubkey,
        network: r.chain.network,
        kumquat_height: r.chain.kumquat_height,
        wire: r.rpc.wire,
        max_range: r.rpc.max_range,
        max_batch: r.rpc.max_batch,
        server: r.server.server_config(),
        health_max_lag: Duration::from_secs(r.ops.health_max_lag_s),
        health_max_behind: r.ops.health_max_behind,
        cors_origin: r.ops.cors_origin(),
        read_only,
        ephemeral,
        log_format: r.logs.log_format,
    })))
}

/// `--bitcoin-rpc`'s settings; the DA keys default to the network's
/// (Citrea's regtest keys, the devnet's, without `--network`).
fn bitcoin_config(
    b: &crate::source::bitcoind::args::BitcoinArgs,
    network: Option<crate::chain::Network>,
) -> Result<BitcoinConfig, ConfigError> {
    let preset = match network {
        Some(n) => keys::for_network(&n.to_string()),
        None => Some(keys::REGTEST),
    };
    let preset_key = |pick: fn(&keys::NetworkDaKeys) -> &'static str, flag: &str| {
        preset
            .and_then(|k| DaPublicKey::from_hex(pick(&k)).ok())
            .ok_or_else(|| {
                ConfigError(format!(
                    "--network {} has no DA keys in Citrea v0.6.2: give {flag}",
                    network.map(|n| n.to_string()).unwrap_or_default()
                ))
            })
    };
    let sequencer_key = match b.sequencer_da_pubkey {
        Some(k) => k,
        None => preset_key(|k| k.sequencer, "--sequencer-da-pubkey")?,
    };
    let prover_key = match b.prover_da_pubkey {
        Some(k) => k,
        None => preset_key(|k| k.prover, "--prover-da-pubkey")?,
    };
    let credentials = match b.bitcoin_rpc {
        Some(_) => b.credentials("--bitcoin-rpc")?,
        None => crate::source::bitcoind::Credentials::None,
    };
    Ok(BitcoinConfig {
        credentials,
        url: b.bitcoin_rpc.clone(),
        peers: b.peers(),
        chain: b.chain.chain(network.map(|n| n.name())),
        finality_depth: b.bitcoin_finality_depth,
        sequencer_key,
        prover_key,
    })
}
