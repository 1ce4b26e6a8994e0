#!/usr/bin/env python3
"""man_test.py SLUICED SLUICE MANDIR: the man pages against the programs.

Each man page is written once in roff (packaging/man/*.in, the version put in
by CMake into MANDIR). Its option lists must be exactly the options the
matching --help prints: sluiced(8)'s OPTIONS and `sluiced --help`; sluice(1)'s
OPTIONS and `sluice --help`, and each of its subsections ("sluice sim race",
..., "sluice fetch") and that command's --help. sluice.yaml(5)'s KEYS must be
exactly the top-level keys sluiced accepts, as its error for an unknown key
lists them. Also sluiced's usage: a known option without its value names the
value it needs, and --help names every listener of the default config.
Standard library only."""
import os
import re
import shutil
import sys
import unittest

import harness

SLUICED, SLUICE, MANDIR = sys.argv[1:4]
del sys.argv[1:4]

OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][A-Za-z-]*)")


run = harness.run


def roff_sections(page):
    """{(SH title, SS title or None): [lines]} of a roff page."""
    with open(os.path.join(MANDIR, page), encoding="utf-8") as f:
        lines = f.read().splitlines()
    out, sh, ss = {}, None, None
    for line in lines:
        m = re.match(r'^\.S([HS])\s+"?([^"]*)"?\s*$', line)
        if m:
            if m.group(1) == "H":
                sh, ss = m.group(2), None
            else:
                ss = m.group(2)
            continue
        out.setdefault((sh, ss), []).append(line)
    return out


def roff_tags(lines):
    """The words of each .TP tag line (the line after .TP), roff unescaped."""
    tags = []
    for i, line in enumerate(lines):
        if line.startswith(".TP") and i + 1 < len(lines):
            tag = lines[i + 1].replace("\\-", "-")
            tag = re.sub(r"\\f[BIRP]", "", tag)
            tags.append(tag)
    return tags


def man_options(lines):
    return sorted({o for tag in roff_tags(lines) for o in OPTION.findall(tag)})


def help_options(text):
    """The options of a --help: the first column of lines indented by 2 to 4
    spaces that start with a dash."""
    found = set()
    for line in text.splitlines():
        m = re.match(r"^ {2,4}(-\S.*?)(?: {2,}|$)", line)
        if m:
            found.update(OPTION.findall(m.group(1)))
    return sorted(found)


class ManPages(unittest.TestCase):
    def assert_same(self, page, section, man, helptext, what):
        self.assertTrue(man, f"{page} {section}: no options found")
        self.assertEqual(man, help_options(helptext), f"{page} {section} against {what}")

    def test_sluiced_options(self):
        rc, out, _ = run(SLUICED, "--help")
        self.assertEqual(rc, 0)
        secs = roff_sections("sluiced.8")
        self.assert_same("sluiced.8", "OPTIONS", man_options(secs[("OPTIONS", None)]), out,
                         "sluiced --help")

    def test_sluice_options(self):
        secs = roff_sections("sluice.1")
        rc, out, _ = run(SLUICE, "--help")
        self.assertEqual(rc, 0)
        self.assert_same("sluice.1", "OPTIONS", man_options(secs[("OPTIONS", None)]), out,
                         "sluice --help")
        subs = [ss for (sh, ss) in secs if sh == "OPTIONS" and ss]
        self.assertEqual(sorted(subs), sorted(["sluice sim race", "sluice sim herd",
                                               "sluice sim aimd", "sluice sim fair",
                                               "sluice sim adaptive",
                                               "sluice fetch", "sluice top"]))
        for ss in subs:
            with self.subTest(command=ss):
                rc, out, err = run(SLUICE, *ss.split()[1:], "--help")
                self.assertEqual(rc, 0, err)
                self.assert_same("sluice.1", ss, man_options(secs[("OPTIONS", ss)]), out,
                                 f"{ss} --help")

    def test_sluice_commands(self):
        """DESCRIPTION names the commands of `sluice --help`."""
        rc, out, _ = run(SLUICE, "--help")
        block = out.split("commands:\n", 1)[1].split("\n\n", 1)[0]
        want = sorted(re.findall(r"^  (sim \w+|[a-z][a-z-]+)", block, re.M))
        tags = roff_tags(roff_sections("sluice.1")[("DESCRIPTION", None)])
        got = sorted(re.sub(r"^\.B\s+", "", t).strip() for t in tags)
        self.assertEqual(got, want)

    def test_config_keys(self):
        d, path = harness.temp_file("sluice-man-", "unknown.yaml", "no_such_key: 1\n")
        try:
            rc, out, err = run(SLUICED, "--check-config", path)
        finally:
            shutil.rmtree(d)
        self.assertEqual(rc, 1)
        m = re.search(r"unknown key \(expected ([^)]*)\)", out + err)
        self.assertIsNotNone(m, out + err)
        want = sorted(re.split(r", | or ", m.group(1)))
        tags = roff_tags(roff_sections("sluice.yaml.5")[("KEYS", None)])
        got = sorted(re.sub(r"^\.B\s+", "", t).strip() for t in tags)
        self.assertEqual(got, want)

    def test_versions(self):
        for page in ("sluiced.8", "sluice.1", "sluice.yaml.5"):
            with open(os.path.join(MANDIR, page), encoding="utf-8") as f:
                th = next(l for l in f if l.startswith(".TH"))
            rc, out, _ = run(SLUICED, "--version")
            self.assertIn('"sluice %s"' % out.split()[1], th, page)


class Usage(unittest.TestCase):
    def test_option_without_value(self):
        for opt, need in (("-c", "a file"), ("--check-config", "a file"),
                          ("--log-level", "a level")):
            with self.subTest(option=opt):
                rc, out, err = run(SLUICED, opt)
                self.assertEqual(rc, 2)
                self.assertIn(f"sluiced: {opt} needs {need}\n", err)
                self.assertNotIn("unknown argument", err)
        rc, _, err = run(SLUICED, "--no-such-option")
        self.assertEqual(rc, 2)
        self.assertIn("sluiced: unknown argument '--no-such-option'", err)

    def test_help_names_every_default_listener(self):
        rc, out, _ = run(SLUICED, "--help")
        self.assertEqual(rc, 0)
        flat = " ".join(out.split())
        for what in ("HTTP on 127.0.0.1:8080", "gRPC (Envoy's rate limit service) on 127.0.0.1:8081",
                     "RESP on 127.0.0.1:6380"):
            self.assertIn(what, flat)


if __name__ == "__main__":
    unittest.main(verbosity=2)
