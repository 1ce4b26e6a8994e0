#!/usr/bin/env python3
"""bench/redis/module_instr.py: the repeatable figures of sluice-redis.so, on a
private redis-server (free loopback port, no persistence, stopped at the end):

  instr MODULE_SO [--subject S] [--calls C] [--args]
      redis-server under valgrind's callgrind: instructions per decision of
      SLUICE.DECIDE (S one of gc tb lq fw sw sl; 100 items per call, keys
      "sluice:{key:NNNNNNN}:S" from 100,000, each item its own request, 16
      calls per write as sluiced pipelines them), or of INCR (S incr, 16 per
      write). C calls (default 200) as a warm-up (about half the keys then
      exist), the counters zeroed (callgrind_control -z), C more calls, the
      total divided by the decisions. Packed items (what sluiced sends) unless
      --args (the script's 3 arguments per item). Instruction counts do not
      depend on the machine's load: the before/after figure.
  memory MODULE_SO [--keys M]
      used_memory delta per key (M keys, default 200,000, after FLUSHALL) and
      MEMORY USAGE / OBJECT ENCODING of one key, for the shapes a sluice key
      can take: INCR, SET of a 19-digit integer with and without PX, SET of a
      25-byte string with PX, a 4-byte key name, and the module's GCRA and
      token bucket states.

Standard library only; needs valgrind for instr. Exit status 0, 1 on failure."""
import argparse
import os
import random
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

ALG = {"fw": ("1", "0"), "sl": ("2", "0"), "sw": ("3", "0"), "tb": ("4", "1000"),
       "gc": ("5", "1000"), "lq": ("6", "1000")}
ITEMS = 100


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def enc(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class Conn:
    """A RESP2 connection that pipelines and reads whole replies."""

    def __init__(self, port, within=120):
        deadline = time.time() + within
        while True:
            try:
                self.s = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        self.f = self.s.makefile("rb")

    def read(self):
        line = self.f.readline()
        if not line:
            raise RuntimeError("redis-server closed the connection")
        t, rest = line[:1], line[1:-2]
        if t == b"-":
            raise RuntimeError(rest.decode())
        if t in b"+:":
            return rest
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2]
        if t == b"*":
            return [self.read() for _ in range(int(rest))]
        raise RuntimeError("bad reply %r" % line)

    def send(self, cmds, batch=16):
        for k in range(0, len(cmds), batch):
            part = cmds[k:k + batch]
            self.s.sendall(b"".join(part))
            for _ in part:
                self.read()

    def call(self, *args):
        self.s.sendall(enc(*args))
        return self.read()


def start(so, tmp, valgrind=False):
    port = free_port()
    cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
           "--appendonly", "no", "--dir", tmp, "--loadmodule", so]
    if valgrind:
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=%s/cg.out" % tmp] + cmd
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p, Conn(port)


def calls_of(subject, n, rng, packed):
    if subject == "incr":
        return [enc("INCR", "key:%07d" % rng.randrange(100000)) for _ in range(n * ITEMS)]
    alg, burst = ALG[subject]
    out = []
    for _ in range(n):
        keys = list(dict.fromkeys("sluice:{key:%07d}:%s" % (rng.randrange(100000), subject)
                                  for _ in range(ITEMS)))
        if packed:
            items = [b"".join(struct.pack("<HHq", 1, 2 * i, 1) for i in range(len(keys)))]
        else:
            items = [x for i in range(len(keys)) for x in ("1", "1", str(2 * i))]
        out.append(enc("SLUICE.DECIDE", len(keys), *keys, "0", "1", alg, "1000",
                       "86400000000", burst, "0", "0", "1a2b3c4d", *items))
    return out


