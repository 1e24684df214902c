#!/usr/bin/env python3
"""Writes tests/data/chain_vectors.json: test vectors for ledgerd's chain rules,
made without any of ledgerd's Rust code.

Only Python's standard library is used: hashlib for SHA-256 / SHA-512, and
an Ed25519 written out below from RFC 8032 (section 5.1). Every key comes
from a fixed seed, so running this again writes the same file byte for byte:

    python3 scripts/vectors/make_vectors.py            # (re)writes the file
    python3 scripts/vectors/make_vectors.py --check    # exit 1 if it differs

What the file holds:
- softConfirmations: a chain of eight blocks in the RPC's JSON shape, heights
  1-4 under the Genesis rules and 5-8 under the Kumquat rules
  (kumquatHeight 5), each with the fork it was made by and the exact bytes
  the sequencer signed (signedMessage). Height 2 and 6 carry txs and deposits,
  height 3 and 7 an empty deposit blob (borsh writes its length, 0; Kumquat
  writes nothing), height 4 and 8 an l1FeeRate above 2^64.
- merkle: roots over 1..7 leaves.
- ed25519_rfc8032_test1: RFC 8032's TEST 1, which this Ed25519 reproduces
  (checked on every run).

The rules (Citrea v0.6):
- Kumquat: hash = SHA-256(l2Height u64 BE || daSlotHeight u64 BE ||
  daSlotHash || daSlotTxsCommitment || each tx blob || each deposit blob ||
  l1FeeRate u128 BE || timestamp u64 BE); the signature is over the hash.
- Genesis: message = borsh(l2Height u64, daSlotHeight u64, daSlotHash [32],
  daSlotTxsCommitment [32], txs Vec<Vec<u8>>, depositData Vec<Vec<u8>>,
  l1FeeRate u128, timestamp u64), integers little-endian, every Vec and
  every blob prefixed by its length as u32 LE; hash = SHA-256(message); the
  signature is over the message itself.
- prevHash links each block to the hash of the one below (zeros for height 1);
  prevHash and stateRoot are not hashed.
- Merkle root: leaves as they are, parent = SHA-256(left || right), an odd
  last node moves up unchanged, one leaf is its own root.
"""

import hashlib
import json
import os
import sys

# ----------------------------------------------------------------- Ed25519
# Curve: -x^2 + y^2 = 1 + d x^2 y^2 over GF(p), p = 2^255 - 19.

