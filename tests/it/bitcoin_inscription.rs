//! Citrea's on-chain envelope: real transactions from Citrea's repository read back, and our own
//! commit/reveal pairs built, checked as Bitcoin would check them, and read back; every malformed
//! case refused with a reason, never a panic. No bitcoind needed (the regtest tests that send
//! these pairs to a real one live with the RPC client).
use bitcoin::hashes::Hash;
use bitcoin::opcodes::all::{OP_CHECKSIGVERIFY, OP_ENDIF, OP_IF, OP_NIP};
use bitcoin::opcodes::OP_FALSE;
use bitcoin::script::{Builder, PushBytesBuf};
use bitcoin::secp256k1::{self, Message, Secp256k1, SecretKey, XOnlyPublicKey};
use bitcoin::sighash::{EcdsaSighashType, Prevouts, SighashCache, TapSighashType};
use bitcoin::taproot::{ControlBlock, LeafVersion, TapLeafHash};
use bitcoin::{
    absolute::LockTime, Amount, OutPoint, Script, ScriptBuf, Transaction, TxIn, TxOut, Txid,
    Witness,
};
use ledgerd::source::bitcoin::body::{self, BodyError, LightClientBody, SequencerCommitment};
use ledgerd::source::bitcoin::inscription::{self, EnvelopeError, Kind, Namespace};
use ledgerd::source::bitcoin::keys;
use ledgerd::source::bitcoin::reveal::{self, LightClientTx, Refusal};
use ledgerd::source::bitcoin::signer::{DaPublicKey, DaSecretKey, SignatureError};
use ledgerd::source::devnet::inscribe::{
    self, Funding, FundingKey, InscribeOptions, Inscription, REVEAL_OUTPUT_SATS,
};

const BOUND: usize = body::MAX_PROOF_BYTES;

fn tx_from_hex(text: &str) -> Transaction {
    bitcoin::consensus::deserialize(&hex::decode(text.trim()).expect("hex")).expect("a transaction")
}

fn issue_1686_reveal() -> Transaction {
    tx_from_hex(include_str!(
        "../data/citrea_testnet4_proof_reveal_issue_1686.hex"
    ))
}

fn mock_block() -> Vec<Transaction> {
    include_str!("../data/citrea_regtest_block_mock_txs.txt")
        .lines()
        .map(tx_from_hex)
        .collect()
}

fn sequencer() -> DaSecretKey {
    keys::regtest_sequencer_secret().expect("the regtest sequencer key")
}

fn prover() -> DaSecretKey {
    keys::regtest_prover_secret().expect("the regtest prover key")
}

// --- Real data: a testnet4 proof reveal (Citrea test `issue_1686`) -------------------------------

#[test]
fn testnet4_proof_reveal_becomes_a_proof_whose_receipt_verifies_under_network_testnet() {
    use ledgerd::chain_rules::{ForkTable, Network};
    use ledgerd::proof::{verify_proof_receipt, ReceiptRules};
    use ledgerd::source::bitcoin::scan::proof_from_receipt;
    let tx = issue_1686_reveal();
    let prover = keys::TESTNET.prover_key().unwrap();
    let bytes = match reveal::read_light_client(&tx, &prover, body::MAX_PROOF_BYTES).unwrap() {
        reveal::LightClientTx::Complete { proof } => proof,
        other => panic!("a complete proof, not {other:?}"),
    };
    let sequencer = keys::TESTNET.sequencer_key().unwrap();
    let proof = proof_from_receipt(bytes, 1234, &sequencer).expect("a receipt with a journal");
    assert_eq!(proof.height, 1234);
    assert_eq!(
        proof.proof_output.sequencer_da_public_key,
        sequencer.as_bytes().to_vec()
    );
    assert_eq!(proof.proof_output.last_l2_height, 0, "the old layout");
    let testnet: Network = "testnet".parse().unwrap();
    let rules = ReceiptRules {
        network: Some(testnet),
        allow_fake_proofs: false,
    };
    let forks: ForkTable = testnet.fork_table();
    let checked = verify_proof_receipt(&proof, &rules, &forks).expect("verifies on testnet");
    assert!(!checked.is_fake());
    // The regtest sequencer DA key is not the one the journal names.
    let regtest = keys::REGTEST.sequencer_key().unwrap();
    let tx = issue_1686_reveal();
    let reveal::LightClientTx::Complete { proof: bytes } =
        reveal::read_light_client(&tx, &prover, body::MAX_PROOF_BYTES).unwrap()
    else {
        unreachable!()
    };
    let (reason, why) = proof_from_receipt(bytes, 1, &regtest).unwrap_err();
    assert_eq!(reason, "journal_key", "{why}");
}

#[test]
fn testnet4_proof_reveal_is_found_and_signed_by_the_testnet_prover_key() {
    let tx = issue_1686_reveal();
    assert!(Namespace::LightClient.matches(&inscription::wtxid_raw(&tx)));

    let env = inscription::parse_reveal(&tx, Namespace::LightClient).expect("an envelope");
    assert_eq!(env.kind, Kind::Complete);
    let signed = env.signed.as_ref().expect("a complete proof is signed");
    assert_eq!(hex::encode(&signed.signer), keys::TESTNET.prover);
    assert_eq!(signed.signature.len(), 64);
    assert_eq!(env.nonce.len(), 8);

    let testnet_prover = keys::TESTNET.prover_key().unwrap();
    let digest = ledgerd::source::bitcoin::signer::check_signer(&env, &testnet_prover)
        .expect("the testnet prover's signature verifies");
    assert_eq!(
        digest,
        ledgerd::source::bitcoin::signer::body_digest(&env.body)
    );
}

