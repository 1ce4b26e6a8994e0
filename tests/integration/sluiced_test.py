#!/usr/bin/env python3
"""sluiced_test.py SLUICED SOURCE_DIR: integration tests of the decision server.

Starts the real sluiced on ephemeral loopback ports and talks to it with real
clients: curl (status codes, every header and its syntax, JSON bodies),
redis-cli (CL.THROTTLE against redis-cell's documented replies, SL.CHECK,
pipelining with --pipe), and raw sockets (malformed HTTP and RESP, oversized
headers and bodies, slow clients). Also reload with a good and a broken
config, and SIGTERM draining. Standard library only. With SLUICE_TEST_REDIS=1
the same tests run with the Redis store, on a redis-server of their own."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import harness
from harness import curl, raw

SLUICED = None
SRC = None

CONFIG = harness.config_head() + """
store:
  type: memory
  max_memory: 64MiB
limits:
  max_header_bytes: 4KiB
  max_body_bytes: 1KiB
  idle_timeout: 3s
  header_timeout: 1s
  max_connections: {max_connections}
policies:
  - name: api
    algorithm: token_bucket
    rate: {api_rate}
    burst: 3
  - name: win
    algorithm: fixed_window
    rate: 2/m
  - name: shadowed
    algorithm: gcra
    rate: 1/m
    burst: 1
    shadow: true
  - name: keep
    algorithm: sliding_log
    rate: 2/h
