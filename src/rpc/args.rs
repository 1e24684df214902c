//! The RPC layer's flags (`[server]` in a config file): answer shapes and
//! request limits. Their defaults are [`super::RpcConfig::default`]'s.

use crate::flags::heading;
use crate::flags::number;
use crate::wire::WireShape;

/// Most request objects in one batch unless `--max-batch` says otherwise.
pub const DEFAULT_MAX_BATCH: usize = 50;

/// Which answer shapes the server writes (`--wire`).
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = heading::SERVER)]
pub struct RpcArgs {
    /// Answer shapes: ledgerd's own, or a Citrea v0.6 node's
    #[arg(long, value_name = "ledgerd|citrea", default_value_t = WireShape::default(), value_parser = WireShape::parse)]
    pub wire: WireShape,
    /// Longest ledger_getSoftConfirmationRange [default: 1000; 20 with --wire citrea]
    #[arg(long, value_name = "N", value_parser = number::<u64>)]
    pub max_range: Option<u64>,
    /// Most calls in one batch request
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_BATCH, value_parser = number::<usize>)]
    pub max_batch: usize,
}