#[test]
fn testnet4_proof_body_is_the_pre_kumquat_form_holding_a_groth16_receipt() {
    let tx = issue_1686_reveal();
    let env = inscription::parse_reveal(&tx, Namespace::LightClient).unwrap();
    let decompressed = body::decompress(&env.body, BOUND).expect("brotli decodes");
    // Pre-Kumquat: Complete (0) of Full (1), then the u32 length of the proof.
    assert_eq!(&decompressed[..2], &[0, 1]);
    assert!(
        LightClientBody::decode(&decompressed).is_err(),
        "not the current layout"
    );

    let proof = match reveal::read_light_client(&tx, &keys::TESTNET.prover_key().unwrap(), BOUND) {
        Ok(LightClientTx::Complete { proof }) => proof,
        other => panic!("expected a complete proof, got {other:?}"),
    };
    let declared = u32::from_le_bytes(decompressed[2..6].try_into().unwrap()) as usize;
    assert_eq!(proof.len(), declared);
    assert_eq!(decompressed.len(), 6 + proof.len());
    assert_eq!(proof.len(), 140_385);
    // bincode of a risc0 Receipt: the inner receipt's tag (u32 LE) 2 is Groth16, whose seal is a
    // Vec<u8> (u64 LE length) of 256 bytes.
    assert_eq!(
        u32::from_le_bytes(proof[0..4].try_into().unwrap()),
        2,
        "a Groth16 receipt"
    );
    assert_eq!(
        u64::from_le_bytes(proof[4..12].try_into().unwrap()),
        256,
        "a 256-byte seal"
    );
}

#[test]
fn testnet4_proof_reveal_is_refused_against_another_networks_prover_key() {
    let tx = issue_1686_reveal();
    let devnet = keys::DEVNET.prover_key().unwrap();
    let refusal = reveal::read_light_client(&tx, &devnet, BOUND).unwrap_err();
    assert!(
        matches!(
            refusal,
            Refusal::Signature(SignatureError::OtherSigner { .. })
        ),
        "{refusal}"
    );
    assert!(!refusal.is_not_ours());
    assert!(
        refusal.to_string().contains(keys::DEVNET.prover),
        "{refusal}"
    );
    // And it is no sequencer commitment.
    let refusal =
        reveal::read_commitment(&tx, &keys::TESTNET.sequencer_key().unwrap()).unwrap_err();
    assert!(refusal.is_not_ours(), "{refusal}");
}

// --- Real data: one regtest block (Citrea's test_data/mock_txs.txt) ------------------------------

#[test]
fn mock_block_is_one_whole_regtest_block() {
    let txs = mock_block();
    assert_eq!(txs.len(), 35);
    assert!(txs[0].is_coinbase());
    // The header Citrea's tests pair with this file (helpers/test_utils.rs, commit 3ed8fb77).
    let root = bitcoin::merkle_tree::calculate_root(txs.iter().map(|t| t.compute_txid()))
        .expect("a non-empty block");
    assert_eq!(
        root.to_string(),
        "34ef858c354e8fd441e49fdc9266ca2bb760034c54b28fdb660254c2546295c8"
    );
}

#[test]
fn mock_block_yields_its_four_sequencer_commitments_with_their_fields() {
    let key = keys::REGTEST.sequencer_key().unwrap();
    let found: Vec<(usize, SequencerCommitment)> = mock_block()
        .iter()
        .enumerate()
        .filter_map(|(i, tx)| reveal::read_commitment(tx, &key).ok().map(|c| (i, c)))
        .collect();
    let expected = [
        (4, [13u8; 32], 1002, 1100),
        (6, [14u8; 32], 1101, 1245),
        (18, [15u8; 32], 1246, 1268),
        (34, [30u8; 32], 1268, 1314),
    ];
    assert_eq!(found.len(), expected.len());
    for ((index, c), (want_index, root, start, end)) in found.iter().zip(expected) {
        assert_eq!(*index, want_index);
        assert_eq!(
            *c,
            SequencerCommitment {
                merkle_root: root,
                l2_start: start,
                l2_end: end
            }
        );
    }
}

#[test]
fn mock_block_commitment_signed_by_another_key_is_refused_with_the_signer_named() {
    let txs = mock_block();
    let key = keys::REGTEST.sequencer_key().unwrap();
    let refusal = reveal::read_commitment(&txs[28], &key).unwrap_err();
    match &refusal {
        Refusal::Signature(SignatureError::OtherSigner { found, expected }) => {
            assert_eq!(
                hex::encode(found),
                "03c72abc8a0c1ff4141e0b778a1756c93d92d40b3064cbd3ba7c465ac900ab14d9"
            );
            assert_eq!(expected, &key);
        }
        other => panic!("expected another signer, got {other:?}"),
    }
    assert!(!refusal.is_not_ours());
    assert!(refusal.to_string().contains("03c72abc"), "{refusal}");
    // Its own signature is good: only the key is wrong.
    let env = inscription::parse_reveal(&txs[28], Namespace::BatchProof).unwrap();
    let signer = DaPublicKey::from_bytes(&env.signed.as_ref().unwrap().signer).unwrap();
    assert!(ledgerd::source::bitcoin::signer::check_signer(&env, &signer).is_ok());
}

#[test]
fn mock_block_commitment_with_a_wrong_prefix_is_ignored() {
    let txs = mock_block();
    let key = keys::REGTEST.sequencer_key().unwrap();
    let refusal = reveal::read_commitment(&txs[30], &key).unwrap_err();
    assert!(matches!(
        refusal,
        Refusal::Envelope(EnvelopeError::WrongPrefix {
            wtxid_start: [0x05, 0x06],
            ..
        })
    ));
    assert!(refusal.is_not_ours());
    // Apart from its prefix it is a good commitment by the right key.
    let env = inscription::parse_envelope(&txs[30], Namespace::BatchProof).unwrap();
    assert!(ledgerd::source::bitcoin::signer::check_signer(&env, &key).is_ok());
}

#[test]
fn mock_block_holds_no_proof_the_regtest_prover_signed() {
    // Its light-client reveals use an encoding older than v0.6.2 and another signer.
    let prover = keys::REGTEST.prover_key().unwrap();
    let taken = mock_block()
        .iter()
        .filter(|tx| {
            matches!(
                reveal::read_light_client(tx, &prover, BOUND),
                Ok(LightClientTx::Complete { .. } | LightClientTx::Aggregate { .. })
            )
        })
        .count();
    assert_eq!(taken, 0);
}

