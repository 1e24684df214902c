//! Chain sources: where the sync thread gets the L2 chain (soft
//! confirmations) and the DA chain (slots with commitments and proofs) from.
//!
//! Two traits, one per layer ([`L2Source`], [`DaSource`]); the sync thread
//! takes one of each and verifies whatever they return before anything is
//! written, so a source is never trusted.
//!
//! - [`devnet`]: the embedded devnet, which makes blocks, commitments and
//!   proofs (both layers); `dev_*` calls drive it ([`crate::sync::devnet`]).
//! - [`upstream`]: another node (a ledgerd, or a Citrea v0.6 sequencer or
//!   full node) over its ledger JSON-RPC (both layers); `upstream::failover`
//!   picks which of several URLs is asked, `upstream::pace` how hard.
//! - [`bitcoin`]: Bitcoin itself (the DA layer): Citrea's transactions found
//!   in checked blocks, their signers checked, their bodies decoded; read
//!   through Bitcoin Core's RPC ([`bitcoin::rpc`]) or from the P2P network
//!   ([`bitcoin::p2p`]).
//! - [`rpc_client`]: the blocking JSON-RPC client the upstream and bitcoind
//!   sources share; [`tls`]: its TLS; [`backoff`]: waiting between tries.

pub mod backoff;
pub mod bitcoin;
pub mod devnet;
pub mod rpc_client;
pub mod tls;
pub mod upstream;

mod traits;

pub use traits::{
    ChainIdentity, DaAnchor, DaSource, EachSlot, L2Source, RangeFetch, SourceError, SourceErrorKind,
};
