#!/usr/bin/env bash
# script_floor_test.sh: the smoke test of bench/redis/script_floor.sh (the
# floor of a Lua decision store next to src/store/decide.lua). Tiny counts, a
# few seconds: every row is there with a figure, for a bucket and a window
# algorithm, and the real script answers without an error (the bench stops on
# one). No figure is checked against a bound: timings prove nothing here.
#
# Usage: script_floor_test.sh SOURCE_DIR
set -euo pipefail
src=$1
fail=0
for alg in tb sw; do
  out=$("$src/bench/redis/script_floor.sh" --n 20 --batch 8 --keys 50 --alg "$alg") || {
    echo "$out"
    echo "script_floor_test: script_floor.sh --alg $alg failed"
    exit 1
  }
  for row in INCR empty mget set set-px set-px-pre decide; do
    if ! grep -Eq "^\| $row \| [0-9]+ \| [0-9]+\.[0-9]+ \|" <<<"$out"; then
      echo "$out"
      echo "script_floor_test: --alg $alg: no row with a figure for $row"
      fail=1
    fi
  done
done
exit $fail
