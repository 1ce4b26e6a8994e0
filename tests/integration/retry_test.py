#!/usr/bin/env python3
"""retry_test.py SLUICED SOURCE_DIR: retry budgets (retry_budget:,
docs/protection.md "Retry budget") through the real sluiced. Windows of an
hour and policies that refill 1 an hour, so every count is exact whatever
the machine's speed:

- /v1/check: retries (Retry-Attempt >= 1) pass while R + 1 <= min_retries +
  floor(F x ratio); a refused one is 429 with Retry-After,
  Sluice-Retry-Budget: exhausted and the retry_budget error, and is not
  charged to the policy; Retry-Attempt 0 or junk is a first attempt; a
  configured header; keys apart;
- sluice_retry_budget_total{policy,outcome} and /v1/stats's retry_budget;
- a reload that keeps the budget keeps its counts; the config's errors;
- the Redis store: two sluiced on one real redis-server share one budget
  exactly; Redis killed: on_failure closed refuses retries, open admits
  them, local decides them on min_retries / expected_instances.

Standard library only."""
import json
import unittest

import sluiced_test
import harness
from harness import curl

CONFIG = harness.config_head() + """
store:
{store}
policies:
  - {{name: api, algorithm: token_bucket, rate: 1/h, burst: 100,
      retry_budget: {{ratio: 50%, min_retries: {min}, window: 1h}}}}
  - {{name: own, algorithm: token_bucket, rate: 1/h, burst: 100,
      retry_budget: {{ratio: 10%, min_retries: 0, window: 1h, header: X-Retry}}}}
  - {{name: plain, algorithm: token_bucket, rate: 1/h, burst: 100}}
"""

MEMORY = "  type: memory"


def start(store=MEMORY, min_retries=2, text=CONFIG, burst=6):
    return sluiced_test.Server(text, store=store, min=min_retries, burst=burst)


def check(s, policy="api", key="k", attempt=None, header="Retry-Attempt"):
    args = [s.url("/v1/check?policy=%s&key=%s" % (policy, key))]
    if attempt is not None:
        args = ["-H", "%s: %s" % (header, attempt)] + args
    st, h, body = curl(*args)
    return st, h, json.loads(body)


def metrics(s):
    return curl(s.url("/metrics"))[2]


def budget_metric(s, policy, outcome):
    return harness.metric(metrics(s), "sluice_retry_budget_total", policy=policy,
                          outcome=outcome)


class Budget(unittest.TestCase):
    def setUp(self):
        self.s = start()

    def tearDown(self):
        self.s.stop()

    def test_budget(self):
        s = self.s
        # no first attempts: min_retries (2) only
        self.assertEqual(check(s, attempt=1)[0], 200)
        self.assertEqual(check(s, attempt=3)[0], 200)
        st, h, body = check(s, attempt=2)
        self.assertEqual(st, 429, body)
        self.assertEqual(body["error"], "retry_budget")
        self.assertEqual(h["sluice-retry-budget"], "exhausted")
        self.assertEqual((body["retries"], body["budget"], body["first_attempts"]), (2, 2, 0))
        self.assertGreaterEqual(int(h["retry-after"]), 1)
        # first attempts: no header, 0, junk; 4 of them give floor(4 x 50%) = 2 more
        self.assertEqual(check(s)[0], 200)
        self.assertEqual(check(s, attempt=0)[0], 200)
        self.assertEqual(check(s, attempt="soon")[0], 200)
        self.assertEqual(check(s, attempt=-1)[0], 200)
        self.assertEqual(check(s, attempt=1)[0], 200)
        st, _, body = check(s, attempt=1)
        self.assertEqual(st, 200, body)
        # what the policy was charged: 4 first attempts, 4 retries admitted (the refused not)
        self.assertEqual(body["remaining"], 100 - 8, body)
        self.assertEqual(check(s, attempt=1)[0], 429)
        self.assertEqual(check(s)[2]["remaining"], 100 - 9)  # the refused one charged nothing
        # another key has its own budget; a policy without one ignores the header
        self.assertEqual(check(s, key="other", attempt=1)[0], 200)
        for _ in range(3):
            self.assertEqual(check(s, policy="plain", attempt=5)[0], 200)
        # counted
        self.assertEqual(budget_metric(s, "api", "first"), 5)
        self.assertEqual(budget_metric(s, "api", "allowed"), 5)
        self.assertEqual(budget_metric(s, "api", "refused"), 2)
        st, _, text = curl(s.url("/v1/stats"))
        pol = {p["name"]: p for p in json.loads(text)["policies"]}
        self.assertEqual(pol["api"]["retry_budget"],
                         {"first": 5, "allowed": 5, "refused": 2})
        self.assertNotIn("retry_budget", pol["plain"])

    def test_own_header(self):
        s = self.s
        # min_retries 0, 10%: no retry before 10 first attempts
        st, h, body = check(s, policy="own", attempt=1, header="X-Retry")
        self.assertEqual(st, 429, body)
        self.assertEqual(body["retry_after_ms"], -1)  # only first attempts can help
        self.assertEqual(int(h["retry-after"]), 3600)  # the window
        self.assertEqual(check(s, policy="own", attempt=1)[0], 200)  # Retry-Attempt: not its
        for _ in range(9):
            check(s, policy="own")
        self.assertEqual(check(s, policy="own", attempt=1, header="X-Retry")[0], 200)
        self.assertEqual(check(s, policy="own", attempt=1, header="X-Retry")[0], 429)

    def test_reload_keeps_counts(self):
        s = self.s
        for _ in range(2):
            self.assertEqual(check(s, attempt=1)[0], 200)
        with open(s.config, "w") as f:
            f.write(CONFIG.format(store=MEMORY, min=2) + "  - {name: more, algorithm: gcra, "
                    "rate: 1/h, burst: 1}\n")
        self.assertEqual(curl("-X", "POST", s.url("/v1/reload"))[0], 200)
        self.assertEqual(check(s, attempt=1)[0], 429)  # the same budget, used up
        with open(s.config, "w") as f:
            f.write(CONFIG.format(store=MEMORY, min=3))
        self.assertEqual(curl("-X", "POST", s.url("/v1/reload"))[0], 200)
        self.assertEqual(check(s, attempt=1)[0], 200)  # changed: a new budget
        self.assertEqual(check(s, attempt=1)[0], 200)


