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
root=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 2; }
build=$(cd "$1" && pwd)
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
    *) echo "script_cpu.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-cpu.XXXXXX")
bench_name=script_cpu.sh
# processes, free_port, start_redis, cpu_ticks; the traps that stop every
# process and remove $tmp
. "$here/../lib.sh"

start_redis
port=$rd_port rpid=$rd_pid
rcli() { redis-cli -p "$port" "$@"; }

# the script(s) as the build embeds them
sha=$(rcli SCRIPT LOAD "$(cat "$root/src/store/decide.lua")")

# Per algorithm: the parameter set's 7 arguments (alg limit period_us burst
# flags origin tag); the items then name it (1), their cost (1) and group
# (2r: request r of the call). As redis_script.c formats them.
set_args() {
  case $1 in
    fw) echo "1 1000 1000000 0 0 0 fw" ;;
    slog) echo "2 100 1000000 0 0 0 slog" ;;
    sw) echo "3 1000 1000000 0 0 0 sw" ;;
    tb) echo "4 1000 1000000 1000 0 0 tb" ;;
    gcra) echo "5 1000 1000000 1000 0 0 gcra" ;;
    lq) echo "6 1000 1000000 1000 0 0 lq" ;;
    cell) echo "5 100 1000000 200 512 0 cell" ;;
  esac
}

# Runs one redis-benchmark subject; sets us_dec (Redis CPU us per unit) and
# usec (the script's usec_per_call, or -).
measure() { # units_per_command args...
  local per=$1
  shift
  rcli FLUSHALL >/dev/null
  rcli CONFIG RESETSTAT >/dev/null
  local c0 c1
  c0=$(cpu_ticks "$rpid")
  redis-benchmark -p "$port" -c 50 -P 16 -r "$keys" -n "$n" -q "$@" >/dev/null
  c1=$(cpu_ticks "$rpid")
  us_dec=$(awk -v d=$((c1 - c0)) -v hz="$hz" -v n="$n" -v per="$per" \
    'BEGIN { printf "%.2f", d / hz * 1e6 / (n * per) }')
  usec=$(rcli INFO commandstats | tr -d '\r' |
    awk -F'[=,]' '/^cmdstat_(evalsha|fcall|incr):/ { print $6; exit }')
}

printf '| subject | decisions per call | Redis CPU us per decision | x INCR | usec_per_call (commandstats) |\n'
printf '| --- | --- | --- | --- | --- |\n'
measure 1 INCR key:__rand_int__
incr=$us_dec
printf '| INCR | 1 | %s | 1.00 | %s |\n' "$incr" "$usec"

for alg in $only; do
  a=$(set_args "$alg")
  for b in $batches; do
    args=(EVALSHA "$sha" "$b")
    for ((i = 0; i < b; i++)); do args+=("sluice:{k:__rand_int__}:$alg"); done
    args+=(0 1 $a)
    for ((i = 0; i < b; i++)); do args+=(1 1 $((2 * i))); done
    measure "$b" "${args[@]}"
    printf '| script %s | %s | %s | %s | %s |\n' "$alg" "$b" "$us_dec" \
      "$(awk -v a="$us_dec" -v b="$incr" 'BEGIN { printf "%.2f", a / b }')" "$usec"
  done
done

if [ "$sluiced" = 1 ]; then
  [ -x "$build/sluiced" ] || { echo "cpu.sh: $build/sluiced not found" >&2; exit 1; }
  sport=$(free_port)
  cat >"$tmp/sluice.yaml" <<EOF
listen:
  http: 127.0.0.1:0
  grpc: "off"
  resp: 127.0.0.1:$sport
workers: 2
store:
  type: redis
  redis:
    url: redis://127.0.0.1:$port/0
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
  "$build/sluiced" -c "$tmp/sluice.yaml" >"$tmp/sluiced.log" 2>&1 &
  spid=$!
  pids+=("$spid")
  for _ in $(seq 100); do redis-cli -p "$sport" PING >/dev/null 2>&1 && break; sleep 0.1; done
  for alg in $only; do
    rcli FLUSHALL >/dev/null
    rcli CONFIG RESETSTAT >/dev/null
    c0=$(cpu_ticks "$rpid")
    if [ "$alg" = cell ]; then
      redis-benchmark -p "$sport" -c 50 -P 16 -r "$keys" -n "$n" -q \
        CL.THROTTLE key:__rand_int__ 200 100 1 >/dev/null
    else
      redis-benchmark -p "$sport" -c 50 -P 16 -r "$keys" -n "$n" -q \
        SL.CHECK "$alg" key:__rand_int__ >/dev/null
    fi
    c1=$(cpu_ticks "$rpid")
    calls=$(rcli INFO commandstats | tr -d '\r' | awk -F'[=,]' '/^cmdstat_(evalsha|fcall):/ { print $2; exit }')
    us_dec=$(awk -v d=$((c1 - c0)) -v hz="$hz" -v n="$n" 'BEGIN { printf "%.2f", d / hz * 1e6 / n }')
    printf '| sluiced %s | %s | %s | %s | |\n' "$alg" \
      "$(awk -v n="$n" -v c="${calls:-0}" 'BEGIN { if (c > 0) printf "%.1f", n / c; else print "-" }')" \
      "$us_dec" "$(awk -v a="$us_dec" -v b="$incr" 'BEGIN { printf "%.2f", a / b }')"
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
