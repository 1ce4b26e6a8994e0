#!/usr/bin/env bash
# bench/redis/cpu.sh: Redis CPU per decision and Redis memory per key (issue 13,
# item 4), in one run on one redis-server, for:
#   incr      Redis INCR
#   incrby    INCRBY + EXPIRE pipelined (what envoyproxy/ratelimit's fixed window sends)
#   lua       the seed's token-bucket Lua script (bench/server/token_bucket.lua, EVALSHA)
#   flexible  node-rate-limiter-flexible RateLimiterRedis (npm, bench/redis/flexible.js)
#   tb gc lq fw sw sl   sluiced exact mode, SL.CHECK of each algorithm (token bucket,
#             GCRA, leaky queue, fixed window, sliding window, sliding log)
#   cell      sluiced exact mode, CL.THROTTLE (Redis mode)
#   mtb mgc mlq mfw msw msl mcell   the same through sluice-redis.so's SLUICE.DECIDE
#             (a second sluiced exact with store.redis.module: require; the
#             first has module: off, so its rows stay the script's)
#   batched   sluiced batched mode (sync_interval 100ms), SL.CHECK token bucket
# and redis-cell's CL.THROTTLE as a quoted figure (6.8 us, issue 13: not packaged
# for Debian, not measured here). sluiced is driven from outside only: its
# config and RESP. The one redis-server runs with --loadmodule
# BUILD_DIR/sluice-redis.so when a module subject is measured.
#
# The load is the same for every subject: bench/redis/loadgen.c (built here with
# cc) on C connections, each writing P decisions at once and waiting for their
# replies (as redis-benchmark -P), N decisions, keys drawn uniformly from K,
# every key "key:" and 7 digits. It talks to redis-server directly (incr, incrby,
# lua) or to sluiced's RESP port (sluiced then calls Redis). rate-limiter-flexible
# runs inside node (bench/redis/flexible.js, C x P async loops on one ioredis
# connection: the same number of decisions in flight). The limit is the same
# for every subject and refuses nothing: 1000 per day, burst 1000 (INCRBY's
# EXPIRE and rate-limiter-flexible's duration 86400 s; CL.THROTTLE k 999 1000
# 86400 1; the Lua script's rate 1000/86400 per second), so state outlives a run.
#
# One measured run of a subject: FLUSHALL, then INFO and redis-server's
# utime+stime (/proc/PID/stat, all threads), the load, (batched: until Redis
# is quiet), INFO and utime+stime again. Redis CPU per decision = the CPU time
# delta / N; cross-check: the usec of INFO commandstats (every command but
# INFO and FLUSHALL) / N. Subjects take turns within a round, the order
# reversed every other round; the table gives medians of --runs runs and the
# ratio to INCR's median. Memory per key: after every CPU run, per subject,
# FLUSHALL, used_memory, M distinct keys once each (keys 0..M-1, the same key
# bytes for every subject), used_memory again; (delta) / M. sluiced's runs
# whose /metrics show a failed Redis call (sluice_redis_calls_total with a
# result other than ok) are marked INVALID (on_failure: open answers without
# Redis).
#
# Usage: bench/redis/cpu.sh BUILD_DIR [options]     (after `make build`)
#   --runs N          measured runs per subject (default 3; medians)
#   --decisions N     decisions per run (default 500000: at 1 us per decision, a run
#                     is 50 ticks of /proc/PID/stat's 10 ms)
#   --keys K          keys drawn from K (default 100000)
#   --conns C         connections (default 50)
#   --pipeline P      decisions written at once per connection (default 16)
#   --mem-keys M      distinct keys of the memory measurement (default 500000)
#   --workers W       sluiced workers (default 2)
#   --only LIST       comma-separated subset of the subjects above (default all)
#   --no-memory       leave the memory measurement out
#   --quick           a smoke run: --runs 1 --decisions 2000 --keys 1000 --mem-keys 2000
#                     (too few for figures: it checks that every subject runs)
#   --node-cache DIR  where the peer is installed from npm (default BUILD_DIR/bench-redis-node)
#   --out DIR         raw outputs and results.md (default BUILD_DIR/bench-redis-cpu)
# Exit status: 0, 1 on a failure, 2 on bad arguments, 3 when npm cannot
# install the peer (offline: the smoke test skips then).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh" # usage, die, build_arg, $root, processes, servers, load, CPU, numbers

