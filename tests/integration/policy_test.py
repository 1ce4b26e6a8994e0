#!/usr/bin/env python3
"""policy_test.py SLUICED SOURCE_DIR: the policy layer against the real sluiced (issue 12).

- The per-IP fence is in front of the API key check (item 20): 12,000 random API
  keys from one address against a fence of burst 200 (refilled once an hour, so
  the count is exact however slow the machine) get 200 answers 401 and then
  11,800 answers 403 with Retry-After; the fence is charged, a valid key from
  that address is fenced too while another address passes, and
  sluice_api_key_refused_total counts every refused key.
- Shadow mode and Envoy's rules (item 15): a top-level `shadow: true` covers the
  `domains:` rules (POST /json answers OK, counted as shadow_limited), every
  rule's decisions show in /metrics by domain and rule (never by descriptor
  value) and the refused descriptors in /v1/top?domain=, shadow logs what it
  would have refused at most SL__LOG_LIMITED_PER_SEC lines a second however
  large the flood, and a reload to `shadow: false` enforces the same rules.

Requests go over raw sockets, pipelined, so that 12,000 of them take seconds.
With SLUICE_TEST_REDIS=1 the same tests run with the Redis store, on a
redis-server of their own. Standard library only."""
import json
import random
import re
import shutil
import string
import time
import unittest

import sluiced_test  # the Server helper
import harness
from harness import Pipe, metric

STORE = "store:\n  type: memory\n"
LOG_LIMIT = 10  # SL__LOG_LIMITED_PER_SEC (src/util/log.h)


def use_redis_store():
    """A redis-server of our own on a free loopback port (stopped at exit)."""
    global STORE
    STORE = harness.private_store("policy-test-redis-")


def auth_request(key, uri="/api/items", real_ip="127.0.0.1"):
    """The subrequest nginx's auth_request sends (docs/nginx.md)."""
    head = ("GET /v1/auth HTTP/1.1\r\nHost: sluiced\r\nX-Original-Method: GET\r\n"
            "X-Original-URI: %s\r\nX-Real-IP: %s\r\n" % (uri, real_ip))
    if key is not None:
        head += "X-API-Key: %s\r\n" % key
    return (head + "\r\n").encode()


