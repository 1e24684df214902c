#!/usr/bin/env bash
# Measures `dev_revert` on a devnet of 10,000 blocks.
#
#   scripts/devnet_snapshot.sh [BLOCKS] [RUNS]      (defaults: 10000, 5)
#
# Builds release, starts `ledgerd --dev --ephemeral --dev-block-ms 0` with
# BLOCKS prefilled, and RUNS times in each case times one `dev_revert`
# answer (curl's time_total, HTTP on 127.0.0.1 included):
#
#   small: dev_snapshot at the head, then dev_mine 100, dev_commit,
#          dev_prove; dev_revert takes back those 100 blocks, a commitment
#          and the proofs;
#   whole: on a second node started empty, dev_snapshot at genesis, then
#          dev_mine BLOCKS; dev_revert takes back all BLOCKS blocks.
#
# Prints each time and the median per case. Everything runs on 127.0.0.1
# and is stopped at the end (--ephemeral: the data dirs go with the nodes).
set -euo pipefail

BLOCKS=${1:-10000}
RUNS=${2:-5}
cd "$(dirname "$0")/.."

cargo build --release --quiet --bin ledgerd
BIN=${CARGO_TARGET_DIR:-target}/release/ledgerd

WORK=$(mktemp -d /tmp/ledgerd-snapshot.XXXXXX)
PID=""
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

start() { # PREFILL -> sets URL and PID
  rm -f "$WORK/out"
  mkfifo "$WORK/out"
  "$BIN" --dev --ephemeral --dev-block-ms 0 --dev-prefill "$1" --bind 127.0.0.1:0 >"$WORK/out" 2>"$WORK/log" &
  PID=$!
  exec {fd}<"$WORK/out"
  if ! read -r -t 120 line <&"$fd"; then
    echo "ledgerd did not start:" >&2; cat "$WORK/log" >&2; exit 1
  fi
  URL=${line#listening on }
}

stop() {
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
  exec {fd}<&-
}

rpc() { # METHOD PARAMS -> the answer
  curl -sS "$URL" -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$1\",\"params\":$2}"
}

id_of() { sed -n 's/.*"result":\([0-9]*\).*/\1/p'; }

# The time curl took for dev_revert ID (seconds), failing unless it answers true.
timed_revert() {
  local out
  out=$(curl -sS -o "$WORK/answer" -w '%{time_total}' "$URL" \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"dev_revert\",\"params\":[$1]}")
  grep -q '"result":true' "$WORK/answer" || { echo "dev_revert $1: $(cat "$WORK/answer")" >&2; exit 1; }
  echo "$out"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "$(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg)"
start "$BLOCKS"
: >"$WORK/small"
for run in $(seq 1 "$RUNS"); do
  id=$(rpc dev_snapshot '[]' | id_of)
  rpc dev_mine '[100]' >/dev/null
  rpc dev_commit '[]' >/dev/null
  rpc dev_prove '[]' >/dev/null
  t=$(timed_revert "$id")
  head=$(rpc ledger_getHeadSoftConfirmationHeight '[]' | id_of)
  echo "small run $run: dev_revert to $head (100 blocks, a commitment, proofs taken back): $(awk "BEGIN {printf \"%.1f\", $t * 1000}") ms"
  echo "$t" >>"$WORK/small"
done
stop

start 0
: >"$WORK/whole"
for run in $(seq 1 "$RUNS"); do
  id=$(rpc dev_snapshot '[]' | id_of)
  rpc dev_mine "[$BLOCKS]" >/dev/null
  t=$(timed_revert "$id")
  echo "whole run $run: dev_revert of $BLOCKS blocks to genesis: $(awk "BEGIN {printf \"%.1f\", $t * 1000}") ms"
  echo "$t" >>"$WORK/whole"
done
stop

echo "median dev_revert, $BLOCKS-block devnet: $(median <"$WORK/small" | awk '{printf "%.1f", $1 * 1000}') ms (100 blocks back), $(median <"$WORK/whole" | awk '{printf "%.1f", $1 * 1000}') ms ($BLOCKS blocks back)"
