#!/usr/bin/env bash
# The Bitcoin scan on mainnet-shaped blocks (~1.5 MB, ~3,000 transactions of
# ~500 bytes, half witness), made on a real regtest bitcoind by
# scripts/bitcoin_big_blocks.py, read over P2P (bitcoind the one local peer)
# and over its RPC, while reads are asked at a steady rate:
#
#   [BLOCKS=300] [TXS=3000] [RUNS=1] [BUILDS="BIN ..."] [SOURCES="p2p rpc"] [CHAIN_DIR=DIR] scripts/bitcoin_big_blocks.sh
#
# Each run measures every build (default: this one's release build) with
# SOURCE=p2p, then SOURCE=rpc (SOURCES="p2p" for P2P only), alternating
# builds within a run (compare builds in one run: the host is shared).
# Over P2P once per transport in TRANSPORTS (default "auto v1": auto is
# BIP324's v2 with this bitcoind, v1 is --bitcoin-transport v1). The
# probe also prints how the L1 scanned height moved (the heights its
# sync-status looks saw, and the steps between them). Each prints blocks/s, MB/s, the
# follower's CPU ms a block, downloads a block, the reads' p50/p99/max,
# the follower's peak RssAnon (sampled every 100 ms) and the hashing floor
# measured in the same run (scripts/bitcoin_catchup.sh with BLOCK_TXS).
# The chain is made once and kept in CHAIN_DIR (default
# ~/.cache/ledgerd-tools/big-blocks-BLOCKS-TXS); everything listens on
# 127.0.0.1, and each catch-up is bounded (the probe gives up after 300 s).
set -euo pipefail
cd "$(dirname "$0")/.."
BLOCKS=${BLOCKS:-300}
TXS=${TXS:-3000}
export CHAIN_DIR=${CHAIN_DIR:-${LEDGERD_TOOLS_DIR:-$HOME/.cache/ledgerd-tools}/big-blocks-$BLOCKS-$TXS}
TARGET=${CARGO_TARGET_DIR:-target}
read -r -a builds <<<"${BUILDS:-$TARGET/release/ledgerd}"
for run in $(seq "${RUNS:-1}"); do
  for source in ${SOURCES:-p2p rpc}; do
    transports=(rpc)
    [ "$source" = p2p ] && read -r -a transports <<<"${TRANSPORTS:-auto v1}"
    for transport in "${transports[@]}"; do
      for bin in "${builds[@]}"; do
        echo "== run $run, $source ($transport), $bin, load $(cut -d' ' -f1-3 /proc/loadavg)"
        P2P_TRANSPORT=$([ "$source" = p2p ] && echo "$transport") SOURCE=$source BLOCK_TXS=$TXS \
          FOLLOWER_BIN=$bin scripts/bitcoin_catchup.sh "$BLOCKS" 200 |
          grep -E '^(source|Bitcoin blocks|blocks:|follower RssAnon|floor|v2 |parse_block|caught up|queries|control|L1 scan|  slowest)' || true
      done
    done
  done
done
