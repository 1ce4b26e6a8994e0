#!/usr/bin/env python3
"""input_test.py SLUICED SOURCE_DIR: the strictness of sluiced's inputs (issue 12,
items 6, 7 and 16), against the real server on ephemeral loopback ports with
real clients (curl, nghttp for gRPC, raw sockets for RESP and bytes curl will
not send).

- NUL bytes never merge keys: HTTP JSON, the query string, /json, gRPC
  descriptors and headers refuse them; RESP keys are binary-safe and whole
  everywhere (the memory table, Redis, /v1/top).
- /metrics with more than 1024 policies counting tier variants.
- /v1/top escapes invalid UTF-8 as U+FFFD; POST /v1/check refuses trailing
  bytes and costs not written as integers; /v1/auth says cost_exceeds_limit;
  a repeated X-Real-IP is refused; a 64-byte policy name is a 400; /v1/check
  and /v1/auth write the same RateLimit-Policy for one quota.

With SLUICE_TEST_REDIS=1 the RESP and HTTP key tests also run on the Redis
store (a redis-server of their own). Standard library only."""
import calendar
import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import unittest

import harness
import sluiced_test
from sluiced_test import Server

# Server() formats the text with str.format: braces are doubled.
CONFIG = harness.config_head(grpc=True) + """
store:
{store}
domains: {domains}
policies:
  - name: win
    algorithm: fixed_window
    rate: 2/h
  - name: small
    algorithm: token_bucket
    rate: 1/m
    burst: 3
quotas:
  - name: monthly
    limit: 10000
    per: month
costs:
  - path: /big
    cost: 50
rules:
  - name: all
    limits:
      - policy: monthly
        by: ip
        cost: 1
      - policy: small
        by: ip
"""

RULES = """
domain: edge
descriptors:
  - key: k
    rate_limit:
      unit: minute
      requests_per_unit: 2
"""

MEMORY = "  type: memory"


def curl(*args, data=None):
    """harness.curl with 10 s and the body as bytes."""
    return harness.curl(*args, data=data, max_time=10, text=False)


def post_check(s, body):
    return curl("-H", "Content-Type: application/json", s.url("/v1/check"), data=body)


def resp(port, *args):
    """One RESP command (bulk strings of bytes) on a raw socket; returns the reply bytes."""
    frame = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        frame += b"$%d\r\n%s\r\n" % (len(a), a)
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    c.sendall(frame)
    out = b""
    while True:
        chunk = c.recv(65536)
        if not chunk:
            break
        out += chunk
        if out.startswith((b"-", b"+", b":")) and out.endswith(b"\r\n"):
            break
        if out.startswith(b"*") and out.count(b"\r\n") >= 1 + int(out[1:out.index(b"\r\n")]):
            break
    c.close()
    return out


def ints(reply):
    return [int(x) for x in re.findall(rb":(-?\d+)\r\n", reply)]


def pb_len(tag, payload):
    n, out = len(payload), b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return bytes([tag]) + out + bytes([n]) + payload


def rls_request(domain, key, value):
    """A RateLimitRequest with one descriptor of one entry (protocols.md 1.2)."""
    entry = pb_len(0x0A, key) + pb_len(0x12, value)
    return pb_len(0x0A, domain) + pb_len(0x12, pb_len(0x0A, entry))


def grpc_call(port, message, tmp):
    """ShouldRateLimit with nghttp (HTTP/2 prior knowledge); returns
    (grpc-status, grpc-message, response message bytes)."""
    path = os.path.join(tmp, "req.bin")
    with open(path, "wb") as f:
        f.write(b"\0" + len(message).to_bytes(4, "big") + message)
    url = "http://127.0.0.1:%d/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit" % port
    out = subprocess.run(["nghttp", "-v", "-d", path, "-H", "content-type: application/grpc",
                          "-H", "te: trailers", url], capture_output=True, timeout=20).stdout
    st = re.search(rb"grpc-status: (\d+)", out)
    msg = re.search(rb"grpc-message: ([^\r\n]*)", out)
    return (int(st.group(1)) if st else None, msg.group(1).decode() if msg else "", out)


