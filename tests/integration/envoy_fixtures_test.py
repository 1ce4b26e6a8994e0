#!/usr/bin/env python3
"""envoy_fixtures_test.py SLUICED SOURCE_DIR: envoyproxy/ratelimit's own rule
files through the real sluiced (issue 15), and the peer's HTTP health check.

- `sluiced --check-config` on a config whose `domains:` names each fixture
  the peer accepts (tests/peers/envoyproxy-ratelimit/: every file and
  directory it loads) exits 0; on each file it refuses, exits non-zero and
  says why;
- sluiced serving the peer's example directory (quota_mode, metadata,
  wildcards) answers `POST /json` for it, and `GET /healthcheck` answers
  200 `OK` as the peer's does (HEAD too; other methods 405).
Standard library only, plus curl."""
import json
import os
import sys
import unittest

import harness
import sluiced_test  # Server: sluiced on ephemeral ports

FIX = None  # tests/peers/envoyproxy-ratelimit, set in main

ACCEPTED = [
    "peer/test/config/basic_config.yaml",
    "peer/test/config/duplicate_domain.yaml",
    "peer/test/config/merge_domain_key1.yaml",
    "peer/test/config/merge_domain_key2.yaml",
    "peer/test/config/metadata.yaml",
    "peer/test/config/shadowmode_config.yaml",
    "peer/test/config/share_threshold.yaml",
    "peer/test/config/wildcard.yaml",
    "peer/examples/ratelimit/config",
    "peer/test/integration/runtime/current/ratelimit/config",
    "peer/test/integration/runtime/current/ratelimit/reload.yaml",
    "translated",
    "derived",
]

REFUSED = {
    "bad_limit_unit.yaml": "invalid rate limit unit 'foo'",
    "bad_yaml.yaml": "bad_yaml.yaml:",
    "duplicate_key.yaml": "duplicate descriptor composite key",
    "empty_domain.yaml": "config file cannot have empty domain",
    "empty_key.yaml": "descriptor has empty key",
    "misspelled_key.yaml": "ratelimit",
    "misspelled_key2.yaml": "requestsperunit",
    "non_map_list.yaml": "descriptors[0]",
    "non_string_key.yaml": "0.25",
    "replaces_empty.yaml": "should not have an empty replaces entry",
    "replaces_self.yaml": "replaces should not contain name of same descriptor",
    "unlimited_with_unit.yaml": "should not specify rate limit unit when unlimited",
}

CONFIG = harness.config_head(1) + """
domains: {domains}
"""


def check_config(domains):
    rc, out, err = sluiced_test.check_config(CONFIG.format(domains=json.dumps(domains)))
    return rc, out + err


class Fixtures(unittest.TestCase):
    def test_every_accepted_fixture_loads(self):
        for rel in ACCEPTED:
            with self.subTest(fixture=rel):
                rc, out = check_config(os.path.join(FIX, rel))
                self.assertEqual(rc, 0, out)

    def test_every_fixture_file_is_checked(self):
        # each file there is refused (REFUSED) or under what ACCEPTED names;
        # each accepted one also loads alone
        for root, _, files in os.walk(FIX):
            for name in files:
                if not name.endswith(".yaml"):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, FIX)
                if os.path.dirname(rel) == "peer/test/config" and name in REFUSED:
                    continue
                self.assertTrue(rel in ACCEPTED or os.path.dirname(rel) in ACCEPTED,
                                "%s: a fixture with no verdict in this test" % rel)
                with self.subTest(fixture=rel):
                    rc, out = check_config(path)
                    self.assertEqual(rc, 0, out)

    def test_every_refused_fixture_is_refused(self):
        for name, why in sorted(REFUSED.items()):
            with self.subTest(fixture=name):
                rc, out = check_config(os.path.join(FIX, "peer/test/config", name))
                self.assertNotEqual(rc, 0, out)
                self.assertIn(why, out)


class Serving(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = sluiced_test.Server(CONFIG.replace("{domains}", json.dumps(
            os.path.join(FIX, "peer/examples/ratelimit/config"))))

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def test_healthcheck_as_the_peer(self):
        st, h, body = harness.curl(self.s.url("/healthcheck"))
        self.assertEqual((st, body), (200, "OK"))
        self.assertTrue(h["content-type"].startswith("text/plain"), h)
        st, _, body = harness.curl("-I", self.s.url("/healthcheck"))
        self.assertEqual((st, body), (200, ""))
        st, h, _ = harness.curl("-X", "POST", self.s.url("/healthcheck"))
        self.assertEqual(st, 405)
        self.assertIn("GET", h["allow"])

    def test_example_config_answers(self):
        # the peer's example (quota_mode and metadata in it) loads and decides:
        # mongo_cps database=users is 500 per second
        req = {"domain": "mongo_cps",
               "descriptors": [{"entries": [{"key": "database", "value": "users"}]}]}
        st, _, body = harness.curl("-X", "POST", self.s.url("/json"),
                                   data=json.dumps(req).encode())
        self.assertEqual(st, 200, body)
        r = json.loads(body)
        self.assertEqual(r["statuses"][0]["currentLimit"]["requestsPerUnit"], 500)
        # rl service=service_1 (quota_mode, metadata) matches its 1 per minute rule
        req = {"domain": "rl",
               "descriptors": [{"entries": [{"key": "service", "value": "service_1"}]}]}
        st, _, body = harness.curl("-X", "POST", self.s.url("/json"),
                                   data=json.dumps(req).encode())
        r = json.loads(body)
        self.assertEqual(r["statuses"][0]["currentLimit"]["requestsPerUnit"], 1, body)


if __name__ == "__main__":
    sluiced_test.SLUICED = os.path.abspath(sys.argv[1])
    sluiced_test.SRC = os.path.abspath(sys.argv[2])
    FIX = os.path.join(sluiced_test.SRC, "tests/peers/envoyproxy-ratelimit")
    unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[3:])
