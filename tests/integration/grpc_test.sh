#!/bin/sh
# grpc_test.sh SLUICED SOURCE_DIR CACHE_DIR: runs grpc_test.js with its gRPC
# client (@grpc/grpc-js, @grpc/proto-loader at the versions of
# grpc_node/package.json), installed from npm into CACHE_DIR/grpc-node once
# and reused while package.json does not change. Exit 77 (a skip for ctest)
# only when the client cannot be installed (no network); any other failure
# fails the test.
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
NODE_PATH=$cache/node_modules exec node "$src/tests/integration/grpc_test.js" "$sluiced" "$src"
