//! The address book: every peer address the P2P source knows (from a
//! `--bitcoin-peer`, a DNS seed, or a peer's `addr`/`addrv2`), with where
//! it came from, its last success and attempt, its failures in a row, its
//! ban and the services it was last said to offer (which transport it is
//! spoken to in), kept in the ledger's `bitcoin_peers` table across restarts.
//!
//! It holds at most [`MAX_ENTRIES`] addresses: 38 bytes of value and 18 of
//! key each in the ledger (about 110 bytes with LMDB's node header and page
//! fill), about 100 bytes each in memory (the map's entry with its hash
//! slot): at most about 450 KB either way. A new address past the bound
//! takes the place of the least useful one (never connected, most
//! failures, oldest attempt); a banned one stays while its ban runs.
//!
//! A peer that broke the protocol or sent something false is banned for
//! [`BAN`] (persisted: a restart does not forgive it). One that could not
//! be reached or stalled is tried again later, after a back-off that grows
//! with its failures ([`AddressBook::candidates`]).
//!
//! Changes are held in memory and written by [`AddressBook::save`] in one
//! write transaction, on the thread that owns the source (the sync thread,
//! which writes the header chain the same way): never a second writer.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bitcoin::p2p::ServiceFlags;

use crate::ledger::{BitcoinPeerRead, BookEntry, Ledger, LedgerError};
use crate::progress::bitcoin_peers::{BAN_REASONS, DROP_REASONS};

/// The most addresses the book holds.
pub const MAX_ENTRIES: usize = 4_096;

/// How long a peer that misbehaved is not connected to.
pub const BAN: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest wait before an address that failed is tried again.
pub const MAX_RETRY: Duration = Duration::from_secs(60 * 60);

/// Where an address came from (its code in the ledger).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A `--bitcoin-peer`.
    Flag = 1,
    /// A DNS seed (or Core's fixed seeds, their fallback).
    Dns = 2,
    /// A peer's `addr`/`addrv2`.
    Addr = 3,
}

/// The address book (module docs).
pub struct AddressBook {
    entries: HashMap<SocketAddr, BookEntry>,
    /// In the book when it was loaded (shown as `book` when connected).
    loaded: HashSet<SocketAddr>,
    /// Changed or removed since the last save.
    dirty: HashSet<SocketAddr>,
    ledger: Option<Arc<Ledger>>,
}

