//! Where the devnet makes a soft confirmation.
//!
//! Block `h` links to block `h-1` (prevHash), points at the DA slot the
//! timeline gives it ([`super::timeline`]), carries 0-4 random transactions
//! and, every tenth block, a deposit; it is hashed and signed by the rules
//! of its height's fork (Genesis below the Kumquat height, Kumquat from it).
//! The state root is SHA-256(previous state root || hash): a stand-in for
//! executing the transactions. What a test asked
//! for ([`Inputs`]: its transactions and deposits, a timestamp, a fee rate)
//! is added before the block is hashed.

use crate::chain_rules::{block_hash, sha256, ForkTable, SequencerKey};
use crate::source::devnet::schedule::{self, SlotRef};
use crate::types::{Hash, SoftConfirmation};

/// A small deterministic generator for the bytes of a block.
struct Entropy {
    state: u64,
}

impl Entropy {
    fn new(seed: &Hash) -> Entropy {
        Entropy {
            state: u64::from_le_bytes(seed.first_chunk().copied().unwrap_or_default()),
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

/// What the devnet's controller (`dev_*` calls) adds to the blocks it makes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inputs<'a> {
    /// The height that carries `txs` and `deposits` (0: none does).
    pub at: u64,
    /// Transactions added after block `at`'s own.
    pub txs: &'a [Vec<u8>],
    /// Deposits added after block `at`'s own.
    pub deposits: &'a [Vec<u8>],
    /// Block `h`'s timestamp is `GENESIS_TIMESTAMP + h + timestamp_offset`.
    pub timestamp_offset: i64,
    /// Every block's l1FeeRate, instead of a random one.
    pub l1_fee_rate: Option<u128>,
}

/// The timestamp of block `h` with `offset` seconds added (0 if that is
/// before 1970, `u64::MAX` if past it).
pub fn timestamp(h: u64, offset: i64) -> u64 {
    let t = i128::from(schedule::GENESIS_TIMESTAMP) + i128::from(h) + i128::from(offset);
    u64::try_from(t.max(0)).unwrap_or(u64::MAX)
}

/// Makes blocks `first..=last` on top of `tip` = (height, hash, state root)
/// of block `first - 1`, each by its fork's rules in `forks`; block
/// `first + i` points at DA slot `slots[i]` (its height, hash and
/// transactions commitment). Hashes are chained in order, then the blocks
/// are signed ([`SequencerKey::sign_blocks`]), all on the calling thread: the sync
/// thread makes blocks on its fetch thread while it verifies the chunk
/// before on another, which already keeps two cores busy during a
/// `dev_mine`. More threads made the mine at most 6% faster on a two-core
/// machine and kept the server's reads waiting for a core (see
/// docs/DEVNET.md).
pub fn make_blocks(
    key: &SequencerKey,
    seed: u64,
    forks: &ForkTable,
    tip: (u64, Hash, Hash),
    first: u64,
    slots: &[SlotRef],
    inputs: &Inputs,
) -> Vec<SoftConfirmation> {
    debug_assert_eq!(tip.0 + 1, first);
    let pub_key = key.public_key();
    let (_, mut prev_hash, mut prev_root) = tip;
    let mut blocks = Vec::with_capacity(slots.len());
    for (h, slot) in (first..).zip(slots) {
        crate::os::give_way();
        let mut rng = Entropy::new(&schedule::derive("ledgerd-devnet/block", seed, h));
        let tx_count = rng.below(5) as usize;
        let mut txs: Vec<Vec<u8>> = (0..tx_count)
            .map(|_| {
                let len = 20 + rng.below(100) as usize;
                rng.bytes(len)
            })
            .collect();
        let mut deposit_data = Vec::from_iter(h.is_multiple_of(10).then(|| rng.bytes(40)));
        if h == inputs.at {
            txs.extend_from_slice(inputs.txs);
            deposit_data.extend_from_slice(inputs.deposits);
        }
        let random_fee = 2_500_000_000 + u128::from(rng.below(1_000_000));
        let mut sc = SoftConfirmation {
            l2_height: h,
            da_slot_height: slot.number,
            da_slot_hash: slot.hash,
            da_slot_txs_commitment: slot.txs_commitment,
            hash: [0; 32],
            prev_hash,
            txs,
            state_root: [0; 32],
            signature: [0; 64],
            pub_key,
            deposit_data,
            l1_fee_rate: inputs.l1_fee_rate.unwrap_or(random_fee),
            timestamp: timestamp(h, inputs.timestamp_offset),
        };
        sc.hash = block_hash(&sc, forks.fork_at(h));
        let mut root_input = [0u8; 64];
        root_input[..32].copy_from_slice(&prev_root);
        root_input[32..].copy_from_slice(&sc.hash);
        sc.state_root = sha256(&root_input);
        prev_hash = sc.hash;
        prev_root = sc.state_root;
        blocks.push(sc);
    }
    let signatures = key.sign_blocks(&blocks, forks);
    for (sc, signature) in blocks.iter_mut().zip(signatures) {
        sc.signature = signature;
    }
    blocks
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::chain_rules::{verify_block_signature, Fork};

    fn slots(first: u64, last: u64) -> Vec<SlotRef> {
        (first..=last)
            .map(|h| schedule::simulated_slot(3, schedule::slot_of(h)))
            .collect()
    }

    /// Seed `seed`'s sequencer key, and the tip below height 1.
    fn start(seed: u64) -> (SequencerKey, (u64, Hash, Hash)) {
        let key = SequencerKey::from_secret(&schedule::sequencer_secret(seed));
        (key, (0, [0u8; 32], schedule::genesis_state_root(seed)))
    }

    /// Blocks 1..=`n` of seed `seed`'s devnet, Kumquat from `kumquat_from`
    /// (their DA slots seed 3's).
    pub fn seed_chain(seed: u64, kumquat_from: u64, n: u64) -> (ForkTable, Vec<SoftConfirmation>) {
        let (key, genesis) = start(seed);
        let forks = ForkTable::kumquat_from(kumquat_from);
        let none = Inputs::default();
        let blocks = make_blocks(&key, seed, &forks, genesis, 1, &slots(1, n), &none);
        (forks, blocks)
    }

    #[test]
    fn made_blocks_link_hash_and_sign_by_their_forks_rules() {
        let (forks, blocks) = seed_chain(7, 120, 300);
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
        let (forks, whole) = seed_chain(3, 20, 40);
        let (_, first) = seed_chain(3, 20, 25);
        let (key, none) = (start(3).0, Inputs::default());
        let tip = first
            .last()
            .map(|b| (b.l2_height, b.hash, b.state_root))
            .unwrap();
        let rest = make_blocks(&key, 3, &forks, tip, 26, &slots(26, 40), &none);
        assert_eq!(whole, [first, rest].concat());
    }

    /// SHA-256 over every made block's hash, state root and signature, in
    /// order: seed 7, Genesis rules below height 120, 2,000 blocks. Every
    /// devnet chain changes if this does; each signature is also compared
    /// with one from an ed25519-dalek `SigningKey` made in the test.
    const SEED_7_CHAIN: &str = "88d844473050ba037e12f877933e8e0a64051ffab41a50cbdd10d90810a8a9c0";

    #[test]
    fn the_devnet_makes_the_same_bytes_as_before_for_a_fixed_seed() {
        let (forks, blocks) = seed_chain(7, 120, 2000);
        // Signed as ed25519-dalek's SigningKey signs, byte for byte.
        let dalek = ed25519_dalek::SigningKey::from_bytes(&schedule::sequencer_secret(7));
        let mut all = Vec::new();
        for sc in &blocks {
            let message = crate::chain_rules::signed_message(sc, forks.fork_at(sc.l2_height));
            let sig = ed25519_dalek::Signer::sign(&dalek, &message).to_bytes();
            assert_eq!(sc.signature, sig, "block {}", sc.l2_height);
            all.extend_from_slice(&sc.hash);
            all.extend_from_slice(&sc.state_root);
            all.extend_from_slice(&sc.signature);
        }
        assert_eq!(hex::encode(sha256(&all)), SEED_7_CHAIN);
    }

    #[test]
    fn inputs_land_in_the_block_they_name_and_are_hashed_and_signed() {
        // Block 2 under Genesis rules, 3 under Kumquat: both hash what was added.
        let (forks, plain) = seed_chain(3, 3, 3);
        let (key, genesis) = start(3);
        let tx = vec![0xaa; 5];
        let deposit = vec![0xdd; 3];
        let inputs = Inputs {
            at: 2,
            txs: std::slice::from_ref(&tx),
            deposits: std::slice::from_ref(&deposit),
            timestamp_offset: 100,
            l1_fee_rate: Some(7),
        };
        let made = make_blocks(&key, 3, &forks, genesis, 1, &slots(1, 3), &inputs);
        assert_eq!(made[1].txs.last(), Some(&tx));
        assert_eq!(made[1].txs.len(), plain[1].txs.len() + 1);
        assert_eq!(made[1].deposit_data.last(), Some(&deposit));
        assert_eq!(made[0].txs, plain[0].txs, "only block 2 carries them");
        for (m, p) in made.iter().zip(&plain) {
            assert_eq!(m.timestamp, p.timestamp + 100);
            assert_eq!(m.l1_fee_rate, 7);
            let fork = forks.fork_at(m.l2_height);
            assert_eq!(block_hash(m, fork), m.hash);
            assert_ne!(m.hash, p.hash);
            verify_block_signature(m, fork, &m.pub_key).unwrap();
        }
        assert_eq!(timestamp(0, -(schedule::GENESIS_TIMESTAMP as i64) - 5), 0);
    }
}