class Base(unittest.TestCase):
    store = MEMORY

    @classmethod
    def setUpClass(cls):
        cls.tmp, rules = harness.temp_file("sluice-input-", "rules.yaml", RULES)
        cls.s = Server(CONFIG.replace("{store}", cls.store).replace("{domains}", rules))
        cls.grpc_port = cls.s.grpc_port

    @classmethod
    def tearDownClass(cls):
        code = cls.s.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert code == 0, code

    def key(self, name):
        return "%s-%s-%d" % (name, type(self).__name__, time.time_ns())

    def remaining(self, policy, key):
        st, _, body = curl(self.s.url("/v1/check?policy=%s&cost=0&key=%s" % (policy, key)))
        self.assertEqual(st, 200, body)
        return json.loads(body)["remaining"]

    def top_keys(self, policy):
        st, _, body = curl(self.s.url("/v1/top?policy=%s&n=100" % policy))
        self.assertEqual(st, 200, body)
        # strict: the body must be UTF-8 and JSON
        return [t["key"] for t in json.loads(body.decode("utf-8", errors="strict"))["top"]]


class NulKeys(Base):
    """Item 6: a key is its whole byte string, or the request is refused."""

    def test_http_json_nul_refused(self):
        victim = self.key("victim")
        for body in [b'{"policy":"win","key":"%s\\u0000x"}' % victim.encode(),
                     b'{"policy":"win","key":"%s\\u0000"}' % victim.encode(),
                     b'{"policy":"win\\u0000zz","key":"%s"}' % victim.encode(),
                     b'{"policy":"win","key":"%s\x00x"}' % victim.encode()]:
            st, h, out = post_check(self.s, body)
            self.assertEqual(st, 400, (body, out))
            err = json.loads(out)
            self.assertEqual(err["error"], "nul_byte", out)
            self.assertIn("NUL", err["message"])
            self.assertNotIn("ratelimit", h)
        self.assertEqual(self.remaining("win", victim), 2)
        # an escaped backslash before u0000 is not a NUL: a key of its own
        st, _, out = post_check(self.s, b'{"policy":"win","key":"%s\\\\u0000"}' % victim.encode())
        self.assertEqual(st, 200, out)
        self.assertEqual(self.remaining("win", victim), 2)

    def test_query_nul_refused(self):
        victim = self.key("q")
        st, _, out = curl(self.s.url("/v1/check?policy=win&key=%s%%00x" % victim))
        self.assertEqual(st, 400, out)
        err = json.loads(out)
        self.assertEqual(err["error"], "bad_key")
        self.assertIn("NUL", err["message"])
        self.assertEqual(self.remaining("win", victim), 2)

    def test_resp_keys_are_whole(self):
        # win counts per hour: a straddle would start the count over
        harness.window_room(3600, 60, "the 4th check refused")
        victim = self.key("r").encode()
        for _ in range(3):
            resp(self.s.resp_port, "SL.CHECK", "win", victim + b"\0x")
        self.assertEqual(ints(resp(self.s.resp_port, "SL.CHECK", "win", victim + b"\0x"))[0], 0)
        # the key without its tail is another key, untouched
        self.assertEqual(self.remaining("win", victim.decode()), 2)
        self.assertEqual(ints(resp(self.s.resp_port, "SL.CHECK", "win", victim))[:3], [1, 2, 1])
        # /v1/top shows the whole key, escaped
        self.assertIn(victim.decode() + "\0x", self.top_keys("win"))
        self.assertNotIn(victim.decode(), self.top_keys("win"))
        # CL.THROTTLE keys are whole byte strings too
        ck = self.key("cell").encode()
        self.assertEqual(ints(resp(self.s.resp_port, "CL.THROTTLE", ck + b"\0a", 0, 1, 60))[0], 0)
        self.assertEqual(ints(resp(self.s.resp_port, "CL.THROTTLE", ck + b"\0a", 0, 1, 60))[0], 1)
        self.assertEqual(ints(resp(self.s.resp_port, "CL.THROTTLE", ck + b"\0b", 0, 1, 60))[0], 0)
        self.assertEqual(ints(resp(self.s.resp_port, "CL.THROTTLE", ck, 0, 1, 60))[0], 0)

    def test_json_endpoint_nul_refused(self):
        for body in [b'{"domain":"edge","descriptors":[{"entries":[{"key":"k","value":"v\\u0000x"}]}]}',
                     b'{"domain":"edge\\u0000x","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}',
                     b'{"domain":"edge","descriptors":[{"entries":[{"key":"k\\u0000","value":"v"}]}]}']:
            st, _, out = curl("-X", "POST", self.s.url("/json"), data=body)
            self.assertEqual(st, 400, (body, out))
            self.assertEqual(json.loads(out)["error"], "nul_byte", out)
        # trailing bytes after the object are refused there too
        st, _, out = curl("-X", "POST", self.s.url("/json"),
                          data=b'{"domain":"edge","descriptors":[{"entries":[{"key":"k","value":"t"}]}]} x')
        self.assertEqual(st, 400, out)

    def test_grpc_nul_refused(self):
        if shutil.which("nghttp") is None or self.grpc_port is None:
            self.skipTest("nghttp or the gRPC listener missing")
        v = self.key("g").encode()
        for msg in [rls_request(b"edge", b"k", v + b"\0x"), rls_request(b"edge\0zz", b"k", v),
                    rls_request(b"edge", b"k\0", v)]:
            st, text, out = grpc_call(self.grpc_port, msg, self.tmp)
            self.assertEqual(st, 3, out)  # INVALID_ARGUMENT
            self.assertIn("NUL", text)
        # the value without its tail was not charged: two left of 2/min
        for _ in range(2):
            st, _, out = grpc_call(self.grpc_port, rls_request(b"edge", b"k", v), self.tmp)
            self.assertEqual(st, 0, out)
            self.assertIn(b"\x08\x01", out)  # overall_code OK

    def test_header_nul_refused(self):
        req = (b"GET /v1/auth HTTP/1.1\r\nHost: x\r\nX-Original-Method: GET\r\n"
               b"X-Original-URI: /a\r\nX-Real-IP: 192.0.2.1\r\nX-Account: ab\x00cd\r\n\r\n")
        out = harness.raw(self.s.http_port, req)
        self.assertTrue(out.startswith(b"HTTP/1.1 400"), out)


