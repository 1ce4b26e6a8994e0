#!/usr/bin/env bash
# bench/redis/run.sh: decisions per second through sluiced with the Redis
# store against node-rate-limiter-flexible's RateLimiterRedis (npm, with an
# ioredis client), both on the same redis-server at the same concurrency, and
# how many Redis calls each makes per decision (DESIGN.md section 7).
#
#   flexible   bench/redis/flexible.js: C async loops in one node process, each
#              awaiting limiter.consume(randomKey) back to back (fixed window of
#              1000000 points per 1 s per key: nothing is refused)
#   sluiced    store.type redis, sync exact, then sync batched: the same fixed
#              window 1000000/s per key, driven at the same concurrency C by
#                RESP: redis-benchmark -c C -P 1 -r K SL.CHECK api key:__rand_int__
#                HTTP: wrk -t 1 -c C on /v1/check?policy=api&key=key:<random> (if wrk is installed)
#                RESP pipelined: redis-benchmark -c C/P -P P (the same C in flight on
#                      fewer connections, as ioredis pipelines the peer's C loops on one)
#   controls   redis-benchmark -c C -P 1 PING on redis-server (what the load
#              generator can do at all) and sluiced with the memory store (what
#              the sluiced side can do without Redis)
#
# Every figure is the median of --runs runs; the subjects take turns within a
# round and the order reverses every other round. Per run, from the
# redis-server: INFO total_commands_processed (commands executed, those run
# inside Lua scripts included) and INFO commandstats, before and after; from
# /proc/PID/stat: CPU time (utime + stime, all threads) of sluiced,
# redis-server and node; the load generator's CPU from the shell's `times`.
# After the measured runs, one short extra run of each subject under
# redis-cli MONITOR splits the commands into those a client sent (calls:
# network requests to Redis) and those Lua scripts ran.
# Everything listens on 127.0.0.1 on ephemeral ports; every process started
# here is stopped on exit. npm packages (bench/redis/package.json) are
# installed once into BUILD_DIR/bench-redis-node and reused.
#
# Usage: bench/redis/run.sh BUILD_DIR [SECONDS] [options]    (after `make build`)
#   SECONDS            length of one measured run (default 5)
#   --runs N           runs of each subject (default 3; the median is reported)
#   --concurrency C    decisions in flight (default 50)
#   --keys K           random keys drawn from K (default 100000)
#   --workers N        sluiced workers (default 2)
#   --sync-interval D  batched mode's store.redis.sync_interval (default 100ms)
#   --pipeline P       the pipelined RESP variant: C/P connections x P in flight (default 10)
#   --only LIST        comma-separated subset of flexible,exact,batched,http,pipe,control
#                      (default all; http and pipe: those variants of the sluiced modes
#                      chosen; control: redis-benchmark PING on redis-server and sluiced
#                      with the memory store, the ceilings of this machine)
#   --no-monitor       leave out the MONITOR samples
#   --out DIR          raw outputs and results.md (default BUILD_DIR/bench-redis)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh" # usage, die, build_arg, $root, processes, servers, load, CPU, numbers

build_arg "$@"
shift
seconds=5
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
runs=3
conc=50
keys=100000
workers=2
sync_interval=100ms
pipeline=10
only=flexible,exact,batched,http,pipe,control
monitor=1
out=
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift ;;
    --concurrency) conc=$2; shift ;;
    --keys) keys=$2; shift ;;
    --workers) workers=$2; shift ;;
    --sync-interval) sync_interval=$2; shift ;;
    --pipeline) pipeline=$2; shift ;;
    --only) only=$2; shift ;;
    --no-monitor) monitor=0 ;;
    --out) out=$2; shift ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done
out=${out:-$build/bench-redis}
want() { [[ ",$only," == *",$1,"* ]]; }

for t in redis-server redis-cli redis-benchmark node npm; do
  command -v $t >/dev/null || die "$t not found (scripts/install-deps.sh installs it)"