P = 2**255 - 19
ORDER = 2**252 + 27742317777372353535851937790883648493  # the group order, "L"
D = (-121665 * pow(121666, P - 2, P)) % P
SQRT_MINUS_ONE = pow(2, (P - 1) // 4, P)


def field_inverse(v):
    return pow(v, P - 2, P)


def recover_x(y, sign):
    """The x with x's low bit == sign on the curve at y, or None."""
    if y >= P:
        return None
    u = (y * y - 1) * field_inverse(D * y * y + 1) % P
    if u == 0:
        return None if sign else 0
    # p = 5 (mod 8): a square root candidate is u^((p+3)/8).
    x = pow(u, (P + 3) // 8, P)
    if (x * x - u) % P != 0:
        x = x * SQRT_MINUS_ONE % P
    if (x * x - u) % P != 0:
        return None
    if x & 1 != sign:
        x = P - x
    return x


# Points are kept in extended coordinates (X, Y, Z, T) with x = X/Z,
# y = Y/Z and x*y = T/Z.
BASE_Y = 4 * field_inverse(5) % P
BASE_X = recover_x(BASE_Y, 0)
BASE = (BASE_X, BASE_Y, 1, BASE_X * BASE_Y % P)
IDENTITY = (0, 1, 1, 0)


def add(p1, p2):
    x1, y1, z1, t1 = p1
    x2, y2, z2, t2 = p2
    a = (y1 - x1) * (y2 - x2) % P
    b = (y1 + x1) * (y2 + x2) % P
    c = 2 * D * t1 * t2 % P
    dd = 2 * z1 * z2 % P
    e, f, g, h = b - a, dd - c, dd + c, b + a
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def multiply(scalar, point):
    result = IDENTITY
    while scalar > 0:
        if scalar & 1:
            result = add(result, point)
        point = add(point, point)
        scalar >>= 1
    return result


def same_point(p1, p2):
    x1, y1, z1, _ = p1
    x2, y2, z2, _ = p2
    return (x1 * z2 - x2 * z1) % P == 0 and (y1 * z2 - y2 * z1) % P == 0


def encode_point(point):
    x, y, z, _ = point
    zi = field_inverse(z)
    x, y = x * zi % P, y * zi % P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def decode_point(data):
    if len(data) != 32:
        return None
    n = int.from_bytes(data, "little")
    sign = n >> 255
    y = n & ((1 << 255) - 1)
    x = recover_x(y, sign)
    if x is None:
        return None
    return (x, y, 1, x * y % P)


def sha512_int(*parts):
    return int.from_bytes(hashlib.sha512(b"".join(parts)).digest(), "little")


def expand_secret(secret):
    """RFC 8032 5.1.5: the secret scalar (clamped) and the nonce prefix."""
    h = hashlib.sha512(secret).digest()
    a = int.from_bytes(h[:32], "little")
    a &= (1 << 254) - 8  # clear the low three bits and bit 255
    a |= 1 << 254  # set bit 254
    return a, h[32:]


def public_key(secret):
    a, _ = expand_secret(secret)
    return encode_point(multiply(a, BASE))


def sign(secret, message):
    a, prefix = expand_secret(secret)
    pub = encode_point(multiply(a, BASE))
    r = sha512_int(prefix, message) % ORDER
    big_r = encode_point(multiply(r, BASE))
    k = sha512_int(big_r, pub, message) % ORDER
    s = (r + k * a) % ORDER
    return big_r + s.to_bytes(32, "little")


def verify(pub, message, signature):
    """Cofactorless check [S]B == R + [k]A (enough to check our own output)."""
    if len(signature) != 64:
        return False
    a_point = decode_point(pub)
    r_point = decode_point(signature[:32])
    s = int.from_bytes(signature[32:], "little")
    if a_point is None or r_point is None or s >= ORDER:
        return False
    k = sha512_int(signature[:32], pub, message) % ORDER
    return same_point(multiply(s, BASE), add(r_point, multiply(k, a_point)))


# ------------------------------------------------------------- chain rules


def sha256(data):
    return hashlib.sha256(data).digest()


def kumquat_hash(b):
    h = hashlib.sha256()
    h.update(b["l2Height"].to_bytes(8, "big"))
    h.update(b["daSlotHeight"].to_bytes(8, "big"))
    h.update(bytes.fromhex(b["daSlotHash"]))
    h.update(bytes.fromhex(b["daSlotTxsCommitment"]))
    for blob in b["txs"] + b["depositData"]:
        h.update(bytes.fromhex(blob))
    h.update(b["l1FeeRate"].to_bytes(16, "big"))
    h.update(b["timestamp"].to_bytes(8, "big"))
    return h.digest()


def borsh_blob_list(blobs):
    out = len(blobs).to_bytes(4, "little")
    for blob in blobs:
        raw = bytes.fromhex(blob)
        out += len(raw).to_bytes(4, "little") + raw
    return out


def genesis_message(b):
    return (
        b["l2Height"].to_bytes(8, "little")
        + b["daSlotHeight"].to_bytes(8, "little")
        + bytes.fromhex(b["daSlotHash"])
        + bytes.fromhex(b["daSlotTxsCommitment"])
        + borsh_blob_list(b["txs"])
        + borsh_blob_list(b["depositData"])
        + b["l1FeeRate"].to_bytes(16, "little")
        + b["timestamp"].to_bytes(8, "little")
    )


def merkle_root(leaves):
    level = list(leaves)
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level), 2):
            if i + 1 < len(level):
                nxt.append(sha256(level[i] + level[i + 1]))
            else:
                nxt.append(level[i])
        level = nxt
    return level[0]


# ------------------------------------------------------------------ output


def derive(label, n=0):
    return sha256(b"ledgerd-chain-vectors/" + label.encode() + n.to_bytes(8, "big"))


KUMQUAT_HEIGHT = 5
SEQUENCER_SECRET = derive("sequencer")


