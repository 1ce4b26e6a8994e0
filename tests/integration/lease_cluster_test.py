#!/usr/bin/env python3
"""lease_cluster_test.py SLUICED SOURCE_DIR: concurrency limits on a real Redis
Cluster (3 masters from tests/integration/redis_cluster.py), one sluiced in
front: the leases of many keys spread over the masters (each key's sorted
set on the master of its {key} slot), exact per key (the limit+1-th acquire
is refused), released and renewed through the cluster's routing. A call
that timed out on a loaded machine answers from the fail mode (closed:
refused, said with "fallback"); such answers are retried and counted, never
taken for Redis's. Standard library only."""
import json
import sys
import time
import unittest

sys.dont_write_bytecode = True
import harness
import redis_cluster as rc
import sluiced_test

KEYS = 30
LIMIT = 2

CONFIG = harness.config_head() + """store:
{store}
policies:
  - name: jobs
    algorithm: concurrency
    limit: %d
    lease: 10m
""" % LIMIT


class LeaseCluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rc.install_signal_handlers()
        cls.cluster = rc.Cluster(masters=3, replicas=0).start()
        try:
            cls.s = sluiced_test.Server(CONFIG.replace("{store}", cls.cluster.store("1s")),
                                        literal=True)
        except BaseException:
            cls.cluster.stop_all()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()
        cls.cluster.stop_all()

    def post(self, path):
        """POSTs path; an answer of the fail mode (a timeout) is asked again."""
        for _ in range(20):
            st, _, body = harness.curl("-X", "POST", self.s.url(path))
            data = json.loads(body)
            if "fallback" not in data:
                return st, data
            time.sleep(0.2)
        self.fail("only fail-mode answers for " + path)

    def test_leases_over_the_cluster(self):
        run = "%x" % time.time_ns()
        leases = {}
        for i in range(KEYS):
            key = "%s-%d" % (run, i)
            got = []
            for _ in range(LIMIT):
                st, a = self.post("/v1/acquire?policy=jobs&key=" + key)
                self.assertEqual(st, 200, a)
                got.append(a["lease"])
            st, r = self.post("/v1/acquire?policy=jobs&key=" + key)
            self.assertEqual((st, r["in_flight"]), (429, LIMIT))
            leases[key] = got
        # every master holds some of the sets, each on the master of its slot
        per_master = {}
        for m in self.cluster.masters():
            port = int(m.rsplit(":", 1)[1])
            found = []
            cursor = "0"
            while True:
                reply = harness.resp_call(port, "SCAN", cursor, "MATCH", "*%s*~lease" % run, "COUNT", "1000")
                cursor = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
                found += [k.decode() if isinstance(k, bytes) else k for k in reply[1]]
                if cursor == "0":
                    break
            per_master[port] = found
            for k in found:
                self.assertEqual(harness.resp_call(port, "ZCARD", k), LIMIT, k)
        self.assertEqual(sum(len(v) for v in per_master.values()), KEYS, per_master)
        self.assertTrue(all(per_master.values()), "a master holds no lease set: %s" % per_master)
        # renew and release through the routing
        for key, (first, second) in leases.items():
            st, n = self.post("/v1/renew?policy=jobs&key=%s&lease=%s" % (key, first))
            self.assertEqual((st, n["renewed"]), (200, True))
            st, rel = self.post("/v1/release?policy=jobs&key=%s&lease=%s" % (key, first))
            self.assertEqual((st, rel["released"], rel["in_flight"]), (200, True, 1))
            self.assertEqual(self.post("/v1/release?policy=jobs&key=%s&lease=%s"
                                       % (key, first))[0], 404)
            self.assertEqual(self.post("/v1/acquire?policy=jobs&key=" + key)[0], 200)


if __name__ == "__main__":
    sluiced_test.main()
