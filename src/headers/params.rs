//! The four Bitcoin networks ledgerd can follow, and the header-chain
//! parameters of each, as Bitcoin Core's `src/kernel/chainparams.cpp` sets
//! them (Core 31.99): genesis, proof-of-work limit,
//! minimum chainwork, the retarget interval, which testnet rules apply, and
//! the heights from which BIP34, BIP66 and BIP65 demand a block version.

use std::fmt;
use std::str::FromStr;

use bitcoin::block::Header;
use bitcoin::pow::{CompactTarget, Target, Work};
use bitcoin::{BlockHash, Network};

/// A Bitcoin network (`--bitcoin-chain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BitcoinNetwork {
    Main,
    Testnet4,
    Signet,
    Regtest,
}

impl BitcoinNetwork {
    /// Every chain, in the order the docs list them.
    #[cfg(test)]
    pub const ALL: [BitcoinNetwork; 4] = [
        BitcoinNetwork::Main,
        BitcoinNetwork::Testnet4,
        BitcoinNetwork::Signet,
        BitcoinNetwork::Regtest,
    ];

    /// The name `--bitcoin-chain` takes (and `getblockchaininfo`'s `chain`
    /// answers, but for main, which bitcoind calls `main` too).
    pub fn name(self) -> &'static str {
        match self {
            BitcoinNetwork::Main => "main",
            BitcoinNetwork::Testnet4 => "testnet4",
            BitcoinNetwork::Signet => "signet",
            BitcoinNetwork::Regtest => "regtest",
        }
    }

    /// The `bitcoin` crate's name of this network.
    pub fn network(self) -> Network {
        match self {
            BitcoinNetwork::Main => Network::Bitcoin,
            BitcoinNetwork::Testnet4 => Network::Testnet4,
            BitcoinNetwork::Signet => Network::Signet,
            BitcoinNetwork::Regtest => Network::Regtest,
        }
    }

    /// This network's parameters.
    pub fn params(self) -> &'static ChainParams {
        match self {
            BitcoinNetwork::Main => &MAIN,
            BitcoinNetwork::Testnet4 => &TESTNET4,
            BitcoinNetwork::Signet => &SIGNET,
            BitcoinNetwork::Regtest => &REGTEST,
        }
    }

    /// The genesis block's header.
    pub fn genesis(self) -> Header {
        bitcoin::blockdata::constants::genesis_block(self.network()).header
    }

    /// The chain of a Citrea network name (`--network`): testnet reads
    /// testnet4, devnet signet, mainnet main, and nightly (or none) regtest.
    pub fn of_citrea_network(network: Option<&str>) -> BitcoinNetwork {
        match network {
            Some("testnet") => BitcoinNetwork::Testnet4,
            Some("devnet") => BitcoinNetwork::Signet,
            Some("mainnet") => BitcoinNetwork::Main,
            _ => BitcoinNetwork::Regtest,
        }
    }
}

impl fmt::Display for BitcoinNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BitcoinNetwork {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "main" | "mainnet" | "bitcoin" => Ok(BitcoinNetwork::Main),
            "testnet4" => Ok(BitcoinNetwork::Testnet4),
            "signet" => Ok(BitcoinNetwork::Signet),
            "regtest" => Ok(BitcoinNetwork::Regtest),
            other => Err(format!(
                "{other:?} is not a Bitcoin chain ledgerd knows: use main, testnet4, signet or regtest"
            )),
        }
    }
}

/// One network's header-chain parameters (Core's `Consensus::Params` and
/// `CChainParams`, the parts headers need).
#[derive(Debug)]
pub struct ChainParams {
    pub chain: BitcoinNetwork,
    /// `powLimit`, big-endian hex: the easiest target a header may carry.
    pub pow_limit_hex: &'static str,
    /// `powLimit` in compact form (the bits of a 20-minute block).
    pub pow_limit_bits: u32,
    /// `nMinimumChainWork`, big-endian hex: a chain with less total work
    /// is never followed.
    pub min_chainwork: &'static str,
    /// `nPowTargetTimespan` in seconds.
    pub target_timespan: i64,
    /// `nPowTargetSpacing` in seconds.
    pub target_spacing: i64,
    /// `fPowAllowMinDifficultyBlocks`: the 20-minute rule and its walk-back.
    pub allow_min_difficulty: bool,
    /// `fPowNoRetargeting` (regtest).
    pub no_retargeting: bool,
    /// `enforce_BIP94`: the retarget starts from the period's first block,
    /// and a period's first block may not be more than 600 s before its
    /// parent (testnet4).
    pub enforce_bip94: bool,
    /// From these heights on, a header's version must be at least 2, 3
    /// and 4 (`DEPLOYMENT_HEIGHTINCB`, `DEPLOYMENT_DERSIG`, `DEPLOYMENT_CLTV`).
    pub bip34_height: u64,
    pub bip66_height: u64,
    pub bip65_height: u64,
}

impl ChainParams {
    /// `DifficultyAdjustmentInterval()`: 2016 (144 on regtest).
    pub fn interval(&self) -> u64 {
        (self.target_timespan / self.target_spacing) as u64
    }

    /// The pow limit as a target (Core's `powLimit`, which may lie above
    /// what its compact form expands to).
    pub fn pow_limit(&self) -> Target {
        hex32(self.pow_limit_hex).map_or_else(
            || Target::from_compact(CompactTarget::from_consensus(self.pow_limit_bits)),
            Target::from_be_bytes,
        )
    }

