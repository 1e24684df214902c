//! Bitcoin as the DA layer: what both ways of reading Bitcoin share (checked blocks, and Citrea
//! v0.6's commitments and proofs as they sit on chain), and the two ways side by side: [`rpc`]
//! (Bitcoin Core's RPC, `--bitcoin-rpc`) and [`p2p`] (the P2P network, `--bitcoin-peer`).
//!
//! Shared by both:
//!
//! - [`args`], [`config`]: the `--bitcoin-*` flags and what they resolve to.
//! - [`block`]: a raw block decoded and checked (hash, proof of work, Merkle root, witness
//!   commitment), with Citrea's `daSlotHash` and `daSlotTxsCommitment`.
//! - [`kept`]: checked blocks kept between the L2 anchor check and the DA scan, so each block
//!   is fetched once.
//!
//! A Citrea node publishes each commitment or proof as a commit/reveal transaction pair; the reveal
//! spends a taproot output by its script path, and that script carries the data inside an
//! `OP_FALSE OP_IF … OP_ENDIF` envelope. Reading one goes through these rooms, in order:
//!
//! - [`inscription`]: the reveal's wtxid prefix (namespace), then its tapscript push by push: kind,
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
//!
//! The two ways of reading, each a DA source of its own built from the same settings:
//!
//! - [`rpc`]: Bitcoin Core's RPC: its client, a block reader, its headers into the header chain.
//! - [`p2p`]: Bitcoin's P2P network: peers, their messages, blocks spread over them.
pub mod args;
pub mod block;
pub mod body;
pub mod config;
pub mod inscription;
pub mod kept;
pub mod keys;
pub mod p2p;
pub mod reveal;
pub mod rpc;
pub mod scan;
pub mod signer;
pub mod walk;