class Metrics(unittest.TestCase):
    """Item 7: /metrics with more than 1024 policies counting tier variants."""

    def test_metrics_many_policies_with_tiers(self):
        if os.environ.get("SLUICE_TEST_REDIS"):
            self.skipTest("the memory store run covers it")
        n = 700
        lines = [harness.config_head(1),
                 "store:\n  type: memory\n  max_memory: 512MiB\npolicies:\n"]
        for i in range(n):
            lines.append("  - name: p%d\n    algorithm: gcra\n    rate: 5/s\n    burst: 5\n" % i)
        lines.append("tiers:\n  pro:\n")
        for i in range(n):
            lines.append("    p%d:\n      rate: 50/s\n      burst: 50\n" % i)
        s = Server("".join(lines))
        try:
            st, _, out = curl(s.url("/v1/check?policy=p%d:pro&key=a" % (n - 1)))
            self.assertEqual(st, 200, out)
            st, _, m = curl(s.url("/metrics"))
            self.assertEqual(st, 200)
            m = m.decode()
            maxb = re.findall(r'^sluice_table_max_bytes\{policy="([^"]+)"\} (\d+)$', m, re.M)
            self.assertEqual(len(maxb), 2 * n)
            self.assertEqual(len({v for _, v in maxb}), 1, "every table has the same cap")
            keys = dict(re.findall(r'^sluice_table_keys\{policy="([^"]+)"\} (\d+)$', m, re.M))
            self.assertEqual(keys["p%d:pro" % (n - 1)], "1")
            self.assertEqual(keys["p0"], "0")
            self.assertEqual(sum(int(v) for v in keys.values()), 1)
            ev = re.findall(r'^sluice_evictions_total\{policy="[^"]+",kind="\w+"\} (\d+)$', m, re.M)
            self.assertEqual(ev, ["0"] * (4 * n))
        finally:
            self.assertEqual(s.stop(), 0)


