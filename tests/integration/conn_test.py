#!/usr/bin/env python3
"""conn_test.py SLUICED SOURCE_DIR: the connection layer of sluiced under attack.

Starts the real sluiced on ephemeral loopback ports (Server from
sluiced_test.py) and attacks it with raw sockets:
- OutputBound: many connections pipeline GET /metrics without reading their
  answers; sluiced's peak RSS stays bounded and an honest client keeps being
  answered quickly (limits.max_pending_output, max_pending_output_total);
- Timeouts: a request head or a RESP command trickled a byte at a time gets
  its 408 / error after limits.header_timeout / limits.command_timeout, not
  after idle_timeout (or never);
- FdLimit: at the file-descriptor limit existing connections are still
  served, the warning is rate-limited, and sluiced recovers;
- Drain: on SIGTERM, requests already in the socket buffers of idle
  keep-alive connections, and those behind a connection's held-back output,
  are all answered, the last with Connection: close, and none gets a reset.
Standard library only."""
import atexit
import os
import re
import resource
import select
import shutil
import signal
import socket
import sys
import threading
import time
import unittest

import sluiced_test
import harness
from harness import poll, read_response, read_to_eof, tail

BASE = harness.config_head("{workers}") + """
store:
  type: memory
  max_memory: 16MiB
limits:
{limits}
policies:
  - name: api
    algorithm: token_bucket
    rate: 1000000/s
    burst: 1000000
"""


class Server(sluiced_test.Server):
    """sluiced_test.Server with a config of our own, an environment and a
    preexec_fn for the process."""

    def stop(self, *a, **kw):
        if sys.exc_info()[0] is not None:  # a test failed: show what sluiced said
            print("sluiced's log (end):\n" + self.log_text()[-3000:], file=sys.stderr)
        return super().stop(*a, **kw)

    def __init__(self, text, env=None, preexec_fn=None):
        super().__init__(config_text=text, literal=True, env=env, preexec_fn=preexec_fn)
        atexit.register(shutil.rmtree, self.dir, True)


def start(workers=1, limits="  idle_timeout: 30s", **kw):
    text = BASE.replace("{workers}", str(workers)).replace("{limits}", limits)
    return Server(text, **kw)


def kernel_send_buffer():
    """The most a socket's send buffer may grow to (tcp_wmem's maximum): the
    answers the kernel takes before any queue in sluiced builds up."""
    try:
        with open("/proc/sys/net/ipv4/tcp_wmem") as f:
            return int(f.read().split()[2])
    except (OSError, ValueError, IndexError):
        return 4 << 20


def non_reader(port):
    """A non-blocking connection to the loopback port with a 4 KiB receive
    buffer, for a client that never reads its answers."""
    a = socket.socket()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    a.connect(("127.0.0.1", port))
    a.setblocking(False)
    return a


def send_all(sock, data, deadline=30):
    """Sends data on a non-blocking socket without reading anything."""
    sent, end = 0, time.time() + deadline
    while sent < len(data) and time.time() < end:
        try:
            sent += sock.send(data[sent:sent + 65536])
        except (BlockingIOError, InterruptedError):
            select.select([], [sock], [], 0.05)


def sanitized():
    """Is sluiced built with ASan or TSan?"""
    with open(sluiced_test.SLUICED, "rb") as f:
        data = f.read()
    return b"__asan_init" in data or b"__tsan_init" in data


def vm_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def metric(server, name):
    s = socket.create_connection(("127.0.0.1", server.http_port), timeout=10)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    _, _, body, _ = read_response(s)
    s.close()
    v = harness.metric(body.decode(), name)
    return None if v is None else int(v)


def overfill(answer_bytes):
    """How many answers of answer_bytes make three times what the kernel's
    socket buffers take (kernel_send_buffer): the rest queues in sluiced."""
    return (3 * kernel_send_buffer()) // answer_bytes


def reads_paused(s, n=1):
    """Polls (60 s) until sluiced has stopped reading n connections
    (sluice_read_pauses_total): True, else False."""
    return poll(lambda: metric(s, "sluice_read_pauses_total") >= n, within=60)


def output_drained(s):
    """Polls until nothing is queued for any connection
    (sluice_pending_output_bytes 0): True, else None."""
    return poll(lambda: metric(s, "sluice_pending_output_bytes") == 0 or None)


