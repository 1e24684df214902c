#!/usr/bin/env bash
# Builds bitcoind and bitcoin-cli (regtest use: no wallet, GUI, IPC or ZMQ)
# from the Bitcoin Core source tree shipped inside the crates.io package
# libbitcoinkernel-sys, pinned below, and caches the two binaries outside the
# tree:
#   ${LEDGERD_TOOLS_DIR:-$HOME/.cache/ledgerd-tools}/bitcoind-<version>/bin/
# When both binaries are there already, nothing is built. The last stdout line
# is the bin directory; tests find bitcoind there (or via $LEDGERD_BITCOIND).
#
# Needs: cargo, cmake, g++, pkg-config, libboost-dev, libevent-dev
# (.ci/install installs the Debian packages). About 10-15 min on 2 cores.
set -euo pipefail

CRATE=libbitcoinkernel-sys
VERSION=0.4.1
TOOLS_DIR="${LEDGERD_TOOLS_DIR:-$HOME/.cache/ledgerd-tools}"
PREFIX="$TOOLS_DIR/bitcoind-$VERSION"
BIN="$PREFIX/bin"
JOBS="${JOBS:-$(nproc)}"

if [ -x "$BIN/bitcoind" ] && [ -x "$BIN/bitcoin-cli" ]; then
  echo "bitcoind already built: $BIN" >&2
  echo "$BIN"
  exit 0
fi

for tool in cargo cmake g++ pkg-config; do
  command -v "$tool" >/dev/null || {
    echo "build.sh: $tool is missing (run .ci/install, or apt-get install cmake g++ pkg-config libboost-dev libevent-dev)" >&2
    exit 1
  }
done
for lib in libevent; do
  pkg-config --exists "$lib" || {
    echo "build.sh: $lib is missing (apt-get install libevent-dev)" >&2
    exit 1
  }
done
[ -e /usr/include/boost/version.hpp ] || {
  echo "build.sh: Boost headers are missing (apt-get install libboost-dev)" >&2
  exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/ledgerd-bitcoind-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# 1. The source: cargo fetch a throwaway crate that depends on the pinned
#    package, then take bitcoin/ out of the registry copy it unpacked.
mkdir -p "$work/fetch/src"
cat >"$work/fetch/Cargo.toml" <<TOML
[package]
name = "fetch-bitcoin-source"
version = "0.0.0"
edition = "2021"
[dependencies]
$CRATE = "=$VERSION"
TOML
: >"$work/fetch/src/lib.rs"
echo "== fetching $CRATE $VERSION" >&2
(cd "$work/fetch" && cargo fetch --quiet) >&2
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
src=""
for d in "$cargo_home"/registry/src/*/"$CRATE-$VERSION"; do
  [ -d "$d/bitcoin" ] && src="$d/bitcoin"
done
if [ -z "$src" ]; then
  echo "build.sh: $CRATE-$VERSION/bitcoin not found under $cargo_home/registry/src after cargo fetch" >&2
  exit 1
fi
cp -a "$src" "$work/bitcoin"

# 2. Configure and build only the daemon and the CLI.
echo "== configuring (source: $src)" >&2
cmake -S "$work/bitcoin" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_DAEMON=ON -DBUILD_CLI=ON -DBUILD_BITCOIN_BIN=OFF -DBUILD_TESTS=OFF \
  -DBUILD_BENCH=OFF -DBUILD_TX=OFF -DBUILD_UTIL=OFF -DBUILD_GUI=OFF \
  -DBUILD_FUZZ_BINARY=OFF -DBUILD_KERNEL_LIB=OFF \
  -DENABLE_WALLET=OFF -DENABLE_IPC=OFF -DWITH_ZMQ=OFF -DENABLE_EXTERNAL_SIGNER=OFF \
  -DWITH_EMBEDDED_ASMAP=OFF -DWITH_CCACHE=OFF -DINSTALL_MAN=OFF >&2
echo "== building with $JOBS jobs" >&2
start=$(date +%s)
cmake --build "$work/build" -j"$JOBS" --target bitcoind bitcoin-cli >&2
echo "== built in $(( $(date +%s) - start )) s" >&2

# 3. Install atomically: a half-copied cache must never look complete.
mkdir -p "$TOOLS_DIR"
stage=$(mktemp -d "$TOOLS_DIR/.bitcoind-$VERSION.XXXXXX")
mkdir -p "$stage/bin"
cp "$work/build/bin/bitcoind" "$work/build/bin/bitcoin-cli" "$stage/bin/"
strip "$stage/bin/bitcoind" "$stage/bin/bitcoin-cli" 2>/dev/null || true
"$stage/bin/bitcoind" -version | head -1 >&2
rm -rf "$PREFIX"
mv "$stage" "$PREFIX"
echo "$BIN"
