#!/usr/bin/env python3
"""layout_test.py SOURCE_DIR: the maps of the tree match the tree (issue 14):

- every directory of src/ (and include/sluice/, tests/unit/, ...) that holds
  files is in README.md's Layout block;
- every .c file of src/ is named in docs/ARCHITECTURE.md (its "Where is X"
  table or the request paths), so a newcomer finds any file's concept there;
- every src/ path docs/ARCHITECTURE.md names with its directory exists.

Exit 0 when all hold, else 1 with one line per problem. Standard library only."""
import os
import re
import sys


def main(src):
    problems = []
    readme = open(os.path.join(src, "README.md"), encoding="utf-8").read()
    block = re.search(r"## Layout\n\n```\n(.*?)```", readme, re.S)
    if not block:
        return ["README.md: no ## Layout block"]
    layout = block.group(1)
    for top in ("src", "include/sluice", "tests/unit", "tests/integration", "tests/fuzz",
                "bench", "docs", "examples", "packaging", "scripts"):
        if not os.path.isdir(os.path.join(src, top)):
            problems.append("%s: in the checks but not in the tree" % top)
    for d in sorted(os.listdir(os.path.join(src, "src"))):
        if os.path.isdir(os.path.join(src, "src", d)) and "src/%s/" % d not in layout:
            problems.append("README.md Layout: src/%s/ is missing" % d)
    arch = open(os.path.join(src, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    words = set(re.findall(r"[\w./-]+", arch))
    basenames = {os.path.basename(w) for w in words}
    for root, _, files in os.walk(os.path.join(src, "src")):
        for f in sorted(files):
            rel = os.path.relpath(os.path.join(root, f), src)
            if f.endswith(".c") and rel not in words and f not in basenames:
                problems.append("docs/ARCHITECTURE.md: %s is not named" % rel)
    for w in sorted(words):
        if w.startswith(("src/", "include/")) and re.search(r"\.(c|h|lua)$", w) \
                and "<" not in w and not os.path.exists(os.path.join(src, w)):
            problems.append("docs/ARCHITECTURE.md: %s does not exist" % w)
    return problems


if __name__ == "__main__":
    found = main(sys.argv[1])
    for p in found:
        print(p)
    sys.exit(1 if found else 0)
