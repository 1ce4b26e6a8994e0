#!/usr/bin/env python3
"""shed_test.py SLUICED SOURCE_DIR: load shedding by priority (shedding:,
docs/protection.md) through the real sluiced, with a capacity that never
refills during the test (1 an hour), so every count is exact:

- the lowest priority is refused first (503, Retry-After, the shed error),
  then default, and critical takes the reserve last; X-Priority's value in
  any case, absent or unknown meaning default;
- a request refused by its own policy (429) gives its capacity back;
- sluice_shed_total{policy,priority} and /v1/stats's shed count;
- a reload that keeps shedding: as it was keeps the capacity's state, one
  that changes it starts full; the config's errors.

Standard library only."""
import json
import unittest

import sluiced_test
import harness
from harness import curl

CONFIG = harness.config_head() + """
store:
  type: memory
policies:
  - {{name: api, algorithm: token_bucket, rate: 1/h, burst: 100}}
  - {{name: one, algorithm: fixed_window, rate: 1/h}}
shedding:
  rate: 1/h
  burst: {burst}
  reserve_critical: 2
  reserve_default: 2
"""


def reload(s, text):
    with open(s.config, "w") as f:
        f.write(text)
    st, _, body = curl("-X", "POST", s.url("/v1/reload"))
    assert st == 200, (st, body)


def check(s, policy="api", key="k", priority=None):
    args = [s.url("/v1/check?policy=%s&key=%s" % (policy, key))]
    if priority is not None:
        args = ["-H", "X-Priority: " + priority] + args
    return curl(*args)


class Shedding(unittest.TestCase):
    def setUp(self):
        self.s = sluiced_test.Server(CONFIG, burst=6)

    def tearDown(self):
        self.s.stop()

    def test_lowest_first(self):
        s = self.s
        # 6 tokens: 2 for sheddable, 2 more for default, the last 2 for critical
        for _ in range(2):
            self.assertEqual(check(s, priority="sheddable")[0], 200)
        st, h, body = check(s, priority="SHEDDABLE")
        self.assertEqual(st, 503, body)
        self.assertEqual(json.loads(body)["error"], "shed")
        self.assertGreaterEqual(int(h["retry-after"]), 1)
        self.assertEqual(check(s)[0], 200)                      # no header: default
        self.assertEqual(check(s, priority="urgent!")[0], 200)  # unknown: default
        self.assertEqual(check(s, priority="default")[0], 503)
        self.assertEqual(check(s, priority="Critical")[0], 200)
        self.assertEqual(check(s, priority="critical")[0], 200)
        self.assertEqual(check(s, priority="critical")[0], 503)  # empty
        _, _, page = curl(s.url("/metrics"))
        counts = {p: harness.metric(page, "sluice_shed_total", policy="api", priority=p)
                  for p in ("critical", "default", "sheddable")}
        self.assertEqual(counts, {"critical": 1, "default": 1, "sheddable": 1})
        self.assertEqual(harness.metric(page, "sluice_shed_total", policy="one",
                                        priority="default"), 0)
        _, _, body = curl(s.url("/v1/stats"))
        api = [p for p in json.loads(body)["policies"] if p["name"] == "api"][0]
        self.assertEqual(api["decisions"]["shed"], 3)

    def test_refused_by_its_policy_gives_back(self):
        # one counts per hour: a straddle would start the count over
        harness.window_room(3600, 60, "5 refusals")
        s = self.s
        self.assertEqual(check(s, "one", "x")[0], 200)   # takes 1 token and the window
        for _ in range(5):
            self.assertEqual(check(s, "one", "x")[0], 429)  # refused by the policy: given back
        # 5 tokens left: 1 for sheddable (6 - 1 - 4 reserved), then shed
        self.assertEqual(check(s, priority="sheddable")[0], 200)
        self.assertEqual(check(s, priority="sheddable")[0], 503)

    def test_reload(self):
        s = self.s
        for _ in range(2):
            self.assertEqual(check(s, priority="sheddable")[0], 200)
        self.assertEqual(check(s, priority="sheddable")[0], 503)
        # the same shedding: the capacity's state is kept
        reload(s, CONFIG.format(burst=6))
        self.assertEqual(check(s, priority="sheddable")[0], 503)
        # another burst: a new capacity, full
        reload(s, CONFIG.format(burst=7))
        for _ in range(3):
            self.assertEqual(check(s, priority="sheddable")[0], 200)
        self.assertEqual(check(s, priority="sheddable")[0], 503)


class Errors(unittest.TestCase):
    def check_config(self, text):
        rc, out, err = sluiced_test.check_config(text)
        return rc, out + err

    def test_errors(self):
        rc, out = self.check_config("shedding:\n  rate: 10/s\n  burst: 5\n  reserve_critical: 3\n"
                                    "  reserve_default: 2\n")
        self.assertEqual(rc, 1)
        self.assertIn("shedding.reserve_default: reserve_critical + reserve_default (5) must "
                      "leave sheddable requests at least one of the burst's 5", out)
        rc, out = self.check_config("shedding:\n  burst: 5\n")
        self.assertIn("shedding: missing rate", out)
        rc, out = self.check_config("shedding:\n  rate: 10/s\n  header: \"X Priority\"\n")
        self.assertIn("is not a header name", out)
        rc, out = self.check_config("shedding:\n  rate: 10/s\n  reserve: 3\n")
        self.assertIn("shedding.reserve: unknown key", out)
        rc, out = self.check_config("shedding:\n  rate: 10/s\n")
        self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    sluiced_test.main()
