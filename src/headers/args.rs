//! The Bitcoin chain flag (`--bitcoin-chain`, `[bitcoin]` in a config
//! file), taken by a follower that reads Bitcoin and by `ledgerd
//! verify-headers`.

use super::BitcoinNetwork;
use crate::flags::heading;

#[derive(clap::Args, Clone, Debug, Default)]
#[command(next_help_heading = heading::BITCOIN)]
pub struct BitcoinNetworkArgs {
    /// The Bitcoin network (main, testnet4, signet or regtest): its genesis and header rules; bitcoind must be on it [default: the one --network reads: testnet -> testnet4, devnet -> signet, mainnet -> main, nightly or none -> regtest]
    #[arg(long, value_name = "CHAIN", value_parser = chain)]
    pub bitcoin_chain: Option<BitcoinNetwork>,
}

impl BitcoinNetworkArgs {
    /// `--bitcoin-chain`, else the chain `network` (a Citrea network's name) reads.
    pub fn chain(&self, network: Option<&str>) -> BitcoinNetwork {
        self.bitcoin_chain
            .unwrap_or_else(|| BitcoinNetwork::of_citrea_network(network))
    }
}

/// `--bitcoin-chain`'s parser (also `verify-headers`'): a chain's name.
pub fn chain(value: &str) -> Result<BitcoinNetwork, String> {
    value.parse().map_err(|e| format!("--bitcoin-chain: {e}"))
}