impl AddressBook {
    /// The book stored in `ledger` (`None`: held in memory only).
    pub fn load(ledger: Option<Arc<Ledger>>) -> Result<AddressBook, LedgerError> {
        let entries: HashMap<SocketAddr, BookEntry> = match &ledger {
            Some(l) => l.reader()?.bitcoin_peers()?.into_iter().collect(),
            None => HashMap::new(),
        };
        Ok(AddressBook {
            loaded: entries.keys().copied().collect(),
            entries,
            dirty: HashSet::new(),
            ledger,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Where `addr` came from, as `/health` shows a connection to it:
    /// `book` when it was in the book at start.
    pub fn origin(&self, addr: &SocketAddr) -> &'static str {
        if self.loaded.contains(addr) {
            return "book";
        }
        // The source's name by its code.
        match self.entries.get(addr).map(|e| e.source) {
            Some(1) => "flag",
            Some(2) => "dns",
            _ => "addr",
        }
    }

    /// Adds `addr` (a new address, or a flag's to an address already
    /// known) with the `services` it was said to offer (`NONE`: not
    /// said); whether it was new. Gossip about a known address updates
    /// its services, as Core's address manager does.
    pub fn learn(&mut self, addr: SocketAddr, source: Source, services: ServiceFlags) -> bool {
        if addr.port() == 0 || addr.ip().is_unspecified() || addr.ip().is_multicast() {
            return false;
        }
        let services = services.to_u64();
        if let Some(e) = self.entries.get_mut(&addr) {
            if source == Source::Flag && e.source != Source::Flag as u8 {
                e.source = Source::Flag as u8;
                self.dirty.insert(addr);
            }
            if services != 0 && e.services != services {
                e.services = services;
                self.dirty.insert(addr);
            }
            return false;
        }
        if self.entries.len() >= MAX_ENTRIES {
            let now = unix_now();
            let worst = self
                .entries
                .iter()
                .filter(|(_, e)| e.banned_until <= now)
                .max_by_key(|(_, e)| (e.last_success == 0, e.failures, u64::MAX - e.last_attempt))
                .map(|(a, _)| *a);
            let Some(a) = worst else { return false };
            self.entries.remove(&a);
            self.dirty.insert(a);
        }
        self.entries.insert(
            addr,
            BookEntry {
                source: source as u8,
                services,
                ..BookEntry::default()
            },
        );
        self.dirty.insert(addr);
        true
    }

    fn update(&mut self, addr: &SocketAddr, f: impl FnOnce(&mut BookEntry)) {
        if let Some(e) = self.entries.get_mut(addr) {
            f(e);
            self.dirty.insert(*addr);
        }
    }

    /// A connection to `addr` is being tried.
    pub fn attempt(&mut self, addr: &SocketAddr) {
        let now = unix_now();
        self.update(addr, |e| e.last_attempt = now);
    }

    /// `addr` connected, offering `services` in its `version`.
    pub fn success(&mut self, addr: &SocketAddr, services: ServiceFlags) {
        let now = unix_now();
        self.update(addr, |e| {
            e.last_success = now;
            e.failures = 0;
            e.services = services.to_u64();
        });
    }

    /// The services `addr` was last said to offer (`NONE`: not known).
    pub fn services(&self, addr: &SocketAddr) -> ServiceFlags {
        self.entries
            .get(addr)
            .map_or(ServiceFlags::NONE, |e| ServiceFlags::from(e.services))
    }

    /// `addr` failed for `reason` (a [`DROP_REASONS`] label): one more
    /// failure, or a ban for [`BAN`] when the reason is one of [`BAN_REASONS`].
    /// Returns whether it was banned.
    pub fn failed(&mut self, addr: &SocketAddr, reason: &str) -> bool {
        let now = unix_now();
        let ban = BAN_REASONS.contains(&reason);
        let code = DROP_REASONS
            .iter()
            .position(|r| *r == reason)
            .map_or(0, |i| i as u8 + 1);
        self.update(addr, |e| {
            e.failures = e.failures.saturating_add(1);
            e.last_attempt = now;
            if ban {
                e.banned_until = now + BAN.as_secs();
                e.ban_reason = code;
            }
        });
        ban
    }

    /// How many addresses are banned now.
    pub fn banned(&self) -> usize {
        let now = unix_now();
        self.entries
            .values()
            .filter(|e| e.banned_until > now)
            .count()
    }

    /// The addresses that may be connected to now, best first: not
    /// banned, not in `busy`, past their back-off (a minute doubled per
    /// failure in a row, at most [`MAX_RETRY`]); those that connected
    /// before first, then those with fewer failures, then the least
    /// recently tried.
    pub fn candidates(&self, busy: &HashSet<SocketAddr>) -> Vec<SocketAddr> {
        let now = unix_now();
        let mut list: Vec<(&SocketAddr, &BookEntry)> = self
            .entries
            .iter()
            .filter(|(a, e)| {
                let wait = match e.failures {
                    0 => 0,
                    n => (60u64 << (n - 1).min(10)).min(MAX_RETRY.as_secs()),
                };
                !busy.contains(a) && e.banned_until <= now && e.last_attempt + wait <= now
            })
            .collect();
        list.sort_by_key(|(a, e)| (e.last_success == 0, e.failures, e.last_attempt, **a));
        list.into_iter().map(|(a, _)| *a).collect()
    }

    /// Writes what changed since the last save in one write transaction.
    pub fn save(&mut self) -> Result<(), LedgerError> {
        let Some(ledger) = &self.ledger else {
            self.dirty.clear();
            return Ok(());
        };
        if self.dirty.is_empty() {
            return Ok(());
        }
        let mut w = ledger.writer()?;
        for addr in &self.dirty {
            match self.entries.get(addr) {
                Some(e) => w.put_bitcoin_peer(addr, e)?,
                None => w.delete_bitcoin_peer(addr)?,
            }
        }
        w.commit()?;
        self.dirty.clear();
        Ok(())
    }
}

fn unix_now() -> u64 {
    u64::try_from(crate::headers::unix_now()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::bitcoin::p2p::sa;

    #[test]
    fn a_ban_is_kept_across_a_reload_and_a_failure_waits_its_back_off() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Arc::new(Ledger::open(dir.path(), &Default::default()).unwrap());
        let mut book = AddressBook::load(Some(ledger.clone())).unwrap();
        let (liar, slow, good) = (sa("127.0.0.1:1"), sa("127.0.0.1:2"), sa("127.0.0.1:3"));
        let none = ServiceFlags::NONE;
        let v2 = ServiceFlags::WITNESS | ServiceFlags::P2P_V2;
        for a in [liar, slow, good] {
            assert!(book.learn(a, Source::Addr, none));
        }
        assert!(!book.learn(good, Source::Dns, v2), "known already");
        assert_eq!(book.services(&good), v2, "gossip updates the services");
        assert!(!book.learn(slow, Source::Addr, v2));
        book.success(&good, ServiceFlags::WITNESS);
        assert!(book.failed(&liar, "bad_header"));
        assert!(!book.failed(&slow, "stalled"));
        assert_eq!(book.candidates(&HashSet::new()), vec![good]);
        assert!(book.candidates(&[good].into()).is_empty());
        book.save().unwrap();
        let book = AddressBook::load(Some(ledger)).unwrap();
        assert_eq!(book.len(), 3);
        let banned = |a: &SocketAddr| book.entries[a].banned_until > unix_now();
        assert!(banned(&liar) && !banned(&slow));
        assert_eq!(book.banned(), 1);
        assert_eq!(book.origin(&good), "book");
        assert_eq!(book.candidates(&HashSet::new()), vec![good]);
        // Services as last said: gossip, then the peer's own `version`.
        assert_eq!(book.services(&slow), v2);
        assert_eq!(book.services(&good), ServiceFlags::WITNESS);
        assert_eq!(book.services(&liar), none);
    }

    #[test]
    fn the_book_holds_at_most_its_bound_and_drops_the_least_useful() {
        let mut book = AddressBook::load(None).unwrap();
        let (first, none) = (sa("10.0.0.1:1"), ServiceFlags::NONE);
        book.learn(first, Source::Dns, none);
        book.success(&first, none);
        for i in 0..MAX_ENTRIES as u32 + 10 {
            let ip = std::net::Ipv4Addr::from(0x0b00_0000 + i);
            book.learn(SocketAddr::new(ip.into(), 8333), Source::Addr, none);
        }
        assert_eq!(book.len(), MAX_ENTRIES);
        assert_eq!(book.origin(&first), "dns", "one that connected is kept");
        assert!(!book.learn(sa("0.0.0.0:1"), Source::Addr, none));
    }
}
