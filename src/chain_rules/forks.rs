//! Which chain rules apply at which L2 height: the fork table, and the
//! public networks' fork heights and sequencer keys.
//!
//! Citrea v0.6 picks its rules per L2 height. Its first fork, Genesis, hashes
//! and signs a block one way; Kumquat, from a height fixed per network,
//! another (see [`crate::chain_rules`] for both). A ledgerd data dir follows one
//! fork table for its whole life: the ledger pins it (see
//! [`crate::ledger::LedgerWriter::pin_fork_table`]).
//!
//! The figures below are Citrea v0.6.2's (its fork list per network and its
//! `rollup_config.toml` per network); v0.6.2 ships no sequencer key for
//! mainnet or nightly.

use std::fmt;
use std::str::FromStr;

/// One set of chain rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fork {
    /// The first rules: the sequencer signs the borsh-encoded block itself.
    Genesis,
    /// From the Kumquat height on: the sequencer signs the block's hash.
    Kumquat,
}

impl Fork {
    /// `Genesis` or `Kumquat`.
    pub fn name(self) -> &'static str {
        match self {
            Fork::Genesis => "Genesis",
            Fork::Kumquat => "Kumquat",
        }
    }
}

impl fmt::Display for Fork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which fork applies at which L2 height: Genesis below the Kumquat height,
/// Kumquat from it. The default is Kumquat from height 0 (every block).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ForkTable {
    kumquat_height: u64,
}

impl ForkTable {
    /// Kumquat rules for every height.
    pub const KUMQUAT_ONLY: ForkTable = ForkTable { kumquat_height: 0 };

    /// Genesis rules below `height`, Kumquat from it.
    pub const fn kumquat_from(height: u64) -> ForkTable {
        ForkTable {
            kumquat_height: height,
        }
    }

    /// The first height under the Kumquat rules.
    pub const fn kumquat_height(&self) -> u64 {
        self.kumquat_height
    }

    /// The rules of L2 height `height`.
    pub const fn fork_at(&self, height: u64) -> Fork {
        if height >= self.kumquat_height {
            Fork::Kumquat
        } else {
            Fork::Genesis
        }
    }
}

impl fmt::Display for ForkTable {
    /// `Kumquat from height 5546000 (Genesis below)`, or `Kumquat from height 0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Kumquat from height {}", self.kumquat_height)?;
        if self.kumquat_height > 1 {
            f.write_str(" (Genesis below)")?;
        }
        Ok(())
    }
}

/// A public Citrea network, as `--network` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Network {
    Testnet,
    Devnet,
    Mainnet,
    Nightly,
}

/// The sequencer key of testnet (Citrea v0.6.2's testnet `rollup_config.toml`).
const TESTNET_SEQUENCER_KEY: [u8; 32] =
    hex_key(b"4682a70af1d3fae53a5a26b682e2e75f7a1de21ad5fc8d61794ca889880d39d1");
/// The sequencer key of devnet (Citrea v0.6.2's devnet `rollup_config.toml`).
const DEVNET_SEQUENCER_KEY: [u8; 32] =
    hex_key(b"52f41a5076498d1ae8bdfa57d19e91e3c2c94b6de21985d099cd48cfa7aef174");

/// 64 hex digits into 32 bytes, at compile time.
pub(crate) const fn hex_key(digits: &[u8; 64]) -> [u8; 32] {
    crate::hexstr::decode_const(digits)
}

impl Network {
    /// Every network, in the order `--help` lists them.
    pub const ALL: [Network; 4] = [
        Network::Testnet,
        Network::Devnet,
        Network::Mainnet,
        Network::Nightly,
    ];

    /// The name `--network` takes.
    pub fn name(self) -> &'static str {
        match self {
            Network::Testnet => "testnet",
            Network::Devnet => "devnet",
            Network::Mainnet => "mainnet",
            Network::Nightly => "nightly",
        }
    }

    /// The network's fork table: testnet Kumquat from 5,546,000, devnet
    /// from 1,921,835, mainnet and nightly from 0.
    pub fn fork_table(self) -> ForkTable {
        match self {
            Network::Testnet => ForkTable::kumquat_from(5_546_000),
            Network::Devnet => ForkTable::kumquat_from(1_921_835),
            Network::Mainnet | Network::Nightly => ForkTable::KUMQUAT_ONLY,
        }
    }

    /// The network's sequencer key; `None` where Citrea v0.6.2 ships none
    /// (mainnet, nightly): pass `--sequencer-pubkey`.
    pub fn sequencer_key(self) -> Option<[u8; 32]> {
        match self {
            Network::Testnet => Some(TESTNET_SEQUENCER_KEY),
            Network::Devnet => Some(DEVNET_SEQUENCER_KEY),
            Network::Mainnet | Network::Nightly => None,
        }
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A network name that is not one of [`Network::ALL`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownNetwork(pub String);

impl fmt::Display for UnknownNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown network {:?}; the networks are testnet, devnet, mainnet, nightly",
            self.0
        )
    }
}

impl std::error::Error for UnknownNetwork {}

impl FromStr for Network {
    type Err = UnknownNetwork;

    fn from_str(s: &str) -> Result<Network, UnknownNetwork> {
        Network::ALL
            .into_iter()
            .find(|n| n.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownNetwork(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn genesis_applies_below_the_kumquat_height_and_kumquat_from_it() {
        let t = ForkTable::kumquat_from(50);
        assert_eq!(t.fork_at(1), Fork::Genesis);
        assert_eq!(t.fork_at(49), Fork::Genesis);
        assert_eq!(t.fork_at(50), Fork::Kumquat);
        assert_eq!(t.fork_at(u64::MAX), Fork::Kumquat);
        assert_eq!(ForkTable::default(), ForkTable::KUMQUAT_ONLY);
        assert_eq!(ForkTable::KUMQUAT_ONLY.fork_at(0), Fork::Kumquat);
    }

    #[test]
    fn networks_carry_citrea_v0_6_2_fork_heights_and_keys() {
        let testnet: Network = "testnet".parse().unwrap();
        assert_eq!(testnet.fork_table().fork_at(5_545_999), Fork::Genesis);
        assert_eq!(testnet.fork_table().fork_at(5_546_000), Fork::Kumquat);
        assert_eq!(Network::Devnet.fork_table().kumquat_height(), 1_921_835);
        assert_eq!(Network::Mainnet.fork_table(), ForkTable::KUMQUAT_ONLY);
        assert_eq!(Network::Nightly.fork_table(), ForkTable::KUMQUAT_ONLY);
        assert_eq!(
            hex::encode(testnet.sequencer_key().unwrap()),
            "4682a70af1d3fae53a5a26b682e2e75f7a1de21ad5fc8d61794ca889880d39d1"
        );
        assert_eq!(
            hex::encode(Network::Devnet.sequencer_key().unwrap()),
            "52f41a5076498d1ae8bdfa57d19e91e3c2c94b6de21985d099cd48cfa7aef174"
        );
        assert_eq!(Network::Mainnet.sequencer_key(), None);
        let e = "regtest".parse::<Network>().unwrap_err();
        assert!(e.to_string().contains("testnet, devnet, mainnet, nightly"));
    }
}