def make_block(height, prev_hash, prev_root):
    fork = "Genesis" if height < KUMQUAT_HEIGHT else "Kumquat"
    slot = 45496 + (height - 1) // 2
    txs, deposits = [], []
    if height % 4 == 2:  # heights 2 and 6: transactions and deposits
        txs = [derive("tx", height * 10 + i)[: 20 + 7 * i].hex() for i in range(3)]
        deposits = [derive("deposit", height).hex() + "00ff"]
    if height % 4 == 3:  # heights 3 and 7: an empty deposit blob and one tx
        txs = [derive("tx", height * 10)[:5].hex()]
        deposits = [""]
    fee = 2_500_000_000 + height
    if height % 4 == 0:  # heights 4 and 8: a fee that needs more than 64 bits
        fee = 2**64 + 12345 * height
    b = {
        "l2Height": height,
        "daSlotHeight": slot,
        "daSlotHash": derive("slot", slot).hex(),
        "daSlotTxsCommitment": derive("slot-txs", slot).hex(),
        "hash": None,
        "prevHash": prev_hash.hex(),
        "txs": txs,
        "stateRoot": None,
        "softConfirmationSignature": None,
        "pubKey": public_key(SEQUENCER_SECRET).hex(),
        "depositData": deposits,
        "l1FeeRate": fee,
        "timestamp": 1_726_584_750 + 3 * height,
    }
    if fork == "Genesis":
        message = genesis_message(b)
        block_hash = sha256(message)
    else:
        block_hash = kumquat_hash(b)
        message = block_hash
    b["hash"] = block_hash.hex()
    state_root = sha256(prev_root + block_hash)
    b["stateRoot"] = state_root.hex()
    signature = sign(SEQUENCER_SECRET, message)
    assert verify(bytes.fromhex(b["pubKey"]), message, signature)
    b["softConfirmationSignature"] = signature.hex()
    return {"fork": fork, "signedMessage": message.hex(), "block": b}, block_hash, state_root


RFC8032_TEST1 = {
    "secretKey": "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
    "publicKey": "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
    "message": "",
    "signature": "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065"
    "224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
}


def check_rfc8032():
    secret = bytes.fromhex(RFC8032_TEST1["secretKey"])
    pub = public_key(secret)
    sig = sign(secret, b"")
    assert pub.hex() == RFC8032_TEST1["publicKey"], "Ed25519 public key differs from RFC 8032"
    assert sig.hex() == RFC8032_TEST1["signature"], "Ed25519 signature differs from RFC 8032"
    assert verify(pub, b"", sig)
    assert not verify(pub, b"x", sig)


def build():
    check_rfc8032()
    blocks = []
    prev_hash, prev_root = bytes(32), derive("genesis-state-root")
    for height in range(1, 9):
        entry, prev_hash, prev_root = make_block(height, prev_hash, prev_root)
        blocks.append(entry)
    merkle = []
    for n in range(1, 8):
        leaves = [derive("leaf", i) for i in range(n)]
        merkle.append({"leaves": [x.hex() for x in leaves], "root": merkle_root(leaves).hex()})
    return {
        "about": (
            "Made by scripts/vectors/make_vectors.py with Python's hashlib and a pure-Python "
            "RFC 8032 Ed25519, independently of src/chain; do not edit by hand, run the script. "
            "softConfirmations: heights 1-4 by the Genesis rules, 5-8 by the Kumquat rules "
            "(kumquatHeight 5), one chain; signedMessage is what the signature is over "
            "(Genesis: the borsh message whose SHA-256 is the hash; Kumquat: the hash)."
        ),
        "kumquatHeight": KUMQUAT_HEIGHT,
        "genesisStateRoot": derive("genesis-state-root").hex(),
        "softConfirmations": blocks,
        "merkle": merkle,
        "ed25519_rfc8032_test1": {k: v for k, v in RFC8032_TEST1.items() if k != "secretKey"},
    }


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "tests", "data", "chain_vectors.json")
    text = json.dumps(build(), indent=1) + "\n"
    if "--check" in sys.argv[1:]:
        with open(path) as f:
            same = f.read() == text
        print("chain_vectors.json is " + ("up to date" if same else "OUT OF DATE: run the script"))
        sys.exit(0 if same else 1)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    print("wrote " + os.path.normpath(path))


if __name__ == "__main__":
    main()