class ConfigErrors(unittest.TestCase):
    def errors(self, block):
        text = CONFIG.format(store=MEMORY, min=2).replace(
            "{ratio: 50%, min_retries: 2, window: 1h}", block)
        rc, out, err = sluiced_test.check_config(text)
        return rc, err + out

    def test_errors(self):
        self.assertEqual(self.errors("{}")[0], 0)  # the defaults
        for block, want in [("{ratio: 150%}", "policies[0].retry_budget.ratio"),
                            ("{ratio: ten}", "a percentage from 0% to 100%"),
                            ("{window: 5ms}", "policies[0].retry_budget.window"),
                            ("{window: 10500us}", "whole number of milliseconds"),
                            ("{min_retries: -1}", "policies[0].retry_budget.min_retries"),
                            ("{header: 'a b'}", "is not a header name"),
                            ("{rato: 10%}", "did you mean"),
                            ("10%", "a mapping of ratio")]:
            rc, out = self.errors(block)
            self.assertNotEqual(rc, 0, block)
            self.assertIn(want, out, block)

    def test_rule_priority(self):
        rules = "\nrules:\n  - {name: r, path: /x, priority: %s, limits: [{policy: api, by: ip}]}\n"
        for value, rc in (("critical", 0), ("Sheddable", 1), ("urgent", 1)):
            text = CONFIG.format(store=MEMORY, min=2) + rules % value
            got, _, err = sluiced_test.check_config(text)
            self.assertEqual(got != 0, bool(rc), (value, err))
            if rc:
                self.assertIn("rules[0].priority", err, value)


SHED = CONFIG + """
shedding:
  rate: 1/h
  burst: {burst}
  reserve_critical: 2
  reserve_default: 2
"""


class Resp(unittest.TestCase):
    """SL.CHECK policy key [cost] [DELAY] [PRIORITY p] [RETRY n]: the old forms
    still answer as before; RETRY n goes through the budget, PRIORITY through
    the shedding capacity."""

    def setUp(self):
        # the capacity: 6 for the priorities' test, plenty for the others
        self.s = start(text=SHED, burst=6 if "priority" in self.id() else 1000)
        self.r = harness.Resp(self.s.resp_port)

    def tearDown(self):
        self.r.close()
        self.s.stop()

    def call(self, *args):
        return self.r.call(*args)

    def test_forms_and_retry(self):
        call = self.call
        self.assertEqual(call("SL.CHECK", "plain", "a")[:3], [1, 100, 99])
        self.assertEqual(call("SL.CHECK", "plain", "a", "2")[:3], [1, 100, 97])
        self.assertEqual(len(call("SL.CHECK", "plain", "a", "1", "DELAY")), 6)
        self.assertEqual(len(call("SL.CHECK", "plain", "a", "delay")), 6)
        for bad, text in [(("x",), "cost must be"), (("1", "RETRY"), "wrong number of arguments"),
                          (("RETRY", "-1"), "RETRY must be"),
                          (("PRIORITY", "urgent"), "PRIORITY must be")]:
            e = self.r.call("SL.CHECK", "plain", "a", *bad, raise_errors=False)
            self.assertIsInstance(e, harness.RespError, bad)
            self.assertIn(text, str(e), bad)
        # the budget: min_retries 2, then floor(F x 50%)
        self.assertEqual(call("SL.CHECK", "api", "k", "RETRY", "1")[0], 1)
        self.assertEqual(call("SL.CHECK", "api", "k", "retry", "2", "DELAY")[0], 1)
        e = self.r.call("SL.CHECK", "api", "k", "RETRY", "3", raise_errors=False)
        self.assertTrue(str(e).startswith("RETRYBUDGET"), e)
        self.assertEqual(call("SL.CHECK", "api", "k", "RETRY", "0")[0], 1)  # a first attempt
        self.assertEqual(call("SL.CHECK", "api", "k")[0], 1)
        self.assertEqual(call("SL.CHECK", "api", "k", "1", "RETRY", "1")[:3], [1, 100, 95])
        self.assertEqual(budget_metric(self.s, "api", "refused"), 1)

    def test_priority(self):
        # 6 tokens: 2 for sheddable, 2 more for default, the last 2 for critical
        call = self.call
        for _ in range(2):
            self.assertEqual(call("SL.CHECK", "plain", "p", "PRIORITY", "sheddable")[0], 1)
        e = self.r.call("SL.CHECK", "plain", "p", "PRIORITY", "SHEDDABLE", raise_errors=False)
        self.assertTrue(str(e).startswith("SHED "), e)
        self.assertEqual(call("SL.CHECK", "plain", "p")[0], 1)  # no PRIORITY: default
        self.assertEqual(call("SL.CHECK", "plain", "p", "PRIORITY", "default")[0], 1)
        e = self.r.call("SL.CHECK", "plain", "p", raise_errors=False)
        self.assertTrue(str(e).startswith("SHED "), e)
        self.assertEqual(call("SL.CHECK", "plain", "p", "PRIORITY", "critical")[0], 1)
        self.assertEqual(harness.metric(metrics(self.s), "sluice_shed_total", policy="plain",
                                        priority="sheddable"), 1)


