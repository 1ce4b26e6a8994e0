#!/usr/bin/env bash
# install-deps.sh: install the Debian 12 packages sluice needs to build and
# test, only those missing. Quiet when everything is already present.
set -euo pipefail

packages=(
    build-essential cmake pkg-config   # compiler, build, pkg-config for sluice.pc
    libcmocka-dev                      # unit tests
    clang libclang-rt-14-dev           # libFuzzer and sanitizer runtimes
    clang-format clang-tidy            # make format-check (in make test), make tidy
    libxml2-utils                      # xmllint: the sim tests check SVG charts are well-formed
    libuv1-dev libhttp-parser-dev      # sluiced: event loop, HTTP/1.1 parsing
    libyaml-dev libcjson-dev           # sluiced: config, JSON bodies
    libcurl4-openssl-dev               # libsluice-client: the polite HTTP client
    curl redis-tools python3           # integration tests: real clients, raw sockets
    libhiredis-dev redis-server        # the Redis store; real Redis (and Cluster) in its tests
    nginx-light                        # integration tests: nginx in front, sluiced behind auth_request
    chromium                           # ui_browser: the /ui/ dashboard in headless Chromium (playwright-core from npm);
                                       # prometheus (below): examples/prometheus's promtool and scrape tests too
    libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler nghttp2-client  # gRPC: HTTP/2, protobuf, h2load
    golang-go golang-golang-x-time-dev  # xrate_diff: sl_limiter against the real x/time/rate
    libsystemd-dev                     # sluiced: sd_notify readiness under systemd (optional at build time)
    dpkg-dev lintian systemd           # make deb: dpkg-shlibdeps; its test: lintian, systemd-analyze
    prometheus                         # promtool: signals_integration checks the live /metrics
)
# the gRPC integration test's client (@grpc/grpc-js from npm) and the browser test's
# playwright-core; any existing node + npm will do
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
