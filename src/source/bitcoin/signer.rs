//! Who published a reveal: the ECDSA signature over SHA-256 of the body, and the signer's key
//! against the network's DA key (Citrea v0.6.2, `crates/bitcoin-da/src/helpers/parsers.rs`
//! `get_sig_verified_hash`, and `builders/mod.rs` `sign_blob_with_private_key`).
//!
//! The signature is 64 bytes, `r || s` big-endian (compact form), over SHA-256 of exactly the
//! bytes the envelope pushed as its body. Only low-S signatures count: Citrea v0.6.2 verifies with
//! k256, whose secp256k1 verifier refuses high-S ones, as libsecp256k1 (used here, through the
//! `bitcoin` crate) does. The high-S case is checked first so that its refusal names the cause.
//!
//! The key is compared byte for byte with the expected 33-byte compressed key, as Citrea does: an
//! uncompressed encoding of the same point is another key here too.
use std::fmt;

use bitcoin::secp256k1::{ecdsa, Message, PublicKey, Secp256k1, SecretKey};
use sha2::{Digest, Sha256};

use crate::source::bitcoin::inscription::Envelope;

/// A DA public key: 33 bytes, a compressed secp256k1 point (`02`/`03` || x).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DaPublicKey([u8; 33]);

impl DaPublicKey {
    /// A key from its 33 bytes; refuses bytes that are not a point on the curve.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, KeyError> {
        let array: [u8; 33] = bytes
            .try_into()
            .map_err(|_| KeyError::Length(bytes.len()))?;
        PublicKey::from_slice(&array).map_err(|_| KeyError::NotOnCurve)?;
        Ok(DaPublicKey(array))
    }

    /// A key from 66 hex digits (an optional `0x` is accepted), as configs and flags write it.
    pub fn from_hex(text: &str) -> Result<Self, KeyError> {
        Self::from_bytes(&key_bytes(text)?)
    }

    pub fn as_bytes(&self) -> &[u8; 33] {
        &self.0
    }
}

impl fmt::Display for DaPublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for DaPublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DaPublicKey({self})")
    }
}

/// A DA private key: signs the bodies a devnet publishes. Its `Debug` does not show the key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DaSecretKey(SecretKey);

impl DaSecretKey {
    /// A key from its 32 bytes; refuses zero and values not below the curve order.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, KeyError> {
        if bytes.len() != 32 {
            return Err(KeyError::Length(bytes.len()));
        }
        SecretKey::from_slice(bytes)
            .map(DaSecretKey)
            .map_err(|_| KeyError::OutOfRange)
    }

    /// A key from 64 hex digits, either case (Citrea's configs write them in upper case).
    pub fn from_hex(text: &str) -> Result<Self, KeyError> {
        Self::from_bytes(&key_bytes(text)?)
    }

    /// The key's public half, compressed.
    pub fn public_key(&self) -> DaPublicKey {
        let secp = Secp256k1::signing_only();
        DaPublicKey(PublicKey::from_secret_key(&secp, &self.0).serialize())
    }

    /// The 32 secret bytes (the devnet derives its throwaway reveal keys from them).
    pub fn secret_bytes(&self) -> [u8; 32] {
        self.0.secret_bytes()
    }

    /// Signs a body as Citrea does: deterministic (RFC 6979) ECDSA over SHA-256 of the body,
    /// compact `r || s`, low-S (libsecp256k1 only makes low-S signatures).
    pub fn sign(&self, body: &[u8]) -> [u8; 64] {
        let secp = Secp256k1::signing_only();
        let message = Message::from_digest(body_digest(body));
        secp.sign_ecdsa(&message, &self.0).serialize_compact()
    }
}

impl fmt::Debug for DaSecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DaSecretKey(public {})", self.public_key())
    }
}

/// A key's hex digits (after an optional `0x`) as bytes.
fn key_bytes(text: &str) -> Result<Vec<u8>, KeyError> {
    hex::decode(text.strip_prefix("0x").unwrap_or(text)).map_err(|_| KeyError::NotHex)
}

