#!/usr/bin/env bash
# pkgconfig_example.sh BUILD_DIR SOURCE_DIR: installs libsluice into a temporary
# prefix, builds the README's example (examples/quickstart.c) with pkg-config,
# dynamically and statically, and checks what it prints.
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pc=$(dirname "$(find "$tmp/prefix" -name sluice.pc)")
export PKG_CONFIG_PATH=$pc
cc -std=c17 -Wall -Wextra -Werror "$src/examples/quickstart.c" $(pkg-config --cflags --libs sluice) \
   -Wl,-rpath,"$(pkg-config --variable=libdir sluice)" -o "$tmp/quickstart"
cc -std=c17 -Wall -Wextra -Werror "$src/examples/quickstart.c" $(pkg-config --cflags sluice) \
   -static $(pkg-config --static --libs sluice) -o "$tmp/quickstart-static"
for exe in quickstart quickstart-static; do
    out=$("$tmp/$exe")
    echo "$out"
    [ "$(grep -c ': allowed' <<<"$out")" -eq 5 ] || { echo "expected 5 allowed"; exit 1; }
    grep -q 'request 6: limited, remaining 0, retry after 200 ms' <<<"$out" || { echo "request 6 wrong"; exit 1; }
done
echo "pkg-config example OK"