def ready(s):
    return json.loads(curl(s.url("/readyz"))[2])


class Redis(unittest.TestCase):
    """A real redis-server: one budget for a fleet, and the fail modes when it
    is killed."""

    def test_fleet(self):
        redis = harness.RedisServer("sluice-retry-redis-")
        self.assertTrue(redis.wait())
        store = harness.redis_store(redis.port, "500ms")
        a, b = start(store=store), start(store=store)
        try:
            for s in (a, b):
                harness.wait_until(lambda: ready(s)["redis"] == "up", 30, "Redis up")
            # 6 first attempts over both: 2 + floor(6 x 50%) = 5 retries for the fleet
            for i in range(6):
                self.assertEqual(check((a, b)[i % 2])[0], 200)
            passed = [check((a, b)[i % 2], attempt=1)[0] for i in range(8)]
            self.assertEqual(passed, [200] * 5 + [429] * 3)
            self.assertEqual(budget_metric(a, "api", "allowed") +
                             budget_metric(b, "api", "allowed"), 5)
            conn = harness.Resp(redis.port)
            keys = conn.call("KEYS", "*retry*")
            conn.close()
            self.assertEqual(len(keys), 1, keys)
        finally:
            a.stop()
            b.stop()
            redis.stop()

    def killed(self, mode, instances=None):
        redis = harness.RedisServer("sluice-retry-%s-" % mode)
        self.assertTrue(redis.wait())
        store = harness.redis_store(redis.port, "100ms", on_failure=mode)
        if instances:
            store += "\n    expected_instances: %d" % instances
        s = start(store=store, min_retries=4)
        try:
            harness.wait_until(lambda: ready(s)["redis"] == "up", 30, "Redis up")
            self.assertEqual(check(s, attempt=1)[0], 200)
            redis.proc.kill()
            redis.proc.wait()
            harness.wait_until(lambda: ready(s)["redis"] == "down", 30, "Redis seen down")
            return s, [check(s, policy="api", key="away", attempt=1) for _ in range(4)]
        finally:
            redis.stop()

    def test_closed(self):
        s, answers = self.killed("closed")
        try:
            for st, h, body in answers:
                self.assertEqual(st, 429, body)
                self.assertEqual(body.get("error"), "retry_budget", body)
                self.assertEqual(body.get("fallback"), "closed", body)
                self.assertEqual(h["sluice-retry-budget"], "exhausted")
            self.assertEqual(harness.metric(metrics(s), "sluice_retry_budget_fallback_total",
                                            policy="api", fallback="closed"), 4)
        finally:
            s.stop()

    def test_open(self):
        s, answers = self.killed("open")
        try:
            # the budget lets them through; the policy (open too) allows
            self.assertEqual([a[0] for a in answers], [200] * 4)
            self.assertEqual(harness.metric(metrics(s), "sluice_retry_budget_fallback_total",
                                            policy="api", fallback="open"), 4)
        finally:
            s.stop()

    def test_local(self):
        s, answers = self.killed("local", instances=2)
        try:
            # the local budget: min_retries 4 / 2 servers = 2
            self.assertEqual([a[0] for a in answers], [200, 200, 429, 429], answers)
            self.assertEqual(answers[2][2].get("fallback"), "local", answers[2])
        finally:
            s.stop()


if __name__ == "__main__":
    sluiced_test.main()
