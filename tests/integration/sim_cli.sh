#!/usr/bin/env bash
# sim_cli.sh SLUICE SOURCE_DIR [quick]: runs the `sluice` binary the way a user
# does: help and usage errors (exit 2), every simulation in every format, the
# example trace, CSV errors with file:line (exit 1), the --log format, SVG
# well-formedness (xmllint), JSON validity, byte-for-byte determinism, and
# (full mode) that the charts committed under docs/img are what the code draws.
# "quick" runs one of each kind of run (every subcommand, format and output
# file, a usage error, a trace error) and nothing else: it is for the ASan
# build, where every process start is slow, to catch memory errors and leaks.
set -euo pipefail
sluice=$1 src=$2 mode=${3:-full}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# expect CODE CMD...: runs CMD, checks its exit code; stdout in $tmp/out, stderr in $tmp/err
expect() {
    local want=$1; shift
    local got=0
    "$@" >"$tmp/out" 2>"$tmp/err" || got=$?
    [ "$got" -eq "$want" ] || fail "exit $got (want $want): $* : $(head -c 300 "$tmp/err")"
}
contains() { # FILE TEXT (bash only: no process per check)
    local s=""
    IFS= read -r -d '' s <"$1" || true
    [[ $s == *"$2"* ]] || fail "$1 lacks '$2'"
}

json_ok() { # FILE: valid JSON (jq, else python3; say so when neither exists)
    if command -v jq >/dev/null; then
        jq -e . "$1" >/dev/null || fail "invalid JSON: $1"
    elif command -v python3 >/dev/null; then
        python3 -m json.tool "$1" >/dev/null || fail "invalid JSON: $1"
    else
        echo "note: neither jq nor python3 found, JSON not validated" >&2
    fi
}
svg_ok() { xmllint --noout "$1" || fail "SVG is not well-formed XML: $1"; }

if [ "$mode" = quick ]; then
    example=$src/examples/traces/two-clients.csv
    expect 0 "$sluice" sim race --help;   contains "$tmp/out" "usage: sluice sim race"
    expect 2 "$sluice" sim race --burst x
    printf '0.1\n0.2,a,x\n' >"$tmp/bad.csv"
    expect 1 "$sluice" sim race --trace "$tmp/bad.csv"; contains "$tmp/err" "bad.csv:2: cost 'x'"
    expect 0 "$sluice" sim race --trace "$example" --format json --log "$tmp/log.csv" --svg "$tmp/race.svg"
    json_ok "$tmp/out"; svg_ok "$tmp/race.svg"; contains "$tmp/log.csv" "leaky_queue,3.500,alice,3,"
    expect 0 "$sluice" sim race --trace poisson --format csv
    expect 0 "$sluice" sim race;          contains "$tmp/out" "leaky_queue"
    expect 0 "$sluice" sim herd --jitter 1 --format json --svg "$tmp/herd.svg"
    json_ok "$tmp/out"; svg_ok "$tmp/herd.svg"
    expect 0 "$sluice" sim herd --format csv
    expect 0 "$sluice" sim herd --start-empty;  contains "$tmp/out" "unserved 150"
    expect 0 "$sluice" sim herd --jitter 2 --ramp-up 5 --format json --svg "$tmp/herd-ramp.svg"
    json_ok "$tmp/out"; svg_ok "$tmp/herd-ramp.svg"
    expect 0 "$sluice" sim aimd --format json --svg "$tmp/aimd.svg"
    json_ok "$tmp/out"; svg_ok "$tmp/aimd.svg"
    expect 0 "$sluice" sim aimd --format csv
    expect 0 "$sluice" sim aimd;          contains "$tmp/out" "second"
    expect 0 "$sluice" sim fair --format json --svg "$tmp/fair.svg"
    json_ok "$tmp/out"; svg_ok "$tmp/fair.svg"
    expect 0 "$sluice" sim fair --weights 4,1 --format csv; contains "$tmp/out" "wfq,"
    [ "$fails" -eq 0 ] || { echo "sim_cli: $fails failure(s)" >&2; exit 1; }
    echo "sim_cli (quick): all passed"
    exit 0
fi

