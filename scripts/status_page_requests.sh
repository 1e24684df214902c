#!/usr/bin/env bash
# scripts/status_page_requests.sh: what one refresh of the status page asks
# the node, counted by the node itself (/metrics), while headless Chromium
# keeps the page open on a live devnet (a block a second, a commitment every
# 16 blocks, each proven):
#
#   scripts/status_page_requests.sh                 # target/release/ledgerd
#   LEDGERD_BIN=/other/ledgerd scripts/status_page_requests.sh
#
# Environment: REQ_SECONDS (how long the page is counted, default 60),
# REQ_PREFILL (devnet blocks before the page opens, default 2000). Prints,
# per refresh (one GET /health each): HTTP POSTs, JSON-RPC calls in them,
# and of those the ledger_getSoftConfirmationStatus calls. Needs chromium
# (.ci/install). Everything stays on 127.0.0.1.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${LEDGERD_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/ledgerd}
SECS=${REQ_SECONDS:-60}
PREFILL=${REQ_PREFILL:-2000}
CHROMIUM=/usr/bin/chromium
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ledgerd-page-requests.XXXXXX")
NODE_PID="" PAGE_PID=""

say() { printf '[page-requests %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { say "error: $*"; exit 1; }
cleanup() {
    for pid in $PAGE_PID $NODE_PID; do
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$TMP"
}
trap cleanup EXIT

[[ -x $BIN ]] || die "$BIN is not built (cargo build --release)"
[[ -x $CHROMIUM ]] || die "$CHROMIUM is needed (.ci/install)"
mkfifo "$TMP/out"
"$BIN" --dev --dev-prefill "$PREFILL" --dev-block-ms 1000 --bind 127.0.0.1:0 \
    --data-dir "$TMP/data" >"$TMP/out" 2>"$TMP/err" &
NODE_PID=$!
exec {fd}<"$TMP/out"
read -r -t 600 line <&"$fd" || die "ledgerd printed no listening line"
URL=${line#listening on }

# Sums of the node's counters: /health reads, JSON-RPC POSTs, calls, status calls.
counts() {
    curl -sS "$URL/metrics" | awk '
        /^ledgerd_http_requests_total\{route="health"\}/ { h = $2 }
        /^ledgerd_http_requests_total\{route="rpc"\}/ { p = $2 }
        /^ledgerd_rpc_requests_total\{/ { c += $2 }
        /^ledgerd_rpc_requests_total\{method="ledger_getSoftConfirmationStatus"/ { s += $2 }
        END { printf "%d %d %d %d\n", h, p, c, s }'
}

"$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --user-data-dir="$TMP/profile" "$URL/" >/dev/null 2>&1 &
PAGE_PID=$!
sleep 10 # loaded, past the first refreshes (which also fill the lists)
read -r h0 p0 c0 s0 < <(counts)
sleep "$SECS"
read -r h1 p1 c1 s1 < <(counts)
r=$((h1 - h0))
[[ $r -gt 0 ]] || die "the page did not refresh"
per() { awk -v a="$1" -v r="$r" 'BEGIN { printf "%.1f", a / r }'; }
cat <<REPORT
status page requests ($(date -u +%Y-%m-%dT%H:%MZ), $BIN, devnet $PREFILL blocks + 1 a second, ${SECS}s)
  refreshes:                          $r
  per refresh: JSON-RPC POSTs         $(per $((p1 - p0)))
               JSON-RPC calls         $(per $((c1 - c0)))
               status calls           $(per $((s1 - s0)))
REPORT