build_arg "$@"
shift
all_subjects="incr incrby lua flexible tb gc lq fw sw sl cell mtb mgc mlq mfw msw msl mcell batched"
runs=3
decisions=500000
keys=100000
conns=50
pipeline=16
mem_keys=500000
workers=2
sync_interval=100ms
only=
memory=1
out=
cache=
warmup=1
rd_timeout=5s # sluiced's store.redis.timeout: generous, a timed-out call makes a run INVALID
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift ;;
    --decisions) decisions=$2; shift ;;
    --keys) keys=$2; shift ;;
    --conns) conns=$2; shift ;;
    --pipeline) pipeline=$2; shift ;;
    --mem-keys) mem_keys=$2; shift ;;
    --workers) workers=$2; shift ;;
    --only) only=$2; shift ;;
    --no-memory) memory=0 ;;
    --quick) runs=1; decisions=2000; keys=1000; mem_keys=2000; warmup=0.2; rd_timeout=30s ;;
    --node-cache) cache=$2; shift ;;
    --out) out=$2; shift ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done
out=${out:-$build/bench-redis-cpu}
subjects=
for s in $all_subjects; do
  [ -z "$only" ] || [[ ",$only," == *",$s,"* ]] && subjects+="$s "
done
for s in ${only//,/ }; do [[ " $all_subjects " == *" $s "* ]] || die "unknown subject $s (--only takes: $all_subjects)"; done
[ -n "$subjects" ] || die "nothing to measure"
sluiced_subject() { [[ " tb gc lq fw sw sl cell mtb mgc mlq mfw msw msl mcell batched " == *" $1 "* ]]; }
module_subject() { [[ " mtb mgc mlq mfw msw msl mcell " == *" $1 "* ]]; }
need_sluiced=0 need_node=0 need_module=0
for s in $subjects; do
  sluiced_subject "$s" && need_sluiced=1
  module_subject "$s" && need_module=1
  [ "$s" = flexible ] && need_node=1
done

for t in redis-server redis-cli cc python3 curl; do
  command -v $t >/dev/null || die "$t not found (scripts/install-deps.sh installs it)"
done
if [ "$need_node" = 1 ]; then
  for t in node npm; do command -v $t >/dev/null || die "$t not found (scripts/install-deps.sh installs it)"; done
fi
[ "$need_sluiced" = 0 ] || [ -x "$build/sluiced" ] || die "$build/sluiced not found (run make build)"
[ "$need_module" = 0 ] || [ -f "$build/sluice-redis.so" ] || die "$build/sluice-redis.so not found (run make build)"

mkdir -p "$out"
out=$(cd "$out" && pwd)
bench_tmp bench-cpu

# ---- tools: the load generator, the peer from npm (cached as run.sh does) ------------

cc -O2 -o "$tmp/loadgen" "$here/loadgen.c" || die "cannot build bench/redis/loadgen.c"
if [ "$need_node" = 1 ]; then
  cache=${cache:-$build/bench-redis-node}
  mkdir -p "$cache"
  cache=$(cd "$cache" && pwd)
  npm_peer "$cache" "$here/package.json" || { echo "cpu.sh: cannot install the peer from npm (see above)" >&2; exit 3; }
fi
if [ "$need_sluiced" = 1 ]; then
  # a private copy: a rebuild of BUILD_DIR during the run changes nothing
  cp "$build/sluiced" "$tmp/sluiced"
fi
redis_args=()
if [ "$need_module" = 1 ]; then
  cp "$build/sluice-redis.so" "$tmp/sluice-redis.so"
  redis_args=(--loadmodule "$tmp/sluice-redis.so")
fi

# ---- processes: bench/lib.sh ----------------------------------------------------

# start_sluiced MODE: sluiced in sync MODE (exact or batched; module: exact
# through SLUICE.DECIDE) on the shared redis-server; sets s_pid[MODE],
# s_resp[MODE], s_http[MODE].
declare -A s_pid s_resp s_http
start_sluiced() {
  local m=$1 conf=$tmp/sluiced-$1.yaml log=$tmp/sluiced-$1.log extra= sync=$1 how=off
  [ "$m" = batched ] && extra="    sync_interval: $sync_interval"
  [ "$m" = module ] && sync=exact how=require
  # the same limit for every algorithm; two-letter names (the same key
  # lengths); 1 token refills in 86.4 s, so state outlives a run
  cat >"$conf" <<EOF
listen: {http: 127.0.0.1:0, grpc: "off", resp: 127.0.0.1:0}
workers: $workers
store:
  type: redis
  redis:
    url: redis://127.0.0.1:$rd_port/0
    timeout: $rd_timeout
    on_failure: open
    sync: $sync
    module: $how
$extra
policies:
  - {name: tb, algorithm: token_bucket, rate: 1000/d, burst: 1000}
  - {name: gc, algorithm: gcra, rate: 1000/d, burst: 1000}
  - {name: lq, algorithm: leaky_queue, rate: 1000/d, burst: 1000}
  - {name: fw, algorithm: fixed_window, rate: 1000/d}
  - {name: sw, algorithm: sliding_window, rate: 1000/d}
  - {name: sl, algorithm: sliding_log, rate: 1000/d}
EOF
  cp "$conf" "$out/sluiced-$m.yaml"
  sluiced_up "resp http" "$log" "$tmp/sluiced" -c "$conf" || die_log "$log" "sluiced ($m) did not start"
  s_pid[$m]=$sl_pid s_resp[$m]=$sl_resp s_http[$m]=$sl_http
}

# ---- subjects ----------------------------------------------------------------------

declare -A label port cmd mode
set_subject() { # SUBJECT: label, port and command of one subject
  local s=$1
  case $s in
    incr) label[$s]="Redis \`INCR\`"; port[$s]=$rd_port; cmd[$s]="INCR {k}" ;;
    incrby) label[$s]="Redis \`INCRBY\` + \`EXPIRE\` pipelined (envoyproxy/ratelimit's fixed window)"
      port[$s]=$rd_port; cmd[$s]="INCRBY {k} 1 ;; EXPIRE {k} 86400" ;;
    lua) label[$s]="the seed's token-bucket Lua script (\`EVALSHA\`)"; port[$s]=$rd_port
      cmd[$s]="EVALSHA $sha 1 {k} 0.011574074 1000 1" ;;
    flexible) label[$s]="node-rate-limiter-flexible \`RateLimiterRedis\` $(pkgver rate-limiter-flexible) (ioredis $(pkgver ioredis))" ;;
    tb | gc | lq | fw | sw | sl)
      local -A names=([tb]="token bucket" [gc]=GCRA [lq]="leaky queue" [fw]="fixed window" [sw]="sliding window" [sl]="sliding log")
      label[$s]="sluiced exact, ${names[$s]} (\`SL.CHECK $s\`)"; mode[$s]=exact; cmd[$s]="SL.CHECK $s {k}" ;;
    cell) label[$s]="sluiced exact, \`CL.THROTTLE\` (Redis mode)"; mode[$s]=exact; cmd[$s]="CL.THROTTLE {k} 999 1000 86400 1" ;;
    mtb | mgc | mlq | mfw | msw | msl)
      local -A mnames=([mtb]="token bucket" [mgc]=GCRA [mlq]="leaky queue" [mfw]="fixed window" [msw]="sliding window" [msl]="sliding log")
      label[$s]="sluiced exact + module, ${mnames[$s]} (\`SL.CHECK ${s#m}\`)"; mode[$s]=module; cmd[$s]="SL.CHECK ${s#m} {k}" ;;
    mcell) label[$s]="sluiced exact + module, \`CL.THROTTLE\` (Redis mode)"; mode[$s]=module; cmd[$s]="CL.THROTTLE {k} 999 1000 86400 1" ;;
    batched) label[$s]="sluiced batched ($sync_interval), token bucket (\`SL.CHECK tb\`)"; mode[$s]=batched; cmd[$s]="SL.CHECK tb {k}" ;;
  esac
  [ -n "${mode[$s]:-}" ] && port[$s]=${s_resp[${mode[$s]}]}
  return 0
}

