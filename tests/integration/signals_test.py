#!/usr/bin/env python3
"""signals_test.py SLUICED SOURCE_DIR: what sluiced says about its limits (issue 17).

- Near-limit signals: sluice_decision_remaining_ratio{policy} counts every
  decision in the bucket of remaining / limit (exact counts for a bucket of 10
  drained one by one), and /v1/top?policy=P&by=near lists the keys allowed with a
  tenth or less of their limit left, not those far from it; by=rejected is the
  old list, another by a 400.
- Labels: /v1/auth decisions in sluice_rule_decisions_total by rule (the route),
  policy and the key's tier, never by key; sluice_decisions_total and the
  histogram carry `tier` for a tier variant; 401s (unknown and missing keys) and
  400s (no original URI, a bad client address) in sluice_identity_refused_total.
- Shadow decisions logged, bounded: of 300 would-be refusals at once, the lines
  written plus sluice_log_lines_dropped_total are exactly 300.
- The live /metrics passes `promtool check metrics` (Debian's prometheus
  package), after traffic of every kind (skipped when promtool is missing).

Rates are slow (per hour), so every count is exact however slow the machine.
With SLUICE_TEST_REDIS=1 the same tests run with the Redis store, on a
redis-server of their own. Standard library only."""
import json
import shutil
import subprocess
import time
import unittest

import harness
import sluiced_test
from harness import curl, metric

STORE = "store:\n  type: memory\n  max_memory: 64MiB\n"

CONFIG = harness.config_head() + """
{store}
identity:
  api_keys:
    file: {keys}
    header: X-API-Key
tiers:
  free:
  pro:
    per_key: {{rate: 1/h, burst: 20}}
policies:
  - name: bucket
    algorithm: token_bucket
    rate: 1/h
    burst: 10
  - name: per_ip
    algorithm: token_bucket
    rate: 1/h
    burst: 1000
  - name: per_key
    algorithm: token_bucket
    rate: 1/h
    burst: 3
  - name: trial
    algorithm: fixed_window
    rate: 2/h
    shadow: true
rules:
  - name: fence
    limits:
      - {{policy: per_ip, by: ip}}
  - name: api
    path: /api/*
    limits:
      - {{policy: per_key, by: api_key}}
  - name: beta
    path: /beta/*
    limits:
      - {{policy: trial, by: api_key}}
"""

KEYS = "alice free\nbob pro\ncarol\ndave\n"


def use_redis_store():
    global STORE
    STORE = harness.private_store("signals-test-redis-")


def auth(s, uri, key=None, ip="203.0.113.7"):
    args = [s.url("/v1/auth"), "-H", "X-Original-Method: GET", "-H", "X-Original-URI: " + uri]
    if ip is not None:
        args += ["-H", "X-Real-IP: " + ip]
    if key is not None:
        args += ["-H", "X-API-Key: " + key]
    return curl(*args)[0]