class Strictness(Base):
    """Item 16."""

    def test_top_is_valid_utf8(self):
        key = self.key("utf8")
        for _ in range(3):
            curl(self.s.url("/v1/check?policy=win&key=%s%%FF%%C3%%28%%E2%%82" % key))
        st, _, body = curl(self.s.url("/v1/top?policy=win&n=100"))
        self.assertEqual(st, 200)
        text = body.decode("utf-8", errors="strict")
        # each byte that does not start valid UTF-8 is one U+FFFD
        self.assertIn(key + "\ufffd\ufffd(\ufffd\ufffd", [t["key"] for t in json.loads(text)["top"]])

    def test_post_trailing_bytes_refused(self):
        k = self.key("trail")
        for tail in [b" x", b"{}", b",", b"]", b'{"policy":"win","key":"other"}', b"\x00"]:
            body = b'{"policy":"win","key":"%s"}' % k.encode() + tail
            st, _, out = post_check(self.s, body)
            self.assertEqual(st, 400, (body, out))
            self.assertIn(json.loads(out)["error"], ["bad_json", "nul_byte"], out)
        self.assertEqual(self.remaining("win", k), 2)
        st, _, out = post_check(self.s, b' {"policy":"win","key":"%s"} \r\n\t ' % k.encode())
        self.assertEqual(st, 200, out)

    def test_post_cost_must_be_an_integer(self):
        # win counts per hour: a straddle would start the count over
        harness.window_room(3600, 60, "the null cost refused")
        k = self.key("cost")
        for cost in [b"1e0", b"1E0", b"3.0", b"2.", b"-0", b"0.0", b"1e-0", b'"1"', b"true",
                     b"1000000000001", b"[1]"]:
            st, _, out = post_check(self.s, b'{"policy":"win","key":"%s","cost":%s}' % (k.encode(), cost))
            self.assertEqual(st, 400, (cost, out))
            self.assertEqual(json.loads(out)["error"], "bad_cost", out)
        self.assertEqual(self.remaining("win", k), 2)
        # the first "cost" is the one cJSON reads, and the one checked
        st, _, out = post_check(self.s, b'{"policy":"win","key":"%s","cost":1e0,"cost":1}' % k.encode())
        self.assertEqual(st, 400, out)
        # an escaped member name is the same member
        st, _, out = post_check(self.s, b'{"policy":"win","key":"%s","co\\u0073t":1.0}' % k.encode())
        self.assertEqual(st, 400, out)
        # nested "cost" members are not the cost
        st, _, out = post_check(self.s, b'{"x":{"cost":1.5},"policy":"win","key":"%s","cost":2}' % k.encode())
        self.assertEqual(st, 200, out)
        self.assertEqual(json.loads(out)["remaining"], 0)
        for cost in [b"0", b"null"]:
            st, _, out = post_check(self.s, b'{"policy":"win","key":"%s","cost":%s}' % (k.encode(), cost))
            self.assertEqual(st, 429 if cost == b"null" else 200, (cost, out))

    def test_auth_cost_exceeds_limit(self):
        st, h, out = curl("-H", "X-Original-Method: GET", "-H", "X-Original-URI: /big",
                          "-H", "X-Real-IP: 192.0.2.77", self.s.url("/v1/auth"))
        self.assertEqual(st, 403, out)
        d = json.loads(out)
        self.assertEqual(d["error"], "cost_exceeds_limit", out)
        self.assertIn("never pass", d["message"])
        self.assertFalse(d["allowed"])
        self.assertNotIn("retry-after", h)

    def test_auth_repeated_client_ip_refused(self):
        st, _, out = curl("-H", "X-Original-Method: GET", "-H", "X-Original-URI: /a",
                          "-H", "X-Real-IP: 192.0.2.5", "-H", "X-Real-IP: 192.0.2.6",
                          self.s.url("/v1/auth"))
        self.assertEqual(st, 400, out)
        self.assertEqual(json.loads(out)["error"], "bad_client_address", out)
        for name in ["X-Original-URI: /b", "X-Original-Method: POST"]:
            st, _, out = curl("-H", "X-Original-Method: GET", "-H", "X-Original-URI: /a",
                              "-H", "X-Real-IP: 192.0.2.5", "-H", name, self.s.url("/v1/auth"))
            self.assertEqual(st, 400, (name, out))
        st, _, out = curl("-H", "X-Original-Method: GET", "-H", "X-Original-URI: /a",
                          "-H", "X-Real-IP: 192.0.2.5", self.s.url("/v1/auth"))
        self.assertEqual(st, 200, out)

    def test_long_policy_name_is_400(self):
        for n in (64, 65, 200):
            name = "p" * n
            st, _, out = curl(self.s.url("/v1/check?policy=%s&key=a" % name))
            self.assertEqual((st, json.loads(out)["error"]), (400, "bad_policy"), (n, out))
            st, _, out = post_check(self.s, json.dumps({"policy": name, "key": "a"}).encode())
            self.assertEqual((st, json.loads(out)["error"]), (400, "bad_policy"), (n, out))
            st, _, out = curl(self.s.url("/v1/top?policy=%s" % name))
            self.assertEqual((st, json.loads(out)["error"]), (400, "bad_policy"), (n, out))
        st, _, out = curl(self.s.url("/v1/check?policy=%s&key=a" % ("p" * 63)))
        self.assertEqual((st, json.loads(out)["error"]), (404, "unknown_policy"), out)

    def test_ratelimit_policy_same_on_check_and_auth(self):
        now = datetime.datetime.now(datetime.timezone.utc)
        days = calendar.monthrange(now.year, now.month)[1]
        want = '"monthly";q=10000;w=%d;sluice-rate="10000/month"' % (days * 86400)
        st, h, out = curl(self.s.url("/v1/check?policy=monthly&key=" + self.key("m")))
        self.assertEqual(st, 200, out)
        check = h["ratelimit-policy"]
        st, h, out = curl("-H", "X-Original-Method: GET", "-H", "X-Original-URI: /a",
                          "-H", "X-Real-IP: 192.0.2.9", self.s.url("/v1/auth"))
        self.assertEqual(st, 200, out)
        auth = [m.strip() for m in h["ratelimit-policy"].split(",")]
        if datetime.datetime.now(datetime.timezone.utc).month == now.month:  # not across a month
            self.assertEqual(check, want)
            self.assertIn(want, auth)
        self.assertIn(check, auth)
        # a plain policy: the same text on both too
        st, h, _ = curl(self.s.url("/v1/check?policy=small&key=" + self.key("s")))
        self.assertIn(h["ratelimit-policy"], auth)


def redis_store():
    """A redis-server of our own; returns (store YAML, stop function)."""
    redis = harness.RedisServer("sluice-input-redis-")
    redis.wait()
    return harness.redis_store(redis.port, "2s"), redis.stop


if __name__ == "__main__":
    sluiced_test.SLUICED = os.path.abspath(sys.argv[1])
    sluiced_test.SRC = os.path.abspath(sys.argv[2])
    stop = None
    if os.environ.get("SLUICE_TEST_REDIS"):
        Base.store, stop = redis_store()
    try:
        unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[3:])
    finally:
        if stop:
            stop()
