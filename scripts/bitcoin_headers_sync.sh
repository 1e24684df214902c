#!/usr/bin/env bash
# Measures a follower's first header sync from a local regtest bitcoind:
# BLOCKS coinbase-only blocks (100,000 by default; made by
# examples/regtest_chain.rs and imported with -loadblock, much faster than
# mining them through RPC), then
# examples/headers_sync_probe.rs reads them RUNS times: the link alone
# (batched getblockhash + getblockheader, decoded, nothing checked) and the
# header path (every header checked by Core's rules and stored in a new
# ledger), headers/s and their ratio; then the same over the P2P protocol
# from bitcoind's P2P port (getheaders rounds alone, and a --bitcoin-peer
# follower's first look: every header checked and stored).
#
#   scripts/bitcoin_headers_sync.sh [BLOCKS] [RUNS]    (defaults 100000, 3)
set -euo pipefail
BLOCKS=${1:-100000}
RUNS=${2:-3}
cd "$(dirname "$0")/.."

BITCOIND=${LEDGERD_BITCOIND:-${LEDGERD_TOOLS_DIR:-$HOME/.cache/ledgerd-tools}/bitcoind-0.4.1/bin/bitcoind}
[ -x "$BITCOIND" ] || { echo "no bitcoind at $BITCOIND: run scripts/bitcoind/build.sh" >&2; exit 1; }
nice -n 5 cargo build --release --quiet --example headers_sync_probe --example regtest_chain

WORK=$(mktemp -d /tmp/ledgerd-headers-sync.XXXXXX)
PID=
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
RPC_PORT=$(port)
P2P_PORT=$(port)
mkdir "$WORK/btc"
${CARGO_TARGET_DIR:-target}/release/examples/regtest_chain "$BLOCKS" "$WORK/blocks.dat"
started=$(date +%s)
# -checkblockindex=0: regtest checks its whole block index after every block by
# default, which makes an import quadratic (20,000 blocks took 167 s with it).
# -maxtipage: the made chain ends days in the past, and a node in initial block
# download ignores getheaders from its peers.
"$BITCOIND" -regtest -checkblockindex=0 -maxtipage=100000000 -listen=1 -bind="127.0.0.1:$P2P_PORT" -server -printtoconsole=0 -datadir="$WORK/btc" \
  -loadblock="$WORK/blocks.dat" \
  -rpcbind=127.0.0.1 -rpcallowip=127.0.0.1 -rpcport="$RPC_PORT" -port="$P2P_PORT" &
PID=$!
BTC=http://127.0.0.1:$RPC_PORT
COOKIE=$WORK/btc/regtest/.cookie
btc() {
  curl -s --user "$(cat "$COOKIE")" -H 'content-type: application/json' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$1\",\"params\":$2}" "$BTC"
}
for _ in $(seq 100); do [ -f "$COOKIE" ] && btc getblockcount '[]' | grep -q '"result"' && break; sleep 0.2; done

while [ "$(btc getblockcount '[]' | sed -n 's/.*"result":\([0-9]*\).*/\1/p')" != "$BLOCKS" ]; do
  sleep 1
  [ $(( $(date +%s) - started )) -lt 3600 ] || { echo "bitcoind did not import $BLOCKS blocks" >&2; exit 1; }
done
echo "bitcoind imported $BLOCKS regtest blocks in $(( $(date +%s) - started )) s"
btc getblockcount '[]'; echo
${CARGO_TARGET_DIR:-target}/release/examples/headers_sync_probe "$BTC" "$COOKIE" "$WORK/ledgers" "$RUNS" "127.0.0.1:$P2P_PORT"
