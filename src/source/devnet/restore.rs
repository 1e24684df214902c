//! Reading a devnet back from its ledger at start (and after a revert):
//! the stored tip, the DA slots its newest blocks point at, and the
//! commitments not yet proven, so the chain goes on where it was.

use super::*;
use crate::types::{SequencerCommitment, ZERO_HASH};

/// Reads back where the stored chain stands: its head, the DA slots its
/// newest blocks point at, and the commitments not yet proven. On a
/// simulated DA chain, slots the ledger has not scanned get their plans
/// decided again (by the automatic rules) when the timeline is built; on a
/// regtest they are already mined, and what they carry is read from it.
/// The clock counts on from the stored head (or the prefill); nothing is
/// queued and the fee rate is random.
pub(super) fn restore(
    ledger: &Ledger,
    config: &DevnetConfig,
    genesis: u64,
    chain: Option<&RegtestChain>,
) -> Result<State, SourceError> {
    let seed = config.seed;
    let err = Devnet::source_err;
    let r = ledger.reader().map_err(err)?;
    let head = r.head_height().map_err(err)?;
    let scanned = r.last_scanned_l1().map_err(err)?;
    let head_block = if head == 0 {
        None
    } else {
        r.soft_confirmation(head).map_err(err)?
    };
    let (tip, timestamp_offset, head_slot) = match &head_block {
        None => (
            (0, ZERO_HASH, schedule::genesis_state_root(seed)),
            0,
            genesis,
        ),
        Some(sc) => {
            let natural = block::timestamp(head, 0);
            let offset = i128::from(sc.timestamp) - i128::from(natural);
            (
                (head, sc.hash, sc.state_root),
                i64::try_from(offset).unwrap_or(0),
                sc.da_slot_height,
            )
        }
    };
    let da_tip = head_slot.max(scanned);
    // The newest blocks, back to the first one that points at a scanned
    // slot other than the head's: (height, slot), newest first.
    let mut recent = Vec::new();
    let mut before = 0;
    let mut h = head;
    while h > 0 {
        let slot = match r.soft_confirmation(h).map_err(err)? {
            Some(sc) => sc.da_slot_height,
            None => break,
        };
        if slot <= scanned && slot != head_slot {
            before = h;
            break;
        }
        recent.push((h, slot));
        h -= 1;
    }
    let on_pointer = recent.iter().filter(|(_, s)| *s == head_slot).count() as u64;
    let first_unscanned = (scanned + 1).max(genesis);
    let mut unscanned: Vec<u64> = (first_unscanned..=da_tip)
        .map(|slot| {
            recent
                .iter()
                .find(|(_, s)| *s < slot)
                .map_or(before, |(h, _)| *h)
        })
        .collect();
    // A proof names its commitments by their places on their slot's list
    // (which holds each commitment `commitments_above` reads).
    let mut unproven = Vec::new();
    for (slot, c) in r
        .commitments_above(r.proven_height().map_err(err)?)
        .map_err(err)?
    {
        let on_slot = r.commitments_on_slot(slot).map_err(err)?;
        let mut on_slot = committed_on(slot, on_slot.unwrap_or_default());
        unproven.extend(on_slot.find(|o| o.start == c.l2_start_block_number));
    }
    let mut committed_to = r.finalized_height().map_err(err)?;
    let mut da_tip = da_tip;
    if let Some(chain) = chain {
        // Every regtest block from the first slot on is a devnet slot: the
        // newest is the tip, and the unscanned ones carry what they carry.
        let chain_tip = chain.tip()?;
        if let Some(sc) = &head_block {
            let on_chain = (chain_tip >= head_slot)
                .then(|| chain.slot_ref(head_slot))
                .transpose()?;
            if on_chain.map(|s| s.hash) != Some(sc.da_slot_hash) {
                return Err(SourceError::bad_answer(format!(
                    "the regtest at {} is not the one this devnet mined: its block {head_slot} \
                     (tip {chain_tip}) is not the one height {head} points at; use that \
                     bitcoind's datadir again, or another --data-dir",
                    chain.url()
                )));
            }
        }
        da_tip = chain_tip.max(head_slot);
        unscanned.clear();
        for slot in chain.read_slots(first_unscanned, da_tip)? {
            for p in &slot.proofs {
                let (first, last) = p.proof_output.sequencer_commitments_range;
                let mut kept = Vec::with_capacity(unproven.len());
                for c in unproven {
                    let hash = p.proof_output.da_slot_hash;
                    if !(first..=last).contains(&c.pos) || chain.slot_ref(c.slot)?.hash != hash {
                        kept.push(c);
                    }
                }
                unproven = kept;
            }
            for c in committed_on(slot.number, slot.commitments) {
                committed_to = committed_to.max(c.end);
                unproven.push(c);
            }
        }
    }
    Ok(State {
        tip,
        clock: Clock::new(config.block_ms, tip.0.max(config.prefill)),
        timeline: Timeline::new(Stored {
            tip: da_tip,
            pointer: head_slot,
            on_pointer,
            committed_to,
            unproven,
            unscanned,
        }),
        queued: Queued::default(),
        timestamp_offset,
        l1_fee_rate: None,
    })
}

/// `slot`'s commitments as the timeline counts them: sorted by start, each
/// with its place.
fn committed_on(slot: u64, mut list: Vec<SequencerCommitment>) -> impl Iterator<Item = Committed> {
    list.sort_by_key(|c| c.l2_start_block_number);
    list.into_iter().enumerate().map(move |(pos, c)| Committed {
        slot,
        pos: pos as u64,
        start: c.l2_start_block_number,
        end: c.l2_end_block_number,
    })
}
