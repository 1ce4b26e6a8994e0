#!/bin/sh
# grpc_test.sh SLUICED SOURCE_DIR CACHE_DIR [redis]: runs grpc_test.js with its gRPC
# client (@grpc/grpc-js, @grpc/proto-loader at the versions of
# grpc_node/package.json), installed from npm into CACHE_DIR/grpc-node once
# and reused while package.json does not change. Exit 77 (a skip for ctest)
# only when the client cannot be installed (no network); any other failure
# fails the test. With "redis", the same tests run with the Redis store, on
# a redis-server started here on a free loopback port.
set -eu
sluiced=$1
src=$2
cache=$3/grpc-node
pkg=$src/tests/integration/grpc_node/package.json

command -v node >/dev/null || { echo "grpc_test: node is missing (scripts/install-deps.sh installs it)"; exit 1; }
mkdir -p "$cache"
# one installer at a time (several builds may share the cache)
if command -v flock >/dev/null; then
    exec 9>"$cache/.lock"
    flock 9
fi
if [ ! -d "$cache/node_modules/@grpc/grpc-js" ] || ! cmp -s "$pkg" "$cache/package.json"; then
    command -v npm >/dev/null || { echo "grpc_test: npm is missing (scripts/install-deps.sh installs it)"; exit 1; }
    mkdir -p "$cache"
    rm -rf "$cache/node_modules" "$cache/package.json"
    cp "$pkg" "$cache/package.json.new"
    mv "$cache/package.json.new" "$cache/package.json"
    if ! (cd "$cache" && npm install --no-audit --no-fund --no-package-lock --loglevel=error >npm.log 2>&1); then
        cat "$cache/npm.log"
        rm -rf "$cache/node_modules" "$cache/package.json"
        echo "grpc_test: cannot install the gRPC client from npm: skipped"
        exit 77
    fi
fi
if [ "${4:-}" = redis ]; then
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    dir=$(mktemp -d)
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
        --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
    trap 'kill $(cat "$dir/redis.pid") 2>/dev/null; rm -rf "$dir"' EXIT
    for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    export SLUICE_STORE_YAML="store:
  type: redis
  redis:
    url: redis://127.0.0.1:$port/0
    timeout: 200ms
    on_failure: closed
"
    NODE_PATH=$cache/node_modules node "$src/tests/integration/grpc_test.js" "$sluiced" "$src"
    exit $?
fi
NODE_PATH=$cache/node_modules exec node "$src/tests/integration/grpc_test.js" "$sluiced" "$src"
