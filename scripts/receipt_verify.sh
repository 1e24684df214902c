#!/usr/bin/env bash
# Measures what checking one batch proof's receipt costs the sync thread:
# the median of RUNS checks of Citrea's real testnet proof (tests/data), and
# of a devnet fake receipt.
#
#   scripts/receipt_verify.sh [RUNS]      (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --release --example receipt_verify_time -- "${1:-10}"
