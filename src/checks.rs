//! Where the sync thread verifies a block, a commitment and a proof, by the
//! chain rules of each block's fork ([`crate::chain_rules`]), before anything is
//! written.
//!
//! Each check has a name ([`Check`]) so a failure can be logged, counted in
//! `/metrics` and explained: "soft confirmation 17: prevHash does not link
//! to the stored hash of 16".

use crate::chain_rules::{
    block_hash, first_bad_signature, merkle_root, signed_message, verify_block_signature, Fork,
    ForkTable,
};
use crate::ledger::{LedgerError, LedgerRead, ProofCommitmentsError};
use crate::types::{Hash, SequencerCommitment, SoftConfirmation, VerifiedBatchProof, ZERO_HASH};

/// The chain rule that a block, commitment or proof broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Check {
    /// Heights must follow the stored head one by one.
    Height,
    /// prevHash must equal the stored hash of the height below.
    PrevHash,
    /// The hash must recompute from the fields.
    Hash,
    /// pubKey must be the pinned sequencer key.
    PubKey,
    /// The Ed25519 signature must verify.
    Signature,
    /// A commitment's range must be a range of heights (start 1 or more,
    /// end not below start).
    CommitmentRange,
    /// A commitment's Merkle root must match the stored hashes.
    MerkleRoot,
    /// A proof must end on a stored hash and continue the last proof.
    Proof,
    /// A proof's bytes must be a receipt that proves its output ([`crate::proof`]).
    Receipt,
    /// A block's `daSlotHash` and `daSlotTxsCommitment` must be those of the
    /// DA chain's block at its `daSlotHeight` (with a Bitcoin DA source).
    DaSlot,
}

impl Check {
    /// The label used in logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Check::Height => "height",
            Check::PrevHash => "prev_hash",
            Check::Hash => "hash",
            Check::PubKey => "pub_key",
            Check::Signature => "signature",
            Check::CommitmentRange => "commitment_range",
            Check::MerkleRoot => "merkle_root",
            Check::Proof => "proof",
            Check::Receipt => "receipt",
            Check::DaSlot => "da_slot",
        }
    }
}

/// A record that failed verification, or a ledger that could not be read to verify it.
#[derive(Debug)]
pub enum VerifyError {
    Failed { check: Check, what: String },
    Ledger(LedgerError),
}

impl VerifyError {
    fn failed(check: Check, what: String) -> VerifyError {
        VerifyError::Failed { check, what }
    }
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VerifyError::Failed { check, what } => {
                write!(f, "check {} failed: {what}", check.name())
            }
            VerifyError::Ledger(e) => write!(f, "cannot verify: {e}"),
        }
    }
}

impl std::error::Error for VerifyError {}

wrap_errors!(VerifyError {
    Ledger(LedgerError),
});

/// What a block may lack and still be accepted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockRules {
    /// `--allow-missing-tx-bodies`: accept a block whose `txs` is empty and
    /// whose hash does not recompute (an upstream that withholds bodies):
    /// under Kumquat when the sequencer's signature verifies over its stated
    /// hash; under Genesis (whose signature covers the bodies) on its link
    /// to the block below, and the next block's link to it.
    pub allow_missing_tx_bodies: bool,
}

/// The flag that accepts blocks whose bodies were withheld.
pub const ALLOW_MISSING_TX_BODIES: &str = "--allow-missing-tx-bodies";

/// How a block's hash and key checked out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HashCheck {
    /// The hash recomputes: the signature is checked over the fork's message.
    Whole,
    /// Accepted without its bodies (see [`BlockRules`]), under Kumquat: the
    /// signature is checked over the stated hash.
    WithoutBodiesSigned,
    /// Accepted without its bodies under Genesis: the signature covers the
    /// bodies and cannot be checked; the links vouch for the block.
    WithoutBodiesLinked,
}