class OutputBound(unittest.TestCase):
    """Item 3: pipelined answers may not grow sluiced's memory without bound."""

    ATTACKERS = 40
    SEND_BYTES = 256 * 1024  # per attacker: ~7000 requests of /metrics (6 KB each)

    def test_pipelined_metrics_without_reading(self):
        env = dict(os.environ)
        # ASan keeps freed memory in a quarantine (256 MiB by default): it
        # would count as RSS here
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=8"
        s = start(workers=2, env=env)
        try:
            pid = s.proc.pid
            # warm up: a few answers of every kind, so the baseline has its buffers
            h = socket.create_connection(("127.0.0.1", s.http_port), timeout=10)
            for _ in range(20):
                h.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                read_response(h)
            base = vm_kib(pid, "VmRSS")
            req = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
            payload = req * (self.SEND_BYTES // len(req))
            socks = []
            for _ in range(self.ATTACKERS):
                socks.append([non_reader(s.http_port), 0])
            stop = threading.Event()

            def attack():
                while not stop.is_set():
                    busy = False
                    for entry in socks:
                        a, sent = entry
                        if sent >= len(payload):
                            continue
                        try:
                            entry[1] += a.send(payload[sent:sent + 65536])
                            busy = True
                        except (BlockingIOError, InterruptedError):
                            pass
                        except OSError:
                            entry[1] = len(payload)
                    if not busy:
                        select.select([], [e[0] for e in socks if e[1] < len(payload)], [], 0.05)

            t = threading.Thread(target=attack, daemon=True)
            t.start()
            # the honest client, on its own connection, reads its answers
            lat = []
            deadline = time.time() + 4
            while time.time() < deadline:
                t0 = time.monotonic()
                h.sendall(b"GET /v1/check?policy=api&key=honest HTTP/1.1\r\nHost: x\r\n\r\n")
                st, _, _, rest = read_response(h)
                lat.append(time.monotonic() - t0)
                self.assertEqual(st, 200)
                self.assertEqual(rest, b"")
                time.sleep(0.02)
            stop.set()
            t.join()
            peak = vm_kib(pid, "VmHWM")
            queued = metric(s, "sluice_pending_output_bytes")
            lat.sort()
            grown = (peak - base) // 1024
            print("output bound: RSS grew by %d MiB; honest answers: median %.1f ms, "
                  "slowest %.1f ms" % (grown, 1000 * lat[len(lat) // 2], 1000 * lat[-1]),
                  file=sys.stderr)
            # 40 x (1 MiB + one answer + one read) at most, under the 64 MiB total
            self.assertLess(grown, 160, "RSS grew by %d MiB (base %d KiB, peak %d KiB)" %
                            (grown, base, peak))
            # generous: before the bound, honest clients waited for seconds
            # (or timed out) while the workers built gigabytes of answers,
            # every answer of them; a sanitizer makes every answer several
            # times slower. The median, not the slowest: a loaded machine
            # stalls the test or sluiced now and then, which a few answers
            # show and the bound is not about.
            median = lat[len(lat) // 2]
            self.assertLess(median, 5.0 if sanitized() else 1.5,
                            "median of the honest answers %.3f s; slowest: %r"
                            % (median, lat[-5:]))
            self.assertLessEqual(queued, 64 * 1024 * 1024 + self.ATTACKERS * 64 * 1024)
            for a, _ in socks:
                a.close()
            h.close()
            # the process total goes back to what the open connections hold
            self.assertEqual(output_drained(s), True)
        finally:
            self.assertEqual(s.stop(), 0)


    def test_bounds_are_kept(self):
        """Per connection and for the process, with small bounds: the
        kernel's socket buffers (megabytes) fill first, then the queued
        output stops at the bound."""
        s = start(workers=1, limits="  idle_timeout: 30s\n  max_pending_output: 256KiB\n"
                                    "  max_pending_output_total: 1MiB")
        try:
            req = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
            socks = []
            for _ in range(8):
                socks.append(non_reader(s.http_port))
            # answers for more than the kernel's socket buffers take (6 KB each)
            n = overfill(6000)
            for a in socks:
                send_all(a, req * n)
            # every connection ends up stopped: queued over its share
            self.assertTrue(reads_paused(s, 8))
            queued = metric(s, "sluice_pending_output_bytes")
            self.assertGreater(queued, 512 * 1024)
            # the guarantee (docs/configuration.md): once the total is reached,
            # a connection below its share may still fill its share, so the
            # sum stays under twice the bound, plus one answer per connection
            self.assertLessEqual(queued, 2 * 1024 * 1024 + 8 * 16 * 1024)
            for a in socks:
                a.close()
            self.assertEqual(output_drained(s), True)
        finally:
            self.assertEqual(s.stop(), 0)


    def test_resp_pipeline_bounded(self):
        """RESP: COMMAND DOCS (2.7 KB for 14 bytes) pipelined without reading."""
        s = start(workers=1, limits="  idle_timeout: 30s\n  max_pending_output: 64KiB")
        try:
            a = non_reader(s.resp_port)
            # replies for more than the kernel's socket buffers take (2.7 KB each)
            send_all(a, b"COMMAND DOCS\r\n" * overfill(2700))
            self.assertTrue(reads_paused(s))
            self.assertLessEqual(metric(s, "sluice_pending_output_bytes"), 64 * 1024 + 16 * 1024)
            a.close()
        finally:
            self.assertEqual(s.stop(), 0)


class Timeouts(unittest.TestCase):
    """Item 5: a partial request or command has its own deadline."""

    def test_held_back_command_waits_without_spinning(self):
        """A RESP connection held back (its replies not read) keeps its
        partial command in sluiced. Its deadline stops while it waits on us,
        and its timer must not fire every millisecond once the deadline has
        passed: sluiced stays idle."""
        N = 200
        s = start(workers=1, limits="  idle_timeout: 60s\n  command_timeout: 1s\n"
                                    "  max_pending_output: 4KiB")
        try:
            conns = []
            for _ in range(N):
                a = non_reader(s.resp_port)
                # more than the socket buffers take, then half a command
                send_all(a, b"COMMAND DOCS\r\n" * 1500 + b"*2\r\n$4\r\nECHO\r\n")
                conns.append(a)
            # every connection held back, and done with what it could write:
            # the pause count stands still
            last = [None]

            def settled():
                n = metric(s, "sluice_read_pauses_total")
                done, last[0] = n >= N and n == last[0], n
                return done

            self.assertTrue(poll(settled, within=240, step=0.5))
            time.sleep(1.5)  # past every command_timeout: time must pass here
            ticks = os.sysconf("SC_CLK_TCK")

            def cpu():
                with open("/proc/%d/stat" % s.proc.pid) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / ticks

            c0, t0 = cpu(), time.monotonic()
            time.sleep(2)
            used, wall = cpu() - c0, time.monotonic() - t0
            print("  %.2f s of CPU in %.2f s with %d connections held back" % (used, wall, N))
            # spinning (a timer every ms for each): 5 % of a core in a
            # release build, more under a sanitizer; waiting: nothing
            self.assertLess(used, 0.02 * wall)
            for a in conns:
                a.close()
        finally:
            self.assertEqual(s.stop(), 0)

    def trickle(self, port, data, until):
        """Sends data a byte every 0.2 s until the server answers; returns
        (answer, seconds from the first byte)."""
        c = socket.create_connection(("127.0.0.1", port), timeout=20)
        t0 = time.monotonic()
        got = b""
        i = 0
        while time.monotonic() - t0 < 20:
            if i < len(data):
                try:
                    c.sendall(data[i:i + 1])
                except OSError:
                    break
                i += 1
            r, _, _ = select.select([c], [], [], 0.2)
            if r:
                try:
                    chunk = c.recv(4096)
                except ConnectionResetError:
                    break
                if not chunk:
                    break
                got += chunk
                if until in got:
                    break
        elapsed = time.monotonic() - t0
        c.close()
        return got, elapsed

    def test_http_head_trickled_gets_408_at_header_timeout(self):
        # idle_timeout is 30 s: the answer must come from header_timeout (1 s)
        s = start(limits="  idle_timeout: 30s\n  header_timeout: 1s")
        try:
            head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
            got, elapsed = self.trickle(s.http_port, head, b"\r\n\r\n")
            self.assertTrue(got.startswith(b"HTTP/1.1 408"), got)
            self.assertLess(elapsed, 10)
            # on a keep-alive connection the deadline starts with the request
            c = socket.create_connection(("127.0.0.1", s.http_port), timeout=20)
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(read_response(c)[0], 200)
            c.sendall(b"GET /healthz HTTP/1.1\r\n")
            t0 = time.monotonic()
            st, h, _, _ = read_response(c)
            self.assertEqual(st, 408)
            self.assertEqual(h["connection"], "close")
            self.assertLess(time.monotonic() - t0, 10)
            c.close()
        finally:
            self.assertEqual(s.stop(), 0)

    def test_resp_command_trickled_gets_an_error_at_command_timeout(self):
        s = start(limits="  idle_timeout: 30s\n  command_timeout: 1s")
        try:
            cmd = b"*2\r\n$4\r\nECHO\r\n$500\r\n" + b"x" * 500 + b"\r\n"
            got, elapsed = self.trickle(s.resp_port, cmd, b"\r\n")
            self.assertTrue(got.startswith(b"-ERR command timeout"), got)
            self.assertLess(elapsed, 10)
            # a command sent whole is answered as usual
            c = socket.create_connection(("127.0.0.1", s.resp_port), timeout=10)
            c.sendall(b"PING\r\n")
            self.assertEqual(c.recv(100), b"+PONG\r\n")
            c.close()
        finally:
            self.assertEqual(s.stop(), 0)


def accept_warnings(server):
    """The accept warnings in the log: (lines, failures they count)."""
    counts = [int(n) for n in re.findall(r"accept: .*?\((\d+) times? since", server.log_text())]
    return len(counts), sum(counts)


def fds_of(pid):
    out = {}
    d = "/proc/%d/fd" % pid
    for name in os.listdir(d):
        try:
            out[int(name)] = os.readlink(os.path.join(d, name))
        except OSError:
            pass
    return out


class FdLimit(unittest.TestCase):
    """Item 4: at the file-descriptor limit a worker keeps serving."""

    def kept_alive(self, s, n=40):
        """n keep-alive connections to s, each answered 200 to GET /healthz."""
        keep = []
        for _ in range(n):
            c = socket.create_connection(("127.0.0.1", s.http_port), timeout=10)
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(read_response(c)[0], 200)
            keep.append(c)
        return keep

    def test_existing_connections_served_and_recovery(self):
        s = start(workers=1)
        try:
            pid = s.proc.pid
            keep = self.kept_alive(s)
            soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
            # No descriptor below the limit is free, and the ones kept for
            # EMFILE (libuv's, sluiced's: /dev/null) are above it: closing
            # them frees nothing usable, as when another thread took it.
            fds = fds_of(pid)
            low = min(n for n, t in fds.items() if n > 2 and t == "/dev/null")
            self.assertTrue(all(n in fds for n in range(low)), fds)
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (low, hard))
            t0 = time.time()
            waiting = []
            try:
                for _ in range(30):
                    w = socket.socket()
                    w.settimeout(10)
                    w.connect(("127.0.0.1", s.http_port))  # completes in the backlog
                    w.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    waiting.append(w)
                # the worker has met EMFILE and said so (polled, not a fixed
                # sleep: a busy machine may take a while to get there)
                self.assertTrue(poll(lambda: accept_warnings(s)[0] > 0, within=30),
                                tail(s.log_text()))
                # existing connections are still served
                for c in keep:
                    c.sendall(b"GET /v1/check?policy=api&key=k HTTP/1.1\r\nHost: x\r\n\r\n")
                for c in keep:
                    self.assertEqual(read_response(c)[0], 200)
                lines, failures = accept_warnings(s)
                self.assertLessEqual(lines, int(time.time() - t0) + 2)
                self.assertLess(failures, 1000)  # a worker spinning on accept: millions
            finally:
                resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
            # recovery: descriptors are there again; the waiting connections
            # are accepted and answered, and new ones too
            for w in waiting:
                st, _, _, _ = read_response(w)
                self.assertIn(st, (200, 503))
                w.close()
            for c in keep:
                c.close()
            n = socket.create_connection(("127.0.0.1", s.http_port), timeout=10)
            n.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(read_response(n)[0], 200)
            n.close()
            self.assertGreater(metric(s, "sluice_accept_errors_total"), 0)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_started_with_few_descriptors(self):
        """prlimit --nofile=N: 40 keep-alive connections, then 300 more."""
        limit = 96
        s = start(workers=2,
                  preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)))
        try:
            keep = self.kept_alive(s)
            t0 = time.time()
            more = []
            for _ in range(300):
                m = socket.socket()
                m.settimeout(10)
                try:
                    m.connect(("127.0.0.1", s.http_port))
                except OSError:
                    m.close()
                    continue
                more.append(m)
            for c in keep:
                c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            for c in keep:
                self.assertEqual(read_response(c)[0], 200)
            # the ones beyond the limit are refused or closed, not left hanging
            served = refused = 0
            for m in more:
                try:
                    m.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    data = read_to_eof(m)
                except (ConnectionResetError, BrokenPipeError):
                    data = b""
                except socket.timeout:
                    data = None
                if data is None:
                    continue  # accepted and kept open: it is being served
                if data.startswith(b"HTTP/1.1 200"):
                    served += 1
                else:
                    refused += 1
            self.assertGreater(refused, 0)
            lines, failures = accept_warnings(s)
            self.assertLessEqual(lines, int(time.time() - t0) + 2)
            self.assertLess(failures, 1000)  # a worker spinning on accept: millions
            for m in more:
                m.close()
            for c in keep:
                c.close()
            # recovery
            def ok():
                try:
                    n = socket.create_connection(("127.0.0.1", s.http_port), timeout=5)
                    n.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    good = read_response(n)[0] == 200
                    n.close()
                    return good
                except (OSError, EOFError):
                    return False
            self.assertTrue(poll(ok, within=10, step=0.2))
        finally:
            self.assertEqual(s.stop(), 0)


class Drain(unittest.TestCase):
    """Item 12: SIGTERM answers what has arrived, with Connection: close."""

    def test_requests_in_socket_buffers_of_idle_connections(self):
        """Whether the workers read these before or after they start to
        drain is a race (answers before it say keep-alive); either way each
        is answered whole and ends cleanly. The exact moment (unread at the
        start of the drain) is tested on a stepped loop in test_conn.c."""
        s = start(workers=2)
        conns = []
        for _ in range(100):
            c = socket.create_connection(("127.0.0.1", s.http_port), timeout=15)
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(read_response(c)[0], 200)
            conns.append(c)
        # the requests are in the socket buffers, not read yet, at SIGTERM
        s.proc.send_signal(signal.SIGSTOP)
        try:
            for c in conns:
                c.sendall(b"GET /v1/check?policy=api&key=drain HTTP/1.1\r\nHost: x\r\n\r\n")
            s.proc.send_signal(signal.SIGTERM)
        finally:
            s.proc.send_signal(signal.SIGCONT)
        closes = 0
        for c in conns:
            try:
                st, h, body, rest = read_response(c)
                rest += read_to_eof(c)
            except ConnectionResetError:
                self.fail("a request that had arrived got a reset")
            self.assertEqual(st, 200)
            self.assertIn(b'"allowed":true', body)
            self.assertEqual(rest, b"")  # then a clean end
            closes += h["connection"] == "close"
            c.close()
        self.assertEqual(s.proc.wait(15), 0)
        s.log.close()
        print("drain: %d of %d answers said Connection: close" % (closes, len(conns)),
              file=sys.stderr)

    def test_requests_behind_held_back_output(self):
        """A client pipelines more than its output bound allows without
        reading: the rest of its requests wait in sluiced and in the socket
        buffer when SIGTERM comes. All are answered, the last one with
        Connection: close."""
        # a drain that outlasts reading them all on a slow (sanitized, loaded) machine
        s = start(workers=1, limits="  idle_timeout: 30s\n  drain_timeout: 1h")
        req = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
        # answers (6 KB each) for more than the socket buffers take, from
        # more than one read of requests
        n = max(3000, (4 * kernel_send_buffer()) // 6000)
        c = socket.socket()
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.settimeout(15)
        c.connect(("127.0.0.1", s.http_port))
        c.sendall(req * n)
        time.sleep(0.3)
        s.proc.send_signal(signal.SIGTERM)
        self.assertTrue(poll(lambda: "draining" in s.log_text()))
        time.sleep(0.3)
        buf = b""
        got = []
        try:
            for _ in range(n):
                st, h, body, buf = read_response(c, buf)
                got.append((st, h["connection"]))
            buf += read_to_eof(c)
        except ConnectionResetError:
            self.fail("reset after %d answers" % len(got))
        except EOFError:
            self.fail("closed after %d answers of %d" % (len(got), n))
        self.assertEqual(len(got), n)
        self.assertTrue(all(st == 200 for st, _ in got))
        self.assertEqual(got[-1][1], "close")
        self.assertTrue(all(conn == "keep-alive" for _, conn in got[:-1]))
        self.assertEqual(buf, b"")
        c.close()
        self.assertEqual(s.proc.wait(15), 0)
        s.log.close()


if __name__ == "__main__":
    sluiced_test.main()
