#!/usr/bin/env python3
"""hold_test.py SLUICED SOURCE_DIR [NGINX]: answers held until their release
time (docs/protection.md, "Held answers"), through a real nginx.

Runs examples/nginx/held.yaml and examples/nginx/held.conf on nginx_test.py's
stack (listen addresses replaced by free loopback ports; the yaml gets a few
policies and rules of the test added, one queue per test) with one sluiced
worker (the bounds are per worker), an upstream of the test that records when each request arrives
and for whom, and checks:

- spacing: a burst of 6 on /api/ (smooth: 5/s, hold 5s) reaches the
  upstream spread out: the k-th arrival is no earlier than the burst's start
  plus (k - 1) intervals (the queue's release times, one interval of
  tolerance; no upper bound on how long it takes);
- fairness: alice's burst of 7 is held on /fair/ (1/s), then bob sends one:
  bob's request reaches the upstream before all but at most 3 of alice's
  held ones that were still waiting when he sent it (first in, first out
  would put him behind all 6);
- weights: with hold_weights {pro: 3}, carol (pro) gets 3 of every 4
  releases against alice's held burst: her last request leaves while
  several of alice's still wait;
- bounds: carol's burst of 10 on /bound/: one passes at once, 6 are held
  (hold_per_tenant), 3 are refused at once (429 with Retry-After);
  a delay longer than hold: (dave on /short/, 1/s, hold 1s) is refused too;
- disconnects: erin (straight to sluiced, no nginx) fills her 6 places on
  /gone/ and closes the connections; her next request is held again (the
  places were freed), and sluiced stays up and exits 0 (under ASan: no timer
  left pointing at a freed connection).

With SLUICE_TEST_REDIS=1 the same tests run with the Redis store (a
redis-server of the test's own on a free loopback port), where decisions
complete after the handler returns.

Arrival times are the test's clock (time.monotonic) at the upstream. Standard
library only; everything on loopback, stopped at the end."""
import http.client
import http.server
import os
import re
import socket
import sys
import threading
import time
import unittest

import harness
import nginx_test  # the nginx + sluiced + upstream stack

SLUICED = SRC = NGINX = None

# The test's own queues, added to the example (one per test: none waits on another's).
EXTRA_POLICIES = """
  - {name: fair, algorithm: leaky_queue, rate: 1/s, burst: 20, hold: 10s, hold_per_tenant: 6}
  - {name: bound, algorithm: leaky_queue, rate: 1/s, burst: 20, hold: 10s, hold_per_tenant: 6}
  - {name: short, algorithm: leaky_queue, rate: 1/s, burst: 20, hold: 1s, hold_per_tenant: 6}
  - {name: gone, algorithm: leaky_queue, rate: 2/s, burst: 40, hold: 10s, hold_per_tenant: 6}
  - {name: weighted, algorithm: leaky_queue, rate: 1/s, burst: 20, hold: 20s, hold_per_tenant: 6,
     hold_weights: {pro: 3}}
"""
EXTRA_RULES = """
  - {name: fair, path: /fair/*, limits: [{policy: fair, by: global}]}
  - {name: bound, path: /bound/*, limits: [{policy: bound, by: global}]}
  - {name: short, path: /short/*, limits: [{policy: short, by: global}]}
  - {name: gone, path: /gone/*, limits: [{policy: gone, by: global}]}
  - {name: weighted, path: /weighted/*, limits: [{policy: weighted, by: global}]}
"""


class Upstream(http.server.BaseHTTPRequestHandler):
    """The application: records (monotonic time, path, key) and answers 200."""
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self):
        auth = self.headers.get("Authorization") or ""
        with self.server.lock:
            self.server.arrivals.append((time.monotonic(), self.path, auth.replace("Bearer ", "")))
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def edit_yaml(cfg):
    """held.yaml for the test: one worker (the bounds are per worker), and
    the test's own queues."""
    for old, new in (("\nworkers: 2\n", "\nworkers: 1\n"),
                     ("\npolicies:\n", "\npolicies:\n" + EXTRA_POLICIES.lstrip("\n")),
                     ("\nrules:\n", "\nrules:\n" + EXTRA_RULES.lstrip("\n"))):
        assert cfg.count(old) == 1, old
        cfg = cfg.replace(old, new)
    return cfg