/// The hash recomputes from the fields by the block's fork's rules (known
/// already when `hashed`: [`hashed_prefix`]) and the key is the sequencer's
/// (the signature is checked by the caller: one by one, or batched).
fn verify_hash_and_key(
    sc: &SoftConfirmation,
    sequencer: &[u8; 32],
    forks: &ForkTable,
    rules: BlockRules,
    hashed: bool,
) -> Result<HashCheck, VerifyError> {
    let h = sc.l2_height;
    let fork = forks.fork_at(h);
    let mut outcome = HashCheck::Whole;
    if !hashed && block_hash(sc, fork) != sc.hash {
        if !sc.txs.is_empty() {
            return Err(VerifyError::failed(
                Check::Hash,
                format!(
                    "soft confirmation {h}: hash {} does not recompute from its fields by the {fork} rules",
                    hex::encode(sc.hash)
                ),
            ));
        }
        if !rules.allow_missing_tx_bodies {
            let accepted_on = match fork {
                Fork::Kumquat => "the sequencer's signature over their stated hash",
                Fork::Genesis => "their links to the blocks around them",
            };
            return Err(VerifyError::failed(
                Check::Hash,
                format!(
                    "soft confirmation {h}: hash {} does not recompute from its fields by the \
                     {fork} rules, and its txs are empty: the upstream likely runs with \
                     include_tx_body = false (a Citrea full node's default), which answers \
                     blocks without their transactions; start ledgerd with \
                     {ALLOW_MISSING_TX_BODIES} to accept such blocks on {accepted_on}",
                    hex::encode(sc.hash)
                ),
            ));
        }
        outcome = match fork {
            Fork::Kumquat => HashCheck::WithoutBodiesSigned,
            Fork::Genesis => HashCheck::WithoutBodiesLinked,
        };
    }
    if &sc.pub_key != sequencer {
        return Err(VerifyError::failed(
            Check::PubKey,
            format!(
                "soft confirmation {h}: pubKey {} is not the sequencer key {}",
                hex::encode(sc.pub_key),
                hex::encode(sequencer)
            ),
        ));
    }
    Ok(outcome)
}

/// Every rule `sc` breaks on its own, by its fork's rules, not stopping at
/// the first: its hash does not recompute ([`Check::Hash`]), its pubKey is
/// not `sequencer` ([`Check::PubKey`]), its signature does not verify under
/// `sequencer` ([`Check::Signature`]). For an audit that reports them all
/// (`ledgerd verify`); the sync thread stops at the first
/// ([`verify_blocks`]). Blocks without bodies are not accepted here.
pub fn block_failures(
    sc: &SoftConfirmation,
    sequencer: &[u8; 32],
    forks: &ForkTable,
) -> Vec<Check> {
    let fork = forks.fork_at(sc.l2_height);
    let mut failed = Vec::new();
    if block_hash(sc, fork) != sc.hash {
        failed.push(Check::Hash);
    }
    if &sc.pub_key != sequencer {
        failed.push(Check::PubKey);
    }
    if verify_block_signature(sc, fork, sequencer).is_err() {
        failed.push(Check::Signature);
    }
    failed
}

/// Checks that `sc` follows the block (height, hash) below it.
pub fn verify_link(sc: &SoftConfirmation, below: (u64, Hash)) -> Result<(), VerifyError> {
    let (below_height, below_hash) = below;
    if sc.l2_height != below_height + 1 {
        return Err(VerifyError::failed(
            Check::Height,
            format!(
                "expected soft confirmation {}, got {}",
                below_height + 1,
                sc.l2_height
            ),
        ));
    }
    if sc.prev_hash != below_hash {
        return Err(VerifyError::failed(
            Check::PrevHash,
            format!(
                "soft confirmation {}: prevHash {} does not link to the stored hash {} of {}",
                sc.l2_height,
                hex::encode(sc.prev_hash),
                hex::encode(below_hash),
                below_height
            ),
        ));
    }
    Ok(())
}

/// What [`verify_blocks`] found.
#[derive(Debug)]
pub struct BlocksVerdict {
    /// How many leading blocks verified.
    pub good: usize,
    /// The first failure, if any.
    pub failure: Option<VerifyError>,
    /// How many of the good blocks were accepted without their transaction
    /// bodies (only with [`BlockRules::allow_missing_tx_bodies`]).
    pub without_bodies: u64,
}

/// Verifies `blocks` on top of `below` = (height, hash) of the stored head,
/// each by the rules of its fork in `forks`. Returns how many leading blocks
/// verified, and the first failure if any: the caller stores the verified
/// prefix and never skips past the failure.
///
/// Heights, links, hashes and keys are checked in order; then the
/// signatures of the blocks that passed, each as Citrea checks it
/// (`chain::first_bad_signature`), on both cores for large chunks (see
/// [`verify_blocks_on`] for one).
pub fn verify_blocks(
    blocks: &[SoftConfirmation],
    below: (u64, Hash),
    sequencer: &[u8; 32],
    forks: &ForkTable,
    rules: BlockRules,
) -> BlocksVerdict {
    verify_blocks_on(
        blocks,
        below,
        sequencer,
        forks,
        rules,
        2,
        Prechecked::default(),
    )
}

