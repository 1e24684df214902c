#!/usr/bin/env bash
# Measures `ledgerd verify-headers` on one core (taskset -c 0): headers
# checked per second (the command's own figure: checking only, the file
# already read), median of RUNS runs on
#  - N regtest headers from genesis (mined by examples/headers_bench.rs;
#    every header walks back over the pow-limit headers, regtest's slowest
#    bits rule), raw 80-byte and hex;
#  - Citrea's three real header files (2,037 headers each: too short to
#    time well, shown for the rules they exercise).
#
#   scripts/verify_headers_speed.sh [N] [RUNS]     (defaults 1000000, 5)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-1000000}"
RUNS="${2:-5}"
nice -n 5 cargo build --quiet --release --bin ledgerd --example headers_bench
BIN=${CARGO_TARGET_DIR:-target}/release/ledgerd
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
${CARGO_TARGET_DIR:-target}/release/examples/headers_bench "$N" "$tmp/regtest.raw"
xxd -p -c 80 "$tmp/regtest.raw" > "$tmp/regtest.hex"
pin=""
if command -v taskset > /dev/null; then pin="taskset -c 0"; fi

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

rate() { # FILE CHAIN [START]: one run's headers/s
    local start=()
    if [ -n "${3:-}" ]; then start=(--start-height "$3"); fi
    $pin "$BIN" verify-headers --bitcoin-chain "$2" "${start[@]}" "$1" 2>&1 > /dev/null \
        | sed -n 's/.*(\([0-9]*\) headers\/s).*/\1/p'
}

run() { # LABEL FILE CHAIN [START]
    local rates=()
    for _ in $(seq "$RUNS"); do rates+=("$(rate "$2" "$3" "${4:-}")"); done
    printf '%-44s median %9s headers/s   runs: %s\n' "$1" \
        "$(printf '%s\n' "${rates[@]}" | median)" "${rates[*]}"
}

echo "ledgerd verify-headers, one core, $RUNS runs each ($(nproc) cores, $(date -u +%FT%TZ))"
run "regtest, $N headers from genesis, raw" "$tmp/regtest.raw" regtest
run "regtest, $N headers from genesis, hex" "$tmp/regtest.hex" regtest
run "mainnet 40310-42346 (2,037, hex)" tests/data/bitcoin_mainnet_headers_40310_42346.txt main 40310
run "mainnet 872918-874954 (2,037, hex)" tests/data/bitcoin_mainnet_headers_872918_874954.txt main 872918
run "testnet4 40310-42346 (2,037, hex)" tests/data/bitcoin_testnet4_headers_40310_42346.txt testnet4 40310
