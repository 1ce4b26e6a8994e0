#!/bin/sh
# prometheus_rules.sh SOURCE_DIR: examples/prometheus as shipped: the rules
# pass `promtool check rules`, their unit tests `promtool test rules`, and
# the example config `promtool check config` (promtool: Debian's prometheus).
set -eu
dir=$1/examples/prometheus
command -v promtool >/dev/null || { echo "prometheus_rules: promtool is missing (scripts/install-deps.sh installs prometheus)"; exit 1; }
cd "$dir"
promtool check rules sluice.rules.yml
promtool test rules sluice.rules.test.yml
promtool check config prometheus.yml
