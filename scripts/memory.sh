#!/usr/bin/env bash
# Measures how much anonymous memory (RssAnon in /proc/PID/status: the
# heap, thread stacks, allocator arenas; not the LMDB map, which is file
# pages the kernel can drop) each kind of ledgerd process holds, on one
# ledger of BLOCKS blocks:
#
#   scripts/memory.sh [BLOCKS]                  (default 1000000)
#   BIN=/tmp/old/ledgerd scripts/memory.sh      (another build, to compare)
#   SECS=5 CONNS=64 scripts/memory.sh           (length and width of each load)
#   FOLLOWER=0 scripts/memory.sh                (steps 1 and 2 only)
#   (the build is run in CARGO_TARGET_DIR when it is set)
#
# 1. a devnet running `--dev-prefill BLOCKS`: peak while it prefills, then
#    idle, then the peak while wrk asks it ledger_getSoftConfirmationByNumber
#    on CONNS connections (c=64), then idle again;
# 2. a fresh server of the same ledger (no chain source): at start, under the
#    same load, after;
# 3. a follower catching up those BLOCKS from the devnet (restarted on its
#    ledger): peak during the catch-up, idle once both layers read Synced,
#    under the load, after; and the devnet's peak while it served the
#    catch-up.
#
# Every figure is in MB (1 MB = 1024 kB), sampled every 50 ms. Everything
# runs on 127.0.0.1 and is stopped at the end; needs wrk (apt-get install wrk).
set -euo pipefail

BLOCKS=${1:-1000000}
SECS=${SECS:-5}
CONNS=${CONNS:-64}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [[ -z ${BIN:-} ]]; then
  cargo build --release --quiet --bin ledgerd
  BIN=$(realpath -m "${CARGO_TARGET_DIR:-target}")/release/ledgerd
fi
command -v wrk >/dev/null || { echo "wrk is needed (apt-get install wrk)" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ledgerd-memory.XXXXXX")
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# RssAnon of PID in kB (0 once it is gone).
anon() { awk '/^RssAnon:/ { print $2; f = 1 } END { if (!f) print 0 }' "/proc/$1/status" 2>/dev/null || echo 0; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# sample PID FILE: appends RssAnon every 50 ms until killed; its pid in SAMPLER.
sample() {
  ( while kill -0 "$1" 2>/dev/null; do anon "$1" >>"$2"; sleep 0.05; done ) &
  SAMPLER=$!
}
# peak FILE: the largest sample, in MB.
peak() { mb "$(sort -n "$1" | tail -1)"; }

# start NAME ARGS...: starts ledgerd, sampling from its first moment into
# WORK/NAME.rss; waits for its listening line; sets URL, PID, SAMPLER.
start() {
  local name=$1; shift
  mkfifo "$WORK/$name.fifo"
  "$BIN" "$@" --bind 127.0.0.1:0 >"$WORK/$name.fifo" 2>"$WORK/$name.log" &
  PID=$!
  PIDS+=("$PID")
  : >"$WORK/$name.rss"
  sample "$PID" "$WORK/$name.rss"
  exec {fd}<"$WORK/$name.fifo"
  local line
  if ! read -r -t 900 line <&"$fd"; then
    echo "$name did not start:" >&2; tail -5 "$WORK/$name.log" >&2; exit 1
  fi
  URL=${line#listening on }
}

stop() { kill "$1"; wait "$1" 2>/dev/null || true; }

rpc() {
  curl -sS --max-time 10 -H 'Content-Type: application/json' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$2\",\"params\":[]}" "$1"
}

# load NAME URL PID: CONNS connections for SECS seconds; prints the peak
# RssAnon during the load and the RssAnon 1 s after it.
load() {
  local name=$1 url=$2 pid=$3
  : >"$WORK/$name.load.rss"
  sample "$pid" "$WORK/$name.load.rss"
  local s=$SAMPLER
  wrk -t1 -c"$CONNS" -d"${SECS}s" --timeout 5s -s scripts/bench/rpc.lua "$url" -- by_number "$BLOCKS" \
    | awk '/Requests\/sec/ { printf "(%s req/s) ", $2 }'
  kill "$s"
  sleep 1
  echo "peak $(peak "$WORK/$name.load.rss") MB during c=$CONNS, $(mb "$(anon "$pid")") MB after"
}

echo "binary: $BIN; ledger of $BLOCKS blocks; RssAnon in MB"

# 1. The devnet prefill.
t0=$EPOCHREALTIME
start devnet --dev --dev-prefill "$BLOCKS" --dev-block-ms 0 --data-dir "$WORK/ledger"
DEV=$PID
kill "$SAMPLER"
prefill_peak=$(peak "$WORK/devnet.rss")
sleep 1
echo "devnet --dev-prefill $BLOCKS: $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a - 1 }') s;" \
  "peak $prefill_peak MB while prefilling, $(mb "$(anon "$DEV")") MB idle after"
echo "  devnet serving: $(load devnet "$URL" "$DEV")"
stop "$DEV"

# 2. A fresh server of the same ledger.
start fresh --data-dir "$WORK/ledger"
FRESH=$PID
kill "$SAMPLER"
sleep 1
echo "fresh server: $(mb "$(anon "$FRESH")") MB at start"
echo "  fresh server serving: $(load fresh "$URL" "$FRESH")"
stop "$FRESH"

[[ ${FOLLOWER:-1} == 0 ]] && exit 0

# 3. A follower catching up the whole ledger.
start upstream --dev --dev-block-ms 0 --data-dir "$WORK/ledger"
UP=$PID
UP_URL=$URL
: >"$WORK/upstream.serve.rss"
kill "$SAMPLER"
sample "$UP" "$WORK/upstream.serve.rss"
UP_SAMPLER=$SAMPLER
t0=$EPOCHREALTIME
start follower --upstream "$UP_URL" --data-dir "$WORK/follower"
FOL=$PID
FOL_URL=$URL
deadline=$((SECONDS + 900))
until rpc "$FOL_URL" svc_syncStatus | grep -q "\"l2Status\":{\"Synced\":$BLOCKS}" &&
  ! rpc "$FOL_URL" svc_syncStatus | grep -q Syncing; do
  ((SECONDS < deadline)) || { echo "the follower did not catch up in 900 s" >&2; exit 1; }
  sleep 0.2
done
t1=$EPOCHREALTIME
kill "$SAMPLER" "$UP_SAMPLER"
sleep 1
echo "follower catch-up of $BLOCKS blocks: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s;" \
  "peak $(peak "$WORK/follower.rss") MB while catching up (upstream devnet: peak $(peak "$WORK/upstream.serve.rss") MB)," \
  "$(mb "$(anon "$FOL")") MB idle after"
echo "  follower serving: $(load follower "$FOL_URL" "$FOL")"
stop "$FOL"
stop "$UP"
