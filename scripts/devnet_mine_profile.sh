#!/usr/bin/env bash
# Where `dev_mine` spends its time: a perf profile of one mine.
#
#   scripts/devnet_mine_profile.sh [BLOCKS]        (default: 100000)
#   LEDGERD=/path/to/other/ledgerd scripts/devnet_mine_profile.sh ...
#   EPHEMERAL=1 scripts/devnet_mine_profile.sh ...   (`--ephemeral`, no fsync)
#
# Builds release (or takes LEDGERD, another build's binary), starts
# `ledgerd --dev --dev-block-ms 0` on an empty data dir, records
# `perf record -g` of the process while one `dev_mine BLOCKS` is answered,
# and prints: the mine's wall time, the process's CPU time (all threads),
# the CPU time of each thread that is still alive (the sync thread; the
# fetch thread exits with its pass), the share of samples per thread, and
# the share per kind of work (curve25519 arithmetic of signing and checking
# signatures, SHA-2, LMDB, the kernel, the rest) and the top symbols. Needs
# `perf` (Debian's linux-perf) and kernel.perf_event_paranoid <= 1 (or
# root). Everything runs on 127.0.0.1 and is stopped at the end.
set -euo pipefail

BLOCKS=${1:-100000}
cd "$(dirname "$0")/.."

if [ -n "${LEDGERD:-}" ]; then
  BIN=$LEDGERD
else
  cargo build --release --quiet --bin ledgerd
  BIN=${CARGO_TARGET_DIR:-target}/release/ledgerd
fi

WORK=$(mktemp -d /tmp/ledgerd-mine-profile.XXXXXX)
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

mkfifo "$WORK/out"
"$BIN" --dev --dev-block-ms 0 --bind 127.0.0.1:0 "${STORE[@]}" >"$WORK/out" 2>"$WORK/log" &
PID=$!
exec {fd}<"$WORK/out"
if ! read -r -t 60 line <&"$fd"; then
  echo "ledgerd did not start:" >&2; cat "$WORK/log" >&2; exit 1
fi
URL=${line#listening on }

perf record -q -F 999 -g -p "$PID" -o "$WORK/perf.data" 2>/dev/null &
PERF=$!
sleep 0.5
echo "$(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg)"
T=$(curl -sS -o /dev/null -w '%{time_total}' "$URL" \
  -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"dev_mine\",\"params\":[$BLOCKS]}")
echo "dev_mine $BLOCKS: answered after $T s"
awk -v hz="$(getconf CLK_TCK)" '{ printf "  the process, all threads (the exited ones too): %.2f s CPU\n", ($14 + $15) / hz }' "/proc/$PID/stat"
for t in /proc/"$PID"/task/*; do
  awk -v tid="${t##*/}" '{ printf "  thread %s %s: %.2f s CPU\n", tid, $2, ($14 + $15) / 100 }' "$t/stat"
done | sort -t: -k2 -rn | head -3
kill -INT "$PERF"; wait "$PERF" 2>/dev/null || true

REPORT="perf report -i $WORK/perf.data --no-children --stdio -g none"
echo "samples per thread:"
$REPORT -s pid 2>/dev/null | grep '%' | head -4 | sed 's/^/  /'
echo "samples per kind of work:"
$REPORT -s dso,symbol 2>/dev/null | grep '%' | awk '
  { share = $1; sub("%", "", share)
    kind = "other"
    if ($0 ~ /curve25519|subtle::|chain::curve|chain::comb/) kind = "curve25519 (sign and check signatures)"
    else if ($0 ~ /sha2::|sha256|sha512/) kind = "SHA-2 (block hashes, signature hashes)"
    else if ($0 ~ /mdb_/) kind = "LMDB"
    else if ($0 ~ /\[k\]/) kind = "kernel (writes, page faults, scheduling)"
    else if ($0 ~ /memmove|memcpy|malloc|free|realloc/) kind = "memory copies and allocation"
    total[kind] += share }
  END { for (k in total) printf "  %5.1f%%  %s\n", total[k], k }' | sort -rn
echo "top symbols:"
$REPORT -s symbol 2>/dev/null | grep '%' | head -12 | cut -c1-130 | sed 's/^/  /'