def json_request(domain, entries):
    body = json.dumps({"domain": domain, "descriptors": [
        {"entries": [{"key": k, "value": v} for k, v in entries]}]}).encode()
    return (b"POST /json HTTP/1.1\r\nHost: sluiced\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body


def get(server, path):
    p = Pipe(server.http_port)
    try:
        return p.run([("GET %s HTTP/1.1\r\nHost: sluiced\r\n\r\n" % path).encode()])[0]
    finally:
        p.close()


FENCE_CONFIG = harness.config_head() + """
{store}
identity:
  api_keys:
    file: {keys}
policies:
  - name: per_ip
    algorithm: token_bucket
    rate: 1/h
    burst: 200
  - name: per_key
    algorithm: token_bucket
    rate: 1/h
    burst: 1000
rules:
  - name: fence
    limits:
      - policy: per_ip
        by: ip
        cost: 1
  - name: api
    path: /api/*
    limits:
      - policy: per_key
        by: api_key
"""


class Fence(unittest.TestCase):
    """Item 20: the per-IP fence is in front of the API key check."""

    @classmethod
    def setUpClass(cls):
        cls.dir, keys = harness.temp_file("policy-test-", "keys.txt", "alice\nbob\n")
        cls.s = sluiced_test.Server(FENCE_CONFIG, store=STORE, keys=keys)

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_random_key_flood_is_fenced(self):
        rng = random.Random(12)
        alphabet = string.ascii_letters + string.digits
        keys = ["".join(rng.choice(alphabet) for _ in range(24)) for _ in range(12000)]
        p = Pipe(self.s.http_port, "127.0.0.1")
        answers = p.run([auth_request(k) for k in keys])
        statuses = [a[0] for a in answers]
        # the fence's 200 requests pass it, and are refused for their key;
        # every later one is refused by the fence, before its key matters
        # (counts, not lists: unittest's diff of two long lists takes forever)
        self.assertEqual((statuses[:200].count(401), statuses[200:].count(403)), (200, 11800),
                         "first 20 answers: %s" % statuses[:20])
        st, h, body = answers[-1]
        self.assertFalse(json.loads(body)["allowed"])
        self.assertEqual(h["sluice-limit"], "per_ip")
        self.assertGreaterEqual(int(h["retry-after"]), 1)
        self.assertEqual(json.loads(answers[0][2])["error"], "unknown_key")
        self.assertIn("www-authenticate", answers[0][1])
        # a valid key from the fenced address is fenced too; no key at all as well
        self.assertEqual([a[0] for a in p.run([auth_request("alice"), auth_request(None)])],
                         [403, 403])
        p.close()
        # another address is a client of its own: its fence is untouched
        q = Pipe(self.s.http_port, "127.0.0.2")
        self.assertEqual([a[0] for a in q.run([auth_request("bob", real_ip="127.0.0.2"),
                                               auth_request("nope", real_ip="127.0.0.2")])],
                         [200, 401])
        q.close()
        _, _, m = get(self.s, "/metrics")
        self.assertEqual(metric(m, "sluice_api_key_refused_total", reason="unknown_key"), 12001)
        self.assertEqual(metric(m, "sluice_api_key_refused_total", reason="missing_key"), 0)
        self.assertEqual(metric(m, "sluice_decisions_total", policy="per_ip", outcome="allowed"),
                         202)
        self.assertEqual(metric(m, "sluice_decisions_total", policy="per_ip", outcome="limited"),
                         11802)
        # no limiter state was keyed by a made-up key: per_key holds alice and bob at most
        if STORE.startswith("store:\n  type: memory"):
            self.assertLessEqual(metric(m, "sluice_table_keys", policy="per_key"), 2)
        for k in keys[:50]:
            self.assertNotIn(k, m)


SHADOW_CONFIG = harness.config_head() + """
{store}
shadow: {shadow}
domains: {rules}
policies:
  - name: api
    algorithm: token_bucket
    rate: 1/h
    burst: 2
"""

RULES = """
domain: edge
descriptors:
  - key: remote_address
    rate_limit:
      unit: hour
      requests_per_unit: 2
  - key: blocked
    rate_limit:
      unit: hour
      requests_per_unit: 0
  - key: plan
    value: free
    shadow_mode: true
    rate_limit:
      unit: hour
      requests_per_unit: 1
"""


class ShadowDomains(unittest.TestCase):
    """Item 15: top-level shadow covers Envoy's rules; their decisions are
    counted in /metrics and /v1/top; shadow logs, rate-limited."""

    @classmethod
    def setUpClass(cls):
        cls.dir, rules = harness.temp_file("policy-test-", "edge.yaml", RULES)
        cls.fmt = dict(store=STORE, rules=rules)
        cls.s = sluiced_test.Server(SHADOW_CONFIG, shadow="true", **cls.fmt)

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def shadow_lines(self):
        return [line for line in self.s.log_text().splitlines() if " shadow: " in line]

    def test_1_global_shadow_covers_domains(self):
        p = Pipe(self.s.http_port)
        answers = p.run([json_request("edge", [("remote_address", "198.51.100.7")])] * 5 +
                        [json_request("edge", [("blocked", "x")])] * 2)
        p.close()
        for st, _, body in answers:
            self.assertEqual(st, 200, body)
            self.assertEqual(json.loads(body)["overallCode"], "OK")
        _, _, m = get(self.s, "/metrics")
        self.assertEqual(metric(m, "sluice_domain_decisions_total", domain="edge",
                                rule="remote_address", outcome="allowed"), 2)
        self.assertEqual(metric(m, "sluice_domain_decisions_total", domain="edge",
                                rule="remote_address", outcome="shadow_limited"), 3)
        self.assertEqual(metric(m, "sluice_domain_decisions_total", domain="edge",
                                rule="remote_address", outcome="limited"), 0)
        self.assertEqual(metric(m, "sluice_domain_decisions_total", domain="edge", rule="blocked",
                                outcome="shadow_limited"), 2)
        keys = metric(m, "sluice_domain_table_keys", domain="edge", rule="remote_address")
        self.assertEqual(keys, 1 if "memory" in STORE else 0)  # Redis holds the state
        self.assertNotIn("198.51.100.7", m)  # never a descriptor value as a label
        # /v1/top: the refused descriptors of the domain, by rule
        st, _, body = get(self.s, "/v1/top?domain=edge&n=10")
        self.assertEqual(st, 200, body)
        top = json.loads(body)
        self.assertEqual(top["domain"], "edge")
        got = {(t["rule"], t["key"]): t["rejected"] for t in top["top"]}
        self.assertEqual(got[("remote_address", "remote_address=198.51.100.7")], 3)
        self.assertEqual(got[("blocked", "blocked=x")], 2)
        st, _, body = get(self.s, "/v1/top?domain=edge&rule=blocked")
        self.assertEqual([t["rule"] for t in json.loads(body)["top"]], ["blocked"])
        self.assertEqual(get(self.s, "/v1/top?domain=nope")[0], 404)
        # the log says what would have been refused
        want = "shadow: domain edge rule remote_address would have refused " \
               "remote_address=198.51.100.7 (2 per HOUR)"
        lines = [l for l in self.shadow_lines() if want in l]
        self.assertEqual(len(lines), 3, self.shadow_lines())
        self.assertIn(" info  shadow: ", lines[0])

    def test_2_shadow_log_is_rate_limited(self):
        before = len(self.shadow_lines())
        p = Pipe(self.s.http_port)
        check = b"GET /v1/check?policy=api&key=flood HTTP/1.1\r\nHost: x\r\n\r\n"
        t0 = time.time()
        answers = p.run([json_request("edge", [("blocked", "flood-%d" % i)]) for i in range(3000)] +
                        [check] * 1000)
        elapsed = time.time() - t0
        self.assertEqual({a[0] for a in answers}, {200})
        flood = self.shadow_lines()[before:]
        # never more lines than the budget allows in the time it took
        self.assertLessEqual(len(flood), LOG_LIMIT * (int(elapsed) + 2))
        # once the budget allows again (a new second), the policy's next
        # would-be refusal is logged, and says how many lines were dropped
        # (a line of the flood itself may be the last one: only a line
        # written after the flood counts, else a dropped check goes uncounted)
        after_flood = len(self.shadow_lines())
        deadline = time.time() + 30
        while time.time() < deadline:
            self.assertEqual(p.run([check])[0][0], 200)
            lines = self.shadow_lines()
            last = lines[-1]
            if "policy api" in last and len(lines) > after_flood:
                break
        p.close()
        self.assertRegex(last, r"shadow: policy api would have refused flood \(retry after \d+ ms\)"
                               r" \(\d+ similar lines before this one not logged\)$")
        # every shadow refusal is either logged or counted in a later line
        lines = self.shadow_lines()
        dropped = sum(int(m.group(1)) for m in
                      (re.search(r"\((\d+) similar lines before", l) for l in lines) if m)
        _, _, m = get(self.s, "/metrics")
        total = sum(float(v) for v in re.findall(
            r'^sluice_(?:domain_)?decisions_total\{[^}]*outcome="shadow_limited"[^}]*\} (\S+)$', m,
            re.M))
        self.assertEqual(len(lines) + dropped, total)
        self.assertGreaterEqual(metric(m, "sluice_decisions_total", policy="api",
                                       outcome="shadow_limited"), 999)

    def test_3_reload_enforces(self):
        with open(self.s.config, "w") as f:
            f.write(SHADOW_CONFIG.format(shadow="false", **self.fmt))
        st, _, body = sluiced_test.curl("-X", "POST", self.s.url("/v1/reload"))
        self.assertEqual(st, 200, body)
        p = Pipe(self.s.http_port)
        answers = p.run([json_request("edge", [("remote_address", "198.51.100.7")]),
                         json_request("edge", [("remote_address", "198.51.100.8")])] +
                        [json_request("edge", [("plan", "free")])] * 2)
        p.close()
        # the state survived the reload: .7 used its 2 in shadow mode
        self.assertEqual([a[0] for a in answers], [429, 200, 200, 200])
        _, _, m = get(self.s, "/metrics")
        self.assertEqual(metric(m, "sluice_domain_decisions_total", domain="edge",
                                rule="remote_address", outcome="limited"), 1)
        # a rule's own shadow_mode stays shadow
        self.assertEqual(metric(m, "sluice_domain_decisions_total", domain="edge",
                                rule="plan_free", outcome="shadow_limited"), 1)


if __name__ == "__main__":
    sluiced_test.main(use_redis_store)