# ---- numbers -----------------------------------------------------------------------

# ratio, per, kv (a key=value of loadgen's or flexible.js's output): bench/lib.sh

# redis_info FILE: INFO everything of the shared redis-server into FILE
redis_info() { redis-cli -p "$rd_port" INFO everything | tr -d '\r' >"$1"; }
field() { sed -n "s/^$2://p" "$1"; }
# usec_delta BEFORE AFTER: the usec of INFO commandstats between two INFO
# files, every command but INFO and FLUSHALL
usec_delta() {
  awk -F'[:=,]' '/^cmdstat_/ {c = substr($1, 9); if (c == "info" || c == "flushall") next
    if (FILENAME == ARGV[1]) b += $5; else a += $5} END {print a - b}' "$1" "$2"
}
# script_calls BEFORE AFTER: EVAL, EVALSHA, FCALL, FCALL_RO and SLUICE.DECIDE
# calls between two INFO files
script_calls() {
  awk -F'[:=,]' '/^cmdstat_(eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro|sluice\.decide):/ {
    if (FILENAME == ARGV[1]) b += $3; else a += $3} END {print a - b}' "$1" "$2"
}
# calls_now: commands processed so far, INFO and FLUSHALL left out
calls_now() {
  redis-cli -p "$rd_port" INFO commandstats | tr -d '\r' |
    awk -F'[:=,]' '/^cmdstat_/ && $1 != "cmdstat_info" && $1 != "cmdstat_flushall" {s += $3} END {print s + 0}'
}
# quiet: waits until redis-server ran no command for 1 s (10 sync intervals:
# a batched sluiced pushes at most 4096 keys per interval, and a loaded
# machine can delay an interval), at most 60 s
quiet() {
  local last now same=0 n
  last=$(calls_now)
  for n in $(seq 600); do
    sleep 0.1
    now=$(calls_now)
    if [ "$now" = "$last" ]; then
      same=$((same + 1))
      [ "$same" -ge 10 ] && return 0
    else
      same=0 last=$now
    fi
  done
  echo "cpu.sh: WARNING: redis-server still busy 60 s after the load" >&2
}
# failed_calls MODE: sluiced's failed Redis calls so far (every result but ok)
failed_calls() {
  curl -s "http://127.0.0.1:${s_http[$1]}/metrics" |
    awk '/^sluice_redis_calls_total\{/ && $1 !~ /result="ok"/ {b += $2} END {printf "%d\n", b}'
}

