//! A follower's P2P DA source built from its settings: the peers, the
//! header chain stored in the ledger, the scanner, and bitcoind's RPC
//! beside the peers when `--bitcoin-rpc` is given too.

use std::sync::Arc;

use crate::headers::HeaderTree;
use crate::ledger::Ledger;
use crate::progress::Progress;
use crate::source::bitcoin::config::BitcoinConfig;
use crate::source::bitcoin::p2p::bitcoind::RpcSide;
use crate::source::bitcoin::p2p::book::AddressBook;
use crate::source::bitcoin::p2p::da::PeersDa;
use crate::source::bitcoin::p2p::discover::Discovery;
use crate::source::bitcoin::p2p::peer::PeerOptions;
use crate::source::bitcoin::p2p::peers::PeerSet;
use crate::source::bitcoin::p2p::seeds::{self, SeedLookup};
use crate::source::bitcoin::rpc::da::ChainCheckError;
use crate::stop::Stop;

impl PeersDa {
    /// The source, and what it reads as a phrase for the node's start-up
    /// line; a sentence when it cannot be used (a bitcoind beside the peers
    /// on another network, another chain's headers in the ledger).
    pub fn start(
        b: &BitcoinConfig,
        ledger: &Arc<Ledger>,
        progress: &Arc<Progress>,
        stop: &Arc<Stop>,
    ) -> Result<(PeersDa, String), String> {
        let magic = bitcoin::p2p::Magic::from(b.chain.network());
        let options = PeerOptions {
            discover: b.discover,
            transport: b.transport,
            ..PeerOptions::new(magic)
        };
        let book = AddressBook::load(Some(ledger.clone())).map_err(|e| e.to_string())?;
        let in_book = book.len();
        let lookup = (b.discover && !b.dns_seeds.is_empty()).then(|| {
            SeedLookup::start(
                &b.dns_seeds,
                seeds::default_port(b.chain),
                seeds::fixed_seeds(b.chain),
                seeds::seeds_wait(in_book),
            )
        });
        let slots = if b.discover { b.max_peers } else { 0 };
        let peers = PeerSet::new(&b.peers, options, progress.clone())
            .with_discovery(Discovery::new(book, lookup, slots));
        let chain = HeaderTree::open(b.chain, ledger.clone(), 0).map_err(|e| e.to_string())?;
        // bitcoind's RPC beside the peers: one more source.
        let side = |url| RpcSide::new(b.rpc(url), progress.clone(), stop.clone());
        let mut rpc_side = b.url.as_deref().map(side);
        if let Some(side) = &mut rpc_side {
            // Unreachable: logged and shown in /health; checked again at
            // its first answer.
            if let Err(ChainCheckError::OtherChain(why)) = side.check_network(b.chain) {
                return Err(why);
            }
        }
        let rpc_named = match &b.url {
            Some(url) => format!(" and bitcoind {url}"),
            None => String::new(),
        };
        let found = match b.discover {
            true => format!(
                "{}up to {} found (DNS seeds {}; {in_book} addresses in the book)",
                if b.peers.is_empty() { "" } else { " and " },
                b.max_peers,
                b.dns_seeds.join(", ")
            ),
            false => String::new(),
        };
        let what = format!(
            "Bitcoin {} from peers {}{found} (transport {}){rpc_named} (DA, {} confirmations, header \
             tip {} at height {}, sequencer DA key {}, prover DA key {})",
            b.chain.name(),
            b.peers.join(", "),
            b.transport,
            b.finality_depth,
            chain.tip().hash,
            chain.tip().height,
            b.sequencer_key,
            b.prover_key
        );
        let da = PeersDa::new(peers, chain, b.da_config(), progress.clone())
            .with_chunks_in(ledger.clone())
            .with_rpc(rpc_side);
        Ok((da, what))
    }
}
