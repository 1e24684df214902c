//! The chain-rule flags (`[chain-rules]` in a config file), taken by `run`,
//! `import`, `verify` and `verify-proof`: which fork applies where, which
//! sequencer key blocks carry, which batch-proof receipts prove heights.

use super::{Fork, ForkTable, Network};
use crate::config::heading;
use crate::config::values::{number, switch};
use crate::proof::image_ids::{self, ImagePins, BATCH_PROOF_IMAGE};
use crate::proof::ProofRules;

#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
#[command(next_help_heading = heading::CHAIN_RULES)]
pub struct ChainArgs {
    /// Testnet, devnet, mainnet or nightly: Citrea v0.6.2's Kumquat height and sequencer key for that network
    #[arg(long, value_name = "NAME", value_parser = network)]
    pub network: Option<Network>,
    /// Genesis rules below L2 height H, Kumquat from H [default: the network's, else 0: Kumquat for every block]
    #[arg(long, value_name = "H", value_parser = number::<u64>)]
    pub kumquat_height: Option<u64>,
    /// The sequencer key blocks must carry [default: the network's, else the key of block 1]
    #[arg(long, value_name = "HEX", value_parser = pubkey)]
    pub sequencer_pubkey: Option<[u8; 32]>,
    /// Let fake risc0 receipts (RISC0_DEV_MODE's) prove heights on a named --network [default: only with no --network, a devnet]
    #[arg(long, value_parser = switch())]
    pub allow_fake_proofs: bool,
    /// The batch-proof image ID (64 hex digits, as risc0 prints it) of fork genesis or kumquat, for a chain without --network; repeat (or a comma list) for both forks [default: the network's images; the devnet's own; else not pinned: each receipt's claimed image, counted in /health and /metrics]
    #[arg(long, value_name = "FORK=HEX", value_parser = pins)]
    pub batch_proof_image: Vec<ImagePins>,
}

impl ChainArgs {
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

    /// The images `--batch-proof-image` pins, every value read into one
    /// set; a fork pinned twice to different images, or to another image
    /// than `--network`'s own, is refused with a sentence.
    pub fn image_pins(&self) -> Result<ImagePins, String> {
        let mut all = ImagePins::default();
        for one in &self.batch_proof_image {
            for fork in [Fork::Genesis, Fork::Kumquat] {
                if let Some(id) = one.get(fork) {
                    all.add(&format!(
                        "{}={}",
                        image_ids::fork_word(fork),
                        hex::encode(id)
                    ))?;
                }
            }
        }
        if let Some(n) = self.network {
            for fork in [Fork::Genesis, Fork::Kumquat] {
                let (Some(pin), Ok(own)) = (all.get(fork), image_ids::batch_image(Some(n), fork))
                else {
                    continue;
                };
                if pin != own.id {
                    return Err(format!(
                        "{BATCH_PROOF_IMAGE} {}={} is not {own} {}: --network {n} pins its own; \
                         drop the pin, or --network for a chain without a name",
                        image_ids::fork_word(fork),
                        hex::encode(pin),
                        hex::encode(own.id)
                    ));
                }
            }
        }
        Ok(all)
    }

    /// Which batch-proof receipts prove heights: `--network`'s images, the
    /// devnet's own, `--batch-proof-image` pins, or (none of these) the
    /// image each receipt claims; fakes count except on a named network
    /// without `--allow-fake-proofs`.
    pub fn receipt_rules(&self, devnet: bool) -> Result<ProofRules, String> {
        Ok(ProofRules::new(
            self.network,
            self.image_pins()?,
            self.allow_fake_proofs,
            devnet,
        ))
    }

    /// Where [`ChainArgs::sequencer_key`] comes from, for messages:
    /// `testnet key`, `--sequencer-pubkey key`, or `key of the first block`.
    pub fn sequencer_key_name(&self) -> String {
        match (self.sequencer_pubkey, self.network) {
            (Some(_), _) => "--sequencer-pubkey key".to_string(),
            (None, Some(n)) if n.sequencer_key().is_some() => format!("{n} key"),
            _ => "key of the first block".to_string(),
        }
    }
}

fn network(value: &str) -> Result<Network, String> {
    value.parse().map_err(|e| format!("--network: {e}"))
}

fn pubkey(value: &str) -> Result<[u8; 32], String> {
    crate::hexstr::decode_array(value)
        .map_err(|_| format!("takes 64 hex digits (a 32-byte Ed25519 key), not {value:?}"))
}

/// One `--batch-proof-image` value: `FORK=HEX`, or a comma list of them.
fn pins(value: &str) -> Result<ImagePins, String> {
    let mut pins = ImagePins::default();
    for one in value.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        pins.add(one)?;
    }
    Ok(pins)
}