done
modes=
want exact && modes+="exact "
want batched && modes+="batched "
if [ -n "$modes" ] || want control; then
  [ -x "$build/sluiced" ] || die "$build/sluiced not found (run make build)"
fi
http=0
if want http && { [ -n "$modes" ] || want control; }; then
  if command -v wrk >/dev/null; then
    http=1
  else
    echo "run.sh: wrk not found: no HTTP runs (apt-get install wrk)" >&2
  fi
fi
# the sync interval in milliseconds: how long a batched sluiced may hold
# decisions before it writes them to Redis
si_ms=$(awk -v d="$sync_interval" 'BEGIN {
  v = d + 0
  if (d ~ /ms$/) print v; else if (d ~ /us$/) print v / 1000; else if (d ~ /s$/) print v * 1000; else print v }')

mkdir -p "$out"
out=$(cd "$out" && pwd)
bench_tmp bench-redis

# ---- the peer: rate-limiter-flexible and ioredis from npm, cached ---------------------

cache=$build/bench-redis-node
npm_peer "$cache" "$here/package.json" || die "cannot install the peer from npm (see above)"

if [ -n "$modes" ] || want control; then
  # A private copy of the binary: a rebuild of BUILD_DIR during the run does
  # not change what is measured.
  cp "$build/sluiced" "$tmp/sluiced"
fi
sluiced=$tmp/sluiced

# ---- processes: bench/lib.sh ----------------------------------------------------

# write_conf MODE FILE: the sluiced config of one sync mode.
write_conf() {
  local extra=
  [ "$1" = batched ] && extra="    sync_interval: $sync_interval"
  if [ "$1" = memory ]; then
    cat >"$2" <<EOF
listen: {http: 127.0.0.1:0, grpc: "off", resp: 127.0.0.1:0}
workers: $workers
store: {type: memory}
policies:
  - {name: api, algorithm: fixed_window, rate: 1000000/s}
EOF
    return
  fi
  cat >"$2" <<EOF
listen: {http: 127.0.0.1:0, grpc: "off", resp: 127.0.0.1:0}
workers: $workers
store:
  type: redis
  redis:
    url: redis://127.0.0.1:$rd_port/0
    timeout: 50ms
    on_failure: open
    sync: $1
$extra
policies:
  - {name: api, algorithm: fixed_window, rate: 1000000/s}
EOF
}

# start_sluiced MODE: sluiced on the config of MODE; sets sl_pid, sl_resp,
# sl_http. Returns 3 (with the log in sl_log) when sluiced exits before it is
# ready (a config this build refuses, for one).
sl_starts=0
start_sluiced() {
  # a new log file each time: sluiced_up must never read an older one
  sl_starts=$((sl_starts + 1))
  sl_log=$tmp/sluiced-$1-$sl_starts.log
  sluiced_up "resp http" "$sl_log" "$sluiced" -c "$tmp/sluiced-$1.yaml"
}

# ---- numbers -----------------------------------------------------------------------

# ratio, per, at_least, parse_rb, parse_wrk, round_ratio: bench/lib.sh

# redis_counters FILE: INFO of the shared redis-server into FILE; prints
# total_commands_processed.
redis_counters() {
  redis-cli -p "$rd_port" INFO everything | tr -d '\r' >"$1"
  sed -n 's/^total_commands_processed://p' "$1"
}
# cmd_breakdown BEFORE AFTER DECISIONS: "cmd:calls/decision,..." from the
# commandstats of two INFO files (info itself left out).
cmd_breakdown() {
  awk -F'[:=,]' -v n="$3" '
    /^cmdstat_/ {
      c = substr($1, 9)
      if (FILENAME == ARGV[1]) { b[c] = $3; bu[c] = $5 } else { a[c] = $3; au[c] = $5 }
    }
    END {
      for (c in a) if (c != "info" && a[c] - b[c] > 0) {
        s = s sprintf("%s %.3f", c, (a[c] - b[c]) / n)
        if (c ~ /^eval/) s = s sprintf(" (%.1f us of Redis time per call)", (au[c] - bu[c]) / (a[c] - b[c]))
        s = s ", "
      }
      sub(/, $/, "", s); print (s == "" ? "-" : s)
    }' "$1" "$2"
}


