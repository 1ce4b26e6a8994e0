#!/usr/bin/env bash
# bench/grpc/run.sh: sluiced's Envoy rate limit service (gRPC) against its own
# HTTP API in the same run (issue 7, "Benchmark"):
#   gRPC  h2load posting one framed ShouldRateLimit request (domain bench,
#         descriptor user=alice: a token bucket 100/s, burst 200, from a rule
#         file) over HTTP/2 cleartext, CLIENTS connections x STREAMS
#         concurrent streams
#   HTTP  h2load --h1 on GET /v1/check?policy=bench&key=alice (the same
#         token bucket as a policy), CLIENTS connections x STREAMS pipelined
# Both ask about one hot key, so after the first 200 almost every answer is
# "over the limit" (OVER_LIMIT / 429): the same decision work on both sides.
# Reported per run and as medians: decisions per second (h2load) and the
# server's CPU time per decision (utime + stime of sluiced from
# /proc/PID/stat, all threads, before and after each run). The two sides
# alternate, so the machine's noise hits both. With 2 or more CPUs sluiced is
# pinned to CPU 0 and h2load to the others (taskset), so that the load
# generator does not steal the server's core.
#
# Usage: bench/grpc/run.sh BUILD_DIR [options]      (after `make build`)
#   --runs N        alternating runs of each side (default 5)
#   --requests N    requests per run (default 500000)
#   --clients C     connections (default 16)
#   --streams M     concurrent streams per connection / pipelined requests (default 100)
#   --workers W     sluiced workers (default 1)
#   --no-pin        do not pin the server and the load generator to CPUs
#   --quick         --runs 2 --requests 200000
#   --out DIR       raw outputs and results.md (default BUILD_DIR/bench-grpc)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh" # usage, die, build_arg, $root, processes, servers, load, CPU, numbers

build_arg "$@"
shift
runs=5 requests=500000 clients=16 streams=100 workers=1 pin=1 out=
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift ;;
    --requests) requests=$2; shift ;;
    --clients) clients=$2; shift ;;
    --streams) streams=$2; shift ;;
    --workers) workers=$2; shift ;;
    --no-pin) pin=0 ;;
    --quick) runs=2; requests=200000 ;;
    --out) out=$2; shift ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done
out=${out:-$build/bench-grpc}
[ -x "$build/sluiced" ] || die "$build/sluiced not found (run make build)"
for t in h2load nghttp python3; do
  command -v $t >/dev/null || die "$t not found (apt-get install nghttp2-client python3)"
done
cpus=$(nproc)
[ "$cpus" -ge 2 ] || pin=0
mkdir -p "$out"
out=$(cd "$out" && pwd)
bench_tmp bench-grpc
cp "$build/sluiced" "$tmp/sluiced" # a rebuild during the run changes nothing

# ---- the server ----------------------------------------------------------------------
mkdir -p "$tmp/rules"
cat >"$tmp/rules/bench.yaml" <<'YAML'
domain: bench
descriptors:
  - key: user
    rate_limit:
      unit: second
      requests_per_unit: 100
      algorithm: token_bucket
      burst: 200
YAML
cat >"$tmp/sluice.yaml" <<YAML
listen:
  http: 127.0.0.1:0
  grpc: 127.0.0.1:0
  resp: "off"
workers: $workers
domains: rules
policies:
  - name: bench
    algorithm: token_bucket
    rate: 100/s
    burst: 200
YAML
pin_cpus "$pin"
threads=$(( pin ? cpus - 1 : cpus ))
[ "$threads" -le "$clients" ] || threads=$clients
sluiced_up "grpc http" "$tmp/sluiced.log" taskset -c "$server_cpus" "$tmp/sluiced" -c "$tmp/sluice.yaml" ||
  die_log "$tmp/sluiced.log" "sluiced did not start"
pid=$sl_pid grpc_port=$sl_grpc http_port=$sl_http

# ---- the request: RateLimitRequest{domain: "bench", descriptors: [{entries: [user=alice]}]}
rls_body "$tmp/body.bin" user alice
rls=http://127.0.0.1:$grpc_port$rls_path
check=http://127.0.0.1:$http_port/v1/check?policy=bench\&key=alice
# one call first: it must be a real answer (grpc-status 0 in the trailers)
nghttp -v -d "$tmp/body.bin" -H 'content-type: application/grpc' -H 'te: trailers' "$rls" \
  >"$out/sanity.txt" 2>&1 || true
grep -q 'grpc-status: 0' "$out/sanity.txt" || { cat "$out/sanity.txt" >&2; die "no gRPC answer"; }

