# bench/lib.sh: what the benchmark scripts share, sourced (never run) by
# bench/redis/*.sh, bench/server/run.sh and bench/grpc/run.sh after they have
# made their temporary directory:
#
#   tmp=$(mktemp -d ...)
#   bench_name=cpu.sh            # for messages (default: the script's name)
#   . "$here/../lib.sh"          # or "$here/lib.sh" from bench/
#
# - processes: `pids` holds every process started and still running (a script
#   appends what it starts: pids+=("$!")); stop_pid PID [SIG] stops one
#   (SIGTERM or SIG, SIGKILL after 10 s) and forgets it; on exit, Ctrl-C or
#   SIGTERM, cleanup stops them all and removes $tmp (installed here as the
#   EXIT, INT and TERM traps).
# - free_port: a free loopback port (the kernel's pick; redis-server and nginx
#   cannot listen on port 0 and say which port they got, so another process
#   could take it in between: the start functions retry with a new port).
# - start_redis [NAME]: a redis-server of the script's own, no persistence,
#   in $tmp/NAME (default redis), with the extra arguments of the array
#   redis_args if the caller set one (--loadmodule ...); waits for PING; sets
#   rd_pid and rd_port.
# - npm_peer CACHE PACKAGE_JSON: the npm packages of PACKAGE_JSON installed
#   into CACHE/node_modules (once; again when the file changed; one installer
#   at a time); returns 1 with npm's log on stderr when npm fails.
# - /proc and times: cpu_ticks PID (utime + stime in clock ticks of a process
#   and of its child processes, all threads included; $hz ticks a second),
#   rss_kib PID, children_cpu (this shell's finished children's CPU seconds
#   into $gen_cpu).
# - numbers: median (of lines on stdin; nan for none), m_med LIST (median of a
#   space-separated list), fmt_int X, list_int LIST (rounded to integers).
# bash only (arrays); the caller runs with set -euo pipefail.

bench_name=${bench_name:-$(basename "$0")}

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
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "$bench_name: interrupted" >&2; exit 130' INT TERM

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

# ---- a redis-server of our own ---------------------------------------------------

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
  cat "$dir/redis.log" >&2
  echo "$bench_name: redis-server did not start" >&2
  exit 1
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
  )
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
