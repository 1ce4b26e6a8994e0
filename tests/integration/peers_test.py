#!/usr/bin/env python3
"""peers_test.py SLUICED SOURCE_DIR: sluiced's RESP answers where they must be
redis-cell's own (issue 15), on the real sluiced with the memory store and
with the Redis store (a redis-server of its own on a free loopback port):

- redis-cell's generic errors, `-Cell error: Store error: <message>`: the
  usage text for 0, 3 and 6 arguments, "Couldn't parse as integer" for every
  input Rust's i64 parser refuses, the zero-rate error for a zero count, a
  zero period or both; sluiced's own errors (negative arguments, ranges)
  keep `Cell error: <message>`;
- `COMMAND INFO cl.throttle` as Redis 7 answers it with the module loaded
  (arity -1, flags write and module, key 1/1/1 and its key spec) and
  `COMMAND GETKEYS`, so cluster-aware clients and proxies route the command
  by its key; SL.CHECK's key is its second argument;
- nginx's `limit_req burst=3 delay=2` as a leaky_queue policy (burst 4,
  delay_after 2) through /v1/check: the first three at once, the fourth
  delayed, the fifth refused; Envoy's local rate limit as a token bucket
  with refill: steps; both on the memory and the Redis store.
Raw sockets (cell_test.Conn, harness.Pipe), standard library only."""
import json
import unittest

import harness
import sluiced_test  # Server: sluiced on ephemeral ports
from cell_test import CONFIG, Conn

USAGE = ("-Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> "
         "<period> [<quantity>]")
NOT_INTEGERS = ["x", "1.5", "", " 1", "1 ", "0x10", "9223372036854775808", "-", "+"]
ZERO = "-Cell error: Store error: Zero rates are not supported"

# Redis 7.0's COMMAND INFO entry of a module command registered as redis-cell
# registers CL.THROTTLE: RedisModule_CreateCommand(ctx, "cl.throttle", ..., "write", 1, 1, 1)
KEY_SPEC = ["flags", ["+RW", "+access", "+update"],
            "begin_search", ["type", "index", "spec", ["index", 1]],
            "find_keys", ["type", "range", "spec", ["lastkey", 0, "keystep", 1, "limit", 0]]]
THROTTLE_INFO = ["cl.throttle", -1, ["+write", "+module"], 1, 1, 1, [], [], [KEY_SPEC], []]


def spec_at(index):
    spec = [x for x in KEY_SPEC]
    spec[3] = ["type", "index", "spec", ["index", index]]
    return spec


class Base:
    server = None

    def run_cmds(self, cmds):
        c = Conn(self.server.resp_port)
        try:
            return c.run(cmds)
        finally:
            c.close()

    def test_usage(self):
        got = self.run_cmds([("CL.THROTTLE",), ("CL.THROTTLE", "k", 1, 2),
                             ("cl.throttle", "k", 1, 2, 3, 4, 5), ("Cl.Throttle", "k", 1)])
        self.assertEqual(got, [USAGE] * 4)

    def test_not_integers(self):
        cmds, want = [], []
        for bad in NOT_INTEGERS:
            for pos in range(4):  # max_burst, count, period, quantity
                args = ["1", "1", "1", "1"]
                args[pos] = bad
                cmds.append(("CL.THROTTLE", "k") + tuple(args))
                want.append("-Cell error: Store error: Couldn't parse as integer: " + bad)
        # the first argument that does not parse is the one named
        cmds.append(("CL.THROTTLE", "k", "1", "y", "z"))
        want.append("-Cell error: Store error: Couldn't parse as integer: y")
        self.assertEqual(self.run_cmds(cmds), want)

    def test_zero_rates(self):
        got = self.run_cmds([("CL.THROTTLE", "k", 1, 0, 60), ("CL.THROTTLE", "k", 1, 5, 0),
                             ("CL.THROTTLE", "k", 1, 0, 0), ("CL.THROTTLE", "k", 1, 0, -1, 2)])
        self.assertEqual(got, [ZERO] * 4)

    def test_own_errors_keep_their_texts(self):
        got = self.run_cmds([("CL.THROTTLE", "k", 1, -1, 60), ("CL.THROTTLE", "k", -1, 1, 60),
                             ("CL.THROTTLE", "k", 1, 1, 60, -1),
                             ("CL.THROTTLE", "k", 1, 1, 4000000000)])
        self.assertEqual(got, ["-Cell error: Negative rates are not supported",
                               "-Cell error: max_burst must not be negative",
                               "-Cell error: quantity must not be negative",
                               "-Cell error: Parameters out of range"])

    def test_valid_arguments_still_decide(self):
        got = self.run_cmds([("CL.THROTTLE", "peer-ok", 15, 30, 60), ("CL.THROTTLE", "peer-ok",
                                                                      "+15", "30", "60", "-0")])
        self.assertEqual(got, [[0, 16, 15, -1, 2], [0, 16, 15, -1, 2]])

    def test_command_info(self):
        got = self.run_cmds([("COMMAND", "INFO", "cl.throttle"), ("COMMAND", "INFO", "CL.THROTTLE"),
                             ("COMMAND", "INFO", "sl.check")])
        self.assertEqual(got[0], [THROTTLE_INFO])
        self.assertEqual(got[1], [THROTTLE_INFO])
        check = got[2][0]
        self.assertEqual(check[0], "sl.check")
        self.assertEqual(check[3:6], [2, 2, 1])
        self.assertEqual(check[8], [spec_at(2)])
        # COMMAND (all) carries the same entry
        everything = self.run_cmds([("COMMAND",)])[0]
        self.assertIn(THROTTLE_INFO, everything)

    def test_command_getkeys(self):
        got = self.run_cmds([
            ("COMMAND", "GETKEYS", "CL.THROTTLE", "k", 1, 2, 3),
            ("COMMAND", "GETKEYS", "cl.throttle", "user:{42}", 1, 2, 3, 4),
            ("COMMAND", "GETKEYS", "cl.throttle", "only-a-key"),
            ("COMMAND", "GETKEYSANDFLAGS", "CL.THROTTLE", "k", 1, 2, 3),
            ("COMMAND", "GETKEYS", "SL.CHECK", "api", "alice"),
            ("COMMAND", "GETKEYS", "SL.CHECK", "api"),
            ("COMMAND", "GETKEYS", "PING", "x"),
            ("COMMAND", "GETKEYS", "NOSUCH", "x"),
            ("COMMAND", "GETKEYS", "CL.THROTTLE"),
        ])
        self.assertEqual(got, [
            ["k"], ["user:{42}"], ["only-a-key"], [["k", ["+RW", "+access", "+update"]]],
            ["alice"],
            "-ERR Invalid number of arguments specified for command",
            "-ERR The command has no key arguments",
            "-ERR Invalid command specified",
            "-ERR wrong number of arguments for 'command|getkeys' command",
        ])


