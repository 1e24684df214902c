//! Bitcoin's header chain, trusted for nothing but proof of work: Bitcoin
//! Core's header rules for main, testnet4, signet and regtest, and the
//! header tree the DA scan follows.
//!
//! - `params`: each network's parameters ([`BitcoinNetwork`], [`ChainParams`]),
//!   as Core's `src/kernel/chainparams.cpp` sets them.
//! - [`rules`]: Core's rules, one function each (`GetNextWorkRequired`,
//!   `ContextualCheckBlockHeader`, the median time past), over whatever
//!   context the caller holds; a rule lacking its context is not checked.
//! - `tree`: [`HeaderTree`]: headers checked against their ancestors,
//!   chainwork summed, the most-work chain followed, forks kept while they
//!   branch within the headers held, the best chain stored in the ledger.
//! - [`file`](mod@file): checking a file of headers (`ledgerd verify-headers`).
//!
//! This room depends on the `bitcoin` crate and the ledger only: the sync
//! thread, the sources (bitcoind's RPC, P2P peers) and the command line use
//! it, never the other way round.
pub mod args;
pub mod file;
mod params;
pub mod rules;
mod tree;

pub use params::{BitcoinNetwork, ChainParams};

pub use tree::{unix_now, Accepted, Entry, HeaderStoreError, HeaderTree, Reorg, DEFAULT_KEEP};
