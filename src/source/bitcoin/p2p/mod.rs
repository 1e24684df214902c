//! Bitcoin read from its P2P network (`--bitcoin-peer HOST:PORT`), with no
//! bitcoind RPC or with one beside the peers: Bitcoin's protocol spoken
//! over blocking sockets, plain (v1) or encrypted (BIP324's v2), the
//! `bitcoin` crate's `p2p` module as the message codec.
//!
//! - [`message`]: one v1 message read whole, with a 4,000,000-byte cap checked
//!   before anything is allocated.
//! - [`v2`]: BIP324's v2 transport (the `bip324` crate, sans-I/O), the
//!   same cap; [`transport`]: v1 or v2 behind one read and write, which one
//!   a connection speaks (`--bitcoin-transport`), the fallback to v1.
//! - [`peer`]: one connection: the handshake (protocol 70016, no services,
//!   relay off), ping/pong, `getheaders` with a locator, `getdata` for
//!   witness blocks; every wait bounded.
//! - [`peers`]: the peers given: back-off, drops by reason, block downloads
//!   spread over them, several blocks in flight each.
//! - [`discover`]: peers found, not typed: the address book ([`book`], in
//!   the ledger), the DNS seeds ([`seeds`]), `addr` gossip, and which
//!   addresses fill the outbound slots.
//! - [`bitcoind`]: bitcoind's RPC beside the peers (`--bitcoin-rpc` too): one
//!   more source of headers and blocks, asked for blocks first.
//! - what `/health` and `/metrics` show of them: [`crate::progress::bitcoin_peers`].
//! - [`da`]: all of the above as the follower's DA source: the header chain
//!   kept by Core's rules, the blocks of the most-work chain scanned.
//!
//! Peers are not trusted: every header they send passes the header-chain
//! rules before it is stored, and every block must match its header (its
//! hash, Merkle root and witness commitment: [`crate::source::bitcoin::block`]).
pub mod bitcoind;
pub mod book;
pub mod da;
pub mod discover;
pub mod download;
pub mod message;
pub mod peer;
pub mod peers;
pub mod seeds;
pub mod start;
pub mod transport;
pub mod v2;

/// A socket address written out (tests).
#[cfg(test)]
fn sa(s: &str) -> std::net::SocketAddr {
    s.parse().unwrap()
}