# sluiced's CPU (cpu_ticks) and h2load's (children_cpu): bench/lib.sh

# run SIDE N: one h2load run; appends "side req_per_s decisions server_ticks client_seconds"
# to $out/runs.txt
run() {
  local side=$1 i=$2 log=$out/$1-$2.txt t0 t1 rps done bad c0 c1
  children_cpu
  c0=$gen_cpu
  t0=$(cpu_ticks "$pid")
  if [ "$side" = grpc ]; then
    taskset -c "$client_cpus" h2load -n "$requests" -c "$clients" -m "$streams" -t "$threads" \
      -d "$tmp/body.bin" -H 'content-type: application/grpc' -H 'te: trailers' "$rls" >"$log" 2>&1
  else
    taskset -c "$client_cpus" h2load --h1 -n "$requests" -c "$clients" -m "$streams" \
      -t "$threads" "$check" >"$log" 2>&1
  fi
  t1=$(cpu_ticks "$pid")
  children_cpu
  c1=$gen_cpu
  rps=$(sed -n 's/^finished in [0-9.]*m*s, \([0-9.]*\) req\/s.*/\1/p' "$log")
  done=$(sed -n 's/^requests: .* \([0-9]*\) done.*/\1/p' "$log")
  bad=$(sed -n 's/^requests: .* \([0-9]*\) errored.*/\1/p' "$log")
  [ -n "$rps" ] && [ -n "$done" ] || { cat "$log" >&2; die "h2load failed ($side)"; }
  [ "${bad:-0}" = 0 ] || die "$side: $bad requests errored (see $log)"
  echo "$side $rps $done $((t1 - t0)) $(awk -v a="$c0" -v b="$c1" 'BEGIN {print b - a}')" \
    >>"$out/runs.txt"
  awk -v s="$side" -v r="$rps" -v d="$done" -v t="$((t1 - t0))" -v hz="$hz" -v i="$i" \
    -v c="$(awk -v a="$c0" -v b="$c1" 'BEGIN {print b - a}')" 'BEGIN {
      printf "run %d %-5s %9.0f decisions/s  server %5.2f us CPU per decision  h2load %5.2f us\n",
             i, s, r, t / hz * 1e6 / d, c * 1e6 / d }'
}

: >"$out/runs.txt"
echo "sluiced $workers worker(s) on CPU $server_cpus, h2load $threads thread(s) on CPU $client_cpus;" \
     "$clients connections x $streams streams, $requests requests per run, $runs runs"
run grpc 0 >/dev/null # warm-up (and the bucket runs dry)
: >"$out/runs.txt"
for i in $(seq "$runs"); do
  run grpc "$i"
  run http "$i"
done

g_rps=$(awk '$1 == "grpc" {print $2}' "$out/runs.txt" | median)
h_rps=$(awk '$1 == "http" {print $2}' "$out/runs.txt" | median)
g_us=$(awk -v hz="$hz" '$1 == "grpc" {print $4 / hz * 1e6 / $3}' "$out/runs.txt" | median)
h_us=$(awk -v hz="$hz" '$1 == "http" {print $4 / hz * 1e6 / $3}' "$out/runs.txt" | median)
g_cl=$(awk '$1 == "grpc" {print $5 * 1e6 / $3}' "$out/runs.txt" | median)
h_cl=$(awk '$1 == "http" {print $5 * 1e6 / $3}' "$out/runs.txt" | median)
{
  echo "# sluiced gRPC benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "commit $(git_rev)," \
       "$(lscpu | sed -n 's/^Model name: *//p' | head -1), $cpus CPUs;" \
       "sluiced $workers worker(s) on CPU $server_cpus, h2load $threads thread(s) on CPU $client_cpus," \
       "$clients connections x $streams streams, $requests requests x $runs runs, medians."
  echo
  echo "| side | decisions/s | server CPU per decision | decisions per server CPU-second | h2load CPU per request |"
  echo "| --- | ---: | ---: | ---: | ---: |"
  awk -v g="$g_rps" -v h="$h_rps" -v gu="$g_us" -v hu="$h_us" -v gc="$g_cl" -v hc="$h_cl" 'BEGIN {
    printf "| gRPC ShouldRateLimit | %.0f | %.2f us | %.0f | %.2f us |\n", g, gu, 1e6 / gu, gc
    printf "| HTTP GET /v1/check | %.0f | %.2f us | %.0f | %.2f us |\n", h, hu, 1e6 / hu, hc
    printf "| gRPC / HTTP | %.2f | %.2f | %.2f | %.2f |\n", g / h, gu / hu, hu / gu, gc / hc
  }'
} >"$out/results.md"
echo
cat "$out/results.md"
