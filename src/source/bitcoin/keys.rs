//! The DA keys of Citrea v0.6.2's networks: who may publish sequencer commitments (the sequencer
//! DA key) and proofs (the prover DA key) on each Bitcoin network.
//!
//! From Citrea's repository (chainwayxyz/citrea, tag v0.6.2), `[public_keys]` of:
//!
//! | network | Bitcoin | file |
//! |---|---|---|
//! | testnet | testnet4 | `resources/configs/testnet/rollup_config.toml` |
//! | devnet | signet | `resources/configs/devnet/rollup_config.toml` |
//! | nightly / regtest | regtest | `resources/configs/bitcoin-regtest/rollup_config.toml` (the same keys in `resources/configs/mock/*.toml`) |
//!
//! v0.6.2 ships no mainnet keys. The regtest private keys are the ones Citrea's own end-to-end
//! setup signs with; they are public test keys and sign nothing of value. The devnet signs its
//! commitments and proofs with them, so a Citrea regtest node and ledgerd accept each other's.
use crate::source::bitcoin::signer::{DaPublicKey, DaSecretKey, KeyError};

/// The DA keys a network's full node checks reveals against, as hex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetworkDaKeys {
    /// Signs sequencer commitments (batch-proof namespace).
    pub sequencer: &'static str,
    /// Signs proofs and method ids (light-client namespace).
    pub prover: &'static str,
}

impl NetworkDaKeys {
    pub fn sequencer_key(&self) -> Result<DaPublicKey, KeyError> {
        DaPublicKey::from_hex(self.sequencer)
    }

    pub fn prover_key(&self) -> Result<DaPublicKey, KeyError> {
        DaPublicKey::from_hex(self.prover)
    }
}

/// Citrea testnet (Bitcoin testnet4).
pub const TESTNET: NetworkDaKeys = NetworkDaKeys {
    sequencer: "03015a7c4d2cc1c771198686e2ebef6fe7004f4136d61f6225b061d1bb9b821b9b",
    prover: "0357d255ab93638a2d880787ebaadfefdfc9bb51a26b4a37e5d588e04e54c60a42",
};

/// Citrea devnet (Bitcoin signet).
pub const DEVNET: NetworkDaKeys = NetworkDaKeys {
    sequencer: "039cd55f9b3dcf306c4d54f66cd7c4b27cc788632cd6fb73d80c99d303c6536486",
    prover: "03fc6fb2ef68368009c895d2d4351dcca4109ec2f5f327291a0553570ce769f5e5",
};

/// Citrea nightly and its end-to-end tests (Bitcoin regtest).
pub const REGTEST: NetworkDaKeys = NetworkDaKeys {
    sequencer: "02588d202afcc1ee4ab5254c7847ec25b9a135bbda0f2bc69ee1a714749fd77dc9",
    prover: "03eedab888e45f3bdc3ec9918c491c11e5cf7af0a91f38b97fbc1e135ae4056601",
};

/// The regtest sequencer's DA private key: `da_private_key` in
/// `resources/configs/bitcoin-regtest/sequencer_rollup_config.toml` (and `rollup_config.toml`;
/// `DEFAULT_DA_PRIVATE_KEY` in `crates/bitcoin-da/tests/test_utils.rs`). Its public key is
/// [`REGTEST`]`.sequencer`.
pub const REGTEST_SEQUENCER_DA_SECRET: &str =
    "E9873D79C6D87DC0FB6A5778633389F4453213303DA61F20BD67FC233AA33262";

/// The regtest batch prover's DA private key: `da_private_key` in
/// `resources/configs/bitcoin-regtest/batch_prover_rollup_config.toml` (also in
/// `bin/citrea/tests/bitcoin_e2e/light_client_test.rs`). Its public key is [`REGTEST`]`.prover`.
pub const REGTEST_PROVER_DA_SECRET: &str =
    "56D08C2DDE7F412F80EC99A0A328F76688C904BD4D1435281EFC9270EC8C8707";

/// The regtest sequencer's DA private key, parsed.
pub fn regtest_sequencer_secret() -> Result<DaSecretKey, KeyError> {
    DaSecretKey::from_hex(REGTEST_SEQUENCER_DA_SECRET)
}

/// The regtest prover's DA private key, parsed.
pub fn regtest_prover_secret() -> Result<DaSecretKey, KeyError> {
    DaSecretKey::from_hex(REGTEST_PROVER_DA_SECRET)
}

/// The keys of a network by the name `--network` takes (`testnet`, `devnet`, `nightly` or
/// `regtest`); `None` for mainnet (no keys in v0.6.2) and unknown names.
pub fn for_network(name: &str) -> Option<NetworkDaKeys> {
    match name {
        "testnet" => Some(TESTNET),
        "devnet" => Some(DEVNET),
        "nightly" | "regtest" => Some(REGTEST),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_network_key_is_a_compressed_point() {
        for keys in [TESTNET, DEVNET, REGTEST] {
            assert!(keys.sequencer_key().is_ok(), "{}", keys.sequencer);
            assert!(keys.prover_key().is_ok(), "{}", keys.prover);
        }
    }

    #[test]
    fn regtest_private_keys_belong_to_the_regtest_public_keys() {
        let public = |secret: Result<DaSecretKey, KeyError>| secret.unwrap().public_key();
        assert_eq!(
            public(regtest_sequencer_secret()).to_string(),
            REGTEST.sequencer
        );
        assert_eq!(public(regtest_prover_secret()).to_string(), REGTEST.prover);
    }

    #[test]
    fn network_names_pick_their_keys_and_mainnet_has_none() {
        assert_eq!(for_network("testnet"), Some(TESTNET));
        assert_eq!(for_network("nightly"), Some(REGTEST));
        assert_eq!(for_network("mainnet"), None);
    }
}
