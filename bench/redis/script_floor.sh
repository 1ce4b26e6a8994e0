#!/usr/bin/env bash
# bench/redis/script_floor.sh: the floor of a Lua decision store, in
# redis-server's own CPU per item: EVALSHA calls of trivial scripts that do
# for B keys what a decision script must at least do (one MGET, then one SET
# per key), next to INCR and the real script (src/store/decide.lua, or any
# variant of it given with --lua) called as sluiced calls it, in one run on
# one redis-server (issue 13, item 3).
#
#   empty      the call alone: B keys and decide.lua's 2 + 7 + 3 x B arguments
#   mget       one MGET of the B keys
#   set        MGET, then per key SET k v (v formatted with string.format)
#   set-px     MGET, then per key SET k v PX ttl (v and ttl formatted)
#   set-px-pre MGET, then per key SET k v PX ttl (v and ttl precomputed
#              once per call: no formatting per key)
#   decide     src/store/decide.lua, B token-bucket decisions of B requests
#   lua:FILE   (--lua FILE, repeatable) that file, called like decide
# Redis CPU: utime + stime of redis-server (/proc/PID/stat) around each
# subject, divided by the items (keys) it handled; random keys out of K,
# redis-benchmark -c 50 -P 16 as bench/redis/script_cpu.sh.
#
# Usage: bench/redis/script_floor.sh [--n CALLS] [--batch B] [--keys K]
#                                    [--alg tb|gcra|fw|sw|slog|cell]
#                                    [--only "empty mget ..."] [--lua FILE]...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh" # usage, die, build_arg, $root, processes, servers, load, CPU, numbers
n=4000
batch=100
keys=100000
alg=tb
only="empty mget set set-px set-px-pre decide"
luas=()
while [ $# -gt 0 ]; do
  case $1 in
    --n) n=$2; shift ;;
    --batch) batch=$2; shift ;;
    --keys) keys=$2; shift ;;
    --alg) alg=$2; shift ;;
    --only) only=$2; shift ;;
    --lua) luas+=("$2"); shift ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done

bench_tmp floor
start_redis

floor_lua() {
  case $1 in
    empty) echo 'return 0' ;;
    mget) echo 'local v = redis.call("MGET", unpack(KEYS)) return #v' ;;
    set) cat <<'L' ;;
local call, fmt, KEYS = redis.call, string.format, KEYS
local v = call('MGET', unpack(KEYS))
local now = 1700000000000000
for i = 1, #KEYS do call('SET', KEYS[i], fmt('%s|%x:%x', 'tb', now + i, i)) end
return #v
L
    set-px) cat <<'L' ;;
local call, fmt, KEYS = redis.call, string.format, KEYS
local v = call('MGET', unpack(KEYS))
local now = 1700000000000000
for i = 1, #KEYS do
  call('SET', KEYS[i], fmt('%s|%x:%x', 'tb', now + i, i), 'PX', fmt('%d', 1000 + i))
end
return #v
L
    set-px-pre) cat <<'L' ;;
local call, KEYS = redis.call, KEYS
local v = call('MGET', unpack(KEYS))
for i = 1, #KEYS do call('SET', KEYS[i], 'tb|6098a5e8e4000:3e8', 'PX', '1000') end
return #v
L
  esac
}

# one call: decide.lua's arguments for B requests of one decision each
args=("$batch")
for ((i = 0; i < batch; i++)); do args+=("sluice:{k:__rand_int__}:$alg"); done
args+=(0 1 $(decide_params "$alg"))
for ((i = 0; i < batch; i++)); do args+=(1 1 $((2 * i))); done

measure() { # name sha
  rcli FLUSHALL >/dev/null
  # one call first: a subject that answers an error is no measurement
  local r
  r=$(rcli EVALSHA "$2" "${args[@]}" 2>&1 | head -1)
  case $r in
    ERR* | *rror*) die "$1 fails: $r" ;;
  esac
  rb_cpu "$rd_port" "$n" EVALSHA "$2" "${args[@]}"
  printf '| %s | %s | %s | %s |\n' "$1" "$batch" "$(per "$cpu_us" $((n * batch)))" \
    "$(per "$(cmdstat evalsha usec_per_call)" "$batch")"
}

printf '| subject (%s) | items per call | Redis CPU us per item | usec_per_call / items |\n' "$alg"
printf '| --- | --- | --- | --- |\n'
rcli FLUSHALL >/dev/null
rb_cpu "$rd_port" $((n * batch / 4)) INCR key:__rand_int__
printf '| INCR | 1 | %s | |\n' "$(per "$cpu_us" $((n * batch / 4)))"
for s in $only; do
  if [ "$s" = decide ]; then
    src=$(cat "$root/src/store/decide.lua")
  else
    src=$(floor_lua "$s")
  fi
  measure "$s" "$(rcli SCRIPT LOAD "$src")"
done
for f in "${luas[@]}"; do
  measure "lua:$(basename "$f")" "$(rcli SCRIPT LOAD "$(cat "$f")")"
done
