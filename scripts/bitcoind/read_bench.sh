#!/usr/bin/env bash
# Measures raw-block read speed from a local regtest bitcoind through
# ledgerd's block reader (src/source/bitcoin/rpc/reader.rs): batched
# getblockhash + getblock <hash> 0, several batches in flight, every block
# decoded and checked.
#
#   scripts/bitcoind/read_bench.sh [BLOCKS] [RUNS]      (defaults: 5000, 5)
#
# Starts bitcoind (scripts/bitcoind/build.sh's cache, or $LEDGERD_BITCOIND)
# with -regtest -txindex=1 on a temp datadir and a free port, mines BLOCKS
# coinbase-only blocks, runs examples/bitcoind_read_bench.rs (release build)
# against it, and stops bitcoind. Prints blocks/s per configuration.
set -euo pipefail
BLOCKS=${1:-5000}
RUNS=${2:-5}
cd "$(dirname "$0")/../.."

if [ -n "${LEDGERD_BITCOIND:-}" ]; then
  BITCOIND=$LEDGERD_BITCOIND
else
  BITCOIND="$(scripts/bitcoind/build.sh | tail -1)/bitcoind"
fi
[ -x "$BITCOIND" ] || { echo "read_bench.sh: no bitcoind at $BITCOIND" >&2; exit 1; }

cargo build --release --quiet --example bitcoind_read_bench

dir=$(mktemp -d "${TMPDIR:-/tmp}/ledgerd-read-bench.XXXXXX")
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BITCOIND" -regtest -txindex=1 -listen=0 -server -printtoconsole=0 \
  -rpcbind=127.0.0.1 -rpcallowip=127.0.0.1 -rpcport="$port" -rpcthreads=8 \
  -datadir="$dir" 2>"$dir/stderr.log" &
pid=$!
for _ in $(seq 1 600); do
  [ -s "$dir/regtest/.cookie" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$dir/stderr.log" >&2; exit 1; }
  sleep 0.1
done
echo "bitcoind $("$BITCOIND" -version | head -1 | sed 's/.* version //'), pid $pid, rpc port $port; $(nproc) cores"
${CARGO_TARGET_DIR:-target}/release/examples/bitcoind_read_bench "http://127.0.0.1:$port" "$dir/regtest/.cookie" "$BLOCKS" "$RUNS"
