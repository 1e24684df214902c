#!/usr/bin/env bash
# Start-up time and --help, for one or more builds side by side in one run
# (runs alternate between the builds, so the machine's noise falls on each):
#
#   scripts/startup.sh [BIN...]            (default target/release/ledgerd)
#   RUNS=41 BLOCKS=100000 scripts/startup.sh /tmp/before/ledgerd target/release/ledgerd
#
# For each build, the median and the 10th/90th percentile of:
# - help:   `ledgerd --help` from exec to exit (parsing the command line and
#           writing the help);
# - config: `ledgerd config` from exec to exit (the whole configuration,
#           resolved and printed; builds without it are skipped);
# - serve:  `ledgerd serve-readonly --data-dir D` from exec to its
#           `listening on` line, on a ledger of BLOCKS blocks (made once by
#           the first build's devnet): parse, open the ledger, bind, listen;
# - dev:    `ledgerd --dev --dev-block-ms 0` on that ledger (the devnet
#           resumes it) to its `listening on` line;
# and the size of --help's output. Everything on 127.0.0.1, port 0.
set -euo pipefail

RUNS=${RUNS:-21}
BLOCKS=${BLOCKS:-10000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BINS=("$@")
[[ ${#BINS[@]} -gt 0 ]] || BINS=("${CARGO_TARGET_DIR:-$ROOT/target}/release/ledgerd")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

now() { date +%s%N; }

# Milliseconds from exec to the first stdout line; the process is then stopped.
until_listening() {
  local t0 t1 line pid
  t0=$(now)
  coproc NODE { exec "$@" 2>/dev/null; }
  pid=$NODE_PID
  read -r line <&"${NODE[0]}" || true
  t1=$(now)
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  [[ $line == "listening on "* ]] || { echo "did not start: $*" >&2; exit 1; }
  echo $(( (t1 - t0) / 1000 ))
}

# Microseconds from exec to exit.
to_exit() {
  local t0 t1
  t0=$(now)
  "$@" >/dev/null 2>&1
  t1=$(now)
  echo $(( (t1 - t0) / 1000 ))
}

# median p10 p90 of the numbers on stdin (microseconds), in ms.
stats() {
  sort -n | awk '{a[NR]=$1} END {
    m=a[int((NR+1)/2)]; lo=a[int(NR*0.1)+1]; hi=a[int(NR*0.9)];
    printf "%7.2f ms (p10 %.2f, p90 %.2f)", m/1000, lo/1000, hi/1000 }'
}

echo "making a ledger of $BLOCKS blocks..."
LEDGER=$WORK/ledger
until_listening "${BINS[0]}" --dev --dev-prefill "$BLOCKS" --dev-block-ms 0 \
  --bind 127.0.0.1:0 --data-dir "$LEDGER" >/dev/null

for i in "${!BINS[@]}"; do
  : >"$WORK/help.$i"; : >"$WORK/config.$i"; : >"$WORK/serve.$i"; : >"$WORK/dev.$i"
done
for _ in $(seq "$RUNS"); do
  for i in "${!BINS[@]}"; do
    bin=${BINS[$i]}
    to_exit "$bin" --help >>"$WORK/help.$i"
    if "$bin" config >/dev/null 2>&1; then to_exit "$bin" config >>"$WORK/config.$i"; fi
    until_listening "$bin" serve-readonly --bind 127.0.0.1:0 --data-dir "$LEDGER" >>"$WORK/serve.$i"
    until_listening "$bin" --dev --dev-block-ms 0 --bind 127.0.0.1:0 --data-dir "$LEDGER" >>"$WORK/dev.$i"
  done
done

echo "$RUNS runs each, ledger of $BLOCKS blocks; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in "${!BINS[@]}"; do
  bin=${BINS[$i]}
  echo "$bin"
  echo "  help:   $(stats <"$WORK/help.$i")   $("$bin" --help | wc -l) lines, $("$bin" --help | wc -c) bytes"
  [[ -s $WORK/config.$i ]] && echo "  config: $(stats <"$WORK/config.$i")"
  echo "  serve:  $(stats <"$WORK/serve.$i")"
  echo "  dev:    $(stats <"$WORK/dev.$i")"
done