# ---- help and usage errors ------------------------------------------------------
expect 0 "$sluice" --help;                contains "$tmp/out" "sim race"
expect 0 "$sluice" sim --help;            contains "$tmp/out" "usage: sluice sim"
expect 0 "$sluice" sim race --help
for o in --rate --burst --trace --algorithms --seed --format --log --svg --mean-rate; do
    contains "$tmp/out" "$o"
done
expect 0 "$sluice" sim herd -h
for o in --workers --rate --burst --retry-after --jitter --duration --seed --format --svg; do
    contains "$tmp/out" "$o"
done
expect 0 "$sluice" sim aimd --help
for o in --start --increase --decrease --floor --cap --rate --burst --duration --format --svg; do
    contains "$tmp/out" "$o"
done
expect 0 "$sluice" sim fair --help
for o in --jobs --tenants --spread --rate --weights --seed --format --svg; do
    contains "$tmp/out" "$o"
done
expect 2 "$sluice"
expect 2 "$sluice" frobnicate;            contains "$tmp/err" "unknown command 'frobnicate'"
expect 2 "$sluice" sim
expect 2 "$sluice" sim walk;              contains "$tmp/err" "unknown simulation 'walk'"
expect 2 "$sluice" sim race --bogus;      contains "$tmp/err" "unknown option '--bogus'"
expect 2 "$sluice" sim race --rate five;  contains "$tmp/err" "--rate: expected a rate"
expect 2 "$sluice" sim race --burst 0
expect 2 "$sluice" sim race --burst
expect 2 "$sluice" sim race --format xml
expect 2 "$sluice" sim race --algorithms gcra,nope
expect 2 "$sluice" sim race stray
expect 2 "$sluice" sim herd --jitter -1
expect 2 "$sluice" sim herd --workers 0
expect 2 "$sluice" sim herd --ramp-up 5 --ramp-from 0
expect 2 "$sluice" sim herd --ramp-up 0
expect 2 "$sluice" sim aimd --decrease 1.5
expect 2 "$sluice" sim aimd --floor 10 --start 5
expect 2 "$sluice" sim fair --weights 2;   contains "$tmp/err" "--weights: expected two weights"
expect 2 "$sluice" sim fair --weights 0,1
expect 2 "$sluice" sim fair --tenants 0

# ---- race on every built-in trace, every format -----------------------------------
for t in bursty edge steady poisson; do
    expect 0 "$sluice" sim race --trace "$t"
    contains "$tmp/out" "trace $t:"
    for a in fixed_window sliding_log sliding_window token_bucket gcra leaky_queue; do
        contains "$tmp/out" "$a"
    done
done
expect 0 "$sluice" sim race --format csv
head -1 "$tmp/out" | grep -qx 'algorithm,allowed,rejected,busiest,busiest_at,max_delay,busiest_key' ||
    fail "race CSV header: $(head -1 "$tmp/out")"
[ "$(wc -l <"$tmp/out")" -eq 7 ] || fail "race CSV: want 7 lines"
expect 0 "$sluice" sim race --format json --algorithms gcra,leaky_queue
cp "$tmp/out" "$tmp/race.json"; json_ok "$tmp/race.json"
if command -v jq >/dev/null; then
    [ "$(jq -r '.results | map(.algorithm) | join(",")' "$tmp/race.json")" = gcra,leaky_queue ] ||
        fail "--algorithms order not kept"
    [ "$(jq '.results[0].max_delay' "$tmp/race.json")" = null ] || fail "gcra max_delay not null"
fi

# ---- the example trace and the log -----------------------------------------------
example=$src/examples/traces/two-clients.csv
expect 0 "$sluice" sim race --trace "$example" --log "$tmp/log.csv"
contains "$tmp/out" "2 keys"
head -1 "$tmp/log.csv" | grep -qx 'algorithm,time,key,cost,allowed,delay' || fail "log header"
requests=$(grep -cvE '^(#|time,|$)' "$example")
[ "$(wc -l <"$tmp/log.csv")" -eq $((6 * requests + 1)) ] || fail "log rows: want 6 x $requests + 1"
# time exactly as written in the file: every input time appears in the log
for tm in $(grep -vE '^(#|time,|$)' "$example" | cut -d, -f1 | sort -u); do
    grep -q "^gcra,$tm," "$tmp/log.csv" || fail "log lacks time $tm as written"
