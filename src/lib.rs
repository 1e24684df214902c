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
//! - [`wire`]: reading the RPC's JSON shapes back into records (follower, import, tests).
pub mod chain;
pub mod server;
pub mod signals;
pub mod types;
pub mod wire;
