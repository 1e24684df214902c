#!/usr/bin/env bash
# Measures how fast a follower catches up from an empty ledger.
#
#   scripts/catchup.sh [BLOCKS] [QUERIES_PER_SECOND]     (defaults: 200000, 200)
#   WIRE=citrea scripts/catchup.sh 200000                 (a Citrea-shaped upstream)
#   WIRE=citrea CONCURRENCY=1 scripts/catchup.sh 200000   (one range request at a time)
#   CHAIN_ARGS="--kumquat-height 1000000" scripts/catchup.sh   (Genesis-era blocks)
#   WIRE=citrea DELAY_MS=5 scripts/catchup.sh 50000     (each request 5 ms away)
#   TLS=1 scripts/catchup.sh 50000                       (over https:// through nginx)
#   LEDGERD_BIN=PATH scripts/catchup.sh ...              (another build's ledgerd, both ends)
#
# Builds release, prefills a devnet upstream with BLOCKS blocks (no new ones),
# starts `ledgerd --upstream` on an empty data dir (default --sync-chunk 100,
# --sync-concurrency $CONCURRENCY, default 8) and, while it catches up, runs
# examples/catchup_probe.rs against it: a
# steady stream of queries on one connection, timed. Prints the catch-up rate
# (from the follower's sync status: L2 blocks and L1 slots, until both layers
# read Synced at the upstream's heads) and the query latencies p50/p99/max.
# Everything runs on 127.0.0.1 and is stopped at the end.
#
# WIRE=citrea runs the upstream with `--wire citrea`: it answers in a Citrea
# v0.6 node's shapes and serves at most 20 blocks per range request (with
# Citrea's error text), so the follower learns that limit and fetches 20
# blocks a request, CONCURRENCY requests in flight.
#
# DELAY_MS puts examples/delay_proxy.rs between the follower and the
# upstream: every request waits DELAY_MS on the way, as if the upstream were
# that far away on a network.
#
# TLS=1 puts a real nginx (`listen ... ssl`, one worker, keep-alive to the
# upstream) between them, with a CA and a certificate for 127.0.0.1 made by
# openssl in the temp dir: the follower follows https:// with --upstream-ca.
# scripts/catchup_tls.sh runs both ways in one go and prints the ratio.
set -euo pipefail

BLOCKS=${1:-200000}
RATE=${2:-200}
WIRE=${WIRE:-ledgerd}
CONCURRENCY=${CONCURRENCY:-8}
DELAY_MS=${DELAY_MS:-0}
TLS=${TLS:-0}
# Chain-rule flags given to both the upstream and the follower.
read -r -a CHAIN <<<"${CHAIN_ARGS:-}"
cd "$(dirname "$0")/.."

cargo build --release --quiet --bin ledgerd --example catchup_probe --example delay_proxy
BIN=${LEDGERD_BIN:-${CARGO_TARGET_DIR:-target}/release/ledgerd}
PROBE=${CARGO_TARGET_DIR:-target}/release/examples/catchup_probe
PROXY=${CARGO_TARGET_DIR:-target}/release/examples/delay_proxy

