#!/usr/bin/env python3
"""lease_fleet_test.py SLUICED SOURCE_DIR: a concurrency limit exact across a
fleet: two sluiced on one redis-server, 200 concurrent clients spread over
both, and clients killed (SIGKILL) while they hold a lease.

Exactness is checked from the clients' side: a lease is held, for sure,
from the moment its client read the 200 until the moment it sent the
release (for a killed client: until it was started + the lease time, which
is before its lease expires in Redis). These intervals lie inside the
server's, so if they ever overlap more than N times, the fleet let more
than N run at once. No timing bound depends on the machine's speed; the
store fails closed (a slow Redis refuses, never grants twice), and the
killed clients' slots come back by expiry alone (polled). Standard library
only."""
import http.client
import json
import random
import signal
import subprocess
import sys
import threading
import time
import unittest

import harness
import sluiced_test

LIMIT = 10
CLIENTS = 200
ROUNDS = 5
KILLED = 6
LEASE_S = 3

CONFIG = harness.config_head() + """
limits:
  max_connections: 1000
store:
%s
policies:
  - name: backend
    algorithm: concurrency
    limit: %d
    lease: %ds
"""

KILLED_CLIENT = r"""
import http.client, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
c.request("POST", "/v1/acquire?policy=backend&key=shared")
r = c.getresponse()
print(r.status, r.read().decode(), flush=True)
time.sleep(1000)
"""


def max_overlap(intervals):
    events = []
    for a, b in intervals:
        events.append((a, 1))
        events.append((b, -1))
    events.sort(key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
    n = best = 0
    for _, d in events:
        n += d
        best = max(best, n)
    return best


class Fleet(unittest.TestCase):
    def setUp(self):
        self.redis = harness.RedisServer("sluice-lease-fleet-")
        self.assertTrue(self.redis.wait())
        # a generous timeout, and closed: a slow Redis refuses, it never grants
        store = harness.redis_store(self.redis.port, "2s", on_failure="closed")
        text = CONFIG % (store, LIMIT, LEASE_S)
        self.servers = [sluiced_test.Server(text), sluiced_test.Server(text)]

    def tearDown(self):
        for s in self.servers:
            s.stop()
        self.redis.stop()

    def test_never_more_than_limit(self):
        held = []  # (from, to) on this process's monotonic clock
        lock = threading.Lock()
        errors = []
        # clients killed mid-lease: each holds a slot until its lease expires
        killed = []
        for i in range(KILLED * 10):
            if len(killed) == KILLED:
                break
            port = self.servers[i % 2].http_port
            t0 = time.monotonic()
            p = subprocess.Popen([sys.executable, "-c", KILLED_CLIENT, str(port)],
                                 stdout=subprocess.PIPE, text=True)
            line = p.stdout.readline()
            t_ack = time.monotonic()
            p.send_signal(signal.SIGKILL)
            p.wait()
            p.stdout.close()
            status, _, body = line.partition(" ")
            if status == "200":
                killed.append(json.loads(body)["lease"])
                held.append((t_ack, t0 + LEASE_S))
            # else: Redis too slow for the timeout (closed: refused); the next one
        self.assertEqual(len(killed), KILLED, "no %d killed holders in %d tries" % (KILLED, KILLED * 10))

        start = threading.Barrier(CLIENTS)
        granted, unsure = [0], [0]

        def client(i):
            rng = random.Random(i)
            s = self.servers[i % 2]
            c = http.client.HTTPConnection("127.0.0.1", s.http_port, timeout=60)
            try:
                start.wait()
                for _ in range(ROUNDS):
                    t_sent = time.monotonic()
                    c.request("POST", "/v1/acquire?policy=backend&key=shared")
                    r = c.getresponse()
                    body = json.loads(r.read())
                    t_ack = time.monotonic()
                    if r.status != 200:
                        if r.status != 429:
                            errors.append((r.status, body))
                        time.sleep(rng.uniform(0.005, 0.03))
                        continue
                    time.sleep(rng.uniform(0, 0.03))  # the work
                    t_rel = time.monotonic()
                    c.request("POST", "/v1/release?policy=backend&key=shared&lease=" +
                              body["lease"])
                    r = c.getresponse()
                    rel = json.loads(r.read())
                    if r.status != 200:
                        errors.append(("release", r.status, rel))
                    with lock:
                        if rel.get("released"):
                            held.append((t_ack, t_rel))
                        else:  # Redis did not answer in time: held until it expires
                            held.append((t_ack, t_sent + LEASE_S))
                            unsure[0] += 1
                        granted[0] += 1
            except Exception as e:  # reported, not swallowed
                errors.append(("client", i, repr(e)))
            finally:
                c.close()

        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertGreater(granted[0], 0)
        most = max_overlap(held)
        print("  %d leases granted to %d clients on 2 servers, at most %d held at once "
              "(limit %d, %d killed holders, %d releases Redis did not answer in time)"
              % (granted[0], CLIENTS, most, LIMIT, KILLED, unsure[0]))
        self.assertLessEqual(most, LIMIT)

        # the killed clients' leases expire by themselves: all N slots come back
        def all_free():
            got = []
            for i in range(LIMIT):
                s = self.servers[i % 2]
                st, _, body = harness.curl("-X", "POST", s.url(
                    "/v1/acquire?policy=backend&key=shared"))
                if st != 200:
                    break
                got.append(json.loads(body)["lease"])
            for j, lease in enumerate(got):
                harness.curl("-X", "POST", self.servers[j % 2].url(
                    "/v1/release?policy=backend&key=shared&lease=" + lease))
            return len(got) == LIMIT
        self.assertTrue(harness.poll(all_free, within=LEASE_S * 20, step=0.2),
                        "the killed clients' slots never came back")
        # and a killed client's lease is unknown now
        st, _, _ = harness.curl("-X", "POST", self.servers[0].url(
            "/v1/release?policy=backend&key=shared&lease=" + killed[0]))
        self.assertEqual(st, 404)


if __name__ == "__main__":
    sluiced_test.main()
