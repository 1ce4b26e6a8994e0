#!/usr/bin/env bash
# bench/ab_decide.sh: two bench_decide binaries (say main's and a branch's)
# against each other, as sluice / peer ratios measured in the same process,
# round after round, A then B, and each subject's median, min and max.
#
# Why a script: one run's ratio moves by 10-20% from process to process on
# a quiet machine (address layout), and the same binary run from two paths
# of different lengths gave ratios 10-15% apart in every round (session 10:
# the environment's size moves the stack). So both binaries are copied to
# paths of the same length first, and only medians over rounds are compared.
#
# Usage: bench/ab_decide.sh A_BIN B_BIN [ROUNDS] [SUBJECTS]
#   ROUNDS    default 6 (about 10 s per round and binary with every subject)
#   SUBJECTS  comma list (default: the six algorithms); the peer and the
#             harness are always added
#   WORKLOAD=hot|random (default hot), THREADS=1|2 (default 1), LIMIT=N
#             (per minute, bench_decide --limit; default 100): environment
#   SERIAL=1  random keys, --serial, and the ratio is sluice / memlat (one
#             dependent memory access of the same working set; the issue's
#             target is 1.3) instead of sluice / peer
# Example:
#   bench/ab_decide.sh /work/main/build-bench/bench/bench_decide build-bench/bench/bench_decide 8
set -euo pipefail

case ${1:-} in -h | --help | '') sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
[ $# -ge 2 ] || { echo "ab_decide.sh: two binaries needed (--help)" >&2; exit 2; }
rounds=${3:-6}
only=${4:-fixed_window,sliding_log,sliding_window,token_bucket,gcra,leaky_queue}
workload=${WORKLOAD:-hot}
threads=${THREADS:-1}
serial=${SERIAL:-0}
mode=() versus=peer fields=7 below=1 at_most=0
if [ "$serial" = 1 ]; then
  workload=random mode=(--serial) versus=memlat fields=6 below=1.3 at_most=1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/a" "$tmp/b"
cp "$1" "$tmp/a/bd"
cp "$2" "$tmp/b/bd"

for _ in $(seq "$rounds"); do
  for x in a b; do
    # the summary's rows: keys thr subject sluice peer ratio net
    "$tmp/$x/bd" --workload "$workload" --threads "$threads" "${mode[@]}" --runs 5 --time 0.15 \
      ${LIMIT:+--limit "$LIMIT"} --only "$only,$versus,harness" 2>&1 |
      awk -v t="$threads" -v vs="ratio sluice/$versus" -v nf="$fields" '
        index($0, vs) { f = 1; next }
        f && NF == nf && $1 != "keys" && $2 == t { print $3, $NF }' >>"$tmp/$x.txt"
  done
done

for x in a b; do
  name=$1
  [ $x = b ] && name=$2
  echo "== ${x^^}: $name ($workload key(s), $threads thread(s), ${mode[*]:-back to back}, $rounds rounds; sluice / $versus)"
  sort "$tmp/$x.txt" | awk '
    { v[$1] = v[$1] " " $2 }
    END { for (k in v) print k, v[k] }' | sort | while read -r subject rest; do
    echo "$rest" | tr ' ' '\n' | sort -n | awk -v s="$subject" -v b="$below" -v le="$at_most" '
      { a[NR] = $1; if ($1 < b || (le && $1 == b)) met++ }
      END { how = le ? "at most" : "below"
            printf "%-15s median %.2f  min %.2f  max %.2f  (%d of %d runs %s %s)\n",
                   s, a[int((NR + 1) / 2)], a[1], a[NR], met, NR, how, b }'
  done
done
