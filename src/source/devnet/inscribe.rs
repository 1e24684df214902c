//! Building Citrea-format commit/reveal transaction pairs: how the devnet publishes its sequencer
//! commitments and proofs on a real (regtest) bitcoind. The layout is the one
//! [`crate::source::bitcoin::inscription`] reads; the way of building it follows Citrea v0.6.2
//! (`crates/bitcoin-da/src/helpers/builders/*.rs`):
//!
//! - a throwaway key `K` (here derived from the DA key, the funding outpoint and the body, so a
//!   build is reproducible) locks the commit output: P2TR with internal key `K` and one tapleaf
//!   (version `0xc0`) holding the reveal script;
//! - the commit transaction spends the funding UTXO to that output (worth the reveal's fee plus
//!   [`REVEAL_OUTPUT_SATS`]) and sends the change back to the funder;
//! - the reveal spends the commit output by script path, witness `[K's Schnorr signature, reveal
//!   script, control block]`, and pays [`REVEAL_OUTPUT_SATS`] back to the funder;
//! - the reveal's wtxid, in raw byte order, must start with the namespace prefix (65,536 tries on
//!   average for two bytes). Citrea grinds the nonce pushed in the script, and with it retweaks the
//!   taproot output, rebuilds the commit and re-signs the reveal at every try. Here the script
//!   keeps Citrea's first nonce (16) and each try only makes another BIP 340 signature of the
//!   same sighash: the signature is in the witness, so the wtxid changes while nothing signed
//!   does. Same transactions to a reader, and far less work per try (`grind`: the signature
//!   nonces step by one, so each try costs a point addition, not a multiplication; the tries
//!   are spread over the cores; the transaction's bytes are hashed from a midstate);
//! - a proof whose brotli(borsh(proof)) reaches the size threshold goes as chunk-part reveals,
//!   each funded by the previous commit's change, then one signed aggregate reveal naming them.
//!
//! Transactions come back signed and ready for `sendrawtransaction`, in the order to send them.
use std::fmt;

use bitcoin::absolute::LockTime;
use bitcoin::hashes::Hash;
use bitcoin::key::{CompressedPublicKey, Keypair, TapTweak};
use bitcoin::opcodes::all::{OP_CHECKSIGVERIFY, OP_ENDIF, OP_IF, OP_NIP};
use bitcoin::opcodes::OP_FALSE;
use bitcoin::script::{Builder, PushBytesBuf};
use bitcoin::secp256k1::{All, Message, Secp256k1, SecretKey, XOnlyPublicKey};
use bitcoin::sighash::{EcdsaSighashType, Prevouts, SighashCache, TapSighashType};
use bitcoin::taproot::{ControlBlock, LeafVersion, TapLeafHash, TapNodeHash, TaprootMerkleBranch};
use bitcoin::transaction::Version;
use bitcoin::{Amount, OutPoint, ScriptBuf, Sequence, Transaction, TxIn, TxOut, Witness};
use sha2::{Digest, Sha256};

use super::grind::grind;
use crate::source::bitcoin::body::{self, LightClientBody, ProofBodies, SequencerCommitment};
use crate::source::bitcoin::inscription::{wtxid_raw, Kind};
use crate::source::bitcoin::signer::DaSecretKey;

/// What each reveal pays back to the funder: Citrea's `REVEAL_OUTPUT_AMOUNT` (546 sat, dust-safe
/// for any output type).
pub const REVEAL_OUTPUT_SATS: u64 = 546;

/// Change below this is left to the fee rather than sent back as dust.
const DUST_SATS: u64 = 546;

/// The largest single push in a tapscript (BIP 342 keeps the 520-byte element limit).
const MAX_PUSH: usize = 520;

/// The first nonce tried: Citrea skips 0..=15 (its comment: avoid `OP_PUSHNUM_N`).
const FIRST_NONCE: i64 = 16;

/// The key that owns a funding UTXO, and so the change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FundingKey {
    /// Pay-to-witness-public-key-hash of this key's compressed public key.
    P2wpkh(SecretKey),
    /// Pay-to-taproot, key path only (BIP 86: the key tweaked with no script tree).
    P2tr(SecretKey),
}

