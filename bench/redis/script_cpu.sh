#!/usr/bin/env bash
# bench/redis/script_cpu.sh: redis-server's own CPU per decision of the Redis
# store's decision script, next to Redis's INCR, in one run on one
# redis-server (issue 13, item 3).
#
#   script   redis-benchmark sends EVALSHA calls of the embedded script
#            (src/store/decide.lua) with B decisions per call, as store.c
#            sends them (one call per loop iteration, request r in group 2r),
#            random keys out of K, pipelined (-P 16, 50 connections)
#   sluiced  (with --sluiced) redis-benchmark -P 16 SL.CHECK against a sluiced
#            with store.type redis, sync exact: what Redis spends per decision
#            when sluiced batches what a loop iteration brings
#   INCR     redis-benchmark INCR key:__rand_int__, the same connections and
#            pipeline: the floor every ratio is against
# Redis CPU: utime + stime of redis-server from /proc/PID/stat around each
# subject, divided by the decisions made (or INCRs). Also printed: the
# script's usec_per_call from INFO commandstats (Redis's own timing of the
# script alone, without reading the command). Memory: used_memory delta over
# M fresh keys "sluice:{key:N}:api" of each bucket algorithm (one decision
# each at 100 per hour, burst 100), per key.
#
# Usage: bench/redis/script_cpu.sh BUILD_DIR [--n N] [--keys K] [--batch "1 16 64"]
#                           [--only "tb gcra lq fw sw slog cell"] [--sluiced]
#                           [--mem M]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh" # usage, die, build_arg, $root, processes, servers, load, CPU, numbers
build_arg "$@"
shift
n=200000
keys=100000
batches="1 16 64"
only="tb gcra lq fw sw slog cell"
sluiced=0
mem=0
while [ $# -gt 0 ]; do
  case $1 in
    --n) n=$2; shift ;;
    --keys) keys=$2; shift ;;
    --batch) batches=$2; shift ;;
    --only) only=$2; shift ;;
    --sluiced) sluiced=1 ;;
    --mem) mem=$2; shift ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done

bench_tmp cpu
start_redis

# the script(s) as the build embeds them
sha=$(rcli SCRIPT LOAD "$(cat "$root/src/store/decide.lua")")

# measure UNITS ARGS...: one redis-benchmark subject of UNITS decisions per
# command; sets us_dec (Redis CPU us per decision) and usec (the script's
# usec_per_call, or -).
measure() {
  local units=$1
  shift
  rcli FLUSHALL >/dev/null
  rb_cpu "$rd_port" "$n" "$@"
  us_dec=$(per "$cpu_us" $((n * units)))
  usec=$(cmdstat 'evalsha|fcall|incr' usec_per_call)
}

printf '| subject | decisions per call | Redis CPU us per decision | x INCR | usec_per_call (commandstats) |\n'
printf '| --- | --- | --- | --- | --- |\n'
measure 1 INCR key:__rand_int__
incr=$us_dec
printf '| INCR | 1 | %s | 1.00 | %s |\n' "$incr" "$usec"

for alg in $only; do
  a=$(decide_params "$alg")
  for b in $batches; do
    args=(EVALSHA "$sha" "$b")
    for ((i = 0; i < b; i++)); do args+=("sluice:{k:__rand_int__}:$alg"); done
    args+=(0 1 $a)
    for ((i = 0; i < b; i++)); do args+=(1 1 $((2 * i))); done
    measure "$b" "${args[@]}"
    printf '| script %s | %s | %s | %s | %s |\n' "$alg" "$b" "$us_dec" "$(ratio "$us_dec" "$incr")" "$usec"
  done
done

if [ "$sluiced" = 1 ]; then
  [ -x "$build/sluiced" ] || die "$build/sluiced not found"
  cat >"$tmp/sluice.yaml" <<EOF
listen:
  http: 127.0.0.1:0
  grpc: "off"
  resp: 127.0.0.1:0
workers: 2
store:
  type: redis
  redis:
    url: redis://127.0.0.1:$rd_port/0
    timeout: 2s
    sync: exact
policies:
  - {name: tb, algorithm: token_bucket, rate: 1000/s, burst: 1000}
  - {name: gcra, algorithm: gcra, rate: 1000/s, burst: 1000}
  - {name: lq, algorithm: leaky_queue, rate: 1000/s, burst: 1000}
  - {name: fw, algorithm: fixed_window, rate: 1000/s}
  - {name: sw, algorithm: sliding_window, rate: 1000/s}
  - {name: slog, algorithm: sliding_log, rate: 100/s}
EOF
  sluiced_up resp "$tmp/sluiced.log" "$build/sluiced" -c "$tmp/sluice.yaml" ||
    die_log "$tmp/sluiced.log" "sluiced did not start"
  for alg in $only; do
    rcli FLUSHALL >/dev/null
    if [ "$alg" = cell ]; then
      rb_cpu "$sl_resp" "$n" CL.THROTTLE key:__rand_int__ 200 100 1
    else
      rb_cpu "$sl_resp" "$n" SL.CHECK "$alg" key:__rand_int__
    fi
    calls=$(cmdstat 'evalsha|fcall' calls)
    us_dec=$(per "$cpu_us" "$n")
    printf '| sluiced %s | %s | %s | %s | |\n' "$alg" \
      "$(awk -v n="$n" -v c="${calls:-0}" 'BEGIN { if (c > 0) printf "%.1f", n / c; else print "-" }')" \
      "$us_dec" "$(ratio "$us_dec" "$incr")"
  done
fi

if [ "$mem" -gt 0 ]; then
  for alg in tb gcra; do
    # 100 per hour, burst 100: one decision leaves a TTL of 36 s, so every key
    # is still there when used_memory is read
    a="${alg/tb/4}"
    a="${a/gcra/5} 100 3600000000 100 0 0 $alg"
    rcli FLUSHALL >/dev/null
    m0=$(rcli INFO memory | tr -d '\r' | awk -F: '/^used_memory:/ { print $2 }')
    python3 - "$sha" "$mem" "$a" >"$tmp/mem.resp" <<'EOF'
import sys
sha, m, a = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
out = sys.stdout
for i in range(m):
    args = ["EVALSHA", sha, "1", "sluice:{key:%d}:api" % i, "0", "1"] + a + ["1", "1", "0"]
    out.write("*%d\r\n" % len(args))
    for x in args:
        out.write("$%d\r\n%s\r\n" % (len(x), x))
EOF
    rcli --pipe <"$tmp/mem.resp" >/dev/null
    m1=$(rcli INFO memory | tr -d '\r' | awk -F: '/^used_memory:/ { print $2 }')
    printf '| memory %s | %s keys | %s B/key (used_memory %s -> %s) | | |\n' "$alg" \
      "$(rcli DBSIZE)" "$(awk -v a="$m0" -v b="$m1" -v m="$mem" 'BEGIN { printf "%.1f", (b - a) / m }')" "$m0" "$m1"
  done
fi
