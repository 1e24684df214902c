#!/usr/bin/env bash
# Measures a follower catching up a regtest chain that carries Citrea
# transactions, reading its DA layer from a local bitcoind: over its RPC
# (--bitcoin-rpc), or with SOURCE=p2p over Bitcoin's P2P protocol from it as
# the one peer (--bitcoin-peer, no RPC).
#
#   [SOURCE=rpc|p2p] [CITREA_EVERY_BLOCK=1] scripts/bitcoin_catchup.sh [EMPTY_BLOCKS] [QUERIES_PER_SECOND]
#   (defaults: rpc, 5000, 200)
#
# With CITREA_EVERY_BLOCK=1 the EMPTY_BLOCKS blocks in the middle are the
# devnet's own instead, each carrying one of its sequencer commitments (one
# L2 block each, `dev_mine 1` then `dev_commit`): every block scanned holds a
# Citrea reveal to find, check and apply. Making them takes about a second a
# block (each reveal's wtxid is ground to Citrea's prefix).
#
# Builds release; starts a regtest bitcoind (scripts/bitcoind/build.sh's,
# -txindex=1) and a devnet on it (--dev --dev-bitcoin-rpc) that mines 60 L2
# blocks with commitments and proofs published as Citrea reveals; then
# EMPTY_BLOCKS blocks of another miner; then 60 more L2 blocks with their
# commitments and proofs. A follower (--upstream <devnet> --bitcoin-rpc
# <regtest> --bitcoin-finality-depth 1) starts on an empty data dir and
# catches up, while examples/catchup_probe.rs asks it queries at a steady
# rate. Prints the Bitcoin blocks scanned per second (slots from L2 block 1's
# daSlotHeight to the tip, over the time until both layers read Synced), the
# query latencies (p50/p99/max) and the follower's largest RssAnon sampled
# every 100 ms (/proc/PID/status).
#
# CHAIN_DIR=DIR keeps the made chain: the first run with DIR saves bitcoind's
# and the devnet's data dirs there once the chain is made; later runs with
# the same DIR copy them and skip the making (the other arguments must match:
# DIR/made says with which). Every follower starts on an empty data dir.
# BLOCK_TXS=N makes the EMPTY_BLOCKS blocks mainnet-shaped instead: N
# transactions of ~500 bytes each (3,000: ~1.5 MB, half witness), made by
# scripts/bitcoin_big_blocks.py through submitblock (101 blocks paying its
# P2WSH script are mined first, before the devnet starts). Then it also
# prints MB/s, the follower's CPU ms a block (utime+stime, all its threads)
# and, over P2P, downloads a block (bitcoind's bytes sent over the blocks'), and
# the hashing floor on this machine in the same run (examples/block_hash_floor.rs).
# FOLLOWER_BIN=PATH runs the follower from another build (the devnet from this one).
# PEER_NICE=N runs bitcoind, the one peer, at nice N.
# P2P_TRANSPORT=auto|v2|v1 gives the follower --bitcoin-transport (default:
# none, so auto: BIP324's v2 with bitcoind, which speaks it by default).
# PERF_SCHED=FILE records the host's scheduling (`perf sched record -a`)
# while the probe runs.
# PROBE_CONTROL=1 has the probe ask the devnet (idle meanwhile) the same
# queries at the same rate as a control: a ledgerd on the same host at the
# same moment with no catch-up of its own.
set -euo pipefail

EMPTY=${1:-5000}
RATE=${2:-200}
SOURCE=${SOURCE:-rpc}
case "$SOURCE" in rpc|p2p) ;; *) echo "SOURCE is rpc or p2p, not $SOURCE" >&2; exit 2;; esac
cd "$(dirname "$0")/.."

BITCOIND=${LEDGERD_BITCOIND:-${LEDGERD_TOOLS_DIR:-$HOME/.cache/ledgerd-tools}/bitcoind-0.4.1/bin/bitcoind}
[ -x "$BITCOIND" ] || { echo "no bitcoind at $BITCOIND: run scripts/bitcoind/build.sh" >&2; exit 1; }
cargo build --release --quiet --bin ledgerd --example catchup_probe --example block_hash_floor
BIN=${CARGO_TARGET_DIR:-target}/release/ledgerd
PROBE=${CARGO_TARGET_DIR:-target}/release/examples/catchup_probe