/// What the fetch side checked of a chunk before the sync thread takes it:
/// how many leading blocks' hashes recompute ([`hashed_prefix`]) and how
/// many leading blocks' signatures verify ([`signed_prefix`]). Both are
/// pure functions of each block's own fields, so the sync thread skips them
/// for those blocks with the same verdict, and checks links, keys and the
/// rest in order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prechecked {
    pub hashed: usize,
    pub signed: usize,
}

/// How many leading `blocks` have a hash that recomputes from their fields
/// by their fork's rules ([`verify_blocks_on`]'s hash check, without the
/// others).
pub fn hashed_prefix(blocks: &[SoftConfirmation], forks: &ForkTable) -> usize {
    blocks
        .iter()
        .take_while(|sc| block_hash(sc, forks.fork_at(sc.l2_height)) == sc.hash)
        .count()
}

/// How many leading `blocks` carry a signature that verifies under their
/// own `pub_key`, over the message their fork signs ([`verify_blocks_on`]'s
/// signature check, without the others), on `threads` threads. The sync
/// thread's fetch side runs it on blocks as they arrive, so the signatures
/// are checked while the sync thread writes and commits the chunks before.
pub fn signed_prefix(blocks: &[SoftConfirmation], forks: &ForkTable, threads: usize) -> usize {
    let all: Vec<_> = blocks.iter().collect();
    first_bad_signed(&all, forks, threads).unwrap_or(blocks.len())
}

/// The first of `blocks` whose signature does not verify under its own
/// `pub_key` over the message its fork signs, on `threads` threads.
fn first_bad_signed(
    blocks: &[&SoftConfirmation],
    forks: &ForkTable,
    threads: usize,
) -> Option<usize> {
    let messages: Vec<_> = blocks
        .iter()
        .map(|sc| signed_message(sc, forks.fork_at(sc.l2_height)))
        .collect();
    let items: Vec<_> = blocks
        .iter()
        .zip(&messages)
        .map(|(sc, m)| (&sc.pub_key, m.as_ref(), &sc.signature))
        .collect();
    first_bad_signature_on(&items, threads)
}

/// [`verify_blocks`] with the signatures checked on `threads` threads (1:
/// all on the calling thread; more than 2 counts as 2), except the first
/// `pre.signed`, which verified already ([`signed_prefix`]), and the hashes
/// of the first `pre.hashed` ([`hashed_prefix`]). Skipping them changes no
/// verdict: a signature's check depends only on the key, the message and
/// the signature, and every block that passes the other checks carries
/// `sequencer` as its key; a hash's only on the block's fields.
pub fn verify_blocks_on(
    blocks: &[SoftConfirmation],
    mut below: (u64, Hash),
    sequencer: &[u8; 32],
    forks: &ForkTable,
    rules: BlockRules,
    threads: usize,
    pre: Prechecked,
) -> BlocksVerdict {
    let mut failure = None;
    let mut limit = blocks.len();
    let mut bodiless = Vec::new();
    // Blocks whose signature cannot be checked (Genesis, bodies withheld).
    let mut unsigned = Vec::new();
    for (i, sc) in blocks.iter().enumerate() {
        let checked = verify_link(sc, below)
            .and_then(|_| verify_hash_and_key(sc, sequencer, forks, rules, i < pre.hashed));
        match checked {
            Ok(HashCheck::Whole) => {}
            Ok(HashCheck::WithoutBodiesSigned) => bodiless.push(i),
            Ok(HashCheck::WithoutBodiesLinked) => {
                bodiless.push(i);
                unsigned.push(i);
            }
            Err(e) => {
                failure = Some(e);
                limit = i;
                break;
            }
        }
        below = (sc.l2_height, sc.hash);
    }
    let verdict = |good: usize, failure: Option<VerifyError>| BlocksVerdict {
        good,
        failure,
        without_bodies: bodiless.iter().filter(|i| **i < good).count() as u64,
    };
    // The messages of the signatures still to check only (a Genesis
    // block's is its borsh bytes, built anew).
    let checked: Vec<usize> = (pre.signed.min(limit)..limit)
        .filter(|i| unsigned.binary_search(i).is_err())
        .collect();
    let to_check: Vec<_> = checked.iter().map(|&i| &blocks[i]).collect();
    let Some(i) = first_bad_signed(&to_check, forks, threads).map(|j| checked[j]) else {
        return verdict(limit, failure);
    };
    let sc = &blocks[i];
    let fork = forks.fork_at(sc.l2_height);
    // A block accepted without bodies was signed over its stated hash.
    let e = if bodiless.contains(&i) {
        crate::chain_rules::verify_signature(&sc.pub_key, &sc.hash, &sc.signature).err()
    } else {
        verify_block_signature(sc, fork, &sc.pub_key).err()
    }
    .map(|e| e.to_string())
    .unwrap_or_else(|| "signature batch verification failed".to_string());
    verdict(
        i,
        Some(VerifyError::failed(
            Check::Signature,
            format!("soft confirmation {} ({fork} rules): {e}", sc.l2_height),
        )),
    )
}

