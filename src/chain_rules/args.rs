//! The chain-rule flags (`[chain-rules]` in a config file), taken by `run`,
//! `import`, `verify` and `verify-proof`: which fork applies where, which
//! sequencer key blocks carry. Which batch-proof receipts prove heights is
//! `proof::args`'s, under the same heading.

use super::{ForkTable, Network};
use crate::flags::heading;
use crate::flags::number;

#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
#[command(next_help_heading = heading::CHAIN_RULES)]
pub struct ChainRulesArgs {
    /// Testnet, devnet, mainnet or nightly: Citrea v0.6.2's Kumquat height and sequencer key for that network
    #[arg(long, value_name = "NAME", value_parser = network)]
    pub network: Option<Network>,
    /// Genesis rules below L2 height H, Kumquat from H [default: the network's, else 0: Kumquat for every block]
    #[arg(long, value_name = "H", value_parser = number::<u64>)]
    pub kumquat_height: Option<u64>,
    /// The sequencer key blocks must carry [default: the network's, else the key of block 1]
    #[arg(long, value_name = "HEX", value_parser = pubkey)]
    pub sequencer_pubkey: Option<[u8; 32]>,
}

impl ChainRulesArgs {
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

    /// Where [`ChainRulesArgs::sequencer_key`] comes from, for messages:
    /// `testnet key`, `--sequencer-pubkey key`, or `key of the first block`.
    pub fn sequencer_key_name(&self) -> String {
        match (self.sequencer_pubkey, self.network) {
            (Some(_), _) => "--sequencer-pubkey key".to_string(),
            (None, Some(n)) if n.sequencer_key().is_some() => format!("{n} key"),
            _ => "key of the first block".to_string(),
        }
    }
}

/// `--network`'s parser (also `verify-proof`'s): a network name.
pub fn network(value: &str) -> Result<Network, String> {
    value.parse().map_err(|e| format!("--network: {e}"))
}

fn pubkey(value: &str) -> Result<[u8; 32], String> {
    crate::hexstr::decode_array(value)
        .map_err(|_| format!("takes 64 hex digits (a 32-byte Ed25519 key), not {value:?}"))
}
