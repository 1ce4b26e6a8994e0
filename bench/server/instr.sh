#!/usr/bin/env bash
# bench/server/instr.sh: instructions per request on sluiced's request path,
# counted by callgrind: the repeatable figure on a loaded machine (a timing
# is not). One sluiced worker runs under valgrind --tool=callgrind with
# collection on inside the connection layer's read callback (`on_read`,
# src/server/conn.c: parsing, the handler, the decision on the memory store,
# the answer and its write), while a client sends N requests over one
# keep-alive connection, one at a time (one request per read) and, in a
# second run, pipelined 16 at a time. Printed: instructions per request.
#
#   resp    SL.CHECK api key                 (RESP)
#   http    GET /v1/check?policy=api&key=k   (HTTP/1.1)
#   auth    GET /v1/auth (nginx auth_request, request rules)
#   json    POST /json (Envoy descriptors, the gRPC decision path)
#   grpc    Envoy ShouldRateLimit over HTTP/2 (h2load: one connection, 1 or 16
#           streams at a time)
#
# --retry-budget gives the policy `api` a retry_budget: {} (docs/protection.md):
# every request is a first attempt, counted by the budget before the decision.
#
# Usage: bench/server/instr.sh BUILD_DIR [-n N] [--only LIST] [--retry-budget]
#        (after `make build`)
set -euo pipefail

[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 2; }
build=$(cd "$1" && pwd)
shift
n=2000
only=resp,http,auth,json,grpc
budget=
while [ $# -gt 0 ]; do
  case $1 in
    -n) n=$2; shift ;;
    --only) only=$2; shift ;;
    --retry-budget) budget=", retry_budget: {}" ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
hp=$(free_port); rp=$(free_port); gp=$(free_port)
mkdir -p "$tmp/rules"
cat >"$tmp/rules/bench.yaml" <<EOF
domain: bench
descriptors:
  - key: k
    rate_limit: {unit: second, requests_per_unit: 1000000000}
EOF
cat >"$tmp/sluice.yaml" <<EOF
listen: {http: 127.0.0.1:$hp, resp: 127.0.0.1:$rp, grpc: 127.0.0.1:$gp}
workers: 1
domains: $tmp/rules
policies:
  - {name: api, algorithm: token_bucket, rate: 1000000000/s, burst: 1000000000$budget}
rules:
  - name: all
    limits:
      - {policy: api, by: ip, cost: 1}
EOF

# RateLimitRequest{domain: "bench", descriptors: [{entries: [k=v]}]}, framed
python3 - "$tmp/body.bin" <<'EOF'
import struct, sys
def fld(tag, b): return bytes([tag, len(b)]) + b
req = fld(0x0a, b"bench") + fld(0x12, fld(0x0a, fld(0x0a, b"k") + fld(0x12, b"v")))
open(sys.argv[1], "wb").write(b"\0" + struct.pack(">I", len(req)) + req)
EOF

client() { # proto pipeline
  if [ "$1" = grpc ]; then
    h2load -n "$n" -c 1 -m "$2" -d "$tmp/body.bin" -H 'content-type: application/grpc' \
      -H 'te: trailers' \
      "http://127.0.0.1:$gp/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit" \
      >"$tmp/h2load.log" 2>&1
    grep -q "$n succeeded" "$tmp/h2load.log" || { cat "$tmp/h2load.log" >&2; exit 1; }
    return
  fi
  python3 - "$1" "$2" "$n" "$hp" "$rp" <<'EOF'
import socket, sys
proto, depth, n, hp, rp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
if proto == "resp":
    req, port, end = b"*3\r\n$8\r\nSL.CHECK\r\n$3\r\napi\r\n$3\r\nkey\r\n", rp, b"\r\n"
    def count(buf): return buf.count(b"*5\r\n")
else:
    body = b'{"domain":"bench","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}'
    req = {"http": b"GET /v1/check?policy=api&key=k HTTP/1.1\r\nHost: x\r\n\r\n",
           "auth": b"GET /v1/auth HTTP/1.1\r\nHost: x\r\nX-Real-IP: 10.0.0.1\r\nX-Original-Method: GET\r\nX-Original-URI: /a\r\n\r\n",
           "json": b"POST /json HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                   + str(len(body)).encode() + b"\r\n\r\n" + body}[proto]
    port = hp
    def count(buf): return buf.count(b"HTTP/1.1 ")
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

wait_port() {
  for _ in $(seq 600); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "sluiced did not listen on $1" >&2; exit 1
}

echo "# instructions per request inside on_read (callgrind), $n requests, 1 worker${budget:+, api with a retry_budget}"
echo "# commit $(git -C "$(dirname "$0")" rev-parse --short HEAD)$(git -C "$(dirname "$0")" diff --quiet || echo ' (with local changes)')"
printf '%-6s %12s %12s\n' path "1/read" "16/read"
for p in ${only//,/ }; do
  line=$(printf '%-6s' "$p")
  for depth in 1 16; do
    out=$tmp/cg.$p.$depth
    valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect='on_read' \
      "$build/sluiced" -c "$tmp/sluice.yaml" --log-level error >/dev/null 2>"$tmp/vg.log" &
    pid=$!
    wait_port "$hp"; wait_port "$rp"; wait_port "$gp"
    client "$p" "$depth"
    kill -TERM "$pid"; wait "$pid" || true; pid=
    ir=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ && !x {gsub(",","",$1); print $1; x=1}')
    line+=$(printf ' %12s' "$(python3 -c "print(f'{$ir/$n:.0f}')")")
  done
  echo "$line"
done