/// [`first_bad_signature`] on `threads` threads (1: the calling thread
/// only; more than 2 counts as 2; small lists stay on one).
fn first_bad_signature_on(
    items: &[(&[u8; 32], &[u8], &[u8; 64])],
    threads: usize,
) -> Option<usize> {
    const PARALLEL_MIN: usize = 64;
    if threads < 2 || items.len() < PARALLEL_MIN {
        return first_bad_signature(items);
    }
    let (a, b) = items.split_at(items.len() / 2);
    let (ra, rb) = std::thread::scope(|s| {
        let ha = s.spawn(|| first_bad_signature(a));
        let rb = first_bad_signature(b);
        (ha.join(), rb)
    });
    // A panicked verifier proves nothing: treat its whole half as unverified.
    let ra = ra.unwrap_or(Some(0));
    ra.or(rb.map(|i| i + a.len()))
}

/// What a commitment check decided.
#[derive(Debug, PartialEq, Eq)]
pub enum CommitmentVerdict {
    /// It verified: its heights may be marked Finalized.
    Valid,
    /// It covers heights the ledger does not hold yet: scan this slot again later.
    NotYet,
}

/// Checks a commitment against the stored chain as Citrea v0.6.2's full
/// node does (`process_sequencer_commitment`): every height it covers is
/// stored and its Merkle root matches their stored hashes. Nothing else:
/// it need not continue the last commitment (after a gap, a range never
/// committed or whose commitment was refused, it is valid all the same;
/// the gap stays Trusted) and it need not be new (a range committed again
/// is valid again). The only range it refuses is one that is not a range
/// of heights (an end below its start, or height 0, which no block has).
pub fn verify_commitment(
    ledger: &impl LedgerRead,
    c: &SequencerCommitment,
) -> Result<CommitmentVerdict, VerifyError> {
    let (start, end) = (c.l2_start_block_number, c.l2_end_block_number);
    if start == 0 || end < start {
        let why = if start == 0 {
            "heights start at 1"
        } else {
            "its end is below its start"
        };
        return Err(VerifyError::failed(
            Check::CommitmentRange,
            format!(
                "commitment on slot {} covers {start}..={end}: {why}",
                c.found_in_l1
            ),
        ));
    }
    if end > ledger.head_height()? {
        return Ok(CommitmentVerdict::NotYet);
    }
    let mut leaves = Vec::with_capacity((end - start + 1) as usize);
    for h in start..=end {
        match ledger.hash_at(h)? {
            Some(hash) => leaves.push(hash),
            None => return Ok(CommitmentVerdict::NotYet),
        }
    }
    let root = merkle_root(&leaves).unwrap_or(ZERO_HASH);
    if root != c.merkle_root {
        return Err(VerifyError::failed(
            Check::MerkleRoot,
            format!(
                "commitment on slot {} for {start}..={end}: merkle root {} does not match {} of the stored hashes",
                c.found_in_l1,
                hex::encode(c.merkle_root),
                hex::encode(root)
            ),
        ));
    }
    Ok(CommitmentVerdict::Valid)
}

/// What a proof check decided.
#[derive(Debug, PartialEq, Eq)]
pub enum ProofVerdict {
    /// It verified: these height ranges (one per commitment it proves,
    /// in order) may be marked Proven.
    Valid(Vec<(u64, u64)>),
    /// It names a DA slot whose hash is not known yet (no stored block
    /// points at it yet): scan this slot again later.
    NotYet,
}

