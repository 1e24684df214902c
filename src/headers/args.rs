//! The Bitcoin chain flag (`--bitcoin-chain`, `[bitcoin]` in a config
//! file), taken by a follower that reads Bitcoin and by `ledgerd
//! verify-headers`, and that command's own flags (`[headers]`).

use std::path::PathBuf;

use super::BitcoinChain;
use crate::config::cli::FileArgs;
use crate::config::heading;
use crate::config::values::number;

#[derive(clap::Args, Clone, Debug, Default)]
#[command(next_help_heading = heading::BITCOIN)]
pub struct BitcoinChainArgs {
    /// The Bitcoin network (main, testnet4, signet or regtest): its genesis and header rules; bitcoind must be on it [default: the one --network reads: testnet -> testnet4, devnet -> signet, mainnet -> main, nightly or none -> regtest]
    #[arg(long, value_name = "CHAIN", value_parser = chain)]
    pub bitcoin_chain: Option<BitcoinChain>,
}

impl BitcoinChainArgs {
    /// `--bitcoin-chain`, else the chain `network` (a Citrea network's name) reads.
    pub fn chain(&self, network: Option<&str>) -> BitcoinChain {
        self.bitcoin_chain
            .unwrap_or_else(|| BitcoinChain::of_citrea_network(network))
    }
}

/// `ledgerd verify-headers FILE`: Bitcoin headers checked by Core's rules.
#[derive(clap::Args, Clone, Debug)]
pub struct VerifyHeadersCmd {
    /// Raw 80-byte headers back to back, or hex, one header per line; - reads stdin
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The height of the file's first header [default: 0, the chain's genesis]
    #[arg(long, value_name = "H", value_parser = number::<u64>, help_heading = heading::HEADERS)]
    pub start_height: Option<u64>,
    #[command(flatten)]
    pub chain: BitcoinChainArgs,
    #[command(flatten)]
    pub file_args: FileArgs,
}

fn chain(value: &str) -> Result<BitcoinChain, String> {
    value.parse().map_err(|e| format!("--bitcoin-chain: {e}"))
}
