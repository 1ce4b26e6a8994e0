#!/usr/bin/env bash
# fuzz_smoke.sh: runs each libFuzzer target of build-fuzz/ for SECONDS
# seconds on its seed corpus (tests/fuzz/corpus/<name>), JOBS at a time, and
# fails if any of them finds a crash, a leak or a sanitizer report (its
# artefact is left in build-fuzz/). Used by `make test-fuzz` and `make fuzz`.
#   scripts/fuzz_smoke.sh SECONDS JOBS fuzz_rate fuzz_resp ...
set -u
seconds=$1
jobs=$2
shift 2
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

run_one() { # name seconds logdir
    local f=$1 secs=$2 dir=$3 work rc
    work=$(mktemp -d)
    build-fuzz/tests/fuzz/"$f" -max_total_time="$secs" -print_final_stats=0 \
        -artifact_prefix=build-fuzz/ "$work" "tests/fuzz/corpus/${f#fuzz_}" >"$dir/$f.log" 2>&1
    rc=$?
    rm -rf "$work"
    echo "$rc" >"$dir/$f.rc"
}
export -f run_one

printf '%s\n' "$@" | xargs -P "$jobs" -I{} bash -c 'run_one "$1" "$2" "$3"' _ {} "$seconds" "$logs"

failed=0
for f in "$@"; do
    rc=$(cat "$logs/$f.rc" 2>/dev/null || echo 127)
    echo "fuzz smoke: $f for $seconds s: $([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")"
    grep -E '^(Done|==|SUMMARY)|ERROR' "$logs/$f.log"
    if [ "$rc" -ne 0 ]; then
        failed=1
        tail -n 40 "$logs/$f.log"
    fi
done
exit $failed