# load SUBJECT N KEYS FILE [--sequential]: N decisions of SUBJECT
load() {
  local s=$1 n=$2 k=$3 f=$4 seq=${5:-}
  if [ "$s" = flexible ]; then
    node "$here/flexible.js" --port "$rd_port" --redis-pid "$rd_pid" --concurrency $((conns * pipeline)) \
      --warmup "$warmup" --decisions "$n" --keys "$k" --sequential "$([ -n "$seq" ] && echo 1 || echo 0)" --flush 1 \
      --points 1000 --duration 86400 >"$f" 2>"$f.err" || { cat "$f" "$f.err" >&2; die "flexible.js failed"; }
    [ "$(kv "$f" errors)" = 0 ] || { cat "$f" "$f.err" >&2; die "flexible.js: Redis errors"; }
    [ "$(kv "$f" refused)" = 0 ] || { cat "$f" >&2; die "flexible.js: refusals (the limit must refuse nothing)"; }
    return
  fi
  # shellcheck disable=SC2086 # cmd is a word list
  "$tmp/loadgen" -p "${port[$s]}" -c "$conns" -P "$pipeline" -n "$n" -k "$k" $seq --seed "$RANDOM" -- ${cmd[$s]} \
    >"$f" 2>"$f.err" || { cat "$f" "$f.err" >&2; die "loadgen failed ($s)"; }
  [ "$(kv "$f" errors)" = 0 ] || { cat "$f" >&2; die "$s: error replies"; }
}