WORK=$(mktemp -d /tmp/ledgerd-catchup.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# Starts ledgerd with the given args; sets URL from its first stdout line.
start() {
  local name=$1; shift
  start_program "$name" "$BIN" "$@" --bind 127.0.0.1:0
}

# Starts a program that prints `listening on URL` first; sets URL.
start_program() {
  local name=$1; shift
  mkfifo "$WORK/$name.fifo"
  "$@" >"$WORK/$name.fifo" 2>"$WORK/$name.log" &
  PIDS+=($!)
  exec {fd}<"$WORK/$name.fifo"
  local line
  if ! read -r -t 120 line <&"$fd"; then
    echo "$name did not start:" >&2; cat "$WORK/$name.log" >&2; exit 1
  fi
  URL=${line#listening on }
}

t0=$(date +%s.%N)
start upstream --dev --dev-prefill "$BLOCKS" --dev-block-ms 0 --data-dir "$WORK/upstream" --wire "$WIRE" "${CHAIN[@]}"
t1=$(date +%s.%N)
UPSTREAM=$URL
echo "upstream: $BLOCKS blocks prefilled, listening after $(echo "$t1 - $t0" | bc) s on $UPSTREAM (--wire $WIRE)"

# CPU seconds (user + system) a process has used so far.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"; }
UPSTREAM_PID=${PIDS[0]}
up_cpu0=$(cpu "$UPSTREAM_PID")

FOLLOWS=$UPSTREAM
FOLLOW_ARGS=()
if [ "$TLS" != 0 ]; then
  ssl() { openssl "$@" 2>>"$WORK/openssl.log"; }
  ssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -days 1 -nodes \
    -subj "/CN=catchup CA" -addext "basicConstraints=critical,CA:TRUE" \
    -keyout "$WORK/ca.key" -out "$WORK/ca.pem"
  ssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$WORK/tls.key" -out "$WORK/tls.csr"
  printf 'subjectAltName=IP:127.0.0.1\n' >"$WORK/san.ext"
  ssl x509 -req -in "$WORK/tls.csr" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" -CAcreateserial \
    -days 1 -extfile "$WORK/san.ext" -out "$WORK/tls.pem"
  TLS_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  mkdir -p "$WORK/nginx"
  user=""; [ "$(id -u)" = 0 ] && user="user root;"
  cat >"$WORK/nginx/nginx.conf" <<CONF
$user
daemon off;
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $WORK/nginx/body; proxy_temp_path $WORK/nginx/proxy;
  fastcgi_temp_path $WORK/nginx/fastcgi; uwsgi_temp_path $WORK/nginx/uwsgi; scgi_temp_path $WORK/nginx/scgi;
  upstream ledgerd { server ${UPSTREAM#http://}; keepalive 16; }
  server {
    listen 127.0.0.1:$TLS_PORT ssl;
    ssl_certificate $WORK/tls.pem; ssl_certificate_key $WORK/tls.key;
    location / { proxy_pass http://ledgerd; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
CONF
  /usr/sbin/nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" 2>"$WORK/nginx.stderr" &
  PIDS+=($!)
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$TLS_PORT") 2>/dev/null && break
    sleep 0.05
  done
  FOLLOWS=https://127.0.0.1:$TLS_PORT
  FOLLOW_ARGS=(--upstream-ca "$WORK/ca.pem")
  echo "tls: nginx $FOLLOWS before the upstream (openssl CA and certificate in $WORK)"
fi
if [ "$DELAY_MS" != 0 ]; then
  start_program proxy "$PROXY" "${UPSTREAM#http://}" "$DELAY_MS"
  FOLLOWS=$URL
  echo "proxy: every request to the upstream waits $DELAY_MS ms ($FOLLOWS)"
fi
start follower --upstream "$FOLLOWS" "${FOLLOW_ARGS[@]}" --data-dir "$WORK/follower" --sync-concurrency "$CONCURRENCY" "${CHAIN[@]}"
echo "follower: --sync-concurrency $CONCURRENCY"
FOLLOWER=$URL
FOLLOWER_PID=${PIDS[-1]}
"$PROBE" "$FOLLOWER" "$UPSTREAM" "$RATE" 180
t2=$(date +%s.%N)
f_cpu=$(cpu "$FOLLOWER_PID")
up_cpu=$(echo "$(cpu "$UPSTREAM_PID") - $up_cpu0" | bc)
echo "CPU used during catch-up: follower $f_cpu s, upstream $up_cpu s;" \
  "on 2 idle cores that bounds the rate at ~$(echo "2 * $BLOCKS / ($f_cpu + $up_cpu)" | bc) blocks/s" \
  "(load average now: $(cut -d' ' -f1 /proc/loadavg))"
echo "wall time from follower start to both layers Synced: $(echo "$t2 - $t1" | bc) s" \
  "($(echo "$BLOCKS / ($t2 - $t1)" | bc) blocks/s, including process start)"
echo "follower ledger on disk: $(du -sh "$WORK/follower" | cut -f1)"
