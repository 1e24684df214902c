//! Bitcoin's header chain, trusted for nothing but proof of work: Bitcoin
//! Core's header rules for main, testnet4, signet and regtest, and the
//! header tree the DA scan follows.
//!
//! - [`params`]: each network's parameters ([`BitcoinChain`], [`ChainParams`]),
//!   as Core's `src/kernel/chainparams.cpp` sets them.
//! - [`rules`]: Core's rules, one function each (`GetNextWorkRequired`,
//!   `ContextualCheckBlockHeader`, the median time past), over whatever
//!   context the caller holds; a rule lacking its context is not checked.
//! - [`chain`]: [`HeaderChain`]: headers checked against their ancestors,
//!   chainwork summed, the most-work chain followed, forks kept while they
//!   branch within the headers held, the best chain stored in the ledger.
//! - [`verify`]: checking a file of headers (`ledgerd verify-headers`).
//!
//! This room depends on the `bitcoin` crate and the ledger only: the sync
//! thread, the sources (bitcoind's RPC, P2P peers) and the command line use
//! it, never the other way round.
pub mod args;
pub mod chain;
pub mod params;
pub mod rules;
pub mod verify;

pub use chain::{unix_now, Accepted, Entry, HeaderChain, HeaderStoreError, Reorg, DEFAULT_KEEP};
pub use params::{BitcoinChain, ChainParams};
pub use rules::{HeaderError, Rule};