# ---- the run ---------------------------------------------------------------------------

start_redis
sha=$(redis-cli -p "$rd_port" SCRIPT LOAD "$(cat "$root/bench/server/token_bucket.lua")")
[[ $sha =~ ^[0-9a-f]{40}$ ]] || die "SCRIPT LOAD failed: $sha"
for s in $subjects; do
  case $s in batched) [ -n "${s_pid[batched]:-}" ] || start_sluiced batched ;;
    tb | gc | lq | fw | sw | sl | cell) [ -n "${s_pid[exact]:-}" ] || start_sluiced exact ;;
    mtb | mgc | mlq | mfw | msw | msl | mcell) [ -n "${s_pid[module]:-}" ] || start_sluiced module ;; esac
done
for s in $subjects; do set_subject "$s"; done

started=$(date -u '+%Y-%m-%d %H:%M UTC')
{
  echo "# sluice: Redis CPU per decision and memory per key, $started"
  echo "# commit: $(git_rev)"
  echo "# cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs online, $(grep -qw hypervisor /proc/cpuinfo && echo 'virtual machine' || echo 'bare metal'); kernel $(uname -r)"
  [ "$need_sluiced" = 1 ] && echo "# sluiced: $(sluiced_about "$tmp/sluiced"), $workers workers"
  [ "$need_node" = 1 ] && echo "# peer: node $(node --version), rate-limiter-flexible $(pkgver rate-limiter-flexible), ioredis $(pkgver ioredis)"
  echo "# $(redis-server --version)"
  echo "# load: $conns connections x $pipeline pipelined, $decisions decisions per run, keys from $keys, $runs runs (median); memory: $mem_keys keys; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/machine.txt"

# warm-up: connections, scripts loaded, sluiced's first calls
echo "== warm-up =="
for s in $subjects; do
  redis-cli -p "$rd_port" FLUSHALL >/dev/null
  load "$s" 2000 "$keys" "$out/warmup-$s.txt"
done
[ -n "${mode[batched]:-}" ] && quiet

declare -A rd_us cs_us cmds sl_us bad mem mem_detail mem_note per_call
measure() { # SUBJECT ROUND
  local s=$1 r=$2 f=$out/$1-$2 c0 c1 s0=0 s1=0 n=$decisions b f0 f1 spid=
  redis-cli -p "$rd_port" FLUSHALL >/dev/null
  [ -n "${mode[$s]:-}" ] && { spid=${s_pid[${mode[$s]}]}; f0=$(failed_calls "${mode[$s]}"); }
  if [ "$s" = flexible ]; then
    load "$s" "$n" "$keys" "$f.txt"
    rd_us[$s]+="$(kv "$f.txt" redis_cpu_us_per_decision) "
    cs_us[$s]+="$(kv "$f.txt" redis_usec_per_decision) "
    cmds[$s]+="$(kv "$f.txt" redis_commands_per_decision) "
    sl_us[$s]+="$(kv "$f.txt" node_cpu_us_per_decision) "
    per_call[$s]+="$(awk -v x="$(kv "$f.txt" redis_scripts_per_decision)" 'BEGIN {if (x > 0) printf "%.1f", 1 / x; else print "nan"}') "
  else
    redis_info "$f-info0.txt"
    c0=$(cpu_ticks "$rd_pid")
    [ -n "$spid" ] && s0=$(cpu_ticks "$spid")
    load "$s" "$n" "$keys" "$f.txt"
    [ "${mode[$s]:-}" = batched ] && quiet
    c1=$(cpu_ticks "$rd_pid")
    [ -n "$spid" ] && s1=$(cpu_ticks "$spid")
    redis_info "$f-info1.txt"
    rd_us[$s]+="$(per $(((c1 - c0) * 1000000 / hz)) "$n") "
    cs_us[$s]+="$(per "$(usec_delta "$f-info0.txt" "$f-info1.txt")" "$n") "
    b=$(($(field "$f-info1.txt" total_commands_processed) - $(field "$f-info0.txt" total_commands_processed) - 1))
    cmds[$s]+="$(per "$b" "$n" %.3f) "
    b=$(script_calls "$f-info0.txt" "$f-info1.txt")
    [ "$b" -gt 0 ] && per_call[$s]+="$(per "$n" "$b" %.1f) "
    [ -n "$spid" ] && sl_us[$s]+="$(per $(((s1 - s0) * 1000000 / hz)) "$n") "
  fi
  if [ -n "$spid" ]; then
    f1=$(failed_calls "${mode[$s]}")
    bad[$s]=$((${bad[$s]:-0} + f1 - f0))
  fi
  printf 'run %d %-9s Redis CPU %6s us/decision (commandstats %s), %s decisions/s\n' "$r" "$s" \
    "$(tr ' ' '\n' <<<"${rd_us[$s]}" | grep . | tail -1)" "$(tr ' ' '\n' <<<"${cs_us[$s]}" | grep . | tail -1)" \
    "$(kv "$f.txt" rate)$(kv "$f.txt" decisions_per_s)"
}

echo "== CPU: $runs x $decisions decisions per subject, $conns connections x $pipeline pipelined, keys from $keys =="
for r in $(seq "$runs"); do
  order=$(round_order "$r" "$subjects")
  for s in $order; do measure "$s" "$r"; done
done

if [ "$memory" = 1 ]; then
  echo "== memory: $mem_keys distinct keys per subject =="
  for s in $subjects; do
    f=$out/mem-$s
    if [ "$s" = flexible ]; then
      load "$s" "$mem_keys" "$mem_keys" "$f.txt" --sequential
      d=$(kv "$f.txt" used_memory_delta) k=$(kv "$f.txt" dbsize)
    else
      redis-cli -p "$rd_port" FLUSHALL >/dev/null
      redis_info "$f-info0.txt"
      load "$s" "$mem_keys" "$mem_keys" "$f.txt" --sequential
      if [ "${mode[$s]:-}" = batched ]; then
        # its pushes take M / 4096 intervals: wait for every key, then quiet
        for _ in $(seq 600); do
          [ "$(redis-cli -p "$rd_port" DBSIZE)" -ge "$mem_keys" ] && break
          sleep 0.1
        done
        quiet
      fi
      redis_info "$f-info1.txt"
      d=$(($(field "$f-info1.txt" used_memory) - $(field "$f-info0.txt" used_memory)))
      k=$(redis-cli -p "$rd_port" DBSIZE)
    fi
    mem[$s]=$(per "$d" "$mem_keys" %.0f)
    mem_detail[$s]="used_memory +$d, $k Redis keys"
    # one Redis key per client key for every subject today: fewer means some
    # expired during the load (a fixed window's day ends at 00:00 UTC), or a
    # store that shares Redis keys between client keys
    if [ "$k" -lt "$mem_keys" ]; then
      echo "cpu.sh: WARNING: $s: $k Redis keys after $mem_keys distinct keys: some expired (the figure is then low), or the store shares keys" >&2
      mem_note[$s]=" (only $k keys left)"
    fi
    echo "memory $s: ${mem[$s]} B/key (${mem_detail[$s]})"
  done
fi

# ---- the table ---------------------------------------------------------------------------

# target SUBJECT: the issue's CPU target (x INCR) and memory target (B/key)
cpu_target() { case $1 in tb | gc | lq | fw | cell | mtb | mgc | mlq | mfw | mcell) echo 1 ;; sw | msw) echo 1.5 ;; sl | msl) echo 3 ;; *) echo - ;; esac; }
mem_target() { case $1 in tb | gc | mtb | mgc) echo 90 ;; *) echo - ;; esac; }
verdict() { # VALUE TARGET
  awk -v v="$1" -v t="$2" 'BEGIN {if (t == "-" || v == "nan" || v == "n/a" || v == "") print "-"; else if (v <= t) print "pass"; else printf "**miss** (%.1fx the target)", v / t}'
}
incr_med=$(m_med "${rd_us[incr]:-}")
rows=()
for s in $subjects; do
  med=$(m_med "${rd_us[$s]}")
  rat=-
  [ -n "${rd_us[incr]:-}" ] && rat="$(ratio "$med" "$incr_med")x"
  [ "$rat" = nanx ] && rat=n/a
  t=$(cpu_target "$s") mt=$(mem_target "$s")
  tc=-
  [ "$t" != - ] && tc="<= ${t}x: $(verdict "${rat%x}" "$t")"
  [ "$t" != - ] && [ -z "${rd_us[incr]:-}" ] && tc="<= ${t}x: - (no INCR row)"
  mc=${mem[$s]:-n/a}${mem_note[$s]:-}
  [ "$mt" != - ] && mc="$mc (<= $mt: $(verdict "${mem[$s]:-nan}" "$mt"))"
  inv=
  [ "${bad[$s]:-0}" != 0 ] && inv=" **INVALID: ${bad[$s]} failed Redis calls**"
  rows+=("| ${label[$s]}$inv | **$med** ($(echo ${rd_us[$s]})) | $rat | $(m_med "${cs_us[$s]}") | $(m_med "${cmds[$s]}") | $mc | $tc |")