def instr(args, tmp):
    p, c = start(args.module, tmp, valgrind=True)
    rng = random.Random(1)
    c.send(calls_of(args.subject, args.calls, rng, not args.args))  # warm-up
    cmds = calls_of(args.subject, args.calls, rng, not args.args)
    decisions = len(cmds) if args.subject == "incr" else args.calls * ITEMS
    subprocess.run(["callgrind_control", "-z", str(p.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    c.send(cmds)
    subprocess.run(["callgrind_control", "-d", str(p.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    c.s.sendall(enc("SHUTDOWN", "NOSAVE"))
    p.wait(timeout=120)
    dumps = [f for f in os.listdir(tmp) if re.fullmatch(r"cg\.out\.\d+", f)]
    out = subprocess.run(["callgrind_annotate", os.path.join(tmp, sorted(dumps)[0])],
                         capture_output=True, text=True, check=True).stdout
    ir = int(re.search(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", out).group(1).replace(",", ""))
    form = "" if args.subject == "incr" else (" (arguments per item)" if args.args else " (packed)")
    print("%s%s: %d instructions / %d decisions = %.0f per decision"
          % (args.subject, form, ir, decisions, ir / decisions))


def memory(args, tmp):
    p, c = start(args.module, tmp)
    m = args.keys

    def used():
        info = c.call("INFO", "memory").decode()
        return int(re.search(r"^used_memory:(\d+)", info, re.M).group(1))

    def shape(name, make, sample):
        c.call("FLUSHALL")
        u0 = used()
        c.send([make(i) for i in range(m)], batch=1000)
        per = (used() - u0) / m
        print("| %s | %.1f | %s | %s |" % (name, per, c.call("MEMORY", "USAGE", sample).decode(),
                                          c.call("OBJECT", "ENCODING", sample).decode()))

    key = lambda i: "sluice:{key:%07d}:gc" % i  # noqa: E731 (23 bytes, as sluiced names keys)
    t = int(time.time() * 1e6)

    def module(alg, tag):
        return lambda i: enc("SLUICE.DECIDE", 1, key(i), "0", "1", alg, "1000", "86400000000",
                             "1000", "0", "0", tag, struct.pack("<HHq", 1, 0, 1))
    print("| shape (%d keys) | used_memory B / key | MEMORY USAGE B | encoding |" % m)
    print("| --- | ---: | ---: | --- |")
    shape("`INCR`, no TTL", lambda i: enc("INCR", key(i)), key(5))
    shape("`SET` 19-digit integer, no TTL", lambda i: enc("SET", key(i), str(t * 1000 + i)), key(5))
    shape("`SET` 19-digit integer `PX` (the script's GCRA)",
          lambda i: enc("SET", key(i), str(t * 1000 + i), "PX", "3600000"), key(5))
    shape("`SET` 25-byte string `PX` (a token bucket's state)",
          lambda i: enc("SET", key(i), "a5|8f0d1800:%013x" % (t + i), "PX", "3600000"), key(5))
    shape("`SET` 19-digit integer `PX`, 4-byte key name",
          lambda i: enc("SET", "k%03x" % i, str(t * 1000 + i), "PX", "3600000"), "k005")
    shape("module GCRA (19-digit string, `PXAT`)", module("5", "1a2b3c4d"), key(5))
    shape("module token bucket (string, `PXAT`)", module("4", "a5"), key(5))
    c.s.sendall(enc("SHUTDOWN", "NOSAVE"))
    p.wait(timeout=60)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    a = sub.add_parser("instr")
    a.add_argument("module")
    a.add_argument("--subject", default="gc", choices=["incr"] + sorted(ALG))
    a.add_argument("--calls", type=int, default=200)
    a.add_argument("--args", action="store_true")
    b = sub.add_parser("memory")
    b.add_argument("module")
    b.add_argument("--keys", type=int, default=200000)
    args = ap.parse_args()
    args.module = os.path.abspath(args.module)
    tmp = tempfile.mkdtemp(prefix="sluice-module-instr-")
    try:
        (instr if args.what == "instr" else memory)(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
