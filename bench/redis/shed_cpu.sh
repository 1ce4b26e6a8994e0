#!/usr/bin/env bash
# bench/redis/shed_cpu.sh: what a fleet's shedding capacity (shedding:
# {scope: fleet}, docs/protection.md) costs Redis: redis-server's own CPU
# per /v1/check with the capacity in the same script call as the policy,
# against the same sluiced without shedding, in one run on one redis-server,
# runs alternating (medians). h2load --h1 drives /v1/check (a token bucket
# policy, 1000 keys, nothing refused) with X-Priority: default; the capacity's rate
# is high enough that nothing is shed either, so both do the same work but
# for the capacity. Redis CPU: utime + stime of redis-server from /proc
# around each run, over the decisions sluiced made (its /metrics). The
# native module is not loaded (a call with the capacity goes as the script
# anyway).
#
# Usage: bench/redis/shed_cpu.sh BUILD_DIR [--runs R] [--requests N]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh" # usage, die, build_arg, $root, processes, servers, load, CPU, numbers
build_arg "$@"
shift
runs=3
requests=20000
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift ;;
    --requests) requests=$2; shift ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done
bench_tmp shed-cpu

start_redis

config() { # $1: with or without the capacity
  cat <<EOF
listen: {http: "127.0.0.1:0", grpc: "off", resp: "off"}
workers: 1
store:
  type: redis
  redis: {url: "redis://127.0.0.1:$rd_port/0", timeout: 1s, module: "off"}
policies:
  - {name: api, algorithm: token_bucket, rate: 1000000/s, burst: 1000000}
EOF
  [ "$1" = with ] && printf 'shedding: {rate: 10000000/s, burst: 1000000, reserve_critical: 1000, reserve_default: 1000, scope: fleet}\n'
  return 0
}

decisions() { # allowed + limited of policy api from /metrics
  curl -s "http://127.0.0.1:$1/metrics" |
    awk '/^sluice_decisions_total\{.*policy="api"/ {s += $NF} END {printf "%d", s}'
}

one_run() { # $1: with | without; prints Redis us per decision
  config "$1" >"$tmp/$1.yaml"
  sluiced_up http "$tmp/$1.log" "$build/sluiced" -c "$tmp/$1.yaml" || die_log "$tmp/$1.log" "sluiced did not start"
  local pid=$sl_pid port=$sl_http
  local d0 c0 d1 c1
  d0=$(decisions "$port")
  c0=$(cpu_ticks "$rd_pid")
  for k in $(seq 1000); do echo "http://127.0.0.1:$port/v1/check?policy=api&key=k$k"; done >"$tmp/urls"
  h2load --h1 -c16 -n "$requests" -H 'X-Priority: default' -i "$tmp/urls" >"$tmp/$1.h2load"
  c1=$(cpu_ticks "$rd_pid")
  d1=$(decisions "$port")
  grep -q "status codes: $requests 2xx" "$tmp/$1.h2load" || { echo "shed_cpu.sh: not every answer was 2xx:" >&2; grep "status codes" "$tmp/$1.h2load" >&2; }
  stop_pid "$pid"
  awk -v c=$((c1 - c0)) -v d=$((d1 - d0)) -v hz="$hz" 'BEGIN {printf "%.3f", c / hz * 1e6 / d}'
}

with= without=
for r in $(seq "$runs"); do
  without+="$(one_run without) "
  with+="$(one_run with) "
done
w=$(m_med "$with")
o=$(m_med "$without")
echo "load: $(cat /proc/loadavg)"
echo "Redis CPU per /v1/check (us), runs: without [$without] with [$with]"
awk -v w="$w" -v o="$o" 'BEGIN {printf "median: without %.3f us, with the fleet capacity %.3f us (%.2fx)\n", o, w, w / o}'
