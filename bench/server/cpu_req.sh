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
#
# Usage: bench/server/cpu_req.sh SLUICED [-n N] [--runs R]   (a RelWithDebInfo build)
set -euo pipefail

[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 2; }
bin=$(readlink -f "$1")
shift
n=40000
runs=3
while [ $# -gt 0 ]; do
  case $1 in
    -n) n=$2; shift ;;
    --runs) runs=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
for t in nginx python3; do
  command -v $t >/dev/null || { echo "cpu_req.sh: $t not found" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/sluice-cpu-req.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 300); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "cpu_req.sh: nothing listens on $1" >&2; exit 1
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

hp=$(free_port); rp=$(free_port); gp=$(free_port); np=$(free_port)
mkdir -p "$tmp/rules" "$tmp/nginx/html"
cat >"$tmp/rules/bench.yaml" <<EOF
domain: bench
descriptors:
  - key: k
    rate_limit: {unit: second, requests_per_unit: 100}
EOF
cat >"$tmp/sluice.yaml" <<EOF
listen: {http: 127.0.0.1:$hp, resp: 127.0.0.1:$rp, grpc: 127.0.0.1:$gp}
workers: 1
domains: $tmp/rules
store: {type: memory, max_memory: 256MiB}
policies:
  - {name: bench, algorithm: token_bucket, rate: 100/s, burst: 200}
EOF
cat >"$tmp/nginx/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $tmp/nginx/cb;
  proxy_temp_path $tmp/nginx/px;
  fastcgi_temp_path $tmp/nginx/fc;
  uwsgi_temp_path $tmp/nginx/uw;
  scgi_temp_path $tmp/nginx/sc;
  keepalive_requests 100000000;
  limit_req_zone \$binary_remote_addr zone=b:10m rate=100r/s;
  server {
    listen 127.0.0.1:$np;
    root $tmp/nginx/html;
    location / {
      limit_req zone=b burst=200 nodelay;
      limit_req_status 429;
      limit_req_log_level info;
      try_files /nonexistent =204;
    }
  }
}
EOF
python3 - "$tmp/body.bin" <<'EOF'
import struct, sys
def fld(tag, b): return bytes([tag, len(b)]) + b
req = fld(0x0a, b"bench") + fld(0x12, fld(0x0a, fld(0x0a, b"k") + fld(0x12, b"v")))
open(sys.argv[1], "wb").write(b"\0" + struct.pack(">I", len(req)) + req)
EOF

"$bin" -c "$tmp/sluice.yaml" --log-level error >"$tmp/sluiced.log" 2>&1 &
sl=$!; pids+=("$sl")
nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log" &
ng=$!; pids+=("$ng")
wait_port "$hp"; wait_port "$rp"; wait_port "$gp"; wait_port "$np"

# client KIND PORT DEPTH: N requests on one connection, DEPTH at a time
client() {
  if [ "$1" = grpc ]; then
    command -v h2load >/dev/null || return 1
    h2load -n "$n" -c 1 -m "$3" -d "$tmp/body.bin" -H 'content-type: application/grpc' \
      -H 'te: trailers' \
      "http://127.0.0.1:$2/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit" \
      >"$tmp/h2load.log" 2>&1
    grep -q "$n succeeded" "$tmp/h2load.log" || { cat "$tmp/h2load.log" >&2; return 1; }
    return 0
  fi
  python3 - "$1" "$2" "$3" "$n" <<'EOF'
import socket, sys
kind, port, depth, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
if kind == "http":
    req = b"GET /v1/check?policy=bench&key=k HTTP/1.1\r\nHost: x\r\n\r\n"
    def count(buf): return buf.count(b"HTTP/1.1 ")
elif kind == "throttle":
    req = b"*5\r\n$11\r\nCL.THROTTLE\r\n$1\r\nk\r\n$3\r\n200\r\n$3\r\n100\r\n$1\r\n1\r\n"
    def count(buf): return buf.count(b"*5\r\n")
else:
    req = b"*3\r\n$8\r\nSL.CHECK\r\n$5\r\nbench\r\n$1\r\nk\r\n"
    def count(buf): return buf.count(b"*5\r\n")
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
done = 0
while done < n:
    k = min(depth, n - done)
    s.sendall(req * k)
    buf, got = b"", 0
    while got < k:
        d = s.recv(1 << 16)
        if not d: sys.exit("connection closed")
        buf += d
        got = count(buf)
    done += k
EOF
}

# measure PID KIND PORT DEPTH: prints us of server CPU per request
measure() {
  local c0 c1
  c0=$(ticks "$1")
  client "$2" "$3" "$4" || { echo nan; return; }
  c1=$(ticks "$1")
  python3 -c "print(f'{($c1 - $c0) / $hz * 1e6 / $n:.2f}')"
}

declare -A res
subjects="ng_http_1 sl_http_1 ng_http_16 sl_http_16 sl_throttle_1 sl_throttle_16 sl_check_1 sl_check_16 sl_grpc_1 sl_grpc_16"
for s in $subjects; do res[$s]=; done
client http "$hp" 16 >/dev/null; client http "$np" 16 >/dev/null # warm-up
for r in $(seq "$runs"); do
  for d in 1 16; do
    order="ng sl"; [ $((r % 2)) = 0 ] && order="sl ng"
    for side in $order; do
      if [ "$side" = ng ]; then res[ng_http_$d]+=" $(measure "$ng" http "$np" "$d")"
      else res[sl_http_$d]+=" $(measure "$sl" http "$hp" "$d")"; fi
    done
    res[sl_throttle_$d]+=" $(measure "$sl" throttle "$rp" "$d")"
    res[sl_check_$d]+=" $(measure "$sl" check "$rp" "$d")"
    res[sl_grpc_$d]+=" $(measure "$sl" grpc "$gp" "$d")"
  done
done

med() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if x!='nan']; print(f'{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})' if v else 'n/a')" $1; }
medv() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if x!='nan']; print(f'{statistics.median(v):.4f}' if v else 'nan')" $1; }
echo "# server CPU us per request (utime+stime, /proc/PID/stat, CLK_TCK $hz), $n requests per figure, $runs rounds: median (min-max)"
echo "# sluiced $(sha256sum "$bin" | cut -c1-12), $(nginx -v 2>&1); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| request | per read | sluiced us/req | nginx limit_req us/req | nginx / sluiced |"
echo "| --- | ---: | ---: | ---: | ---: |"
for d in 1 16; do
  ngm=$(medv "${res[ng_http_$d]}")
  echo "| HTTP GET /v1/check (nginx: the same URL) | $d | $(med "${res[sl_http_$d]}") | $(med "${res[ng_http_$d]}") | $(python3 -c "print(f'{$ngm/$(medv "${res[sl_http_$d]}"):.2f}x')") |"
  for k in throttle check grpc; do
    name=$(case $k in throttle) echo "RESP CL.THROTTLE k 200 100 1" ;; check) echo "RESP SL.CHECK bench k" ;; grpc) echo "gRPC ShouldRateLimit (h2load streams)" ;; esac)
    v=$(medv "${res[sl_${k}_$d]}")
    echo "| $name | $d | $(med "${res[sl_${k}_$d]}") | (HTTP) $(med "${res[ng_http_$d]}") | $(python3 -c "v=float('$v'); print(f'{$ngm/v:.2f}x' if v==v else 'n/a')") |"
  done
done
