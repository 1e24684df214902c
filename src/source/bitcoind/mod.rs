//! Bitcoin as the DA layer: Bitcoin Core's RPC, checked blocks, and Citrea v0.6's commitments and
//! proofs as they sit on chain.
//!
//! Reading blocks:
//!
//! - [`rpc`]: the blocking JSON-RPC client (credentials, cookie re-read, batches, typed errors).
//! - [`block`]: a raw block decoded and checked (hash, proof of work, Merkle root, witness
//!   commitment), with Citrea's `daSlotHash` and `daSlotTxsCommitment`.
//! - [`reader`]: a range of heights read as checked blocks, batched, several requests in flight.
//!
//! A Citrea node publishes each commitment or proof as a commit/reveal transaction pair; the reveal
//! spends a taproot output by its script path, and that script carries the data inside an
//! `OP_FALSE OP_IF … OP_ENDIF` envelope. Reading one goes through these rooms, in order:
//!
//! - [`envelope`]: the reveal's wtxid prefix (namespace), then its tapscript push by push: kind,
//!   signature, signer key, body pushes, nonce.
//! - [`signer`]: the ECDSA signature over SHA-256 of the body and the signer's key against the
//!   network's DA key.
//! - [`body`]: the borsh bodies (a sequencer commitment, the light-client proof forms) and brotli,
//!   with a hard bound on what a compressed proof may expand to.
//! - [`reveal`]: the three above in one call per transaction, as the sync thread wants them, with
//!   one typed refusal that says why a transaction was not taken.
//! - [`scan`]: a checked block into a DA slot (what both Bitcoin sources
//!   share): commitments and proofs found, chunks remembered for their
//!   aggregate.
//! - [`keys`]: v0.6.2's sequencer and prover DA keys per network, and the regtest private keys.
//! - [`chain_sync`]: bitcoind's headers brought into the verified header chain (its network
//!   checked first), for both sources that read bitcoind.
//! - [`da`]: all of the above as the follower's DA source (`--bitcoin-rpc`): slots with the
//!   commitments and proofs Bitcoin carried, the blocks soft confirmations point at.
pub mod args;
pub mod block;
pub mod body;
pub mod chain_sync;
pub mod config;
pub mod da;
pub mod envelope;
pub mod keys;
pub mod reader;
pub mod reveal;
pub mod rpc;
pub mod scan;
pub mod signer;
pub mod start;

pub use block::{parse_block, BlockError, DaBlock, DaTx};
pub use config::BitcoinConfig;
pub use da::BitcoinDa;
pub use reader::{BlockReader, ReadError, ReaderOptions};
pub use rpc::{BitcoinRpc, Credentials, RpcError, RpcOptions};
pub use scan::{BitcoinDaConfig, DEFAULT_FINALITY_DEPTH};