class Signals(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir, keys = harness.temp_file("signals-test-", "keys.txt", KEYS)
        cls.s = sluiced_test.Server(CONFIG, store=STORE, keys=keys)

    @classmethod
    def tearDownClass(cls):
        code = cls.s.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)
        assert code == 0, code

    def metrics(self):
        st, _, m = curl(self.s.url("/metrics"))
        self.assertEqual(st, 200)
        return m

    def check(self, key, policy="bucket"):
        return curl(self.s.url("/v1/check?policy=%s&key=%s" % (policy, key)))[0]

    def test_remaining_ratio_and_near_keys(self):
        for _ in range(11):  # remaining 9, 8, ..., 0, then a refusal (0 left)
            self.check("drained")
        for _ in range(3):  # remaining 9, 8, 7: far from the limit
            self.check("light")
        m = self.metrics()
        def b(le):
            return metric(m, "sluice_decision_remaining_ratio_bucket", policy="bucket", le=le)
        # cumulative: 0 -> 2 (0 left, twice), 0.1 -> 3 (1 left), 0.25 -> 4 (2)...
        self.assertEqual([b(x) for x in ["0", "0.01", "0.05", "0.1", "0.25", "0.5", "1", "+Inf"]],
                         [2, 2, 2, 3, 4, 7, 14, 14])
        self.assertEqual(metric(m, "sluice_decision_remaining_ratio_count", policy="bucket"), 14)
        self.assertAlmostEqual(
            metric(m, "sluice_decision_remaining_ratio_sum", policy="bucket"), 4.5 + 2.4)
        st, _, body = curl(self.s.url("/v1/top?policy=bucket&by=near"))
        self.assertEqual(st, 200, body)
        self.assertEqual(json.loads(body), {"policy": "bucket", "by": "near", "top": [
            {"key": "drained", "near": 2, "error": 0}]})
        st, _, body = curl(self.s.url("/v1/top?policy=bucket&by=rejected"))
        self.assertEqual(json.loads(body)["top"], [{"key": "drained", "rejected": 1, "error": 0}])
        st, _, body = curl(self.s.url("/v1/top?policy=bucket&by=far"))
        self.assertEqual((st, json.loads(body)["error"]), (400, "bad_by"))

    def test_rule_and_tier_labels(self):
        # trial counts per hour: a straddle would start the count over
        harness.window_room(3600, 60, "2 allowed, 1 shadow-limited")
        self.assertEqual(auth(self.s, "/api/x", "alice"), 200)
        for _ in range(2):
            self.assertEqual(auth(self.s, "/api/x", "bob"), 200)
        for _ in range(3):
            self.assertEqual(auth(self.s, "/beta/y", "carol"), 200)  # shadow: 2 then 1 refused
        for _ in range(3):
            auth(self.s, "/api/z", "alice")  # alice has 2 left: 2 allowed, then 403
        m = self.metrics()
        r = lambda **l: metric(m, "sluice_rule_decisions_total", **l)
        self.assertEqual(r(rule="api", policy="per_key", tier="free", outcome="allowed"), 3)
        self.assertEqual(r(rule="api", policy="per_key", tier="free", outcome="limited"), 1)
        self.assertEqual(r(rule="api", policy="per_key:pro", tier="pro", outcome="allowed"), 2)
        self.assertEqual(r(rule="beta", policy="trial", outcome="allowed"), 2)
        self.assertEqual(r(rule="beta", policy="trial", outcome="shadow_limited"), 1)
        self.assertGreaterEqual(r(rule="fence", policy="per_ip", tier="pro", outcome="allowed"), 2)
        # the tier variant's own decisions carry the tier
        self.assertEqual(metric(m, "sluice_decisions_total", policy="per_key:pro", tier="pro",
                                outcome="allowed"), 2)
        self.assertIsNotNone(metric(m, "sluice_decision_remaining_ratio_count",
                                    policy="per_key:pro", tier="pro"))
        # never a key: no label value is one of the keys
        for line in m.splitlines():
            if line.startswith("sluice_rule_decisions_total"):
                self.assertNotRegex(line, r'"(alice|bob|carol)"')

    def test_identity_refusals(self):
        before = self.metrics()
        def refused(m, reason):
            return metric(m, "sluice_identity_refused_total", reason=reason)
        self.assertEqual(auth(self.s, "/api/x", "mallory"), 401)
        self.assertEqual(auth(self.s, "/api/x", "mallory2"), 401)
        st, _, _ = curl(self.s.url("/v1/auth"), "-H", "X-Original-Method: GET",
                        "-H", "X-Real-IP: 203.0.113.9")
        self.assertEqual(st, 400)
        self.assertEqual(auth(self.s, "/api/x", "alice", ip="not-an-ip"), 400)
        after = self.metrics()
        for reason, n in [("unknown_key", 2), ("missing_uri", 1), ("bad_client_address", 1),
                          ("missing_key", 0), ("bad_method", 0)]:
            self.assertEqual(refused(after, reason) - refused(before, reason), n, reason)

    def test_shadow_log_bounded_and_counted(self):
        # trial counts per hour: a straddle would start the count over
        harness.window_room(3600, 60, "300 shadow refusals")
        # 300 shadow refusals at once: at most 10 lines a second are written, and
        # every other one is counted in sluice_log_lines_dropped_total (exactly:
        # lines written + lines dropped = shadow refusals, however slow the machine)
        before = self.metrics()
        lines_before = self.s.log_text().count("would have refused")
        req = b"GET /v1/check?policy=trial&key=flood HTTP/1.1\r\nHost: x\r\n\r\n"
        p = harness.Pipe(self.s.http_port)
        t0 = time.time()
        answers = p.run([req] * 302)
        elapsed = time.time() - t0
        p.close()
        self.assertEqual({a[0] for a in answers}, {200})
        after = self.metrics()
        refused = (metric(after, "sluice_decisions_total", policy="trial",
                          outcome="shadow_limited") -
                   (metric(before, "sluice_decisions_total", policy="trial",
                           outcome="shadow_limited") or 0))
        self.assertEqual(refused, 300)
        dropped = (metric(after, "sluice_log_lines_dropped_total") -
                   metric(before, "sluice_log_lines_dropped_total"))
        written = self.s.log_text().count("would have refused") - lines_before
        self.assertEqual(written + dropped, 300)
        self.assertGreaterEqual(written, 1)
        # the budget: 10 lines in each second the flood touched (a slower machine only
        # spreads it over more seconds)
        self.assertLessEqual(written, 10 * (int(elapsed) + 2))

    def test_promtool_check_metrics(self):
        promtool = shutil.which("promtool")
        if not promtool:
            self.skipTest("promtool not installed (Debian package prometheus)")
        auth(self.s, "/other", "dave")
        auth(self.s, "/api/x", "nobody")
        self.check("p", policy="per_ip")
        curl("-X", "POST", "-H", "Content-Type: application/graphql",
             self.s.url("/v1/graphql?policy=per_ip&key=g"), data=b"{ a }")
        st, _, m = curl(self.s.url("/metrics"), text=False)
        self.assertEqual(st, 200)
        r = subprocess.run([promtool, "check", "metrics"], input=m, capture_output=True)
        # promtool prints lint findings and exits 1 for any of them (or 3 for a parse error)
        self.assertEqual(r.returncode, 0, (r.stdout + r.stderr).decode())
        self.assertIn(b"sluice_decision_remaining_ratio_bucket", m)
        self.assertIn(b"sluice_rule_decisions_total", m)


if __name__ == "__main__":
    sluiced_test.main(use_redis_store)
