#!/usr/bin/env bash
# bench/server/cpu_req.sh: the server's own CPU per request, sluiced against
# nginx limit_req, in the same run (issue 18, the sluiced row). One sluiced
# worker and one nginx process (master_process off, worker_processes 1), one
# keep-alive connection each, the same requests: GET /v1/check?policy=bench&key=k
# on a token bucket of 100/s, burst 200 (nginx: limit_req rate=100r/s burst=200
# nodelay), so almost every answer is a 429 on both sides (about 430 and 330
# bytes: one size class). Sent one at a time (one request per read) and 16
# pipelined. sluiced's RESP (CL.THROTTLE, SL.CHECK) and gRPC ShouldRateLimit
# (h2load, 1 and 16 streams) are measured too and set against nginx's HTTP.
# CPU is utime + stime of the server process (/proc/PID/stat, every thread)
# over N requests; the sides alternate, R rounds; printed: the median us per
# request, the spread (min-max) of the rounds, and nginx / sluiced (> 1:
# sluiced spends less CPU per request). The client's CPU is not counted.
# The HTTP runs at one request per read are also given round by round, and
# time each round trip at the client (conn_load's CONN_LAT): the median of
# the rounds' p50 and p99 in us.
#
# Usage: bench/server/cpu_req.sh BUILD_DIR|SLUICED [-n N] [--runs R]
#        (BUILD_DIR/sluiced, or the sluiced binary SLUICED; a RelWithDebInfo build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh" # usage, die, build_arg, $root, processes, servers, load, CPU, numbers

[ $# -ge 1 ] || { usage >&2; exit 2; }
case $1 in -h | --help) usage; exit 0 ;; esac
bin=$(readlink -f "$1")
[ -d "$bin" ] && bin=$bin/sluiced
shift
n=40000
runs=3
while [ $# -gt 0 ]; do
  case $1 in
    -n) n=$2; shift ;;
    --runs) runs=$2; shift ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done
for t in nginx python3; do
  command -v $t >/dev/null || die "$t not found"
done
[ -x "$bin" ] || die "$bin: no sluiced binary"

bench_tmp cpu-req
one_worker_conf 100
cat >>"$tmp/sluice.yaml" <<EOF
store: {type: memory, max_memory: 256MiB}
policies:
  - {name: bench, algorithm: token_bucket, rate: 100/s, burst: 200}
EOF

"$bin" -c "$tmp/sluice.yaml" --log-level error >"$tmp/sluiced.log" 2>&1 &
sl=$!
pids+=("$sl")
# nginx limit_req, one process (master_process off, worker_processes 1)
start_nginx 1 off
ng=$ng_pid np=$ng_port
wait_port 30 "$hp" "$rp" "$gp"

# client KIND PORT DEPTH: N requests on one connection, DEPTH at a time
client() {
  case $1 in
    grpc)
      command -v h2load >/dev/null || return 1
      h2load_rls "$2" "$n" "$3" "$tmp/h2load.log" || { cat "$tmp/h2load.log" >&2; return 1; } ;;
    http) conn_load "$2" "$n" "$3" 'HTTP/1.1 ' $'GET /v1/check?policy=bench&key=k HTTP/1.1\r\nHost: x\r\n\r\n' ;;
    throttle) conn_load "$2" "$n" "$3" $'*5\r\n' $'*5\r\n$11\r\nCL.THROTTLE\r\n$1\r\nk\r\n$3\r\n200\r\n$3\r\n100\r\n$1\r\n1\r\n' ;;
    check) conn_load "$2" "$n" "$3" $'*5\r\n' $'*3\r\n$8\r\nSL.CHECK\r\n$5\r\nbench\r\n$1\r\nk\r\n' ;;
  esac
}

# measure PID KIND PORT DEPTH [LAT]: prints us of server CPU per request;
# with LAT, the round trips' p50 and p99 are appended to $tmp/LAT
measure() {
  local lat=
  [ -n "${5:-}" ] && lat=$tmp/lat.now
  CONN_LAT=$lat cpu_of "$1" client "$2" "$3" "$4" || { echo nan; return; }
  [ -n "$lat" ] && cat "$lat" >>"$tmp/$5"
  per "$cpu_us" "$n"
}