// --- Our own pairs: built, checked as Bitcoin checks them, read back -----------------------------

fn funding(key: FundingKey, amount_sats: u64) -> Funding {
    Funding {
        outpoint: OutPoint {
            txid: Txid::from_byte_array([7; 32]),
            vout: 3,
        },
        amount_sats,
        key,
    }
}

fn wpkh_key() -> FundingKey {
    FundingKey::P2wpkh(SecretKey::from_slice(&[0x11; 32]).unwrap())
}

fn tr_key() -> FundingKey {
    FundingKey::P2tr(SecretKey::from_slice(&[0x22; 32]).unwrap())
}

/// What a node's script interpreter would check of a pair: the commit spends the funding with a
/// valid signature, the reveal spends the commit by a valid script path with `K`'s signature,
/// values add up with at least the fee rate, and the change and reveal outputs go to the funder.
fn assert_spendable(pair: &Inscription, funding: &Funding, fee_rate: u64) {
    let secp = Secp256k1::new();
    let commit = &pair.commit;
    let reveal = &pair.reveal;
    assert_eq!(commit.input.len(), 1);
    assert_eq!(commit.input[0].previous_output, funding.outpoint);
    let funder_script = funding.key.script_pubkey();
    let prev = TxOut {
        value: Amount::from_sat(funding.amount_sats),
        script_pubkey: funder_script.clone(),
    };

    // The funding input's signature.
    match funding.key {
        FundingKey::P2wpkh(sk) => {
            let w = &commit.input[0].witness;
            assert_eq!(w.len(), 2);
            let sig = bitcoin::ecdsa::Signature::from_slice(&w[0]).unwrap();
            assert_eq!(sig.sighash_type, EcdsaSighashType::All);
            assert_eq!(&w[1], &sk.public_key(&secp).serialize()[..]);
            let sighash = SighashCache::new(commit)
                .p2wpkh_signature_hash(0, &funder_script, prev.value, EcdsaSighashType::All)
                .unwrap();
            secp.verify_ecdsa(
                &Message::from_digest(sighash.to_byte_array()),
                &sig.signature,
                &sk.public_key(&secp),
            )
            .expect("the funding signature verifies");
        }
        FundingKey::P2tr(_) => {
            let w = &commit.input[0].witness;
            assert_eq!(w.len(), 1);
            let output_key = XOnlyPublicKey::from_slice(&funder_script.as_bytes()[2..34]).unwrap();
            let sighash = SighashCache::new(commit)
                .taproot_key_spend_signature_hash(
                    0,
                    &Prevouts::All(&[&prev]),
                    TapSighashType::Default,
                )
                .unwrap();
            let sig = secp256k1::schnorr::Signature::from_slice(&w[0]).unwrap();
            secp.verify_schnorr(
                &sig,
                &Message::from_digest(sighash.to_byte_array()),
                &output_key,
            )
            .expect("the key-path signature verifies");
        }
    }

    // The reveal's script path.
    assert_eq!(reveal.input.len(), 1);
    assert_eq!(
        reveal.input[0].previous_output,
        OutPoint {
            txid: commit.compute_txid(),
            vout: 0
        }
    );
    let w = &reveal.input[0].witness;
    assert_eq!(w.len(), 3);
    let script = Script::from_bytes(&w[1]);
    let control = ControlBlock::decode(&w[2]).unwrap();
    assert_eq!(control.leaf_version, LeafVersion::TapScript);
    let commit_spk = &commit.output[0].script_pubkey;
    assert!(commit_spk.is_p2tr());
    let output_key = XOnlyPublicKey::from_slice(&commit_spk.as_bytes()[2..34]).unwrap();
    assert!(
        control.verify_taproot_commitment(&secp, output_key, script),
        "the leaf is committed"
    );
    let env = inscription::parse_script(script, Namespace::LightClient)
        .or_else(|_| inscription::parse_script(script, Namespace::BatchProof))
        .unwrap();
    assert_eq!(
        env.reveal_key,
        control.internal_key.serialize().to_vec(),
        "K locks the leaf"
    );
    let sighash = SighashCache::new(reveal)
        .taproot_script_spend_signature_hash(
            0,
            &Prevouts::All(&[&commit.output[0]]),
            TapLeafHash::from_script(script, LeafVersion::TapScript),
            TapSighashType::Default,
        )
        .unwrap();
    let sig = secp256k1::schnorr::Signature::from_slice(&w[0]).unwrap();
    secp.verify_schnorr(
        &sig,
        &Message::from_digest(sighash.to_byte_array()),
        &control.internal_key,
    )
    .expect("K's signature verifies");

    // Values and fees.
    let out = |tx: &Transaction| tx.output.iter().map(|o| o.value.to_sat()).sum::<u64>();
    let commit_fee = funding.amount_sats - out(commit);
    let reveal_fee = commit.output[0].value.to_sat() - out(reveal);
    assert!(
        commit_fee >= commit.vsize() as u64 * fee_rate,
        "commit fee {commit_fee}"
    );
    assert!(
        reveal_fee >= reveal.vsize() as u64 * fee_rate,
        "reveal fee {reveal_fee}"
    );
    assert!(
        reveal_fee <= (reveal.vsize() as u64 + 1) * fee_rate,
        "reveal fee {reveal_fee} not overpaid"
    );
    assert_eq!(reveal.output.len(), 1);
    assert_eq!(reveal.output[0].value.to_sat(), REVEAL_OUTPUT_SATS);
    assert_eq!(reveal.output[0].script_pubkey, funder_script);
    if let Some(change) = pair.change {
        assert_eq!(commit.output[1].script_pubkey, funder_script);
        assert_eq!(
            change.outpoint,
            OutPoint {
                txid: commit.compute_txid(),
                vout: 1
            }
        );
        assert_eq!(change.amount_sats, commit.output[1].value.to_sat());
    }
}

fn fast_options() -> InscribeOptions {
    InscribeOptions {
        fee_rate_sat_per_vb: 2,
        ..InscribeOptions::default()
    }
}

