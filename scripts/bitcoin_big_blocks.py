#!/usr/bin/env python3
"""Mines mainnet-shaped blocks on a regtest bitcoind, through `submitblock`.

    bitcoin_big_blocks.py URL COOKIE_FILE BLOCKS [TXS_PER_BLOCK]   (default 3000)
    bitcoin_big_blocks.py --script-hex                             (the funding script)
    bitcoin_big_blocks.py --bytes URL COOKIE_FILE FROM TO          (the blocks' bytes in all)

Each block holds TXS_PER_BLOCK transactions of about 500 bytes, half of them
witness (mainnet's shape: ~1.5 MB, ~3,000 transactions): one input spending
P2WSH(OP_DROP OP_TRUE), which needs no signature (its witness is 240 bytes
of filler and the script), and two outputs: the value again to the same
P2WSH, spent by the next transaction (a chain through the block, so the UTXO
set stays small), and a zero-value OP_RETURN of 145 bytes. The first
transaction spends the coinbase of the first block at or after the chain's
height 1 paid to that P2WSH (`generatetodescriptor 101 "raw(<--script-hex>)"`
first), or the chain's own last output. No fee, no signature: the blocks are
valid by consensus, not standard by policy, hence `submitblock`.
"""
import base64
import hashlib
import json
import struct
import sys
import urllib.request

WITNESS_SCRIPT = bytes([0x75, 0x51])  # OP_DROP OP_TRUE
SPK = bytes([0x00, 0x20]) + hashlib.sha256(WITNESS_SCRIPT).digest()
FILLER = bytes(range(240))
OP_RETURN = bytes([0x6A, 0x4C, 145]) + bytes(145)


def sha256d(b):
    return hashlib.sha256(hashlib.sha256(b).digest()).digest()


def varint(n):
    if n < 0xFD:
        return bytes([n])
    if n <= 0xFFFF:
        return b"\xfd" + struct.pack("<H", n)
    return b"\xfe" + struct.pack("<I", n)


def push(b):
    return varint(len(b)) + b


class Rpc:
    def __init__(self, url, cookie):
        self.url = url
        with open(cookie) as f:
            self.auth = base64.b64encode(f.read().strip().encode()).decode()

    def __call__(self, method, *params):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)})
        req = urllib.request.Request(self.url, body.encode(), {"Authorization": "Basic " + self.auth})
        try:
            answer = json.load(urllib.request.urlopen(req, timeout=600))
        except urllib.error.HTTPError as e:
            answer = json.load(e)
        if answer.get("error"):
            raise SystemExit(f"{method}: {answer['error']}")
        return answer["result"]


def tx(prev_txid, vout, value):
    """(stripped bytes, full bytes) of one chain link."""
    ins = varint(1) + prev_txid + struct.pack("<I", vout) + b"\x00" + struct.pack("<I", 0xFFFFFFFD)
    outs = varint(2) + struct.pack("<q", value) + push(SPK) + struct.pack("<q", 0) + push(OP_RETURN)
    witness = varint(2) + push(FILLER) + push(WITNESS_SCRIPT)
    version, locktime = struct.pack("<i", 2), struct.pack("<I", 0)
    return version + ins + outs + locktime, version + b"\x00\x01" + ins + outs + witness + locktime


def merkle(leaves):
    while len(leaves) > 1:
        if len(leaves) % 2:
            leaves.append(leaves[-1])
        leaves = [sha256d(leaves[i] + leaves[i + 1]) for i in range(0, len(leaves), 2)]
    return leaves[0]


def script_num(n):
    out = b""
    while n:
        out += bytes([n & 0xFF])
        n >>= 8
    if out and out[-1] & 0x80:
        out += b"\x00"
    return out


def coinbase(height, commitment):
    sig = push(script_num(height)) + b"\x01\x2a"
    ins = varint(1) + bytes(32) + b"\xff\xff\xff\xff" + push(sig) + b"\xff\xff\xff\xff"
    subsidy = (50 * 100_000_000) >> (height // 150)
    commit = bytes([0x6A, 0x24, 0xAA, 0x21, 0xA9, 0xED]) + commitment
    outs = varint(2) + struct.pack("<q", subsidy) + push(b"\x51") + struct.pack("<q", 0) + push(commit)
    witness = varint(1) + push(bytes(32))
    version, locktime = struct.pack("<i", 2), struct.pack("<I", 0)
    return version + ins + outs + locktime, version + b"\x00\x01" + ins + outs + witness + locktime


def funding(rpc, tip):
    """The first coinbase paid to SPK, as (txid, vout, value)."""
    for h in range(1, tip + 1):
        block = rpc("getblock", rpc("getblockhash", h), 2)
        cb = block["tx"][0]
        for out in cb["vout"]:
            if out["scriptPubKey"]["hex"] == SPK.hex():
                if tip - h < 100:
                    raise SystemExit(f"the coinbase at {h} matures at {h + 100}, the tip is {tip}")
                return bytes.fromhex(cb["txid"])[::-1], out["n"], round(out["value"] * 100_000_000)
    raise SystemExit(f'no coinbase pays {SPK.hex()}: generatetodescriptor 101 "raw({SPK.hex()})" first')


def main():
    if sys.argv[1:] == ["--script-hex"]:
        print(SPK.hex())
        return
    if sys.argv[1] == "--bytes":
        rpc = Rpc(sys.argv[2], sys.argv[3])
        heights = range(int(sys.argv[4]), int(sys.argv[5]) + 1)
        print(sum(len(rpc("getblock", rpc("getblockhash", h), 0)) // 2 for h in heights))
        return
    rpc = Rpc(sys.argv[1], sys.argv[2])
    blocks = int(sys.argv[3])
    per_block = int(sys.argv[4]) if len(sys.argv) > 4 else 3000
    tip = rpc("getblockcount")
    prev, vout, value = funding(rpc, tip)
    total = 0
    for _ in range(blocks):
        tip_hash = rpc("getbestblockhash")
        header = rpc("getblockheader", tip_hash)
        height = header["height"] + 1
        stripped, full = [], []
        for _ in range(per_block - 1):
            s, f = tx(prev, vout, value)
            stripped.append(s)
            full.append(f)
            prev, vout = sha256d(s), 0
        wroot = merkle([bytes(32)] + [sha256d(f) for f in full])
        cb_s, cb_f = coinbase(height, sha256d(wroot + bytes(32)))
        root = merkle([sha256d(cb_s)] + [sha256d(s) for s in stripped])
        time = header["time"] + 1
        for nonce in range(1 << 32):
            head = (struct.pack("<i", 0x20000000) + bytes.fromhex(tip_hash)[::-1] + root
                    + struct.pack("<III", time, 0x207FFFFF, nonce))
            if int.from_bytes(sha256d(head), "little") < 0x7FFFFF << (8 * (0x20 - 3)):
                break
        raw = head + varint(per_block) + cb_f + b"".join(full)
        result = rpc("submitblock", raw.hex())
        if result is not None:
            raise SystemExit(f"submitblock at {height}: {result}")
        total += len(raw)
    print(f"{blocks} blocks of {per_block} transactions mined, {total / max(blocks, 1) / 1e6:.2f} MB each")


if __name__ == "__main__":
    main()