"""

WIN_S = 60  # win's window: a burst on it is kept inside one (harness.in_one_window)


class Server:
    """A sluiced process on ephemeral ports; the ports are read from its log.
    Its config is config_text (CONFIG unless given) formatted with fmt
    (str.format: braces doubled), or as it is with literal=True; env and
    preexec_fn go to the process (conn_test.py)."""

    def __init__(self, config_text=None, args=None, literal=False, env=None, preexec_fn=None,
                 **fmt):
        self.dir = tempfile.mkdtemp(prefix="sluiced-test-")
        self.config = os.path.join(self.dir, "sluice.yaml")
        fmt.setdefault("max_connections", 1000)
        fmt.setdefault("api_rate", "1/m")  # slow: no refill between curl calls on a loaded machine
        text = config_text or CONFIG
        with open(self.config, "w") as f:
            f.write(text if literal else text.format(**fmt))
        self.log_path = os.path.join(self.dir, "sluiced.log")
        self.log = open(self.log_path, "w+")
        cmd = [SLUICED] + (args if args is not None else ["-c", self.config])
        self.proc = harness.spawn(cmd, self.log, env=env, preexec_fn=preexec_fn)
        self.http_port = self.resp_port = None
        # a loaded machine under ASan starts slowly
        ports = harness.wait_listening(self.proc, self.log_path, ("http", "resp"), within=30)
        self.http_port, self.resp_port = ports["http"], ports["resp"]
        # gRPC when the config has it on (said before "ready"), else None
        m = re.search(r"listening grpc on \S+:(\d+)", self.log_text())
        self.grpc_port = int(m.group(1)) if m else None

    def log_text(self):
        with open(self.log_path) as f:
            return f.read()

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.http_port, path)

    def stop(self, sig=signal.SIGTERM, timeout=15):
        harness.stop_process(self.proc, sig, timeout)
        self.log.close()
        return self.proc.returncode


def _tcp_sockets():
    """{(local port, remote port): (tx_queue, rx_queue, inode)} of the IPv4
    TCP sockets on loopback, from /proc/net/tcp."""
    out = {}
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            cols = line.split()
            local, remote, queues, inode = cols[1], cols[2], cols[4], int(cols[9])
            tx, rx = (int(x, 16) for x in queues.split(":"))
            out[(int(local.split(":")[1], 16), int(remote.split(":")[1], 16))] = (tx, rx, inode)
    return out


def wait_server_read(sock, server_port, within=15):
    """Polls until the server has accepted the connection of `sock` and read
    everything sent on it: the client's send queue is empty (the bytes are in
    the server's socket), the server's end has an inode (a socket that is
    still in the accept queue has none) and nothing left to read. No sleep
    that the server could outrun on a loaded machine."""
    port = sock.getsockname()[1]
    deadline = time.monotonic() + within
    while True:
        socks = _tcp_sockets()
        mine, theirs = socks.get((port, server_port)), socks.get((server_port, port))
        if mine and theirs and mine[0] == 0 and theirs[2] != 0 and theirs[1] == 0:
            return
        if time.monotonic() > deadline:
            raise AssertionError("the server did not read connection %d within %d s: %s %s"
                                 % (port, within, mine, theirs))
        time.sleep(0.01)


def wait_refused(port, within=15):
    """Polls until connecting to port is refused (every listener closed). A
    connection reset on the way is a listener closing with that connection
    in its queue: look again."""
    deadline = time.monotonic() + within
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        except ConnectionRefusedError:
            return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError("port %d still accepts connections after %d s" % (port, within))
        time.sleep(0.01)


def wait_metric(server, pattern, within=15):
    """Polls /metrics until it matches the regular expression; returns the text."""
    deadline = time.monotonic() + within
    while True:
        _, _, m = curl(server.url("/metrics"))
        if re.search(pattern, m):
            return m
        if time.monotonic() > deadline:
            raise AssertionError("/metrics never matched %r within %d s:\n%s" % (pattern, within, m))
        time.sleep(0.05)


def redis_cli(port, *args, stdin=None):
    return subprocess.run(["redis-cli", "-p", str(port), *args], input=stdin,
                          capture_output=True, check=True, timeout=10).stdout.decode()


class HttpApi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Server()

    @classmethod
    def tearDownClass(cls):
        assert cls.s.stop() == 0

    def test_check_allows_then_limits_with_every_field(self):
        key = "alice-%d" % time.time_ns()
        t0 = time.monotonic()
        for i in range(3):
            st, h, body = curl(self.s.url("/v1/check?policy=api&key=" + key))
            self.assertEqual(st, 200)
            d = json.loads(body)
            self.assertTrue(d["allowed"])
            self.assertEqual(d["limit"], 3)
            self.assertEqual(d["remaining"], 2 - i)
            self.assertEqual(h["x-ratelimit-limit"], "3")
            self.assertEqual(h["x-ratelimit-remaining"], str(2 - i))
            self.assertRegex(h["x-ratelimit-reset"], r"^\d+$")
            self.assertRegex(h["ratelimit-policy"], r'^"api";q=3;w=\d+')
            self.assertRegex(h["ratelimit"], r'^"api";r=%d;t=\d+$' % (2 - i))
            self.assertNotIn("retry-after", h)
            self.assertTrue(h["content-type"].startswith("application/json"))
        st, h, body = curl(self.s.url("/v1/check?policy=api&key=" + key))
        elapsed_ms = (time.monotonic() - t0) * 1000
        self.assertEqual(st, 429)
        d = json.loads(body)
        self.assertFalse(d["allowed"])
        self.assertEqual(d["remaining"], 0)
        # 1/m, burst 3: the next token is a minute after the first request,
        # less what refilled while the four ran (measured, not assumed short)
        self.assertGreaterEqual(d["retry_after_ms"], 60000 - elapsed_ms - 1)
        self.assertLessEqual(d["retry_after_ms"], 60000)
        # Retry-After: whole seconds, rounded up; RateLimit's t says the same
        self.assertEqual(int(h["retry-after"]), (d["retry_after_ms"] + 999) // 1000)
        self.assertRegex(h["ratelimit"], r'^"api";r=0;t=%s$' % h["retry-after"])
        self.assertEqual(h["x-ratelimit-remaining"], "0")
        # another key is not affected
        st, _, _ = curl(self.s.url("/v1/check?policy=api&key=bob-" + key))
        self.assertEqual(st, 200)

    def test_post_json_and_errors(self):
        key = "post-%d" % time.time_ns()

        def burst():  # win is a fixed window of 2 a minute
            st, h, body = curl("-X", "POST", "-H", "Content-Type: application/json", "-d",
                               json.dumps({"policy": "win", "key": key, "cost": 2}),
                               self.s.url("/v1/check"))
            self.assertEqual(st, 200, body)
            self.assertEqual(json.loads(body)["remaining"], 0)
            st, h, body = curl("-X", "POST", "-H", "Content-Type: application/json", "-d",
                               json.dumps({"policy": "win", "key": key}), self.s.url("/v1/check"))
            self.assertEqual(st, 429)
            self.assertGreaterEqual(int(h["retry-after"]), 1)
        harness.in_one_window(WIN_S, burst, what="win's burst")
        cases = [
            (["-d", "{}", "-H", "Content-Type: text/plain"], 415),
            (["-d", "{nope", "-H", "Content-Type: application/json"], 400),
            (["-d", '{"policy":"api"}', "-H", "Content-Type: application/json"], 400),
            (["-d", '{"policy":"nope","key":"k"}', "-H", "Content-Type: application/json"], 404),
            (["-d", '{"policy":"api","key":"k","cost":-1}', "-H", "Content-Type: application/json"], 400),
            (["-d", '{"policy":"api","key":"k","cost":1.5}', "-H", "Content-Type: application/json"], 400),
            (["-d", '{"policy":"api","key":"k","cost":4}', "-H", "Content-Type: application/json"], 400),
        ]
        for args, want in cases:
            st, h, body = curl("-X", "POST", *args, self.s.url("/v1/check"))
            self.assertEqual(st, want, (args, body))
            d = json.loads(body)
            self.assertIn("error", d)
            self.assertIn("message", d)
        for q, want in [("?key=k", 400), ("?policy=api", 400), ("?policy=nope&key=k", 404),
                        ("?policy=api&key=k&cost=x", 400), ("?policy=api&key=%zz", 400)]:
            st, _, body = curl(self.s.url("/v1/check" + q))
            self.assertEqual(st, want, (q, body))

    def test_cost_and_peek(self):
        key = "cost-%d" % time.time_ns()
        st, h, body = curl(self.s.url("/v1/check?policy=api&cost=0&key=" + key))
        self.assertEqual((st, json.loads(body)["remaining"]), (200, 3))
        st, h, body = curl(self.s.url("/v1/check?policy=api&cost=3&key=" + key))
        self.assertEqual((st, json.loads(body)["remaining"]), (200, 0))

    def test_head(self):
        st, h, body = curl("-I", self.s.url("/v1/check?policy=api&key=head"))
        self.assertEqual(st, 200)
        self.assertIn("ratelimit", h)
        self.assertEqual(body, "")

    def test_health_ready_404_405(self):
        self.assertEqual(curl(self.s.url("/healthz"))[0], 200)
        st, _, body = curl(self.s.url("/readyz"))
        self.assertEqual((st, json.loads(body)["status"]), (200, "ready"))
        self.assertEqual(curl(self.s.url("/nope"))[0], 404)
        st, h, _ = curl("-X", "DELETE", self.s.url("/v1/check"))
        self.assertEqual(st, 405)
        self.assertIn("GET", h["allow"])

    def test_shadow_policy_allows_but_counts(self):
        key = "shadow-%d" % time.time_ns()
        for _ in range(3):
            st, _, body = curl(self.s.url("/v1/check?policy=shadowed&key=" + key))
            self.assertEqual(st, 200)
        self.assertTrue(json.loads(body).get("shadow"))
        _, _, m = curl(self.s.url("/metrics"))
        n = re.search(r'sluice_decisions_total\{policy="shadowed",outcome="shadow_limited"\} (\d+)', m)
        self.assertIsNotNone(n, m)
        self.assertGreaterEqual(int(n.group(1)), 2)

    def test_metrics_and_top(self):
        key = "top-offender-%d" % time.time_ns()
        for _ in range(6):
            curl(self.s.url("/v1/check?policy=api&key=" + key))
        st, h, m = curl(self.s.url("/metrics"))
        self.assertEqual(st, 200)
        self.assertTrue(h["content-type"].startswith("text/plain"))
        for family in ["sluice_decisions_total", "sluice_request_duration_seconds_bucket",
                       "sluice_table_keys", "sluice_evictions_total", "sluice_connections",
                       "sluice_reloads_total", "sluice_reload_failures_total"]:
            self.assertIn(family, m)
        self.assertNotIn(key, m)  # never a raw key as a label
        for line in m.splitlines():
            if line and not line.startswith("#"):
                self.assertRegex(line, r'^[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? [0-9.e+-]+$')
        st, _, body = curl(self.s.url("/v1/top?policy=api&n=5"))
        self.assertEqual(st, 200)
        top = json.loads(body)["top"]
        self.assertIn(key, [t["key"] for t in top])
        self.assertEqual(curl(self.s.url("/v1/top?policy=nope"))[0], 404)

    def test_keepalive_and_pipelining(self):
        req = b"GET /v1/check?policy=api&key=pipe HTTP/1.1\r\nHost: x\r\n\r\n" * 5
        out = raw(self.s.http_port, req + b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        statuses = re.findall(rb"HTTP/1.1 (\d+)", out)
        self.assertEqual(statuses, [b"200", b"200", b"200", b"429", b"429", b"200"])

    def test_malformed_and_oversized(self):
        out = raw(self.s.http_port, b"GARBAGE\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 400"), out)
        big = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 8000 + b"\r\n\r\n"
        out = raw(self.s.http_port, big)
        self.assertTrue(out.startswith(b"HTTP/1.1 431"), out)
        out = raw(self.s.http_port, b"POST /v1/check HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 413"), out)
        # the server keeps serving everyone else
        self.assertEqual(curl(self.s.url("/healthz"))[0], 200)

    def test_expect_100_continue(self):
        s = socket.create_connection(("127.0.0.1", self.s.http_port), timeout=5)
        body = b'{"policy":"api","key":"continue"}'
        s.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
        self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 100 Continue"))
        s.sendall(body)
        self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 200"))
        s.close()

    def test_slow_client_gets_408(self):
        # header_timeout is 1 s: the 408 says it fired; the bound only says
        # it did not take forever (10 x the timeout, for a loaded machine)
        s = socket.create_connection(("127.0.0.1", self.s.http_port), timeout=15)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # never finishes the head
        start = time.monotonic()
        data = s.recv(4096)
        self.assertTrue(data.startswith(b"HTTP/1.1 408"), data)
        self.assertLess(time.monotonic() - start, 10)
        s.close()


class Resp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Server()

    @classmethod
    def tearDownClass(cls):
        assert cls.s.stop() == 0

    def test_ping_echo_info(self):
        self.assertEqual(redis_cli(self.s.resp_port, "PING").strip(), "PONG")
        self.assertEqual(redis_cli(self.s.resp_port, "ECHO", "hi").strip(), "hi")
        self.assertIn("redis_version", redis_cli(self.s.resp_port, "INFO"))

    def test_cl_throttle_readme_example(self):
        key = "user123-%d" % time.time_ns()
        out = redis_cli(self.s.resp_port, "CL.THROTTLE", key, "15", "30", "60").split()
        self.assertEqual(out, ["0", "16", "15", "-1", "2"])
        out = redis_cli(self.s.resp_port, "CL.THROTTLE", key, "15", "30", "60", "15").split()
        self.assertEqual(out[:4], ["0", "16", "0", "-1"])
        out = redis_cli(self.s.resp_port, "CL.THROTTLE", key, "15", "30", "60").split()
        self.assertEqual(out[:3], ["1", "16", "0"])
        self.assertIn(out[3], ["1", "2"])  # about 2 s until one more slot (rounded as redis-cell)
        # redis-cell's own error text
        self.assertIn("Couldn't parse as integer: x",
                      redis_cli(self.s.resp_port, "CL.THROTTLE", key, "x", "30", "60"))

    def test_sl_check(self):
        key = "k-%d" % time.time_ns()

        def burst():
            out = [redis_cli(self.s.resp_port, "SL.CHECK", "win", key).split() for _ in range(3)]
            self.assertEqual([o[0] for o in out], ["1", "1", "0"])
            self.assertEqual(out[0][1], "2")
        harness.in_one_window(WIN_S, burst, what="win's burst")
        self.assertIn("ERR", redis_cli(self.s.resp_port, "SL.CHECK", "nope", key))

    def test_pipe_mode(self):
        key = "pipe-%d" % time.time_ns()
        cmds = "".join("CL.THROTTLE %s 99 1 60\r\n" % key for _ in range(150))
        out = redis_cli(self.s.resp_port, "--pipe", stdin=cmds.encode())
        self.assertIn("errors: 0, replies: 150", out)
        out = redis_cli(self.s.resp_port, "CL.THROTTLE", key, "99", "1", "60").split()
        self.assertEqual(out[0], "1")  # 100 allowed, the rest limited

    def test_malformed_frame_closes_only_that_connection(self):
        other = socket.create_connection(("127.0.0.1", self.s.resp_port), timeout=5)
        out = raw(self.s.resp_port, b"*2\r\n$4\r\nPING\r\n$-5\r\n")
        self.assertTrue(out.startswith(b"-ERR Protocol error"), out)
        other.sendall(b"*1\r\n$4\r\nPING\r\n")
        self.assertEqual(other.recv(100), b"+PONG\r\n")
        other.close()


class Lifecycle(unittest.TestCase):
    def test_reload_good_and_broken(self):
        s = Server()
        try:
            key = "reload-%d" % time.time_ns()
            curl(s.url("/v1/check?policy=keep&key=" + key))  # keep: 1 of 2 used
            with open(s.config, "w") as f:
                f.write(CONFIG.format(max_connections=1000, api_rate="7/s"))
            st, _, body = curl("-X", "POST", s.url("/v1/reload"))
            self.assertEqual(st, 200, body)
            # the unchanged policy kept its state: one left, then limited
            self.assertEqual(curl(s.url("/v1/check?policy=keep&key=" + key))[0], 200)
            self.assertEqual(curl(s.url("/v1/check?policy=keep&key=" + key))[0], 429)
            # a broken file: refused, the running config stays
            with open(s.config, "w") as f:
                f.write("policies:\n  - name: api\n    algorithm: nope\n")
            st, _, body = curl("-X", "POST", s.url("/v1/reload"))
            self.assertEqual(st, 500)
            self.assertIn("sluice.yaml:3", json.loads(body)["message"])
            self.assertEqual(curl(s.url("/v1/check?policy=api&key=after-" + key))[0], 200)
            os.kill(s.proc.pid, signal.SIGHUP)
            m = wait_metric(s, r"sluice_reload_failures_total 2")
            self.assertRegex(m, r"sluice_reloads_total 1")
            self.assertIn("reload failed", s.log_text())
        finally:
            self.assertEqual(s.stop(), 0)

    def test_sigterm_drains_in_flight_request(self):
        s = Server()
        c = socket.create_connection(("127.0.0.1", s.http_port), timeout=5)
        c.sendall(b"GET /v1/check?policy=api&key=drain HTTP/1.1\r\nHost: x\r\n")
        wait_server_read(c, s.http_port)  # the request is on its way inside the server
        s.proc.send_signal(signal.SIGTERM)
        wait_refused(s.http_port)  # every worker drains (its listener is closed)
        c.sendall(b"\r\n")
        data = c.recv(4096)
        self.assertTrue(data.startswith(b"HTTP/1.1 200"), data)
        self.assertIn(b"Connection: close", data)
        c.close()
        self.assertEqual(s.proc.wait(15), 0)  # the SIGTERM above; no second one
        s.log.close()

    def test_max_connections(self):
        s = Server(max_connections=2)
        try:
            # Two connections the server has accepted, then a third: 503. A
            # worker counts a connection just after accepting it, and the
            # first two may meet the header timeout (1 s) before the third
            # arrives on a loaded machine: then all three are tried again.
            deadline = time.monotonic() + 30
            while True:
                a = socket.create_connection(("127.0.0.1", s.http_port))
                b = socket.create_connection(("127.0.0.1", s.http_port))
                wait_server_read(a, s.http_port)
                wait_server_read(b, s.http_port)
                out = raw(s.http_port, b"")
                a.close()
                b.close()
                if out.startswith(b"HTTP/1.1 503") or time.monotonic() > deadline:
                    break
            self.assertTrue(out.startswith(b"HTTP/1.1 503"), out)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_check_config(self):
        good = os.path.join(SRC, "examples", "sluice.yaml")
        r = subprocess.run([SLUICED, "--check-config", good], capture_output=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("policies:\n  - name: x\n    algorithm: token_bucket\n    rate: 5/x\n    burst: 1\n")
        r = subprocess.run([SLUICED, "--check-config", f.name], capture_output=True)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr.decode(), re.escape(f.name) + r":4: ")

    def test_embedded_default_serves(self):
        # the default listens on fixed ports; only run if they are free
        for port in (8080, 6380):
            with socket.socket() as t:
                if t.connect_ex(("127.0.0.1", port)) == 0:
                    self.skipTest("port %d busy" % port)
        s = Server(args=[])
        try:
            self.assertEqual(s.http_port, 8080)
            self.assertEqual(s.resp_port, 6380)
            self.assertEqual(curl("http://127.0.0.1:8080/v1/check?policy=api&key=demo")[0], 200)
            self.assertEqual(redis_cli(6380, "PING").strip(), "PONG")
        finally:
            self.assertEqual(s.stop(), 0)


def check_config(text=None, path=None):
    """sluiced --check-config on path, or on text written to a temporary file
    (removed after): (exit status, stdout, stderr)."""
    if path is not None:
        return harness.run(SLUICED, "--check-config", path)
    d, path = harness.temp_file("sluiced-check-", "sluice.yaml", text)
    try:
        return harness.run(SLUICED, "--check-config", path)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main(redis=None):
    """The main of a unittest file that starts Server: SLUICED and SRC from
    argv[1:3], the rest to unittest; with SLUICE_TEST_REDIS set, redis()
    first (the file's switch to a redis-server of its own)."""
    global SLUICED, SRC
    SLUICED, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if redis is not None and os.environ.get("SLUICE_TEST_REDIS"):
        redis()
    unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[3:])


def use_redis_store():
    """SLUICE_TEST_REDIS=1: the same tests with the Redis store, on a
    redis-server of our own on a free loopback port (stopped at exit)."""
    global CONFIG
    redis = harness.private_redis("sluiced-test-redis-", within=5)  # 100 tries, 50 ms apart
    CONFIG = CONFIG.replace("store:\n  type: memory\n",
                            "store:\n%s\n" % harness.redis_store(redis.port, "500ms"), 1)


if __name__ == "__main__":
    main(use_redis_store)
