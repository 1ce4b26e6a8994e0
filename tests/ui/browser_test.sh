#!/bin/sh
# browser_test.sh SLUICED SOURCE_DIR CACHE_DIR ARTEFACT_DIR: runs
# tests/ui/browser_test.js (the /ui/ dashboard in headless Chromium) with
# playwright-core at the version of tests/ui/package-lock.json, installed with
# `npm ci` into CACHE_DIR/ui-node once and reused while the lock file does not
# change. Exit 77 (a skip for ctest) only when playwright-core cannot be
# installed (no network); a missing chromium or any other failure fails.
set -eu
sluiced=$1
src=$2
cache=$3/ui-node
artefacts=$4
lock=$src/tests/ui/package-lock.json

command -v node >/dev/null || { echo "browser_test: node is missing (scripts/install-deps.sh installs it)"; exit 1; }
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { echo "browser_test: chromium is missing (scripts/install-deps.sh installs it)"; exit 1; }
mkdir -p "$cache"
if command -v flock >/dev/null; then # one installer at a time (several builds share the cache)
    exec 9>"$cache/.lock"
    flock 9
fi
if [ ! -d "$cache/node_modules/playwright-core" ] || ! cmp -s "$lock" "$cache/package-lock.json"; then
    command -v npm >/dev/null || { echo "browser_test: npm is missing (scripts/install-deps.sh installs it)"; exit 1; }
    rm -rf "$cache/node_modules" "$cache/package-lock.json"
    cp "$src/tests/ui/package.json" "$cache/package.json"
    cp "$lock" "$cache/package-lock.json.new"
    if ! (cd "$cache" && cp package-lock.json.new package-lock.json &&
          npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1); then
        cat "$cache/npm.log"
        rm -rf "$cache/node_modules" "$cache/package-lock.json"
        echo "browser_test: cannot install playwright-core from npm: skipped"
        exit 77
    fi
    rm -f "$cache/package-lock.json.new"
fi
NODE_PATH=$cache/node_modules exec node "$src/tests/ui/browser_test.js" "$sluiced" "$artefacts"