/// The ranges of heights (start, end) of the commitments a proof proves, in
/// order, by Citrea's rule, as the ledger picks them
/// ([`LedgerRead::proof_commitments`]); a proof they cannot be picked for
/// fails the proof check.
///
/// `Ok(None)` when the named slot's hash is not known yet.
pub fn proof_ranges(
    ledger: &impl LedgerRead,
    proof: &VerifiedBatchProof,
) -> Result<Option<Vec<(u64, u64)>>, VerifyError> {
    let proven = ledger.proof_commitments(proof).map_err(|e| match e {
        ProofCommitmentsError::Ledger(e) => VerifyError::Ledger(e),
        e => VerifyError::failed(Check::Proof, format!("proof on slot {}: {e}", proof.height)),
    })?;
    Ok(proven.map(|list| {
        list.iter()
            .map(|c| (c.l2_start_block_number, c.l2_end_block_number))
            .collect()
    }))
}

/// Checks a verified batch proof against the stored chain by Citrea's rule
/// (see [`proof_ranges`]) with the checks Citrea makes: its
/// sequencerPublicKey is the sequencer key, and its initialStateRoot is the
/// stored state root below the first height it proves (the genesis state
/// root below height 1). A Kumquat-era proof (non-zero prev/final hashes or
/// lastL2Height) must also match the stored chain: prevSoftConfirmationHash
/// is the hash below the first height, lastL2Height is the last height
/// proven and finalSoftConfirmationHash the hash there. Genesis-era proofs
/// carry zeros in those three fields.
///
/// Which era a proof is from follows Citrea: by the fork of the last height
/// it proves (`fork_from_block_number`), so a proof ending at a Kumquat
/// height must carry the Kumquat fields.
///
/// `head_slot` is the DA slot the stored head block points at: a proof
/// naming a slot hash that is still unknown is [`ProofVerdict::NotYet`]
/// while blocks pointing at its slot may still come, a failure after.
pub fn verify_proof(
    ledger: &impl LedgerRead,
    proof: &VerifiedBatchProof,
    head_slot: u64,
    forks: &ForkTable,
) -> Result<ProofVerdict, VerifyError> {
    let out = &proof.proof_output;
    let fail = |what: String| {
        VerifyError::failed(
            Check::Proof,
            format!("proof on slot {}: {what}", proof.height),
        )
    };
    match ledger.sequencer_pubkey()? {
        Some(key) if out.sequencer_public_key.as_slice() == key.as_slice() => {}
        Some(key) => {
            return Err(fail(format!(
                "sequencerPublicKey {} is not the sequencer key {}",
                hex::encode(&out.sequencer_public_key),
                hex::encode(key)
            )))
        }
        None => return Ok(ProofVerdict::NotYet),
    }
    let Some(proven) = proof_ranges(ledger, proof)? else {
        if head_slot >= proof.height {
            return Err(fail(format!(
                "daSlotHash {} is not the hash of any DA slot the stored blocks point at",
                hex::encode(out.da_slot_hash)
            )));
        }
        return Ok(ProofVerdict::NotYet);
    };
    let (Some(&(start, _)), Some(&(_, end))) = (proven.first(), proven.last()) else {
        return Err(fail("it proves no commitments".into()));
    };
    let below = start.saturating_sub(1);
    let root_below = if below == 0 {
        ledger.genesis_state_root()?
    } else {
        ledger.state_root_at(below)?
    }
    .ok_or_else(|| fail(format!("the state root of height {below} is not known")))?;
    if root_below != out.initial_state_root {
        return Err(fail(format!(
            "initialStateRoot {} is not the stored state root {} of height {below}",
            hex::encode(out.initial_state_root),
            hex::encode(root_below)
        )));
    }
    let genesis_format = out.last_l2_height == 0
        && out.prev_soft_confirmation_hash == ZERO_HASH
        && out.final_soft_confirmation_hash == ZERO_HASH;
    if genesis_format && forks.fork_at(end) == Fork::Kumquat {
        return Err(fail(format!(
            "it proves up to height {end}, a Kumquat height, but carries no \
             prev/final soft confirmation hashes or lastL2Height (a Genesis-era proof's zeros)"
        )));
    }
    if !genesis_format {
        if out.last_l2_height != end {
            return Err(fail(format!(
                "lastL2Height {} is not {end}, the end of the last commitment it proves",
                out.last_l2_height
            )));
        }
        let stored = ledger
            .hash_at(end)?
            .ok_or_else(|| fail(format!("lastL2Height {end} is not stored")))?;
        if stored != out.final_soft_confirmation_hash {
            return Err(fail(format!(
                "finalSoftConfirmationHash {} is not the stored hash {} of {end}",
                hex::encode(out.final_soft_confirmation_hash),
                hex::encode(stored)
            )));
        }
        let prev = if below == 0 {
            ZERO_HASH
        } else {
            ledger
                .hash_at(below)?
                .ok_or_else(|| fail(format!("height {below} is not stored")))?
        };
        if prev != out.prev_soft_confirmation_hash {
            return Err(fail(format!(
                "prevSoftConfirmationHash {} is not the stored hash {} of {below}",
                hex::encode(out.prev_soft_confirmation_hash),
                hex::encode(prev)
            )));
        }
    }
    Ok(ProofVerdict::Valid(proven))
}