# ---- the run ---------------------------------------------------------------------------

cpu_model=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
start_redis
{
  echo "# sluice Redis-store benchmark, $started"
  echo "# commit: $(git_rev)"
  echo "# cpu: $cpu_model, $(nproc) CPUs online, $(grep -qw hypervisor /proc/cpuinfo && echo 'virtual machine' || echo 'bare metal'); kernel $(uname -r)"
  [ -e "$sluiced" ] && echo "# sluiced: $(sluiced_about "$sluiced"), $workers workers"
  echo "# peer: node $(node --version), rate-limiter-flexible $(pkgver rate-limiter-flexible), ioredis $(pkgver ioredis)"
  echo "# $(redis-server --version)"
  echo "# $(redis-benchmark --version 2>&1 | head -1)"
  [ "$http" = 1 ] && echo "# $(wrk -v 2>&1 | head -1)"
  echo "# concurrency $conc, keys $keys, $seconds s per run, runs $runs (median); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# redis-server pid $rd_pid port $rd_port; the load generators run on the same $(nproc) CPUs as the servers"
} | tee "$out/machine.txt"

subjects=
want flexible && subjects+="flexible "
for m in $modes; do
  write_conf "$m" "$tmp/sluiced-$m.yaml"
  cp "$tmp/sluiced-$m.yaml" "$out/sluiced-$m.yaml"
  # does this build have the Redis store?
  redis-cli -p "$rd_port" FLUSHALL >/dev/null
  if ! start_sluiced "$m"; then
    cat "$sl_log" >&2
    if grep -q 'not available' "$sl_log"; then
      echo "run.sh: this sluiced has no Redis store yet (above): the sluiced runs are left out" >&2
      modes=
      break
    fi
    die "sluiced ($m) did not start"
  fi
  a=$(redis-cli -p "$sl_resp" SL.CHECK api key:probe | tr '\n' ' ')
  # the key must show up in redis-server (a batched sluiced writes it
  # within sync_interval; the 1 s window's key expires within 1 s)
  k=0
  for _ in $(seq 20); do
    k=$(redis-cli -p "$rd_port" DBSIZE)
    [ "$k" -gt 0 ] && break
    sleep 0.02
  done
  stop_pid "$sl_pid"
  [[ $a =~ ^1\ 1000000\ 999999\  ]] || die "sluiced ($m): SL.CHECK api key:probe answered '$a', not allowed 1000000 999999 ..."
  [ "$k" -gt 0 ] || die "sluiced ($m): SL.CHECK left no key in redis-server: is it using the Redis store?"
  subjects+="resp-$m "
  [ "$http" = 1 ] && subjects+="http-$m "
  want pipe && subjects+="resp-$m-pipe "
done
if want control; then
  write_conf memory "$tmp/sluiced-memory.yaml"
  cp "$tmp/sluiced-memory.yaml" "$out/sluiced-memory.yaml"
  subjects+="ping resp-memory "
  [ "$http" = 1 ] && subjects+="http-memory "
  want pipe && subjects+="resp-memory-pipe "
fi
[ -n "$subjects" ] || die "nothing to measure"
echo "subjects: $subjects"

# the HTTP load: one random key per request
cat >"$tmp/random-key.lua" <<EOF
-- one of $keys keys per request, at random
request = function()
  return wrk.format("GET", "/v1/check?policy=api&key=key:" .. math.random(0, $((keys - 1))))
end
EOF
cp "$tmp/random-key.lua" "$out/random-key.lua"

