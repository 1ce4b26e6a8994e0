#!/usr/bin/env bash
# bench/table_scale.sh: how the keyed table's cost per decision grows with the
# number of keys and with threads (issue 18), as a table and an SVG:
#   - random keys, 10k, 100k, 1M and 10M of them, 1 and 2 threads (this
#     machine's CPUs), back to back and serialized (1 thread), token bucket
#     and GCRA next to the hand-rolled peer and one dependent memory access
#     of as many bytes as the token-bucket table (bench_decide's memlat);
#   - eviction at the cap: 2M keys in tables whose cap holds about 1M, next
#     to 1M keys that all fit, in the same run.
# Usage: bench/table_scale.sh [--quick] [--out DIR]   (default build-bench/results/scale)
# Writes DIR/scale.csv, DIR/scale.txt and DIR/table-scale.svg (bench_scale_svg).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SLUICE_BENCH_BUILD:-$root/build-bench}
runs=(--runs 3 --time 0.2)
keys=(10000 100000 1000000 10000000)
out=
while [ $# -gt 0 ]; do
  case $1 in
    --quick) runs=(--runs 1 --time 0.05); keys=(10000 100000) ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
out=${out:-$build/results/scale}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSLUICE_TESTS=OFF -DSLUICE_BENCH=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target bench_decide bench_scale_svg >/dev/null
mkdir -p "$out"
bin=$build/bench
threads=1,2
[ "$(nproc)" -gt 2 ] && threads=1,2,$(nproc)
csv=$out/scale.csv
echo "keys,cap,mode,workload,threads,subject,ns_per_decision_median,ns_min,ns_max,mdecisions_per_s_median,allowed_pct" > "$csv"
run() { # keys cap label args...
  local k=$1 cap=$2; shift 2
  local capopt=()
  [ "$cap" != 0 ] && capopt=(--cap "$cap")
  "$bin/bench_decide" "${runs[@]}" --workload random --keys "$k" "${capopt[@]}" \
    --only token_bucket,gcra,peer,memlat --csv "$out/one.csv" "$@" | tee -a "$out/scale.txt"
  tail -n +2 "$out/one.csv" | sed "s/^/$k,$cap,/" >> "$csv"
}
: > "$out/scale.txt"
for k in "${keys[@]}"; do
  # the tables, the peer and memlat's buffer take about 250 bytes per key: leave room for
  # the other processes of a shared machine
  avail=$(awk '/^MemAvailable:/ {printf "%d", $2 / 1024}' /proc/meminfo) # MiB
  if [ "$avail" -lt $((k * 300 / 1048576 + 2048)) ]; then
    echo "# $k keys skipped: MemAvailable $avail MiB" | tee -a "$out/scale.txt"
    continue
  fi
  run "$k" 0 --threads "$threads"
  run "$k" 0 --threads 1 --serial
done
# eviction: a cap of 48 MiB holds about 1.1M token-bucket keys (32-byte slots, 7/8 of the
# cap for the array, 7/8 load); 2M keys are drawn, so about half of the decisions insert a
# key and evict another
if [ "${#keys[@]}" -gt 2 ]; then
  run 2000000 $((48 << 20)) --threads 1
  run 2000000 $((48 << 20)) --threads 1 --serial
fi
rm -f "$out/one.csv"
"$bin/bench_scale_svg" "$csv" "$out/table-scale.svg"
echo "wrote $csv and $out/table-scale.svg"
