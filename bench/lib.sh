# bench/lib.sh: what the benchmark scripts share, sourced (never run) by
# bench/redis/*.sh, bench/server/run.sh, cpu_req.sh and instr.sh,
# bench/grpc/run.sh and bench/lease/run.sh, first thing after
# `set -euo pipefail`:
#
#   here=$(cd "$(dirname "$0")" && pwd)
#   . "$here/../lib.sh"
#   build_arg "$@"; shift          # BUILD_DIR (or usage / --help)
#   while ...; do case $1 in ...; *) help_or_bad "$1" ;; esac; shift; done
#   bench_tmp cpu                  # $tmp, removed on exit
#
# So each script keeps only what it measures. Sections:
# - the script: bench_name (for messages: the script's name unless set
#   before), usage (the script's top comment, down to `set -euo`), die MSG,
#   die_log FILE MSG (FILE on stderr first), help_or_bad OPT (the last case
#   of an option loop: usage for -h/--help, else exit 2), root (the source
#   tree), build_arg "$@" (sets build from BUILD_DIR; usage without one, or
#   for -h/--help), bench_tmp NAME ($tmp, a fresh directory; a script may also
#   make $tmp itself before it sources this file), git_rev (short commit and
#   "(with local changes)"), sluiced_about BIN (version, $build's build type,
#   sha256).
# - processes: `pids` holds every process started and still running (a script
#   appends what it starts: pids+=("$!")); stop_pid PID [SIG] stops one
#   (SIGTERM or SIG, SIGKILL after 10 s) and forgets it (untrack PID forgets
#   one that ended); on exit, Ctrl-C or SIGTERM, cleanup stops them all and
#   removes $tmp (installed here as the EXIT, INT and TERM traps).
# - ports: free_port (a free loopback port: the kernel's pick; redis-server and
#   nginx cannot listen on port 0 and say which port they got, so another
#   process could take it in between: the start functions retry with a new
#   port), wait_port SECONDS PORT... (until something accepts on each
#   127.0.0.1:PORT, at most SECONDS for each), pin_cpus PIN (server_cpus, client_cpus for taskset: CPU 0
#   and the others when PIN is 1 and there are 2 CPUs or more, else all).
# - servers: start_redis [NAME] (a redis-server of the script's own, no
#   persistence, in $tmp/NAME (default redis), with the extra arguments of the
#   array redis_args if the caller set one (--loadmodule ...); waits for PING;
#   sets rd_pid and rd_port; rcli ARGS... is redis-cli on it); start_nginx
#   WORKERS MASTER (nginx limit_req, rate=100r/s burst=200 nodelay, 429 and no
#   log line per refusal, in the foreground in $tmp/nginx, master_process
#   MASTER (on or off); sets ng_pid, ng_port); sluiced_up PROTOS LOG CMD...
#   (starts CMD, a sluiced maybe behind taskset or valgrind, stderr appended
#   to LOG; waits for its ' ready'; sets sl_pid and sl_http, sl_resp, sl_grpc
#   from the ports its log names, dies when one of PROTOS has none; returns 3,
#   the process reaped, when it exits before it is ready); one_worker_conf
#   RATE (the head of $tmp/sluice.yaml for a sluiced that logs nothing, so
#   names no port: HTTP, RESP and gRPC on the free ports hp, rp, gp, one
#   worker, the domain bench of $tmp/rules (descriptor k, RATE per second),
#   and its request $tmp/body.bin (rls_body k v); the caller appends the
#   rest and waits for the ports).
# - load: conn_load PORT N DEPTH MARK REQUEST (N requests on one keep-alive
#   connection, DEPTH written at once, each batch until MARK was read DEPTH
#   times: one request per read at 1; with CONN_LAT=FILE set, the batches'
#   round-trip times' median and p99 in us written to FILE), rls_body FILE KEY VALUE (a framed
#   RateLimitRequest of domain bench, one descriptor KEY=VALUE), rls_path (its
#   gRPC path), h2load_rls PORT N STREAMS LOG (N ShouldRateLimit calls of
#   $tmp/body.bin on one connection, STREAMS at a time; 1 unless all
#   succeeded), round_order R LIST (LIST, reversed on even rounds R), rb_cpu
#   PORT N ARGS... (redis-benchmark -c 50 -P 16 -r $keys -n N of ARGS against
#   PORT: the redis-server's, or a sluiced's in front of it; the server's
#   stats reset before; sets cpu_us to the redis-server's CPU meanwhile),
#   decide_params ALG (decide.lua's 7 arguments of a parameter set of ALG, as
#   redis_script.c formats them), cmdstat NAMES FIELD (FIELD of the first
#   INFO commandstats line of one of NAMES, a|b), kv FILE KEY (the value of
#   KEY=value in FILE: loadgen's and flexible.js's outputs).
# - /proc and times: cpu_ticks PID (utime + stime in clock ticks of a process
#   and of its child processes, all threads included; $hz ticks a second),
#   cpu_of PID CMD... (runs CMD in this shell, sets cpu_us to the CPU
#   microseconds PID spent meanwhile, returns CMD's status), rss_kib PID,
#   children_cpu (this shell's finished children's CPU seconds into $gen_cpu).
# - numbers: median (of lines on stdin; nan for none), m_med LIST (median of a
#   space-separated list), fmt_int X, list_int LIST (rounded to integers),
#   ratio A B (A / B to 2 places, nan when either is missing), per X N [FMT]
#   (X / N, default %.2f), at_least R T (a ratio R against a target of at
#   least T: "met", "missed: P% of the target", n/a), round_ratio ARRAY A B
#   (the median over the rounds 1..$runs of ARRAY[A,r] / ARRAY[B,r]: the two
#   sides of a round ran next to each other, under the same background load,
#   so it follows slow drifts of a shared machine), parse_rb FILE (redis-benchmark
#   --csv: "rps p50 p99"), parse_wrk FILE (wrk --latency: "rps p50_ms p99_ms
#   requests non2xx socket_errors").
# - the peers from npm: npm_peer CACHE PACKAGE_JSON (the npm packages of
#   PACKAGE_JSON installed into CACHE/node_modules, once; again when the file
#   changed; one installer at a time; exports NODE_PATH; returns 1 with npm's
#   log on stderr when npm fails), pkgver NAME (an installed package's
#   version).
# bash only (arrays); the caller runs with set -euo pipefail.