pconns=$(((conc + pipeline - 1) / pipeline)) # the pipelined variant: conns x pipeline ~ conc in flight
declare -A dps dround cmds calls sl_us rd_us gen_us detail cmdline rok rbad
declare -A label=(
  [flexible]="rate-limiter-flexible \`RateLimiterRedis\` (ioredis, 1 connection, $conc loops)"
  [resp-exact]="sluiced RESP \`SL.CHECK\`, sync exact"
  [resp-batched]="sluiced RESP \`SL.CHECK\`, sync batched ($sync_interval)"
  [http-exact]="sluiced HTTP \`GET /v1/check\`, sync exact"
  [http-batched]="sluiced HTTP \`GET /v1/check\`, sync batched ($sync_interval)"
  [resp-exact-pipe]="sluiced RESP \`SL.CHECK\`, sync exact, $pconns connections x $pipeline pipelined"
  [resp-batched-pipe]="sluiced RESP \`SL.CHECK\`, sync batched ($sync_interval), $pconns connections x $pipeline pipelined"
  [ping]="control: redis-server \`PING\` (the RESP load generator's ceiling)"
  [resp-memory]="control: sluiced RESP \`SL.CHECK\`, memory store (no Redis)"
  [resp-memory-pipe]="control: sluiced RESP \`SL.CHECK\`, memory store (no Redis), $pconns connections x $pipeline pipelined"
  [http-memory]="control: sluiced HTTP \`GET /v1/check\`, memory store (no Redis)"
)
rb_cmd="redis-benchmark -h 127.0.0.1 -p \$SLUICED_RESP -c $conc -P 1 -r $keys -n \$N --csv SL.CHECK api key:__rand_int__"
wrk_cmd="wrk -t 1 -c $conc -d ${seconds}s --latency -s random-key.lua http://127.0.0.1:\$SLUICED_HTTP/v1/check"
cmdline[flexible]="node bench/redis/flexible.js --port \$REDIS_PORT --concurrency $conc --seconds $seconds --warmup 1 --keys $keys --points 1000000 --duration 1"
cmdline[ping]="redis-benchmark -h 127.0.0.1 -p \$REDIS_PORT -c $conc -P 1 -n \$N --csv PING"
for m in exact batched memory; do
  cmdline[resp-$m]=$rb_cmd
  cmdline[http-$m]=$wrk_cmd
  cmdline[resp-$m-pipe]="redis-benchmark -h 127.0.0.1 -p \$SLUICED_RESP -c $pconns -P $pipeline -r $keys -n \$N --csv SL.CHECK api key:__rand_int__"
done

# run_rb PORT CONNS PIPELINE N FILE COMMAND...: one redis-benchmark run.
run_rb() {
  local port=$1 c=$2 pl=$3 n=$4 f=$5
  shift 5
  redis-benchmark -h 127.0.0.1 -p "$port" -c "$c" -P "$pl" -r "$keys" -n "$n" --csv "$@" \
    >"$f" 2>"$f.err" || { cat "$f" "$f.err" >&2; die "redis-benchmark failed: $*"; }
  grep -q '^"test"' "$f" || { cat "$f" "$f.err" >&2; die "redis-benchmark: no CSV: $*"; }
  # redis-benchmark exits at the first error reply; say so if it did
  if grep -qi 'error' "$f" "$f.err"; then
    grep -hi 'error' "$f" "$f.err" | head -3 >&2
    die "redis-benchmark: error replies to $* (see $f)"
  fi
}

# metrics_note PORT FILE: sluiced's /metrics, kept; prints the lines that
# tell about the store (failures, fallbacks, batches) in one line.
metrics_note() {
  curl -s "http://127.0.0.1:$1/metrics" >"$2" 2>/dev/null || true
  grep -v '^#' "$2" | grep -iE 'redis|store|fail|fallback|breaker|batch|sync' | grep -vE ' 0$' | head -8 | tr '\n' ';' || true
}

