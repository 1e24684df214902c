//! JSON on the wire: the shapes answers take, and the two directions.
//!
//! - [`WireShape`]: ledgerd's own answer shapes or a Citrea v0.6 node's (`--wire`).
//! - [`write`](mod@write): records into JSON answers, written straight into bytes (the server's side).
//! - [`read`]: JSON answers back into records, in either shape (the follower, `ledgerd import`,
//!   the tests).

pub mod read;
pub mod write;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WireShape {
    /// ledgerd's own shapes, `docs/API.md` (the default; `--wire ledgerd`,
    /// or `seed`, its earlier name).
    #[default]
    Ledgerd,
    /// A Citrea v0.6 node's: lowercase statuses, method 11 an array without
    /// height, method 12 with height outside, ranges of at most 20 blocks.
    Citrea,
}

impl WireShape {
    /// The longest range served when `--max-range` is not given.
    pub fn default_max_range(self) -> u64 {
        match self {
            WireShape::Ledgerd => 1000,
            WireShape::Citrea => 20,
        }
    }

    pub(crate) fn parse(value: &str) -> Result<WireShape, String> {
        match value {
            "ledgerd" | "seed" => Ok(WireShape::Ledgerd),
            "citrea" => Ok(WireShape::Citrea),
            other => Err(format!(
                "takes ledgerd (ledgerd's own answer shapes) or citrea (a Citrea v0.6 node's), \
                 not {other:?}"
            )),
        }
    }
}

impl std::fmt::Display for WireShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WireShape::Ledgerd => "ledgerd",
            WireShape::Citrea => "citrea",
        })
    }
}