bench_name=${bench_name:-$(basename "$0")}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# ---- the script ------------------------------------------------------------------

usage() { sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; }
die() { echo "$bench_name: $*" >&2; exit 1; }
die_log() { cat "$1" >&2; shift; die "$@"; }
help_or_bad() {
  case $1 in -h | --help) usage; exit 0 ;; esac
  echo "$bench_name: unknown option $1" >&2
  exit 2
}

build_arg() {
  [ $# -ge 1 ] || { usage >&2; exit 2; }
  case $1 in -h | --help) usage; exit 0 ;; esac
  build=$(cd "$1" && pwd)
}

bench_tmp() {
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-$1.XXXXXX")
}

git_rev() {
  local d=${root:-$(dirname "$0")}
  echo "$(git -C "$d" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$d" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
}

sluiced_about() {
  echo "$("$1" --version 2>&1 | head -1) ($build, CMAKE_BUILD_TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null || echo '?'), sha256 $(sha256sum "$1" | cut -c1-12))"
}

# ---- processes -------------------------------------------------------------------

pids=() # every process started here and still running; cleanup stops them
untrack() {
  local p keep=()
  for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  pids=("${keep[@]}")
}

# Stops one process started here: SIGTERM (or $2), SIGKILL after 10 s.
stop_pid() {
  local pid=$1 sig=${2:-TERM} n
  kill -"$sig" "$pid" 2>/dev/null || true
  for n in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || break
    [ "$n" = 100 ] && kill -KILL "$pid" 2>/dev/null
    sleep 0.1
  done
  wait "$pid" 2>/dev/null || true
  untrack "$pid"
}