impl FundingKey {
    /// The output script this key spends from and receives change on.
    pub fn script_pubkey(&self) -> ScriptBuf {
        let secp = Secp256k1::new();
        match self {
            FundingKey::P2wpkh(sk) => {
                let pk = CompressedPublicKey(sk.public_key(&secp));
                ScriptBuf::new_p2wpkh(&pk.wpubkey_hash())
            }
            FundingKey::P2tr(sk) => {
                let (internal, _) = sk.x_only_public_key(&secp);
                ScriptBuf::new_p2tr(&secp, internal, None)
            }
        }
    }
}

/// A spendable output and the key that owns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Funding {
    pub outpoint: OutPoint,
    pub amount_sats: u64,
    pub key: FundingKey,
}

/// How to build: the fee rate, and Citrea's threshold for chunking a proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InscribeOptions {
    /// Fee rate for both transactions, in sat per virtual byte.
    pub fee_rate_sat_per_vb: u64,
    /// A proof whose brotli(borsh(proof)) is this many bytes or more goes in chunks of at most
    /// this many bytes: [`body::MAX_BODY_BYTES`] (397,000) on Citrea's networks.
    pub max_body: usize,
    /// Give up after this many tries (a two-byte prefix takes 65,536 on average; 4,000,000
    /// fail with a chance of e^-61).
    pub max_tries: u64,
}

impl Default for InscribeOptions {
    fn default() -> Self {
        InscribeOptions {
            fee_rate_sat_per_vb: 1,
            max_body: body::MAX_BODY_BYTES,
            max_tries: 4_000_000,
        }
    }
}

/// One commit/reveal pair, signed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inscription {
    pub commit: Transaction,
    pub reveal: Transaction,
    /// The nonce pushed in the reveal script.
    pub nonce: i64,
    /// How many signatures the grind made before the wtxid had the prefix.
    pub tries: u64,
    /// The commit's change output back to the funder, if any was above dust.
    pub change: Option<Funding>,
}

/// A proof's transactions: chunk pairs first (none for a complete proof), then the pair whose
/// reveal is the complete proof or the signed aggregate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProofInscription {
    pub chunks: Vec<Inscription>,
    pub main: Inscription,
}

impl ProofInscription {
    /// Every transaction in the order to send them (each spends an earlier one or the funding).
    pub fn transactions(&self) -> Vec<&Transaction> {
        self.chunks
            .iter()
            .chain(std::iter::once(&self.main))
            .flat_map(|pair| [&pair.commit, &pair.reveal])
            .collect()
    }
}

/// Why a pair could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InscribeError {
    /// The funding does not cover the reveal output and both fees.
    InsufficientFunds { have: u64, need: u64 },
    /// A one-push body (commitment, method id) is over 520 bytes.
    BodyTooLarge { kind: Kind, len: usize },
    /// No try within the limit gave the prefix.
    NoPrefix { tries: u64 },
    /// The funding key cannot sign (a sighash or key error from the `bitcoin` crate).
    Signing(String),
}

impl fmt::Display for InscribeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InscribeError::InsufficientFunds { have, need } => write!(
                f,
                "the funding UTXO holds {have} sat; the commit and reveal need {need} sat at this fee rate"
            ),
            InscribeError::BodyTooLarge { kind, len } => write!(
                f,
                "a {} body is one push of at most {MAX_PUSH} bytes; this one is {len}",
                kind.name()
            ),
            InscribeError::NoPrefix { tries } => {
                write!(f, "none of {tries} tries gave the reveal's wtxid the namespace prefix")
            }
            InscribeError::Signing(why) => write!(f, "cannot sign the funding input: {why}"),
        }
    }
}

impl std::error::Error for InscribeError {}

/// A sequencer commitment as a commit/reveal pair signed with the sequencer's DA key.
pub fn inscribe_commitment(
    funding: &Funding,
    sequencer: &DaSecretKey,
    commitment: &SequencerCommitment,
    options: &InscribeOptions,
) -> Result<Inscription, InscribeError> {
    inscribe(
        funding,
        sequencer,
        Kind::SequencerCommitment,
        &commitment.encode(),
        options,
    )
}

