#!/usr/bin/env bash
# sim_adaptive_test.sh SLUICE: `sluice sim adaptive` (docs/sim.md) prints the
# same bytes twice, and tells the story it is for: once the backend slows
# down, the fixed rate limit keeps admitting every arrival while latency
# explodes; the adaptive limit sheds, keeps latency within 1.5x the slow
# backend's own, and grows back towards the backend's capacity once its
# lowest latency is measured afresh. Bad options are usage errors (2).
set -euo pipefail
sluice=$1
a=$("$sluice" sim adaptive --format csv)
b=$("$sluice" sim adaptive --format csv)
[ "$a" = "$b" ] || { echo "not deterministic"; exit 1; }
"$sluice" sim adaptive | grep -q '^second | admitted' || { echo "no table header"; exit 1; }
awk -F, 'NR == 1 { next }
  $1 == 5  { if ($2 != 400 || $3 != 0 || $6 != 400) bad = bad " healthy:" $0 }
  $1 == 29 { if ($2 != 400) bad = bad " rl-admits:" $0
             if ($5 < 10000) bad = bad " rl-latency:" $0
             if ($10 > 150 || $10 < 100) bad = bad " ad-latency:" $0
             if ($7 == 0) bad = bad " ad-sheds:" $0
             if ($6 < 150) bad = bad " ad-recovered:" $0 }
  END { if (bad != "") { print "unexpected rows:" bad; exit 1 } }' <<<"$a"
set +e
"$sluice" sim adaptive --rate 0 2>/dev/null; [ $? -eq 2 ] || { echo "--rate 0 accepted"; exit 1; }
"$sluice" sim adaptive --min-limit 9 --max-limit 3 2>/dev/null; [ $? -eq 2 ] || { echo "min > max accepted"; exit 1; }
"$sluice" sim adaptive --format xml 2>/dev/null; [ $? -eq 2 ] || { echo "--format xml accepted"; exit 1; }
"$sluice" sim adaptive --help | grep -q 'usage: sluice sim adaptive' || { echo "no help"; exit 1; }
echo "sim adaptive: ok"