declare -A res
subjects="ng_http_1 sl_http_1 ng_http_16 sl_http_16 sl_throttle_1 sl_throttle_16 sl_check_1 sl_check_16 sl_grpc_1 sl_grpc_16"
for s in $subjects; do res[$s]=; done
client http "$hp" 16 >/dev/null; client http "$np" 16 >/dev/null # warm-up
for r in $(seq "$runs"); do
  for d in 1 16; do
    for side in $(round_order "$r" "ng sl"); do
      lat=; [ "$d" = 1 ] && lat=lat.$side
      if [ "$side" = ng ]; then res[ng_http_$d]+=" $(measure "$ng" http "$np" "$d" $lat)"
      else res[sl_http_$d]+=" $(measure "$sl" http "$hp" "$d" $lat)"; fi
    done
    res[sl_throttle_$d]+=" $(measure "$sl" throttle "$rp" "$d")"
    res[sl_check_$d]+=" $(measure "$sl" check "$rp" "$d")"
    res[sl_grpc_$d]+=" $(measure "$sl" grpc "$gp" "$d")"
  done
done

med() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if x!='nan']; print(f'{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})' if v else 'n/a')" $1; }
times_x() { local r; r=$(ratio "$1" "$2"); [ "$r" = nan ] && echo n/a || echo "${r}x"; } # nginx / sluiced
medv() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if x!='nan']; print(f'{statistics.median(v):.4f}' if v else 'nan')" $1; }
echo "# server CPU us per request (utime+stime, /proc/PID/stat, CLK_TCK $hz), $n requests per figure, $runs rounds: median (min-max)"
echo "# sluiced $(sha256sum "$bin" | cut -c1-12), $(nginx -v 2>&1); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| request | per read | sluiced us/req | nginx limit_req us/req | nginx / sluiced |"
echo "| --- | ---: | ---: | ---: | ---: |"
for d in 1 16; do
  ngm=$(medv "${res[ng_http_$d]}")
  echo "| HTTP GET /v1/check (nginx: the same URL) | $d | $(med "${res[sl_http_$d]}") | $(med "${res[ng_http_$d]}") | $(times_x "$ngm" "$(medv "${res[sl_http_$d]}")") |"
  for k in throttle check grpc; do
    name=$(case $k in throttle) echo "RESP CL.THROTTLE k 200 100 1" ;; check) echo "RESP SL.CHECK bench k" ;; grpc) echo "gRPC ShouldRateLimit (h2load streams)" ;; esac)
    v=$(medv "${res[sl_${k}_$d]}")
    echo "| $name | $d | $(med "${res[sl_${k}_$d]}") | (HTTP) $(med "${res[ng_http_$d]}") | $(times_x "$ngm" "$v") |"
  done
done
# the client's round trips of HTTP at one request per read (conn_load's CONN_LAT)
lat_med() { awk -v c="$2" '{print $c}' "$tmp/$1" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
# the same rounds, side by side (the sides of a round ran one after the other)
echo
echo "# HTTP 1 per read, nginx / sluiced by round: $(python3 -c "import sys; n, s = sys.argv[1].split(), sys.argv[2].split(); print(' '.join(f'{float(a) / float(b):.2f}x' if a != 'nan' and b != 'nan' and float(b) > 0 else 'n/a' for a, b in zip(n, s)))" "${res[ng_http_1]}" "${res[sl_http_1]}")"
echo "# HTTP 1 per read, p99 us by round: sluiced $(awk '{printf "%s ", $2}' "$tmp/lat.sl")/ nginx $(awk '{printf "%s ", $2}' "$tmp/lat.ng")"
echo "| HTTP GET /v1/check, 1 per read, round trip at the client (median of $runs rounds) | sluiced | nginx |"
echo "| --- | ---: | ---: |"
echo "| p50 us | $(lat_med lat.sl 1) | $(lat_med lat.ng 1) |"
echo "| p99 us | $(lat_med lat.sl 2) | $(lat_med lat.ng 2) |"
