#!/usr/bin/env python3
"""cell_test.py SLUICED SOURCE_DIR: CL.THROTTLE's state in the real sluiced
(issue 12 item 2), with the memory store and with the Redis store on a
redis-server of its own (free loopback port, stopped at the end).

- redis-cell's answers when a key's parameters change on the fly;
- 1000 distinct parameter sets from one RESP client never refuse a new set
  to a later client, and with the Redis store they are one Redis key;
- every CL.THROTTLE key shares the one configured memory cap;
- Redis store: the worker's deny cache never answers for a CL.THROTTLE key
  (a refusal under one parameter set says nothing about another), and with
  Redis unreachable the local fallback keeps the same one-state-per-key
  semantics;
- DEL key resets a key's state as in redis-cell (Redis's integer count, a
  key named twice counted once); with the Redis store it deletes the one
  Redis key; with Redis away it answers an error and empties the local
  fallback of the key;
- Redis away: more pipelined commands than one script call carries (its
  failure, before it is sent, is answered from the loop, in order: it used to
  run inside a later command's handler, a use-after-free under ASan).
Raw sockets only (standard library)."""
import socket
import unittest

import harness
import sluiced_test  # Server: sluiced on ephemeral ports

CONFIG = harness.config_head() + """
store:
  type: memory
  max_memory: 1MiB
policies:
  - name: api
    algorithm: token_bucket
    rate: 1/m
    burst: 3
"""

CAP = 1 << 20


