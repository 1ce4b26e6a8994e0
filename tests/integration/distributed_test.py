#!/usr/bin/env python3
"""distributed_test.py SLUICED SOURCE_DIR [NGINX] [--only NAME] [--list]

Integration tests of several sluiced sharing one limit through Redis
(store.type: redis). Everything runs on ephemeral loopback ports: a real
redis-server, two sluiced with the same config pointing at it, and for the
last test nginx load-balancing across them (examples/distributed/). The load
comes from hundreds of threads with keep-alive HTTP connections (and some RESP
connections speaking SL.CHECK), released at once by a barrier.

  exact_one_key       every algorithm, one hot key, 3x the limit from 200
                      threads over both instances: exactly the limit admitted
  exact_many_keys     the same with many keys at once
  naive_get_set       the seed's GET-then-SET limiter (section 07) as two small
                      Python servers on the same Redis, driven by the same
                      harness: it over-admits (the harness sees the race);
                      INCR on the same servers is exact
  redis_killed        Redis killed mid-load (connection refused): open /
                      closed / local fail modes, bounded latency, /readyz and
                      metrics, recovery after a restart on the same port
  redis_paused        the same with Redis SIGSTOPped (a hung Redis: the
                      per-call timeout must fire), then SIGCONT
  deny_cache          an over-limit key is refused from the deny cache, with
                      far fewer Redis commands than requests
  batched             sync: batched stays within the documented overshoot
                      bound, with far fewer Redis commands than decisions
  example_nginx       examples/distributed/ (two sluiced, nginx in front):
                      exact total through nginx

Standard library only. Every process started is stopped at the end, even on
failure (and, through setpriv --pdeathsig, if this script itself is killed).
KEEP_TMP=1 keeps the temporary directories (logs, configs)."""
import argparse
import functools
import http.client
import http.server
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import harness
from harness import Resp, RespError, free_port, tail, wait_until

SLUICED = None
SRC = None
NGINX = None
REDIS_SERVER = "/usr/bin/redis-server"
# --redis-module PATH (sluice-redis.so): every redis-server loads it and every
# sluiced decides through it (store.redis.module: require); None: the script
REDIS_MODULE = None
SETPRIV = shutil.which("setpriv")

ALL_PROCS = []  # every child process, for the last-resort cleanup in main()


def spawn(cmd, log):
    """harness.spawn, every child kept in ALL_PROCS: with setpriv it gets
    SIGKILL if this script dies, so no redis-server or sluiced outlives a
    killed test run."""
    return harness.spawn(cmd, log, ALL_PROCS)


def window_period(margin=600):
    """A period of about an hour, in whole seconds, such that now is at least
    margin seconds from both edges of its epoch-aligned window: a fixed or
    sliding window then cannot roll over while the test runs (a plain 1/h or
    1/d would straddle the hour or midnight on an unlucky run)."""
    now = time.time()
    for p in range(3600, 2 * 3600, 60):
        if margin <= now % p <= p - margin:
            return p
    raise AssertionError("no period found")  # cannot happen: ~2/3 of periods fit


# ----------------------------------------------------------------- processes
# (the RESP client, Resp and RespError, is harness.py's)

class Env:
    """One test's world: a temporary directory and the processes started in
    it. Leaving the with-block stops them all; a sluiced that crashed, exited
    non-zero on SIGTERM or printed a sanitizer report fails the test."""

    def __init__(self, name):
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="sluice-dist-%s-" % name)
        os.chmod(self.dir, 0o755)  # nginx workers may run as another user
        self.redises, self.daemons, self.others = [], [], []

    def __enter__(self):
        return self

    def __exit__(self, etype, exc, tb):
        problems = []
        for d in reversed(self.daemons):
            problems += d.stop()
        for o in reversed(self.others):
            o.stop()
        for r in self.redises:
            r.stop()
        if problems and etype is None:
            raise AssertionError("\n".join(problems))
        if problems:  # the test failed already: say what else went wrong
            print("\n".join(problems), file=sys.stderr)
        if etype is not None:
            for d in self.daemons:
                print("---- last lines of %s (%s)\n%s"
                      % (d.name, d.log_path, tail(d.log_text())), file=sys.stderr)
        if os.environ.get("KEEP_TMP") is None:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            print("kept %s" % self.dir, file=sys.stderr)
        return False

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)
        return self.path(name)

    def redis(self, extra=()):
        r = RedisServer(self, extra)
        self.redises.append(r)
        return r

    def sluiced(self, name, config_text):
        cfg = self.write(name + ".yaml", config_text)
        d = Daemon(self, name, [SLUICED, "-c", cfg])
        self.daemons.append(d)
        return d


class RedisServer(harness.RedisServer):
    """harness.RedisServer in env's directory, logging to redis-N.log, in
    ALL_PROCS, sluice-redis.so loaded under --redis-module."""

    def __init__(self, env, extra=()):
        """extra: more redis-server arguments (redis_module_test.py: --replicaof)."""
        self.env, self.n = env, len(env.redises)
        super().__init__(dir=env.dir, log_path=env.path("redis-%d.log" % self.n),
                         extra=(["--loadmodule", REDIS_MODULE] if REDIS_MODULE else [])
                         + list(extra), procs=ALL_PROCS, exe=REDIS_SERVER)


class Daemon:
    """sluiced (or the naive limiter of naive_get_set, which logs the same
    way) on port 0; the ports are read from its log: "listening http on
    127.0.0.1:PORT", "listening resp on ...", then "ready"."""

    def __init__(self, env, name, cmd, want=("http", "resp")):
        self.env, self.name = env, name
        self.log_path = env.path(name + ".log")
        log = open(self.log_path, "w")
        self.proc = spawn(cmd, log)
        log.close()
        # ASan builds start slower
        self.ports = harness.wait_listening(self.proc, self.log_path, want, within=20, name=name)

    @property
    def http_port(self):
        return self.ports["http"]

    @property
    def resp_port(self):
        return self.ports["resp"]

    def log_text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def alive(self):
        return self.proc.poll() is None

    def assert_alive(self):
        assert self.alive(), "%s died (exit %s):\n%s" % (self.name, self.proc.returncode,
                                                          tail(self.log_text()))

    def get(self, path, timeout=5):
        """One GET on a new connection: (status, headers (lower-case), body text)."""
        c = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=timeout)
        try:
            c.request("GET", path)
            r = c.getresponse()
            body = r.read().decode()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, body
        finally:
            c.close()

    def check(self, policy, key, cost=None):
        """GET /v1/check on a new connection: (status, headers, JSON body)."""
        st, h, body = self.get(check_path(policy, key, cost))
        try:
            return st, h, json.loads(body)
        except ValueError:
            raise AssertionError("%s: /v1/check answered %d with a body that is not JSON: %r"
                                 % (self.name, st, body))

    def readyz(self):
        st, _, body = self.get("/readyz")
        return st, body

    def metrics(self):
        st, _, body = self.get("/metrics")
        assert st == 200, "%s: /metrics answered %d" % (self.name, st)
        return Metrics(body)

    def stop(self):
        """SIGTERM, wait; returns a list of problems (empty when all is well)."""
        return harness.stop_checked(self.proc, self.log_path, self.name)


