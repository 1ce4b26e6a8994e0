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
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh" # usage, die, build_arg, $root, processes, servers, load, CPU, numbers

build_arg "$@"
shift
n=2000
only=resp,http,auth,json,grpc
budget=
while [ $# -gt 0 ]; do
  case $1 in
    -n) n=$2; shift ;;
    --only) only=$2; shift ;;
    --retry-budget) budget=", retry_budget: {}" ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done

bench_tmp instr
# RateLimitRequest{domain: "bench", descriptors: [{entries: [k=v]}]}, framed, in
# $tmp/body.bin
one_worker_conf 1000000000
cat >>"$tmp/sluice.yaml" <<EOF
policies:
  - {name: api, algorithm: token_bucket, rate: 1000000000/s, burst: 1000000000$budget}
rules:
  - name: all
    limits:
      - {policy: api, by: ip, cost: 1}
EOF

client() { # proto pipeline
  local body='{"domain":"bench","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}' crlf=$'\r\n'
  case $1 in
    grpc) h2load_rls "$gp" "$n" "$2" "$tmp/h2load.log" || die_log "$tmp/h2load.log" "h2load failed" ;;
    resp) conn_load "$rp" "$n" "$2" $'*5\r\n' $'*3\r\n$8\r\nSL.CHECK\r\n$3\r\napi\r\n$3\r\nkey\r\n' ;;
    http) conn_load "$hp" "$n" "$2" 'HTTP/1.1 ' $'GET /v1/check?policy=api&key=k HTTP/1.1\r\nHost: x\r\n\r\n' ;;
    auth) conn_load "$hp" "$n" "$2" 'HTTP/1.1 ' $'GET /v1/auth HTTP/1.1\r\nHost: x\r\nX-Real-IP: 10.0.0.1\r\nX-Original-Method: GET\r\nX-Original-URI: /a\r\n\r\n' ;;
    json) conn_load "$hp" "$n" "$2" 'HTTP/1.1 ' "POST /json HTTP/1.1${crlf}Host: x${crlf}Content-Type: application/json${crlf}Content-Length: ${#body}${crlf}${crlf}$body" ;;
    *) die "no path $1 (--only takes resp,http,auth,json,grpc)" ;;
  esac
}

echo "# instructions per request inside on_read (callgrind), $n requests, 1 worker${budget:+, api with a retry_budget}"
echo "# commit $(git_rev)"
printf '%-6s %12s %12s\n' path "1/read" "16/read"
for p in ${only//,/ }; do
  line=$(printf '%-6s' "$p")
  for depth in 1 16; do
    out=$tmp/cg.$p.$depth
    valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect='on_read' \
      "$build/sluiced" -c "$tmp/sluice.yaml" --log-level error >/dev/null 2>"$tmp/vg.log" &
    pid=$!
    pids+=("$pid")
    wait_port 60 "$hp" "$rp" "$gp"
    client "$p" "$depth"
    # not stop_pid: callgrind writes its counts on exit, however long it takes
    kill -TERM "$pid"
    wait "$pid" || true
    untrack "$pid"
    ir=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ && !x {gsub(",","",$1); print $1; x=1}')
    line+=$(printf ' %12s' "$(per "$ir" "$n" %.0f)")
  done
  echo "$line"
done
