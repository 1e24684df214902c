#!/usr/bin/env bash
# SHA-256 speed per crate on this machine (ring, sha2 with and without its
# `asm` feature, bitcoin_hashes), for 64-byte and 1.5 MB inputs, and
# SHA-512 of 96 bytes (an Ed25519 challenge), in MB/s:
#
#   scripts/sha256_speed.sh [ROUNDS]      (default 5)
#
# scripts/sha256_speed/ is a crate of its own (features would unify in
# ledgerd's build), built twice: without and with sha2's `asm`.
set -euo pipefail
ROUNDS=${1:-5}
cd "$(dirname "$0")/sha256_speed"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg)"
for features in "" "--features asm"; do
  # shellcheck disable=SC2086
  cargo build --release --quiet $features
  "$CARGO_TARGET_DIR/release/sha256_speed" "$ROUNDS"
done