#[cfg(test)]
mod tests {
    //! The chain-rule verifier over the fork vectors (`crate::chain_rules`'s).
    use super::*;
    use crate::chain_rules::tests::vector_blocks;
    use crate::chain_rules::ForkTable;

    #[test]
    fn the_vector_chain_verifies_across_the_fork_and_not_by_one_forks_rules() {
        let check = |chain: &[SoftConfirmation], below, key, forks: &ForkTable| {
            let v = verify_blocks(chain, below, key, forks, BlockRules::default());
            (v.good, v.failure)
        };
        let (forks, blocks) = vector_blocks();
        let chain: Vec<SoftConfirmation> = blocks.into_iter().map(|(_, _, sc)| sc).collect();
        let key = chain[0].pub_key;
        let below = (0, crate::types::ZERO_HASH);
        let (good, failure) = check(&chain, below, &key, &forks);
        assert_eq!((good, failure.map(|e| e.to_string())), (8, None));
        let (good, failure) = check(&chain, below, &key, &ForkTable::KUMQUAT_ONLY);
        assert_eq!(good, 0);
        assert!(failure.unwrap().to_string().contains("Kumquat rules"));
        let (good, _) = check(&chain, below, &key, &ForkTable::kumquat_from(100));
        assert_eq!(
            good, 4,
            "the Genesis heights verify, the first Kumquat one does not"
        );
    }

    /// Breaks each block of the vector chain in turn with `break_block`,
    /// checks ahead as the fetch side does (`ahead` gives what it found
    /// checked, and the prefix that the broken field ends), and asserts the
    /// sync thread's verdict is that of checking every block itself,
    /// failing at the broken one for `what`.
    fn checked_ahead_gives_the_verdict_of_checking_them_all(
        break_block: fn(&mut SoftConfirmation),
        ahead: fn(&[SoftConfirmation], &ForkTable) -> (usize, Prechecked),
        what: &str,
    ) {
        let (forks, blocks) = vector_blocks();
        let chain: Vec<SoftConfirmation> = blocks.into_iter().map(|(_, _, sc)| sc).collect();
        let key = chain[0].pub_key;
        let below = (0, crate::types::ZERO_HASH);
        let rules = BlockRules::default();
        assert_eq!(ahead(&chain, &forks).0, chain.len());
        for bad in 0..chain.len() {
            let mut broken = chain.clone();
            break_block(&mut broken[bad]);
            let (prefix, pre) = ahead(&broken, &forks);
            assert_eq!(prefix, bad);
            let all = verify_blocks(&broken, below, &key, &forks, rules);
            let after = verify_blocks_on(&broken, below, &key, &forks, rules, 1, pre);
            assert_eq!(all.good, bad);
            assert!(all.failure.as_ref().unwrap().to_string().contains(what));
            assert_eq!(after.good, all.good);
            assert_eq!(
                after.failure.map(|e| e.to_string()),
                all.failure.map(|e| e.to_string())
            );
        }
    }

    #[test]
    fn signatures_checked_ahead_on_the_fetch_side_give_the_verdict_of_checking_them_all() {
        checked_ahead_gives_the_verdict_of_checking_them_all(
            |sc| sc.signature[40] ^= 1,
            |chain, forks| {
                let signed = signed_prefix(chain, forks, 1);
                (signed, Prechecked { hashed: 0, signed })
            },
            "signature",
        );
    }

    #[test]
    fn hashes_checked_ahead_on_the_fetch_side_give_the_verdict_of_checking_them_all() {
        checked_ahead_gives_the_verdict_of_checking_them_all(
            |sc| sc.l1_fee_rate += 1,
            |chain, forks| {
                let hashed = hashed_prefix(chain, forks);
                let signed = signed_prefix(chain, forks, 1);
                (hashed, Prechecked { hashed, signed })
            },
            "hash",
        );
    }
}
