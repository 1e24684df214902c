//! `ledgerd [run]`: a node. Its flags are every subsystem's (each struct
//! defined beside its subsystem, flattened here); [`resolve`] checks them
//! against each other (which go together, which exclude each other) into
//! the node's [`Config`]; [`run`] starts the node, prints its listening
//! line and serves until stopped.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::{Command, FileArgs, ServeArgs};
use crate::chain_rules::args::ChainRulesArgs;
use crate::config::{Config, Given, SourceConfig};
use crate::flags::ConfigError;
use crate::ledger::args::{DataDirArgs, EphemeralArgs};
use crate::node::{Node, NodeError};
use crate::proof::args::ProofArgs;
use crate::proof::image_ids::BATCH_PROOF_IMAGE;
use crate::source::bitcoin::args::BitcoinArgs;
use crate::source::bitcoin::config::BitcoinConfig;
use crate::source::bitcoin::keys;
use crate::source::bitcoin::signer::DaPublicKey;
use crate::source::devnet::args::DevArgs;
use crate::source::upstream::args::UpstreamArgs;
use crate::stop::Stop;
use crate::sync::args::FollowerArgs;

/// `ledgerd run`: every subsystem's flags.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    #[command(flatten)]
    pub dev: DevArgs,
    #[command(flatten)]
    pub upstream: UpstreamArgs,
    #[command(flatten)]
    pub bitcoin: BitcoinArgs,
    #[command(flatten)]
    pub follower: FollowerArgs,
    #[command(flatten)]
    pub chain: ChainRulesArgs,
    #[command(flatten)]
    pub proof: ProofArgs,
    #[command(flatten)]
    pub ledger: DataDirArgs,
    #[command(flatten)]
    pub ephemeral: EphemeralArgs,
    #[command(flatten)]
    pub serve: ServeArgs,
    #[command(flatten)]
    pub file_args: FileArgs,
}