/// A proof (the bytes a Citrea prover publishes: bincode of a risc0 receipt) as one complete
/// pair, or as chunk pairs and an aggregate pair, signed with the prover's DA key.
pub fn inscribe_proof(
    funding: &Funding,
    prover: &DaSecretKey,
    proof: &[u8],
    options: &InscribeOptions,
) -> Result<ProofInscription, InscribeError> {
    match body::split_proof(proof, options.max_body) {
        ProofBodies::Complete(compressed) => Ok(ProofInscription {
            chunks: Vec::new(),
            main: inscribe(funding, prover, Kind::Complete, &compressed, options)?,
        }),
        ProofBodies::Chunks(pieces) => {
            let mut next = *funding;
            let mut chunks = Vec::with_capacity(pieces.len());
            for piece in &pieces {
                let pair = inscribe(&next, prover, Kind::Chunk, piece, options)?;
                next = pair.change.ok_or(InscribeError::InsufficientFunds {
                    have: next.amount_sats,
                    need: next.amount_sats + DUST_SATS,
                })?;
                chunks.push(pair);
            }
            let aggregate = LightClientBody::Aggregate {
                txids: chunks
                    .iter()
                    .map(|c| c.reveal.compute_txid().to_byte_array())
                    .collect(),
                wtxids: chunks.iter().map(|c| wtxid_raw(&c.reveal)).collect(),
            };
            let main = inscribe(&next, prover, Kind::Aggregate, &aggregate.encode(), options)?;
            Ok(ProofInscription { chunks, main })
        }
    }
}

/// One commit/reveal pair carrying `body` as `kind`, signed with `da_key` (chunk parts unsigned).
pub fn inscribe(
    funding: &Funding,
    da_key: &DaSecretKey,
    kind: Kind,
    body: &[u8],
    options: &InscribeOptions,
) -> Result<Inscription, InscribeError> {
    let prefix = kind.namespace().prefix();
    inscribe_where(funding, da_key, kind, body, options, |w| {
        w.starts_with(&prefix)
    })
}

