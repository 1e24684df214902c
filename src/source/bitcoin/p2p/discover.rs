//! Peers found, not typed (`--bitcoin-p2p`, `--bitcoin-discover`): the
//! address book ([`crate::source::bitcoin::p2p::book`]) fed by the DNS
//! seeds ([`crate::source::bitcoin::p2p::seeds`]) and by connected peers'
//! `addr`/`addrv2` (each asked once with `getaddr`), and the choice of
//! which addresses fill the [`crate::source::bitcoin::p2p::peers::PeerSet`]'s
//! outbound slots (`--bitcoin-max-peers`, the `--bitcoin-peer`s on top).
//!
//! An outbound slot whose peer fails is freed and filled at the next look
//! with the best address the book offers that is not banned, not in use,
//! past its back-off and, outside loopback and private ranges, not a
//! third in one network group ([`seeds::PER_NETGROUP`]).

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;

use log::{debug, info};

use bitcoin::p2p::ServiceFlags;

use crate::source::bitcoin::p2p::book::{AddressBook, Source};
use crate::source::bitcoin::p2p::seeds::{self, SeedLookup};

/// The book, the seeds being asked, and how many outbound slots there are.
pub struct Discovery {
    pub book: AddressBook,
    seeds: Option<SeedLookup>,
    /// Outbound slots (`--bitcoin-max-peers`; 0 without `--bitcoin-discover`).
    pub slots: usize,
}

impl Discovery {
    /// `seeds`: the DNS seeds being asked (`None`: not asked);
    /// `slots`: the outbound connections to keep.
    pub fn new(book: AddressBook, seeds: Option<SeedLookup>, slots: usize) -> Discovery {
        Discovery { book, seeds, slots }
    }

    /// Takes what the DNS seeds answered since the last call; `connected`:
    /// the found peers connected now ([`seeds::seeds_wait`]).
    pub fn poll_seeds(&mut self, connected: usize) {
        let Some(lookup) = &mut self.seeds else {
            return;
        };
        let got = lookup.poll(connected);
        let pending = lookup.pending();
        let new = got
            .into_iter()
            .filter(|(a, _)| self.book.learn(*a, Source::Dns, ServiceFlags::NONE))
            .count();
        if new > 0 {
            debug!("bitcoin: {new} new addresses from the seeds");
        }
        if !pending && !lookup.fixed_left() {
            self.seeds = None;
        }
    }

    /// Takes the addresses peer `from` gossiped; returns how many were new.
    pub fn learn(&mut self, from: &str, addrs: Vec<(SocketAddr, ServiceFlags)>) -> usize {
        let total = addrs.len();
        let new = addrs
            .into_iter()
            .filter(|(a, services)| self.book.learn(*a, Source::Addr, *services))
            .count();
        if new > 0 {
            info!(
                "bitcoin peer {from} gave {total} addresses, {new} new (address book: {})",
                self.book.len()
            );
        }
        new
    }

    /// The services known of found peer `addr`, for its transport: with
    /// `NODE_P2P_V2` when the book says it offers it (its gossip, or its
    /// `version` when it last connected), else without, as Core picks the
    /// transport by the services its address manager knows.
    pub fn services(&self, addr: &SocketAddr) -> ServiceFlags {
        let known = ServiceFlags::NETWORK | ServiceFlags::WITNESS;
        match self.book.services(addr).has(ServiceFlags::P2P_V2) {
            true => known | ServiceFlags::P2P_V2,
            false => known,
        }
    }

    /// Up to `n` addresses for free outbound slots: the book's best
    /// candidates not in `busy`, at most [`seeds::PER_NETGROUP`] in one
    /// network group counting those `in_use`.
    pub fn pick(
        &self,
        n: usize,
        busy: &HashSet<SocketAddr>,
        in_use: &[SocketAddr],
    ) -> Vec<SocketAddr> {
        let mut groups: HashMap<[u8; 4], usize> = HashMap::new();
        for a in in_use {
            if let Some(g) = seeds::netgroup(a) {
                *groups.entry(g).or_default() += 1;
            }
        }
        let mut out = Vec::with_capacity(n);
        for a in self.book.candidates(busy) {
            if out.len() >= n {
                break;
            }
            if let Some(g) = seeds::netgroup(&a) {
                let count = groups.entry(g).or_default();
                if *count >= seeds::PER_NETGROUP {
                    continue;
                }
                *count += 1;
            }
            out.push(a);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::bitcoin::p2p::sa;

    #[test]
    fn at_most_two_outbound_peers_share_a_public_netgroup_and_local_ones_have_no_limit() {
        let mut book = AddressBook::load(None).unwrap();
        for a in [
            "1.2.0.1:8333",
            "1.2.0.2:8333",
            "1.2.0.3:8333",
            "1.3.0.1:8333",
            "127.0.0.1:1",
            "127.0.0.1:2",
            "127.0.0.1:3",
        ] {
            book.learn(sa(a), Source::Addr, ServiceFlags::NONE);
        }
        let d = Discovery::new(book, None, 8);
        let pick = |n, in_use: &[SocketAddr]| d.pick(n, &HashSet::new(), in_use);
        let in_12 = |picked: &[SocketAddr]| {
            let is_12 = |a: &&SocketAddr| a.to_string().starts_with("1.2.");
            picked.iter().filter(is_12).count()
        };
        let picked = pick(8, &[]);
        assert_eq!(picked.len(), 6, "{picked:?}");
        assert_eq!(in_12(&picked), 2);
        // One already in use in 1.2/16: one more there.
        assert_eq!(in_12(&pick(8, &[sa("1.2.9.9:8333")])), 1);
        assert_eq!(pick(2, &[]).len(), 2);
    }
}