/// `run`: the chain source and its flags, checked against each other.
pub fn resolve(r: Args, given: &Given) -> Result<Command, ConfigError> {
    let urls = r.upstream.urls().map_err(ConfigError)?;
    let dev_on = r.dev.dev;
    let ephemeral = r.ephemeral.ephemeral;
    if ephemeral && given.contains("data-dir") {
        return Err(ConfigError(
            "--ephemeral runs on a new temporary data dir, removed at exit: drop --data-dir (or \
             --ephemeral, to keep the ledger)"
                .into(),
        ));
    }
    if r.upstream.upstream_ca.is_some() && urls.is_empty() {
        return Err(ConfigError(
            "--upstream-ca only applies with --upstream (the CA of an https:// upstream)".into(),
        ));
    }
    if r.upstream.upstream_max_rps.is_some() && urls.is_empty() {
        return Err(ConfigError(
            "--upstream-max-rps only applies with --upstream (the rate of requests to it)".into(),
        ));
    }
    if dev_on && !urls.is_empty() {
        return Err(ConfigError(
            "--dev and --upstream are two chain sources: choose one".into(),
        ));
    }
    let batch_proof_images = r.proof.image_pins(r.chain.network).map_err(ConfigError)?;
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
        if given.contains("bitcoin-chain") {
            return Err(ConfigError(
                "--bitcoin-chain only applies with --bitcoin-rpc or --bitcoin-peer (or to \
                 `ledgerd verify-headers`)"
                    .into(),
            ));
        }
        let only_with_bitcoin = [
            "bitcoin-finality-depth",
            "bitcoin-dns-seed",
            "bitcoin-discover",
            "bitcoin-max-peers",
            "sequencer-da-pubkey",
            "prover-da-pubkey",
        ];
        if let Some(flag) = only_with_bitcoin.iter().find(|f| given.contains(f)) {
            return Err(ConfigError(format!(
                "--{flag} only applies with --bitcoin-rpc, --bitcoin-peer or --bitcoin-p2p"
            )));
        }
    }
    if bitcoin.bitcoin_peer.is_empty()
        && !bitcoin.bitcoin_p2p
        && given.contains("bitcoin-transport")
    {
        return Err(ConfigError(
            "--bitcoin-transport says how Bitcoin peers are spoken to: it only applies with \
             --bitcoin-peer or --bitcoin-p2p"
                .into(),
        ));
    }
    if reads_bitcoin && urls.is_empty() {
        let flag = match (&bitcoin.bitcoin_rpc, bitcoin.bitcoin_peer.is_empty()) {
            (Some(_), _) => "--bitcoin-rpc",
            (None, false) => "--bitcoin-peer",
            (None, true) => "--bitcoin-p2p",
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
    let bitcoin_config = reads_bitcoin
        .then(|| bitcoin_config(bitcoin, r.chain.network, given))
        .transpose()?;
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
    Ok(Command::Run(Box::new(r.serve.into_config(Config {
        data_dir: r.ledger.data_dir,
        source,
        sync_chunk: r.follower.sync_chunk,
        sync_concurrency: r.follower.sync_concurrency,
        upstream_ca: r.upstream.upstream_ca,
        upstream_max_rps: r.upstream.upstream_max_rps,
        allow_missing_tx_bodies: r.follower.allow_missing_tx_bodies,
        allow_fake_proofs: r.proof.allow_fake_proofs,
        batch_proof_images,
        chain: r.chain,
        ephemeral,
        ..Config::default()
    }))))
}

/// `--bitcoin-rpc`'s settings; the DA keys default to the network's
/// (Citrea's regtest keys, the devnet's, without `--network`).
fn bitcoin_config(
    b: &BitcoinArgs,
    network: Option<crate::chain_rules::Network>,
    given: &Given,
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
        None => crate::source::bitcoin::rpc::client::Credentials::None,
    };
    let chain = b.chain.chain(network.map(|n| n.name()));
    let p2p = b.reads_p2p();
    // A switch: given (flag, variable or file), else on off regtest.
    let discover = match given.contains("bitcoin-discover") {
        true => b.bitcoin_discover,
        false => chain != crate::headers::BitcoinNetwork::Regtest,
    };
    let dns_seeds: Vec<String> = match b.bitcoin_dns_seed.is_empty() {
        false => crate::flags::comma_list(&b.bitcoin_dns_seed)
            .filter(|v| !v.is_empty())
            .map(String::from)
            .collect(),
        true => crate::source::bitcoin::p2p::seeds::dns_seeds(chain)
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    if p2p && b.bitcoin_peer.is_empty() && !discover {
        return Err(ConfigError(format!(
            "--bitcoin-p2p finds its peers with --bitcoin-discover, which is off{}: give \
             --bitcoin-peer HOST:PORT, or --bitcoin-discover (with --bitcoin-dns-seed HOST on \
             regtest)",
            match given.contains("bitcoin-discover") {
                true => "",
                false => " by default on regtest",
            }
        )));
    }
    Ok(BitcoinConfig {
        credentials,
        url: b.bitcoin_rpc.clone(),
        peers: b.peers(),
        p2p,
        discover,
        dns_seeds,
        max_peers: b.bitcoin_max_peers,
        transport: b.bitcoin_transport,
        chain,
        finality_depth: b.bitcoin_finality_depth,
        sequencer_key,
        prover_key,
    })
}

/// Starts the node, prints `listening on http://HOST:PORT` and serves until
/// `stop`; exit 1 with one line on stderr when it cannot start.
pub fn run(config: Config, stop: Arc<Stop>) -> ExitCode {
    if let Some(why) = nothing_to_serve(&config) {
        eprintln!("ledgerd: {why}");
        return ExitCode::from(2);
    }
    let node = match Node::builder()
        .config(config)
        .stop_signal(stop.clone())
        .start()
    {
        Ok(node) => node,
        Err(NodeError::Stopped) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ledgerd: {e}");
            return ExitCode::from(1);
        }
    };
    let mut out = std::io::stdout();
    // Nobody reads stdout when this fails: keep serving anyway.
    let _ = writeln!(out, "listening on {}", node.url()).and_then(|_| out.flush());
    while !stop.sleep(Duration::from_secs(3600)) {}
    log::info!("stopping");
    node.shutdown();
    ExitCode::SUCCESS
}

/// A node with no chain source serves the ledger stored in its data dir;
/// without one there, it would make an empty one and serve nothing: the
/// sentence that says what to give instead.
fn nothing_to_serve(config: &Config) -> Option<String> {
    let sourceless = matches!(config.source, SourceConfig::None);
    if !sourceless || config.read_only || config.ephemeral || config.data_dir.exists() {
        return None;
    }
    Some(format!(
        "no chain source and no ledger at {}: nothing to serve; give --dev (a local devnet) or \
         --upstream URL (follow a Citrea node or another ledgerd), or --data-dir DIR of a \
         ledger written before",
        config.data_dir.display()
    ))
}