# redis_health METRICS: "ok failed" from sluice_redis_calls_total (failed:
# every result but ok: timeouts, errors, refused by the open breaker).
redis_health() {
  awk '/^sluice_redis_calls_total\{/ { if ($1 ~ /result="ok"/) ok += $2; else bad += $2 }
       END { printf "%d %d\n", ok, bad }' "$1"
}

settle() { sleep "$(awk -v m="$si_ms" 'BEGIN {print 2 * m / 1000 + 0.1}')"; }

# measure SUBJECT ROUND: one measured run; appends to the per-subject lists.
measure() {
  local s=$1 r=$2 b0 b1 c0 c1 s0=0 s1=0 g0 g1 n rate mode non err note proto rest pl=1 cn=$conc port tpid='' ok bad
  local f=$out/$s-$r
  redis-cli -p "$rd_port" FLUSHALL >/dev/null
  if [ "$s" = flexible ]; then
    children_cpu
    g0=$gen_cpu
    node "$here/flexible.js" --port "$rd_port" --concurrency "$conc" --seconds "$seconds" --warmup 1 \
      --keys "$keys" --points 1000000 --duration 1 --redis-pid "$rd_pid" >"$f.txt" 2>"$f.err" ||
      { cat "$f.txt" "$f.err" >&2; die "flexible.js failed"; }
    children_cpu
    g1=$gen_cpu
    [ "$(kv "$f.txt" errors)" = 0 ] || { cat "$f.txt" "$f.err" >&2; die "flexible.js: Redis errors"; }
    rate=$(kv "$f.txt" decisions_per_s)
    n=$(kv "$f.txt" decisions)
    cmds[$s]+="$(kv "$f.txt" redis_commands_per_decision) "
    rd_us[$s]+="$(kv "$f.txt" redis_cpu_us_per_decision) "
    sl_us[$s]+="$(kv "$f.txt" node_cpu_us_per_decision) "
    detail[$s]="last run: $(cat "$f.txt")"
    printf 'run %d %-17s %9s decisions/s  Redis commands %s/decision  CPU us/decision: node %s, redis-server %s  (%s refused, %s errors)\n' \
      "$r" "$s" "$(fmt_int "$rate")" "$(kv "$f.txt" redis_commands_per_decision)" "$(kv "$f.txt" node_cpu_us_per_decision)" \
      "$(kv "$f.txt" redis_cpu_us_per_decision)" "$(kv "$f.txt" refused)" "$(kv "$f.txt" errors)"
  else
    if [ "$s" = ping ]; then
      proto=resp mode=ping port=$rd_port
      set -- PING
    else
      proto=${s%%-*} rest=${s#*-}
      mode=${rest%-pipe}
      if [ "$rest" != "$mode" ]; then pl=$pipeline cn=$pconns; fi
      start_sluiced "$mode" || { cat "$sl_log" >&2; die "sluiced ($mode) did not start"; }
      port=$sl_resp tpid=$sl_pid
      set -- SL.CHECK api key:__rand_int__
    fi
    # warm-up (connections, script load, allocations) and the size of -n
    if [ "$proto" = resp ]; then
      run_rb "$port" "$cn" "$pl" 20000 "$f-warmup.csv" "$@"
      read -r rate _ <<<"$(parse_rb "$f-warmup.csv")"
      n=$(awk -v r="$rate" -v s="$seconds" 'BEGIN {n = int(r * s / 10000) * 10000; print (n < 20000 ? 20000 : n)}')
    else
      wrk -t 1 -c "$conc" -d 1s -s "$tmp/random-key.lua" "http://127.0.0.1:$sl_http/v1/check" >"$f-warmup.txt" 2>&1 ||
        { cat "$f-warmup.txt" >&2; die "wrk failed"; }
    fi
    settle
    b0=$(redis_counters "$f-info0.txt")
    c0=$(cpu_ticks "$rd_pid")
    [ -n "$tpid" ] && s0=$(cpu_ticks "$tpid")
    children_cpu
    g0=$gen_cpu
    if [ "$proto" = resp ]; then
      run_rb "$port" "$cn" "$pl" "$n" "$f.csv" "$@"
      read -r rate _ <<<"$(parse_rb "$f.csv")"
    else
      wrk -t 1 -c "$conc" -d "${seconds}s" --latency -s "$tmp/random-key.lua" "http://127.0.0.1:$sl_http/v1/check" >"$f.txt" 2>&1 ||
        { cat "$f.txt" >&2; die "wrk failed"; }
      read -r rate _ _ n non err <<<"$(parse_wrk "$f.txt")"
      if [ "$non" != 0 ] || [ "$err" != 0 ]; then
        cat "$f.txt" >&2
        die "wrk: $non non-2xx answers, $err socket errors"
      fi
    fi
    children_cpu
    g1=$gen_cpu
    # what a batched sluiced still holds reaches Redis within sync_interval
    settle
    [ -n "$tpid" ] && s1=$(cpu_ticks "$tpid")
    c1=$(cpu_ticks "$rd_pid")
    b1=$(redis_counters "$f-info1.txt")
    b1=$((b1 - 1)) # the first INFO
    note=
    if [ -n "$tpid" ]; then
      note=$(metrics_note "$sl_http" "$f-metrics.txt")
      stop_pid "$tpid"
      # with on_failure: open a failed Redis call is still an answer (an
      # allowed one, or batched mode going on alone): count them, and say so
      read -r ok bad <<<"$(redis_health "$f-metrics.txt")"
      rok[$s]=$((${rok[$s]:-0} + ok))
      rbad[$s]=$((${rbad[$s]:-0} + bad))
      if [ "$bad" != 0 ]; then
        echo "run.sh: WARNING: $s run $r: $bad of $((ok + bad)) of sluiced's Redis calls failed ($(grep -E '^sluice_redis_(up|breaker_open|calls_total)' "$f-metrics.txt" | tr '\n' ' ')); its figures are not those of a working Redis store" >&2
      fi
    fi
    cmds[$s]+="$(per $((b1 - b0)) "$n" %.3f) "
    rd_us[$s]+="$(per $(((c1 - c0) * 1000000 / hz)) "$n" %.2f) "
    sl_us[$s]+="$(per $(((s1 - s0) * 1000000 / hz)) "$n" %.2f) "
    detail[$s]="last run: $n decisions; commandstats per decision: $(cmd_breakdown "$f-info0.txt" "$f-info1.txt" "$n"); sluiced metrics: ${note:-none}"
    printf 'run %d %-17s %9s decisions/s  Redis commands %s/decision  CPU us/decision: sluiced %s, redis-server %s\n' \
      "$r" "$s" "$(fmt_int "$rate")" "$(per $((b1 - b0)) "$n" %.3f)" "$(per $(((s1 - s0) * 1000000 / hz)) "$n" %.2f)" \
      "$(per $(((c1 - c0) * 1000000 / hz)) "$n" %.2f)"
  fi
  gen_us[$s]+="$(awk -v a="$g0" -v b="$g1" -v n="$n" 'BEGIN {printf "%.2f", (b - a) / n * 1e6}') "
  dps[$s]+="$rate "
  # shellcheck disable=SC2034 # read through a nameref in round_ratio
  dround[$s,$r]=$rate
}

echo
echo "== measured runs: $runs x $seconds s, concurrency $conc, $keys keys =="
for r in $(seq "$runs"); do
  order=$(round_order "$r" "$subjects")
  for s in $order; do measure "$s" "$r"; done
done

# MONITOR SUBJECT: a short extra run under redis-cli MONITOR; counts the
# commands clients sent (calls) and those Lua scripts ran, per decision.
# The peer's connection handshakes (INFO, CLIENT, ...) are left out.
monitor_sample() {
  local s=$1 f=$out/monitor-$1 n mpid mode rest pl=1 cn=$conc c i more
  redis-cli -p "$rd_port" FLUSHALL >/dev/null
  if [ "$s" != flexible ]; then
    rest=${s#*-}
    mode=${rest%-pipe}
    if [ "$rest" != "$mode" ]; then pl=$pipeline cn=$pconns; fi
    start_sluiced "$mode" || die "sluiced ($mode) did not start"
    run_rb "$sl_resp" "$cn" "$pl" 20000 "$f-warmup.csv" SL.CHECK api key:__rand_int__
    settle
  fi
  redis-cli -p "$rd_port" MONITOR >"$f.txt" 2>/dev/null &
  mpid=$!
  pids+=("$mpid")
  sleep 0.3
  if [ "$s" = flexible ]; then
    node "$here/flexible.js" --port "$rd_port" --concurrency "$conc" --seconds 1 --warmup 0 \
      --keys "$keys" --points 1000000 --duration 1 >"$f-run.txt" 2>&1 || { cat "$f-run.txt" >&2; die "flexible.js failed"; }
    n=$(kv "$f-run.txt" all_decisions)
  elif [[ $s == resp-* ]]; then
    n=20000
    run_rb "$sl_resp" "$cn" "$pl" "$n" "$f-run.csv" SL.CHECK api key:__rand_int__
  else
    n=4000 # curl, 50 at a time: slower than wrk, but it counts
    for _ in $(seq "$n"); do
      printf 'url = "http://127.0.0.1:%s/v1/check?policy=api&key=key:%d"\noutput = "/dev/null"\n' "$sl_http" $(((RANDOM * 32768 + RANDOM) % keys))
    done >"$tmp/curl.cfg"
    curl -sS --no-progress-meter -K "$tmp/curl.cfg" --parallel --parallel-max "$conc" 2>"$f-curl.err" || { cat "$f-curl.err" >&2; die "curl failed"; }
  fi
  sleep "$(awk -v m="$si_ms" 'BEGIN {print 2 * m / 1000 + 0.3}')"
  stop_pid "$mpid"
  [ "$s" != flexible ] && stop_pid "$sl_pid"
  # MONITOR lines: 1764000000.123456 [0 127.0.0.1:5000] "EVALSHA" ... or [0 lua] "incrby" ...
  awk -v n="$n" '
    /^[0-9.]+ \[/ {
      lua = ($3 == "lua]")
      match($0, /\] "[^"]*"/); c = tolower(substr($0, RSTART + 3, RLENGTH - 4))
      if (!lua && (c == "info" || c == "client" || c == "select" || c == "ping" || c == "command" || c == "hello" || c == "flushall" || c == "monitor")) next
      if (lua) inner++; else sent++
      k = (lua ? "in Lua: " : "") c; cnt[k]++
    }
    END {
      for (k in cnt) s = s sprintf("%s %.3f, ", k, cnt[k] / n); sub(/, $/, "", s)
      printf "%.3f %.3f %s\n", sent / n, inner / n, s
    }' "$f.txt" >"$f-summary.txt"
  read -r c i more <"$f-summary.txt"
  calls[$s]=$c
  detail[$s]+="; MONITOR sample of $n decisions: calls $c/decision, inside scripts $i/decision (${more:-none})"
  echo "MONITOR $s: $n decisions: $c calls/decision sent to Redis, $i/decision run inside scripts: ${more:-none}"
}

if [ "$monitor" = 1 ]; then
  echo
  echo "== MONITOR samples (not measured runs) =="
  for s in $subjects; do
    case $s in ping|*-memory|*-memory-*) ;; *) monitor_sample "$s" ;; esac
  done