WORK=$(mktemp -d /tmp/ledgerd-btc-catchup.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
COOKIE=$WORK/btc/regtest/.cookie
btc() {
  curl -s --user "$(cat "$COOKIE")" -H 'content-type: application/json' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$1\",\"params\":$2}" "$BTC"
}
rpc() { curl -s -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$2\",\"params\":$3}" "$1"; }

# Starts ledgerd with the given args; sets URL from its first stdout line.
start() {
  local name=$1; shift
  mkfifo "$WORK/$name.fifo"
  "$BIN" "$@" --bind 127.0.0.1:0 >"$WORK/$name.fifo" 2>"$WORK/$name.log" &
  PIDS+=($!)
  exec {fd}<"$WORK/$name.fifo"
  local line
  if ! read -r -t 120 line <&"$fd"; then
    echo "$name did not start:" >&2; cat "$WORK/$name.log" >&2; exit 1
  fi
  URL=${line#listening on }
}

# Starts bitcoind and the devnet on $WORK/btc and $WORK/devnet, each on new ports.
start_chain() {
  RPC_PORT=$(port)
  P2P_PORT=$(port)
  if [ "$SOURCE" = p2p ]; then LISTEN=(-listen=1 "-bind=127.0.0.1:$P2P_PORT"); else LISTEN=(-listen=0); fi
  mkdir -p "$WORK/btc"
  rm -f "$WORK/btc/regtest/.cookie" "$WORK/devnet.fifo"
  ${PEER_NICE:+nice -n "$PEER_NICE"} "$BITCOIND" -regtest -checkblockindex=0 -txindex=1 "${LISTEN[@]}" -server -printtoconsole=0 -datadir="$WORK/btc" \
    -rpcbind=127.0.0.1 -rpcallowip=127.0.0.1 -rpcport="$RPC_PORT" -port="$P2P_PORT" &
  PIDS+=($!)
  BTCPID=$!
  BTC=http://127.0.0.1:$RPC_PORT
  for _ in $(seq 100); do [ -f "$COOKIE" ] && btc getblockcount '[]' | grep -q '"result"' && break; sleep 0.2; done
  if [ -n "${BLOCK_TXS:-}" ] && [ "$REUSE" = 0 ] && [ ! -d "$WORK/devnet" ]; then
    btc generatetodescriptor "[101, \"raw($(python3 scripts/bitcoin_big_blocks.py --script-hex))\"]" >/dev/null
  fi
  start devnet --dev --dev-block-ms 0 --dev-bitcoin-rpc "$BTC" --bitcoin-rpc-cookie "$COOKIE" \
    --data-dir "$WORK/devnet"
  DEVNET=$URL
}

MADE="${CITREA_EVERY_BLOCK:-0} $EMPTY${BLOCK_TXS:+ txs $BLOCK_TXS}"
REUSE=0
if [ -n "${CHAIN_DIR:-}" ] && [ -f "$CHAIN_DIR/made" ]; then
  [ "$(cat "$CHAIN_DIR/made")" = "$MADE" ] ||
    { echo "$CHAIN_DIR holds a chain made with ($(cat "$CHAIN_DIR/made")), not ($MADE)" >&2; exit 2; }
  cp -r "$CHAIN_DIR/btc" "$CHAIN_DIR/devnet" "$WORK/"
  REUSE=1
fi
start_chain
if [ "$REUSE" = 0 ]; then
  rpc "$DEVNET" dev_mine '[60]' >/dev/null
  rpc "$DEVNET" dev_commit '[]' >/dev/null
  rpc "$DEVNET" dev_prove '[]' >/dev/null

  if [ "${CITREA_EVERY_BLOCK:-0}" = 1 ]; then
    made=$(date +%s)
    for _ in $(seq "$EMPTY"); do
      rpc "$DEVNET" dev_mine '[1]' >/dev/null
      rpc "$DEVNET" dev_commit '[]' | grep -q foundInL1 || { echo "dev_commit found nothing to commit" >&2; exit 1; }
    done
    echo "$EMPTY blocks, each with a Citrea commitment, made in $(( $(date +%s) - made )) s"
  elif [ -n "${BLOCK_TXS:-}" ]; then
    python3 scripts/bitcoin_big_blocks.py "$BTC" "$COOKIE" "$EMPTY" "$BLOCK_TXS"
  else
    btc generatetodescriptor "[$EMPTY, \"raw(51)\"]" >/dev/null
  fi
  # The devnet's first call after another miner's blocks may fail once.
  # (After BLOCK_TXS's blocks its dev_mine did not return within minutes:
  # the follower scans them up to the tip without more L2 blocks.)
  if [ -z "${BLOCK_TXS:-}" ]; then
    rpc "$DEVNET" dev_mine '[30]' >/dev/null
    rpc "$DEVNET" dev_mine '[30]' >/dev/null
    rpc "$DEVNET" dev_commit '[]' >/dev/null
    rpc "$DEVNET" dev_prove '[]' >/dev/null
  fi
fi
TIP=$(btc getblockcount '[]' | sed 's/.*"result":\([0-9]*\).*/\1/')
FIRST=$(rpc "$DEVNET" ledger_getSoftConfirmationByNumber '[1]' | sed 's/.*"daSlotHeight":\([0-9]*\).*/\1/')
HEAD=$(rpc "$DEVNET" ledger_getHeadSoftConfirmationHeight '[]' | sed 's/.*"result":\([0-9]*\).*/\1/')
SLOTS=$((TIP - FIRST + 1))
if [ -n "${CHAIN_DIR:-}" ] && [ "$REUSE" = 0 ]; then
  # Stopped first so that the copies are whole; started again on the same dirs.
  kill "${PIDS[@]}"; wait "${PIDS[@]}" 2>/dev/null || true
  PIDS=()
  rm -rf "$CHAIN_DIR"; mkdir -p "$CHAIN_DIR"
  cp -r "$WORK/btc" "$WORK/devnet" "$CHAIN_DIR/"
  echo "$MADE" >"$CHAIN_DIR/made"
  echo "chain kept in $CHAIN_DIR"
  start_chain
fi
echo "regtest: tip $TIP; devnet: L2 head $HEAD, its first slot $FIRST: $SLOTS Bitcoin blocks to scan"

if [ "$SOURCE" = p2p ]; then
  DA=(--bitcoin-peer "127.0.0.1:$P2P_PORT" ${P2P_TRANSPORT:+--bitcoin-transport "$P2P_TRANSPORT"})
else
  DA=(--bitcoin-rpc "$BTC" --bitcoin-rpc-cookie "$COOKIE")
fi
BIN=${FOLLOWER_BIN:-$BIN} start follower --upstream "$DEVNET" "${DA[@]}" \
  --bitcoin-finality-depth 1 --data-dir "$WORK/follower"
FOLLOWER=$URL
FPID=${PIDS[-1]}
# The sampler uses bash's builtins only (no awk, no sleep: 20 forks a second
# took the cores from the reads it runs beside), at nice 19.
(
  renice -n 19 "$BASHPID" >/dev/null || true
  exec {never}<> <(:)
  max=0
  while kill -0 "$FPID" 2>/dev/null; do
    kb=0
    while read -r key value _; do
      [ "$key" = RssAnon: ] && kb=$value
    done <"/proc/$FPID/status" 2>/dev/null || true
    [ "$kb" -gt "$max" ] && max=$kb && echo "$max" >"$WORK/rss_max"
    read -r -t 0.1 -u "$never" _ || true
  done
) &
PIDS+=($!)
cpu() { cut -d' ' -f14,15 "/proc/$1/stat" | { read -r u s; echo $((u + s)); }; }
btc_cpu0=$(cpu "$BTCPID")
t0=$(date +%s.%N)
if [ -n "${PERF_SCHED:-}" ]; then
  # Every context switch on the host while the probe runs, for `perf sched timehist -i FILE`.
  perf sched record -a -o "$PERF_SCHED" -- "$PROBE" "$FOLLOWER" "$DEVNET" "$RATE" 300 | tee "$WORK/probe.out"
else
  "$PROBE" "$FOLLOWER" "$DEVNET" "$RATE" 300 | tee "$WORK/probe.out"
fi
t1=$(date +%s.%N)
btc_cpu=$(( $(cpu "$BTCPID") - btc_cpu0 ))
grep -q '^caught up' "$WORK/probe.out" || { echo "the follower did not catch up" >&2; tail "$WORK/follower.log" >&2; exit 1; }
secs=$(sed -n 's/^caught up: .* in \([0-9.]*\) s .*/\1/p' "$WORK/probe.out")
echo "source: $SOURCE"
echo "Bitcoin blocks scanned: $SLOTS in $secs s = $(echo "$SLOTS / $secs" | bc) blocks/s" \
  "(wall time from follower start: $(echo "$t1 - $t0" | bc) s)"
echo "follower RssAnon: max $(cat "$WORK/rss_max" 2>/dev/null || echo '?') kB during catch-up," \
  "$(awk '/RssAnon/ {print $2}' "/proc/$FPID/status") kB after"
if [ -n "${BLOCK_TXS:-}" ]; then
  read -r utime stime < <(cut -d' ' -f14,15 "/proc/$FPID/stat")
  bytes=$(python3 scripts/bitcoin_big_blocks.py --bytes "$BTC" "$COOKIE" "$FIRST" "$TIP")
  if [ "$SOURCE" = p2p ]; then
    sent=$(btc getnettotals '[]' | sed 's/.*"totalbytessent":\([0-9]*\).*/\1/')
    downloads=$(echo "scale=2; $sent / $bytes" | bc)
  else
    # Not counted: bitcoind's RPC keeps no byte count, and the follower's
    # socket reads are recv(2), outside /proc/PID/io's rchar.
    downloads="n/a over RPC"
  fi
  echo "blocks: $(echo "scale=2; $bytes / $SLOTS / 1000000" | bc) MB each on average;" \
    "$(echo "scale=1; $bytes / $secs / 1000000" | bc) MB/s;" \
    "follower CPU $(echo "scale=2; ($utime + $stime) * 1000 / $(getconf CLK_TCK) / $SLOTS" | bc) ms a block;" \
    "downloads a block $downloads;" \
    "bitcoind CPU $(echo "scale=2; $btc_cpu * 1000 / $(getconf CLK_TCK) / $SLOTS" | bc) ms a block"
  "${CARGO_TARGET_DIR:-target}/release/examples/block_hash_floor" "$BTC" "$COOKIE" "$FIRST" "$TIP"
fi
echo "follower statuses: $(rpc "$FOLLOWER" ledger_getSoftConfirmationStatus "[60]") at 60," \
  "the devnet's $(rpc "$DEVNET" ledger_getSoftConfirmationStatus "[60]")"
