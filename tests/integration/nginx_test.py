#!/usr/bin/env python3
"""nginx_test.py SLUICED SOURCE_DIR [NGINX]: a real nginx in front of a small
upstream, with sluiced behind auth_request (docs/nginx.md).

Runs examples/nginx/sluice.conf and examples/nginx/sluice.yaml as shipped
(only the listen addresses are replaced by free loopback ports) and checks
end to end, as a client of nginx sees it: the seed's per-key demo (alice 200,
200, 200, 429 with Retry-After: 1; bob 200; a made-up key 401), the
RateLimit fields on allowed and limited answers, a spoofed X-Forwarded-For
from an untrusted client ignored, one IPv6 /64 counted as one client
(through a trusted proxy hop: the test binds 127.0.0.3), costs and tiers, an
exempt health check, and a flood of random API keys that leaves sluiced's
tables exactly as large as before (/metrics sluice_table_keys).

The burst cases (per_key: 5/s, burst 3) are exact only if no token comes
back during them: one that took over 200 ms (a loaded machine) is run again
once the buckets are full (burst_case); a quicker one must pass. per_ip's
cases (a fixed window of 3 a minute) start with a quarter of the minute
left and are run again in a fresh minute if they crossed into the next one
(harness.in_one_window).

Everything runs on ephemeral loopback ports in a temporary directory and is
stopped at the end. Standard library only.
With SLUICE_TEST_REDIS=1 the same tests run with the Redis store, on a
redis-server the test starts on a free loopback port.
"""
import http.client
import http.server
import os
import random
import re
import shutil
import signal
import string
import subprocess
import sys
import tempfile
import time
import unittest

import harness
from harness import free_port

SLUICED = SRC = NGINX = None


