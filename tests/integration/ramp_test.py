#!/usr/bin/env python3
"""ramp_test.py SLUICED SOURCE_DIR: ramp-up after recovery (ramp_up:,
docs/protection.md) through the real sluiced. The policies refill 1 an hour
and the long ramps last 24 hours, so the counts are exact whatever the
machine's speed:

- at server start a ramped policy admits from x burst (10 of 100), one
  without ramp_up its whole burst; the answers say the ramped limit;
- sluice_ramp_factor{policy} and sluice_ramp_restarts_total{reason};
- POST /v1/ramp restarts the ramp, with admin.reload's access (a token:
  401 without it, 200 with it; off: 403);
- with the Redis store, a real redis-server killed and started again: the
  ramp starts at the recovery (a policy whose 10 s ramp had ended admits 10%
  of a fresh key's burst again, and the restart is counted as "recovery");
- Redis killed with on_failure: local on 2 servers: the fallback's share
  still lets a lone request through at the lowest factor.

Standard library only."""
import json
import time
import unittest

import sluiced_test
import harness
from harness import curl

CONFIG = harness.config_head() + """
store:
{store}
{admin}
policies:
  - {{name: api, algorithm: token_bucket, rate: 1/h, burst: 100,
      ramp_up: {{duration: {duration}, from: 10%}}}}
  - {{name: win, algorithm: fixed_window, rate: 40/h, ramp_up: {{duration: 24h, from: 25%}}}}
  - {{name: plain, algorithm: gcra, rate: 1/h, burst: 100}}
"""

MEMORY = "  type: memory"


def start(store=MEMORY, admin="", duration="24h"):
    return sluiced_test.Server(CONFIG, store=store, admin=admin, duration=duration)


def check(s, policy, key):
    st, _, body = curl(s.url("/v1/check?policy=%s&key=%s" % (policy, key)))
    return st, json.loads(body)


def burst(s, policy, key):
    """Requests of one fresh key admitted at once (the first refusal ends it)."""
    n = 0
    while True:
        st, body = check(s, policy, key)
        if st != 200:
            return n, body
        n += 1
        assert n <= 1000, "no end to the burst"


def metrics(s):
    return curl(s.url("/metrics"))[2]


class Start(unittest.TestCase):
    def setUp(self):
        self.s = start()

    def tearDown(self):
        self.s.stop()

    def test_ramped_from_start(self):
        # win counts per hour: a straddle would start the count over
        harness.window_room(3600, 60, "a burst of 10")
        s = self.s
        st, body = check(s, "api", "a")
        self.assertEqual(st, 200, body)
        self.assertEqual(body["limit"], 10)  # 10% of 100
        self.assertEqual(body["remaining"], 9)
        n, last = burst(s, "api", "a")
        self.assertEqual(n, 9)
        self.assertEqual(last["limit"], 10)
        self.assertGreater(last["retry_after_ms"], 0)
        self.assertEqual(burst(s, "win", "a")[0], 10)   # a window: 25% of 40
        self.assertEqual(burst(s, "plain", "a")[0], 100)  # no ramp_up
        page = metrics(s)
        f = harness.metric(page, "sluice_ramp_factor", policy="api")
        self.assertGreaterEqual(f, 0.1)
        self.assertLess(f, 0.11)
        self.assertIsNone(harness.metric(page, "sluice_ramp_factor", policy="plain"))
        self.assertEqual(harness.metric(page, "sluice_ramp_restarts_total", reason="start"), 1)
        self.assertEqual(harness.metric(page, "sluice_ramp_restarts_total", reason="admin"), 0)
        stats = {p["name"]: p for p in json.loads(curl(s.url("/v1/stats"))[2])["policies"]}
        self.assertGreaterEqual(stats["api"]["ramp_factor"], 0.1)
        self.assertLess(stats["api"]["ramp_factor"], 0.11)
        self.assertNotIn("ramp_factor", stats["plain"])

    def test_admin_restart(self):
        s = self.s
        st, _, body = curl("-X", "POST", s.url("/v1/ramp"))
        self.assertEqual(st, 200, body)
        got = json.loads(body)
        self.assertEqual(got["ramp"], "restarted")
        self.assertEqual(got["policies"], 2)
        self.assertEqual(harness.metric(metrics(s), "sluice_ramp_restarts_total",
                                        reason="admin"), 1)
        self.assertEqual(curl(s.url("/v1/ramp"))[0], 405)
        self.assertEqual(burst(s, "api", "fresh")[0], 10)


class Access(unittest.TestCase):
    def test_token_and_off(self):
        token = "0123456789abcdef0123"
        s = start(admin="admin:\n  reload: token\n  reload_token: %s" % token)
        try:
            st, _, body = curl("-X", "POST", s.url("/v1/ramp"))
            self.assertEqual(st, 401, body)
            self.assertIn("POST /v1/ramp needs Authorization", body)
            st, _, body = curl("-X", "POST", "-H", "Authorization: Bearer " + token,
                               s.url("/v1/ramp"))
            self.assertEqual(st, 200, body)
        finally:
            s.stop()
        s = start(admin="admin:\n  reload: \"off\"")
        try:
            st, _, body = curl("-X", "POST", s.url("/v1/ramp"))
            self.assertEqual(st, 403, body)
            self.assertIn("POST /v1/ramp over HTTP is turned off", body)
        finally:
            s.stop()