fi

declare -A med
for s in $subjects; do med[$s]=$(m_med "${dps[$s]}"); done
rows=()
declare -A lim
for s in $subjects; do
  rat=- rr=
  if [ -n "${med[flexible]:-}" ]; then
    rat="$(ratio "${med[$s]}" "${med[flexible]}")x"
    [ "$s" != flexible ] && rr=" (per round: $(round_ratio dround "$s" flexible)x)"
  fi
  case $s in
    flexible) cpu="node (limiter + load) $(m_med "${sl_us[$s]}"), redis-server $(m_med "${rd_us[$s]}")" ;;
    ping) cpu="redis-server $(m_med "${rd_us[$s]}"), redis-benchmark $(m_med "${gen_us[$s]}")" ;;
    http-*) cpu="sluiced $(m_med "${sl_us[$s]}"), redis-server $(m_med "${rd_us[$s]}"), wrk $(m_med "${gen_us[$s]}")" ;;
    *) cpu="sluiced $(m_med "${sl_us[$s]}"), redis-server $(m_med "${rd_us[$s]}"), redis-benchmark $(m_med "${gen_us[$s]}")" ;;
  esac
  c=${calls[$s]:-n/a}
  case $s in ping|*-memory|*-memory-*) c=- ;; esac
  h=-
  if [ $((${rok[$s]:-0} + ${rbad[$s]:-0})) -gt 0 ]; then
    h="${rbad[$s]} of $((rok[$s] + rbad[$s]))"
    [ "${rbad[$s]}" != 0 ] && h="**$h: INVALID, failed open**"
  fi
  # the limiter's CPU per decision: sluiced + redis-server, or node (the
  # peer runs in the application's process) + redis-server
  lim[$s]=$(awk -v a="$(m_med "${sl_us[$s]}")" -v b="$(m_med "${rd_us[$s]}")" 'BEGIN {printf "%.1f", a + b}')
  lr=
  [ -n "${lim[flexible]:-}" ] && [ "$s" != ping ] && [ "$s" != flexible ] && lr=" (flexible / this: $(ratio "${lim[flexible]}" "${lim[$s]}")x)"
  [ "$s" = ping ] && lim[$s]=-
  rows+=("| ${label[$s]} | $conc | **$(fmt_int "${med[$s]}")** ($(list_int "${dps[$s]}")) | $rat$rr | $c | $(m_med "${cmds[$s]}") | $h | ${lim[$s]}$lr | $cpu |")
