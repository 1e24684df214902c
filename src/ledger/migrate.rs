//! Upgrades a data dir of an older layout version to the current one, in
//! place. `Ledger::open` runs it once, read-write, before anything reads
//! the ledger; a read-only open of such a dir is refused (it cannot write
//! the upgrade) with a sentence that says to open it read-write once.
//!
//! 2 -> 3: a `proofs` value was one bare proof, the latest verified on the
//! slot; in version 3 it is the list of every proof verified on the slot.
//! Each stored proof becomes a list of that one proof (the earlier proofs of
//! its slot were overwritten by version 2 and cannot be recovered). Nothing
//! else changed between the two versions.
//!
//! 3 -> 4: the `bitcoin_headers` table (the verified Bitcoin header chain)
//! is new; 4 -> 5: the `bitcoin_chunks` table (proof chunks found in scanned
//! blocks) is new. `Ledger::open` creates both, empty, before the upgrade
//! runs; nothing else changed for them.
//!
//! 5 -> 6: the frontier index `status_heights` is new (see `frontier.rs`);
//! it is built from the stored commitments and proofs, slot by slot, as the
//! write rules would have written it (its times are those of the upgrade).
//!
//! 6 -> 7: the address book `bitcoin_peers` (Bitcoin peers found by the
//! P2P source) is new; `Ledger::open` creates it, empty, before the upgrade
//! runs; nothing else changed.
//!
//! The whole upgrade is one write transaction, the new version number
//! included: a crash or an error leaves the dir exactly as it was, still
//! version 2, and the next read-write open tries again.

use lmdb::WriteFlags;

use super::tables::{self, BitcoinPeers, Proofs, Table};
use super::{codec, corrupt, get, meta, Ledger, LedgerError};

/// Brings the ledger from layout version `from` to the current one.
pub(super) fn upgrade(ledger: &Ledger, from: u64) -> Result<(), LedgerError> {
    let mut w = ledger.writer()?;
    // Read again inside the write transaction: another process may have
    // upgraded the dir since `check_layout` read it.
    let stored = meta(&w, tables::META_FORMAT)?;
    if stored == Some(tables::FORMAT_VERSION) {
        return Ok(());
    }
    if stored != Some(from) || !(tables::OLDEST_MIGRATED..tables::FORMAT_VERSION).contains(&from) {
        return Err(LedgerError::Corrupt {
            table: tables::Meta::NAME,
            key: format!("{:?}", tables::META_FORMAT.name),
            reason: format!(
                "the layout version is {stored:?}, not {from} as it was a moment ago, \
                 and this build upgrades only versions {} to {}",
                tables::OLDEST_MIGRATED,
                tables::FORMAT_VERSION - 1
            ),
        });
    }
    // Each step adds what its version added, in order.
    let rewritten = if from < 3 { proofs_2_to_3(&mut w)? } else { 0 };
    // The frontier index (`status_heights`, `frontier.rs`), built from the
    // stored commitments and proofs.
    let entries = if from < tables::FRONTIER_INDEX_VERSION {
        w.rebuild_frontier()?
    } else {
        0
    };
    let peers = if from < tables::BOOK_SERVICES_VERSION {
        book_services(&mut w)?
    } else {
        0
    };
    w.put_meta(tables::META_FORMAT, &tables::FORMAT_VERSION)?;
    w.commit()?;
    log::info!(
        "upgraded the ledger at {} from layout version {from} to {}: {rewritten} proof entries \
         rewritten as lists, {entries} frontier entries built, {peers} address book entries \
         given services",
        ledger.path().display(),
        tables::FORMAT_VERSION
    );
    Ok(())
}

/// The step to [`tables::BOOK_SERVICES_VERSION`]: each address book entry
/// (30 bytes) gets its services, 0 (not known); returns how many.
fn book_services(w: &mut super::LedgerWriter<'_>) -> Result<u64, LedgerError> {
    let mut old = Vec::new();
    super::cursor::walk::<_, BitcoinPeers>(&*w, |k, v| {
        let addr = codec::decode_peer_addr(k)
            .ok_or_else(|| super::cursor::bad_key::<BitcoinPeers>(k, 18))?;
        old.push((addr, v.to_vec()));
        Ok(())
    })?;
    for (addr, mut value) in old.iter().cloned() {
        if value.len() != 30 {
            return Err(LedgerError::Corrupt {
                table: BitcoinPeers::NAME,
                key: BitcoinPeers::show(&addr),
                reason: format!(
                    "an address book entry of layout 7 is 30 bytes, this one {}",
                    value.len()
                ),
            });
        }
        value.extend_from_slice(&[0; 8]);
        w.put::<BitcoinPeers>(&addr, &value, WriteFlags::empty())?;
    }
    Ok(old.len() as u64)
}

/// Rewrites every `proofs` value (a bare proof) as a one-element list;
/// returns how many.
fn proofs_2_to_3(w: &mut super::LedgerWriter<'_>) -> Result<u64, LedgerError> {
    // The keys first (a cursor borrows the transaction); values one at a
    // time, so a ledger with many large proofs is never held in memory.
    let slots = super::cursor::u64_keys::<_, Proofs>(&*w, 0)?;
    for slot in &slots {
        let Some(bare) = get::<_, Proofs>(&*w, slot)? else {
            continue;
        };
        let list = codec::proof_list_of_one(bare).map_err(|e| corrupt::<Proofs>(slot, e))?;
        w.put::<Proofs>(slot, &list, WriteFlags::empty())?;
    }
    Ok(slots.len() as u64)
}
