#!/usr/bin/env bash
# scripts/bench.sh: ledgerd's benchmark, in one run (under 10 minutes).
#
#   scripts/bench.sh            # prints a table, writes target/bench/latest.json
#
# Environment: BENCH_SECONDS (length of each wrk run, default 3),
# BENCH_CONNS (default "1 16 64"), BENCH_BIG (blocks of the big ledger, default
# 1000000), BENCH_REBUILD=1 (rebuild the cached ledgers), LEDGERD_BIN=PATH (measure
# another build's ledgerd, e.g. one of an earlier commit; give it its own
# BENCH_OUT=DIR, as a newer ledgerd upgrades the cached ledgers' layout).
#
# What it does (issue 5): installs wrk if missing (Debian's package), builds
# release, creates devnet ledgers of 10k, 100k and 1M blocks and a small one
# with 1 MB proofs (cached under target/bench/ and reused when made with the
# same parameters), starts every server on 127.0.0.1 port 0 (reading the
# `listening on` line), and for each connection count measures echo_baseline
# (the plain tiny_http loop answering a constant answer of the same size as a
# real getSoftConfirmationByNumber answer) and ledgerd's methods, interleaved
# so each ratio compares runs made moments apart. Then: start-up time on the
# 1M ledger, bytes on disk per block against the raw bytes of the fields,
# devnet prefill blocks/s, follower catch-up blocks/s, and whether every
# connection gets answers at c=16/64. Every load stays on 127.0.0.1 and every
# run is bounded in time.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${BENCH_OUT:-$ROOT/target/bench}
LUA=$ROOT/scripts/bench
SECS=${BENCH_SECONDS:-3}
CONNS=${BENCH_CONNS:-"1 16 64"}
BIG=${BENCH_BIG:-1000000}
MID=100000
SMALL=10000
PROOF_BYTES=1048576
PREFILL_PROBE=50000
BIN=${LEDGERD_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/ledgerd}
EX=${CARGO_TARGET_DIR:-$ROOT/target}/release/examples
mkdir -p "$OUT"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ledgerd-bench.XXXXXX")
RUNS=$TMP/runs.jsonl
EXTRA=$TMP/extra.jsonl
: >"$RUNS"
: >"$EXTRA"

