//! The Bitcoin flags (`[bitcoin]` in a config file): a follower's DA layer
//! read from bitcoind (`--bitcoin-rpc`), and the credentials of every
//! bitcoind this node talks to (also the devnet's `--dev-bitcoin-rpc`).

use std::path::PathBuf;

use crate::flags::{bitcoind_url, heading, number, switch, ConfigError};
use crate::source::bitcoin::p2p::transport::TransportChoice;
use crate::source::bitcoin::rpc::client::Credentials;
use crate::source::bitcoin::scan::DEFAULT_FINALITY_DEPTH;
use crate::source::bitcoin::signer::DaPublicKey;

#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = heading::BITCOIN)]
pub struct BitcoinArgs {
    /// A follower (beside --upstream URL; docs/BITCOIN.md): read the DA layer (commitments, proofs, the blocks L2 blocks name) from this Bitcoin node over the P2P protocol (HOST:PORT, its -port), not from the upstream; repeat (or a comma list) for more peers: blocks are spread over them
    #[arg(long, value_name = "HOST:PORT", value_parser = bitcoin_peers)]
    pub bitcoin_peer: Vec<String>,
    /// A follower: read the DA layer from Bitcoin's P2P network with no --bitcoin-peer needed: peers from the network's DNS seeds, the address book in the ledger and their gossip (--bitcoin-peer implies it)
    #[arg(long, value_parser = switch)]
    pub bitcoin_p2p: bool,
    /// Find peers from this DNS seed (HOST, the network's P2P port; HOST:PORT for another) instead of the network's built-in seeds (Bitcoin Core's); repeatable
    #[arg(long, value_name = "HOST", value_parser = dns_seed)]
    pub bitcoin_dns_seed: Vec<String>,
    /// Learn peers from DNS seeds and from peers' addr/addrv2 [default: on for main, testnet4 and signet; off for regtest]; --bitcoin-discover=false: only the --bitcoin-peer's are read
    #[arg(long, value_name = "BOOL", value_parser = switch, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", action = clap::ArgAction::Set)]
    pub bitcoin_discover: bool,
    /// Outbound connections to found peers kept (the --bitcoin-peer's come on top); at most 2 in one /16 (IPv4) or /32 (IPv6) outside loopback and private ranges
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_PEERS, value_parser = number::<usize>)]
    pub bitcoin_max_peers: usize,
    /// How peers are spoken to (docs/BITCOIN.md): auto (BIP324's encrypted v2 with each --bitcoin-peer and each peer that advertises it, v1 when a peer hangs up on v2 without a word, as Bitcoin Core does), v2 (encrypted only: a v1-only peer is not connected) or v1 (plain only)
    #[arg(long, value_name = "auto|v2|v1", default_value_t = TransportChoice::Auto, value_parser = TransportChoice::parse)]
    pub bitcoin_transport: TransportChoice,
    /// A follower: read the DA layer from this bitcoind's RPC (http://HOST:PORT; no -txindex needed)
    #[arg(long, value_name = "URL", value_parser = bitcoind_url)]
    pub bitcoin_rpc: Option<String>,
    #[command(flatten)]
    pub chain: crate::headers::args::BitcoinNetworkArgs,
    /// Scan blocks with at least N confirmations
    #[arg(long, value_name = "N", default_value_t = DEFAULT_FINALITY_DEPTH, value_parser = finality_depth)]
    pub bitcoin_finality_depth: u64,
    /// Who signs sequencer commitments (33-byte compressed key) [default: the network's, else Citrea's regtest key]
    #[arg(long, value_name = "HEX", value_parser = da_pubkey)]
    pub sequencer_da_pubkey: Option<DaPublicKey>,
    /// Who signs proofs [default: the network's, else regtest's]
    #[arg(long, value_name = "HEX", value_parser = da_pubkey)]
    pub prover_da_pubkey: Option<DaPublicKey>,
    /// Bitcoind's cookie file (DATADIR/regtest/.cookie), read again when bitcoind restarts
    #[arg(long, value_name = "FILE")]
    pub bitcoin_rpc_cookie: Option<PathBuf>,
    /// Bitcoind's -rpcuser (or an -rpcauth entry's), with a password
    #[arg(long, value_name = "USER")]
    pub bitcoin_rpc_user: Option<String>,
    /// Bitcoind's -rpcpassword; better from the environment or --bitcoin-rpc-password-file, as every user of the host can read a command line
    #[arg(long, value_name = "PASSWORD", hide_env_values = true)]
    pub bitcoin_rpc_password: Option<String>,
    /// A file whose first line is bitcoind's -rpcpassword
    #[arg(long, value_name = "FILE")]
    pub bitcoin_rpc_password_file: Option<PathBuf>,
}