cleanup() {
  local p
  trap - EXIT INT TERM
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do stop_pid "$p"; done
  if [ -n "${tmp:-}" ]; then rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'echo "$bench_name: interrupted" >&2; exit 130' INT TERM

# ---- ports -----------------------------------------------------------------------

free_port() {
  if command -v python3 >/dev/null; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  else
    local p
    while :; do
      p=$((32768 + RANDOM % 28000))
      ss -Htan "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return; }
    done
  fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
  local tenths=$(($1 * 10)) p n
  shift
  for p in "$@"; do
    for n in $(seq "$tenths"); do
      port_open "$p" && continue 2
      sleep 0.1
    done
    die "nothing listens on 127.0.0.1:$p"
  done
}

pin_cpus() {
  local cpus
  cpus=$(nproc)
  server_cpus=0-$((cpus - 1)) client_cpus=0-$((cpus - 1))
  if [ "$1" = 1 ] && [ "$cpus" -ge 2 ]; then server_cpus=0 client_cpus=1-$((cpus - 1)); fi
}

# ---- servers ---------------------------------------------------------------------

start_redis() {
  local dir=$tmp/${1:-redis} attempt n
  mkdir -p "$dir"
  for attempt in 1 2 3 4 5; do
    rd_port=$(free_port)
    redis-server --bind 127.0.0.1 --port "$rd_port" --save "" --appendonly no \
      --dir "$dir" --logfile "$dir/redis.log" --daemonize no --protected-mode yes \
      ${redis_args[@]+"${redis_args[@]}"} &
    rd_pid=$!
    pids+=("$rd_pid")
    for n in $(seq 100); do
      [ "$(redis-cli -p "$rd_port" PING 2>/dev/null)" = PONG ] && return 0
      kill -0 "$rd_pid" 2>/dev/null || break
      sleep 0.1
    done
    echo "$bench_name: redis-server on port $rd_port: attempt $attempt failed" >&2
    stop_pid "$rd_pid"
  done
  die_log "$dir/redis.log" "redis-server did not start"
}

rcli() { redis-cli -p "$rd_port" "$@"; }

start_nginx() {
  local dir=$tmp/nginx workers=$1 master=$2 attempt n
  mkdir -p "$dir/html"
  # its workers run as nobody when started as root: they must be able to
  # look under the prefix (try_files stats a file that does not exist)
  chmod 755 "$tmp"
  for attempt in 1 2 3 4 5; do
    ng_port=$(free_port)
    # `return 204` would answer in the rewrite phase, before limit_req runs
    # (preaccess phase): nothing would ever be limited. try_files answers
    # in its own phase, after limit_req, with the same 204 and no body.
    # limit_req_log_level info with error_log at warn: no log line per
    # rejection (nginx's default writes one, at error level).
    cat >"$dir/nginx.conf" <<EOF
daemon off;
master_process $master;
worker_processes $workers;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/client_body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
  keepalive_requests 100000000;
  limit_req_zone \$binary_remote_addr zone=b:10m rate=100r/s;
  server {
    listen 127.0.0.1:$ng_port;
    root $dir/html;
    location / {
      limit_req zone=b burst=200 nodelay;
      limit_req_status 429;
      limit_req_log_level info;
      try_files /nonexistent =204;
    }
  }
}
EOF
    nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" &
    ng_pid=$!
    pids+=("$ng_pid")
    for n in $(seq 100); do
      kill -0 "$ng_pid" 2>/dev/null || break
      port_open "$ng_port" && return 0
      sleep 0.1
    done
    echo "$bench_name: nginx on port $ng_port: attempt $attempt failed" >&2
    stop_pid "$ng_pid" QUIT
  done
  die_log "$dir/error.log" "nginx did not start"
}

one_worker_conf() {
  hp=$(free_port) rp=$(free_port) gp=$(free_port)
  mkdir -p "$tmp/rules"
  cat >"$tmp/rules/bench.yaml" <<EOF
domain: bench
descriptors:
  - key: k
    rate_limit: {unit: second, requests_per_unit: $1}
EOF
  cat >"$tmp/sluice.yaml" <<EOF
listen: {http: 127.0.0.1:$hp, resp: 127.0.0.1:$rp, grpc: 127.0.0.1:$gp}
workers: 1
domains: $tmp/rules
EOF
  rls_body "$tmp/body.bin" k v
}