done
{
  echo
  echo "## Redis CPU per decision: $started, median of $runs runs of $decisions decisions"
  echo
  echo "| subject | Redis CPU us / decision (runs) | vs INCR | commandstats us / decision | Redis commands / decision | Redis memory B / key | CPU target |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
  printf '%s\n' "${rows[@]}"
  echo "| redis-cell \`CL.THROTTLE\` (native module) | 6.8, quoted from issue 13: **not measured here** (not packaged for Debian) | $(r=$(ratio 6.8 "$incr_med"); [ "$r" = nan ] && echo n/a || echo "${r}x") | | | | |"
  echo
  echo "Load: bench/redis/loadgen.c, $conns connections x $pipeline pipelined, keys \"key:\" + 7 digits from $keys, $decisions decisions per run; rate-limiter-flexible: flexible.js, $((conns * pipeline)) async loops on one ioredis connection. Memory: used_memory delta / $mem_keys distinct keys (after FLUSHALL). Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  for s in $subjects; do
    d="Redis CPU $(echo ${rd_us[$s]}); commandstats $(echo ${cs_us[$s]})"
    [ -n "${per_call[$s]:-}" ] && d+="; decisions per script call $(m_med "${per_call[$s]}")"
    [ -n "${sl_us[$s]:-}" ] && d+="; $([ "$s" = flexible ] && echo node || echo sluiced) CPU us/decision $(m_med "${sl_us[$s]}")"
    [ -n "${mem_detail[$s]:-}" ] && d+="; memory: ${mem_detail[$s]}"
    [ -n "${mode[$s]:-}" ] && d+="; failed Redis calls: ${bad[$s]:-0}"
    echo "- $s: $d"
  done
} | tee "$out/results.md"
echo
echo "raw outputs in $out"
