//! Grinding a reveal's wtxid to the namespace prefix: another BIP 340
//! signature of the same sighash per try, the nonces stepping by one point
//! addition, spread over the cores ([`super::inscribe`] builds the rest).

use bitcoin::key::Keypair;
use bitcoin::secp256k1::{All, Message, PublicKey, Scalar, Secp256k1, SecretKey};
use bitcoin::Transaction;
use sha2::{Digest, Sha256};

/// The grind: BIP 340 signatures of `message` by `keypair`, one per try, until the reveal's
/// wtxid (its witness holding the signature) satisfies `wanted`; the first try in order that
/// does, as (try, signature), or `None` after `max_tries`; the error is why signing failed.
///
/// A signature is (R, s) with R = \[k\]G of even y, e = H_BIP0340/challenge(R.x || P.x || m) and
/// s = k + e*d. Try i uses the nonce k = k0 + i (k0 a hash of the key and the message, negated
/// when \[k\]G has odd y), so R steps by one point addition instead of a fresh multiplication;
/// each core takes every n-th try, and the lowest successful try wins whatever the timing, so a
/// build stays reproducible. Only the winning signature ever leaves this function (nonces that
/// differ by a known amount would reveal the key only if two of their signatures were
/// published), and it is checked with libsecp256k1's `verify_schnorr` before it is returned.
/// The wtxid is hashed from a midstate of the bytes before the signature.
pub(super) fn grind(
    secp: &Secp256k1<All>,
    keypair: &Keypair,
    message: &Message,
    reveal: &Transaction,
    max_tries: u64,
    wanted: &(impl Fn(&[u8; 32]) -> bool + Sync),
) -> Result<Option<(u64, [u8; 64])>, String> {
    let fail = |what: &str| format!("cannot grind the reveal: {what}");
    let (key_x, parity) = keypair.x_only_public_key();
    let d = match parity {
        bitcoin::secp256k1::Parity::Even => keypair.secret_key(),
        bitcoin::secp256k1::Parity::Odd => keypair.secret_key().negate(),
    };
    let k0_bytes: [u8; 32] = Sha256::new()
        .chain_update(b"ledgerd/reveal-grind-nonce/v1")
        .chain_update(d.secret_bytes())
        .chain_update(message.as_ref())
        .finalize()
        .into();
    let k0 = SecretKey::from_slice(&k0_bytes).map_err(|_| fail("the nonce hash is not a key"))?;

    // The reveal's bytes as its wtxid hashes them; the placeholder signature sits right after
    // the non-witness part less its lock time, the marker and flag, and the two length bytes.
    let mut bytes = bitcoin::consensus::serialize(reveal);
    let at = reveal.base_size();
    if bytes.len() < at + 64 || bytes[at - 2] != 3 || bytes[at - 1] != 64 {
        return Err(fail(
            "the placeholder signature is not where it was expected",
        ));
    }
    let suffix = bytes.split_off(at + 64);
    let midstate = Sha256::new().chain_update(&bytes[..at]);
    let tag = Sha256::digest(b"BIP0340/challenge");
    let challenge = Sha256::new().chain_update(tag).chain_update(tag);

    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8) as u64;
    let best = std::sync::atomic::AtomicU64::new(u64::MAX);
    let step = scalar(threads).map_err(|_| fail("the thread count is not a scalar"))?;
    let step_point = PublicKey::from_secret_key(
        secp,
        &SecretKey::from_slice(&step.to_be_bytes()).map_err(|_| fail("no step key"))?,
    );
    let search = |first: u64| -> Result<Option<(u64, [u8; 64])>, String> {
        let offset = scalar(first).map_err(|_| fail("the first try is not a scalar"))?;
        let mut k = if first == 0 {
            k0
        } else {
            k0.add_tweak(&offset).map_err(|_| fail("a nonce is zero"))?
        };
        let mut r = PublicKey::from_secret_key(secp, &k);
        let mut attempt = first;
        while attempt < max_tries && attempt <= best.load(std::sync::atomic::Ordering::Relaxed) {
            let point = r.serialize();
            let r_x: [u8; 32] = point[1..].try_into().map_err(|_| fail("a point's x"))?;
            let e: [u8; 32] = challenge
                .clone()
                .chain_update(r_x)
                .chain_update(key_x.serialize())
                .chain_update(message.as_ref())
                .finalize()
                .into();
            // R must have even y: an odd one is negated, with its nonce.
            let k_used = if point[0] == 0x03 { k.negate() } else { k };
            // e at or above the group order, or a zero product, has a chance of about 2^-128.
            let s = Scalar::from_be_bytes(e)
                .ok()
                .and_then(|e| d.mul_tweak(&e).ok())
                .and_then(|de| de.add_tweak(&Scalar::from(k_used)).ok());
            if let Some(s) = s {
                let mut signature = [0u8; 64];
                signature[..32].copy_from_slice(&r_x);
                signature[32..].copy_from_slice(&s.secret_bytes());
                let once: [u8; 32] = midstate
                    .clone()
                    .chain_update(signature)
                    .chain_update(&suffix)
                    .finalize()
                    .into();
                let wtxid: [u8; 32] = Sha256::digest(once).into();
                if wanted(&wtxid) {
                    best.fetch_min(attempt, std::sync::atomic::Ordering::Relaxed);
                    return Ok(Some((attempt, signature)));
                }
            }
            attempt += threads;
            r = r
                .combine(&step_point)
                .map_err(|_| fail("a nonce point is infinity"))?;
            k = k.add_tweak(&step).map_err(|_| fail("a nonce is zero"))?;
        }
        Ok(None)
    };
    let found = std::thread::scope(|scope| {
        let workers: Vec<_> = (1..threads)
            .map(|t| scope.spawn(move || search(t)))
            .collect();
        let mut found = vec![search(0)];
        found.extend(workers.into_iter().map(|w| {
            w.join()
                .unwrap_or_else(|_| Err(fail("a grinding thread panicked")))
        }));
        found
    });
    let found = found.into_iter().collect::<Result<Vec<_>, _>>()?;
    let winner = found
        .into_iter()
        .flatten()
        .min_by_key(|(attempt, _)| *attempt);
    if let Some((_, signature)) = &winner {
        let sig = bitcoin::secp256k1::schnorr::Signature::from_slice(signature)
            .map_err(|_| fail("the signature does not parse"))?;
        secp.verify_schnorr(&sig, message, &key_x)
            .map_err(|_| fail("the signature made does not verify (a bug)"))?;
    }
    Ok(winner)
}

/// `n` as a scalar (big-endian in the last 8 of 32 bytes).
fn scalar(n: u64) -> Result<Scalar, bitcoin::secp256k1::scalar::OutOfRangeError> {
    let mut b = [0u8; 32];
    b[24..].copy_from_slice(&n.to_be_bytes());
    Scalar::from_be_bytes(b)
}
