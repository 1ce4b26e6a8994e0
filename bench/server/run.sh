#!/usr/bin/env bash
# bench/server/run.sh: sluiced against the peers a user would pick instead,
# both sides in one run (issue 4, section 8; DESIGN.md section 7):
#   1. RESP    redis-benchmark -c 50 -P 16 -r 100000 of CL.THROTTLE on sluiced,
#              vs the seed's token-bucket Lua script (EVALSHA) on redis-server,
#              vs plain INCR on the same redis-server; also sluiced with one
#              worker, and PING on redis-server (the load generator's ceiling)
#   2. HTTP    wrk -c 50 -t 2 --latency on /v1/check (token bucket 100/s, burst
#              200: most answers are 429) vs nginx limit_req (rate=100r/s
#              burst=200 nodelay), as many nginx workers as sluiced workers
#   3. memory  RSS growth of sluiced for N distinct CL.THROTTLE keys (redis-cli
#              --pipe), vs redis-server's for N keys of the Lua token bucket
#   (perf)     perf stat / perf record of sluiced during an extra RESP run and
#              an extra HTTP run (top symbols in OUT/perf-*.txt)
# Each throughput run is repeated (--runs), the sides interleaved, and the
# median is reported, with the server's CPU time per request (from
# /proc/PID/stat, all threads or worker processes) as a steadier second view
# on a shared machine. Everything listens on 127.0.0.1 on ephemeral ports;
# every process started here is stopped on exit.
#
# Usage: bench/server/run.sh BUILD_DIR [options]      (after `make build`)
#   --runs N           repetitions of each throughput run (default 5)
#   --resp-seconds S   target length of one redis-benchmark run (default 7)
#   --http-duration D  wrk -d (default 10s)
#   --keys N           distinct keys for the memory test (default 1000000)
#   --workers N        sluiced workers = nginx worker_processes (default: nproc)
#   --only LIST        comma-separated subset of resp,http,mem,perf (default all)
#   --no-perf          leave perf out
#   --quick            --runs 1 --resp-seconds 3 --http-duration 4s --keys 200000
#   --out DIR          raw outputs and results.md (default BUILD_DIR/bench-server)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh" # usage, die, build_arg, $root, processes, servers, load, CPU, numbers

build_arg "$@"
shift
runs=5
resp_seconds=7
http_duration=10s
keys=1000000
workers=$(nproc)
only=resp,http,mem,perf
out=
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift ;;
    --resp-seconds) resp_seconds=$2; shift ;;
    --http-duration) http_duration=$2; shift ;;
    --keys) keys=$2; shift ;;
    --workers) workers=$2; shift ;;
    --only) only=$2; shift ;;
    --no-perf) only=${only//perf/} ;;
    --quick) runs=1; resp_seconds=3; http_duration=4s; keys=200000 ;;
    --out) out=$2; shift ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done
out=${out:-$build/bench-server}
want() { [[ ",$only," == *",$1,"* ]]; }

[ -x "$build/sluiced" ] || die "$build/sluiced not found (run make build)"
for t in redis-server redis-cli redis-benchmark; do
  command -v $t >/dev/null || die "$t not found (apt-get install redis-server redis-tools)"
done
if want http; then
  for t in nginx wrk curl; do
    command -v $t >/dev/null || die "$t not found (apt-get install nginx-light wrk curl)"
  done