impl BitcoinArgs {
    /// Every `--bitcoin-peer` once, in order (a value may be a comma list).
    pub fn peers(&self) -> Vec<String> {
        let mut list: Vec<String> = Vec::new();
        for peer in crate::flags::comma_list(&self.bitcoin_peer) {
            if !list.iter().any(|p| p == peer) {
                list.push(peer.to_string());
            }
        }
        list
    }

    /// Whether the DA layer is read from Bitcoin (bitcoind's RPC or peers).
    pub fn reads_bitcoin(&self) -> bool {
        self.bitcoin_rpc.is_some() || self.reads_p2p()
    }

    /// Whether Bitcoin is read over P2P (`--bitcoin-p2p` or a `--bitcoin-peer`).
    pub fn reads_p2p(&self) -> bool {
        self.bitcoin_p2p || !self.bitcoin_peer.is_empty()
    }

    /// Whether any credential flag was given.
    pub fn credentials_given(&self) -> bool {
        self.bitcoin_rpc_user.is_some()
            || self.bitcoin_rpc_password.is_some()
            || self.bitcoin_rpc_password_file.is_some()
            || self.bitcoin_rpc_cookie.is_some()
    }

    /// The credentials for `flag` (the flag that names the bitcoind, for
    /// messages): exactly one of a cookie file or a user and password.
    pub fn credentials(&self, flag: &str) -> Result<Credentials, ConfigError> {
        let password = match (&self.bitcoin_rpc_password, &self.bitcoin_rpc_password_file) {
            (Some(_), Some(_)) => {
                return Err(ConfigError(
                    "--bitcoin-rpc-password and --bitcoin-rpc-password-file both give the \
                     password: give one"
                        .into(),
                ))
            }
            (Some(p), None) => Some(p.clone()),
            (None, Some(path)) => Some(read_password(path)?),
            (None, None) => None,
        };
        match (&self.bitcoin_rpc_user, password, &self.bitcoin_rpc_cookie) {
            (None, None, Some(path)) => Ok(Credentials::CookieFile(path.clone())),
            (Some(user), Some(password), None) => Ok(Credentials::UserPassword {
                user: user.clone(),
                password,
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

/// The first line of a password file, without its line end.
fn read_password(path: &std::path::Path) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigError(format!(
            "--bitcoin-rpc-password-file {} cannot be read: {e}",
            path.display()
        ))
    })?;
    let line = text.lines().next().unwrap_or("");
    if line.is_empty() {
        return Err(ConfigError(format!(
            "--bitcoin-rpc-password-file {}: the first line is empty; it holds the password",
            path.display()
        )));
    }
    Ok(line.to_string())
}

fn finality_depth(value: &str) -> Result<u64, String> {
    match number(value)? {
        0 => Err("must be at least 1 (1: every block is final)".into()),
        n => Ok(n),
    }
}

fn da_pubkey(value: &str) -> Result<DaPublicKey, String> {
    DaPublicKey::from_hex(value.trim_start_matches("0x")).map_err(|e| {
        format!("takes a 33-byte compressed secp256k1 key as 66 hex digits (02... or 03...): {e}")
    })
}

/// Outbound connections to found peers kept, by default (Core keeps 8 full-relay ones).
pub const DEFAULT_MAX_PEERS: usize = 8;

/// One `--bitcoin-dns-seed`: a host name or address, with a port or not.
fn dns_seed(value: &str) -> Result<String, String> {
    let v = value.trim();
    if v.is_empty() || v.contains("://") || v.contains('/') || v.contains(char::is_whitespace) {
        return Err(format!(
            "takes a DNS seed's host name (seed.bitcoin.sipa.be, localhost; HOST:PORT for \
             another port than the network's), not {value:?}"
        ));
    }
    Ok(v.to_string())
}

/// One `--bitcoin-peer` value: `HOST:PORT`, or a comma list of them.
fn bitcoin_peers(value: &str) -> Result<String, String> {
    for peer in value.split(',').map(str::trim) {
        let valid = peer.rsplit_once(':').is_some_and(|(host, port)| {
            !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
        });
        if !valid || peer.contains("://") {
            return Err(format!(
                "takes a Bitcoin node's P2P address, HOST:PORT (its -port, e.g. 127.0.0.1:18444 \
                 on regtest), not {peer:?}"
            ));
        }
    }
    Ok(value.to_string())
}
