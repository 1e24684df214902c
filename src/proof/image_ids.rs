//! Which guest program a batch proof must come from: the batch-proof image
//! ID per network and fork, pinned.
//!
//! Citrea v0.6.2 computes these at start from the guest ELFs it ships
//! (`bin/citrea/src/guests.rs`: `risc0_binfmt::compute_image_id` over
//! `resources/guests/risc0/<network>/batch-<n>.elf`; batch-0 is the
//! Genesis-era guest, batch-1 Kumquat's). ledgerd does not ship the ELFs
//! (megabytes each): the IDs below were computed once with
//! `risc0_binfmt::compute_image_id` 1.2.1 over the files at tag v0.6.2 (the
//! file's git blob in parentheses), outside this tree.
//!
//! - testnet batch-0 (blob `19724e54`) and devnet batch-0 (blob `19724e54`, the same
//!   file): `3631d906…`; testnet batch-1 (blob `f89eb583`): `50757c7c…` (both equal
//!   the testnet `INITIAL_BATCH_PROOF_METHOD_IDS` of Citrea's light-client
//!   guest); devnet batch-1 (blob `ad223190`): `9b21ddb0…`.
//! - mainnet: v0.6.2 ships only a batch-0, and it is the same file as its
//!   light-client guest (blob `998baeac`) (mainnet had not launched): pinned as
//!   v0.6.2 would use it, with no Kumquat image, as in v0.6.2.
//! - nightly: Citrea builds its guest from source at compile time; no ID is
//!   pinned in its repository, so ledgerd has none.
//!
//! The embedded devnet has no guest: its proofs are fake receipts
//! ([`super::receipt`]) that claim [`DEVNET_FAKE_IMAGE`], 32 ASCII bytes no
//! ELF hashes to.

use std::fmt;

use crate::chain::forks::hex_key;
use crate::chain::{Fork, Network};

/// testnet and devnet `batch-0.elf` (Genesis era).
pub const TESTNET_BATCH_0: [u8; 32] =
    hex_key(b"3631d90630a3f0deb47f3a3411fe6e7ede1b0d86ad4216c75041e1a2020f009f");
/// testnet `batch-1.elf` (Kumquat).
pub const TESTNET_BATCH_1: [u8; 32] =
    hex_key(b"50757c7c24e165267d92794e59aca4e57758f3ac87cd20c512894aed4b87d4ff");
/// devnet `batch-0.elf`: the same file as testnet's.
pub const DEVNET_BATCH_0: [u8; 32] = TESTNET_BATCH_0;
/// devnet `batch-1.elf` (Kumquat).
pub const DEVNET_BATCH_1: [u8; 32] =
    hex_key(b"9b21ddb0ebdc9af16fe9fc47b59242c9cac0901084b0fd063d6fe2010927d80c");
/// mainnet `batch-0.elf` in v0.6.2 (the same file as its `light-0.elf`).
pub const MAINNET_BATCH_0: [u8; 32] =
    hex_key(b"47b3fb41af02a98c60db7e81cc32bae38a584e4c49c1a9997952bcb10c764adb");
/// What the embedded devnet's fake receipts claim to have run.
pub const DEVNET_FAKE_IMAGE: [u8; 32] = *b"ledgerd devnet: fake batch proof";

/// The image a proof of one network and fork must verify against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchImage {
    /// `None`: the embedded devnet (no network named).
    pub network: Option<Network>,
    pub fork: Fork,
    pub id: [u8; 32],
}

impl fmt::Display for BatchImage {
    /// `the testnet batch-proof image (Genesis era)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.network {
            Some(n) => write!(f, "the {n} batch-proof image ({} era)", self.fork),
            None => write!(
                f,
                "the devnet's batch-proof image ({} era; no guest, fake receipts only)",
                self.fork
            ),
        }
    }
}

/// A network and fork for which no image is pinned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoImage {
    pub network: Network,
    pub fork: Fork,
}

impl fmt::Display for NoImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.network {
            Network::Nightly => "Citrea builds nightly's guest from source and pins no ID",
            _ => "Citrea v0.6.2 ships no guest for it",
        };
        write!(
            f,
            "ledgerd knows no {} batch-proof image for the {} era ({why}), so no proof of it can verify",
            self.network, self.fork
        )
    }
}

impl std::error::Error for NoImage {}

/// The batch-proof image of `network` (`None`: the embedded devnet) for
/// proofs of `fork`.
pub fn batch_image(network: Option<Network>, fork: Fork) -> Result<BatchImage, NoImage> {
    let id = match (network, fork) {
        (None, _) => DEVNET_FAKE_IMAGE,
        (Some(Network::Testnet), Fork::Genesis) => TESTNET_BATCH_0,
        (Some(Network::Testnet), Fork::Kumquat) => TESTNET_BATCH_1,
        (Some(Network::Devnet), Fork::Genesis) => DEVNET_BATCH_0,
        (Some(Network::Devnet), Fork::Kumquat) => DEVNET_BATCH_1,
        (Some(Network::Mainnet), Fork::Genesis) => MAINNET_BATCH_0,
        (Some(network @ (Network::Mainnet | Network::Nightly)), fork) => {
            return Err(NoImage { network, fork })
        }
    };
    Ok(BatchImage { network, fork, id })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_network_and_fork_has_its_image_or_says_why_not() {
        let t0 = batch_image(Some(Network::Testnet), Fork::Genesis).unwrap();
        assert_eq!(
            hex::encode(t0.id),
            "3631d90630a3f0deb47f3a3411fe6e7ede1b0d86ad4216c75041e1a2020f009f"
        );
        assert_eq!(
            t0.to_string(),
            "the testnet batch-proof image (Genesis era)"
        );
        let t1 = batch_image(Some(Network::Testnet), Fork::Kumquat).unwrap();
        assert_ne!(t0.id, t1.id);
        let d1 = batch_image(Some(Network::Devnet), Fork::Kumquat).unwrap();
        assert_ne!(d1.id, t1.id);
        let e = batch_image(Some(Network::Nightly), Fork::Kumquat).unwrap_err();
        assert!(e.to_string().contains("from source"), "{e}");
        assert!(batch_image(Some(Network::Mainnet), Fork::Kumquat).is_err());
        assert_eq!(
            batch_image(None, Fork::Kumquat).unwrap().id,
            DEVNET_FAKE_IMAGE
        );
    }
}