class Metrics:
    """Prometheus text, parsed: get(name, **labels) for one series, total()
    for the sum over the series matching the given labels."""

    LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ([0-9.eE+-]+|NaN|[+-]Inf)$')

    def __init__(self, text):
        self.text, self.series = text, []
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            m = self.LINE.match(line)
            if m:
                labels = dict(re.findall(r'([a-zA-Z_]+)="([^"]*)"', m.group(2) or ""))
                self.series.append((m.group(1), labels, float(m.group(3))))

    def total(self, name, **labels):
        """Sum of the matching series, or None when there is none."""
        vals = [v for n, l, v in self.series
                if n == name and all(l.get(k) == str(w) for k, w in labels.items())]
        return sum(vals) if vals else None

    def need(self, name, **labels):
        v = self.total(name, **labels)
        assert v is not None, "metric %s%s missing from /metrics:\n%s" % (
            name, labels or "", "\n".join(l for l in self.text.splitlines()
                                          if "redis" in l or "fallback" in l or "deny" in l))
        return v


# ------------------------------------------------------------ the load harness

def check_path(policy, key, cost=None):
    q = "policy=%s&key=%s" % (urllib.parse.quote(policy), urllib.parse.quote(key))
    if cost is not None:
        q += "&cost=%d" % cost
    return "/v1/check?" + q


class Answer:
    """One request of the load: what was asked, where, when, and the answer.
    allowed is None when there was no answer (error says why)."""
    __slots__ = ("target", "policy", "key", "t0", "t1", "status", "allowed", "body",
                 "retry_after", "error")

    def __init__(self, target, policy, key):
        self.target, self.policy, self.key = target, policy, key
        self.status = self.allowed = self.body = self.retry_after = self.error = None

    @property
    def latency(self):
        return self.t1 - self.t0

    @property
    def fallback(self):
        return self.body.get("fallback") if isinstance(self.body, dict) else None

    def __repr__(self):
        return "<%s %s/%s status=%s body=%s error=%s %.0f ms>" % (
            self.target, self.policy, self.key, self.status, self.body, self.error,
            self.latency * 1000)


class Target:
    """Where a load thread sends its requests: HTTP /v1/check or RESP SL.CHECK
    on one port."""

    def __init__(self, name, proto, port):
        self.name, self.proto, self.port = name, proto, port

    def connect(self, timeout):
        return (HttpConn if self.proto == "http" else RespConn)(self, timeout)

    def __repr__(self):
        return "%s/%s" % (self.name, self.proto)


def targets_of(daemons, resp_share=True):
    """HTTP on every instance; with resp_share, one thread in four speaks
    RESP (SL.CHECK) instead."""
    http_t = [Target(d.name, "http", d.http_port) for d in daemons]
    if not resp_share:
        return http_t
    resp_t = [Target(d.name, "resp", d.resp_port) for d in daemons]
    return http_t * 3 + resp_t


class HttpConn:
    """One keep-alive HTTP/1.1 connection (http.client). A request that fails
    is recorded as an error, never retried: a retry could be a second
    decision the test would not see."""

    def __init__(self, target, timeout):
        self.target, self.timeout = target, timeout
        self.conn = None
        self.open()

    def open(self):
        self.conn = http.client.HTTPConnection("127.0.0.1", self.target.port, timeout=self.timeout)
        self.conn.connect()
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def check(self, policy, key, cost=None):
        a = Answer(self.target.name, policy, key)
        a.t0 = time.monotonic()
        try:
            if self.conn is None:
                self.open()
            self.conn.request("GET", check_path(policy, key, cost))
            r = self.conn.getresponse()
            data = r.read()
            a.t1 = time.monotonic()
            a.status, a.retry_after = r.status, r.getheader("Retry-After")
            try:
                a.body = json.loads(data)
            except ValueError:
                a.body = data
            if a.status in (200, 429) and isinstance(a.body, dict):
                a.allowed = a.status == 200
                if a.body.get("allowed") is not a.allowed:
                    a.error = "status %d but body %s" % (a.status, a.body)
            else:
                a.error = "unexpected answer %d %r" % (a.status, data[:200])
            if r.will_close:
                self.conn.close()
                self.conn = None
        except (OSError, http.client.HTTPException) as e:
            a.t1 = time.monotonic()
            a.error = "%s: %s" % (type(e).__name__, e)
            self.close()
        return a

    def close(self):
        if self.conn:
            self.conn.close()
        self.conn = None


class RespConn:
    """One RESP connection speaking SL.CHECK policy key [cost]."""

    def __init__(self, target, timeout):
        self.target, self.timeout = target, timeout
        self.c = Resp(target.port, timeout)

    def check(self, policy, key, cost=None):
        a = Answer(self.target.name + "/resp", policy, key)
        a.t0 = time.monotonic()
        try:
            if self.c is None:
                self.c = Resp(self.target.port, self.timeout)
            args = ["SL.CHECK", policy, key] + ([cost] if cost is not None else [])
            r = self.c.call(*args)
            a.t1 = time.monotonic()
            if not (isinstance(r, list) and len(r) == 5 and all(isinstance(x, int) for x in r)
                    and r[0] in (0, 1)):
                a.error = ("SL.CHECK reply is not [allowed, limit, remaining, retry, reset]: "
                           "%r" % (r,))
            else:
                a.allowed = r[0] == 1
                a.body = {"allowed": a.allowed, "limit": r[1], "remaining": r[2],
                          "retry_after_ms": r[3], "reset_after_ms": r[4]}
        except (OSError, RespError) as e:
            a.t1 = time.monotonic()
            a.error = "%s: %s" % (type(e).__name__, e)
            self.close()
        return a

    def close(self):
        if self.c:
            self.c.close()
        self.c = None


class Load:
    """nthreads threads; thread i talks to targets[i % len(targets)] over one
    keep-alive connection. All connect first and then start together at a
    barrier, for the most contention. Thread i calls next_job(i, n) before its
    n-th request: (policy, key) or (policy, key, cost), or None when done;
    the load also ends when stop() is called. join() returns the answers."""

    def __init__(self, targets, nthreads, next_job, timeout=5.0):
        self.targets, self.next_job, self.timeout = targets, next_job, timeout
        self.answers, self.setup_errors = [], []
        self.stopping = threading.Event()
        self.barrier = threading.Barrier(nthreads + 1)
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(nthreads)]
        for t in self.threads:
            t.start()
        try:
            self.barrier.wait(60)
        except threading.BrokenBarrierError:
            raise AssertionError("load threads did not connect: %s" % self.setup_errors[:5])
        self.started = time.monotonic()

    def run(self, i):
        target = self.targets[i % len(self.targets)]
        try:
            conn = target.connect(self.timeout)
        except OSError as e:
            self.setup_errors.append("%s: %s" % (target, e))
            self.barrier.abort()
            return
        try:
            self.barrier.wait(60)
        except threading.BrokenBarrierError:
            conn.close()
            return
        n = 0
        while not self.stopping.is_set():
            job = self.next_job(i, n)
            if job is None:
                break
            n += 1
            self.answers.append(conn.check(*job))  # atomic under the GIL; readable mid-run
        conn.close()

    def stop(self):
        self.stopping.set()

    def join(self, timeout=60):
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.1, deadline - time.monotonic()))
        stuck = sum(t.is_alive() for t in self.threads)
        assert stuck == 0, "%d load threads still waiting for answers after %d s" % (stuck, timeout)
        return self.answers


def run_jobs(targets, jobs, nthreads):
    """Runs a fixed list of jobs spread over nthreads threads; the answers."""
    per = [jobs[i::nthreads] for i in range(nthreads)]
    load = Load(targets, nthreads, lambda i, n: per[i][n] if n < len(per[i]) else None)
    return load.join()