/// The pairs several tests read, built once per test binary (each grinds ~65,536 signatures).
struct Built {
    commitment: SequencerCommitment,
    commitment_funding: Funding,
    commitment_pair: Inscription,
    complete_proof: Vec<u8>,
    complete_funding: Funding,
    complete: inscribe::ProofInscription,
    chunked_proof: Vec<u8>,
    chunked_funding: Funding,
    chunked: inscribe::ProofInscription,
}

static BUILT: std::sync::LazyLock<Built> = std::sync::LazyLock::new(|| {
    let commitment = SequencerCommitment {
        merkle_root: [0xab; 32],
        l2_start: 17,
        l2_end: 32,
    };
    let commitment_funding = funding(wpkh_key(), 50_000);
    let commitment_pair = inscribe::inscribe_commitment(
        &commitment_funding,
        &sequencer(),
        &commitment,
        &fast_options(),
    )
    .unwrap();
    let complete_proof: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 251) as u8).collect();
    let complete_funding = funding(tr_key(), 1_000_000);
    let complete = inscribe::inscribe_proof(
        &complete_funding,
        &prover(),
        &complete_proof,
        &fast_options(),
    )
    .unwrap();
    let chunked_proof = noise(2500, 99);
    let chunked_funding = funding(wpkh_key(), 2_000_000);
    let options = InscribeOptions {
        max_body: 1000,
        ..fast_options()
    };
    let chunked =
        inscribe::inscribe_proof(&chunked_funding, &prover(), &chunked_proof, &options).unwrap();
    Built {
        commitment,
        commitment_funding,
        commitment_pair,
        complete_proof,
        complete_funding,
        complete,
        chunked_proof,
        chunked_funding,
        chunked,
    }
});

#[test]
fn a_built_commitment_reads_back_with_its_fields_and_spends_validly() {
    let (commitment, fund, pair) = (
        BUILT.commitment,
        BUILT.commitment_funding,
        &BUILT.commitment_pair,
    );
    assert!(Namespace::BatchProof.matches(&inscription::wtxid_raw(&pair.reveal)));
    assert_spendable(pair, &fund, 2);
    let key = keys::REGTEST.sequencer_key().unwrap();
    assert_eq!(reveal::read_commitment(&pair.reveal, &key), Ok(commitment));
    let env = inscription::parse_reveal(&pair.reveal, Namespace::BatchProof).unwrap();
    assert_eq!(env.nonce, pair.nonce.to_le_bytes().to_vec());
    // The same inputs build the same pair.
    let again =
        inscribe::inscribe_commitment(&fund, &sequencer(), &commitment, &fast_options()).unwrap();
    assert_eq!(&again, pair);
    // Refused by another network's key, ignored as a proof.
    let testnet = keys::TESTNET.sequencer_key().unwrap();
    assert!(matches!(
        reveal::read_commitment(&pair.reveal, &testnet),
        Err(Refusal::Signature(SignatureError::OtherSigner { .. }))
    ));
    let refusal =
        reveal::read_light_client(&pair.reveal, &keys::REGTEST.prover_key().unwrap(), BOUND)
            .unwrap_err();
    assert!(refusal.is_not_ours());
}

#[test]
fn a_built_complete_proof_reads_back_byte_for_byte() {
    let (proof, fund, built) = (
        &BUILT.complete_proof,
        BUILT.complete_funding,
        &BUILT.complete,
    );
    assert!(built.chunks.is_empty());
    assert_eq!(built.transactions().len(), 2);
    assert_spendable(&built.main, &fund, 2);
    let key = keys::REGTEST.prover_key().unwrap();
    assert_eq!(
        reveal::read_light_client(&built.main.reveal, &key, BOUND),
        Ok(LightClientTx::Complete {
            proof: proof.to_vec()
        })
    );
    // Too small a bound refuses it without reading past the bound.
    assert!(matches!(
        reveal::read_light_client(&built.main.reveal, &key, 1000),
        Err(Refusal::Body(BodyError::TooLarge { bound: 1000 }))
    ));
}

/// A pseudo-random (incompressible) proof.
pub(crate) fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect()
}

#[test]
fn a_built_chunked_proof_reads_back_through_its_aggregate() {
    let (proof, fund, built) = (&BUILT.chunked_proof, BUILT.chunked_funding, &BUILT.chunked);
    assert_eq!(
        built.chunks.len(),
        3,
        "2,504 compressed bytes in pieces of 1,000"
    );
    assert_eq!(built.transactions().len(), 8);

    // Each pair is valid and funded by the previous commit's change.
    let mut next = fund;
    for pair in &built.chunks {
        assert_spendable(pair, &next, 2);
        assert!(Namespace::LightClient.matches(&inscription::wtxid_raw(&pair.reveal)));
        next = pair.change.unwrap();
    }
    assert_spendable(&built.main, &next, 2);

    let key = keys::REGTEST.prover_key().unwrap();
    for pair in &built.chunks {
        assert_eq!(
            reveal::read_light_client(&pair.reveal, &key, BOUND),
            Ok(LightClientTx::Chunk)
        );
    }
    let (txids, wtxids) = match reveal::read_light_client(&built.main.reveal, &key, BOUND) {
        Ok(LightClientTx::Aggregate { txids, wtxids }) => (txids, wtxids),
        other => panic!("expected an aggregate, got {other:?}"),
    };
    // The node fetches the chunks by txid.
    let by_txid = |txid: &[u8; 32]| {
        built
            .chunks
            .iter()
            .map(|c| &c.reveal)
            .find(|tx| &inscription::txid_raw(tx) == txid)
            .cloned()
    };
    let fetched: Vec<Option<Transaction>> = txids.iter().map(by_txid).collect();
    assert_eq!(
        reveal::read_chunked_proof(&txids, &wtxids, &fetched, BOUND),
        Ok(proof.to_vec())
    );

    // A missing chunk, chunks out of order, a chunk that is not one.
    let mut missing = fetched.clone();
    missing[1] = None;
    assert!(matches!(
        reveal::read_chunked_proof(&txids, &wtxids, &missing, BOUND),
        Err(Refusal::MissingChunk { index: 1, .. })
    ));
    let mut swapped = fetched.clone();
    swapped.swap(0, 2);
    let refusal = reveal::read_chunked_proof(&txids, &wtxids, &swapped, BOUND).unwrap_err();
    assert!(
        matches!(
            refusal,
            Refusal::ChunkMismatch {
                index: 0,
                field: "txid",
                ..
            }
        ),
        "{refusal}"
    );
    let mut wrong = fetched.clone();
    wrong[0] = Some(built.main.reveal.clone());
    let mut named = txids.clone();
    let mut named_w = wtxids.clone();
    named[0] = inscription::txid_raw(&built.main.reveal);
    named_w[0] = inscription::wtxid_raw(&built.main.reveal);
    assert!(matches!(
        reveal::read_chunked_proof(&named, &named_w, &wrong, BOUND),
        Err(Refusal::Kind {
            found: Kind::Aggregate,
            ..
        })
    ));
}