/// Why bytes are not a DA key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyError {
    NotHex,
    Length(usize),
    NotOnCurve,
    OutOfRange,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::NotHex => write!(f, "the key is not hex"),
            KeyError::Length(n) => write!(
                f,
                "the key is {n} bytes long; a DA public key is 33 bytes (compressed), a private key 32"
            ),
            KeyError::NotOnCurve => write!(f, "the public key is not a point on secp256k1"),
            KeyError::OutOfRange => {
                write!(f, "the private key is zero or not below secp256k1's group order")
            }
        }
    }
}

impl std::error::Error for KeyError {}

/// Why a reveal's signature does not make it the expected signer's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignatureError {
    /// The envelope has no signature (a chunk part; its aggregate is what is signed).
    Unsigned,
    /// The envelope names another signer.
    OtherSigner {
        found: Vec<u8>,
        expected: DaPublicKey,
    },
    /// The signature push is not 64 bytes.
    Length(usize),
    /// `r` or `s` is not below the group order.
    OutOfRange,
    /// `s` is in the upper half: Citrea refuses these (malleable) signatures.
    HighS,
    /// The signature does not verify over SHA-256 of the body with the signer's key.
    Invalid,
}

impl fmt::Display for SignatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignatureError::Unsigned => write!(f, "the envelope carries no signature"),
            SignatureError::OtherSigner { found, expected } => write!(
                f,
                "it is signed by {}, not by the expected DA key {expected}",
                hex::encode(found)
            ),
            SignatureError::Length(n) => write!(
                f,
                "the signature is {n} bytes long; a compact ECDSA signature is 64"
            ),
            SignatureError::OutOfRange => write!(
                f,
                "the signature's r or s is not below secp256k1's group order"
            ),
            SignatureError::HighS => write!(
                f,
                "the signature is high-S (malleable); only low-S signatures are accepted"
            ),
            SignatureError::Invalid => write!(
                f,
                "the signature does not verify over SHA-256 of the body with the signer's key"
            ),
        }
    }
}

impl std::error::Error for SignatureError {}

/// SHA-256 of a body: what its signature is over.
pub fn body_digest(body: &[u8]) -> [u8; 32] {
    Sha256::digest(body).into()
}

/// Checks that `envelope` is signed by `expected` and its signature verifies over its body.
/// Returns SHA-256 of the body (Citrea keeps it as the blob's hash).
pub fn check_signer(
    envelope: &Envelope,
    expected: &DaPublicKey,
) -> Result<[u8; 32], SignatureError> {
    let signed = envelope.signed.as_ref().ok_or(SignatureError::Unsigned)?;
    if signed.signer.as_slice() != expected.as_bytes() {
        return Err(SignatureError::OtherSigner {
            found: signed.signer.clone(),
            expected: *expected,
        });
    }
    let digest = body_digest(&envelope.body);
    verify(&signed.signature, &digest, expected)?;
    Ok(digest)
}

/// Verifies a 64-byte compact low-S ECDSA signature over a 32-byte digest.
pub fn verify(
    signature: &[u8],
    digest: &[u8; 32],
    key: &DaPublicKey,
) -> Result<(), SignatureError> {
    if signature.len() != 64 {
        return Err(SignatureError::Length(signature.len()));
    }
    let parsed =
        ecdsa::Signature::from_compact(signature).map_err(|_| SignatureError::OutOfRange)?;
    let mut low = parsed;
    low.normalize_s();
    if low != parsed {
        return Err(SignatureError::HighS);
    }
    let point = PublicKey::from_slice(key.as_bytes()).map_err(|_| SignatureError::Invalid)?;
    let secp = Secp256k1::verification_only();
    secp.verify_ecdsa(&Message::from_digest(*digest), &parsed, &point)
        .map_err(|_| SignatureError::Invalid)
}