fi
if want perf && ! command -v perf >/dev/null; then
  echo "run.sh: perf not found: no profile (apt-get install linux-perf)" >&2
  only=${only//perf/}
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
bench_tmp bench-server
# A private copy of the binary: a rebuild of BUILD_DIR during the run does
# not change what is measured.
cp "$build/sluiced" "$tmp/sluiced"
sluiced=$tmp/sluiced

# ---- processes: bench/lib.sh ----------------------------------------------------

# start_sluiced NAME WORKERS: sluiced on its own config; sets sl_pid, sl_resp, sl_http.
start_sluiced() {
  sed "s/^workers: .*/workers: $2/" "$tmp/sluiced.yaml" >"$tmp/conf-$1.yaml"
  sluiced_up "resp http" "$tmp/$1.log" "$sluiced" -c "$tmp/conf-$1.yaml" ||
    die_log "$tmp/$1.log" "sluiced did not start"
}

# ---- numbers -----------------------------------------------------------------------

per_req_us() { awk -v t="$1" -v hz="$hz" -v n="$2" 'BEGIN {if (n > 0) printf "%.2f", t / hz / n * 1e6; else print "nan"}'; }
# ratio, at_least, round_ratio, parse_rb, parse_wrk: bench/lib.sh

# ---- the run ---------------------------------------------------------------------------

cpu_model=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
{
  echo "# sluiced server benchmarks, $started"
  echo "# commit: $(git_rev)"
  echo "# cpu: $cpu_model (family $(lscpu | sed -n 's/^CPU family: *//p' | head -1), model $(lscpu | sed -n 's/^Model: *//p' | head -1)), $(nproc) CPUs online, $(lscpu | sed -n 's/^Thread(s) per core: *//p') thread(s) per core, $(grep -qw hypervisor /proc/cpuinfo && echo 'virtual machine' || echo 'bare metal'); kernel $(uname -r)"
  echo "# sluiced: $(sluiced_about "$sluiced")"
  echo "# $(redis-server --version)"
  echo "# $(redis-benchmark --version 2>&1 | head -1)"
  echo "# $(nginx -v 2>&1)"
  echo "# $(wrk -v 2>&1 | head -1)"
  echo "# workers: sluiced $workers, nginx $workers; runs per figure: $runs (median); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# the load generators (redis-benchmark, wrk) run on the same $(nproc) CPUs as the servers"
} | tee "$out/machine.txt"

cat >"$tmp/sluiced.yaml" <<EOF
listen:
  http: 127.0.0.1:0
  grpc: off
  resp: 127.0.0.1:0
workers: $workers
store:
  type: memory
  max_memory: 1GiB
policies:
  - name: bench
    algorithm: token_bucket
    rate: 100/s
    burst: 200
EOF
cp "$tmp/sluiced.yaml" "$out/sluiced.yaml"

script=$here/token_bucket.lua
rows=() # rows of the summary table

if want resp || want perf; then
  echo
  echo "== 1. RESP: redis-benchmark -c 50 -P 16 -r 100000 -n N --csv =="
  declare -A rcmd rport rpid rn label
  start_sluiced sluiced "$workers"
  rport[sluiced]=$sl_resp
  rpid[sluiced]=$sl_pid
  subjects="sluiced"
  if [ "$workers" != 1 ]; then
    # the same with one worker: redis-server and redis-benchmark take one
    # CPU each, so one sluiced worker is the like-for-like setup on 2 CPUs
    start_sluiced sluiced1 1
    rport[sluiced1]=$sl_resp
    rpid[sluiced1]=$sl_pid
    subjects="sluiced sluiced1"
  fi
  start_redis redis
  sha=$(redis-cli -p "$rd_port" SCRIPT LOAD "$(cat "$script")")
  [[ $sha =~ ^[0-9a-f]{40}$ ]] || die "SCRIPT LOAD failed: $sha"
  echo "sluiced pid ${rpid[sluiced]} (resp ${rport[sluiced]}); redis-server pid $rd_pid (port $rd_port); script sha $sha"
  # ping: the cheapest command there is, a control: what redis-benchmark
  # itself can generate on this machine with the other side doing nothing
  subjects="$subjects lua incr ping"
  rcmd[sluiced]="CL.THROTTLE key:__rand_int__ 200 100 1"
  rcmd[sluiced1]=${rcmd[sluiced]}
  rcmd[lua]="EVALSHA $sha 1 key:__rand_int__ 100 200 1"
  rcmd[incr]="INCR key:__rand_int__"
  rcmd[ping]="PING"
  for s in lua incr ping; do
    rport[$s]=$rd_port
    rpid[$s]=$rd_pid
  done
  wl="$workers workers"
  [ "$workers" = 1 ] && wl="1 worker"
  label[sluiced]="sluiced ($wl) \`${rcmd[sluiced]}\`"
  label[sluiced1]="sluiced (1 worker) \`${rcmd[sluiced]}\`"
  label[lua]="redis-server \`EVALSHA <sha> 1 key:__rand_int__ 100 200 1\` (seed's token bucket)"
  label[incr]="redis-server \`INCR key:__rand_int__\`"
  label[ping]="control: redis-server \`PING\` (what the load generator can do)"

  # rb SUBJECT N OUTFILE: one redis-benchmark run; the Redis sides start
  # from an empty keyspace (INCR and the script's hashes would clash).
  rb() {
    local s=$1 n=$2 f=$3
    [ "${rport[$s]}" = "$rd_port" ] && redis-cli -p "$rd_port" FLUSHALL >/dev/null
    # shellcheck disable=SC2086
    redis-benchmark -h 127.0.0.1 -p "${rport[$s]}" -c 50 -P 16 -r 100000 -n "$n" --csv ${rcmd[$s]} \
      >"$f" 2>"$f.err" || { cat "$f.err" >&2; die "redis-benchmark failed: ${rcmd[$s]}"; }
    grep -q '^"test"' "$f" || { cat "$f" "$f.err" >&2; die "redis-benchmark: no CSV: ${rcmd[$s]}"; }
  }

  # A short run of each side warms it up and sizes -n for about resp_seconds.
  for s in $subjects; do
    n=200000
    [ "$s" = lua ] && n=50000
    [ "$s" = ping ] && n=400000
    rb "$s" "$n" "$out/resp-$s-calibrate.csv"
    read -r rps _ <<<"$(parse_rb "$out/resp-$s-calibrate.csv")"
    rn[$s]=$(awk -v r="$rps" -v s="$resp_seconds" 'BEGIN {n = int(r * s / 10000) * 10000; print (n < 100000 ? 100000 : n)}')
    echo "calibration: $s $(fmt_int "$rps") req/s -> -n ${rn[$s]}"
  done
fi

if want resp; then
  declare -A rrps rround rp50 rp99 rcpu rgen
  for r in $(seq "$runs"); do
    order=$(round_order "$r" "$subjects")
    for s in $order; do
      f=$out/resp-$s-$r.csv
      c0=$(cpu_ticks "${rpid[$s]}")
      children_cpu
      g0=$gen_cpu
      rb "$s" "${rn[$s]}" "$f"
      children_cpu
      g1=$gen_cpu
      c1=$(cpu_ticks "${rpid[$s]}")
      read -r rps p50 p99 <<<"$(parse_rb "$f")"
      cus=$(per_req_us $((c1 - c0)) "${rn[$s]}")
      gus=$(awk -v a="$g0" -v b="$g1" -v n="${rn[$s]}" 'BEGIN {printf "%.2f", (b - a) / n * 1e6}')
      rrps[$s]+="$rps "
      # shellcheck disable=SC2034 # read through a nameref in round_ratio
      rround[$s,$r]=$rps
      rp50[$s]+="$p50 "
      rp99[$s]+="$p99 "
      rcpu[$s]+="$cus "
      rgen[$s]+="$gus "
      printf 'run %d %-8s %9s req/s  p50 %6s ms  p99 %6s ms  server CPU %5s us/req  redis-benchmark CPU %5s us/req\n' \
        "$r" "$s" "$(fmt_int "$rps")" "$p50" "$p99" "$cus" "$gus"
    done
  done
  declare -A rmed
  for s in $subjects; do
    rmed[$s]=$(m_med "${rrps[$s]}")
    rows+=("| RESP | ${label[$s]} | $(fmt_int "${rmed[$s]}") req/s | $(m_med "${rp50[$s]}") / $(m_med "${rp99[$s]}") ms | $(m_med "${rcpu[$s]}") | runs: $(list_int "${rrps[$s]}"); redis-benchmark CPU $(m_med "${rgen[$s]}") us/req |")
  done
  echo "cell keys after the RESP runs: $(redis-cli -p "${rport[sluiced]}" INFO cell | tr -d '\r' | sed -n 's/^cell_keys://p')"
  rl=$(ratio "${rmed[sluiced]}" "${rmed[lua]}")
  ri=$(ratio "${rmed[sluiced]}" "${rmed[incr]}")
  rows+=("| RESP | **sluiced / Lua script** | **${rl}x** | | | ratio of the medians; median of the per-round ratios $(round_ratio rround sluiced lua)x; target >= 8x: $(at_least "$rl" 8) |")
  rows+=("| RESP | **sluiced / Redis INCR** | **${ri}x** | | | ratio of the medians; median of the per-round ratios $(round_ratio rround sluiced incr)x; target >= 1x: $(at_least "$ri" 1) |")
  if [ -n "${rmed[sluiced1]:-}" ]; then
    rows+=("| RESP | sluiced (1 worker) / Lua script, / INCR | $(ratio "${rmed[sluiced1]}" "${rmed[lua]}")x, $(ratio "${rmed[sluiced1]}" "${rmed[incr]}")x | | | per-round ratios: $(round_ratio rround sluiced1 lua)x, $(round_ratio rround sluiced1 incr)x |")
  fi
  rows+=("| RESP | server CPU per request: Lua / sluiced, INCR / sluiced | $(ratio "$(m_med "${rcpu[lua]}")" "$(m_med "${rcpu[sluiced]}")")x, $(ratio "$(m_med "${rcpu[incr]}")" "$(m_med "${rcpu[sluiced]}")")x | | | > 1: sluiced spends less CPU per request |")
fi

if want perf; then
  echo
  echo "== perf: sluiced ($workers workers) during an extra CL.THROTTLE run (not a measured one) =="
  n=$((rn[sluiced] * 14 / resp_seconds))
  # shellcheck disable=SC2086
  redis-benchmark -h 127.0.0.1 -p "${rport[sluiced]}" -c 50 -P 16 -r 100000 -n "$n" --csv ${rcmd[sluiced]} \
    >"$out/perf-load.csv" 2>/dev/null &
  rbpid=$!
  pids+=("$rbpid")
  sleep 1
  perf stat -p "${rpid[sluiced]}" -- sleep 4 2>"$out/perf-stat.txt" || true
  perf record -F 999 -p "${rpid[sluiced]}" -o "$tmp/perf.data" -- sleep 5 >/dev/null 2>"$tmp/perf-record.log" || true
  wait "$rbpid" || true
  untrack "$rbpid"
  grep -E 'task-clock|context-switches|cpu-migrations|elapsed' "$out/perf-stat.txt" || true
  if [ -s "$tmp/perf.data" ]; then
    perf report -i "$tmp/perf.data" --stdio --no-children --sort dso,sym 2>/dev/null \
      | grep -v '^#' | grep -v '^$' | head -40 >"$out/perf-top-symbols.txt" || true
    perf report -i "$tmp/perf.data" --stdio --no-children --sort dso 2>/dev/null \
      | grep -v '^#' | grep -v '^$' | head -10 >"$out/perf-top-dso.txt" || true
    top=$(awk '$2 == "sluiced" {print $NF; exit}' "$out/perf-top-symbols.txt")
    if [ -n "$top" ]; then
      perf annotate -i "$tmp/perf.data" --stdio -s "$top" 2>/dev/null >"$out/perf-annotate-$top.txt" || true
    fi
    echo "top symbols (self time, perf record -F 999 -p sluiced; cpu-clock where the VM has no PMU):"
    head -25 "$out/perf-top-symbols.txt"
    echo "by object:"
    cat "$out/perf-top-dso.txt"
  fi
fi

if want resp || want perf; then
  for s in sluiced sluiced1; do
    [ -n "${rpid[$s]:-}" ] && stop_pid "${rpid[$s]}"
  done
  stop_pid "$rd_pid"
fi

if want http; then
  echo
  echo "== 2. HTTP: wrk -c 50 -t 2 -d $http_duration --latency, one key: mostly 429s =="
  start_sluiced sluiced-http "$workers"
  start_nginx "$workers" on
  echo "sluiced pid $sl_pid (http $sl_http); nginx pid $ng_pid (port $ng_port); $workers workers each"
  declare -A hurl hpid hrps hround hp50 hp99 hnon hreq herr hcpu
  hurl[sluiced]="http://127.0.0.1:$sl_http/v1/check?policy=bench&key=k"
  hurl[nginx]="http://127.0.0.1:$ng_port/v1/check?policy=bench&key=k"
  hpid[sluiced]=$sl_pid
  hpid[nginx]=$ng_pid
  for s in sluiced nginx; do # what each answers, back to back on one connection
    for _ in $(seq 300); do printf 'url = "%s"\noutput = "/dev/null"\n' "${hurl[$s]}"; done >"$tmp/curl-$s.cfg"
    curl -s -w '%{http_code}\n' -K "$tmp/curl-$s.cfg" | sort | uniq -c \
      | awk -v s="$s" '{a = a sprintf("%s x %s, ", $2, $1)} END {sub(/, $/, "", a); print s ": " a " (300 requests back to back)"}'
    curl -si "${hurl[$s]}" >"$out/http-$s-answer.txt" || true
  done
  for s in sluiced nginx; do # warm-up
    wrk -c 50 -t 2 -d 2s "${hurl[$s]}" >/dev/null
  done
  for r in $(seq "$runs"); do
    order=$(round_order "$r" "sluiced nginx")
    for s in $order; do
      f=$out/http-$s-$r.txt
      c0=$(cpu_ticks "${hpid[$s]}")
      wrk -c 50 -t 2 -d "$http_duration" --latency "${hurl[$s]}" >"$f" 2>&1 || { cat "$f" >&2; die "wrk failed"; }
      c1=$(cpu_ticks "${hpid[$s]}")
      read -r rps p50 p99 req non err <<<"$(parse_wrk "$f")"
      cus=$(per_req_us $((c1 - c0)) "$req")
      hrps[$s]+="$rps "
      # shellcheck disable=SC2034 # read through a nameref in round_ratio
      hround[$s,$r]=$rps
      hp50[$s]+="$p50 "
      hp99[$s]+="$p99 "
      hcpu[$s]+="$cus "
      hnon[$s]=$((${hnon[$s]:-0} + non))
      hreq[$s]=$((${hreq[$s]:-0} + req))
      herr[$s]=$((${herr[$s]:-0} + err))
      printf 'run %d %-8s %9s req/s  p50 %6s ms  p99 %6s ms  server CPU %5s us/req  (%s of %s non-2xx, socket errors %s)\n' \
        "$r" "$s" "$(fmt_int "$rps")" "$p50" "$p99" "$cus" "$non" "$req" "$err"
    done
  done
  if want perf; then
    echo
    echo "== perf: sluiced ($workers workers) during an extra wrk run (not a measured one) =="
    wrk -c 50 -t 2 -d 8s "${hurl[sluiced]}" >/dev/null &
    wrkpid=$!
    pids+=("$wrkpid")
    sleep 1
    perf record -F 999 -p "$sl_pid" -o "$tmp/perf-http.data" -- sleep 5 >/dev/null 2>"$tmp/perf-http.log" || true
    wait "$wrkpid" || true
    untrack "$wrkpid"
    if [ -s "$tmp/perf-http.data" ]; then
      perf report -i "$tmp/perf-http.data" --stdio --no-children --sort dso,sym 2>/dev/null \
        | grep -v '^#' | grep -v '^$' | head -40 >"$out/perf-http-top-symbols.txt" || true
      perf report -i "$tmp/perf-http.data" --stdio --no-children --sort dso 2>/dev/null \
        | grep -v '^#' | grep -v '^$' | head -10 >"$out/perf-http-top-dso.txt" || true
      echo "top symbols (self time):"
      head -25 "$out/perf-http-top-symbols.txt"
      echo "by object:"
      cat "$out/perf-http-top-dso.txt"
    fi
  fi
  declare -A hm
  for s in sluiced nginx; do hm[$s]=$(m_med "${hrps[$s]}"); done
  s99=$(m_med "${hp99[sluiced]}")
  n99=$(m_med "${hp99[nginx]}")
  rows+=("| HTTP | sluiced \`GET /v1/check?policy=bench&key=k\` ($workers workers) | $(fmt_int "${hm[sluiced]}") req/s | $(m_med "${hp50[sluiced]}") / $s99 ms | $(m_med "${hcpu[sluiced]}") | runs: $(list_int "${hrps[sluiced]}"); non-2xx ${hnon[sluiced]} of ${hreq[sluiced]}; socket errors ${herr[sluiced]} |")
  rows+=("| HTTP | nginx \`limit_req\` ($workers workers) | $(fmt_int "${hm[nginx]}") req/s | $(m_med "${hp50[nginx]}") / $n99 ms | $(m_med "${hcpu[nginx]}") | runs: $(list_int "${hrps[nginx]}"); non-2xx ${hnon[nginx]} of ${hreq[nginx]}; socket errors ${herr[nginx]} |")
  rh=$(ratio "${hm[sluiced]}" "${hm[nginx]}")
  p99v=$(awk -v a="$s99" -v b="$n99" 'BEGIN {printf "%s: sluiced p99 = %.2fx nginx p99", (a <= b ? "met" : "missed"), a / b}')
  rows+=("| HTTP | **sluiced / nginx** | **${rh}x** | | $(ratio "$(m_med "${hcpu[nginx]}")" "$(m_med "${hcpu[sluiced]}")")x (nginx / sluiced) | ratio of the medians; median of the per-round ratios $(round_ratio hround sluiced nginx)x; target >= 1x: $(at_least "$rh" 1); p99 no worse: $p99v |")
  stop_pid "$sl_pid"
  stop_pid "$ng_pid" QUIT
fi

if want mem; then
  echo
  echo "== 3. memory: $keys distinct keys =="
  # Parameters that keep every key live through the test (1 per hour,
  # burst 200): a key back to a full allowance may be dropped by sluiced
  # (losslessly) or expire in Redis, and would not be counted.
  awk -v n="$keys" 'BEGIN {
    for (i = 0; i < n; i++) {
      k = sprintf("mem:%012d", i)
      printf "*5\r\n$11\r\nCL.THROTTLE\r\n$%d\r\n%s\r\n$3\r\n199\r\n$1\r\n1\r\n$4\r\n3600\r\n", length(k), k
    }
  }' >"$tmp/cl.resp"
  start_sluiced sluiced-mem "$workers"
  redis-cli -p "$sl_resp" CL.THROTTLE mem:warm 199 1 3600 >/dev/null # creates the parameter set
  sleep 1
  s0=$(rss_kib "$sl_pid")
  redis-cli -p "$sl_resp" --pipe <"$tmp/cl.resp" >"$out/mem-sluiced-pipe.txt" 2>&1
  sleep 1
  s1=$(rss_kib "$sl_pid")
  redis-cli -p "$sl_resp" INFO cell | tr -d '\r' >"$out/mem-sluiced-info.txt"
  skeys=$(sed -n 's/^cell_keys://p' "$out/mem-sluiced-info.txt")
  sbytes=$(sed -n 's/^cell_bytes://p' "$out/mem-sluiced-info.txt")
  sevict=$(sed -n 's/^cell_evicted_live://p' "$out/mem-sluiced-info.txt")
  spipe=$(tail -1 "$out/mem-sluiced-pipe.txt")
  stop_pid "$sl_pid"
  sbk=$(awk -v a="$s0" -v b="$s1" -v n="$keys" 'BEGIN {printf "%.1f", (b - a) * 1024 / n}')
  echo "sluiced: VmRSS $s0 KiB -> $s1 KiB: $sbk B/key; cell_keys $skeys, cell_bytes $sbytes, cell_evicted_live $sevict; redis-cli --pipe: $spipe"

  start_redis redis-mem
  sha=$(redis-cli -p "$rd_port" SCRIPT LOAD "$(cat "$script")")
  rate=$(awk 'BEGIN {printf "%.17g", 1 / 3600}') # the same 1 per hour, burst 200
  awk -v n="$keys" -v sha="$sha" -v rate="$rate" 'BEGIN {
    for (i = 0; i < n; i++) {
      k = sprintf("mem:%012d", i)
      printf "*7\r\n$7\r\nEVALSHA\r\n$40\r\n%s\r\n$1\r\n1\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$3\r\n200\r\n$1\r\n1\r\n", sha, length(k), k, length(rate), rate
    }
  }' >"$tmp/lua.resp"
  redis-cli -p "$rd_port" EVALSHA "$sha" 1 mem:warm "$rate" 200 1 >/dev/null
  sleep 1
  r0=$(rss_kib "$rd_pid")
  u0=$(redis-cli -p "$rd_port" INFO memory | tr -d '\r' | sed -n 's/^used_memory://p')
  redis-cli -p "$rd_port" --pipe <"$tmp/lua.resp" >"$out/mem-redis-pipe.txt" 2>&1
  sleep 1
  r1=$(rss_kib "$rd_pid")
  u1=$(redis-cli -p "$rd_port" INFO memory | tr -d '\r' | sed -n 's/^used_memory://p')
  rkeys=$(redis-cli -p "$rd_port" DBSIZE)
  rpipe=$(tail -1 "$out/mem-redis-pipe.txt")
  redis-cli -p "$rd_port" INFO memory | tr -d '\r' >"$out/mem-redis-info.txt"
  stop_pid "$rd_pid"
  rbk=$(awk -v a="$r0" -v b="$r1" -v n="$keys" 'BEGIN {printf "%.1f", (b - a) * 1024 / n}')
  ubk=$(awk -v a="$u0" -v b="$u1" -v n="$keys" 'BEGIN {printf "%.1f", (b - a) / n}')
  echo "redis-server: VmRSS $r0 KiB -> $r1 KiB: $rbk B/key; used_memory $u0 -> $u1: $ubk B/key; DBSIZE $rkeys; redis-cli --pipe: $rpipe"
  rows+=("| memory | sluiced: $keys keys through \`CL.THROTTLE mem:N 199 1 3600\` | $sbk B/key (RSS) | | | VmRSS $s0 -> $s1 KiB; cell_keys $skeys (with 1 warm-up key), cell_evicted_live $sevict; the table's own count: $(awk -v b="$sbytes" -v n="$skeys" 'BEGIN {printf "%.1f", b / n}') B/key |")
  rows+=("| memory | redis-server: $keys keys through the Lua token bucket (\`EVALSHA\`, HSET tokens ts + EXPIRE) | $rbk B/key (RSS) | | | used_memory $u0 -> $u1: $ubk B/key; VmRSS $r0 -> $r1 KiB; DBSIZE $rkeys (with 1 warm-up key) |")
  rows+=("| memory | **redis-server / sluiced** (RSS per key) | **$(ratio "$rbk" "$sbk")x** | | | |")
fi

{
  echo
  echo "## Results: $started, $cpu_model, $(nproc) CPUs shared by the servers and the load generators, median of $runs runs"
  echo
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (at the start: see machine.txt)"
  echo
  echo "| bench | subject | result | p50 / p99 latency | server CPU us/req | notes |"
  echo "| --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
} | tee "$out/results.md"
echo
echo "raw outputs in $out"
