#!/usr/bin/env python3
"""quota_test.py SLUICED SOURCE_DIR: Envoy's quota_mode and descriptor metadata
through the real sluiced (issue 15), POST /json, with the memory store and with
the Redis store on a redis-server of its own:

- the peer's own example config (peer/examples/ratelimit/config/example.yaml)
  loads unchanged and its two quota_mode services answer as the peer does: OK
  while either has quota left (the one over reported in dynamicMetadata's
  quotaModeViolations), OVER_LIMIT (429) when both are over;
- an ordinary descriptor next to quota_mode ones is charged only when the
  request passes (sluiced's all or nothing), and refuses the request alone;
- dynamicMetadata carries the metadata of the descriptors under their limits;
  over gRPC (nghttp, when installed) the answer's dynamic_metadata Struct
  carries the same.
Requests are one at a time on a keep-alive connection (each answer before the
next request: the counts are exact whatever the machine's speed). Standard
library only."""
import json
import os
import shutil
import tempfile
import unittest

import harness
import sluiced_test
from harness import Pipe
from input_test import grpc_call, pb_len  # ShouldRateLimit over nghttp

CONFIG = harness.config_head(grpc=True) + """
{store}
domains: {rules}
"""

RULES = """
domain: q
descriptors:
  - key: r
    rate_limit: {unit: hour, requests_per_unit: 2}
  - key: qa
    quota_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
    metadata: {backend: a}
  - key: qb
    quota_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
    metadata: {backend: b, tier: [1, 2]}
"""


def request(domain, *descriptors):
    body = json.dumps({"domain": domain, "descriptors": [
        {"entries": [{"key": k, "value": v} for k, v in d]} for d in descriptors]}).encode()
    return (b"POST /json HTTP/1.1\r\nHost: sluiced\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body


class Base:
    store = "store:\n  type: memory\n"

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="quota-test-")
        peer = os.path.join(sluiced_test.SRC, "tests/peers/envoyproxy-ratelimit/peer/examples/"
                            "ratelimit/config/example.yaml")
        shutil.copy(peer, os.path.join(cls.dir, "example.yaml"))
        with open(os.path.join(cls.dir, "q.yaml"), "w") as f:
            f.write(RULES)
        cls.s = sluiced_test.Server(CONFIG, store=cls.store_text(), rules=cls.dir)
        cls.grpc_port = cls.s.grpc_port

    @classmethod
    def store_text(cls):
        return cls.store

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def ask(self, domain, *descriptors):
        p = Pipe(self.s.http_port)
        try:
            status, _, body = p.run([request(domain, *descriptors)])[0]
        finally:
            p.close()
        return status, json.loads(body)

    def test_peer_example_services(self):
        # the peer's limits are per minute (windows aligned to the minute): a
        # run that crosses into the next minute is run again in a fresh one
        harness.in_one_window(60, self.example_services, room=20, what="the example's run")

    def example_services(self):
        s1, s2 = [("service", "service_1")], [("service", "service_2")]
        # service_1: 1 a minute, service_2: 2 a minute (the peer's example)
        status, a = self.ask("rl", s1, s2)
        self.assertEqual((status, a["overallCode"]), (200, "OK"), a)
        self.assertEqual(a["dynamicMetadata"], {"service_with_quota": {"name": "service_1"}})
        status, a = self.ask("rl", s1, s2)
        self.assertEqual((status, a["overallCode"]), (200, "OK"), a)
        self.assertEqual(a["statuses"][0]["code"], "OK")
        self.assertNotIn("limitRemaining", a["statuses"][0])
        self.assertEqual(a["dynamicMetadata"], {"quotaModeViolations": [0],
                                                "service_with_quota": {"name": "service_2"}})
        status, a = self.ask("rl", s1, s2)
        self.assertEqual((status, a["overallCode"]), (429, "OVER_LIMIT"), a)
        self.assertEqual([x["code"] for x in a["statuses"]], ["OVER_LIMIT", "OVER_LIMIT"])
        self.assertNotIn("dynamicMetadata", a)

    def test_ordinary_next_to_quotas(self):
        r, qa, qb = [("r", "x")], [("qa", "x")], [("qb", "x")]
        status, a = self.ask("q", r, qa, qb)
        self.assertEqual(status, 200, a)
        self.assertEqual(a["statuses"][0]["limitRemaining"], 1)
        self.assertEqual(a["dynamicMetadata"], {"backend": "a", "tier": [1, 2]})
        # both quotas used up: refused, and r is not charged
        status, a = self.ask("q", r, qa, qb)
        self.assertEqual((status, a["overallCode"]), (429, "OVER_LIMIT"), a)
        # (its limitRemaining: 1, or with the Redis store's deny cache answering
        # for qb, 2, the limit: an item the cache did not decide, docs/envoy.md)
        self.assertEqual(a["statuses"][0]["code"], "OK", a)
        status, a = self.ask("q", r)
        self.assertEqual(status, 200, a)
        self.assertNotIn("limitRemaining", a["statuses"][0])  # 0 left: the charge above
        # r over refuses alone, though a quota (a fresh value) has room
        status, a = self.ask("q", r, [("qa", "y")])
        self.assertEqual((status, a["statuses"][0]["code"]), (429, "OVER_LIMIT"), a)
        status, a = self.ask("q", [("qa", "y")])
        self.assertEqual(status, 200, a)  # qa=y was not charged by the refusal


    def test_grpc_dynamic_metadata(self):
        if shutil.which("nghttp") is None or self.grpc_port is None:
            self.skipTest("nghttp not installed")
        def message(*keys):
            return pb_len(0x0A, b"q") + b"".join(
                pb_len(0x12, pb_len(0x0A, pb_len(0x0A, k) + pb_len(0x12, b"g"))) for k in keys)
        st, _, out = grpc_call(self.grpc_port, message(b"qa"), self.dir)
        self.assertEqual(st, 0, out)
        self.assertIn(b"backend", out)  # qa=g under its limit: its metadata
        self.assertNotIn(b"quotaModeViolations", out)
        st, _, out = grpc_call(self.grpc_port, message(b"qa", b"qb"), self.dir)
        self.assertEqual(st, 0, out)  # qa=g over, qb=g not: OK, qa a violation
        self.assertIn(b"quotaModeViolations", out)
        self.assertIn(b"tier", out)  # qb's metadata


class Memory(Base, unittest.TestCase):
    pass


class Redis(Base, unittest.TestCase):
    @classmethod
    def store_text(cls):
        return harness.private_store("quota-test-redis-")


if __name__ == "__main__":
    sluiced_test.main()