sluiced_up() {
  local protos=$1 log=$2 n p
  shift 2
  "$@" 2>>"$log" &
  sl_pid=$!
  pids+=("$sl_pid")
  for n in $(seq 300); do
    grep -q ' ready' "$log" 2>/dev/null && break
    if ! kill -0 "$sl_pid" 2>/dev/null; then
      wait "$sl_pid" 2>/dev/null || true
      untrack "$sl_pid"
      return 3
    fi
    sleep 0.1
  done
  sl_http=$(log_port "$log" http)
  sl_resp=$(log_port "$log" resp)
  sl_grpc=$(log_port "$log" grpc)
  for p in $protos; do
    [ -n "$(log_port "$log" "$p")" ] || die_log "$log" "sluiced: no $p port in its log"
  done
}
log_port() { sed -n "s/.*listening $2 on 127\.0\.0\.1:\([0-9]*\).*/\1/p" "$1" | head -1; }

# ---- load ------------------------------------------------------------------------

conn_load() {
  python3 - "$@" <<'EOF'
import os, socket, sys, time
port, n, depth = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
mark, req = os.fsencode(sys.argv[4]), os.fsencode(sys.argv[5])
lat_file, lat, now = os.environ.get("CONN_LAT"), [], time.perf_counter_ns
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
done = 0
while done < n:
    k = min(depth, n - done)
    t0 = now()
    s.sendall(req * k)
    buf, got = b"", 0
    while got < k:
        d = s.recv(1 << 16)
        if not d: sys.exit("connection closed")
        buf += d
        got = buf.count(mark)
    lat.append(now() - t0)
    done += k
if lat_file:
    lat.sort()
    with open(lat_file, "w") as f:
        f.write(f"{lat[len(lat) // 2] / 1000:.1f} {lat[min(len(lat) - 1, len(lat) * 99 // 100)] / 1000:.1f}\n")
EOF
}

rls_path=/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit

rls_body() {
  python3 - "$@" <<'EOF'
import os, struct, sys
def fld(tag, b): return bytes([tag, len(b)]) + b
entry = fld(0x0a, fld(0x0a, os.fsencode(sys.argv[2])) + fld(0x12, os.fsencode(sys.argv[3])))
req = fld(0x0a, b"bench") + fld(0x12, entry)
open(sys.argv[1], "wb").write(b"\0" + struct.pack(">I", len(req)) + req)
EOF
}

h2load_rls() {
  h2load -n "$2" -c 1 -m "$3" -d "$tmp/body.bin" -H 'content-type: application/grpc' \
    -H 'te: trailers' "http://127.0.0.1:$1$rls_path" >"$4" 2>&1
  grep -q "$2 succeeded" "$4"
}

round_order() {
  if [ $(($1 % 2)) = 0 ]; then tr ' ' '\n' <<<"$2" | grep . | tac | tr '\n' ' '; else echo "$2"; fi
}

rb_cpu() {
  local port=$1 n=$2
  shift 2
  rcli CONFIG RESETSTAT >/dev/null
  cpu_of "$rd_pid" redis-benchmark -p "$port" -c 50 -P 16 -r "$keys" -n "$n" -q "$@" >/dev/null
}

decide_params() {
  case $1 in
    fw) echo "1 1000 1000000 0 0 0 fw" ;;
    slog) echo "2 100 1000000 0 0 0 slog" ;;
    sw) echo "3 1000 1000000 0 0 0 sw" ;;
    tb) echo "4 1000 1000000 1000 0 0 tb" ;;
    gcra) echo "5 1000 1000000 1000 0 0 gcra" ;;
    lq) echo "6 1000 1000000 1000 0 0 lq" ;;
    cell) echo "5 100 1000000 200 512 0 cell" ;;
    *) die "no parameter set for algorithm $1" ;;
  esac
}

cmdstat() {
  rcli INFO commandstats | tr -d '\r' | awk -F'[:=,]' -v f="$2" -v re="^cmdstat_($1)\$" '
    $1 ~ re { for (i = 2; i < NF; i += 2) if ($i == f) { print $(i + 1); exit } }'
}

# ---- /proc and times -------------------------------------------------------------

hz=$(getconf CLK_TCK)

cpu_ticks() {
  local p t=0 c
  for p in "$1" $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    c=$(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)
    t=$((t + c))
  done
  echo "$t"
}

