#!/usr/bin/env bash
# scripts/status_page_cost.sh: what the status page (GET / in a browser) costs
# the node, in one run:
#
#   scripts/status_page_cost.sh        # about 7 minutes
#
# Environment: COST_SECONDS (each wrk run, default 5), COST_PAIRS (runs with
# and without the page, alternating, default 5), COST_CONNS (wrk connections,
# default 16), COST_MINUTES (how long the page stays open for the memory
# check, default 4), COST_PREFILL (devnet blocks, default 10000).
#
# It builds release, starts `ledgerd --dev` (a block a second, so the page
# has something to follow) on 127.0.0.1 port 0, and prints
# 1. the page's size in bytes;
# 2. by-number req/s (scripts/bench/rpc.lua's by_number workload, as
#    scripts/bench.sh runs it) with no browser, with headless Chromium open on
#    about:blank (the browser's own CPU on this machine, no requests to the
#    node) and with it open on the page, alternating, medians and ratios;
# 3. the node's RssAnon (from /proc) every 30 s while the page stays open,
#    against the node without it before; and the node's own CPU time (from
#    /proc/PID/stat) per minute without the page and with it, no load.
# Needs wrk and chromium (.ci/install installs chromium; wrk is Debian's
# package, as scripts/bench.sh installs it). Everything stays on 127.0.0.1.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SECS=${COST_SECONDS:-5}
PAIRS=${COST_PAIRS:-5}
CONNS=${COST_CONNS:-16}
MINUTES=${COST_MINUTES:-4}
PREFILL=${COST_PREFILL:-10000}
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/ledgerd
CHROMIUM=/usr/bin/chromium
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ledgerd-page-cost.XXXXXX")
NODE_PID="" PAGE_PID=""

say() { printf '[page-cost %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { say "error: $*"; exit 1; }
close_page() {
    if [[ -n $PAGE_PID ]]; then
        kill -TERM "$PAGE_PID" 2>/dev/null || true
        wait "$PAGE_PID" 2>/dev/null || true
        PAGE_PID=""
    fi
}
cleanup() {
    close_page
    if [[ -n $NODE_PID ]]; then
        kill -TERM "$NODE_PID" 2>/dev/null || true
        wait "$NODE_PID" 2>/dev/null || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT

command -v wrk >/dev/null || die "wrk is needed (apt-get install wrk)"
[[ -x $CHROMIUM ]] || die "$CHROMIUM is needed (.ci/install)"
say "building release"
cargo build --release --quiet --bin ledgerd

mkfifo "$TMP/out"
"$BIN" --dev --dev-prefill "$PREFILL" --dev-block-ms 1000 --bind 127.0.0.1:0 \
    --data-dir "$TMP/data" >"$TMP/out" 2>"$TMP/err" &
NODE_PID=$!
exec {fd}<"$TMP/out"
read -r -t 600 line <&"$fd" || die "ledgerd printed no listening line"
URL=${line#listening on }
say "node at $URL (pid $NODE_PID), $PREFILL blocks"

rss() { awk '/^RssAnon:/ { print $2 }' "/proc/$NODE_PID/status"; }
cpu_ms() { awk -v t="$(getconf CLK_TCK)" '{ print ($14 + $15) * 1000 / t }' "/proc/$NODE_PID/stat"; }
open_page() { # [URL]: the page, or another one
    "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --disable-dev-shm-usage --user-data-dir="$TMP/profile-$RANDOM" "${1:-$URL/}" \
        >/dev/null 2>&1 &
    PAGE_PID=$!
    sleep 5 # started, loaded, past the page's first refreshes
}
page_requests() { curl -sS "$URL/metrics" | awk -F' ' '/^ledgerd_http_requests_total\{route="health"\}/ { print $2 }'; }
by_number() { # -> req/s of one wrk run
    wrk -t1 -c"$CONNS" -d"${SECS}s" --timeout 5s -s "$ROOT/scripts/bench/rpc.lua" "$URL" -- by_number "$PREFILL" |
        sed -n 's/^Requests\/sec: *//p'
}
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# 1. size
bytes=$(curl -sS -H 'Accept: text/html' "$URL/" | wc -c)
say "page: $bytes bytes"

# 2. by-number req/s: no browser, a blank browser, the page; alternating
without=() blank=() with=()
for i in $(seq "$PAIRS"); do
    without+=("$(by_number)")
    open_page about:blank
    blank+=("$(by_number)")
    close_page
    open_page
    h0=$(page_requests)
    with+=("$(by_number)")
    h1=$(page_requests)
    close_page
    say "round $i: no browser ${without[-1]}, blank browser ${blank[-1]}, the page ${with[-1]} req/s ($((h1 - h0)) page refreshes during its run)"
done
mw=$(printf '%s\n' "${without[@]}" | median)
mb=$(printf '%s\n' "${blank[@]}" | median)
mp=$(printf '%s\n' "${with[@]}" | median)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# 3. memory and CPU: a minute without the page, then the page open for MINUTES
sleep 5
c0=$(cpu_ms)
sleep 60
c1=$(cpu_ms)
rss_before=$(rss)
open_page
c2=$(cpu_ms)
samples=()
for _ in $(seq $((MINUTES * 2))); do
    samples+=("$(rss)")
    sleep 30
done
samples+=("$(rss)")
c3=$(cpu_ms)
refreshes=$(page_requests)
close_page
idle_cpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.0f", b - a }')
page_cpu=$(awk -v a="$c2" -v b="$c3" -v m="$MINUTES" 'BEGIN { printf "%.0f", (b - a) / m }')

cat <<REPORT
status page cost ($(date -u +%Y-%m-%dT%H:%MZ), ledgerd --dev --dev-prefill $PREFILL --dev-block-ms 1000)
  page size:                 $bytes bytes
  by_number, c=$CONNS, ${SECS}s x $PAIRS:
    no browser:              median $mw req/s   (${without[*]})
    chromium on about:blank: median $mb req/s   (${blank[*]})
    chromium on the page:    median $mp req/s   (${with[*]})
    page / no browser:       $(ratio "$mp" "$mw")
    page / blank browser:    $(ratio "$mp" "$mb")
  node CPU, no load:         ${idle_cpu} ms a minute without the page, ${page_cpu} ms a minute with it open
  node RssAnon, page closed: $rss_before kB
  node RssAnon, page open $MINUTES min (every 30 s): ${samples[*]} kB
    first -> last:           ${samples[0]} -> ${samples[-1]} kB ($((samples[-1] - samples[0])) kB)
  /health reads so far (page refreshes, all runs): $refreshes
REPORT