    /// `nMinimumChainWork`.
    pub fn min_chainwork(&self) -> Work {
        Work::from_be_bytes(hex32(self.min_chainwork).unwrap_or([0xff; 32]))
    }

    /// The genesis hash as a [`BlockHash`].
    pub fn genesis_block_hash(&self) -> BlockHash {
        self.chain.genesis().block_hash()
    }
}

/// A constant of this file as its 32 bytes (64 hex digits, checked by a test).
fn hex32(digits: &str) -> Option<[u8; 32]> {
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(digits, &mut bytes).ok()?;
    Some(bytes)
}

/// What the test networks share: two-week retargets of ten-minute blocks,
/// BIP34/65/66 from height 1; each sets the rest.
const TEST_NETWORK: ChainParams = ChainParams {
    chain: BitcoinNetwork::Regtest,
    pow_limit_hex: "00000000ffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    pow_limit_bits: 0x1d00ffff,
    min_chainwork: "0000000000000000000000000000000000000000000000000000000000000000",
    target_timespan: 14 * 24 * 60 * 60,
    target_spacing: 10 * 60,
    allow_min_difficulty: false,
    no_retargeting: false,
    enforce_bip94: false,
    bip34_height: 1,
    bip66_height: 1,
    bip65_height: 1,
};

/// Bitcoin's main network.
pub static MAIN: ChainParams = ChainParams {
    chain: BitcoinNetwork::Main,
    min_chainwork: "0000000000000000000000000000000000000001128750f82f4c366153a3a030",
    bip34_height: 227_931,
    bip66_height: 363_725,
    bip65_height: 388_381,
    ..TEST_NETWORK
};

/// Testnet4 (BIP94).
pub static TESTNET4: ChainParams = ChainParams {
    chain: BitcoinNetwork::Testnet4,
    min_chainwork: "0000000000000000000000000000000000000000000009a0fe15d0177d086304",
    allow_min_difficulty: true,
    enforce_bip94: true,
    ..TEST_NETWORK
};

/// The default signet (the block signatures of BIP325 are in the blocks,
/// not the headers: headers alone do not check them).
pub static SIGNET: ChainParams = ChainParams {
    chain: BitcoinNetwork::Signet,
    pow_limit_hex: "00000377ae000000000000000000000000000000000000000000000000000000",
    pow_limit_bits: 0x1e0377ae,
    min_chainwork: "00000000000000000000000000000000000000000000000000000b463ea0a4b8",
    ..TEST_NETWORK
};

/// Regtest (Core's defaults: no `-test=bip94`, BIP34/65/66 from height 1).
pub static REGTEST: ChainParams = ChainParams {
    chain: BitcoinNetwork::Regtest,
    pow_limit_hex: "7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    pow_limit_bits: 0x207fffff,
    target_timespan: 24 * 60 * 60,
    allow_min_difficulty: true,
    no_retargeting: true,
    ..TEST_NETWORK
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn genesis_hashes_are_the_ones_core_asserts() {
        // Core's, in the order of `ALL`.
        let core = [
            "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f",
            "00000000da84f2bafbbc53dee25a72ae507ff4914b867c565be350b0da8bf043",
            "00000008819873e925422c1ff0f99f7cc9bbb232af63a077a480a3633bee1ef6",
            "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206",
        ];
        for (chain, genesis_hash) in BitcoinNetwork::ALL.into_iter().zip(core) {
            let p = chain.params();
            assert_eq!(p.chain, chain);
            let hash = p.genesis_block_hash().to_string();
            assert_eq!(hash, genesis_hash, "{chain}");
            assert_eq!(
                chain.genesis().bits.to_consensus(),
                p.pow_limit_bits,
                "{chain}"
            );
        }
    }

    #[test]
    fn pow_limits_are_cores_and_their_compact_forms_match() {
        for chain in BitcoinNetwork::ALL {
            let p = chain.params();
            assert_eq!(p.pow_limit_hex.len(), 64, "{chain}");
            assert_eq!(
                p.pow_limit().to_compact_lossy().to_consensus(),
                p.pow_limit_bits,
                "{chain}"
            );
        }
        // Regtest's powLimit lies above its compact form's expansion.
        let compact = Target::from_compact(CompactTarget::from_consensus(REGTEST.pow_limit_bits));
        assert!(REGTEST.pow_limit() > compact);
    }

    #[test]
    fn min_chainwork_reads_and_intervals_are_cores() {
        assert!(REGTEST.min_chainwork() == Work::from_be_bytes([0; 32]));
        assert!(MAIN.min_chainwork() > TESTNET4.min_chainwork());
        assert!(MAIN.min_chainwork() < Work::from_be_bytes([0xff; 32]));
        assert_eq!(MAIN.interval(), 2016);
        assert_eq!(REGTEST.interval(), 144);
    }

    #[test]
    fn chain_names_parse_back() {
        for chain in BitcoinNetwork::ALL {
            assert_eq!(chain.name().parse::<BitcoinNetwork>(), Ok(chain));
        }
        let err = "testnet3".parse::<BitcoinNetwork>().unwrap_err();
        assert!(err.contains("main, testnet4, signet or regtest"), "{err}");
    }
}
