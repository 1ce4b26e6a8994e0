#!/usr/bin/env bash
# bench_decide_test.sh: the smoke test of bench_decide (docs/BENCHMARKS.md).
# Tiny counts, about a second (more under ASan): every subject (the six
# tables, the peer, the harness, memlat) on the hot key and on 1,000 random
# keys, with 1 and 2 threads, must run to the end and print its row (and
# the token bucket with --fresh-keys and --byte-keys). A
# 1,000-key table is smaller than the 4,099 lines the memlat subject's second
# thread once started at: that run read past its cycle (a SIGSEGV in
# loop_memlat). No figure is checked against a bound: timings prove nothing here.
#
# Usage: bench_decide_test.sh BENCH_DECIDE
set -uo pipefail
bin=$1
out=$("$bin" --runs 1 --time 0.01 --keys 1000 --threads 1,2 --no-pin 2>&1)
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "$out"
  echo "bench_decide_test: bench_decide exited with $rc"
  exit 1
fi
fail=0
for wl in hot random; do
  for thr in 1 2; do
    for s in fixed_window sliding_log sliding_window token_bucket gcra leaky_queue peer harness memlat; do
      if ! grep -Eq "^$wl +$thr +$s +[0-9]+\.[0-9]+ " <<<"$out"; then
        echo "bench_decide_test: no row with a figure for $wl $thr $s"
        fail=1
      fi
    done
  done
done
[ "$fail" -eq 0 ] || echo "$out"
# the two harnesses that write each random key just before its decision
for mode in --fresh-keys --byte-keys; do
  o=$("$bin" --runs 1 --time 0.01 --keys 1000 --threads 1 --no-pin --workload random \
    --only token_bucket,peer "$mode" 2>&1)
  if [ $? -ne 0 ] || ! grep -Eq "^random +1 +token_bucket +[0-9]+\.[0-9]+ " <<<"$o"; then
    echo "$o"
    echo "bench_decide_test: $mode gave no token_bucket row"
    fail=1
  fi
done
exit $fail