NGINX_CONFIG = harness.config_head(1) + """
policies:
  - name: web
    algorithm: leaky_queue
    rate: 1/m
    burst: 4
    delay_after: 2
  - name: local
    algorithm: token_bucket
    rate: 2/h
    burst: 2
    refill: steps
"""


class NginxDelay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = sluiced_test.Server(NGINX_CONFIG)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_two_stage_burst(self):
        pipe = harness.Pipe(self.server.http_port)
        req = (b"GET /v1/check?policy=web&key=k HTTP/1.1\r\nHost: x\r\n\r\n")
        got = pipe.run([req] * 5)
        pipe.close()
        bodies = [json.loads(body) for _, _, body in got]
        self.assertEqual([status for status, _, _ in got], [200, 200, 200, 200, 429], bodies)
        for b in bodies[:3]:  # the first delay_after + 1 go at once
            self.assertNotIn("delay_ms", b, bodies)
        # the fourth waits one emission interval (60 s) less what has passed
        self.assertGreater(bodies[3].get("delay_ms", 0), 0, bodies)
        self.assertLessEqual(bodies[3]["delay_ms"], 60000, bodies)

    def test_step_refill(self):
        """Envoy's local rate limit (tokens_per_fill 2 every hour): the third
        waits for the next whole hour, when the bucket is full again at
        once (a continuous refill would let one through after 30 minutes)."""
        pipe = harness.Pipe(self.server.http_port)
        req = (b"GET /v1/check?policy=local&key=k HTTP/1.1\r\nHost: x\r\n\r\n")
        got = pipe.run([req] * 3)
        pipe.close()
        bodies = [json.loads(body) for _, _, body in got]
        self.assertEqual([status for status, _, _ in got], [200, 200, 429], bodies)
        third = bodies[2]
        self.assertNotIn("fallback", third)
        self.assertEqual(third["retry_after_ms"], third["reset_after_ms"], bodies)
        self.assertLessEqual(third["retry_after_ms"], 3600000, bodies)


def start_on_redis(cls, config_with):
    """cls.server: sluiced with config_with(the store's lines) on a
    redis-server of its own (cls.redis)."""
    cls.redis = harness.RedisServer("peers-test-redis-")
    if not cls.redis.wait():
        cls.redis.stop()
        raise OSError("redis-server on port %d did not answer in 10 s" % cls.redis.port)
    try:
        cls.server = sluiced_test.Server(config_with(harness.redis_store(cls.redis.port, "2s")))
    except BaseException:
        cls.redis.stop()
        raise


class NginxDelayRedis(NginxDelay):
    """The same on the Redis store (decide.lua)."""
    @classmethod
    def setUpClass(cls):
        start_on_redis(cls, lambda store: NGINX_CONFIG + "store:\n%s\n" % store)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.redis.stop()


class Memory(Base, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = sluiced_test.Server(CONFIG)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()


class Redis(Base, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        start_on_redis(cls, lambda store: CONFIG.replace("store:\n  type: memory\n",
                                                         "store:\n%s\n" % store, 1))

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.redis.stop()


if __name__ == "__main__":
    sluiced_test.main()
