#!/usr/bin/env bash
# bench_module_instr_test.sh MODULE_SO SOURCE_DIR: a smoke run of
# bench/redis/module_instr.py with tiny counts: instructions per decision
# (packed and arguments per item, and INCR) and the memory table, each
# printing its figures; no figure is asserted. Skipped (77) without valgrind.
set -euo pipefail
so=$1 src=$2
command -v valgrind >/dev/null && command -v callgrind_control >/dev/null || { echo "no valgrind: skipped"; exit 77; }
b="$src/bench/redis/module_instr.py"
fail() { echo "FAIL: $*"; exit 1; }
for a in "--subject gc" "--subject gc --args" "--subject sl" "--subject incr"; do
  # shellcheck disable=SC2086
  out=$(timeout 240 python3 "$b" instr "$so" --calls 3 $a)
  echo "$out"
  [[ $out =~ [0-9]+\ per\ decision$ ]] || fail "instr $a: $out"
done
out=$(timeout 120 python3 "$b" memory "$so" --keys 1000)
echo "$out"
[ "$(grep -c '^| ' <<<"$out")" = 9 ] || fail "memory: not 2 + 7 rows"
grep -q '^| module GCRA .* | embstr |$' <<<"$out" || fail "memory: no module GCRA row"
