#!/usr/bin/env python3
"""prometheus_test.py SLUICED SOURCE_DIR: a real Prometheus scrapes a live sluiced.

- `promtool check metrics` on the live /metrics of the memory store and of
  the Redis store: no problem.
- Prometheus (Debian's prometheus binary) on a free loopback port, with a
  temporary config and storage directory, scrapes sluiced every second and
  loads examples/prometheus/sluice.rules.yml: the target is up, a decision
  counter arrives with the value sluiced counted, and every rule evaluates
  without an error.

Waits poll with generous deadlines; nothing depends on the machine's speed.
Standard library only."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest
import urllib.parse
import urllib.request

import sluiced_test  # the Server helper
import harness
from harness import curl

CONFIG = harness.config_head() + """
store:
{store}
policies:
  - name: api
    algorithm: token_bucket
    rate: 1/m
    burst: 2
"""

PROM_CONFIG = """
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - {rules}
scrape_configs:
  - job_name: sluiced
    static_configs:
      - targets: ['127.0.0.1:{port}']
"""

def server(store="  type: memory"):
    return sluiced_test.Server(CONFIG.format(store=store), literal=True)


def check_metrics(s):
    """promtool check metrics on s's /metrics: (exit code, set of problem lines)."""
    _, _, page = curl(s.url("/metrics"))
    r = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True,
                       text=True)
    return r.returncode, {l.strip() for l in (r.stdout + r.stderr).splitlines() if l.strip()}


def api(port, path, **params):
    url = "http://127.0.0.1:%d%s?%s" % (port, path, urllib.parse.urlencode(params))
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)
    except OSError:
        return None


class CheckMetrics(unittest.TestCase):
    def test_memory(self):
        s = server()
        try:
            curl(s.url("/v1/check?policy=api&key=alice"))
            rc, problems = check_metrics(s)
            self.assertEqual((rc, problems), (0, set()))
        finally:
            s.stop()

    def test_redis(self):
        redis = harness.RedisServer()
        self.assertTrue(redis.wait())
        s = server(harness.redis_store(redis.port, "200ms"))
        try:
            curl(s.url("/v1/check?policy=api&key=alice"))
            _, _, page = curl(s.url("/metrics"))
            self.assertIn("sluice_redis_up 1", page)  # the Redis families are there
            rc, problems = check_metrics(s)
            self.assertEqual((rc, problems), (0, set()))
        finally:
            s.stop()
            redis.stop()


class Scrape(unittest.TestCase):
    def test_prometheus_scrapes_sluiced(self):
        s = server()
        d = tempfile.mkdtemp(prefix="sluice-prom-")
        port = harness.free_port()
        rules = os.path.join(sluiced_test.SRC, "examples", "prometheus", "sluice.rules.yml")
        cfg = os.path.join(d, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write(PROM_CONFIG.format(rules=rules, port=s.http_port))
        log = open(os.path.join(d, "prometheus.log"), "w+")
        prom = harness.spawn(["prometheus", "--config.file=" + cfg,
                              "--storage.tsdb.path=" + os.path.join(d, "data"),
                              "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"], log)
        try:
            for _ in range(5):  # 2 allowed, 3 limited
                curl(s.url("/v1/check?policy=api&key=alice"))

            def target_up():
                t = api(port, "/api/v1/targets")
                active = t and t["data"]["activeTargets"]
                return active and active[0]["health"] == "up" and active[0]
            got = harness.poll(target_up, within=180, step=0.5)
            if not got:
                with open(log.name) as f:
                    self.fail("target not up: %s\n%s" % (api(port, "/api/v1/targets"),
                                                         harness.tail(f.read())))
            self.assertEqual(got["labels"]["job"], "sluiced")
            self.assertEqual(got["scrapeUrl"], "http://127.0.0.1:%d/metrics" % s.http_port)

            def limited():
                q = api(port, "/api/v1/query",
                        query='sluice_decisions_total{policy="api",outcome="limited"}')
                res = q and q["data"]["result"]
                return res and res[0]["value"][1] == "3"
            self.assertTrue(harness.poll(limited, within=180, step=0.5))

            def rules_ok():
                r = api(port, "/api/v1/rules")
                if not r:
                    return False
                all_rules = [x for g in r["data"]["groups"] for x in g["rules"]]
                return len(all_rules) == 13 and all(x["health"] == "ok" for x in all_rules)
            ok = harness.poll(rules_ok, within=180, step=0.5)
            self.assertTrue(ok, json.dumps(api(port, "/api/v1/rules"))[:3000])
            # no alert fires for a healthy sluiced with a few refusals
            alerts = api(port, "/api/v1/alerts")["data"]["alerts"]
            self.assertEqual([a for a in alerts if a["state"] == "firing"], [])
        finally:
            prom.terminate()
            try:
                prom.wait(30)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait()
            log.close()
            s.stop()
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sluiced_test.main()
