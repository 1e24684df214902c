//! A follower's sync flags (`[follower]` in a config file). Their defaults
//! are [`super::SyncConfig::default`]'s.

use crate::flags::heading;
use crate::flags::{at_least_one, number, switch};

pub const DEFAULT_SYNC_CHUNK: u64 = 100;
pub const DEFAULT_SYNC_CONCURRENCY: usize = 8;

#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = heading::FOLLOWER)]
pub struct FollowerArgs {
    /// Blocks per range request (cut to the upstream's limit)
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SYNC_CHUNK, value_parser = at_least_one::<u64>)]
    pub sync_chunk: u64,
    /// Range requests kept in flight at once
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SYNC_CONCURRENCY, value_parser = concurrency)]
    pub sync_concurrency: usize,
    /// Accept blocks an upstream answers without their transactions (Citrea's include_tx_body = false): Kumquat blocks on the sequencer's signature over their stated hash, Genesis blocks on their link to the block below
    #[arg(long, value_parser = switch)]
    pub allow_missing_tx_bodies: bool,
}

fn concurrency(value: &str) -> Result<usize, String> {
    match number(value)? {
        n @ 1..=64 => Ok(n),
        _ => Err("takes 1 to 64 (range requests in flight at once)".into()),
    }
}