#[test]
fn a_proof_at_the_threshold_goes_in_chunks_and_one_below_it_complete() {
    let proof = noise(2000, 5);
    let compressed_len = body::compress(&{
        let mut v = (proof.len() as u32).to_le_bytes().to_vec();
        v.extend_from_slice(&proof);
        v
    })
    .len();
    assert!(matches!(
        body::split_proof(&proof, compressed_len + 1),
        body::ProofBodies::Complete(_)
    ));
    assert!(
        matches!(body::split_proof(&proof, compressed_len), body::ProofBodies::Chunks(c) if c.len() == 1)
    );
}

#[test]
fn funding_too_small_is_refused_with_what_it_needs() {
    let commitment = SequencerCommitment {
        merkle_root: [1; 32],
        l2_start: 1,
        l2_end: 2,
    };
    let err = inscribe::inscribe_commitment(
        &funding(wpkh_key(), 900),
        &sequencer(),
        &commitment,
        &fast_options(),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            inscribe::InscribeError::InsufficientFunds { have: 900, .. }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("900 sat"), "{err}");
}

// --- Refusals: crafted reveals whose wtxid has the prefix ----------------------------------------

/// A transaction whose first input carries `script` as a script-path spend and whose wtxid has
/// `namespace`'s prefix (ground over the lock time; the reader checks no Schnorr signature).
fn reveal_carrying(script: &ScriptBuf, namespace: Namespace) -> Transaction {
    let mut tx = Transaction {
        version: bitcoin::transaction::Version::TWO,
        lock_time: LockTime::ZERO,
        input: vec![TxIn {
            previous_output: OutPoint {
                txid: Txid::from_byte_array([9; 32]),
                vout: 0,
            },
            script_sig: ScriptBuf::new(),
            sequence: bitcoin::Sequence::ENABLE_RBF_NO_LOCKTIME,
            witness: Witness::from_slice(&[vec![1u8; 64], script.to_bytes(), vec![0xc0; 33]]),
        }],
        output: vec![TxOut {
            value: Amount::from_sat(546),
            script_pubkey: ScriptBuf::new(),
        }],
    };
    for n in 0u32.. {
        tx.lock_time = LockTime::from_consensus(n);
        if namespace.matches(&inscription::wtxid_raw(&tx)) {
            return tx;
        }
    }
    unreachable!()
}

fn push(bytes: &[u8]) -> PushBytesBuf {
    PushBytesBuf::try_from(bytes.to_vec()).unwrap()
}

/// An envelope script with the given kind, signature, signer and body pushes.
fn envelope_script(kind: u16, signed: Option<(&[u8], &[u8])>, body: &[u8]) -> ScriptBuf {
    let mut b = Builder::new()
        .push_slice([3u8; 32])
        .push_opcode(OP_CHECKSIGVERIFY)
        .push_slice(kind.to_le_bytes())
        .push_opcode(OP_FALSE)
        .push_opcode(OP_IF);
    if let Some((sig, key)) = signed {
        b = b.push_slice(push(sig)).push_slice(push(key));
    }
    for piece in body.chunks(520) {
        b = b.push_slice(push(piece));
    }
    b.push_opcode(OP_ENDIF)
        .push_slice(77i64.to_le_bytes())
        .push_opcode(OP_NIP)
        .into_script()
}

fn signed_script(kind: u16, key: &DaSecretKey, body: &[u8]) -> ScriptBuf {
    envelope_script(
        kind,
        Some((&key.sign(body), key.public_key().as_bytes())),
        body,
    )
}

/// The commitment body the envelope cases carry: root `[2; 32]` over 5..=9.
fn commitment_body() -> [u8; body::SEQUENCER_COMMITMENT_LEN] {
    SequencerCommitment {
        merkle_root: [2; 32],
        l2_start: 5,
        l2_end: 9,
    }
    .encode()
}

/// What the commitment reader says of a reveal carrying `script` under
/// `namespace`'s wtxid prefix, read against the regtest sequencer's key.
fn commitment_refusal(script: &ScriptBuf, namespace: Namespace) -> Refusal {
    let tx = reveal_carrying(script, namespace);
    reveal::read_commitment(&tx, &sequencer().public_key()).expect_err("a refusal")
}

#[test]
fn a_bad_signature_is_refused() {
    let body = commitment_body();
    let mut sig = sequencer().sign(&body);
    sig[10] ^= 1;
    let script = envelope_script(0, Some((&sig, sequencer().public_key().as_bytes())), &body);
    let refusal = commitment_refusal(&script, Namespace::BatchProof);
    assert!(
        matches!(
            refusal,
            Refusal::Signature(SignatureError::Invalid | SignatureError::OutOfRange)
        ),
        "{refusal}"
    );
    assert!(!refusal.is_not_ours());
}

#[test]
fn a_signature_over_other_bytes_is_refused() {
    let body = commitment_body();
    let sig = sequencer().sign(b"something else");
    let script = envelope_script(0, Some((&sig, sequencer().public_key().as_bytes())), &body);
    assert_eq!(
        commitment_refusal(&script, Namespace::BatchProof),
        Refusal::Signature(SignatureError::Invalid)
    );
}

