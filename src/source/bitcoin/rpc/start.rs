//! A follower's bitcoind DA source built from its settings: the RPC client,
//! the header chain stored in the ledger, the scanner, and the node's
//! network checked against the one asked for.

use std::sync::Arc;

use crate::headers::HeaderTree;
use crate::ledger::Ledger;
use crate::progress::Progress;
use crate::source::bitcoin::config::BitcoinConfig;
use crate::source::bitcoin::rpc::da::{BitcoinDa, ChainCheckError};
use crate::stop::Stop;

impl BitcoinDa {
    /// The source, and what it reads as a phrase for the node's start-up
    /// line; a sentence when it cannot be used (bitcoind on another
    /// network, another chain's headers in the ledger). A bitcoind that
    /// does not answer yet is no error: its network is checked once it does.
    pub fn start(
        b: &BitcoinConfig,
        ledger: &Arc<Ledger>,
        progress: &Arc<Progress>,
        stop: &Arc<Stop>,
    ) -> Result<(BitcoinDa, String), String> {
        let url = b.url.clone().unwrap_or_default();
        let headers = HeaderTree::open(b.chain, ledger.clone(), 0).map_err(|e| e.to_string())?;
        let mut da = BitcoinDa::new(b.rpc(&url), b.da_config(), progress.clone(), headers)
            .with_stop(stop.clone())
            .with_chunks_in(ledger.clone());
        match da.check_chain() {
            Ok(()) => {}
            Err(ChainCheckError::OtherChain(why)) => return Err(why),
            Err(ChainCheckError::Unreachable(e)) => {
                log::warn!("{e}: its network is checked once it answers")
            }
        }
        let tip = da.headers().tip();
        let what = format!(
            "bitcoind {url} (DA on {}, {} confirmations, sequencer DA key {}, prover DA key {}; \
             Bitcoin headers stored up to height {} ({}))",
            b.chain, b.finality_depth, b.sequencer_key, b.prover_key, tip.height, tip.hash
        );
        Ok((da, what))
    }
}
