//! Where the devnet makes a soft confirmation.
//!
//! Block `h` links to block `h-1` (prevHash), points at DA slot
//! [`schedule::slot_of`]`(h)`, carries 0-4 random transactions and, every
//! tenth block, a deposit; it is hashed and signed by the rules of its
//! height's fork (Genesis below the Kumquat height, Kumquat from it). The state root is SHA-256(previous state root ||
//! hash): a stand-in for executing the transactions.

use crate::chain::{block_hash, sha256, ForkTable, SequencerKey};
use crate::devnet::schedule;
use crate::types::{Hash, SoftConfirmation};

/// Below this many blocks, signing stays on the calling thread.
const PARALLEL_SIGN_MIN: usize = 256;

/// A small deterministic generator for the bytes of a block.
struct Entropy {
    state: u64,
}

impl Entropy {
    fn new(seed: &Hash) -> Entropy {
        let mut first = [0u8; 8];
        first.copy_from_slice(&seed[..8]);
        Entropy {
            state: u64::from_le_bytes(first),
        }
    }

    /// splitmix64.
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next().to_le_bytes());
        }
        out.truncate(len);
        out
    }
}

/// Makes blocks `first..=last` on top of `tip` = (height, hash, state root)
/// of block `first - 1`, each by its fork's rules in `forks`. Hashes are
/// chained in order; signatures, which do not depend on each other, are
/// made on both cores for large batches.
pub fn make_blocks(
    key: &SequencerKey,
    seed: u64,
    forks: &ForkTable,
    tip: (u64, Hash, Hash),
    first: u64,
    last: u64,
) -> Vec<SoftConfirmation> {
    debug_assert_eq!(tip.0 + 1, first);
    let pub_key = key.public_key();
    let (_, mut prev_hash, mut prev_root) = tip;
    let mut blocks = Vec::with_capacity(last.saturating_sub(first) as usize + 1);
    for h in first..=last {
        let sc = unsigned_block(seed, forks, h, prev_hash, prev_root, pub_key);
        prev_hash = sc.hash;
        prev_root = sc.state_root;
        blocks.push(sc);
    }
    sign_all(key, forks, &mut blocks);
    blocks
}

fn sign_all(key: &SequencerKey, forks: &ForkTable, blocks: &mut [SoftConfirmation]) {
    let sign = |part: &mut [SoftConfirmation]| {
        for sc in part {
            sc.signature = key.sign_block(sc, forks.fork_at(sc.l2_height));
        }
    };
    if blocks.len() < PARALLEL_SIGN_MIN {
        sign(blocks);
        return;
    }
    let (a, b) = blocks.split_at_mut(blocks.len() / 2);
    std::thread::scope(|s| {
        s.spawn(|| sign(a));
        sign(b);
    });
}

fn unsigned_block(
    seed: u64,
    forks: &ForkTable,
    h: u64,
    prev_hash: Hash,
    prev_root: Hash,
    pub_key: [u8; 32],
) -> SoftConfirmation {
    let mut rng = Entropy::new(&schedule::block_entropy(seed, h));
    let slot = schedule::slot_of(h);
    let tx_count = rng.below(5) as usize;
    let txs = (0..tx_count)
        .map(|_| {
            let len = 20 + rng.below(100) as usize;
            rng.bytes(len)
        })
        .collect();
    let deposit_data = if h.is_multiple_of(10) {
        vec![rng.bytes(40)]
    } else {
        Vec::new()
    };
    let mut sc = SoftConfirmation {
        l2_height: h,
        da_slot_height: slot,
        da_slot_hash: schedule::slot_hash(seed, slot),
        da_slot_txs_commitment: schedule::slot_txs_commitment(seed, slot),
        hash: [0; 32],
        prev_hash,
        txs,
        state_root: [0; 32],
        signature: [0; 64],
        pub_key,
        deposit_data,
        l1_fee_rate: 2_500_000_000 + u128::from(rng.below(1_000_000)),
        timestamp: schedule::GENESIS_TIMESTAMP + h,
    };
    sc.hash = block_hash(&sc, forks.fork_at(h));
    let mut root_input = [0u8; 64];
    root_input[..32].copy_from_slice(&prev_root);
    root_input[32..].copy_from_slice(&sc.hash);
    sc.state_root = sha256(&root_input);
    sc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::{verify_block_signature, Fork};

    #[test]
    fn made_blocks_link_hash_and_sign_by_their_forks_rules() {
        let key = SequencerKey::from_secret(&schedule::sequencer_secret(7));
        let forks = ForkTable::kumquat_from(120);
        let genesis = (0, [0u8; 32], schedule::genesis_state_root(7));
        let blocks = make_blocks(&key, 7, &forks, genesis, 1, 300);
        assert_eq!(blocks.len(), 300);
        let mut prev = [0u8; 32];
        for sc in &blocks {
            let fork = forks.fork_at(sc.l2_height);
            let other = match fork {
                Fork::Genesis => Fork::Kumquat,
                Fork::Kumquat => Fork::Genesis,
            };
            assert_eq!(sc.prev_hash, prev);
            assert_eq!(block_hash(sc, fork), sc.hash);
            assert_ne!(block_hash(sc, other), sc.hash);
            verify_block_signature(sc, fork, &sc.pub_key).unwrap();
            assert!(verify_block_signature(sc, other, &sc.pub_key).is_err());
            prev = sc.hash;
        }
        assert!(blocks.iter().any(|b| !b.txs.is_empty()));
        assert!(blocks.iter().any(|b| !b.deposit_data.is_empty()));
    }

    #[test]
    fn the_same_seed_makes_the_same_chain_in_any_batch_split() {
        let key = SequencerKey::from_secret(&schedule::sequencer_secret(3));
        let forks = ForkTable::kumquat_from(20);
        let genesis = (0, [0u8; 32], schedule::genesis_state_root(3));
        let whole = make_blocks(&key, 3, &forks, genesis, 1, 40);
        let first = make_blocks(&key, 3, &forks, genesis, 1, 25);
        let tip = first
            .last()
            .map(|b| (b.l2_height, b.hash, b.state_root))
            .unwrap();
        let rest = make_blocks(&key, 3, &forks, tip, 26, 40);
        assert_eq!(whole, [first, rest].concat());
    }
}