/// [`inscribe`], grinding until the reveal's raw wtxid satisfies `wanted`
/// instead of starting with the kind's prefix (tests publish reveals with a
/// wrong prefix this way).
pub fn inscribe_where(
    funding: &Funding,
    da_key: &DaSecretKey,
    kind: Kind,
    body: &[u8],
    options: &InscribeOptions,
    wanted: impl Fn(&[u8; 32]) -> bool + Sync,
) -> Result<Inscription, InscribeError> {
    if matches!(kind, Kind::SequencerCommitment | Kind::BatchProofMethodId) && body.len() > MAX_PUSH
    {
        return Err(InscribeError::BodyTooLarge {
            kind,
            len: body.len(),
        });
    }
    let secp = Secp256k1::new();
    let reveal_keypair = throwaway_key(&secp, da_key, funding, kind, body)?;
    let (reveal_key, _) = reveal_keypair.x_only_public_key();
    // Everything but K's signature is fixed from here: the script (with the nonce Citrea starts
    // from), the taproot output, the commit, the reveal's sighash.
    let nonce = FIRST_NONCE;
    let script = reveal_script(reveal_key, da_key, kind, body, nonce)?;
    let (control, leaf_hash, commit_script) = control_block(&secp, reveal_key, &script);
    let control = control.serialize();
    let funder_script = funding.key.script_pubkey();

    // The reveal with a placeholder signature: only those 64 bytes change from try to try, and
    // its size is the signed one. It spends the commit, whose txid is known once it is priced.
    let witness = Witness::from_slice(&[&[0u8; 64][..], script.as_bytes(), control.as_slice()]);
    let reveal_out = tx_out(REVEAL_OUTPUT_SATS, &funder_script);
    let mut reveal = spend(OutPoint::null(), witness, vec![reveal_out]);
    let commit_value = reveal.vsize() as u64 * options.fee_rate_sat_per_vb + REVEAL_OUTPUT_SATS;
    // The commit: the reveal's value, and the change back to the funder if there is any.
    let commit_tx = |change_sats: Option<u64>| {
        let mut output = vec![tx_out(commit_value, &commit_script)];
        output.extend(change_sats.map(|change| tx_out(change, &funder_script)));
        spend(funding.outpoint, Witness::new(), output)
    };
    // Its fee once signed (a worst-case 72-byte ECDSA signature for P2WPKH).
    let commit_fee = |change_sats| {
        let mut tx = commit_tx(change_sats);
        tx.input[0].witness = match funding.key {
            FundingKey::P2wpkh(_) => Witness::from_slice(&[vec![0u8; 72], vec![0u8; 33]]),
            FundingKey::P2tr(_) => Witness::from_slice(&[vec![0u8; 64]]),
        };
        tx.vsize() as u64 * options.fee_rate_sat_per_vb
    };
    let need = commit_value + commit_fee(None);
    if funding.amount_sats < need {
        return Err(InscribeError::InsufficientFunds {
            have: funding.amount_sats,
            need,
        });
    }
    let change_sats = funding
        .amount_sats
        .checked_sub(commit_value + commit_fee(Some(DUST_SATS)))
        .filter(|change| *change >= DUST_SATS);
    let mut commit = commit_tx(change_sats);
    reveal.input[0].previous_output = OutPoint {
        txid: commit.compute_txid(),
        vout: 0,
    };
    let sighash = SighashCache::new(&reveal)
        .taproot_script_spend_signature_hash(
            0,
            &Prevouts::All(&[&commit.output[0]]),
            leaf_hash,
            TapSighashType::Default,
        )
        .map_err(|e| InscribeError::Signing(e.to_string()))?;
    let message = Message::from_digest(sighash.to_byte_array());

    let found = grind(
        &secp,
        &reveal_keypair,
        &message,
        &reveal,
        options.max_tries,
        &wanted,
    )
    .map_err(InscribeError::Signing)?;
    let Some((attempt, signature)) = found else {
        return Err(InscribeError::NoPrefix {
            tries: options.max_tries,
        });
    };
    reveal.input[0].witness =
        Witness::from_slice(&[&signature[..], script.as_bytes(), control.as_slice()]);
    if !wanted(&wtxid_raw(&reveal)) {
        return Err(InscribeError::Signing(
            "the ground reveal's wtxid is not the one the grind hashed".to_string(),
        ));
    }
    sign_funding(&secp, &mut commit, funding)?;
    let change = change_sats.map(|amount_sats| Funding {
        outpoint: OutPoint {
            txid: commit.compute_txid(),
            vout: 1,
        },
        amount_sats,
        key: funding.key,
    });
    Ok(Inscription {
        commit,
        reveal,
        nonce,
        tries: attempt + 1,
        change,
    })
}

/// `K`: a key only this build knows, derived from the DA key, the funding outpoint and the body.
fn throwaway_key(
    secp: &Secp256k1<All>,
    da_key: &DaSecretKey,
    funding: &Funding,
    kind: Kind,
    body: &[u8],
) -> Result<Keypair, InscribeError> {
    let key = (0..=u32::MAX).find_map(|counter| {
        let seed: [u8; 32] = Sha256::new()
            .chain_update(b"ledgerd/reveal-key/v1")
            .chain_update(da_key.secret_bytes())
            .chain_update(funding.outpoint.txid.to_byte_array())
            .chain_update(funding.outpoint.vout.to_le_bytes())
            .chain_update(kind.code().to_le_bytes())
            .chain_update(Sha256::digest(body))
            .chain_update(counter.to_le_bytes())
            .finalize()
            .into();
        // A hash is a valid key but for a chance of about 2^-128.
        SecretKey::from_slice(&seed).ok()
    });
    key.map(|sk| Keypair::from_secret_key(secp, &sk))
        .ok_or_else(|| InscribeError::Signing("no valid throwaway key".to_string()))
}