done
awk -F, 'NR > 1 && ($5 != 0 && $5 != 1) { bad = 1 } END { exit bad }' "$tmp/log.csv" ||
    fail "log: allowed must be 0 or 1"
awk -F, 'NR > 1 && $1 != "leaky_queue" && $6 != "0.000" { bad = 1 } END { exit bad }' "$tmp/log.csv" ||
    fail "log: delay must be 0 except for leaky_queue"
grep -q '^leaky_queue,[^,]*,alice,1,1,0\.[0-9]*[1-9]' "$tmp/log.csv" || fail "log: no queue delay"
grep -q '^leaky_queue,3.500,alice,3,' "$tmp/log.csv" || fail "log: cost column"
# built-in traces are logged with 3 decimals
expect 0 "$sluice" sim race --trace edge --algorithms fixed_window --log "$tmp/edge.csv"
sed -n 2p "$tmp/edge.csv" | grep -qx 'fixed_window,4.800,k,1,1,0.000' || fail "edge log row"
# an unsorted file is sorted, stably
printf '2,b\n1,a\n2,c\n' >"$tmp/unsorted.csv"
expect 0 "$sluice" sim race --trace "$tmp/unsorted.csv" --algorithms gcra --log "$tmp/u.csv"
[ "$(cut -d, -f2,3 "$tmp/u.csv" | tr '\n' ' ')" = "time,key 1,a 2,b 2,c " ] || fail "sorting"

# ---- CSV errors: file:line, exit 1 ------------------------------------------------
printf 'time,key,cost\n0.1\n0.2,alice,x\n' >"$tmp/bad.csv"
expect 1 "$sluice" sim race --trace "$tmp/bad.csv"
contains "$tmp/err" "$tmp/bad.csv:3: cost 'x'"
printf '0.1\n0.1234567891\n' >"$tmp/bad2.csv"
expect 1 "$sluice" sim race --trace "$tmp/bad2.csv"
contains "$tmp/err" "bad2.csv:2: time '0.1234567891': more than 9 decimal places"
printf '1\n-2\n' >"$tmp/bad3.csv"
expect 1 "$sluice" sim race --trace "$tmp/bad3.csv";  contains "$tmp/err" "bad3.csv:2: time '-2': negative"
expect 1 "$sluice" sim race --trace "$tmp/missing.csv"; contains "$tmp/err" "missing.csv: cannot open"
[ ! -s "$tmp/out" ] || fail "no table after an error"

# ---- herd and aimd ------------------------------------------------------------------
expect 0 "$sluice" sim herd --format json
cp "$tmp/out" "$tmp/herd0.json"; json_ok "$tmp/herd0.json"
for k in '"sent": 1350' '"served": 180' '"unserved": 120' '"last_served_at": 10.000' '"all_served_at": null'; do
    contains "$tmp/herd0.json" "$k"
done
expect 0 "$sluice" sim herd --jitter 2 --format json
cp "$tmp/out" "$tmp/herd2.json"; json_ok "$tmp/herd2.json"
contains "$tmp/herd2.json" '"unserved": 0'
expect 0 "$sluice" sim herd --format csv
head -1 "$tmp/out" | grep -q '^workers,algorithm,rate,burst,start_empty,retry_after,jitter,duration,seed,sent,retries,served,unserved,last_served_at,all_served_at$' ||
    fail "herd CSV header"
expect 0 "$sluice" sim herd --jitter 1
contains "$tmp/out" "sent "
# after a recovery against ramp_up: the first wave gets 10% of the burst (3, not 30)
expect 0 "$sluice" sim herd --jitter 2 --ramp-up 5
contains "$tmp/out" "in the first second 30 were served, 3 with the ramp"
expect 0 "$sluice" sim herd --jitter 2 --ramp-up 5 --format csv
head -1 "$tmp/out" | grep -q ',all_served_at,ramp_up,ramp_from,served_without_ramp,unserved_without_ramp$' ||
    fail "herd CSV header with a ramp"
