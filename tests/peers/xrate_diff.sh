#!/usr/bin/env bash
# xrate_diff.sh: the differential run of sl_limiter against the real
# golang.org/x/time/rate (Debian's golang-go + golang-golang-x-time-dev, GOPATH
# mode, no network): builds tests/peers/xrate_trace.go, and pipes 20 seeds of
# 5000 random traces each through xrate_replay, which stops at the first
# divergence. Usage: xrate_diff.sh XRATE_REPLAY SOURCE_DIR WORK_DIR
set -euo pipefail
replay=$1 src=$2 work=$3
mkdir -p "$work"
export GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$work/gocache" GOFLAGS= GOPROXY=off
go build -o "$work/xrate_trace" "$src/tests/peers/xrate_trace.go"
for seed in $(seq 1 20); do
    "$work/xrate_trace" "$seed" 5000 | "$replay" || { echo "xrate_diff: seed $seed" >&2; exit 1; }
done
