//! What a follower's Bitcoin DA source is told at start.

use std::sync::Arc;

use crate::headers::BitcoinNetwork;
use crate::source::bitcoin::p2p::transport::TransportChoice;
use crate::source::bitcoin::rpc::client::{BitcoinRpc, Credentials, RpcOptions};
use crate::source::bitcoin::scan::BitcoinDaConfig;
use crate::source::bitcoin::signer::DaPublicKey;

/// The Bitcoin DA source a follower reads (`--bitcoin-rpc`, `--bitcoin-peer`
/// and their flags, checked): [`crate::source::bitcoin::rpc::da::BitcoinDa::start`] or
/// [`crate::source::bitcoin::p2p::da::PeersDa::start`] builds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitcoinConfig {
    /// bitcoind's RPC URL (`http://HOST:PORT`); `None`: peers only.
    pub url: Option<String>,
    /// From the shared credential flags (`--bitcoin-rpc-cookie`, ...);
    /// [`Credentials::None`] without `--bitcoin-rpc`.
    pub credentials: Credentials,
    /// `--bitcoin-peer HOST:PORT` (repeatable): Bitcoin nodes to read
    /// headers and blocks from over the P2P protocol.
    pub peers: Vec<String>,
    /// Over P2P (`--bitcoin-p2p`, or any `--bitcoin-peer`).
    pub p2p: bool,
    /// `--bitcoin-discover`, else on for every network but regtest.
    pub discover: bool,
    /// `--bitcoin-dns-seed` (repeatable), else the network's seeds.
    pub dns_seeds: Vec<String>,
    /// `--bitcoin-max-peers`: outbound connections to found peers.
    pub max_peers: usize,
    /// `--bitcoin-transport`: v1, BIP324's v2, or v2 where the peer may speak it.
    pub transport: TransportChoice,
    /// `--bitcoin-chain`, else the one `--network` reads.
    pub chain: BitcoinNetwork,
    /// `--bitcoin-finality-depth`: confirmations before a block is scanned.
    pub finality_depth: u64,
    /// `--sequencer-da-pubkey`, else the network's (regtest's without `--network`).
    pub sequencer_key: DaPublicKey,
    /// `--prover-da-pubkey`, else the network's (regtest's without `--network`).
    pub prover_key: DaPublicKey,
}

impl BitcoinConfig {
    /// What the scan is told: the confirmations and whom to believe.
    pub fn da_config(&self) -> BitcoinDaConfig {
        BitcoinDaConfig {
            finality_depth: self.finality_depth,
            ..BitcoinDaConfig::new(self.sequencer_key, self.prover_key)
        }
    }

    /// A client of bitcoind's RPC at `url` with these credentials.
    pub fn rpc(&self, url: &str) -> Arc<BitcoinRpc> {
        Arc::new(BitcoinRpc::new(
            url,
            self.credentials.clone(),
            RpcOptions::default(),
        ))
    }
}