cpu_of() {
  local pid=$1 t0 rc=0
  shift
  t0=$(cpu_ticks "$pid")
  "$@" || rc=$?
  cpu_us=$((($(cpu_ticks "$pid") - t0) * 1000000 / hz))
  return "$rc"
}

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# The `times` builtin must run in this shell (not in a $(...) subshell), so
# it is called as `children_cpu; x=$gen_cpu`.
children_cpu() {
  times >"$tmp/times"
  gen_cpu=$(awk 'NR == 2 {
    n = split($0, f, " "); s = 0
    for (i = 1; i <= n; i++) { split(f[i], a, "m"); sub(/s$/, "", a[2]); s += a[1] * 60 + a[2] }
    print s
  }' "$tmp/times")
}

# ---- numbers ---------------------------------------------------------------------

median() { sort -g | awk '{a[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
m_med() { tr ' ' '\n' <<<"$1" | { grep . || true; } | median; } # nan for an empty list
fmt_int() { awk -v x="$1" 'BEGIN {printf "%.0f", x}'; }
list_int() { local x s=; for x in $1; do s+="$(fmt_int "$x") "; done; echo "${s% }"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "nan" || b == "nan" || a == "" || b + 0 <= 0) print "nan"; else printf "%.2f", a / b}'; }
kv() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p"; }
per() { awk -v a="$1" -v n="$2" -v f="${3:-%.2f}" 'BEGIN {if (n > 0) printf f, a / n; else print "nan"}'; }
at_least() { awk -v r="$1" -v t="$2" 'BEGIN {if (r == "nan") print "n/a"; else if (r >= t) printf "met"; else printf "missed: %.0f%% of the target", 100 * r / t}'; }

round_ratio() {
  local -n arr=$1
  local r v=
  for r in $(seq "$runs"); do v+="$(ratio "${arr[$2,$r]}" "${arr[$3,$r]}") "; done
  awk -v x="$(m_med "$v")" 'BEGIN {printf "%.2f", x}'
}

# redis-benchmark --csv: "test","rps","avg","min","p50","p95","p99","max" -> "rps p50 p99"
parse_rb() { awk -F'","' 'NR == 2 {print $2, $5, $7}' "$1"; }

# wrk --latency -> "rps p50_ms p99_ms requests non2xx socket_errors"
parse_wrk() {
  awk '
    function ms(v) {
      if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
      if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
      if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1000
      return v + 0
    }
    /^ +50%/ {p50 = ms($2)}
    /^ +99%/ {p99 = ms($2)}
    / requests in / {req = $1}
    /Non-2xx or 3xx responses:/ {non = $NF}
    /Socket errors:/ {gsub(/,/, ""); err = $4 + $6 + $8 + $10}
    /^Requests\/sec:/ {rps = $2}
    END {printf "%s %s %s %s %d %d\n", rps, p50, p99, req, non, err}
  ' "$1"
}

# ---- the peers from npm ----------------------------------------------------------

npm_peer() {
  local cache=$1 pkg=$2
  mkdir -p "$cache"
  (
    # one installer at a time (several runs may share the cache)
    if command -v flock >/dev/null; then
      exec 9>"$cache/.lock"
      flock 9
    fi
    local have=1 d
    for d in $(node -e 'console.log(Object.keys(require(process.argv[1]).dependencies).join(" "))' "$pkg"); do
      [ -d "$cache/node_modules/$d" ] || have=0
    done
    if [ "$have" = 0 ] || ! cmp -s "$pkg" "$cache/package.json"; then
      echo "$bench_name: installing $(node -e 'const d = require(process.argv[1]).dependencies; console.log(Object.entries(d).map(([k, v]) => k + "@" + v).join(" "))' "$pkg") into $cache" >&2
      rm -rf "$cache/node_modules" "$cache/package.json"
      cp "$pkg" "$cache/package.json.new"
      mv "$cache/package.json.new" "$cache/package.json"
      if ! (cd "$cache" && npm install --no-audit --no-fund --no-package-lock --loglevel=error >npm.log 2>&1); then
        cat "$cache/npm.log" >&2
        rm -rf "$cache/node_modules" "$cache/package.json"
        exit 1
      fi
    fi
  ) || return 1
  npm_cache=$cache
  export NODE_PATH=$cache/node_modules
}
pkgver() { node -p "require('$npm_cache/node_modules/$1/package.json').version"; }