#[test]
fn a_high_s_signature_is_refused_though_it_verifies_mathematically() {
    let body = commitment_body();
    let low = sequencer().sign(&body);
    // s' = n - s: the same signature in its malleated, high-S form.
    let n =
        hex::decode("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141").unwrap();
    let mut high = low;
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let d = n[i] as i16 - low[32 + i] as i16 - borrow;
        high[32 + i] = d.rem_euclid(256) as u8;
        borrow = if d < 0 { 1 } else { 0 };
    }
    let script = envelope_script(0, Some((&high, sequencer().public_key().as_bytes())), &body);
    let refusal = commitment_refusal(&script, Namespace::BatchProof);
    assert_eq!(refusal, Refusal::Signature(SignatureError::HighS));
    assert!(refusal.to_string().contains("high-S"), "{refusal}");
}

#[test]
fn a_signature_of_the_wrong_length_is_refused() {
    let body = commitment_body();
    let sig = sequencer().sign(&body);
    let script = envelope_script(
        0,
        Some((&sig[..63], sequencer().public_key().as_bytes())),
        &body,
    );
    assert_eq!(
        commitment_refusal(&script, Namespace::BatchProof),
        Refusal::Signature(SignatureError::Length(63))
    );
}

#[test]
fn a_reveal_by_another_key_is_refused() {
    let other = DaSecretKey::from_bytes(&[0x42; 32]).unwrap();
    let body = commitment_body();
    let refusal = commitment_refusal(&signed_script(0, &other, &body), Namespace::BatchProof);
    assert!(matches!(
        refusal,
        Refusal::Signature(SignatureError::OtherSigner { .. })
    ));
    assert!(
        refusal
            .to_string()
            .contains(&other.public_key().to_string()),
        "{refusal}"
    );
}

#[test]
fn a_reveal_without_the_prefix_is_ignored() {
    let body = commitment_body();
    // Addressed to the other namespace: its wtxid starts 02 02.
    let refusal = commitment_refusal(
        &signed_script(0, &sequencer(), &body),
        Namespace::LightClient,
    );
    assert!(matches!(
        refusal,
        Refusal::Envelope(EnvelopeError::WrongPrefix {
            wtxid_start: [2, 2],
            ..
        })
    ));
    assert!(refusal.is_not_ours());
    assert!(refusal.to_string().contains("0101"), "{refusal}");
}

#[test]
fn an_unknown_kind_is_refused() {
    let body = [1u8; 49];
    let refusal = commitment_refusal(
        &signed_script(7, &sequencer(), &body),
        Namespace::BatchProof,
    );
    assert_eq!(
        refusal,
        Refusal::Envelope(EnvelopeError::UnknownKind {
            namespace: Namespace::BatchProof,
            code: 7
        })
    );
    assert!(!refusal.is_not_ours());
    // Kind 1 is an aggregate in the light-client namespace but nothing in the commitment one.
    assert!(matches!(
        commitment_refusal(
            &signed_script(1, &sequencer(), &body),
            Namespace::BatchProof
        ),
        Refusal::Envelope(EnvelopeError::UnknownKind { code: 1, .. })
    ));
}

#[test]
fn brotli_garbage_is_refused() {
    let garbage = noise(300, 3);
    let tx = reveal_carrying(
        &signed_script(0, &prover(), &garbage),
        Namespace::LightClient,
    );
    let refusal = reveal::read_light_client(&tx, &prover().public_key(), BOUND).unwrap_err();
    assert!(
        matches!(refusal, Refusal::Body(BodyError::Brotli(_))),
        "{refusal}"
    );
    // A good stream cut short, and one followed by other bytes.
    let good = body::compress(&LightClientBody::Complete(vec![5; 100]).encode());
    for bad in [
        good[..good.len() - 1].to_vec(),
        [good.clone(), vec![0]].concat(),
    ] {
        let tx = reveal_carrying(&signed_script(0, &prover(), &bad), Namespace::LightClient);
        assert!(matches!(
            reveal::read_light_client(&tx, &prover().public_key(), BOUND),
            Err(Refusal::Body(BodyError::Brotli(_)))
        ));
    }
}

#[test]
fn a_brotli_bomb_stops_at_the_bound() {
    // One byte past the bound, as zeros: a few dozen bytes compressed.
    let bomb = body::compress(&vec![0u8; BOUND + 1]);
    assert!(bomb.len() < 200, "{} bytes", bomb.len());
    let tx = reveal_carrying(&signed_script(0, &prover(), &bomb), Namespace::LightClient);
    let refusal = reveal::read_light_client(&tx, &prover().public_key(), BOUND).unwrap_err();
    assert_eq!(refusal, Refusal::Body(BodyError::TooLarge { bound: BOUND }));
    assert!(refusal.to_string().contains("8388608"), "{refusal}");

    // A real bomb: 256 MiB from a few hundred bytes (brotli's fast setting, to build it quickly).
    let mut writer = brotli::CompressorWriter::new(Vec::new(), 4096, 1, 22);
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..256 {
        std::io::Write::write_all(&mut writer, &zeros).unwrap();
    }
    let bomb = writer.into_inner();
    assert!(bomb.len() < 64 << 10, "{} bytes", bomb.len());
    let tx = reveal_carrying(&signed_script(0, &prover(), &bomb), Namespace::LightClient);
    assert_eq!(
        reveal::read_light_client(&tx, &prover().public_key(), BOUND),
        Err(Refusal::Body(BodyError::TooLarge { bound: BOUND }))
    );
}

