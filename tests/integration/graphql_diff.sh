#!/usr/bin/env bash
# graphql_diff.sh: sluice's GraphQL parser against graphql-js (npm's graphql,
# the reference implementation) on tests/graphql/corpus/ and on generated
# documents: the same accept/reject (tests/graphql/diff.js).
# Usage: graphql_diff.sh GQL_ACCEPT TESTS_GRAPHQL_DIR NODE_CACHE_DIR [N_GENERATED]
# graphql (the version of tests/graphql/package.json) is installed into
# NODE_CACHE_DIR once; exit 77 (skipped) when node or npm is missing or npm
# cannot reach the registry.
set -euo pipefail
tool=$1 here=$2 cache=$3 n=${4:-4000}
for t in node npm; do command -v $t >/dev/null || { echo "graphql_diff: $t not found: skipped"; exit 77; }; done
pkg=$here/package.json
mkdir -p "$cache"
(
  # one installer at a time (build directories share the cache)
  if command -v flock >/dev/null; then exec 9>"$cache/.lock"; flock 9; fi
  if [ ! -d "$cache/node_modules/graphql" ] || ! cmp -s "$pkg" "$cache/package.json"; then
    rm -rf "$cache/node_modules" "$cache/package.json"
    cp "$pkg" "$cache/package.json.new" && mv "$cache/package.json.new" "$cache/package.json"
    if ! (cd "$cache" && timeout 120 npm install --no-audit --no-fund --no-package-lock --loglevel=error >npm.log 2>&1); then
      cat "$cache/npm.log" >&2
      rm -rf "$cache/node_modules" "$cache/package.json"
      exit 1
    fi
  fi
) || { echo "graphql_diff: npm cannot install graphql: skipped"; exit 77; }
NODE_PATH=$cache/node_modules exec node "$here/diff.js" "$tool" "$here/corpus" "$n"