def ready(s):
    st, _, body = curl(s.url("/readyz"))
    return json.loads(body)


def failed_calls(s):
    """Redis calls that did not succeed (errors, timeouts, an open breaker),
    and ramp restarts at a recovery, so far: what a stalled Redis leaves."""
    text = metrics(s)
    calls = sum(float(line.rpartition(" ")[2]) for line in text.splitlines()
                if line.startswith("sluice_redis_calls_total{") and 'result="ok"' not in line)
    return calls, harness.metric(text, "sluice_ramp_restarts_total", reason="recovery") or 0


class RedisRecovery(unittest.TestCase):
    """A real redis-server killed and started again: the ramp starts at the
    recovery."""

    DURATION = 10  # s: the ramp at start must end before Redis is killed

    def test_ramp_starts_at_recovery(self):
        redis = harness.RedisServer("sluice-ramp-redis-")
        self.assertTrue(redis.wait())
        store = harness.redis_store(redis.port, "200ms", on_failure="closed")
        s = start(store=store, duration="%ds" % self.DURATION)
        try:
            harness.wait_until(lambda: ready(s)["redis"] == "up", 30, "Redis up")
            # the ramp of the start ends: a fresh key has its whole burst.
            # A Redis call that failed meanwhile (the machine held Redis up
            # past the 200 ms timeout: a refusal, on_failure closed, or a
            # ramp restarted at the recovery) breaks the premise: again, on
            # another fresh key, once the ramp has ended.
            for attempt in range(5):
                harness.wait_until(
                    lambda: harness.metric(metrics(s), "sluice_ramp_factor", policy="api") == 1,
                    self.DURATION * 6, "the ramp of the start to end")
                f0 = failed_calls(s)
                n, last = burst(s, "api", "before%d" % attempt)
                f1 = failed_calls(s)
                if f1 == f0:
                    break
                print("a burst of %d with Redis calls failing (failed calls, recoveries: %s, "
                      "then %s): again" % (n, f0, f1))
            self.assertEqual(f1, f0, "Redis calls failed during every burst")
            self.assertEqual(n, 100, last)
            # the recovery below is the first one (a restart above was not)
            recoveries = failed_calls(s)[1]
            port = redis.port
            redis.proc.kill()
            redis.proc.wait()
            harness.wait_until(lambda: ready(s)["redis"] == "down", 30, "Redis seen down")
            st, body = check(s, "api", "during")
            self.assertEqual(st, 429, body)  # on_failure: closed
            redis.stop()
            redis = harness.RedisServer("sluice-ramp-redis-", port=port)
            self.assertTrue(redis.wait())
            harness.wait_until(lambda: ready(s)["redis"] == "up", 60, "Redis seen up again")
            back = time.monotonic()
            harness.wait_until(
                lambda: (harness.metric(metrics(s), "sluice_ramp_restarts_total",
                                        reason="recovery") or 0) > recoveries,
                30, "the recovery to restart the ramp")
            n, last = burst(s, "api", "after")
            if n == 100 and time.monotonic() - back >= self.DURATION:
                self.skipTest("the machine took longer than the ramp to answer")
            # 10% at the recovery, rising 9% a second: far below the whole 100
            self.assertLess(n, 100, last)
            self.assertGreaterEqual(n, 10)
            self.assertEqual(harness.metric(metrics(s), "sluice_ramp_restarts_total",
                                            reason="start"), 1)
            self.assertIn("the store is reachable again: ramp_up restarts", s.log_text())
        finally:
            s.stop()
            redis.stop()


LOCAL = harness.config_head(1) + """
store:
{store}
    expected_instances: 2
policies:
  - {{name: api, algorithm: token_bucket, rate: 1/h, burst: 10,
      ramp_up: {{duration: 24h, from: 10%}}}}
"""


class LocalFallback(unittest.TestCase):
    """Redis away, on_failure: local on 2 servers: a burst of 10 at 10% is 1 request for
    the fleet, and each server's fallback (a share of 5) still lets a lone request through
    (it answered 400 cost_exceeds_limit when the charge was capped at the whole limit)."""

    def test_lone_request_passes_locally(self):
        redis = harness.RedisServer("sluice-ramp-local-")
        self.assertTrue(redis.wait())
        store = harness.redis_store(redis.port, "100ms", on_failure="local")
        s = sluiced_test.Server(LOCAL, store=store)
        try:
            harness.wait_until(lambda: ready(s)["redis"] == "up", 30, "Redis up")
            # in Redis: a request is charged at most a server's share (5 of 10), so the
            # fleet's limit at the lowest factor is one per server: 2
            st, body = check(s, "api", "a")
            self.assertEqual((st, body["limit"]), (200, 2), body)
            self.assertEqual(check(s, "api", "a")[0], 200)
            self.assertEqual(check(s, "api", "a")[0], 429)
            redis.stop()
            harness.wait_until(lambda: ready(s)["redis"] == "down", 30, "Redis seen down")
            st, _, text = curl(s.url("/v1/check?policy=api&key=b"))
            self.assertEqual(st, 200, text)
            body = json.loads(text)
            self.assertEqual(body.get("fallback"), "local", body)
            self.assertEqual(body["limit"], 1, body)  # the share's own size at 10%
            self.assertEqual(check(s, "api", "b")[0], 429)  # the share's ramp: one
        finally:
            s.stop()
            redis.stop()


if __name__ == "__main__":
    sluiced_test.main()
