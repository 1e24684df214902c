//! The `ledgerd_bitcoin_*` metrics: the Bitcoin DA source, its header
//! tree, its peers and address book, bitcoind's RPC beside them.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::{by_label, counter, gauge, header};
use crate::progress::{bitcoin_peers, BitcoinProgress};

/// Writes them; nothing when the node reads no Bitcoin.
pub(super) fn write(out: &mut Vec<u8>, bitcoin: &BitcoinProgress) -> std::io::Result<()> {
    if bitcoin.url.get().is_some() {
        gauge(
            out,
            "ledgerd_bitcoin_reachable",
            "1 while bitcoind (--bitcoin-rpc) or a Bitcoin peer (--bitcoin-peer) answers, 0 while none does",
            u64::from(!bitcoin.is_down()),
        )?;
        counter(
            out,
            "ledgerd_bitcoin_commitments_found_total",
            "Sequencer commitments signed by the sequencer DA key found on Bitcoin since start",
            bitcoin.commitments_found.load(Relaxed),
        )?;
        counter(
            out,
            "ledgerd_bitcoin_proofs_found_total",
            "Proofs signed by the prover DA key found on Bitcoin since start",
            bitcoin.proofs_found.load(Relaxed),
        )?;
        counter(
            out,
            "ledgerd_bitcoin_blocks_fetched_total",
            "Bitcoin blocks fetched (from bitcoind or the peers) that passed their checks, since start",
            bitcoin.blocks_fetched.load(Relaxed),
        )?;
        by_reason(
            out,
            "ledgerd_bitcoin_reveals_refused_total",
            "Bitcoin transactions addressed to Citrea that were not taken, by reason",
            &crate::progress::REFUSAL_REASONS,
            &bitcoin.refused,
        )?;
        let headers = &bitcoin.headers;
        if let Some(tip) = headers.tip() {
            gauge(
                out,
                "ledgerd_bitcoin_header_height",
                "Height of the best verified Bitcoin header (the most-work chain the scan follows)",
                headers.height.load(Relaxed),
            )?;
            counter(
                out,
                "ledgerd_bitcoin_headers_verified_total",
                "Bitcoin headers checked by Bitcoin Core's header rules since start",
                headers.verified.load(Relaxed),
            )?;
            gauge(
                out,
                "ledgerd_bitcoin_header_chainwork_log2",
                "log2 of the best header chain's total work",
                format_args!("{:.6}", tip.chainwork_log2),
            )?;
            gauge(
                out,
                "ledgerd_bitcoin_header_min_chainwork_met",
                "1 once the best header chain has the network's minimum chainwork (below it nothing is scanned)",
                u64::from(headers.min_work_met.load(Relaxed)),
            )?;
        }
        if bitcoin.peers.any() {
            let peers = bitcoin.peers.shown();
            gauge(
                out,
                "ledgerd_bitcoin_peers_connected",
                "Bitcoin peers (--bitcoin-peer and found ones) connected now",
                peers.iter().filter(|p| p.connected).count() as u64,
            )?;
            by_label(
                out,
                "ledgerd_bitcoin_peers_connected_by_transport",
                "gauge",
                "Bitcoin peers connected now, by the transport spoken: v1 (plain) or v2 (BIP324, encrypted)",
                "transport",
                ["v1", "v2"].iter().map(|&transport| (transport, bitcoin.peers.connected_by_transport(transport) as u64)),
            )?;
            counter(
                out,
                "ledgerd_bitcoin_peer_v1_fallbacks_total",
                "Connections on which --bitcoin-transport auto gave up v2 (the peer hung up on the BIP324 handshake without a word) and spoke v1, since start",
                bitcoin.peers.v1_fallbacks.load(Relaxed),
            )?;
            header(
                out,
                "ledgerd_bitcoin_peer_connections",
                "gauge",
                "Bitcoin peers connected now, by where they came from (flag, dns, addr, book) and transport (v1, v2)",
            )?;
            for ((source, transport), n) in bitcoin.peers.connections() {
                writeln!(
                    out,
                    "ledgerd_bitcoin_peer_connections{{source=\"{source}\",transport=\"{transport}\"}} {n}"
                )?;
            }
            gauge(
                out,
                "ledgerd_bitcoin_address_book_entries",
                "Addresses in the Bitcoin peers' address book (the ledger's bitcoin_peers table)",
                bitcoin.peers.book_size.load(Relaxed),
            )?;
            gauge(
                out,
                "ledgerd_bitcoin_address_book_banned",
                "Addresses in the address book banned now (24 h after the peer misbehaved)",
                bitcoin.peers.banned.load(Relaxed),
            )?;
            by_reason(
                out,
                "ledgerd_bitcoin_peers_banned_total",
                "Found Bitcoin peers banned for 24 h since start, by reason",
                &bitcoin_peers::BAN_REASONS,
                &bitcoin.peers.bans,
            )?;
            gauge(
                out,
                "ledgerd_bitcoin_peers_behind",
                "Connected Bitcoin peers whose chain has less work than the best one (asked for headers, for no block beyond their own chain)",
                peers.iter().filter(|p| p.connected && p.behind).count() as u64,
            )?;
            by_reason(
                out,
                "ledgerd_bitcoin_peers_dropped_total",
                "Bitcoin peers disconnected since start, by reason",
                &bitcoin_peers::DROP_REASONS,
                &bitcoin.peers.dropped,
            )?;
            by_reason(
                out,
                "ledgerd_bitcoin_blocks_refused_total",
                "Bitcoin blocks refused as not matching their header (a peer's, or bitcoind's beside the peers), by Bitcoin Core's reject reason, since start",
                &bitcoin_peers::BLOCK_REFUSALS,
                &bitcoin.peers.blocks_refused,
            )?;
            by_label(
                out,
                "ledgerd_bitcoin_peer_blocks_fetched_total",
                "counter",
                "Bitcoin blocks each peer sent that passed their checks, since start",
                "peer",
                peers.iter().map(|p| (p.addr.as_str(), p.blocks_fetched)),
            )?;
        }
        let rpc = &bitcoin.rpc;
        if rpc.any() {
            gauge(
                out,
                "ledgerd_bitcoin_rpc_reachable",
                "1 while bitcoind's RPC read beside the Bitcoin peers (--bitcoin-rpc with --bitcoin-peer) answers",
                u64::from(rpc.reachable.load(Relaxed)),
            )?;
            counter(
                out,
                "ledgerd_bitcoin_rpc_blocks_fetched_total",
                "Bitcoin blocks bitcoind's RPC (beside the peers) sent that passed their checks, since start",
                rpc.blocks_fetched.load(Relaxed),
            )?;
        }
    }
    Ok(())
}

/// A counter with one value per reason of `reasons`, read from `counters`
/// (in the same order).
fn by_reason(
    out: &mut Vec<u8>,
    name: &str,
    help: &str,
    reasons: &[&str],
    counters: &[AtomicU64],
) -> std::io::Result<()> {
    let counts = reasons
        .iter()
        .zip(counters)
        .map(|(&r, n)| (r, n.load(Relaxed)));
    by_label(out, name, "counter", help, "reason", counts)
}
