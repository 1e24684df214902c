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
//!   pinned in its repository, so ledgerd has none (`--batch-proof-image`
//!   pins one, [`ImagePins`]).
//!
//! The embedded devnet has no guest: its proofs are fake receipts
//! ([`super::receipt`]) that claim [`DEVNET_FAKE_IMAGE`], 32 ASCII bytes no
//! ELF hashes to.

use std::fmt;

use crate::chain_rules::hex_key;
use crate::chain_rules::{Fork, Network};

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

/// The image a proof of one fork must verify against, and who says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchImage {
    pub origin: ImageOrigin,
    pub fork: Fork,
    pub id: [u8; 32],
}

/// Who chose a [`BatchImage`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageOrigin {
    /// `--network`: the image Citrea v0.6.2 ships for that network.
    Network(Network),
    /// ledgerd's own devnet: [`DEVNET_FAKE_IMAGE`].
    Devnet,
    /// `--batch-proof-image FORK=HEX`.
    Pinned,
    /// Nobody: a chain without a network name or pins; the image the
    /// receipt itself claims (its seal must hold for it, a fake's claim
    /// must match it).
    Claimed,
}

impl fmt::Display for BatchImage {
    /// `the testnet batch-proof image (Genesis era)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fork = self.fork;
        match self.origin {
            ImageOrigin::Network(n) => write!(f, "the {n} batch-proof image ({fork} era)"),
            ImageOrigin::Devnet => write!(
                f,
                "the devnet's batch-proof image ({fork} era; no guest, fake receipts only)"
            ),
            ImageOrigin::Pinned => write!(
                f,
                "the batch-proof image pinned for the {fork} era ({BATCH_PROOF_IMAGE} {}={})",
                fork_word(fork),
                hex::encode(self.id)
            ),
            ImageOrigin::Claimed => write!(
                f,
                "the batch-proof image the receipt claims ({fork} era; images not pinned)"
            ),
        }
    }
}

/// The flag that pins a chain's batch-proof images.
pub const BATCH_PROOF_IMAGE: &str = "--batch-proof-image";

/// How [`BATCH_PROOF_IMAGE`] names a fork: `genesis`, `kumquat`.
pub fn fork_word(fork: Fork) -> &'static str {
    match fork {
        Fork::Genesis => "genesis",
        Fork::Kumquat => "kumquat",
    }
}

/// The images pinned with `--batch-proof-image FORK=HEX`, per fork.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImagePins {
    pub genesis: Option<[u8; 32]>,
    pub kumquat: Option<[u8; 32]>,
}

impl ImagePins {
    /// The image pinned for `fork`.
    pub fn get(&self, fork: Fork) -> Option<[u8; 32]> {
        match fork {
            Fork::Genesis => self.genesis,
            Fork::Kumquat => self.kumquat,
        }
    }

    /// Whether no image is pinned.
    pub fn is_empty(&self) -> bool {
        self.genesis.is_none() && self.kumquat.is_none()
    }

    /// Reads one `FORK=HEX` (`kumquat=50757c7c…`: the fork in any case, the
    /// image ID as risc0 prints a `Digest`, 64 hex digits, `0x` allowed)
    /// into these pins. A fork pinned twice to different images is an error.
    pub fn add(&mut self, text: &str) -> Result<(), String> {
        let Some((fork, hex_id)) = text.split_once('=') else {
            return Err(format!(
                "{BATCH_PROOF_IMAGE} takes FORK=HEX (genesis=… or kumquat=…), not {text:?}"
            ));
        };
        let slot = match fork.trim().to_ascii_lowercase().as_str() {
            "genesis" => &mut self.genesis,
            "kumquat" => &mut self.kumquat,
            other => {
                return Err(format!(
                    "{BATCH_PROOF_IMAGE}: the fork is genesis or kumquat, not {other:?}"
                ))
            }
        };
        let digits = hex_id.trim();
        let digits = digits.strip_prefix("0x").unwrap_or(digits);
        let id: [u8; 32] = hex::decode(digits)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| {
                format!(
                    "{BATCH_PROOF_IMAGE} {fork}=…: the image ID is 64 hex digits (a risc0 \
                     image ID as it prints), not {hex_id:?}"
                )
            })?;
        match slot {
            Some(old) if *old != id => Err(format!(
                "{BATCH_PROOF_IMAGE} pins the {fork} image twice, to {} and {}: give it once",
                hex::encode(*old),
                hex::encode(id)
            )),
            _ => {
                *slot = Some(id);
                Ok(())
            }
        }
    }
}

/// A fork for which no image is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoImage {
    /// `None`: a chain without a network name, whose pins leave this fork out.
    pub network: Option<Network>,
    pub fork: Fork,
}

impl fmt::Display for NoImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fork = self.fork;
        let word = fork_word(fork);
        match self.network {
            Some(network) => {
                let why = match network {
                    Network::Nightly => "Citrea builds nightly's guest from source and pins no ID",
                    _ => "Citrea v0.6.2 ships no guest for it",
                };
                write!(
                    f,
                    "ledgerd knows no {network} batch-proof image for the {fork} era ({why}), so \
                     no proof of it can verify; pin the image the chain's guest was built with: \
                     {BATCH_PROOF_IMAGE} {word}=HEX"
                )
            }
            None => write!(
                f,
                "no batch-proof image is pinned for the {fork} era ({BATCH_PROOF_IMAGE} pins \
                 other forks only), so no proof of it can verify; add {BATCH_PROOF_IMAGE} \
                 {word}=HEX"
            ),
        }
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
            return Err(NoImage {
                network: Some(network),
                fork,
            })
        }
    };
    let origin = network.map_or(ImageOrigin::Devnet, ImageOrigin::Network);
    Ok(BatchImage { origin, fork, id })
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

    #[test]
    fn pins_read_fork_equals_hex_and_refuse_what_is_not() {
        let mut pins = ImagePins::default();
        assert!(pins.is_empty());
        pins.add(&format!("kumquat={}", hex::encode(TESTNET_BATCH_1)))
            .unwrap();
        pins.add(&format!("Genesis=0x{}", hex::encode(TESTNET_BATCH_0)))
            .unwrap();
        assert_eq!(pins.get(Fork::Kumquat), Some(TESTNET_BATCH_1));
        assert_eq!(pins.get(Fork::Genesis), Some(TESTNET_BATCH_0));
        // The same pin again is fine; another image for a pinned fork is not.
        pins.add(&format!("kumquat={}", hex::encode(TESTNET_BATCH_1)))
            .unwrap();
        let e = pins
            .add(&format!("kumquat={}", hex::encode(DEVNET_BATCH_1)))
            .unwrap_err();
        assert!(e.contains("pins the kumquat image twice"), "{e}");
        for bad in ["kumquat", "fork2=00", "kumquat=abcd", "genesis=zz"] {
            let e = ImagePins::default().add(bad).unwrap_err();
            assert!(e.starts_with("--batch-proof-image"), "{bad}: {e}");
        }
        let e = NoImage {
            network: None,
            fork: Fork::Genesis,
        }
        .to_string();
        assert!(e.contains("add --batch-proof-image genesis=HEX"), "{e}");
    }
}
