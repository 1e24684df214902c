#!/usr/bin/env bash
# Catch-up over TLS against the same upstream over plain HTTP, in one run:
# scripts/catchup.sh BLOCKS twice (plain, then TLS=1: nginx with a TLS
# certificate before the upstream), each one's blocks/s, and the ratio.
#
#   scripts/catchup_tls.sh [BLOCKS]      (default 50000)
set -euo pipefail
BLOCKS=${1:-50000}
cd "$(dirname "$0")/.."
rate() { grep -o 'both layers Synced: [0-9.]* s ([0-9]* blocks/s' | grep -o '([0-9]*' | tr -d '('; }
plain_out=$(scripts/catchup.sh "$BLOCKS" 50)
echo "$plain_out" | sed 's/^/plain: /'
tls_out=$(TLS=1 scripts/catchup.sh "$BLOCKS" 50)
echo "$tls_out" | sed 's/^/tls:   /'
plain=$(echo "$plain_out" | rate)
tls=$(echo "$tls_out" | rate)
echo "catch-up of $BLOCKS blocks: plain HTTP $plain blocks/s, TLS $tls blocks/s, TLS/plain $(echo "scale=2; $tls / $plain" | bc)"