class Stack(nginx_test.Stack):
    """nginx_test's stack (sluiced, the upstream, nginx; the Redis store with
    SLUICE_TEST_REDIS=1) on held.yaml and held.conf, with the recording upstream."""

    def __init__(self):
        nginx_test.SLUICED, nginx_test.SRC, nginx_test.NGINX = SLUICED, SRC, NGINX
        super().__init__("held.yaml", "held.conf", edit_yaml, Upstream,
                         {"arrivals": [], "lock": threading.Lock()})

    def arrivals(self, prefix):
        with self.app.lock:
            return [a for a in self.app.arrivals if a[1].startswith(prefix)]

    def get(self, path, key):
        """One request through nginx on a connection of its own: (status, headers)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            c.request("GET", path, headers={"Authorization": "Bearer " + key})
            r = c.getresponse()
            r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}
        finally:
            c.close()

    def burst(self, path, key, n):
        """n concurrent requests; returns the list of (status, headers) as they end
        and the threads (joined)."""
        out, lock = [], threading.Lock()

        def one():
            got = self.get(path, key)
            with lock:
                out.append(got)

        ts = [threading.Thread(target=one) for _ in range(n)]
        for t in ts:
            t.start()
        return out, ts

    def allowed(self, policy):
        """sluiced's count of allowed decisions of a policy (/metrics)."""
        text = self.metrics()
        m = re.search(r'^sluice_decisions_total\{[^}]*policy="%s"[^}]*outcome="allowed"[^}]*\} (\d+)'
                      % policy, text, re.M)
        return int(m.group(1)) if m else 0


def auth_request(port, path, key):
    """The bytes of a /v1/auth subrequest as nginx sends it."""
    return ("GET /v1/auth HTTP/1.1\r\nHost: sluiced\r\nX-Original-Method: GET\r\n"
            "X-Original-URI: %s\r\nX-Real-IP: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n"
            % (path, key)).encode()


class HoldTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = Stack()

    # nginx_test's: stops the stack, fails unless sluiced exited 0 without an
    # ASan or UBSan report
    tearDownClass = nginx_test.NginxTest.__dict__["tearDownClass"]

    def test_1_spacing(self):
        interval = 0.2  # smooth: 5/s
        t0 = time.monotonic()
        out, ts = self.stack.burst("/api/x", "alice", 6)
        for t in ts:
            t.join()
        self.assertEqual(sorted(s for s, _ in out), [200] * 6, out)
        times = sorted(t for t, _, _ in self.stack.arrivals("/api/"))
        self.assertEqual(len(times), 6)
        # The queue's k-th release time is at least k intervals after the
        # burst's first decision, itself after t0; one interval of tolerance.
        for k, t in enumerate(times):
            self.assertGreaterEqual(t - t0, (k - 1) * interval,
                                    "arrival %d at %.3f s: %s" % (k, t - t0,
                                                                 [round(x - t0, 3) for x in times]))

    def test_2_fairness(self):
        # 1 at once, 6 held (1/s: 6 s): bob's trip to sluiced may take up to 3 s
        out, ts = self.stack.burst("/fair/x", "alice", 7)
        harness.wait_until(lambda: self.stack.allowed("fair") >= 7, 20, "alice's burst decided")
        before = len(self.stack.arrivals("/fair/"))
        waiting = 7 - before
        status, _ = self.stack.get("/fair/x", "bob")
        self.assertEqual(status, 200)
        for t in ts:
            t.join()
        self.assertEqual(sorted(s for s, _ in out), [200] * 7, out)
        keys = [k for _, _, k in sorted(self.stack.arrivals("/fair/"))]
        self.assertEqual(len(keys), 8)
        bob = keys.index("bob")
        overtook = bob - before  # alice's answers released after bob sent, before his
        # first in, first out: all `waiting`; fair: the one due next, and one
        # round of slack for the trip to sluiced on a loaded machine
        self.assertLessEqual(overtook, 3, "order %s; %d of alice's were waiting" % (keys, waiting))
        self.assertGreaterEqual(waiting, 5, "alice's burst was released too soon to tell")

    def test_2b_weights(self):
        # alice (tier free, weight 1) holds 6 on /weighted/ (1/s), then carol
        # (tier pro, hold_weights pro: 3) 6: a round serves 1 of alice's, 3 of
        # carol's, so carol's last leaves with several of alice's still held
        # (equal weights alternate: carol's last would be the last of all)
        out, ts = self.stack.burst("/weighted/x", "alice", 7)
        harness.wait_until(lambda: self.stack.allowed("weighted") >= 7, 20, "alice's burst decided")
        out2, ts2 = self.stack.burst("/weighted/x", "carol", 6)
        for t in ts + ts2:
            t.join()
        self.assertEqual(sorted(s for s, _ in out + out2), [200] * 13, out + out2)
        keys = [k for _, _, k in sorted(self.stack.arrivals("/weighted/"))]
        last_carol = len(keys) - 1 - keys[::-1].index("carol")
        after = keys[last_carol + 1:]
        self.assertGreaterEqual(len(after), 2, "order %s" % keys)
        self.assertEqual(set(after), {"alice"}, keys)

    def test_3_bounds(self):
        out, ts = self.stack.burst("/bound/x", "carol", 10)
        for t in ts:
            t.join()
        statuses = sorted(s for s, _ in out)
        self.assertEqual(statuses, [200] * 7 + [429] * 3, out)
        for s, h in out:
            if s == 429:
                self.assertGreaterEqual(int(h.get("retry-after", "0")), 1, h)
        # the refused ones were answered at once: before the last held one
        # (order at the client: the 429s end before the last 200)
        self.assertEqual(out[-1][0], 200, [s for s, _ in out])
        m = self.stack.metrics()
        self.assertGreaterEqual(harness.metric(m, "sluice_hold_total", outcome="refused"), 3)
        self.assertGreaterEqual(harness.metric(m, "sluice_hold_total", outcome="held"), 6)

    def test_4_max_hold(self):
        # 1/s, hold 1s: delays 0, 1, 2, ...: past 1 s refused at once (unless the 8
        # arrive seconds apart)
        out, ts = self.stack.burst("/short/x", "dave", 8)
        for t in ts:
            t.join()
        ok = sum(1 for s, _ in out if s == 200)
        refused = [h for s, h in out if s == 429]
        self.assertGreaterEqual(ok, 1, out)
        self.assertGreaterEqual(len(refused), 1, "8 at once at 1/s with hold: 1s: %s" % out)
        self.assertEqual(ok + len(refused), 8, out)

    def test_5_disconnect(self):
        port = self.stack.sluiced_port
        cancelled = harness.metric(self.stack.metrics(), "sluice_hold_total", outcome="cancelled")
        first = socket.create_connection(("127.0.0.1", port), timeout=30)
        first.sendall(auth_request(port, "/gone/x", "erin"))  # delay 0: answered at once
        self.assertEqual(harness.read_response(first)[0], 200)
        socks = []
        for _ in range(6):  # held: erin's 6 places (release times 0.5 s to 3 s away)
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(auth_request(port, "/gone/x", "erin"))
            socks.append(s)
        harness.wait_until(lambda: self.stack.allowed("gone") >= 7, 20, "erin's requests decided")
        for s in socks:  # gone while held (their FINs are queued before the next SYN)
            s.close()
        # the places were freed when sluiced saw the connections close: the
        # next request is held again (answered 200 at its time), not refused
        # at once (403, which it was while closed connections kept their places)
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(auth_request(port, "/gone/x", "erin"))
        status, headers, body, _ = harness.read_response(s)
        s.close()
        self.assertEqual(status, 200, (headers, body))
        m = self.stack.metrics()
        self.assertEqual(harness.metric(m, "sluice_hold_total", outcome="cancelled") - cancelled, 6)
        self.assertEqual(harness.metric(m, "sluice_held_answers"), 0)
        self.assertEqual(harness.metric(m, "sluice_hold_total", outcome="released")
                         + harness.metric(m, "sluice_hold_total", outcome="cancelled"),
                         harness.metric(m, "sluice_hold_total", outcome="held"))
        # the cancelled answers' times passed with nothing to write: still up
        first.sendall(b"GET /metrics HTTP/1.1\r\nHost: sluiced\r\n\r\n")
        self.assertEqual(harness.read_response(first)[0], 200)
        first.close()
        self.assertIsNone(self.stack.sluiced.poll(), "sluiced died")


def main():
    global SLUICED, SRC, NGINX
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    SLUICED, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    NGINX = harness.nginx_path(sys.argv[3] if len(sys.argv) > 3 else None)
    if not os.path.exists(NGINX):
        print("nginx not found: skipped")
        sys.exit(0)
    unittest.main(argv=sys.argv[:1], verbosity=2)


if __name__ == "__main__":
    main()
