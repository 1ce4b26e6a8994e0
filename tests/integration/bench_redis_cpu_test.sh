#!/usr/bin/env bash
# bench_redis_cpu_test.sh: the smoke test of bench/redis/cpu.sh (the Redis CPU
# per decision benchmark). It runs `cpu.sh --quick` (tiny counts: a few
# seconds) against the sluiced of BUILD_DIR and checks that the table has
# every row, each with a figure, and that no sluiced run fell back to answering
# without Redis. No figure is checked against a bound: on a shared machine
# timings prove nothing.
#
# Usage: bench_redis_cpu_test.sh BUILD_DIR SOURCE_DIR NODE_CACHE_DIR
# Exit 77 (a skip for ctest) when npm cannot install the peer (offline).
set -euo pipefail
build=$1 src=$2 cache=$3
out=$(mktemp -d "${TMPDIR:-/tmp}/bench-redis-cpu-test.XXXXXX")
trap 'rm -rf "$out"' EXIT

rc=0
"$src/bench/redis/cpu.sh" "$build" --quick --node-cache "$cache" --out "$out" >"$out/log" 2>&1 || rc=$?
if [ "$rc" = 3 ]; then
  cat "$out/log"
  echo "bench_redis_cpu_test: npm cannot install the peer: skipped"
  exit 77
fi
[ "$rc" = 0 ] || { cat "$out/log"; echo "bench_redis_cpu_test: cpu.sh failed ($rc)"; exit 1; }

t=$out/results.md
fail=0
row() { # PATTERN: one row of the table, with a figure in its CPU column
  local line
  line=$(grep -F -- "$1" "$t" | grep '^| ' | head -1) || true
  if [ -z "$line" ]; then
    echo "missing row: $1"
    fail=1
  elif ! awk -F' [|] ' '{exit !($2 ~ /^\*\*[0-9]+(\.[0-9]+)?\*\* \(/)}' <<<"$line"; then
    echo "no CPU figure in: $line"
    fail=1
  elif ! awk -F' [|] ' '{exit !($6 ~ /^[0-9]+/)}' <<<"$line"; then
    echo "no memory figure in: $line"
    fail=1
  fi
}
row 'Redis `INCR`'
row 'Redis `INCRBY` + `EXPIRE` pipelined'
row "the seed's token-bucket Lua script"
row 'node-rate-limiter-flexible `RateLimiterRedis`'
for p in tb gc lq fw sw sl; do row "(\`SL.CHECK $p\`)"; done
row 'sluiced exact, `CL.THROTTLE` (Redis mode)'
row 'sluiced batched'
# the same through sluice-redis.so (SLUICE.DECIDE)
for a in "token bucket (\`SL.CHECK tb" "GCRA (\`SL.CHECK gc" "leaky queue (\`SL.CHECK lq" \
  "fixed window (\`SL.CHECK fw" "sliding window (\`SL.CHECK sw" "sliding log (\`SL.CHECK sl" \
  "\`CL.THROTTLE\` (Redis mode)"; do
  row "sluiced exact + module, $a"
done
grep -q '^| redis-cell `CL.THROTTLE` (native module) | 6.8, quoted' "$t" || { echo "missing: redis-cell's quoted row"; fail=1; }
# the targets' column
for p in tb gc lq fw; do grep -F "(\`SL.CHECK $p\`)" "$t" | grep -q '<= 1x: ' || { echo "no target for $p"; fail=1; }; done
grep -F '(`SL.CHECK sw`)' "$t" | grep -q '<= 1.5x: ' || { echo "no target for sw"; fail=1; }
grep -F '(`SL.CHECK sl`)' "$t" | grep -q '<= 3x: ' || { echo "no target for sl"; fail=1; }
grep -F '(`SL.CHECK gc`)' "$t" | grep -q '(<= 90: ' || { echo "no memory target for gc"; fail=1; }
if grep -q INVALID "$t"; then
  echo "a sluiced run had failed Redis calls"
  fail=1
fi
if [ "$fail" != 0 ]; then
  cat "$out/log"
  exit 1
fi
echo "bench_redis_cpu_test: every row present"
