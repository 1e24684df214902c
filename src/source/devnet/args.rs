//! The devnet's flags (`[devnet]` in a config file; `--dev` itself under
//! `[chain-source]`). Their defaults are [`DevnetConfig::default`]'s.

use super::DevnetConfig;
use crate::flags::heading;
use crate::flags::{bitcoind_url, number, switch};

pub const DEFAULT_SEED: u64 = 1;
pub const DEFAULT_PREFILL: u64 = 0;
pub const DEFAULT_BLOCK_MS: u64 = 1000;
pub const DEFAULT_PROOF_BYTES: usize = 2048;

#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = heading::DEVNET)]
pub struct DevArgs {
    /// Run the embedded devnet (a simulated sequencer and DA chain)
    #[arg(long, value_parser = switch, help_heading = heading::CHAIN_SOURCE)]
    pub dev: bool,
    /// Heights 1..=N exist before the server listens
    #[arg(long, value_name = "N", default_value_t = DEFAULT_PREFILL, value_parser = number::<u64>)]
    pub dev_prefill: u64,
    /// Then one new block every MS ms, 0 for none
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_BLOCK_MS, value_parser = number::<u64>)]
    pub dev_block_ms: u64,
    /// The chain derives from this number
    #[arg(long, value_name = "S", default_value_t = DEFAULT_SEED, value_parser = number::<u64>)]
    pub dev_seed: u64,
    /// Bytes of each batch proof
    #[arg(long, value_name = "N", default_value_t = DEFAULT_PROOF_BYTES, value_parser = number::<usize>)]
    pub dev_proof_bytes: usize,
    /// Answer the dev_* methods (mine, commit, prove...) on a non-loopback --bind too [default: loopback only]
    #[arg(long, value_parser = switch)]
    pub dev_allow_remote_control: bool,
    /// DA slots are real blocks the devnet mines on this regtest bitcoind (http://HOST:PORT), its commitments and proofs published in Citrea's format; it must be the only miner [default: a simulated DA chain]
    #[arg(long, value_name = "URL", value_parser = bitcoind_url)]
    pub dev_bitcoin_rpc: Option<String>,
}

impl DevArgs {
    /// The devnet these flags describe; its bitcoind's credentials are
    /// filled in by the caller (they are the shared `--bitcoin-rpc-*` flags).
    pub fn devnet_config(&self) -> DevnetConfig {
        DevnetConfig {
            seed: self.dev_seed,
            prefill: self.dev_prefill,
            block_ms: self.dev_block_ms,
            proof_bytes: self.dev_proof_bytes,
            allow_remote_control: self.dev_allow_remote_control,
            bitcoin: self
                .dev_bitcoin_rpc
                .clone()
                .map(|url| super::regtest::RegtestConfig {
                    url,
                    credentials: crate::source::bitcoin::rpc::client::Credentials::None,
                }),
            ..DevnetConfig::default()
        }
    }
}
