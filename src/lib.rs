//! ledgerd: a small, single-threaded ledger JSON-RPC full node for a Bitcoin
//! ZK rollup.
//!
//! # Module map
//!
//! ```text
//!  chain source ──> sync thread (verify, write) ──> LMDB ledger <── server loop (read, answer)
//!  (devnet | upstream)      sync/                     ledger/          server/ + rpc/
//! ```
//!
//! - [`types`]: the records (soft confirmations, commitments, proofs, statuses).
//! - [`chain`]: the contract's chain rules: hashing, signatures, Merkle roots.
//! - [`sync`]: the sync thread, its chain sources and the progress it shares.
//! - [`ledger`]: the LMDB ledger: typed tables, compact codecs, reader and writer transactions.
//! - [`rpc`]: the JSON-RPC 2.0 layer: request bytes in, response bytes out.
//! - [`json`]: the hand-written JSON writer for the RPC's output shapes.
//! - [`wire`]: reading the RPC's JSON shapes back into records (follower, import, tests).
pub mod chain;
pub mod json;
pub mod ledger;
pub mod rpc;
pub mod sync;
pub mod types;
pub mod wire;