done
verdicts=()
if [ -n "${med[flexible]:-}" ]; then
  for m in exact batched; do
    t=5
    [ $m = batched ] && t=20
    for p in resp http resp-pipe; do
      k=${p%-pipe}-$m
      [ "$p" = resp-pipe ] && k=resp-$m-pipe
      [ -n "${med[$k]:-}" ] || continue
      x=$(ratio "${med[$k]}" "${med[flexible]}")
      inv=
      [ "${rbad[$k]:-0}" != 0 ] && inv=" **(not valid: ${rbad[$k]} of sluiced's Redis calls failed, it answered without Redis)**"
      verdicts+=("- ${label[$k]}: ${x}x rate-limiter-flexible (target >= ${t}x): $(at_least "$x" "$t"); Redis calls per decision ${calls[$k]:-n/a} (target <= 1): $(awk -v c="${calls[$k]:-nan}" 'BEGIN {if (c == "nan" || c == "n/a") print "n/a"; else if (c <= 1) print "met"; else print "missed"}')$inv")
    done
  done
fi

{
  echo
  echo "## Results: $started, $cpu_model, $(nproc) CPUs shared by redis-server, the limiters and the load generators; median of $runs runs of $seconds s"
  echo
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "| tool | concurrency | decisions/s (runs) | vs flexible | Redis calls / decision (MONITOR) | Redis commands executed / decision (INFO) | sluiced's failed Redis calls (all runs, /metrics) | limiter CPU us / decision (limiter + redis-server) | CPU us / decision, by process |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
  echo
  printf '%s\n' "${verdicts[@]}"
  echo
  echo "Commands:"
  for s in $subjects; do echo "- ${label[$s]}: \`${cmdline[$s]}\`"; done
  echo
  echo "Details:"
  for s in $subjects; do echo "- $s: ${detail[$s]}"; done
} | tee "$out/results.md"
echo
echo "raw outputs in $out"
