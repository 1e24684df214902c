#!/usr/bin/env bash
# Measures `dev_mine` on an empty devnet and the reads answered meanwhile.
#
#   scripts/devnet_mine.sh [BLOCKS] [CONNECTIONS] [QUERIES_PER_SECOND_EACH] [RUNS]
#                                                (defaults: 100000, 4, 200, 3)
#
# Builds release, then RUNS times: starts `ledgerd --dev --dev-block-ms 0`
# on an empty data dir, and runs examples/mine_probe.rs against it: reads
# at a steady pace on CONNECTIONS keep-alive connections while one
# `dev_mine BLOCKS` is answered, timed. Prints the mine's time and the
# reads' p50/p99/max for each run. Everything runs on 127.0.0.1 and is
# stopped at the end.
set -euo pipefail

BLOCKS=${1:-100000}
CONNECTIONS=${2:-4}
RATE=${3:-200}
RUNS=${4:-3}
cd "$(dirname "$0")/.."

cargo build --release --quiet --bin ledgerd --example mine_probe
BIN=target/release/ledgerd
PROBE=target/release/examples/mine_probe

WORK=$(mktemp -d /tmp/ledgerd-mine.XXXXXX)
PID=""
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

for run in $(seq 1 "$RUNS"); do
  rm -rf "$WORK/data" "$WORK/out"
  mkfifo "$WORK/out"
  "$BIN" --dev --dev-block-ms 0 --bind 127.0.0.1:0 --data-dir "$WORK/data" >"$WORK/out" 2>"$WORK/log" &
  PID=$!
  exec {fd}<"$WORK/out"
  if ! read -r -t 60 line <&"$fd"; then
    echo "ledgerd did not start:" >&2; cat "$WORK/log" >&2; exit 1
  fi
  URL=${line#listening on }
  echo "run $run ($(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg)):"
  "$PROBE" "$URL" "$BLOCKS" "$CONNECTIONS" "$RATE" | sed 's/^/  /'
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
  exec {fd}<&-
done
