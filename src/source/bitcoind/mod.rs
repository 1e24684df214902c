//! Bitcoin, read from Bitcoin Core's JSON-RPC interface.
//!
//! - [`rpc`]: the blocking JSON-RPC client (credentials, cookie re-read,
//!   batches, typed errors).
//! - [`block`]: a raw block decoded and checked (hash, proof of work, Merkle
//!   root, witness commitment), with Citrea's `daSlotHash` and
//!   `daSlotTxsCommitment`.
//! - [`reader`]: a range of heights read as checked blocks, batched and
//!   several requests in flight.
pub mod block;
pub mod reader;
pub mod rpc;

pub use block::{parse_block, BlockError, DaBlock, DaTx};
pub use reader::{BlockReader, ReadError, ReaderOptions};
pub use rpc::{BitcoinRpc, Credentials, RpcError, RpcOptions};