class Upstream(http.server.BaseHTTPRequestHandler):
    """The application: answers 200 "ok METHOD PATH"."""
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed ACK

    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        body = ("ok %s %s\n" % (self.command, self.path)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_HEAD = answer

    def log_message(self, *args):
        pass


class Stack:
    """sluiced + the upstream + nginx, in a temporary directory: examples/nginx's
    sluice.yaml and sluice.conf, or the files named (hold_test.py: held.yaml,
    held.conf, its config edited by edit_yaml(text) and its own upstream)."""

    def __init__(self, yaml="sluice.yaml", conf="sluice.conf", edit_yaml=None, app=Upstream,
                 app_attrs=None):
        self.files, self.edit_yaml = (yaml, conf), edit_yaml
        self.handler, self.app_attrs = app, app_attrs or {}
        self.procs, self.app = [], None
        self.dir = tempfile.mkdtemp(prefix="sluice-nginx-")
        try:
            self.start()
        except BaseException:
            self.stop()
            raise

    def start(self):
        os.chmod(self.dir, 0o755)  # nginx workers may run as another user
        ex = os.path.join(SRC, "examples", "nginx")
        shutil.copy(os.path.join(ex, "keys.txt"), self.dir)
        with open(os.path.join(ex, self.files[0])) as f:
            cfg = f.read()
        cfg = cfg.replace("http: 127.0.0.1:8080", "http: 127.0.0.1:0", 1)
        cfg = cfg.replace("\nlisten:", "\nworkers: 2\nlisten:", 1)
        if self.edit_yaml:
            cfg = self.edit_yaml(cfg)
        if os.environ.get("SLUICE_TEST_REDIS"):
            # the same tests with the Redis store, on a redis-server of our own
            self.redis = harness.RedisServer("sluice-nginx-redis-")
            self.redis.wait(within=5)  # 100 tries, 50 ms apart
            cfg += "\nstore:\n%s\n" % harness.redis_store(self.redis.port, "500ms")
        with open(os.path.join(self.dir, "sluice.yaml"), "w") as f:
            f.write(cfg)
        # sluiced on port 0: the port is read from its log
        self.sluiced_log = open(os.path.join(self.dir, "sluiced.log"), "w+")
        self.sluiced = harness.spawn([SLUICED, "-c", os.path.join(self.dir, "sluice.yaml")],
                                     self.sluiced_log, self.procs)
        self.sluiced_port = harness.wait_listening(self.sluiced, os.path.join(self.dir, "sluiced.log"),
                                                   ("http",), within=10)["http"]
        # the application
        self.app = harness.serve_http(self.handler, **self.app_attrs)
        app_port = self.app.server_address[1]
        # nginx: the shipped snippet inside a minimal main config
        self.port = free_port()
        with open(os.path.join(ex, self.files[1])) as f:
            conf = f.read()
        for old, new in (("127.0.0.1:8080;", "127.0.0.1:%d;" % self.sluiced_port),
                         ("127.0.0.1:3000;", "127.0.0.1:%d;" % app_port),
                         ("listen 127.0.0.1:8000;", "listen 127.0.0.1:%d;" % self.port)):
            assert conf.count(old) == 1, old
            conf = conf.replace(old, new)
        with open(os.path.join(self.dir, "sluice.conf"), "w") as f:
            f.write(conf)
        d = self.dir
        main = harness.nginx_main(d, "  include %s/sluice.conf;\n" % d)
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(main)
        test = subprocess.run([NGINX, "-t", "-p", d, "-c", os.path.join(d, "nginx.conf")],
                              capture_output=True, text=True)
        if test.returncode != 0:
            raise RuntimeError("nginx -t failed:\n" + test.stderr)
        self.nginx_log = open(os.path.join(d, "nginx.out"), "w+")
        self.nginx = harness.spawn([NGINX, "-p", d, "-c", os.path.join(d, "nginx.conf"),
                                    "-g", "daemon off;"], self.nginx_log, self.procs)
        if not harness.wait_port(self.port, 10, step=0.02, proc=self.nginx):
            raise RuntimeError("nginx did not start:\n" + self.read("error.log"))

    def read(self, name):
        try:
            with open(os.path.join(self.dir, name)) as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        """Stops what was started (nginx gracefully, sluiced with SIGTERM);
        returns sluiced's exit status."""
        for p in reversed(self.procs):
            harness.stop_process(p, signal.SIGTERM if p is self.procs[0] else signal.SIGQUIT, 10)
        if self.app:
            self.app.shutdown()
            self.app.server_close()
        if getattr(self, "redis", None):
            self.redis.stop()
        self.last_log = self.read("sluiced.log")
        for f in ("sluiced_log", "nginx_log"):
            if hasattr(self, f):
                getattr(self, f).close()
        rc = self.procs[0].returncode if self.procs else None
        if os.environ.get("KEEP_TMP") is None:
            shutil.rmtree(self.dir, ignore_errors=True)
        return rc

    def client(self, source="127.0.0.1"):
        """A keep-alive connection to nginx from a chosen loopback address."""
        return Client(self.port, source)

    def metrics(self):
        c = http.client.HTTPConnection("127.0.0.1", self.sluiced_port, timeout=5)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        return text

    def table_keys(self):
        return {m.group(1): int(m.group(2)) for m in
                re.finditer(r'^sluice_table_keys\{policy="([^"]+)"\} (\d+)$', self.metrics(),
                            re.M)}


class Client:
    def __init__(self, port, source):
        self.port, self.source = port, source
        self.conn = None

    def request(self, method, path, key=None, headers=None, body=None):
        h = dict(headers or {})
        if key is not None:
            h["X-API-Key"] = key
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5,
                                                       source_address=(self.source, 0))
            try:
                self.conn.request(method, path, body=body, headers=h)
                r = self.conn.getresponse()
                data = r.read()
                return r.status, {k.lower(): v for k, v in r.getheaders()}, data.decode()
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise

    def get(self, path, key=None, **kw):
        return self.request("GET", path, key, **kw)

    def close(self):
        if self.conn:
            self.conn.close()


class NginxTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = Stack()

    @classmethod
    def tearDownClass(cls):
        rc = cls.stack.stop()
        log = cls.stack.last_log
        if rc != 0 or "AddressSanitizer" in log or "runtime error" in log:
            print(log)
            raise AssertionError("sluiced exited with %s" % rc)

    # per_key is 5/s with a burst of 3: a token comes back every 200 ms, and
    # the whole bucket within 600 ms.
    TOKEN_S = 0.2
    REFILL_S = 0.7

    def burst_case(self, case, attempts=8):
        """Runs case(client), which spends per_key tokens and asserts that a
        burst is refused. The premise is that no token came back during it:
        an attempt that took less than TOKEN_S from its first request to its
        last answer must pass (a failure is a failure); one that took longer
        (the machine held nginx, sluiced or Redis up) proves nothing and is
        run again once the keys' buckets are full (REFILL_S, sized against
        the policy, not the machine)."""
        for attempt in range(attempts):
            c = self.stack.client()
            t0 = time.monotonic()
            try:
                case(c)
                return
            except AssertionError:
                took = time.monotonic() - t0
                if took < self.TOKEN_S or attempt == attempts - 1:
                    raise
                print("  the attempt took %.0f ms, over one token's %.0f ms: again"
                      % (took * 1000, self.TOKEN_S * 1000))
            finally:
                c.close()
            time.sleep(self.REFILL_S)

    def test_01_seed_demo(self):
        """alice 200 200 200 429 (Retry-After: 1), bob 200, a made-up key 401."""
        def case(c):
            got = []
            for key in ("alice", "alice", "alice", "alice", "bob", "x7f3-made-up"):
                status, h, body = c.get("/api/items/42", key)
                got.append((key, status, h.get("retry-after")))
            self.assertEqual(got, [("alice", 200, None), ("alice", 200, None),
                                   ("alice", 200, None), ("alice", 429, "1"), ("bob", 200, None),
                                   ("x7f3-made-up", 401, None)])
        self.burst_case(case)

    def test_02_fields(self):
        """Allowed answers carry the application's body and the RateLimit fields;
        a limited one is a 429 with Retry-After, the fields and a JSON body."""
        self.burst_case(self.fields_case)

    def fields_case(self, c):
        status, h, body = c.get("/api/x", "dave")
        self.assertEqual(status, 200)
        self.assertEqual(body, "ok GET /api/x\n")
        self.assertEqual(h["ratelimit-policy"], '"per_key";q=3;w=1;sluice-rate="5/s"')
        self.assertEqual(h["ratelimit"], '"per_key";r=2;t=1')
        self.assertEqual((h["x-ratelimit-limit"], h["x-ratelimit-remaining"],
                          h["x-ratelimit-reset"]), ("3", "2", "1"))
        for _ in range(2):
            c.get("/api/x", "dave")
        status, h, body = c.get("/api/x", "dave")
        self.assertEqual(status, 429)
        self.assertEqual(h["retry-after"], "1")
        self.assertEqual(h["ratelimit"], '"per_key";r=0;t=1')
        self.assertEqual(h["x-ratelimit-remaining"], "0")
        self.assertEqual(h["content-type"], "application/json")
        self.assertEqual(body, '{"error":"rate_limited","limit":"per_key","retry_after":"1"}\n')
        # unknown key: 401 with a challenge; a key is checked on every request
        status, h, body = c.get("/api/x", "nobody")
        self.assertEqual(status, 401)
        self.assertEqual(h["www-authenticate"], 'Bearer realm="sluice"')
        # Authorization: Bearer works as well as X-API-Key
        status, _, _ = c.get("/api/x", headers={"Authorization": "Bearer erin"})
        self.assertEqual(status, 200)

    def test_03_fairness(self):
        """alice's burst does not affect bob: while alice is refused, bob passes."""
        def case(c):
            statuses = [c.get("/api/fair", "alice")[0] for _ in range(6)]
            self.assertEqual(statuses[-1], 429)
            status, h, _ = c.get("/api/fair", "bob")
            self.assertEqual(status, 200)
            self.assertEqual(c.get("/api/fair", "alice")[0], 429)
        self.burst_case(case)

    # per_ip is a fixed window of 3 a minute: a burst that crossed into the
    # next minute would find its count started over (harness.in_one_window)
    PER_IP_S = 60

    def test_04_spoofed_forwarded_for(self):
        """From an untrusted client (127.0.0.2), X-Forwarded-For is ignored: a
        fresh fake address per request does not get a fresh allowance."""
        def case():
            c = self.stack.client("127.0.0.2")
            statuses = []
            for i in range(5):
                fake = "203.0.113.%d" % i
                statuses.append(c.get("/public/page", headers={"X-Forwarded-For": fake})[0])
            self.assertEqual(statuses, [200, 200, 200, 429, 429])
            c.close()
        harness.in_one_window(self.PER_IP_S, case, what="per_ip's burst")

    def test_05_ipv6_prefix(self):
        """Through a trusted proxy hop (127.0.0.3), the forwarded IPv6 client is
        counted by its /64: four addresses of one home network share 3 a minute,
        another /64 is someone else."""
        def case():
            c = self.stack.client("127.0.0.3")
            statuses = []
            for client in ("2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff:1:2:3",
                           "2001:db8:1:2:abcd::9"):
                # the leftmost entry is the client's own writing: ignored
                xff = "6.6.6.%d, %s" % (random.randrange(256), client)
                statuses.append(c.get("/public/v6", headers={"X-Forwarded-For": xff})[0])
            self.assertEqual(statuses, [200, 200, 200, 429])
            status, _, _ = c.get("/public/v6", headers={"X-Forwarded-For": "2001:db8:1:3::1"})
            self.assertEqual(status, 200)
            c.close()
        harness.in_one_window(self.PER_IP_S, case, what="per_ip's burst")

    def test_06_costs(self):
        """POST /export costs 50 of 100 points: two pass, the third waits (the
        points refill at 1 per minute); GET /search costs 5."""
        c = self.stack.client()
        got = [c.request("POST", "/export", "carol", body=b"{}")[0] for _ in range(3)]
        self.assertEqual(got, [200, 200, 429])
        status, h, _ = c.request("POST", "/export", "carol", body=b"{}")
        self.assertGreaterEqual(int(h["retry-after"]), 60 * 49)
        self.assertEqual(h["ratelimit-policy"], '"points";q=100;w=6000;sluice-rate="1/m"')
        got = [c.get("/search?q=x", "erin")[0] for _ in range(21)]
        self.assertEqual(got, [200] * 20 + [429])
        c.close()

    def test_07_tiers(self):
        """carol is on the pro plan (burst 10), alice on free (burst 3)."""
        c = self.stack.client()
        got = [c.get("/api/tier", "carol")[0] for _ in range(11)]
        self.assertEqual(got, [200] * 10 + [429])
        status, h, _ = c.get("/api/tier", "carol")
        self.assertEqual(h["ratelimit-policy"], '"per_key";q=10;w=2;sluice-rate="5/s"')
        c.close()

    def test_08_exempt(self):
        """Health checks need no key and are never limited; admin keys skip limits."""
        c = self.stack.client()
        for _ in range(10):
            status, h, body = c.get("/healthz")
            self.assertEqual(status, 200)
            self.assertNotIn("ratelimit", h)
        self.assertEqual([c.get("/api/admin", "ops")[0] for _ in range(10)], [200] * 10)
        c.close()

    def test_09_random_key_flood(self):
        """A flood of made-up keys: all 401, and not one limiter state more."""
        before = self.stack.table_keys()
        c = self.stack.client()
        alphabet = string.ascii_letters + string.digits
        for _ in range(300):
            key = "".join(random.choice(alphabet) for _ in range(24))
            self.assertEqual(c.get("/api/flood", key)[0], 401)
        c.close()
        self.assertEqual(self.stack.table_keys(), before)
        self.assertIn("per_key", before)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    SLUICED, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    NGINX = harness.nginx_path(sys.argv[3] if len(sys.argv) > 3 else None)
    if not os.path.exists(NGINX):
        sys.exit("nginx not found: install nginx-light (scripts/install-deps.sh)")
    unittest.main(argv=sys.argv[:1], verbosity=2)
