//! Bitcoin read through Bitcoin Core's RPC (`--bitcoin-rpc`).
//!
//! - [`client`]: the blocking JSON-RPC client (credentials, cookie re-read, batches, typed errors).
//! - [`reader`]: a range of heights read as checked blocks, batched, several requests in flight.
//! - [`headers`]: bitcoind's headers brought into the verified header chain (its network checked
//!   first), for both sources that read bitcoind.
//! - [`da`]: the follower's DA source on bitcoind: slots with the commitments and proofs Bitcoin
//!   carried ([`crate::source::bitcoin::scan`]), the blocks soft confirmations point at.
//! - [`start`]: the source built from its settings.
pub mod client;
pub mod da;
pub mod headers;
pub mod reader;
pub mod start;