def command(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class Conn:
    """One RESP connection: send pipelined commands, read their replies."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.buf = b""

    def close(self):
        self.s.close()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        if kind == b":":
            return int(rest)
        if kind in (b"-", b"+"):
            return (kind + rest).decode()
        if kind == b"$":
            n = int(rest)
            while len(self.buf) < n + 2:
                chunk = self.s.recv(65536)
                if not chunk:
                    raise EOFError("connection closed")
                self.buf += chunk
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data.decode()
        raise ValueError("unexpected reply %r" % line)

    def run(self, cmds):
        self.s.sendall(b"".join(command(*c) for c in cmds))
        return [self.reply() for _ in cmds]


def info_cell(port):
    c = Conn(port)
    text = c.run([("INFO", "cell")])[0]
    c.close()
    fields = {}
    for line in text.split("\r\n"):
        k, sep, v = line.partition(":")
        if sep:
            fields[k] = v
    return fields


class Base:
    server = None

    def conn(self):
        return Conn(self.server.resp_port)

    def test_parameter_change_keeps_state(self):
        # redis-cell: one tat per key, judged with the parameters of each call
        c = self.conn()
        got = c.run([("CL.THROTTLE", "rk", 0, 1, 60), ("CL.THROTTLE", "rk", 4, 1, 60),
                     ("CL.THROTTLE", "rk", 0, 1, 60)])
        c.close()
        self.assertEqual(got, [[0, 1, 0, -1, 60], [0, 5, 3, -1, 120], [1, 1, 0, 120, 120]])

    def test_many_parameter_sets_never_refuse_a_new_one(self):
        a = self.conn()
        got = a.run([("CL.THROTTLE", "x", 1001 + i, 1, 1) for i in range(1000)])
        for i, r in enumerate(got):
            self.assertIsInstance(r, list, "set %d: %r" % (i, r))
            self.assertEqual(r[:2], [0, 1002 + i])
        a.close()
        # a later client, a new parameter set
        b = self.conn()
        self.assertEqual(b.run([("CL.THROTTLE", "fresh", 9, 9, 9)])[0], [0, 10, 9, -1, 1])
        # the first key holds the 1000 charges (1000 s ahead) whatever the parameters
        r = b.run([("CL.THROTTLE", "x", 0, 1, 1)])[0]
        self.assertEqual(r[:3], [1, 1, 0], r)
        self.assertGreater(r[3], 500, r)
        b.close()


    def test_del_resets_state(self):
        c = self.conn()
        got = c.run([("CL.THROTTLE", "dk", 0, 1, 60), ("CL.THROTTLE", "dk", 0, 1, 60),
                     ("DEL", "dk", "dk", "never-used"), ("CL.THROTTLE", "dk", 0, 1, 60),
                     ("DEL", "dk"), ("DEL", "dk")])
        c.close()
        self.assertEqual(got, [[0, 1, 0, -1, 60], [1, 1, 0, 60, 60], 1, [0, 1, 0, -1, 60], 1, 0])


class Memory(Base, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = sluiced_test.Server(CONFIG)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_one_memory_cap(self):
        # 40000 keys with 400 parameter sets (56 bytes each: about 2 MiB) in a 1 MiB cap
        c = self.conn()
        for chunk in range(20):
            cmds = [("CL.THROTTLE", "m%d:%d" % (chunk, j), 100 + j % 400, 1, 3600)
                    for j in range(2000)]
            for r in c.run(cmds):
                self.assertIsInstance(r, list, r)
                self.assertEqual(r[0], 0)  # a new key is never refused: old ones are evicted
        c.close()
        f = info_cell(self.server.resp_port)
        self.assertLessEqual(int(f["cell_bytes"]), CAP, f)
        self.assertGreater(int(f["cell_evicted_live"]), 0, f)
        self.assertNotIn("cell_parameter_sets", f)


class Redis(Base, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.redis = harness.RedisServer("cell-test-redis-")
        cls.redis_port = cls.redis.port
        if not cls.redis.wait():
            raise OSError("redis-server on port %d did not answer in 10 s" % cls.redis_port)
        config = CONFIG.replace("store:\n  type: memory\n",
                                "store:\n%s\n" % harness.redis_store(cls.redis_port, "2s"), 1)
        cls.server = sluiced_test.Server(config)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.redis.stop()

    def redis_keys(self, pattern):
        c = Conn(self.redis_port)
        keys = c.run([("KEYS", pattern)])[0]
        c.close()
        return sorted(keys)

    def test_deny_cache_is_per_parameter_set(self):
        # a refusal under one parameter set says nothing about another: the
        # worker's deny cache must not refuse what Redis would allow
        c = self.conn()
        got = c.run([("CL.THROTTLE", "dc", 0, 1, 60), ("CL.THROTTLE", "dc", 0, 1, 60)])
        self.assertEqual([r[0] for r in got], [0, 1], got)
        got = c.run([("CL.THROTTLE", "dc", 4, 1, 60), ("CL.THROTTLE", "dc", 0, 1, 60)])
        c.close()
        self.assertEqual(got, [[0, 5, 3, -1, 120], [1, 1, 0, 120, 120]])

    def test_one_redis_key_whatever_the_parameters(self):
        c = self.conn()
        got = c.run([("CL.THROTTLE", "one", b, 1 + b % 3, 10) for b in range(50)])
        c.close()
        for r in got:
            self.assertIsInstance(r, list, r)
        self.assertEqual(self.redis_keys("*{one}*"), ["sluice:{one}:cell:tat"])


    def test_del_deletes_the_redis_key(self):
        c = self.conn()
        self.assertEqual(c.run([("CL.THROTTLE", "gone", 0, 1, 60)])[0], [0, 1, 0, -1, 60])
        self.assertEqual(self.redis_keys("*{gone}*"), ["sluice:{gone}:cell:tat"])
        self.assertEqual(c.run([("DEL", "gone")])[0], 1)
        self.assertEqual(self.redis_keys("*{gone}*"), [])
        # a key only Redis holds (another sluiced's charge) is deleted too
        r = Conn(self.redis_port)
        self.assertEqual(r.run([("SET", "sluice:{other}:cell:tat", "1")])[0], "+OK")
        r.close()
        self.assertEqual(c.run([("DEL", "other", "nosuch")])[0], 1)
        self.assertEqual(self.redis_keys("*{other}*"), [])
        c.close()


class RedisDown(unittest.TestCase):
    """Redis unreachable, on_failure local: the memory table decides, with
    the same one-state-per-key semantics."""

    @classmethod
    def setUpClass(cls):
        port = harness.free_port()  # nothing listens there
        config = CONFIG.replace(
            "store:\n  type: memory\n",
            "store:\n%s\n" % harness.redis_store(port, "50ms", on_failure="local"), 1)
        cls.server = sluiced_test.Server(config)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_local_fallback_keeps_state(self):
        c = Conn(self.server.resp_port)
        got = c.run([("CL.THROTTLE", "rk", 0, 1, 60), ("CL.THROTTLE", "rk", 4, 1, 60),
                     ("CL.THROTTLE", "rk", 0, 1, 60)])
        c.close()
        self.assertEqual(got, [[0, 1, 0, -1, 60], [0, 5, 3, -1, 120], [1, 1, 0, 120, 120]])

    def test_del_without_redis(self):
        # nothing is known of Redis's key: an error; the local fallback forgets it
        c = Conn(self.server.resp_port)
        got = c.run([("CL.THROTTLE", "lk", 0, 1, 60), ("CL.THROTTLE", "lk", 0, 1, 60),
                     ("DEL", "lk"), ("CL.THROTTLE", "lk", 0, 1, 60)])
        c.close()
        self.assertEqual(got[:2], [[0, 1, 0, -1, 60], [1, 1, 0, 60, 60]])
        self.assertTrue(got[2].startswith("-ERR the store could not be reached"), got[2])
        self.assertEqual(got[3], [0, 1, 0, -1, 60])

    def test_full_batch_failing_at_once(self):
        # More pipelined commands than one script call carries (128 requests):
        # the full call is sent while later commands are being read, and with
        # no connection (or the breaker open) it fails before it is sent. Its
        # requests' answers must not be written from inside the handler of the
        # command being read (they were: a use-after-free of the connection's
        # pending answer under ASan, and sluiced died). Every command is
        # answered, in order, and sluiced lives on.
        c = Conn(self.server.resp_port)
        for rnd in range(3):  # the first connect may still be on its way: again
            cmds = [("CL.THROTTLE", "fb%d" % (i % 7), 1000, 1000, 60) for i in range(300)]
            cmds += [("DEL", "fb0"), ("PING",)]
            got = c.run(cmds)
            for i, r in enumerate(got[:300]):
                self.assertIsInstance(r, list, (rnd, i, r))
                self.assertEqual(r[0], 0, (rnd, i, r))  # the local fallback allows
            self.assertTrue(got[300].startswith("-ERR the store could not be reached"), got[300])
            self.assertEqual(got[301], "+PONG")
        c.close()
        self.assertIsNone(self.server.proc.poll(), "sluiced exited")


if __name__ == "__main__":
    sluiced_test.main()
