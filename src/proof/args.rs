//! The batch-proof flags (`[chain-rules]` in a config file, beside the
//! chain rules of `chain::args`), taken by `run`, `import`, `verify` and
//! `verify-proof`: which batch-proof receipts prove heights.

use super::image_ids::{self, ImagePins, BATCH_PROOF_IMAGE};
use super::ProofRules;
use crate::chain_rules::{Fork, Network};
use crate::flags::heading;
use crate::flags::switch;

#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
#[command(next_help_heading = heading::CHAIN_RULES)]
pub struct ProofArgs {
    /// Let fake risc0 receipts (RISC0_DEV_MODE's) prove heights on a named --network [default: only with no --network, a devnet]
    #[arg(long, value_parser = switch)]
    pub allow_fake_proofs: bool,
    /// The batch-proof image ID (64 hex digits, as risc0 prints it) of fork genesis or kumquat, for a chain without --network; repeat (or a comma list) for both forks [default: the network's images; the devnet's own; else not pinned: each receipt's claimed image, counted in /health and /metrics]
    #[arg(long, value_name = "FORK=HEX", value_parser = pins)]
    pub batch_proof_image: Vec<ImagePins>,
}

impl ProofArgs {
    /// The images `--batch-proof-image` pins, every value read into one
    /// set; a fork pinned twice to different images, or to another image
    /// than `network`'s own (`--network`), is refused with a sentence.
    pub fn image_pins(&self, network: Option<Network>) -> Result<ImagePins, String> {
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
        if let Some(n) = network {
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
    pub fn receipt_rules(
        &self,
        network: Option<Network>,
        devnet: bool,
    ) -> Result<ProofRules, String> {
        Ok(ProofRules::new(
            network,
            self.image_pins(network)?,
            self.allow_fake_proofs,
            devnet,
        ))
    }
}

/// One `--batch-proof-image` value: `FORK=HEX`, or a comma list of them.
fn pins(value: &str) -> Result<ImagePins, String> {
    let mut pins = ImagePins::default();
    for one in value.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        pins.add(one)?;
    }
    Ok(pins)
}
