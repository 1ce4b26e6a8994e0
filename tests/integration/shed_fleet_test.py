#!/usr/bin/env python3
"""shed_fleet_test.py SLUICED SOURCE_DIR: the fleet's shedding capacity
(shedding: {scope: fleet}, docs/protection.md): two sluiced on one real
redis-server, started here on a free loopback port. The capacity refills at
1 an hour, so no token comes back during the test and every count is exact
(no timing bound):

- the fleet sheds at 1x the capacity, not 2x: requests spread over both
  servers are admitted exactly burst - reserves times at sheddable priority
  (then default and critical take their reserves), whichever server they hit;
  each server alone would have admitted that many;
- a request its policy refuses (429) leaves the capacity as it was (one
  Redis call: the capacity's token is never taken);
- every protocol takes the same capacity: /v1/check, /v1/auth (403 with
  Sluice-Shed: 1; a rule's priority: wins over the header) and SL.CHECK
  PRIORITY (-SHED), mixed over both servers, shed at 1x;
- Redis killed, for each on_failure of the shedding section: open (no
  shedding), closed (only critical requests pass), local (this server's
  share, the burst and reserves / expected_instances), counted in
  sluice_shed_fallback_total{mode};
- examples/protection/fleet-shedding.yaml as shipped loads (--check-config) and the
  config's errors for a fleet without a Redis store.

Standard library only."""
import os
import unittest

import sluiced_test
import harness
from harness import curl

CONFIG = harness.config_head() + """
store:
{store}
    expected_instances: 2
policies:
  - {{name: api, algorithm: token_bucket, rate: 1/h, burst: 1000}}
  - {{name: one, algorithm: fixed_window, rate: 1/h}}
shedding:
  rate: 1/h
  burst: 10
  reserve_critical: 2
  reserve_default: 2
  scope: fleet
  on_failure: {mode}
"""


def check(s, policy="api", key="k", priority=None):
    args = [s.url("/v1/check?policy=%s&key=%s" % (policy, key))]
    if priority is not None:
        args = ["-H", "X-Priority: " + priority] + args
    return curl(*args)[0]


def statuses(servers, n, **kw):
    """n requests, alternating over the servers: their statuses."""
    return [check(servers[i % len(servers)], **kw) for i in range(n)]


class Fleet(unittest.TestCase):
    def setUp(self):
        self.redis = harness.RedisServer("sluice-shed-fleet-")
        self.assertTrue(self.redis.wait(), "redis-server did not start")
        store = harness.redis_store(self.redis.port, "500ms", on_failure="open")
        self.servers = []
        for _ in range(2):
            self.servers.append(sluiced_test.Server(CONFIG, store=store, mode="local"))

    def tearDown(self):
        for s in self.servers:
            s.stop()
        self.redis.stop()

    def test_one_capacity_for_the_fleet(self):
        a, b = self.servers
        # 10 tokens: 6 for sheddable traffic, spread over both servers
        got = statuses(self.servers, 12, priority="sheddable")
        self.assertEqual(got.count(200), 6, got)
        self.assertEqual(got[6:], [503] * 6, got)
        self.assertEqual(statuses(self.servers, 4, priority="default"), [200, 200, 503, 503])
        self.assertEqual(statuses(self.servers, 4, priority="critical"), [200, 200, 503, 503])
        shed = 0
        for s in self.servers:
            _, _, page = curl(s.url("/metrics"))
            shed += sum(harness.metric(page, "sluice_shed_total", policy="api", priority=p)
                        for p in ("critical", "default", "sheddable"))
            self.assertEqual(harness.metric(page, "sluice_shed_fallback_total", mode="local"), 0)
        self.assertEqual(shed, 10)

    def test_refused_by_its_policy_takes_nothing(self):
        # one counts per hour: a straddle would start the count over
        harness.window_room(3600, 60, "6 refusals")
        self.assertEqual(check(self.servers[0], "one", "x"), 200)  # 1 token and the window
        self.assertEqual(statuses(self.servers, 6, policy="one", key="x"), [429] * 6)
        # 9 tokens left: 5 for sheddable traffic
        got = statuses(self.servers, 7, priority="sheddable")
        self.assertEqual(got, [200] * 5 + [503] * 2)


RULES = """
rules:
  - {{name: crit, path: /crit, priority: critical, limits: [{{policy: api, by: ip}}]}}
  - {{name: all, limits: [{{policy: api, by: ip}}]}}
"""


def auth(s, uri, priority):
    return curl("-H", "X-Original-Method: GET", "-H", "X-Original-URI: " + uri,
                "-H", "X-Real-IP: 192.0.2.9", "-H", "X-Priority: " + priority,
                s.url("/v1/auth"))


