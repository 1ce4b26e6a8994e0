#!/usr/bin/env python3
"""protection_nginx_test.py SLUICED SOURCE_DIR NGINX: load shedding and the
retry budget on /v1/auth through a real nginx (docs/protection.md,
docs/nginx.md): examples/nginx/protected.yaml and sluice.conf as shipped
(nginx_test.py's stack: only the listen addresses change, and the shedding
capacity refills 1 an hour instead of 50/s, so that every count is exact):

- a key's retries (Retry-Attempt >= 1) pass within min_retries, then sluiced
  answers 403 + Sluice-Retry-Budget and nginx answers 429 retry_budget with
  Retry-After;
- over capacity, sluiced answers 403 + Sluice-Shed and nginx answers 503
  shed with Retry-After: sheddable first (a rule's priority:), default
  next, a critical rule last; a rule's priority: wins over X-Priority;
- both counted (sluice_shed_total, sluice_retry_budget_total).

Standard library only."""
import json
import os
import sys
import unittest

import harness
import nginx_test


def edit_yaml(cfg):
    return cfg.replace("rate: 50/s ", "rate: 1/h  ", 1)


class Protection(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = nginx_test.Stack("protected.yaml", "sluice.conf", edit_yaml)

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    def test_retry_budget_then_shedding(self):
        c = self.stack.client()
        retry = {"Retry-Attempt": "1"}
        # the retry budget: min_retries 3 for bob, none of his first attempts yet
        for _ in range(3):
            self.assertEqual(c.get("/api/x", "bob", headers=retry)[0], 200)
        st, h, body = c.get("/api/x", "bob", headers=retry)
        self.assertEqual(st, 429, body)
        self.assertEqual(json.loads(body)["error"], "retry_budget")
        self.assertGreaterEqual(int(h["retry-after"]), 1)
        # the capacity: 20, 3 taken (the refused retry gave its token back), 5 kept
        # for critical: 12 more sheddable requests
        for i in range(12):
            self.assertEqual(c.get("/api/reports/%d" % i, "alice")[0], 200, i)
        st, h, body = c.get("/api/reports/x", "alice")
        self.assertEqual(st, 503, body)
        self.assertEqual(json.loads(body)["error"], "shed")
        self.assertGreaterEqual(int(h["retry-after"]), 1)
        self.assertEqual(c.get("/api/x", "alice")[0], 503)  # default: over its floor too
        # a rule without priority: takes X-Priority; critical reaches the reserve
        self.assertEqual(c.get("/api/x", "alice", headers={"X-Priority": "critical"})[0], 200)
        # the checkout rule is critical whatever the header says
        for _ in range(4):
            self.assertEqual(
                c.get("/api/checkout", "alice", headers={"X-Priority": "sheddable"})[0], 200)
        self.assertEqual(c.get("/api/checkout", "alice")[0], 503)  # empty now
        m = self.stack.metrics()
        self.assertEqual(harness.metric(m, "sluice_retry_budget_total", policy="per_key",
                                        outcome="refused"), 1)
        self.assertEqual(harness.metric(m, "sluice_shed_total", policy="per_key",
                                        priority="sheddable"), 1)
        self.assertEqual(harness.metric(m, "sluice_shed_total", policy="per_key",
                                        priority="critical"), 1)
        c.close()


if __name__ == "__main__":
    nginx_test.SLUICED = os.path.abspath(sys.argv[1])
    nginx_test.SRC = os.path.abspath(sys.argv[2])
    nginx_test.NGINX = sys.argv[3] if len(sys.argv) > 3 else "/usr/sbin/nginx"
    unittest.main(argv=[sys.argv[0], "-v"])
