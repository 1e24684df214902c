#!/usr/bin/env bash
# Measures `dev_mine` on an empty devnet and the reads answered meanwhile.
#
#   scripts/devnet_mine.sh [BLOCKS] [CONNECTIONS] [QUERIES_PER_SECOND_EACH] [RUNS]
#                                                (defaults: 100000, 4, 200, 3)
#   COMPARE_WITH=/path/to/other/ledgerd scripts/devnet_mine.sh ...
#   EPHEMERAL=1 scripts/devnet_mine.sh ...     (`--ephemeral`: a test harness's
#                                                devnet, no fsync, no data dir kept)
#
# Builds release, then RUNS times: starts `ledgerd --dev --dev-block-ms 0`
# on an empty data dir, and runs examples/mine_probe.rs against it: reads
# at a steady pace on CONNECTIONS keep-alive connections while one
# `dev_mine BLOCKS` is answered, timed. Prints the mine's time and the
# reads' p50/p99/max for each run, the CPU time ledgerd used meanwhile
# (the mine's work, on a busy machine a steadier figure than the wall
# time), and the median of the mine's times.
# With COMPARE_WITH (another build's ledgerd binary, e.g. one built from an
# earlier commit), each run measures that binary and then this build's, in
# turn on the same machine, and prints the median of each. Everything runs
# on 127.0.0.1 and is stopped at the end.
set -euo pipefail

BLOCKS=${1:-100000}
CONNECTIONS=${2:-4}
RATE=${3:-200}
RUNS=${4:-3}
cd "$(dirname "$0")/.."

cargo build --release --quiet --bin ledgerd --example mine_probe
BIN=${CARGO_TARGET_DIR:-target}/release/ledgerd
PROBE=${CARGO_TARGET_DIR:-target}/release/examples/mine_probe
BINS=("$BIN")
if [ -n "${COMPARE_WITH:-}" ]; then
  BINS=("$COMPARE_WITH" "$BIN")
fi

WORK=$(mktemp -d /tmp/ledgerd-mine.XXXXXX)
STORE=(--data-dir "$WORK/data")
if [ -n "${EPHEMERAL:-}" ]; then
  STORE=(--ephemeral)
  export TMPDIR=$WORK # where ledgerd makes (and removes) its data dir
fi
PID=""
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

for run in $(seq 1 "$RUNS"); do
  for i in "${!BINS[@]}"; do
    bin=${BINS[$i]}
    rm -rf "$WORK/data" "$WORK/out"
    mkfifo "$WORK/out"
    "$bin" --dev --dev-block-ms 0 --bind 127.0.0.1:0 "${STORE[@]}" >"$WORK/out" 2>"$WORK/log" &
    PID=$!
    exec {fd}<"$WORK/out"
    if ! read -r -t 60 line <&"$fd"; then
      echo "ledgerd did not start:" >&2; cat "$WORK/log" >&2; exit 1
    fi
    URL=${line#listening on }
    echo "run $run, $bin ($(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg)):"
    ticks() { awk '{ print $14 + $15 }' "/proc/$PID/stat"; }
    before=$(ticks)
    "$PROBE" "$URL" "$BLOCKS" "$CONNECTIONS" "$RATE" | tee "$WORK/probe" | sed 's/^/  /'
    echo "  ledgerd's CPU time meanwhile (all its threads): $(awk -v t=$(( $(ticks) - before )) \
      -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }') s"
    sed -n 's/.*answered after \([0-9.]*\) s.*/\1/p' "$WORK/probe" >>"$WORK/times.$i"
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
    exec {fd}<&-
  done
done
for i in "${!BINS[@]}"; do
  echo "median of $RUNS: dev_mine $BLOCKS answered after $(sort -n "$WORK/times.$i" |
    awk '{ t[NR] = $1 } END { print (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2 }') s (${BINS[$i]})"
done