expect 0 "$sluice" sim aimd --format json
cp "$tmp/out" "$tmp/aimd.json"; json_ok "$tmp/aimd.json"
expect 0 "$sluice" sim aimd --format csv
head -1 "$tmp/out" | grep -qx 'second,rate,min_rate,max_rate,sent,served,rejected' || fail "aimd CSV header"
[ "$(wc -l <"$tmp/out")" -eq 31 ] || fail "aimd CSV: one row per second"
expect 0 "$sluice" sim fair --format csv
head -1 "$tmp/out" | grep -qx 'discipline,small_p50,small_p99,small_max,big_p50,big_max,done_at' ||
    fail "fair CSV header"
grep -qx 'wfq,0.000510796,0.000995536,0.00131165,5.052,10.099,10.099' "$tmp/out" || fail "fair wfq row"
expect 0 "$sluice" sim fair --tenants 5 --format json
cp "$tmp/out" "$tmp/fair.json"; json_ok "$tmp/fair.json"
contains "$tmp/fair.json" '"tenant": "small-4"'

# ---- SVG charts: well-formed, self-contained -----------------------------------------
expect 0 "$sluice" sim race --trace bursty --svg "$tmp/race.svg"
expect 0 "$sluice" sim herd --jitter 2 --svg "$tmp/herd.svg"
expect 0 "$sluice" sim aimd --svg "$tmp/aimd.svg"
expect 0 "$sluice" sim fair --svg "$tmp/fair.svg"
for f in race herd aimd fair; do
    svg_ok "$tmp/$f.svg"
    grep -qE '(href|<script|url\()' "$tmp/$f.svg" && fail "$f.svg refers to something outside itself"
done
contains "$tmp/race.svg" "<title>sluice sim race: bursty trace"
expect 1 "$sluice" sim race --svg "$tmp/no/such/dir.svg"
contains "$tmp/err" "cannot write"

# ---- determinism: same arguments and seed, same bytes -----------------------------
determinism() { # NAME ARGS...: two runs, compare stdout and any --log/--svg file
    local name=$1; shift
    for run in 1 2; do
        mkdir -p "$tmp/d$run"
        (cd "$tmp/d$run" && "$sluice" "$@" >"stdout") || fail "determinism run: $*"
    done
    diff -r "$tmp/d1" "$tmp/d2" >/dev/null || fail "not deterministic: $name"
    rm -rf "$tmp/d1" "$tmp/d2"
}
for f in table csv json; do
    determinism "race $f" sim race --trace poisson --seed 7 --format "$f" --log log.csv --svg race.svg
    determinism "herd $f" sim herd --jitter 1 --seed 7 --format "$f" --svg herd.svg
    determinism "aimd $f" sim aimd --format "$f" --svg aimd.svg
    determinism "fair $f" sim fair --seed 7 --format "$f" --svg fair.svg
done
"$sluice" sim race --trace poisson --seed 1 >"$tmp/p1"
"$sluice" sim race --trace poisson --seed 2 >"$tmp/p2"
cmp -s "$tmp/p1" "$tmp/p2" && fail "--seed does not change the poisson trace"

# ---- the committed charts are what the code draws ---------------------------------
# (docs/sim.md lists the commands; regenerate with them when this fails)
img=$src/docs/img
check_img() { # FILE ARGS...
    local f=$1; shift
    "$sluice" "$@" --svg "$tmp/img.svg" >/dev/null || fail "chart $f"
    cmp -s "$tmp/img.svg" "$img/$f" || fail "docs/img/$f is stale: sluice $* --svg docs/img/$f"
}
for t in bursty edge steady poisson; do check_img "race-$t.svg" sim race --trace "$t"; done
check_img herd-jitter0.svg sim herd --jitter 0
check_img herd-jitter2.svg sim herd --jitter 2
check_img herd-ramp.svg sim herd --jitter 2 --ramp-up 5
check_img aimd.svg sim aimd
check_img fair.svg sim fair
for f in "$img"/*.svg; do svg_ok "$f"; done

[ "$fails" -eq 0 ] || { echo "sim_cli: $fails failure(s)" >&2; exit 1; }
echo "sim_cli: all passed"