#[test]
fn borsh_that_does_not_parse_is_refused() {
    let key = sequencer().public_key();
    // A commitment body one byte short, one byte long, and with a tag that is not 0.
    let good = commitment_body();
    type Expect = fn(&BodyError) -> bool;
    let cases: [(Vec<u8>, Expect); 3] = [
        (good[..48].to_vec(), |e| {
            matches!(e, BodyError::Truncated { .. })
        }),
        ([&good[..], &[0]].concat(), |e| {
            matches!(e, BodyError::TrailingBytes { extra: 1, .. })
        }),
        ([&[1], &good[1..]].concat(), |e| {
            matches!(e, BodyError::UnknownVariant { tag: 1, .. })
        }),
    ];
    for (body, expected) in cases {
        let tx = reveal_carrying(
            &signed_script(0, &sequencer(), &body),
            Namespace::BatchProof,
        );
        match reveal::read_commitment(&tx, &key) {
            Err(Refusal::Body(e)) => assert!(expected(&e), "{e}"),
            other => panic!("expected a body refusal, got {other:?}"),
        }
    }
    // A complete-proof envelope whose decompressed body is neither layout, or another variant.
    for (inner, want_variant) in [
        (vec![9u8, 1, 2, 3], false),
        (LightClientBody::Chunk(vec![1, 2]).encode(), true),
    ] {
        let tx = reveal_carrying(
            &signed_script(0, &prover(), &body::compress(&inner)),
            Namespace::LightClient,
        );
        match reveal::read_light_client(&tx, &prover().public_key(), BOUND) {
            Err(Refusal::Body(BodyError::WrongVariant { .. })) => assert!(want_variant),
            Err(Refusal::Body(BodyError::UnknownVariant { tag: 9, .. })) => assert!(!want_variant),
            other => panic!("expected a body refusal, got {other:?}"),
        }
    }
    // An aggregate whose hash list claims more than the body holds.
    let mut aggregate = LightClientBody::Aggregate {
        txids: vec![[1; 32]],
        wtxids: vec![[2; 32]],
    }
    .encode();
    aggregate[1] = 200;
    let tx = reveal_carrying(
        &signed_script(1, &prover(), &aggregate),
        Namespace::LightClient,
    );
    assert!(matches!(
        reveal::read_light_client(&tx, &prover().public_key(), BOUND),
        Err(Refusal::Body(BodyError::Truncated { .. }))
    ));
}

#[test]
fn a_truncated_script_is_refused_at_every_length() {
    let body = commitment_body();
    let script = signed_script(0, &sequencer(), &body);
    let bytes = script.as_bytes();
    assert!(inscription::parse_script(script.as_script(), Namespace::BatchProof).is_ok());
    for len in 0..bytes.len() {
        let cut = Script::from_bytes(&bytes[..len]);
        let err = inscription::parse_script(cut, Namespace::BatchProof).unwrap_err();
        assert!(
            matches!(
                err,
                EnvelopeError::EndOfScript { .. } | EnvelopeError::BadPush { .. }
            ),
            "cut at {len}: {err}"
        );
        assert!(!err.to_string().is_empty());
    }
    // And one item too many.
    let mut longer = bytes.to_vec();
    longer.push(OP_NIP.to_u8());
    assert_eq!(
        inscription::parse_script(Script::from_bytes(&longer), Namespace::BatchProof),
        Err(EnvelopeError::TrailingData)
    );
}

#[test]
fn mutated_reveals_never_panic() {
    // A real reveal of each kind, then thousands of random byte edits of the serialized
    // transaction and of the bare script: every reader returns, Ok or a reason.
    let mut seeds: Vec<Transaction> = vec![
        BUILT.commitment_pair.reveal.clone(),
        BUILT.complete.main.reveal.clone(),
        BUILT.chunked.main.reveal.clone(),
        issue_1686_reveal(),
    ];
    seeds.extend(BUILT.chunked.chunks.iter().map(|c| c.reveal.clone()));

    let seq_key = sequencer().public_key();
    let prover_key = prover().public_key();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut decoded = 0;
    for round in 0..6000 {
        let seed = &seeds[round % seeds.len()];
        let script = inscription::leaf_script(&seed.input[0].witness)
            .unwrap()
            .to_bytes();
        let mut bytes = script.clone();
        for _ in 0..1 + rand() % 4 {
            let at = (rand() as usize) % bytes.len();
            match rand() % 3 {
                0 => bytes[at] = rand() as u8,
                1 => bytes.truncate(at),
                _ => bytes.insert(at, rand() as u8),
            }
            if bytes.is_empty() {
                break;
            }
        }
        for ns in [Namespace::BatchProof, Namespace::LightClient] {
            if let Ok(env) = inscription::parse_script(Script::from_bytes(&bytes), ns) {
                let _ = ledgerd::source::bitcoin::signer::check_signer(&env, &seq_key);
                let _ = body::complete_proof(&env.body, 1 << 20);
                let _ = LightClientBody::decode(&env.body);
                let _ = SequencerCommitment::decode(&env.body);
            }
        }
        // The whole transaction, mutated as bytes.
        let mut raw = bitcoin::consensus::serialize(seed);
        let at = (rand() as usize) % raw.len();
        raw[at] ^= 1 << (rand() % 8);
        if let Ok(tx) = bitcoin::consensus::deserialize::<Transaction>(&raw) {
            decoded += 1;
            let _ = reveal::read_commitment(&tx, &seq_key);
            let _ = reveal::read_light_client(&tx, &prover_key, 1 << 20);
            let _ = inscription::parse_envelope(&tx, Namespace::LightClient);
        }
    }
    assert!(
        decoded > 1000,
        "the mutations mostly still parse as transactions: {decoded}"
    );
}

#[test]
fn keys_from_hex_refuse_what_is_not_a_key() {
    assert!(DaPublicKey::from_hex(keys::TESTNET.sequencer).is_ok());
    assert!(DaPublicKey::from_hex(&keys::TESTNET.sequencer[2..]).is_err());
    assert!(DaPublicKey::from_hex(&format!("05{}", &keys::TESTNET.sequencer[2..])).is_err());
    assert!(DaPublicKey::from_hex("zz").is_err());
    assert!(DaSecretKey::from_hex(&"00".repeat(32)).is_err());
}

