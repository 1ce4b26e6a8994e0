#!/usr/bin/env bash
# pkgconfig_example.sh BUILD_DIR SOURCE_DIR: installs libsluice into a temporary
# prefix and runs the README's library tour as a user would: the README's C
# block must be examples/quickstart.c (less its header comment), and its two
# command lines (dynamic with an rpath, static) are taken from the README and
# run verbatim, with PKG_CONFIG_PATH pointing at the prefix, as the README
# says, and without LD_LIBRARY_PATH: the dynamic program must find the
# library by itself (issue 12 item 17). Checks what they print.
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pc=$(dirname "$(find "$tmp/prefix" -name sluice.pc)")
export PKG_CONFIG_PATH=$pc
unset LD_LIBRARY_PATH
readme=$src/README.md

# the C block is the example file
awk '/^```c$/ {on = 1; next} /^```$/ && on {exit} on' "$readme" >"$tmp/readme.c"
sed '1,/\*\//d' "$src/examples/quickstart.c" >"$tmp/example.c"
diff -u "$tmp/example.c" "$tmp/readme.c" >&2 ||
    { echo "README's C block differs from examples/quickstart.c"; exit 1; }
cp "$src/examples/quickstart.c" "$tmp/quickstart.c"

# the dynamic build: the README's "$ cc quickstart.c ..." line, run as it stands
dyn=$(sed -n 's/^\$ \(cc quickstart\.c .*\)$/\1/p' "$readme")
[ "$(grep -c . <<<"$dyn")" -eq 1 ] || { echo "README: want one '\$ cc quickstart.c' line"; exit 1; }
grep -q -- '-rpath' <<<"$dyn" || { echo "README's build line has no rpath"; exit 1; }
out=$(cd "$tmp" && CFLAGS= bash -c "$dyn")
echo "$out"
# what the README shows (less its "...") is what it prints
while IFS= read -r line; do
    grep -qxF "$line" <<<"$out" || { echo "README shows '$line', the program does not print it"; exit 1; }
done < <(awk '/^\$ cc quickstart\.c/ {on = 1; next} /^```$/ && on {exit} on && $0 != "..."' "$readme")
[ "$(grep -c ': allowed' <<<"$out")" -eq 5 ] || { echo "expected 5 allowed"; exit 1; }

# the static build the README names
static=$(grep -o 'cc quickstart\.c $(pkg-config --cflags sluice) -static $(pkg-config --static --libs sluice)' "$readme" | head -1)
[ -n "$static" ] || { echo "README: no static build line"; exit 1; }
(cd "$tmp" && bash -c "$static -o quickstart-static")
out=$("$tmp/quickstart-static")
[ "$(grep -c ': allowed' <<<"$out")" -eq 5 ] || { echo "static: expected 5 allowed"; exit 1; }
grep -q 'request 6: limited, remaining 0, retry after 200 ms' <<<"$out" || { echo "static: request 6 wrong"; exit 1; }
echo "pkg-config example OK"
