#!/usr/bin/env bash
# scripts/test_wall_time.sh: the wall time of `cargo test` in one or more
# checkouts, on a clean build and on a warm tree after touching src/lib.rs,
# interleaved so that each comparison is made moments apart on the same host.
#
#   scripts/test_wall_time.sh DIR...                 # e.g. /tmp/before /tmp/after
#   WARM_RUNS=3 scripts/test_wall_time.sh A B        # more warm rounds (default 2)
#   CLEAN=0 scripts/test_wall_time.sh A B            # warm rounds only
#   CLEAN=together scripts/test_wall_time.sh A B     # the clean builds side by side
#
# Each DIR is a checkout (a `git worktree add DIR REV`) with its own target/
# (DIR/target). Every run is `cargo test --no-fail-fast` (each test binary
# runs even when one fails, so that runs stay comparable). First, for each
# DIR in turn, a clean build: DIR/target removed, then the run. Then
# WARM_RUNS rounds of: for each DIR in turn, touch DIR/src/lib.rs, then the
# run. With CLEAN=together the clean builds of all DIRs run at once (each slower, but under the same load; quicker on a
# host too busy for one after the other). Every run is one line on stdout: the
# checkout, the kind (clean, warm), wall seconds, cargo's exit code, the
# tests that passed and failed (summed over cargo's "test result" lines) and
# the load average just before it (the host may be shared: quote it). The
# whole output of each run goes to DIR/target/test_wall_time.<kind>.<n>.log.
# Tests that need outside programs stay ignored, as in a plain `cargo test`.
set -euo pipefail

[ $# -ge 1 ] || {
    echo "usage: $0 DIR... (checkouts to time cargo test in)" >&2
    exit 2
}
WARM_RUNS=${WARM_RUNS:-2}
CLEAN=${CLEAN:-1}

run() { # DIR KIND N
    local dir=$1 kind=$2 n=$3 load start end code log passed failed
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    mkdir -p "$dir/target"
    log=$dir/target/test_wall_time.$kind.$n.log
    start=$(date +%s.%N)
    code=0
    (cd "$dir" && cargo test --no-fail-fast) >"$log" 2>&1 || code=$?
    end=$(date +%s.%N)
    passed=$(grep -Eo '^test result: [a-zA-Z]+\. [0-9]+ passed' "$log" | awk '{s += $4} END {print s + 0}')
    failed=$(grep -Eo '[0-9]+ failed;' "$log" | awk '{s += $1} END {print s + 0}')
    printf '%s\t%s\t%.0f s\texit %s\t%s passed, %s failed\tload %s\n' \
        "$dir" "$kind" "$(awk -v a="$start" -v b="$end" 'BEGIN {print b - a}')" "$code" "$passed" "$failed" "$load"
}

if [ "$CLEAN" = 1 ]; then
    for dir in "$@"; do
        rm -rf "$dir/target"
        run "$dir" clean 1
    done
elif [ "$CLEAN" = together ]; then
    for dir in "$@"; do
        rm -rf "$dir/target"
        run "$dir" clean-together 1 &
    done
    wait
fi
for n in $(seq 1 "$WARM_RUNS"); do
    for dir in "$@"; do
        touch "$dir/src/lib.rs"
        run "$dir" warm "$n"
    done
done