/// A block at `height` holding `txs` (after a coinbase stand-in) as the scanner sees it: the
/// checks a real block passes are `block.rs`'s; here only the scan is under test.
fn scanned_block(height: u64, txs: &[&Transaction]) -> ledgerd::source::bitcoin::block::DaBlock {
    use ledgerd::source::bitcoin::block::DaTx;
    let header = bitcoin::blockdata::constants::genesis_block(bitcoin::Network::Regtest).header;
    ledgerd::source::bitcoin::block::DaBlock {
        height,
        hash: [height as u8; 32],
        header,
        txs: txs
            .iter()
            .map(|tx| DaTx {
                txid: inscription::txid_raw(tx),
                wtxid: inscription::wtxid_raw(tx),
                tx: (*tx).clone(),
            })
            .collect(),
        tx_count: txs.len() + 1,
        txs_commitment: [0; 32],
    }
}

#[test]
fn a_chunked_proof_is_put_together_from_chunks_scanned_in_earlier_blocks_without_any_txindex() {
    use ledgerd::progress::Progress;
    use ledgerd::source::bitcoin::scan::BitcoinDaConfig;
    use ledgerd::source::bitcoin::scan::SlotScanner;
    let built = &BUILT.chunked;
    let config = BitcoinDaConfig::new(
        keys::REGTEST.sequencer_key().unwrap(),
        keys::REGTEST.prover_key().unwrap(),
    );
    let chunks: Vec<&Transaction> = built.chunks.iter().map(|c| &c.reveal).collect();

    // The chunks in two earlier blocks, the aggregate later: the proof's bytes are put together
    // (they are noise, not a risc0 receipt, so the proof is then refused as "receipt", not as a
    // missing "chunk").
    let progress = std::sync::Arc::new(Progress::default());
    let mut scanner = SlotScanner::new(config.clone(), progress.clone());
    let first = scanner.slot_of(&scanned_block(10, &chunks[..1]));
    let second = scanner.slot_of(&scanned_block(11, &chunks[1..]));
    assert!(first.proofs.is_empty() && second.proofs.is_empty());
    assert_eq!(scanner.chunks_remembered(), 3);
    let slot = scanner.slot_of(&scanned_block(12, &[&built.main.reveal]));
    assert!(slot.proofs.is_empty());
    assert_eq!(progress.bitcoin.refused_count("receipt"), 1);
    assert_eq!(progress.bitcoin.refused_count("chunk"), 0);
    // The aggregate's block scanned again (a pass that gave up): the chunks are still there.
    scanner.slot_of(&scanned_block(12, &[&built.main.reveal]));
    assert_eq!(progress.bitcoin.refused_count("receipt"), 2);

    // A scanner that never saw the chunks refuses the aggregate as missing one.
    let progress = std::sync::Arc::new(Progress::default());
    let mut fresh = SlotScanner::new(config, progress.clone());
    fresh.slot_of(&scanned_block(12, &[&built.main.reveal]));
    assert_eq!(progress.bitcoin.refused_count("chunk"), 1);
    assert_eq!(progress.bitcoin.refused_count("receipt"), 0);
}

#[test]
fn chunks_stored_with_their_slots_let_a_restarted_scanner_put_the_proof_together() {
    use ledgerd::ledger::{BitcoinChunkRead, Ledger, OpenOptions};
    use ledgerd::progress::Progress;
    use ledgerd::source::bitcoin::scan::BitcoinDaConfig;
    use ledgerd::source::bitcoin::scan::SlotScanner;
    use std::sync::Arc;
    let built = &BUILT.chunked;
    let config = BitcoinDaConfig::new(
        keys::REGTEST.sequencer_key().unwrap(),
        keys::REGTEST.prover_key().unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(Ledger::open(dir.path(), &OpenOptions::default()).unwrap());
    let chunks: Vec<&Transaction> = built.chunks.iter().map(|c| &c.reveal).collect();

    // Before the restart: the chunks' slot lists them, and the sync thread stores them with it.
    let mut before = SlotScanner::new(config.clone(), Arc::new(Progress::default()));
    before.set_ledger(ledger.clone());
    let slot = before.slot_of(&scanned_block(10, &chunks));
    assert_eq!(slot.chunks.found.len(), 3);
    assert!(slot.chunks.used.is_empty());
    let mut w = ledger.writer().unwrap();
    for (txid, raw) in &slot.chunks.found {
        w.put_bitcoin_chunk(txid, slot.number, raw).unwrap();
    }
    w.commit().unwrap();
    drop(before);

    // After it: a new scanner with nothing in memory finds them in the ledger.
    let progress = Arc::new(Progress::default());
    let mut after = SlotScanner::new(config, progress.clone());
    after.set_ledger(ledger.clone());
    assert_eq!(after.chunks_remembered(), 0);
    let slot = after.slot_of(&scanned_block(11, &[&built.main.reveal]));
    assert_eq!(progress.bitcoin.refused_count("chunk"), 0);
    assert_eq!(
        progress.bitcoin.refused_count("receipt"),
        1,
        "put together, then no receipt"
    );
    let named: Vec<[u8; 32]> = chunks.iter().map(|t| inscription::txid_raw(t)).collect();
    assert_eq!(slot.chunks.used, named);
    let r = ledger.reader().unwrap();
    assert_eq!(r.bitcoin_chunk(&named[0]).unwrap().unwrap().0, 10);
}

#[test]
fn a_ground_reveal_is_the_same_whichever_core_finds_it_and_its_signature_spends() {
    // A one-byte condition: a few hundred tries, spread over the cores.
    let commitment = SequencerCommitment {
        merkle_root: [0x5a; 32],
        l2_start: 3,
        l2_end: 9,
    };
    let funding = funding(wpkh_key(), 50_000);
    let build = || {
        inscribe::inscribe_where(
            &funding,
            &sequencer(),
            Kind::SequencerCommitment,
            &commitment.encode(),
            &fast_options(),
            |w| w[0] == 0x77,
        )
        .unwrap()
    };
    let builds: Vec<Inscription> = (0..4).map(|_| build()).collect();
    for b in &builds[1..] {
        assert_eq!(b, &builds[0], "the grind took another try on another build");
    }
    assert_eq!(inscription::wtxid_raw(&builds[0].reveal)[0], 0x77);
    assert!(builds[0].tries >= 1);
    assert_spendable(&builds[0], &funding, fast_options().fee_rate_sat_per_vb);
}
