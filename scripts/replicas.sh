#!/usr/bin/env bash
# Throughput of 1 vs 2 read-only replicas (`ledgerd serve-readonly`) on one
# host, sharing one port with SO_REUSEPORT, while a devnet writer keeps
# writing the same LMDB ledger.
#
#   scripts/replicas.sh            # 10 s per run, 16 connections
#   DURATION=5s CONNS=32 scripts/replicas.sh
#
# Load: wrk (Debian's `wrk` package), 127.0.0.1 only, bounded runs; each
# request is ledger_getSoftConfirmationByNumber at a random stored height.
set -euo pipefail

DURATION=${DURATION:-10s}
CONNS=${CONNS:-16}
THREADS=${THREADS:-2}
PREFILL=${PREFILL:-5000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/ledgerd}

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
[ -x "$BIN" ] || (cd "$ROOT" && cargo build --release --quiet)

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# Starts `ledgerd ARGS` in the background; sets URL once it listens.
# (Not called as $(start ..): the pid must be recorded in this shell.)
start() {
    local out="$WORK/out.$RANDOM"
    mkfifo "$out"
    "$BIN" "$@" >"$out" 2>>"$WORK/stderr" &
    PIDS+=("$!")
    local line
    read -r line <"$out"
    # Keep the pipe drained (ledgerd prints nothing else on stdout).
    cat "$out" >/dev/null &
    URL=${line#listening on }
}

DATA="$WORK/ledger"
start --dev --dev-prefill "$PREFILL" --dev-block-ms 1000 --bind 127.0.0.1:0 --data-dir "$DATA"
echo "writer: $URL (devnet, $PREFILL blocks, then one a second)"

cat >"$WORK/random.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
math.randomseed(os.time())
request = function()
  local h = math.random(1, $PREFILL)
  return wrk.format(nil, "/", nil,
    '{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationByNumber","params":[' .. h .. ']}')
end
LUA

measure() { # URL -> req/s
    wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" -s "$WORK/random.lua" "$1" >"$WORK/wrk.txt"
    grep -q "Non-2xx" "$WORK/wrk.txt" && { cat "$WORK/wrk.txt" >&2; echo "non-2xx answers" >&2; exit 1; }
    awk '/Requests\/sec/ {print $2}' "$WORK/wrk.txt"
}

start serve-readonly --reuse-port --bind 127.0.0.1:0 --data-dir "$DATA"
ONE=$URL
PORT=${ONE##*:}
curl -s "$ONE" -d '{"jsonrpc":"2.0","id":1,"method":"ledger_getHeadSoftConfirmationHeight","params":[]}' >/dev/null
R1=$(measure "$ONE")
echo "1 replica  on port $PORT: $R1 req/s"

start serve-readonly --reuse-port --bind "127.0.0.1:$PORT" --data-dir "$DATA"
R2=$(measure "$ONE")
echo "2 replicas on port $PORT: $R2 req/s (SO_REUSEPORT)"
awk -v a="$R1" -v b="$R2" 'BEGIN { printf "ratio 2/1: %.2f  (wrk -t%s -c%s -d%s, %d cores)\n", b / a, "'"$THREADS"'", "'"$CONNS"'", "'"$DURATION"'", '"$(nproc)"' }'