class FleetProtocols(unittest.TestCase):
    """/v1/check, /v1/auth and SL.CHECK take one fleet capacity (the engine
    decides it for each: sl__decide_call_shed)."""

    def setUp(self):
        self.redis = harness.RedisServer("sluice-shed-fleet-")
        self.assertTrue(self.redis.wait(), "redis-server did not start")
        store = harness.redis_store(self.redis.port, "500ms", on_failure="open")
        self.servers = [sluiced_test.Server(CONFIG + RULES, store=store, mode="local")
                        for _ in range(2)]
        self.resp = [harness.Resp(s.resp_port) for s in self.servers]

    def tearDown(self):
        for r in self.resp:
            r.close()
        for s in self.servers:
            s.stop()
        self.redis.stop()

    def one(self, i, priority="sheddable", uri="/any"):
        """Request i: /v1/check, /v1/auth, SL.CHECK in turn, over both servers
        in turn; "ok", "shed" or what else it got."""
        s, r = self.servers[i % 2], self.resp[i % 2]
        kind = i % 3
        if kind == 0:
            st = check(s, priority=priority)
            return {200: "ok", 503: "shed"}.get(st, st)
        if kind == 1:
            st, h, body = auth(s, uri, priority)
            if st == 200:
                return "ok"
            return "shed" if st == 403 and h.get("sluice-shed") == "1" else (st, h, body)
        got = r.call("SL.CHECK", "api", "k", "PRIORITY", priority, raise_errors=False)
        if isinstance(got, list) and got[0] == 1:
            return "ok"
        return "shed" if str(got).startswith("SHED ") else got

    def test_every_protocol_one_capacity(self):
        # 10 tokens: 6 for sheddable traffic, whichever protocol and server
        got = [self.one(i) for i in range(12)]
        self.assertEqual(got, ["ok"] * 6 + ["shed"] * 6)
        # the 4 left are critical's and default's: a rule's priority: critical wins
        # over the header's sheddable
        got = [auth(self.servers[i % 2], "/crit", "sheddable")[0] for i in range(5)]
        self.assertEqual(got, [200] * 4 + [403])
        shed = 0
        for s in self.servers:
            _, _, page = curl(s.url("/metrics"))
            shed += sum(harness.metric(page, "sluice_shed_total", policy="api", priority=p)
                        for p in ("critical", "default", "sheddable"))
        self.assertEqual(shed, 7)


class RedisKilled(unittest.TestCase):
    """One sluiced per fail mode, its Redis stopped before the requests; the
    policies fail open, so only the capacity refuses."""

    def run_mode(self, mode):
        redis = harness.RedisServer("sluice-shed-killed-")
        self.assertTrue(redis.wait(), "redis-server did not start")
        store = harness.redis_store(redis.port, "200ms", on_failure="open")
        s = sluiced_test.Server(CONFIG, store=store, mode=mode)
        try:
            self.assertEqual(check(s, priority="sheddable"), 200)  # through Redis: 9 left
            redis.stop()
            return s, {p: statuses([s], 8, priority=p) for p in ("sheddable", "default",
                                                                   "critical")}
        finally:
            pass

    def fallbacks(self, s, mode):
        _, _, page = curl(s.url("/metrics"))
        return harness.metric(page, "sluice_shed_fallback_total", mode=mode)

    def test_open(self):
        s, got = self.run_mode("open")
        try:
            for p, st in got.items():
                self.assertEqual(st, [200] * 8, p)
            self.assertEqual(self.fallbacks(s, "open"), 24)
        finally:
            s.stop()

    def test_closed(self):
        s, got = self.run_mode("closed")
        try:
            self.assertEqual(got["sheddable"], [503] * 8)
            self.assertEqual(got["default"], [503] * 8)
            self.assertEqual(got["critical"], [200] * 8)
            self.assertEqual(self.fallbacks(s, "closed"), 24)
        finally:
            s.stop()

    def test_local(self):
        s, got = self.run_mode("local")
        try:
            # this server's share: burst 10 / 2 = 5, reserves 1 and 1: 3 sheddable,
            # 1 more default, 1 more critical
            self.assertEqual(got["sheddable"], [200] * 3 + [503] * 5)
            self.assertEqual(got["default"], [200] + [503] * 7)
            self.assertEqual(got["critical"], [200] + [503] * 7)
            self.assertEqual(self.fallbacks(s, "local"), 24)
        finally:
            s.stop()


class Config(unittest.TestCase):
    def check_config(self, path):
        rc, out, err = sluiced_test.check_config(path=path)
        return rc, out + err

    def test_example_loads(self):
        path = os.path.join(sluiced_test.SRC, "examples", "protection", "fleet-shedding.yaml")
        rc, out = self.check_config(path)
        self.assertEqual(rc, 0, out)

    def test_fleet_needs_redis(self):
        _, path = harness.temp_file("sluice-shed-fleet-", "c.yaml",
                                    "shedding:\n  rate: 10/s\n  scope: fleet\n")
        rc, out = self.check_config(path)
        self.assertEqual(rc, 1, out)
        self.assertIn("shedding.scope: fleet needs store.type: redis", out)
        with open(path, "w") as f:
            f.write("shedding:\n  rate: 10/s\n  scope: everywhere\n")
        rc, out = self.check_config(path)
        self.assertEqual(rc, 1, out)
        self.assertIn("shedding.scope", out)


if __name__ == "__main__":
    sluiced_test.main()