/// The reveal script: the inscription up to `OP_ENDIF`, then `PUSH8 <nonce i64 LE>`, `OP_NIP`.
fn reveal_script(
    reveal_key: XOnlyPublicKey,
    da_key: &DaSecretKey,
    kind: Kind,
    body: &[u8],
    nonce: i64,
) -> Result<ScriptBuf, InscribeError> {
    let mut b = Builder::new()
        .push_x_only_key(&reveal_key)
        .push_opcode(OP_CHECKSIGVERIFY)
        .push_slice(kind.code().to_le_bytes())
        .push_opcode(OP_FALSE)
        .push_opcode(OP_IF);
    if kind.is_signed() {
        b = b
            .push_slice(da_key.sign(body))
            .push_slice(da_key.public_key().as_bytes());
    }
    for piece in body.chunks(MAX_PUSH) {
        let push =
            PushBytesBuf::try_from(piece.to_vec()).map_err(|_| InscribeError::BodyTooLarge {
                kind,
                len: piece.len(),
            })?;
        b = b.push_slice(push);
    }
    Ok(b.push_opcode(OP_ENDIF)
        .push_slice(nonce.to_le_bytes())
        .push_opcode(OP_NIP)
        .into_script())
}

/// The one-leaf taproot of `script` under `K`: its control block, leaf hash and output script.
fn control_block(
    secp: &Secp256k1<All>,
    reveal_key: XOnlyPublicKey,
    script: &ScriptBuf,
) -> (ControlBlock, TapLeafHash, ScriptBuf) {
    let leaf_hash = TapLeafHash::from_script(script, LeafVersion::TapScript);
    let merkle_root = TapNodeHash::from(leaf_hash);
    let (output_key, parity) = reveal_key.tap_tweak(secp, Some(merkle_root));
    let control = ControlBlock {
        leaf_version: LeafVersion::TapScript,
        output_key_parity: parity,
        internal_key: reveal_key,
        merkle_branch: TaprootMerkleBranch::default(),
    };
    (control, leaf_hash, ScriptBuf::new_p2tr_tweaked(output_key))
}

/// A version-2 transaction of one input, `previous_output` (RBF, no lock time).
fn spend(previous_output: OutPoint, witness: Witness, output: Vec<TxOut>) -> Transaction {
    Transaction {
        version: Version::TWO,
        lock_time: LockTime::ZERO,
        input: vec![TxIn {
            previous_output,
            script_sig: ScriptBuf::new(),
            sequence: Sequence::ENABLE_RBF_NO_LOCKTIME,
            witness,
        }],
        output,
    }
}

fn tx_out(sats: u64, script: &ScriptBuf) -> TxOut {
    TxOut {
        value: Amount::from_sat(sats),
        script_pubkey: script.clone(),
    }
}

/// Signs the commit's one input, which spends the funding UTXO.
fn sign_funding(
    secp: &Secp256k1<All>,
    commit: &mut Transaction,
    funding: &Funding,
) -> Result<(), InscribeError> {
    let amount = Amount::from_sat(funding.amount_sats);
    let funding_script = funding.key.script_pubkey();
    let witness = match funding.key {
        FundingKey::P2wpkh(sk) => {
            let sighash = SighashCache::new(&*commit)
                .p2wpkh_signature_hash(0, &funding_script, amount, EcdsaSighashType::All)
                .map_err(|e| InscribeError::Signing(e.to_string()))?;
            let signature = secp.sign_ecdsa(&Message::from_digest(sighash.to_byte_array()), &sk);
            let signature = bitcoin::ecdsa::Signature {
                signature,
                sighash_type: EcdsaSighashType::All,
            };
            Witness::p2wpkh(&signature, &sk.public_key(secp))
        }
        FundingKey::P2tr(sk) => {
            let prevout = tx_out(funding.amount_sats, &funding_script);
            let sighash = SighashCache::new(&*commit)
                .taproot_key_spend_signature_hash(
                    0,
                    &Prevouts::All(&[&prevout]),
                    TapSighashType::Default,
                )
                .map_err(|e| InscribeError::Signing(e.to_string()))?;
            let tweaked = Keypair::from_secret_key(secp, &sk).tap_tweak(secp, None);
            let signature = secp.sign_schnorr_no_aux_rand(
                &Message::from_digest(sighash.to_byte_array()),
                &tweaked.to_keypair(),
            );
            Witness::from_slice(&[signature.as_ref()])
        }
    };
    commit.input[0].witness = witness;
    Ok(())
}
