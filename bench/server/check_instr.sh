#!/usr/bin/env bash
# bench/server/check_instr.sh: instructions per GET /v1/check inside sluiced,
# counted by callgrind: the repeatable figure on a shared, loaded machine
# (wall-clock runs such as bench/server/run.sh --only http move by 30 % from
# one run to the next). One worker, one keep-alive connection, one request
# at a time (each answer read before the next request is sent, so every
# request is one read, one parse, one decision, one write); callgrind's
# counters are zeroed after a warm-up and dumped after N requests: the
# figure is the whole process's instructions (loop, parser, engine, answer)
# divided by N.
#
# Workloads (one policy each, memory store):
#   allowed   one key, a token bucket that never runs out: allowed, far from the limit
#   near      a new key per request on a fixed window of 1: allowed, nothing left
#             (every decision goes into the near-limit sketch, a new key each time:
#             the sketch's worst case)
#   refused   one key, a fixed window of 1 an hour: refused (what bench/server/run.sh's
#             wrk run mostly sees)
#   graphql   POST /v1/graphql?policy=allowed&key=k with bench_graphql's 2 KB query
#             (tests/graphql/corpus/valid_dashboard.graphql, application/graphql): parse, cost, charge
#             (the binary must have POST /v1/graphql; other binaries print n/a)
#
# Usage: bench/server/check_instr.sh SLUICED [SLUICED2 ...] [--requests N]
#   each binary is measured on each workload, in turns; prints one table
set -euo pipefail

requests=5000
bins=()
while [ $# -gt 0 ]; do
  case $1 in
    --requests) requests=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) bins+=("$(readlink -f "$1")") ;;
  esac
  shift
done
[ ${#bins[@]} -ge 1 ] || { echo "usage: $0 SLUICED [SLUICED2 ...] [--requests N]" >&2; exit 2; }
for t in valgrind callgrind_control python3; do
  command -v $t >/dev/null || { echo "check_instr.sh: $t not found (apt-get install valgrind)" >&2; exit 1; }
done

here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/sluice-check-instr.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT

cat >"$dir/sluice.yaml" <<'EOF'
listen:
  http: 127.0.0.1:0
  grpc: "off"
  resp: "off"
workers: 1
store:
  type: memory
  max_memory: 256MiB
policies:
  - name: allowed
    algorithm: token_bucket
    rate: 1000000000/s
    burst: 1000000000
  - name: near
    algorithm: fixed_window
    rate: 1/h
  - name: refused
    algorithm: fixed_window
    rate: 1/h
EOF

# client.py PORT POLICY N KEYMODE START [BODYFILE]: N requests, one at a time, on one
# connection (with BODYFILE: POST /v1/graphql with it as the body)
cat >"$dir/client.py" <<'EOF'
import socket, sys
port, policy, n, mode, start = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
body = open(sys.argv[6], "rb").read() if len(sys.argv) > 6 else None
s = socket.create_connection(("127.0.0.1", port))
buf = b""
for i in range(start, start + n):
    key = "k%d" % i if mode == "new" else "k"
    if body is None:
        s.sendall(("GET /v1/check?policy=%s&key=%s HTTP/1.1\r\nHost: x\r\n\r\n" % (policy, key)).encode())
    else:
        s.sendall(("POST /v1/graphql?policy=%s&key=%s HTTP/1.1\r\nHost: x\r\n"
                   "Content-Type: application/graphql\r\nContent-Length: %d\r\n\r\n"
                   % (policy, key, len(body))).encode() + body)
    while True:
        head, sep, rest = buf.partition(b"\r\n\r\n")
        if sep:
            length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0].split(b":")[1])
            if len(rest) >= length:
                buf = rest[length:]
                status = int(head.split(b" ")[1])
                if status not in (200, 429):
                    sys.exit("status %d: %r" % (status, rest[:length]))
                break
        chunk = s.recv(65536)
        if not chunk:
            sys.exit("connection closed")
        buf += chunk
s.close()
EOF

measure() { # binary policy keymode [bodyfile] -> instructions per request
  local bin=$1 policy=$2 mode=$3 body=${4:-} out="$dir/cg.out"
  rm -f "$dir"/cg.out* "$dir/log"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" -c "$dir/sluice.yaml" \
    >"$dir/log" 2>&1 &
  pid=$!
  local port=
  for _ in $(seq 600); do
    port=$(sed -n 's/.*listening http on [^ ]*:\([0-9]*\).*/\1/p' "$dir/log" | head -1)
    [ -n "$port" ] && grep -q ready "$dir/log" && break
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$dir/log" >&2; echo "check_instr.sh: sluiced did not start" >&2; exit 1; }
  if [ -n "$body" ] && ! python3 "$dir/client.py" "$port" "$policy" 1 "$mode" 0 "$body" \
      2>/dev/null; then
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
    echo n/a
    return
  fi
  python3 "$dir/client.py" "$port" "$policy" 500 "$mode" 0 $body # warm-up
  callgrind_control -z "$pid" >/dev/null 2>&1
  python3 "$dir/client.py" "$port" "$policy" "$requests" "$mode" 1000 $body
  callgrind_control -d "$pid" >/dev/null 2>&1
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  # the dump made by -d is the file with the highest part number
  local dump
  dump=$(ls "$dir"/cg.out.* 2>/dev/null | sort -t. -k3 -n | tail -1)
  local ir
  ir=$(sed -n 's/^summary: \([0-9]*\).*/\1/p; s/^totals: \([0-9]*\).*/\1/p' "$dump" | head -1)
  echo $(( ir / requests ))
}

printf '| workload | %s |\n' "$(printf '%s | ' "${bins[@]}" | sed 's/ | $//')"
printf '| --- |%s\n' "$(printf ' --- |%.0s' "${bins[@]}")"
for w in allowed:same near:new refused:same graphql:same; do
  name=${w%%:*} mode=${w##*:} policy=${w%%:*} body=
  [ "$name" = graphql ] && policy=allowed body="$here/../../tests/graphql/corpus/valid_dashboard.graphql"
  row="| $name (instructions / request) |"
  for b in "${bins[@]}"; do row+=" $(measure "$b" "$policy" "$mode" $body) |"; done
  echo "$row"
done
echo "($requests requests each, after 500 of warm-up; callgrind, one worker)"
