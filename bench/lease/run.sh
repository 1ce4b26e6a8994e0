#!/usr/bin/env bash
# bench/lease/run.sh: a concurrency limit's acquire + release against two
# /v1/check calls, in the same run on the same sluiced (issue 16: "acquire +
# release at least as fast as two /v1/check calls"). bench/lease/loadgen.c
# drives CLIENTS keep-alive connections, each its own key, in a closed loop
# of pairs: POST /v1/acquire then POST /v1/release with its lease, or two
# GET /v1/check (a token bucket that always allows). The two sides
# alternate, RUNS times each. Reported per run and as medians: pairs per
# second, and sluiced's CPU time per pair (utime + stime from
# /proc/PID/stat, all threads, before and after each run). With 2 or more
# CPUs sluiced is pinned to CPU 0 and the load generator to the others.
#
# Usage: bench/lease/run.sh BUILD_DIR [options]          (after `make build`)
#   --runs N      alternating runs of each side (default 5)
#   --seconds S   per run (default 5)
#   --clients C   connections (default 16)
#   --redis       the Redis store (a redis-server of its own) instead of memory
#   --quick       --runs 2 --seconds 2
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh" # usage, die, build_arg, $root, processes, servers, load, CPU, numbers

build_arg "$@"
shift
runs=5 seconds=5 clients=16 redis=0
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift ;;
    --seconds) seconds=$2; shift ;;
    --clients) clients=$2; shift ;;
    --redis) redis=1 ;;
    --quick) runs=2; seconds=2 ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done
[ -x "$build/sluiced" ] || die "$build/sluiced not found (run make build)"
bench_tmp bench-lease
cc -O2 -pthread -o "$tmp/loadgen" "$here/loadgen.c"
cp "$build/sluiced" "$tmp/sluiced"

store="  type: memory"
if [ "$redis" = 1 ]; then
  start_redis
  store=$(printf '  type: redis\n  redis:\n    url: redis://127.0.0.1:%s/0\n    timeout: 1s' "$rd_port")
fi
cat >"$tmp/sluice.yaml" <<YAML
listen:
  http: 127.0.0.1:0
  grpc: "off"
  resp: "off"
workers: 1
limits:
  max_connections: 10000
store:
$store
policies:
  - name: bench
    algorithm: token_bucket
    rate: 1000000000/s
    burst: 1000000000
  - name: slots
    algorithm: concurrency
    limit: 100
    lease: 30s
YAML
pin_cpus 1
sluiced_up http "$tmp/sluiced.log" taskset -c "$server_cpus" "$tmp/sluiced" -c "$tmp/sluice.yaml" ||
  die_log "$tmp/sluiced.log" "sluiced did not start"
pid=$sl_pid port=$sl_http

echo "| run | side | pairs/s | sluiced CPU us/pair | errors |"
echo "| --- | --- | ---: | ---: | ---: |"
results=$tmp/results
: >"$results"
for r in $(seq "$runs"); do
  for side in lease check; do
    policy=bench; [ "$side" = lease ] && policy=slots
    t0=$(cpu_ticks "$pid")
    line=$(taskset -c "$client_cpus" "$tmp/loadgen" "$port" "$side" "$policy" "$clients" "$seconds")
    t1=$(cpu_ticks "$pid")
    pairs=$(sed -n 's/.*pairs=\([0-9]*\).*/\1/p' <<<"$line")
    rate=$(sed -n 's/.*rate=\([0-9]*\).*/\1/p' <<<"$line")
    errs=$(sed -n 's/.*errors=\([0-9]*\).*/\1/p' <<<"$line")
    us=$(awk -v t="$((t1 - t0))" -v hz="$hz" -v n="$pairs" 'BEGIN { printf "%.1f", n ? t * 1e6 / hz / n : 0 }')
    echo "| $r | $side | $rate | $us | $errs |"
    echo "$side $rate $us" >>"$results"
  done
done
lr=$(awk '$1=="lease"{print $2}' "$results" | median)
cr=$(awk '$1=="check"{print $2}' "$results" | median)
lu=$(awk '$1=="lease"{print $3}' "$results" | median)
cu=$(awk '$1=="check"{print $3}' "$results" | median)
echo
echo "store: $([ "$redis" = 1 ] && echo redis || echo memory), $clients connections, $runs x ${seconds}s per side"
echo "| side | median pairs/s | median sluiced CPU us/pair |"
echo "| --- | ---: | ---: |"
echo "| acquire + release | $lr | $lu |"
echo "| 2 x /v1/check | $cr | $cu |"
awk -v l="$lr" -v c="$cr" 'BEGIN { printf "acquire+release / 2 x check, pairs/s: %.2f\n", c ? l / c : 0 }'