say() { printf '[bench %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { say "error: $*"; exit 1; }

# ------------------------------------------------------------------ servers
declare -A PIDS=() FDS=() URLS=()
cleanup() {
    local name
    for name in "${!PIDS[@]}"; do
        kill -TERM "${PIDS[$name]}" 2>/dev/null || true
    done
    for name in "${!PIDS[@]}"; do
        wait "${PIDS[$name]}" 2>/dev/null || true
    done
    rm -rf "$TMP"
}
trap cleanup EXIT

# start NAME CMD...: starts a server, waits for its `listening on` line (at
# most 600 s), sets URLS[NAME], PIDS[NAME] and STARTUP_MS (spawn to line).
start() {
    local name=$1
    shift
    local fifo=$TMP/$name.fifo fd line t0 t1
    rm -f "$fifo"
    mkfifo "$fifo"
    t0=$EPOCHREALTIME
    "$@" >"$fifo" 2>"$TMP/$name.err" &
    PIDS[$name]=$!
    exec {fd}<"$fifo"
    FDS[$name]=$fd
    if ! read -r -t 600 line <&"$fd"; then
        tail -5 "$TMP/$name.err" >&2 || true
        die "$name did not print its listening line"
    fi
    t1=$EPOCHREALTIME
    [[ $line == "listening on http://"* ]] || die "$name printed \"$line\", not a listening line"
    URLS[$name]=${line#listening on }
    STARTUP_MS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')
}

# stop NAME: SIGTERM, wait, check exit status 0.
stop() {
    local name=$1 pid=${PIDS[$1]} fd=${FDS[$1]} rc=0
    kill -TERM "$pid"
    wait "$pid" || rc=$?
    exec {fd}<&-
    unset "PIDS[$name]" "FDS[$name]"
    [[ $rc == 0 ]] || say "warning: $name exited with status $rc after SIGTERM"
}

rpc() { # URL JSON -> answer body
    curl -sS --max-time 10 -H 'Content-Type: application/json' -d "$2" "$1"
}

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# ------------------------------------------------------------------ tools, build
if ! command -v wrk >/dev/null; then
    say "installing wrk (Debian package)"
    SUDO=""
    [[ $(id -u) == 0 ]] || SUDO=sudo
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq wrk >/dev/null
fi
command -v curl >/dev/null || die "curl is needed"
command -v python3 >/dev/null || die "python3 is needed (for the table and the JSON)"
say "building release"
cargo build --release --quiet --bin ledgerd --example echo_baseline --example ledger_stats
CLK_TCK=$(getconf CLK_TCK)

# ------------------------------------------------------------------ ledgers
# ledger NAME BLOCKS [EXTRA FLAGS...]: makes target/bench/NAME once per
# parameter set (recorded in NAME.params), timing the prefill.
ledger() {
    local name=$1 blocks=$2
    shift 2
    # The ledger layout version is part of the parameters: a ledger written
    # by an older layout is refused by a newer binary, so it is made anew.
    local layout
    layout=$(sed -n 's/^pub(crate) const FORMAT_VERSION: u64 = \([0-9]*\);/\1/p' src/ledger/tables.rs)
    [[ -n $layout ]] || die "cannot read FORMAT_VERSION from src/ledger/tables.rs"
    local dir=$OUT/$name params="layout=$layout prefill=$blocks seed=1 $*"
    if [[ -z ${BENCH_REBUILD:-} && -f $dir.params && $(cat "$dir.params") == "$params" ]]; then
        say "reusing $dir ($params)"
        return
    fi
    say "creating $dir ($params)"
    rm -rf "$dir" "$dir.params"
    start "make-$name" "$BIN" --dev --dev-prefill "$blocks" --dev-block-ms 0 "$@" \
        --data-dir "$dir" --bind 127.0.0.1:0
    stop "make-$name"
    echo "$params" >"$dir.params"
    say "  $blocks blocks in $STARTUP_MS ms"
}
ledger ledger-10k $SMALL
ledger ledger-100k $MID
ledger "ledger-big-$BIG" "$BIG"
ledger ledger-proof 300 --dev-proof-bytes $PROOF_BYTES

# warm: reads every ledger file once, so the page cache holds it. LMDB reads
# through mmap; a page that is not cached is a major fault and a disk read
# (on this machine, freshly written ledgers were not kept in the cache).
warm() {
    local d
    for d in "$OUT"/ledger-10k "$OUT"/ledger-100k "$OUT/ledger-big-$BIG" "$OUT"/ledger-proof; do
        cat "$d/data.mdb" >/dev/null
    done
}

# ------------------------------------------------------------------ one-off figures
warm
say "ledger size (examples/ledger_stats)"
STATS=$("$EX/ledger_stats" "$OUT/ledger-big-$BIG")
echo "{\"kind\":\"ledger_stats\",\"value\":$STATS}" >>"$EXTRA"

say "start-up to listening on the $BIG-block ledger (median of 3)"
ups=()
for _ in 1 2 3; do
    start up "$BIN" --dev --dev-block-ms 0 --data-dir "$OUT/ledger-big-$BIG" --bind 127.0.0.1:0
    ups+=("$STARTUP_MS")
    stop up
done
echo "{\"kind\":\"startup_ms\",\"value\":[${ups[0]},${ups[1]},${ups[2]}]}" >>"$EXTRA"

say "devnet prefill rate ($PREFILL_PROBE blocks into an empty ledger)"
start prefill "$BIN" --dev --dev-prefill $PREFILL_PROBE --dev-block-ms 0 \
    --data-dir "$TMP/prefill" --bind 127.0.0.1:0
stop prefill
echo "{\"kind\":\"prefill\",\"value\":{\"blocks\":$PREFILL_PROBE,\"ms\":$STARTUP_MS}}" >>"$EXTRA"
rm -rf "$TMP/prefill"

say "follower catch-up ($MID blocks from a ledgerd over HTTP)"
start src100k "$BIN" --dev --dev-block-ms 0 --data-dir "$OUT/ledger-100k" --bind 127.0.0.1:0
t0=$EPOCHREALTIME
start follower "$BIN" --upstream "${URLS[src100k]}" --data-dir "$TMP/follower" --bind 127.0.0.1:0
head=0
deadline=$((SECONDS + 240))
while ((head < MID && SECONDS < deadline)); do
    sleep 0.1
    head=$(rpc "${URLS[follower]}" '{"jsonrpc":"2.0","id":1,"method":"ledger_getHeadSoftConfirmationHeight","params":[]}' |
        sed -n 's/.*"result":\([0-9]*\).*/\1/p')
    head=${head:-0}
done
t1=$EPOCHREALTIME
stop follower
stop src100k
rm -rf "$TMP/follower"
((head >= MID)) || say "warning: the follower reached only $head of $MID blocks in 240 s"
echo "{\"kind\":\"follower\",\"value\":{\"blocks\":$head,\"ms\":$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')}}" >>"$EXTRA"

# ------------------------------------------------------------------ load
warm
start big "$BIN" --dev --dev-block-ms 0 --data-dir "$OUT/ledger-big-$BIG" --bind 127.0.0.1:0
start small "$BIN" --dev --dev-block-ms 0 --data-dir "$OUT/ledger-10k" --bind 127.0.0.1:0
start proof "$BIN" --dev --dev-block-ms 0 --dev-proof-bytes $PROOF_BYTES \
    --data-dir "$OUT/ledger-proof" --bind 127.0.0.1:0

# The echo answer is as long as the average getSoftConfirmationByNumber answer.
total=0
for i in $(seq 1 100); do
    h=$(((RANDOM * 32768 + RANDOM) % BIG + 1))
    n=$(rpc "${URLS[big]}" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ledger_getSoftConfirmationByNumber\",\"params\":[$h]}" | wc -c)
    total=$((total + n))
done
ECHO_BYTES=$((total / 100))
start echo "$EX/echo_baseline" --bind 127.0.0.1:0 --body-bytes "$ECHO_BYTES"
echo "{\"kind\":\"echo_bytes\",\"value\":$ECHO_BYTES}" >>"$EXTRA"

# Every workload answers a result, not an error, before it is measured.
check() { # SERVER JSON
    local a
    a=$(rpc "${URLS[$1]}" "$2")
    [[ $a == *'"result"'* && $a != *'"error"'* ]] || die "$1 answered ${a:0:300} to $2"
}
check big '{"jsonrpc":"2.0","id":1,"method":"ledger_getSequencerCommitmentsOnSlotByNumber","params":[1016]}'
check big '{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationRange","params":[1,100]}'
check proof '{"jsonrpc":"2.0","id":1,"method":"ledger_getLastVerifiedBatchProof","params":[]}'

# load NAME SERVER MODE HEAD C: one wrk run, recorded in runs.jsonl.
load() {
    local name=$1 server=$2 mode=$3 head=$4 c=$5
    local pid=${PIDS[$server]} t0 t1 out bench rss
    t0=$(cpu_ticks "$pid")
    (sleep "$(awk -v s="$SECS" 'BEGIN { print s * 0.6 }')" &&
        grep -E '^(RssAnon|RssFile):' "/proc/$pid/status" >"$TMP/rss") &
    local sampler=$!
    out=$(wrk -t1 -c"$c" -d"${SECS}s" --timeout 5s --latency -s "$LUA/rpc.lua" "${URLS[$server]}" -- "$mode" "$head")
    wait "$sampler" || true
    t1=$(cpu_ticks "$pid")
    bench=$(sed -n 's/^BENCH //p' <<<"$out")
    [[ -n $bench ]] || die "wrk printed no result for $name c=$c: $out"
    rss=$(awk '/RssAnon/ { a = $2 } /RssFile/ { f = $2 } END { printf "\"rss_anon_kb\":%d,\"rss_file_kb\":%d", a, f }' "$TMP/rss")
    echo "{\"name\":\"$name\",\"c\":$c,\"cpu_ticks\":$((t1 - t0)),\"clk_tck\":$CLK_TCK,$rss,${bench#\{}" >>"$RUNS"
    say "  $(printf '%-22s c=%-3s' "$name" "$c") $(sed -n 's/^Requests\/sec: *//p' <<<"$out") req/s"
}

say "load: ${SECS}s per run, c = $CONNS"
for c in $CONNS; do
    # What the targets compare runs three times, alternating; the table
    # keeps each one's median run, with p50 and p99 the medians of the three
    # (neighbours on a shared machine make single runs differ by 20% and
    # more, and a single run's p99 by several times).
    for _ in 1 2 3; do
        load echo_baseline echo echo "$BIG" "$c"
        load by_number big by_number "$BIG" "$c"
        load by_number_10k small by_number $SMALL "$c"
        load head_height big head_height "$BIG" "$c"
        load status big status "$BIG" "$c"
        load commitments big commitments "$BIG" "$c"
    done
    load range20 big range20 "$BIG" "$c"
    load range100 big range100 "$BIG" "$c"
    load batch10 big batch10 "$BIG" "$c"
    load last_proof_1mb proof last_proof 300 "$c"
done

say "fairness: one wrk thread per connection, count answers per connection"
for c in 16 64; do
    for server in echo big; do
        out=$(wrk -t"$c" -c"$c" -d3s --timeout 5s -s "$LUA/fairness.lua" "${URLS[$server]}" -- "$BIG")
        fair=$(sed -n 's/^FAIR //p' <<<"$out")
        echo "{\"kind\":\"fairness\",\"server\":\"$server\",\"c\":$c,\"value\":$fair}" >>"$EXTRA"
        say "  $server c=$c: $fair"
    done
done

for s in echo big small proof; do stop "$s"; done

python3 "$LUA/report.py" "$RUNS" "$EXTRA" "$OUT/latest.json"