def assert_all_answered(answers, what):
    errors = [a for a in answers if a.error]
    assert not errors, "%s: %d of %d requests got no proper answer, e.g.:\n  %s" % (
        what, len(errors), len(answers), "\n  ".join(map(repr, errors[:8])))


WATCH = """import json, select, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
slow = []
while not select.select([sys.stdin], [], [], 0)[0]:  # until stdin is closed
    t0 = time.monotonic()
    s.sendall(b"PING\\r\\n")
    got = b""
    while not got.endswith(b"\\r\\n"):
        got += s.recv(64)
    t1 = time.monotonic()
    if t1 - t0 > 0.02:
        slow.append((t0, t1))
    time.sleep(0.005)
print(json.dumps(slow))
"""


class RedisWatch:
    """A helper process that PINGs redis-server every 5 ms on a connection
    of its own and records every PING that took over 20 ms (CLOCK_MONOTONIC
    is the same in every process). stop() returns [(sent, answered)]: when
    Redis (or the machine, for Redis or the helper) was slow, whatever
    sluiced did. A separate process: this one's threads would hold it up."""

    def __init__(self, redis):
        self.p = subprocess.Popen([sys.executable, "-c", WATCH, str(redis.port)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def stop(self):
        out, _ = self.p.communicate("", timeout=30)
        return [tuple(x) for x in json.loads(out)]


class PushWatch:
    """Redis's MONITOR from before a batched load starts: when each sluiced's
    pushes of `key` (the syncs' EVALs, one connection per sluiced) ran in
    Redis, on Redis's clock, read by a thread (reading late changes no
    time). wait(start) gives, per connection, the longest a charge made
    after `start` (wall clock) can have waited before it reached Redis: to
    its first push, or two gaps between pushes (a charge just after a round
    started rides the next one)."""

    def __init__(self, redis, key):
        self.key, self.pushes = key, {}
        self.sock = socket.create_connection(("127.0.0.1", redis.port), timeout=30)
        self.sock.sendall(b"MONITOR\r\n")
        self.f = self.sock.makefile("rb")
        assert self.f.readline() == b"+OK\r\n", "MONITOR refused"
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        want = self.key.encode()
        try:
            for line in self.f:
                if b'"EVAL"' in line and want in line:
                    # +<unix time> [<db> <client address>] "EVAL" ...
                    ts, _, addr = line[1:].split(b" ", 3)[:3]
                    self.pushes.setdefault(addr.rstrip(b"]"), []).append(float(ts))
        except (OSError, ValueError):
            pass

    def wait(self, start):
        """Stops watching; {connection: longest wait (s)}."""
        self.sock.shutdown(socket.SHUT_RDWR)
        self.thread.join(10)
        self.sock.close()
        waits = {}
        for addr, ts in self.pushes.items():
            w = ts[0] - start
            for k in range(1, len(ts) - 1):
                w = max(w, ts[k + 1] - ts[k - 1])
            waits[addr.decode()] = w
        return waits


class HeldUp(Exception):
    """The machine broke a test's premise (Redis itself held up past the
    timeout, as a RedisWatch saw): the case is run again, not failed."""


def rerun_when_held_up(test):
    """Runs test up to 3 times while it raises HeldUp."""
    @functools.wraps(test)
    def run():
        for attempt in range(3):
            try:
                return test()
            except HeldUp as e:
                print("  held up (%s): again" % e)
        raise AssertionError("the machine held Redis up in every one of 3 tries")
    return run


def assert_no_fallback(answers, what, slow=None, timeout_s=None):
    """No answer came from the fail mode. With slow (RedisWatch.stop()) and
    the Redis timeout: fallbacks that all came while Redis took half the
    timeout or more raise HeldUp instead (exactness is not defined then)."""
    fb = [a for a in answers if a.fallback]
    if fb and slow is not None and all(
            any(t1 - t0 >= timeout_s / 2 and t0 < a.t1 and t1 > a.t0 for t0, t1 in slow)
            for a in fb):
        raise HeldUp("%s: %d fallbacks, each while Redis took over %.0f ms to answer a PING"
                     % (what, len(fb), timeout_s / 2 * 1000))
    assert not fb, ("%s: %d answers did not come from Redis (a call failed or timed out with "
                    "Redis up, so exactness cannot hold), e.g.:\n  %s"
                    % (what, len(fb), "\n  ".join(map(repr, fb[:5]))))


def assert_decided_by(redis, what):
    """With --redis-module: the decisions were SLUICE.DECIDE calls, no
    script ran (store.redis.module: require)."""
    if not REDIS_MODULE:
        return
    st = redis.info("commandstats")
    assert "cmdstat_sluice.decide" in st, "%s: no SLUICE.DECIDE call: %s" % (what, sorted(st))
    assert "cmdstat_evalsha" not in st and "cmdstat_eval" not in st, (
        "%s: scripts ran with the module required: %s" % (what, sorted(st)))


def by_target(answers):
    out = {}
    for a in answers:
        out[a.target] = out.get(a.target, 0) + 1
    return out


# ------------------------------------------------------------------ configs

def sluice_config(redis_url, policies, **redis_opts):
    """A sluiced config on port 0 with the Redis store. Defaults: timeout 1s
    (see exact_one_key), local fallback, two instances expected, exact sync."""
    opts = {"timeout": "1s", "on_failure": "local", "expected_instances": 2, "sync": "exact",
            "breaker_failures": 5, "breaker_cooldown": "500ms", "deny_cache": 10000}
    if REDIS_MODULE:
        opts["module"] = "require"
    opts.update(redis_opts)
    lines = ['listen: {http: 127.0.0.1:0, grpc: "off", resp: 127.0.0.1:0}',
             "workers: 2",
             "store:",
             "  type: redis",
             "  redis:",
             "    url: %s" % redis_url]
    lines += ["    %s: %s" % kv for kv in opts.items()]
    lines.append("policies:")
    for p in policies:
        lines.append("  - {%s}" % ", ".join("%s: %s" % kv for kv in p.items()))
    return "\n".join(lines) + "\n"


COUNTING = ("fixed_window", "sliding_log", "sliding_window")
ALGORITHMS = ("fixed_window", "sliding_log", "sliding_window", "token_bucket", "gcra",
              "leaky_queue")


def exact_policies(limit, suffix):
    """One policy per algorithm, admitting exactly `limit` during the test:
    windows over a period the test cannot straddle (window_period), buckets
    of `limit` refilling at limit per day (under 0.01 token in the test)."""
    period = window_period()
    out = []
    for alg in ALGORITHMS:
        p = {"name": "%s%s" % (alg.replace("_", ""), suffix), "algorithm": alg}
        if alg in ("fixed_window", "sliding_window"):
            p["rate"] = "%d/%ds" % (limit, period)
        elif alg == "sliding_log":
            p["rate"] = "%d/h" % limit
        else:
            p["rate"] = "%d/d" % limit
            p["burst"] = limit
        out.append(p)
    return out


def wait_ready(daemons, within=10):
    """Waits until every instance's /readyz says 200 (connected to Redis):
    a decision made before that would be a fallback."""
    deadline = time.monotonic() + within
    for d in daemons:
        while True:
            d.assert_alive()
            st, body = d.readyz()
            if st == 200:
                break
            assert time.monotonic() < deadline, "%s: /readyz still %d after %d s: %s" % (
                d.name, st, within, body)
            time.sleep(0.05)


def two_instances(env, config):
    """A redis-server and two sluiced with the same config, both ready."""
    redis = env.redis()
    text = config(redis.url)
    a = env.sluiced("sluiced-a", text)
    b = env.sluiced("sluiced-b", text)
    wait_ready((a, b))
    return redis, a, b


# -------------------------------------------------------------------- tests

@rerun_when_held_up
def exact_one_key():
    """Every algorithm: 3x the limit of 100 on one key from 200 threads split
    over both instances (one in four on RESP): exactly 100 admitted. For the
    counting algorithms the allowed answers' `remaining` are also 99..0, each
    once (no two decisions saw the same count). Not for the buckets: their
    remaining depends on the `now` each decision used, and a decision made
    with a clock a few microseconds behind the previous one may rightly say
    one less (seen with the memory store's per-worker clocks).
    The Redis timeout is 1 s here: a call that times out under CPU load
    falls back while its script may still run in Redis, and exactness is
    not defined then (such answers carry "fallback" and fail the test with
    that message, unless a RedisWatch saw Redis itself that slow: then the
    case is run again)."""
    limit = 100
    pols = exact_policies(limit, "")
    with Env("exact1") as env:
        redis, a, b = two_instances(env, lambda url: sluice_config(url, pols))
        key = "hot-%d" % time.time_ns()
        jobs = [(p["name"], key) for _ in range(3 * limit) for p in pols]
        random.Random(7).shuffle(jobs)  # every policy from every thread, both instances
        t = time.monotonic()
        watch = RedisWatch(redis)
        try:
            answers = run_jobs(targets_of([a, b]), jobs, 200)
        finally:
            slow = watch.stop()
        print("  %d requests from 200 threads in %.2f s (%s)"
              % (len(answers), time.monotonic() - t, by_target(answers)))
        assert len(answers) == len(jobs), "%d answers for %d requests" % (len(answers), len(jobs))
        assert_all_answered(answers, "exact_one_key")
        assert_no_fallback(answers, "exact_one_key", slow, 1.0)
        assert_decided_by(redis, "exact_one_key")
        bad = []
        for p in pols:
            mine = [x for x in answers if x.policy == p["name"]]
            where = set(by_target(mine))
            assert len(where) == 4, "harness: %s was asked only through %s" % (p["name"], where)
            ok = [x for x in mine if x.allowed]
            per = by_target(ok)
            print("  %-16s allowed %d of %d %s" % (p["algorithm"], len(ok), len(mine), per))
            if len(ok) != limit:
                bad.append("%s: %d allowed of %d requests, want exactly %d (per instance: %s)"
                           % (p["algorithm"], len(ok), len(mine), limit, per))
                continue
            if p["algorithm"] not in COUNTING:
                continue
            rem = sorted(x.body["remaining"] for x in ok)
            if rem != list(range(limit)):
                dup = sorted({r for r in rem if rem.count(r) > 1})
                bad.append("%s: allowed answers' remaining should be 0..%d once each; "
                           "repeated: %s, missing: %s" % (p["algorithm"], limit - 1, dup[:10],
                                                         sorted(set(range(limit)) - set(rem))[:10]))
        assert not bad, "exact totals on one key:\n  " + "\n  ".join(bad)
        for d in (a, b):
            d.assert_alive()


@rerun_when_held_up
def exact_many_keys():
    """Every algorithm, 16 keys at once, limit 10 each, 3x the requests from
    200 threads in random order: exactly 10 per key."""
    limit, nkeys = 10, 16
    pols = exact_policies(limit, "-ten")
    with Env("exactn") as env:
        redis, a, b = two_instances(env, lambda url: sluice_config(url, pols))
        stamp = time.time_ns()
        keys = ["k%d-%d" % (i, stamp) for i in range(nkeys)]
        jobs = [(p["name"], k) for p in pols for k in keys for _ in range(3 * limit)]
        random.Random(7).shuffle(jobs)
        t = time.monotonic()
        watch = RedisWatch(redis)
        try:
            answers = run_jobs(targets_of([a, b]), jobs, 200)
        finally:
            slow = watch.stop()
        print("  %d requests on %d keys from 200 threads in %.2f s"
              % (len(answers), len(pols) * nkeys, time.monotonic() - t))
        assert len(answers) == len(jobs)
        assert_all_answered(answers, "exact_many_keys")
        assert_no_fallback(answers, "exact_many_keys", slow, 1.0)
        assert_decided_by(redis, "exact_many_keys")
        count = {}
        for x in answers:
            count[(x.policy, x.key)] = count.get((x.policy, x.key), 0) + bool(x.allowed)
        bad = ["%s %s: %d allowed" % (p, k, n) for (p, k), n in sorted(count.items()) if n != limit]
        assert not bad, ("exact totals on many keys: %d of %d keys wrong (want %d each), "
                         "e.g.:\n  %s" % (len(bad), len(count), limit, "\n  ".join(bad[:20])))


# The naive limiter of the seed (section 07), served by this very file with
# --serve-naive: GET the count; if it is under the limit, SET count+1. Each
# step is atomic in Redis, the three together are not. No artificial delay:
# the window between the GET's reply and the SET is what a real network hop
# and a real server's work give any such limiter. policy=incr is the fixed
# version (INCR, then compare) on the same servers, as a control.

NAIVE_LIMIT = 100
_naive_local = threading.local()


class NaiveHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    redis_port = None

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        if u.path != "/v1/check" or "key" not in q:
            return self.answer(404, {"error": "not_found"})
        r = getattr(_naive_local, "redis", None)
        if r is None:  # one Redis connection per server thread (= per client connection)
            r = _naive_local.redis = Resp(self.redis_port)
        key = "naive:" + q["key"][0]
        if q.get("policy", ["getset"])[0] == "incr":
            n = r.call("INCR", key)
            if n == 1:
                r.call("EXPIRE", key, 3600)
            allowed, used = n <= NAIVE_LIMIT, min(n, NAIVE_LIMIT)
        else:
            n = int(r.call("GET", key) or 0)   # 1. read
            allowed = n < NAIVE_LIMIT          # 2. decide
            if allowed:
                r.call("SET", key, n + 1, "EX", 3600)  # 3. write
            used = n + 1 if allowed else n
        self.answer(200 if allowed else 429,
                    {"allowed": allowed, "limit": NAIVE_LIMIT, "remaining": NAIVE_LIMIT - used,
                     "retry_after_ms": 0 if allowed else 1000, "reset_after_ms": 0})

    def answer(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class NaiveServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # the listen() backlog: 200 clients connect at once


def serve_naive(redis_port):
    NaiveHandler.redis_port = redis_port
    srv = NaiveServer(("127.0.0.1", 0), NaiveHandler)
    sys.stderr.write("listening http on 127.0.0.1:%d\nready\n" % srv.server_address[1])
    sys.stderr.flush()
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    srv.serve_forever()


def naive_get_set():
    """The seed's GET-then-SET limiter, two servers on one Redis, the same
    harness as exact_one_key (200 threads, 3x a limit of 100, one key):
    total admitted > limit. The same servers with INCR: exactly the limit.
    Needs no sluiced: it shows the harness can see the race."""
    with Env("naive") as env:
        redis = env.redis()
        me = os.path.abspath(__file__)
        servers = [Daemon(env, "naive-%s" % n,
                          [sys.executable, me, "--serve-naive", str(redis.port)], want=("http",))
                   for n in "ab"]
        env.others += [_Stoppable(s) for s in servers]
        targets = [Target(s.name, "http", s.http_port) for s in servers]
        results = {}
        for policy in ("getset", "incr"):
            key = "hot-%d" % time.time_ns()
            answers = run_jobs(targets, [(policy, key)] * (3 * NAIVE_LIMIT), 200)
            assert_all_answered(answers, "naive " + policy)
            ok = sum(1 for x in answers if x.allowed)
            counter = redis.call("GET", "naive:" + key)
            results[policy] = ok
            print("  %-6s limit %d -> admitted %d of %d, Redis counter says %s"
                  % (policy, NAIVE_LIMIT, ok, len(answers), counter.decode()))
        assert results["getset"] > NAIVE_LIMIT, (
            "the naive GET+SET limiter admitted %d <= %d: the harness did not provoke the "
            "read-then-write race it exists to detect" % (results["getset"], NAIVE_LIMIT))
        assert results["incr"] == NAIVE_LIMIT, (
            "INCR admitted %d, want exactly %d" % (results["incr"], NAIVE_LIMIT))


class _Stoppable:
    """Adapts a naive-limiter Daemon to Env.others (no sanitizer checks)."""

    def __init__(self, d):
        self.d = d

    def stop(self):
        if self.d.proc.poll() is None:
            self.d.proc.kill()
            self.d.proc.wait()


# Fail modes. One policy per mode for the load (limits nobody reaches, so
# every answer while Redis is away is a fallback and none is a denial that
# the deny cache could answer), and a small local one to see the local
# allowance: limit / expected_instances per instance.
FAIL_TIMEOUT_MS = 50  # the per-call timeout under test: it must fire on a hung Redis.
# 50 ms rather than 20: on a loaded 2-core machine under ASan a healthy Redis
# call can take 20 ms of scheduling delay, and these tests should fail for
# the outage, not for the load before and after it.
# What "no request hangs" means on a machine that may stall any process for
# hundreds of ms: no request takes longer than LATENCY_FACTOR timeouts (2 s,
# measured by the client, so it includes the client's and the machine's own
# delays: up to 740 ms seen with both cores busy under ASan, at any moment
# of the outage), while Redis stays away for at least OUTAGE_MIN_S: a
# request that waited for Redis instead of its timeout would wait until
# Redis came back, seconds later.
LATENCY_FACTOR = 40
OUTAGE_MIN_S = 6.0

FAIL_POLICIES = [
    {"name": "fo", "algorithm": "token_bucket", "rate": "1000000/s", "burst": 1000000,
     "on_failure": "open"},
    {"name": "fc", "algorithm": "token_bucket", "rate": "1000000/s", "burst": 1000000,
     "on_failure": "closed"},
    {"name": "fl", "algorithm": "token_bucket", "rate": "1000000/s", "burst": 1000000,
     "on_failure": "local"},
    {"name": "flsmall", "algorithm": "token_bucket", "rate": "1/h", "burst": 20,
     "on_failure": "local"},
]
FAIL_MODE = {"fo": "open", "fc": "closed", "fl": "local", "flsmall": "local"}


def _redis_outage(how):
    """Two sluiced under load (16 threads, HTTP, policies fo/fc/fl in turn);
    Redis goes away (how: "kill" = SIGKILL, "pause" = SIGSTOP) and comes back
    (a new redis-server on the same port, or SIGCONT). Checks, in order:
    requests keep being answered within LATENCY_FACTOR timeouts; /readyz 503 with
    JSON; the local allowance (limit / expected_instances on each instance);
    the metrics (fallbacks counted per policy and mode; kill: redis_up 0;
    pause: timeouts counted and the breaker open); recovery of /readyz and
    Redis-made answers; then over the whole load: every request answered,
    none slower than the bound, every answer during the outage in its
    policy's fail mode. Redis stays away at least OUTAGE_MIN_S, so that a
    request held up until Redis is back is far over the bound. Waits are
    polls with generous deadlines."""
    with Env("fail-" + how) as env:
        redis, a, b = two_instances(env, lambda url: sluice_config(
            url, FAIL_POLICIES, timeout="%dms" % FAIL_TIMEOUT_MS, breaker_failures=5,
            breaker_cooldown="500ms"))
        inst = (a, b)
        cycle = ("fo", "fc", "fl")
        load = Load(targets_of(inst, resp_share=False), 16,
                    lambda i, n: (cycle[(i + n) % 3], "load-%d" % i))
        try:
            # answers from Redis before the outage, polled for (on a busy
            # machine a call may time out and fall back, rightly)
            wait_until(lambda: sum(1 for x in list(load.answers)
                                   if x.allowed and not x.fallback) >= 50, 60,
                       "fewer than 50 answers from Redis before the outage")
            before = {d.name: d.metrics() for d in inst}
            t_sig = time.monotonic()  # answers that ended before this were before the outage
            (redis.kill if how == "kill" else redis.pause)()
            t_out = time.monotonic()  # requests sent after this cannot reach Redis
            # first of all: requests keep being answered, none hangs
            bound = LATENCY_FACTOR * FAIL_TIMEOUT_MS / 1000
            def answered_since():
                got = [x for x in list(load.answers) if x.t0 > t_out]
                return got if len(got) >= 20 else None
            done = wait_until(answered_since, 20, "fewer than 20 requests answered since Redis "
                              "was %s" % ("killed" if how == "kill" else "stopped"))
            slow = [x for x in done if x.latency > bound]
            assert not slow, ("requests took longer than %d ms with Redis %s, e.g.:\n  %s"
                              % (bound * 1000, how, "\n  ".join(map(repr, slow[:5]))))
            # during the outage, while the load goes on
            for d in inst:
                d.assert_alive()
                deadline = time.monotonic() + 10
                while True:  # the breaker may be half-open for a probe: look for a while
                    st, body = d.readyz()
                    if st == 503 or time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
                assert st == 503, "%s: /readyz answered %d with Redis %s: %s" % (
                    d.name, st, "killed" if how == "kill" else "stopped", body)
                try:
                    json.loads(body)
                except ValueError:
                    raise AssertionError("%s: /readyz 503 body is not JSON: %r" % (d.name, body))
            # the local allowance: limit 20 / 2 instances = 10 on each, the
            # same key on both (each instance knows only its own share); a
            # new connection per request so that both workers take part
            key = "local-%d" % time.time_ns()
            for d in inst:
                got = []
                for i in range(12):
                    st, h, body = d.check("flsmall", key)
                    got.append((st, body.get("fallback")))
                    if st == 429:
                        assert "retry-after" in h, "%s: a 429 without Retry-After" % d.name
                want = [(200, "local")] * 10 + [(429, "local")] * 2
                assert got == want, ("%s: local fallback of a limit 20 with 2 expected instances "
                                     "(status, fallback) =\n  %s\nwant 10 allowed then 429:\n  %s"
                                     % (d.name, got, want))
            # metrics: this instance saw the outage
            seen_breaker = {}
            for d in inst:
                deadline = time.monotonic() + (10 if how == "pause" else 0)
                while True:  # (a half-open breaker may show 0 during its probe)
                    m = d.metrics()
                    if m.need("sluice_redis_breaker_open") >= 1:
                        seen_breaker[d.name] = True
                    if seen_breaker.get(d.name) or time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
                m0 = before[d.name]
                up = m.need("sluice_redis_up")
                for pol in ("fo", "fc", "fl"):
                    mode = FAIL_MODE[pol]
                    n1 = m.need("sluice_store_fallback_total", policy=pol, mode=mode)
                    n0 = m0.total("sluice_store_fallback_total", policy=pol, mode=mode) or 0
                    assert n1 > n0, "%s: sluice_store_fallback_total{policy=%s,mode=%s} did not " \
                        "grow during the outage (%s -> %s)" % (d.name, pol, mode, n0, n1)
                calls = {r: (m.total("sluice_redis_calls_total", result=r) or 0)
                         - (m0.total("sluice_redis_calls_total", result=r) or 0)
                         for r in ("ok", "error", "timeout")}
                print("  %s during the outage: redis_up %d, breaker_open %s, calls since: %s"
                      % (d.name, up, int(m.need("sluice_redis_breaker_open")), calls))
                if how == "kill":
                    assert up == 0, "%s: sluice_redis_up is %s with Redis killed" % (d.name, up)
                else:
                    assert calls["timeout"] > 0, (
                        "%s: no Redis call counted as a timeout with Redis stopped (calls since: "
                        "%s)" % (d.name, calls))
                    assert seen_breaker.get(d.name), (
                        "%s: sluice_redis_breaker_open never >= 1 with Redis hung under load"
                        % d.name)
            # Redis comes back, after OUTAGE_MIN_S at least (see LATENCY_FACTOR)
            time.sleep(max(0.0, t_out + OUTAGE_MIN_S - time.monotonic()))
            t_back = time.monotonic()
            if how == "kill":
                redis.start()
            else:
                redis.resume()
            recovered = {}
            deadline = t_back + 20
            while len(recovered) < 2 and time.monotonic() < deadline:
                for d in inst:
                    if d.name in recovered:
                        continue
                    st, _ = d.readyz()
                    if st == 200:
                        st2, _, body = d.check("fo", "probe-%d" % time.time_ns())
                        if st2 == 200 and "fallback" not in body:
                            recovered[d.name] = time.monotonic()
                time.sleep(0.05)
            assert len(recovered) == 2, ("normal service did not resume within 20 s of Redis "
                                         "coming back; recovered: %s" % list(recovered))
            t_rec = max(recovered.values())
            print("  recovered %.2f s after Redis came back (%s)"
                  % (t_rec - t_back, {k: round(v - t_back, 2) for k, v in recovered.items()}))
            # some load after recovery (only counted, see below)
            wait_until(lambda: any(x.t0 > t_rec for x in list(load.answers)), 10,
                       "no answer under load after recovery")
        finally:
            load.stop()
        answers = load.join()
        # Settled service, without the load: every answer from Redis. (Not
        # asserted on the load itself: on a busy machine one slow call can
        # time out, trip a worker's breaker, and give a legitimate 500 ms of
        # fallbacks.) A worker that was in a cooldown probes within 500 ms:
        # wait for every instance to be settled (a fixed sleep raced that).
        def settled(d):
            d.assert_alive()
            m = d.metrics()
            return (d.readyz()[0] == 200 and m.need("sluice_redis_up") == 1
                    and m.need("sluice_redis_breaker_open") == 0)
        for d in inst:
            wait_until(lambda: settled(d), 15, "%s: /readyz, sluice_redis_up or "
                       "sluice_redis_breaker_open not back after recovery" % d.name)
        # then 8 answers in a row from Redis. Polled: with a 50 ms timeout a
        # call held up by a busy machine rightly falls back now and then, so
        # a fallback starts the count again instead of failing the test; a
        # store that never recovers still fails it.
        for d in inst:
            last = []

            def eight_from_redis():
                got = [d.check("fo", "after-%d" % time.time_ns()) for _ in range(8)]
                last[:] = [(st, body) for st, _, body in got if st != 200 or "fallback" in body]
                return not last and settled(d)
            assert harness.poll(eight_from_redis, within=30), (
                "%s: no 8 answers in a row from Redis within 30 s of recovery; the last "
                "try: %s" % (d.name, last))
        # every request answered, none slower than the timeout allows
        assert_all_answered(answers, "load through the outage")
        slow = sorted((x for x in answers if x.latency > bound), key=lambda x: -x.latency)
        lat = sorted(x.latency for x in answers)
        print("  %d requests, latency p50 %.1f ms, p99 %.1f ms, max %.1f ms"
              % (len(lat), lat[len(lat) // 2] * 1000, lat[int(len(lat) * 0.99)] * 1000,
                 lat[-1] * 1000))
        print("  slowest: %s" % ", ".join(
            "%.0f ms at %+.2f s" % (x.latency * 1000, x.t0 - t_out)
            for x in sorted(answers, key=lambda x: -x.latency)[:4]))
        print("  (Redis away from +0.00 s to %+.2f s)" % (t_back - t_out))
        assert not slow, ("%d requests slower than %d ms (%d x the timeout; Redis was away "
                          "%.1f s), e.g.:\n  %s" % (len(slow), bound * 1000, LATENCY_FACTOR,
                                                   t_back - t_out,
                                                   "\n  ".join(map(repr, slow[:5]))))
        # the answers during the outage: each policy's fail mode. t_out is
        # taken once Redis is dead or stopped (see RedisServer.pause), so a
        # request sent after it cannot have had its answer from Redis.
        during = [x for x in answers if x.t0 > t_out and x.t1 < t_back]
        assert len(during) > 20, "only %d requests during the outage" % len(during)
        wrong = []
        for x in during:
            mode = FAIL_MODE[x.policy]
            want_status = 429 if mode == "closed" else 200
            if x.fallback != mode or x.status != want_status or (x.status == 429
                                                                 and not x.retry_after):
                wrong.append(x)
        assert not wrong, ("%d of %d answers during the outage are not the fail mode "
                           "(open: 200 + fallback open; closed: 429 + Retry-After + fallback "
                           "closed; local: 200 + fallback local), e.g.:\n  %s"
                           % (len(wrong), len(during), "\n  ".join(map(repr, wrong[:6]))))
        counts = {p: sum(1 for x in during if x.policy == p) for p in cycle}
        print("  during the outage: %s answers per policy, all in their fail mode" % counts)
        # Before the outage answers came from Redis: at least the 50 waited
        # for (not a share of them: a call that times out on a busy machine
        # rightly falls back, see above).
        for label, part in (("before the outage", [x for x in answers if x.t1 < t_sig]),
                            ("under load after recovery", [x for x in answers if x.t0 > t_rec])):
            fb = [x for x in part if x.fallback]
            print("  %s: %d answers, %d fallbacks" % (label, len(part), len(fb)))
        before = [x for x in answers if x.t1 < t_sig]
        clean = [x for x in before if not x.fallback]
        assert len(clean) >= 50, ("before the outage only %d of %d answers came from Redis"
                                  % (len(clean), len(before)))


def redis_killed():
    """Redis killed mid-load (connection refused from then on); restarted on
    the same port. See _redis_outage for every check."""
    _redis_outage("kill")


def redis_paused():
    """Redis SIGSTOPped mid-load (connections open, no answers: only the
    per-call timeout and the breaker keep requests moving); SIGCONT."""
    _redis_outage("pause")


def deny_cache():
    """A key over its limit is refused from the deny cache: 429 with
    "cached": true (no fallback field), sluice_deny_cache_hits_total grows by
    about the number of requests, Redis sees only a few commands. A cached
    refusal ends when the refusal's retry_after does."""
    pols = [{"name": "dc", "algorithm": "token_bucket", "rate": "1/h", "burst": 5},
            {"name": "dcfast", "algorithm": "token_bucket", "rate": "4/s", "burst": 1}]
    with Env("deny") as env:
        redis, a, b = two_instances(env, lambda url: sluice_config(url, pols, deny_cache=10000))
        key = "over-%d" % time.time_ns()
        ca, cb = HttpConn(Target("sluiced-a", "http", a.http_port), 5), \
            RespConn(Target("sluiced-b", "resp", b.resp_port), 5)
        got = [ca.check("dc", key) for _ in range(5)]
        assert [x.status for x in got] == [200] * 5, "the first 5 should pass: %s" % got
        first = ca.check("dc", key)
        assert first.status == 429 and first.retry_after, "the 6th should be refused: %r" % first
        hits0 = {d.name: d.metrics().total("sluice_deny_cache_hits_total") or 0 for d in (a, b)}
        c0 = redis.commands()
        n_http, n_resp = 200, 100
        refused = [ca.check("dc", key) for _ in range(n_http)]
        refused_resp = [cb.check("dc", key) for _ in range(n_resp)]
        c1 = redis.commands()
        ca.close()
        cb.close()
        assert_all_answered(refused + refused_resp, "deny_cache")
        not429 = [x for x in refused + refused_resp if x.allowed]
        assert not not429, "over-limit key allowed: %s" % not429[:3]
        cached = [x for x in refused if x.body.get("cached") is True]
        fb = [x for x in refused if "fallback" in x.body]
        assert not fb, "deny-cache answers must not carry a fallback field: %s" % fb[:3]
        assert len(cached) >= n_http - 2, ('only %d of %d refusals of a key already refused say '
                                           '"cached": true, e.g. %s'
                                           % (len(cached), n_http, refused[:2]))
        for x in cached:  # counts down from the refusal that filled the cache (1 ms: rounding)
            assert x.retry_after and 0 < x.body["retry_after_ms"] <= first.body["retry_after_ms"] \
                + 1, "cached refusal with a wrong retry: %r (first refusal: %r)" % (x, first)
        hits = {d.name: (d.metrics().need("sluice_deny_cache_hits_total")) - hits0[d.name]
                for d in (a, b)}
        requests = n_http + n_resp
        total, scripts = c1[0] - c0[0] - 2, c1[1] - c0[1]  # minus our own 2 INFO
        print("  %d refusals: deny-cache hits %s; Redis commands %d (script calls %d)"
              % (requests, hits, total, scripts))
        assert hits["sluiced-a"] >= n_http - 2 and hits["sluiced-b"] >= n_resp - 2, \
            "sluice_deny_cache_hits_total grew by %s for %d HTTP (a) and %d RESP (b) refusals" % (
                hits, n_http, n_resp)
        assert total <= requests // 20, ("Redis processed %d commands for %d refusals of a "
                                          "cached key (want far fewer)" % (total, requests))
        # another key is not refused by the cache
        st, _, body = a.check("dc", "other-" + key)
        assert st == 200 and "cached" not in body, "another key: %d %s" % (st, body)
        # a cached refusal lasts no longer than its retry_after. One
        # connection: the deny cache may be per worker. "Right after" must
        # be within the refusal's retry_after (250 ms at 4/s): when the
        # machine held this up longer, the cache has rightly let go, and
        # the case is run again on a new key (at most 3 times).
        c = HttpConn(Target("sluiced-a", "http", a.http_port), 5)
        try:
            for attempt in range(3):
                k2 = "fast-%d" % time.time_ns()
                x = c.check("dcfast", k2)
                assert x.status == 200, x
                x2 = c.check("dcfast", k2)
                assert x2.status == 429 and "cached" not in x2.body, x2
                retry = x2.body["retry_after_ms"]
                x = c.check("dcfast", k2)
                if x.t1 - x2.t0 > retry / 1000 - 0.05:
                    print("  the cached refusal was asked for %.0f ms after the refusal "
                          "(retry_after_ms %d): held up, again" % ((x.t1 - x2.t0) * 1000, retry))
                    time.sleep(retry / 1000 + 0.1)
                    continue
                assert x.status == 429 and x.body.get("cached") is True, \
                    "the refusal right after a refusal should come from the cache: %r" % x
                time.sleep(retry / 1000 + 0.1)  # at least that: a lower bound holds anywhere
                x = c.check("dcfast", k2)
                assert x.status == 200, ("%d ms after a refusal with retry_after_ms %d the key "
                                         "should pass again (the cache must not outlive it): %r"
                                         % (retry + 100, retry, x))
                break
            else:
                raise AssertionError("the machine held every try up past the retry_after")
        finally:
            c.close()


@rerun_when_held_up
def batched():
    """sync: batched, two instances, one hot key at 50/s (burst 50) for 3 s.
    Documented bound (docs/distributed.md) for N instances over T seconds:
        burst + rate*T  +  (N-1) * (burst + rate*W)
    where W is the longest a server's charges waited before they reached
    Redis (2 * sync_interval while the syncs keep their pace): what one
    exact limiter admits, plus what each other instance admits before the
    rest can hear of it. T is the clients' span, first request sent to
    last answer, which holds every server's decisions (at least the
    servers' own span). Prints the measured overshoot over burst + rate*T.
    Redis commands per decision must be far below 1.

    A PushWatch (Redis's MONITOR, on Redis's clock) measures W: a W over 4
    intervals, for which the bound says little, raises HeldUp, as does a
    load too slow to be well above the limit: run again, not failed."""
    rate, burst, interval, n, seconds = 50, 50, 0.1, 2, 3.0
    pols = [{"name": "bt", "algorithm": "token_bucket", "rate": "%d/s" % rate, "burst": burst}]
    with Env("batched") as env:
        redis, a, b = two_instances(env, lambda url: sluice_config(
            url, pols, sync="batched", sync_interval="%dms" % (interval * 1000)))
        key = "hot-%d" % time.time_ns()
        c0 = redis.commands()
        watch = PushWatch(redis, key)
        wall = time.time() - time.monotonic()  # the answers' clock to Redis's
        load = Load(targets_of([a, b]), 16, lambda i, k: ("bt", key))
        time.sleep(seconds)
        load.stop()
        answers = load.join()
        start = min(x.t0 for x in answers)
        waits = watch.wait(start + wall)
        c1 = redis.commands()
        assert_all_answered(answers, "batched")
        t = max(x.t1 for x in answers) - start
        ok = sum(1 for x in answers if x.allowed)
        exact = burst + rate * t
        assert len(waits) == n, "pushes of %s from %d connections, want %d: %s" % (
            key, len(waits), n, sorted(waits))
        w = max(2 * interval, max(waits.values()))
        bound = exact + (n - 1) * (burst + rate * w)
        total, scripts = c1[0] - c0[0] - 3, c1[1] - c0[1]  # not the INFOs, nor MONITOR
        per = {}
        for x in answers:
            if x.allowed:
                name = x.target.split("/")[0]
                per[name] = per.get(name, 0) + 1
        print("  batched: %d decisions in %.2f s, %d allowed %s; one exact limiter: %.1f; "
              "overshoot %+.1f (%+.1f%%); bound %.1f"
              % (len(answers), t, ok, per, exact, ok - exact, 100 * (ok - exact) / exact, bound))
        print("  Redis: %d commands (%.4f per decision), %d script calls (%.4f per decision)"
              % (total, total / len(answers), scripts, scripts / len(answers)))
        print("  longest wait of a charge for its push: %s ms"
              % sorted(round(v * 1000) for v in waits.values()))
        if len(answers) <= 4 * exact:
            raise HeldUp("the load (%d requests) should be well above the limit (%.0f) for the "
                         "bound to mean something" % (len(answers), exact))
        if w > 4 * interval:
            raise HeldUp("a charge waited %.0f ms for its push, over 4 intervals (%.0f ms): the "
                         "bound says little then" % (w * 1000, 4 * interval * 1000))
        assert ok <= bound, ("batched mode admitted %d in %.2f s, over the bound %.1f = "
                             "burst %d + rate %d/s * T + (N-1) * (burst + rate * W %.3f s)"
                             % (ok, t, bound, burst, rate, w))
        assert ok >= exact / 2, ("batched mode admitted only %d in %.2f s where one exact "
                                 "limiter admits %.0f" % (ok, t, exact))
        assert total / len(answers) < 0.5 and scripts / len(answers) < 0.1, (
            "batched mode: %d Redis commands (%d script calls) for %d decisions: not << 1"
            % (total, scripts, len(answers)))


@rerun_when_held_up
def example_nginx():
    """examples/distributed/: the two sluiced configs and nginx.conf, loaded
    with only the ports (and the Redis timeout, see below) replaced. 300
    requests on one key of the example's `signup` policy (100 an hour, a
    sliding log) from 100 threads through nginx: exactly 100 admitted, and
    both instances decided some of them."""
    ex = os.path.join(SRC, "examples", "distributed")
    with Env("nginx") as env:
        redis = env.redis()
        daemons = []
        for name, http_p, resp_p in (("a", 8080, 6380), ("b", 8090, 6390)):
            text = open(os.path.join(ex, "sluice-%s.yaml" % name)).read()
            for old, new in (("http: 127.0.0.1:%d" % http_p, "http: 127.0.0.1:0"),
                             ("resp: 127.0.0.1:%d" % resp_p, "resp: 127.0.0.1:0"),
                             ("127.0.0.1:6379", "127.0.0.1:%d" % redis.port),
                             # under ASan on a loaded CI machine a Redis call can take
                             # more than the example's 20 ms; a timeout is a fallback,
                             # and this test is about the exact path
                             ("timeout: 20ms", "timeout: 1s")):
                assert text.count(old) == 1, "sluice-%s.yaml: expected %r exactly once" % (
                    name, old)
                text = text.replace(old, new)
            daemons.append(env.sluiced("sluiced-" + name, text))
        a, b = daemons
        wait_ready(daemons)
        conf = open(os.path.join(ex, "nginx.conf")).read()
        port = free_port()
        for old, new in (("server 127.0.0.1:8080", "server 127.0.0.1:%d" % a.http_port),
                         ("server 127.0.0.1:8090", "server 127.0.0.1:%d" % b.http_port),
                         ("listen 127.0.0.1:8000;", "listen 127.0.0.1:%d;" % port)):
            assert conf.count(old) == 1, "nginx.conf: expected %r exactly once" % old
            conf = conf.replace(old, new)
        if os.geteuid() == 0:
            conf = "user root;\n" + conf  # as root, workers would be nobody: keep them
        env.write("nginx.conf", conf)
        cmd = [NGINX, "-p", env.dir + "/", "-e", "stderr", "-c", env.path("nginx.conf")]
        t = subprocess.run(cmd + ["-t"], capture_output=True, text=True)
        assert t.returncode == 0, "nginx -t on examples/distributed/nginx.conf:\n" + t.stderr
        ng = Nginx(env, cmd, port)
        env.others.append(ng)
        st, _, body = ng.get("/readyz")
        assert st == 200, "GET /readyz through nginx: %d %s" % (st, body)
        before = {d.name: d.metrics().total("sluice_decisions_total", policy="signup") or 0
                  for d in daemons}
        key = "alice-%d" % time.time_ns()
        watch = RedisWatch(redis)
        try:
            answers = run_jobs([Target("nginx", "http", port)], [("signup", key)] * 300, 100)
        finally:
            slow = watch.stop()
        assert_all_answered(answers, "through nginx")
        assert_no_fallback(answers, "through nginx", slow, 1.0)
        ok = sum(1 for x in answers if x.allowed)
        per = {d.name: d.metrics().need("sluice_decisions_total", policy="signup") - before[d.name]
               for d in daemons}
        print("  through nginx: %d of %d allowed; decisions per instance %s"
              % (ok, len(answers), per))
        assert ok == 100, "through nginx: %d allowed, want exactly 100 (signup: 100/h)" % ok
        assert all(v > 0 for v in per.values()), "nginx did not balance over both: %s" % per
        # more decisions than requests would mean nginx sent a request twice
        assert 100 <= sum(per.values()) <= 300, "the instances made %s decisions for 300 " \
            "requests" % per


class Nginx:
    def __init__(self, env, cmd, port):
        self.env, self.port = env, port
        self.log = open(env.path("nginx.out"), "w")
        self.proc = spawn(cmd + ["-g", "daemon off;"], self.log)
        if harness.wait_port(port, 10, step=0.02, proc=self.proc):
            return
        self.stop()
        logs = ""
        for name in ("nginx.out", "error.log"):
            if os.path.exists(env.path(name)):
                logs += open(env.path(name)).read()
        raise RuntimeError("nginx did not start:\n" + logs)

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.getheaders(), r.read().decode()
        finally:
            c.close()

    def stop(self):
        harness.stop_process(self.proc, signal.SIGQUIT, 10)  # graceful
        self.log.close()


TESTS = [exact_one_key, exact_many_keys, naive_get_set, redis_killed, redis_paused, deny_cache,
         batched, example_nginx]


def main():
    global SLUICED, SRC, NGINX, REDIS_SERVER, REDIS_MODULE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sluiced", nargs="?")
    ap.add_argument("src", nargs="?")
    ap.add_argument("nginx", nargs="?")
    ap.add_argument("--only", action="append", metavar="NAME",
                    help="run only this test (repeatable); --list names them")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--redis-server", default=REDIS_SERVER)
    ap.add_argument("--redis-module", metavar="SO",
                    help="sluice-redis.so: Redis loads it, sluiced decides through it")
    ap.add_argument("--serve-naive", metavar="REDIS_PORT", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_naive:
        return serve_naive(args.serve_naive)
    if args.list:
        print("\n".join(t.__name__ for t in TESTS))
        return 0
    if not args.sluiced or not args.src:
        ap.error("usage: distributed_test.py SLUICED SOURCE_DIR [NGINX] [--only NAME]")
    SLUICED, SRC = os.path.abspath(args.sluiced), os.path.abspath(args.src)
    REDIS_SERVER = args.redis_server
    REDIS_MODULE = os.path.abspath(args.redis_module) if args.redis_module else None
    NGINX = harness.nginx_path(args.nginx)
    tests = harness.select_tests(ap, TESTS, args.only)
    for path, what in ((SLUICED, "sluiced"), (REDIS_SERVER, "redis-server (redis-server package)")):
        if not os.access(path, os.X_OK):
            sys.exit("%s not found at %s" % (what, path))
    if any(t is example_nginx for t in tests) and not os.access(NGINX, os.X_OK):
        sys.exit("nginx not found at %s: install nginx-light (scripts/install-deps.sh)" % NGINX)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))  # run the cleanups on ctest's timeout
    return harness.run_tests(tests, ALL_PROCS)


if __name__ == "__main__":
    sys.exit(main())
