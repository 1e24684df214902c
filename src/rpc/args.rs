//! The RPC layer's flags (`[server]` in a config file): answer shapes and
//! request limits. Their defaults are [`super::RpcConfig::default`]'s.

use crate::flags::heading;
use crate::flags::number;

/// Most request objects in one batch unless `--max-batch` says otherwise.
pub const DEFAULT_MAX_BATCH: usize = 50;

/// Which answer shapes the server writes (`--wire`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AnswerShape {
    /// ledgerd's own shapes, `docs/API.md` (the default; `--wire ledgerd`,
    /// or `seed`, its earlier name).
    #[default]
    Ledgerd,
    /// A Citrea v0.6 node's: lowercase statuses, method 11 an array without
    /// height, method 12 with height outside, ranges of at most 20 blocks.
    Citrea,
}

impl AnswerShape {
    /// The longest range served when `--max-range` is not given.
    pub fn default_max_range(self) -> u64 {
        match self {
            AnswerShape::Ledgerd => 1000,
            AnswerShape::Citrea => 20,
        }
    }

    fn parse(value: &str) -> Result<AnswerShape, String> {
        match value {
            "ledgerd" | "seed" => Ok(AnswerShape::Ledgerd),
            "citrea" => Ok(AnswerShape::Citrea),
            other => Err(format!(
                "takes ledgerd (ledgerd's own answer shapes) or citrea (a Citrea v0.6 node's), \
                 not {other:?}"
            )),
        }
    }
}

impl std::fmt::Display for AnswerShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AnswerShape::Ledgerd => "ledgerd",
            AnswerShape::Citrea => "citrea",
        })
    }
}

#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = heading::SERVER)]
pub struct RpcArgs {
    /// Answer shapes: ledgerd's own, or a Citrea v0.6 node's
    #[arg(long, value_name = "ledgerd|citrea", default_value_t = AnswerShape::default(), value_parser = AnswerShape::parse)]
    pub wire: AnswerShape,
    /// Longest ledger_getSoftConfirmationRange [default: 1000; 20 with --wire citrea]
    #[arg(long, value_name = "N", value_parser = number::<u64>)]
    pub max_range: Option<u64>,
    /// Most calls in one batch request
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_BATCH, value_parser = number::<usize>)]
    pub max_batch: usize,
}
