#!/usr/bin/env bash
# bench/run.sh: builds libsluice and the benchmarks in Release mode in their
# own build directory (build-bench/) and runs them all (`make bench`):
#   1. memlat        this machine's latency of a dependent random access
#   2. bench_memory  bytes per key at 1M keys (measured), sluice vs the peer
#   3. bench_decide  ns per decision, six algorithms, hot key / 1M random keys,
#                    1 and 2 threads, the hand-rolled peer in the same run;
#                    back to back, then serialized (latency), then with keys
#                    formatted byte by byte
#   3d. bench_graphql us to parse and cost a typical 2 KB GraphQL query
#   3e. bench_group  a request of 1-8 limits (sl_table_check_all) against as
#                    many lone checks, 1M random keys, back to back and serialized
#   4. callgrind     instructions per hot-key decision (repeatable), if valgrind
#                    is installed
#   5. layout_proto  issue 18's two candidate table layouts on the same keys
#   6. table_scale.sh  cost against keys (10k-10M) and threads, eviction at the
#                    cap, as a CSV and an SVG (out/scale/)
#   7. cap_quality   what the memory cap keeps against an exact LRU of as many
#                    keys (uniform, Zipf, hot keys under a scan)
#
# Usage: bench/run.sh [--quick] [--no-callgrind] [--no-scale] [--out DIR] [bench_decide options...]
#   --quick         fewer and shorter runs (about 1.5 minutes; the full run about 8)
#   --no-callgrind  skip step 4
#   --no-scale      skip steps 5 to 7
#   --out DIR       where the raw outputs go (default build-bench/results)
# Environment: SLUICE_BENCH_BUILD overrides the build directory.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${SLUICE_BENCH_BUILD:-$root/build-bench}
quick=()
callgrind=1
scale=1
out=
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=(--quick) ;;
    --no-callgrind) callgrind=0 ;;
    --no-scale) scale=0 ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1") ;;
  esac
  shift
done
out=${out:-$build/results}

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSLUICE_TESTS=OFF -DSLUICE_BENCH=ON \
  >/dev/null
cmake --build "$build" -j"$(nproc)" --target bench_decide bench_memory memlat bench_graphql layout_proto bench_group \
  >/dev/null
mkdir -p "$out"
bin=$build/bench

{
  echo "# sluice benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "# commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
  echo "# cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1)" \
       "(family $(lscpu | sed -n 's/^CPU family: *//p' | head -1)," \
       "model $(lscpu | sed -n 's/^Model: *//p' | head -1))," \
       "$(nproc) CPUs online, $(lscpu | sed -n 's/^Thread(s) per core: *//p') thread(s) per core," \
       "$(sed -n 's/^cpu MHz[^:]*: *//p' /proc/cpuinfo | head -1) MHz," \
       "$(grep -qw hypervisor /proc/cpuinfo && echo 'virtual machine' || echo 'bare metal')"
  echo "# memory: $(free -g | awk '/^Mem:/ {print $2}') GiB; kernel $(uname -r);" \
       "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo '?');" \
       "$(cc --version | head -1)"
  echo "# build: CMAKE_BUILD_TYPE=Release ($build); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/machine.txt"

echo
echo "== 1. memory latency (memlat) =="
"$bin/memlat" "${quick[@]}" | tee "$out/memlat.txt"

echo
echo "== 2. bytes per key (bench_memory) =="
"$bin/bench_memory" "${quick[@]}" | tee "$out/memory.txt"

echo
echo "== 3a. ns per decision, back to back (bench_decide) =="
"$bin/bench_decide" "${quick[@]}" --csv "$out/decide.csv" "${args[@]}" | tee "$out/decide.txt"

echo
echo "== 3b. ns per decision, serialized: the latency of a lone decision (bench_decide --serial) =="
"$bin/bench_decide" "${quick[@]}" --serial --threads 1 --csv "$out/decide-serial.csv" "${args[@]}" \
  | tee "$out/decide-serial.txt"

echo
echo "== 3c. random keys formatted just before the call: one 16-byte store (--fresh-keys), byte by byte (--byte-keys) =="
"$bin/bench_decide" "${quick[@]}" --fresh-keys --workload random --threads 1 \
  --only token_bucket,gcra,peer,harness "${args[@]}" | tee "$out/decide-freshkeys.txt"
"$bin/bench_decide" "${quick[@]}" --byte-keys --workload random --threads 1 \
  --only token_bucket,gcra,peer,harness "${args[@]}" | tee "$out/decide-bytekeys.txt"

echo
echo "== 3d. GraphQL query cost: parse + cost of a typical 2 KB query (bench_graphql) =="
"$bin/bench_graphql" "${quick[@]}" | tee "$out/graphql.txt"

echo
echo "== 3e. a request of several limits against lone checks (bench_group) =="
"$bin/bench_group" "${quick[@]}" | tee "$out/group.txt"
"$bin/bench_group" "${quick[@]}" --serial | tee "$out/group-serial.txt"

if [ "$callgrind" = 1 ] && command -v valgrind >/dev/null; then
  echo
  echo "== 4. instructions per hot-key decision (callgrind, 1 thread, fake clock) =="
  ops=1000000
  [ ${#quick[@]} -gt 0 ] && ops=200000
  mkdir -p "$out/callgrind"
  declare -A ir
  for s in fixed_window sliding_log sliding_window token_bucket gcra leaky_queue peer harness; do
    f=$out/callgrind/$s.out
    valgrind --tool=callgrind --callgrind-out-file="$f" --toggle-collect='loop_*' \
      "$bin/bench_decide" --instr --ops "$ops" --only "$s" >/dev/null 2>"$out/callgrind/$s.log"
    ir[$s]=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$f")
  done
  {
    printf '%-15s %12s %12s\n' subject 'Ir/decision' 'net of loop'
    for s in fixed_window sliding_log sliding_window token_bucket gcra leaky_queue peer harness; do
      awk -v s="$s" -v a="${ir[$s]}" -v h="${ir[harness]}" -v n="$ops" \
        'BEGIN { printf "%-15s %12.1f %12.1f\n", s, a / n, (a - h) / n }'
    done
  } | tee "$out/callgrind.txt"
  echo "# per-function profiles: callgrind_annotate $out/callgrind/<subject>.out"
fi
if [ "$scale" = 1 ]; then
  echo
  echo "== 5. the two candidate table layouts, serialized, same keys (layout_proto) =="
  "$bin/layout_proto" | tee "$out/layout.txt"
  echo
  echo "== 6. cost against keys and threads, eviction at the cap (bench/table_scale.sh) =="
  "$root/bench/table_scale.sh" "${quick[@]}" --out "$out/scale" | tail -1
  echo
  echo "== 7. what the memory cap keeps, against an exact LRU (cap_quality) =="
  "$bin/cap_quality" | tee "$out/cap_quality.txt"
fi
echo
echo "raw outputs in $out"
