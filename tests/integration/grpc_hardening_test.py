#!/usr/bin/env python3
"""grpc_hardening_test.py SLUICED SOURCE_DIR: the gRPC listener under attack.

Starts the real sluiced (Server from conn_test.py / sluiced_test.py) and
talks raw HTTP/2 to its gRPC port, frames written by hand (client preface,
SETTINGS, HEADERS with HPACK literals without indexing, DATA with a gRPC
message):
- Deadlines: a trickled preface or frame gets a GOAWAY and a close after
  limits.header_timeout (not after idle_timeout, or never); streams the
  client never ends are answered and reset (CANCEL) after header_timeout,
  the connection goes on; past SETTINGS_MAX_CONCURRENT_STREAMS new streams
  are refused;
- OutputBounds: a client that never reads (TCP) or never opens its
  flow-control window (WINDOW_UPDATE) gets at most limits.max_pending_output
  (and one answer) queued;
- Floods: more than 1000 PINGs in a second, or a CONTINUATION flood, end in
  a GOAWAY; the unfinished messages of a connection's streams hold at most
  2 x limits.max_body_bytes; a header list over limits.max_header_bytes
  resets its stream and the connection goes on.
Standard library only."""
import select
import socket
import struct
import sys
import time
import unittest

import conn_test
import harness
import sluiced_test

HEALTH = "/grpc.health.v1.Health/Check"
RLS = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = (
    0, 1, 3, 4, 6, 7, 8, 9)
END_STREAM, END_HEADERS, ACK = 1, 4, 1
CANCEL, REFUSED_STREAM = 8, 7
NAMES = 16  # limited descriptors in one request (sluiced's maximum)
LONG = "r" * 200  # a rule name: each status of the answer carries it

CONFIG = harness.config_head(1, grpc=True) + """
store:
  type: memory
  max_memory: 16MiB
domains: rules.yaml
limits:
{limits}
"""

RULES = "domain: h\ndescriptors:\n" + "".join(
    "  - key: k%d\n    rate_limit:\n      unit: second\n      requests_per_unit: 1000000000\n"
    "      name: %s%d\n" % (i, LONG, i) for i in range(NAMES))


class Server(conn_test.Server):
    def __init__(self, limits):
        _, rules = harness.temp_file("sluiced-grpc-rules-", "rules.yaml", RULES)
        super().__init__(CONFIG.replace("{limits}", limits).replace(
            "domains: rules.yaml", "domains: " + rules))
        assert self.grpc_port is not None, "no gRPC listener in sluiced's log"


def start(limits):
    return Server(limits)


# ---- HTTP/2 by hand --------------------------------------------------------------

def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", sid) + payload


def hpack_int(n, prefix_bits, first=0):
    limit = (1 << prefix_bits) - 1
    if n < limit:
        return bytes([first | n])
    out = [first | limit]
    n -= limit
    while n >= 128:
        out.append((n & 127) | 128)
        n >>= 7
    out.append(n)
    return bytes(out)


def literal(name, value):
    """A header field as a literal without indexing, new name, no Huffman."""
    name, value = name.encode(), value.encode() if isinstance(value, str) else value
    return b"\x00" + hpack_int(len(name), 7) + name + hpack_int(len(value), 7) + value


def request_block(path, extra=()):
    fields = [(":method", "POST"), (":scheme", "http"), (":path", path),
              (":authority", "sluice"), ("content-type", "application/grpc"),
              ("te", "trailers")] + list(extra)
    return b"".join(literal(k, v) for k, v in fields)


def pb_field(tag, data):
    return bytes([tag]) + hpack_varint(len(data)) + data


def hpack_varint(n):
    out = b""
    while True:
        b = n & 127
        n >>= 7
        if n:
            out += bytes([b | 128])
        else:
            return out + bytes([b])


def rls_message():
    """RateLimitRequest{domain: "h", descriptors: k0..k15 = "v"}, gRPC framed."""
    msg = pb_field(0x0a, b"h")
    for i in range(NAMES):
        entry = pb_field(0x0a, b"k%d" % i) + pb_field(0x12, b"v")
        msg += pb_field(0x12, pb_field(0x0a, entry))
    return b"\x00" + struct.pack(">I", len(msg)) + msg


def grpc_message(msg=b""):
    return b"\x00" + struct.pack(">I", len(msg)) + msg


def request(sid, path=HEALTH, msg=None):
    """HEADERS + DATA (END_STREAM) of a whole unary call."""
    body = grpc_message() if msg is None else msg
    return frame(HEADERS, END_HEADERS, sid, request_block(path)) + \
        frame(DATA, END_STREAM, sid, body)


def start_bytes(settings=b""):
    return PREFACE + frame(SETTINGS, 0, 0, settings)


class Frames:
    """Reads the server's frames from a socket."""

    def __init__(self, sock):
        self.sock, self.buf, self.eof = sock, b"", False

    def pump(self, timeout):
        """Reads what arrives within timeout; returns the complete frames."""
        out = []
        end = time.monotonic() + timeout
        while not self.eof:
            left = end - time.monotonic()
            r, _, _ = select.select([self.sock], [], [], max(0, left))
            if r:
                try:
                    chunk = self.sock.recv(1 << 16)
                except BlockingIOError:
                    continue
                except ConnectionResetError:
                    chunk = b""
                if not chunk:
                    self.eof = True
                self.buf += chunk
            while len(self.buf) >= 9:
                n = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) < 9 + n:
                    break
                ftype, flags = self.buf[3], self.buf[4]
                sid = int.from_bytes(self.buf[5:9], "big") & 0x7fffffff
                out.append((ftype, flags, sid, self.buf[9:9 + n]))
                self.buf = self.buf[9 + n:]
            if not r or left <= 0:
                break
        return out


def goaway_or_eof(frames, reader):
    return reader.eof or any(f[0] == GOAWAY for f in frames)


def health_ok(server):
    """A whole Health/Check on a connection of its own: its answer's DATA
    and trailers arrive."""
    c = socket.create_connection(("127.0.0.1", server.grpc_port), timeout=10)
    c.sendall(start_bytes() + frame(SETTINGS, ACK, 0) + request(1))
    reader, got = Frames(c), []
    end = time.monotonic() + 10
    while time.monotonic() < end and not reader.eof:
        got += reader.pump(0.2)
        if any(f[0] == HEADERS and f[2] == 1 and f[1] & END_STREAM for f in got):
            break
    c.close()
    return any(f[0] == DATA and f[2] == 1 for f in got) and \
        any(f[0] == HEADERS and f[2] == 1 and f[1] & END_STREAM for f in got)


metric = conn_test.metric
poll = conn_test.poll


class Deadlines(unittest.TestCase):
    """A partial request has a deadline from its first byte (header_timeout)."""

    LIMITS = "  idle_timeout: 30s\n  header_timeout: 1s"

    def trickle(self, port, data, step=0.25, budget=12):
        """Sends data a byte every step seconds until the server sends a
        GOAWAY or closes; returns (closed, seconds from the first byte)."""
        c = socket.create_connection(("127.0.0.1", port), timeout=20)
        reader = Frames(c)
        t0 = time.monotonic()
        i, closed = 0, False
        while time.monotonic() - t0 < budget:
            try:
                c.sendall(data[i % len(data):i % len(data) + 1])
            except OSError:
                closed = True
                break
            i += 1
            if goaway_or_eof(reader.pump(step), reader):
                closed = True
                break
        elapsed = time.monotonic() - t0
        c.close()
        return closed, elapsed

    def test_preface_trickled(self):
        s = start(self.LIMITS)
        try:
            # the preface and SETTINGS (then PINGs), a byte every 0.25 s:
            # idle_timeout (30 s) never passes
            data = start_bytes() + frame(PING, 0, 0, b"12345678") * 10
            closed, elapsed = self.trickle(s.grpc_port, data)
            self.assertTrue(closed, "still open after %.1f s" % elapsed)
            self.assertLess(elapsed, 8)
            self.assertTrue(health_ok(s))
        finally:
            self.assertEqual(s.stop(), 0)

    def test_frame_trickled(self):
        s = start(self.LIMITS)
        try:
            # a HEADERS frame a byte at a time, after a whole preface
            data = frame(HEADERS, END_HEADERS, 1, request_block(HEALTH, [("x-pad", "p" * 60)]))
            c = socket.create_connection(("127.0.0.1", s.grpc_port), timeout=20)
            c.sendall(start_bytes() + frame(SETTINGS, ACK, 0))
            reader = Frames(c)
            t0 = time.monotonic()
            closed = False
            for i in range(len(data)):
                c.sendall(data[i:i + 1])
                if goaway_or_eof(reader.pump(0.25), reader):
                    closed = True
                    break
                if time.monotonic() - t0 > 12:
                    break
            elapsed = time.monotonic() - t0
            c.close()
            self.assertTrue(closed, "still open after %.1f s" % elapsed)
            self.assertLess(elapsed, 8)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_streams_never_ended(self):
        """128 streams opened (SETTINGS_MAX_CONCURRENT_STREAMS), none ended:
        all are answered and reset (CANCEL) after header_timeout while the
        client keeps the connection busy; then the connection serves a whole
        call."""
        s = start(self.LIMITS)
        try:
            c = socket.create_connection(("127.0.0.1", s.grpc_port), timeout=20)
            opened = [1 + 2 * i for i in range(128)]
            c.sendall(start_bytes() + frame(SETTINGS, ACK, 0) + b"".join(
                frame(HEADERS, END_HEADERS, sid, request_block(HEALTH)) for sid in opened))
            reader = Frames(c)
            got = []
            t0 = time.monotonic()
            cancelled = set()
            while time.monotonic() - t0 < 12 and len(cancelled) < 128:
                # a little DATA on the first stream, whole frames: the
                # connection is never idle, no frame is left partial
                c.sendall(frame(DATA, 0, 1, b"\x00"))
                got += reader.pump(0.2)
                cancelled = {f[2] for f in got
                             if f[0] == RST_STREAM and f[3] == struct.pack(">I", CANCEL)}
            elapsed = time.monotonic() - t0
            self.assertFalse(reader.eof)
            self.assertEqual(cancelled, set(opened),
                             "%d of 128 reset after %.1f s" % (len(cancelled), elapsed))
            self.assertLess(elapsed, 10)
            # each was answered (Trailers-Only) before its reset
            answered = {f[2] for f in got if f[0] == HEADERS and f[1] & END_STREAM}
            self.assertEqual(answered, set(opened))
            # the connection goes on
            c.sendall(request(301))
            more = []
            end = time.monotonic() + 10
            while time.monotonic() < end and not any(
                    f[0] == HEADERS and f[2] == 301 and f[1] & END_STREAM for f in more):
                more += reader.pump(0.2)
            self.assertTrue(any(f[0] == DATA and f[2] == 301 for f in more), more)
            self.assertFalse(reader.eof)
            c.close()
            self.assertGreaterEqual(metric(s, "sluice_timeouts_total"), 128)
        finally:
            self.assertEqual(s.stop(), 0)


class OutputBounds(unittest.TestCase):
    """Answers a client does not take are bounded (limits.max_pending_output)."""

    BOUND = 64 * 1024
    LIMITS = "  idle_timeout: 30s\n  max_pending_output: 64KiB"

    def settled_pending(self, s):
        """Once the connection has stopped being read: the bytes queued."""
        self.assertTrue(conn_test.reads_paused(s))
        time.sleep(0.5)
        return metric(s, "sluice_pending_output_bytes")

    def test_calls_without_reading(self):
        """RLS calls whose answers are 17 times their size (16 statuses with
        a 200-byte rule name), sent without reading: the connection stops
        being read with at most the bound and one answer queued, not the
        answers to a whole read (up to 128 of them)."""
        s = start(self.LIMITS)
        try:
            a = conn_test.non_reader(s.grpc_port)
            msg = rls_message()
            # no flow control in the way: every answer goes to the socket
            big = struct.pack(">HI", 4, (1 << 31) - 1)  # SETTINGS_INITIAL_WINDOW_SIZE
            head = start_bytes(big) + frame(SETTINGS, ACK, 0) + \
                frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", (1 << 31) - 1 - 65535))
            answer = 16 * (len(LONG) + 20)
            n = conn_test.overfill(answer)
            calls = b"".join(request(1 + 2 * i, RLS, msg) for i in range(n))
            conn_test.send_all(a, head + calls, deadline=5)
            queued = self.settled_pending(s)
            print("gRPC calls without reading: %d bytes queued (bound %d)" % (queued, self.BOUND),
                  file=sys.stderr)
            self.assertLessEqual(queued, self.BOUND + 16 * 1024)
            # others are served meanwhile
            self.assertTrue(health_ok(s))
            a.close()
            self.assertEqual(conn_test.output_drained(s), True)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_no_window_update(self):
        """The client reads, but never opens its flow-control window: the
        answers nghttp2 keeps for it count in the pending output, stop at the
        bound (new streams refused), and all go once the window opens."""
        s = start(self.LIMITS)
        try:
            c = socket.create_connection(("127.0.0.1", s.grpc_port), timeout=20)
            msg = rls_message()
            c.sendall(start_bytes() + frame(SETTINGS, ACK, 0))
            reader = Frames(c)
            got = []
            sids = [1 + 2 * i for i in range(120)]
            for sid in sids:
                c.sendall(request(sid, RLS, msg))
                got += reader.pump(0)
            # 64 KiB of DATA pass (the default window); then answers wait
            held = poll(lambda: (got.extend(reader.pump(0.05)) or
                                 (metric(s, "sluice_pending_output_bytes") or 0) >= 32 * 1024)
                        or None, within=20)
            queued = metric(s, "sluice_pending_output_bytes")
            print("gRPC answers held by flow control: %d bytes (bound %d)" % (queued, self.BOUND),
                  file=sys.stderr)
            self.assertTrue(held, "pending output %r" % queued)
            self.assertLessEqual(queued, self.BOUND + 16 * 1024)
            got += reader.pump(0.5)
            refused = {f[2] for f in got
                       if f[0] == RST_STREAM and f[3] == struct.pack(">I", REFUSED_STREAM)}
            self.assertTrue(refused, "no stream refused")
            # the window opens: every stream that was not refused is answered
            c.sendall(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1 << 30)))
            answered = set()
            end = time.monotonic() + 20
            want = set(sids) - refused
            while time.monotonic() < end and answered != want:
                got += reader.pump(0.2)
                answered = {f[2] for f in got if f[0] == HEADERS and f[1] & END_STREAM}
            self.assertEqual(answered, want)
            self.assertEqual(conn_test.output_drained(s), True)
            c.sendall(request(1001, RLS, msg))
            more = []
            end = time.monotonic() + 10
            while time.monotonic() < end and not any(
                    f[0] == HEADERS and f[2] == 1001 and f[1] & END_STREAM for f in more):
                more += reader.pump(0.2)
            self.assertTrue(any(f[0] == DATA and f[2] == 1001 for f in more))
            c.close()
        finally:
            self.assertEqual(s.stop(), 0)


class Floods(unittest.TestCase):
    """Control-frame floods, nghttp2's flood limits and the header list
    bound, on the real server."""

    LIMITS = "  idle_timeout: 30s\n  max_header_bytes: 8KiB"

    def test_ping_flood(self):
        """A client that reads its PING ACKs: a hundred PINGs are answered,
        more than 1000 in a second get a GOAWAY (ENHANCE_YOUR_CALM)."""
        s = start(self.LIMITS)
        try:
            c = socket.create_connection(("127.0.0.1", s.grpc_port), timeout=20)
            reader = Frames(c)
            ping = frame(PING, 0, 0, b"12345678")
            c.sendall(start_bytes() + frame(SETTINGS, ACK, 0) + ping * 100)
            got = []
            end = time.monotonic() + 10
            while time.monotonic() < end and \
                    sum(f[0] == PING and f[1] & ACK for f in got) < 100:
                got += reader.pump(0.2)
            self.assertEqual(sum(f[0] == PING and f[1] & ACK for f in got), 100)
            self.assertFalse(any(f[0] == GOAWAY for f in got))
            time.sleep(1.1)
            try:
                c.sendall(ping * 3000)
            except OSError:
                pass
            end = time.monotonic() + 10
            while time.monotonic() < end and not reader.eof:
                got += reader.pump(0.2)
            goaway = [f for f in got if f[0] == GOAWAY]
            self.assertTrue(goaway and reader.eof, "no GOAWAY and close")
            self.assertEqual(struct.unpack(">I", goaway[0][3][4:8])[0], 11)  # ENHANCE_YOUR_CALM
            c.close()
            self.assertTrue(health_ok(s))
        finally:
            self.assertEqual(s.stop(), 0)

    def test_unfinished_messages_bounded(self):
        """Four streams each send a 12 KB message and wait before ending:
        the connection's streams hold at most 2 x max_body_bytes (32 KiB),
        so the third and fourth are dropped (RESOURCE_EXHAUSTED, no DATA),
        the first two answered; then the connection serves a new call."""
        s = start("  idle_timeout: 30s\n  max_body_bytes: 16KiB")
        try:
            c = socket.create_connection(("127.0.0.1", s.grpc_port), timeout=20)
            entry = pb_field(0x0a, b"k") + pb_field(0x12, b"v")
            msg = pb_field(0x0a, b"d" * 12000) + pb_field(0x12, pb_field(0x0a, entry))
            body = b"\x00" + struct.pack(">I", len(msg)) + msg
            sids = [1, 3, 5, 7]
            data = start_bytes() + frame(SETTINGS, ACK, 0)
            for sid in sids:
                data += frame(HEADERS, END_HEADERS, sid, request_block(RLS)) + \
                    frame(DATA, 0, sid, body)
            c.sendall(data)
            reader = Frames(c)
            got = reader.pump(0.3)
            c.sendall(b"".join(frame(DATA, END_STREAM, sid) for sid in sids))
            end = time.monotonic() + 10
            while time.monotonic() < end and len(
                    {f[2] for f in got if f[0] == HEADERS and f[1] & END_STREAM}) < 4:
                got += reader.pump(0.2)
            ended = {f[2] for f in got if f[0] == HEADERS and f[1] & END_STREAM}
            with_data = {f[2] for f in got if f[0] == DATA and f[3]}
            self.assertEqual(ended, set(sids))
            self.assertEqual(with_data, {1, 3})
            c.sendall(frame(HEADERS, END_HEADERS, 9, request_block(RLS)) +
                      frame(DATA, END_STREAM, 9, body))
            end = time.monotonic() + 10
            while time.monotonic() < end and not any(
                    f[0] == HEADERS and f[2] == 9 and f[1] & END_STREAM for f in got):
                got += reader.pump(0.2)
            self.assertTrue(any(f[0] == DATA and f[2] == 9 for f in got))
            c.close()
        finally:
            self.assertEqual(s.stop(), 0)

    def test_continuation_flood(self):
        s = start(self.LIMITS)
        try:
            c = socket.create_connection(("127.0.0.1", s.grpc_port), timeout=20)
            block = request_block(HEALTH)
            data = start_bytes() + frame(SETTINGS, ACK, 0) + frame(HEADERS, 0, 1, block[:10])
            data += b"".join(frame(CONTINUATION, 0, 1, block[10 + i:11 + i]) for i in range(40))
            c.sendall(data)
            reader = Frames(c)
            got = []
            end = time.monotonic() + 10
            while time.monotonic() < end and not reader.eof:
                got += reader.pump(0.2)
            goaway = [f for f in got if f[0] == GOAWAY]
            self.assertTrue(goaway, got)
            self.assertTrue(reader.eof)
            c.close()
            self.assertTrue(health_ok(s))
        finally:
            self.assertEqual(s.stop(), 0)

    def test_header_list_over_the_bound(self):
        s = start(self.LIMITS)
        try:
            c = socket.create_connection(("127.0.0.1", s.grpc_port), timeout=20)
            block = request_block(HEALTH, [("x-big", "b" * 12000)])
            data = start_bytes() + frame(SETTINGS, ACK, 0) + \
                frame(HEADERS, 0, 1, block[:8000]) + \
                frame(CONTINUATION, END_HEADERS, 1, block[8000:]) + \
                frame(DATA, END_STREAM, 1, grpc_message()) + request(3)
            c.sendall(data)
            reader = Frames(c)
            got = []
            end = time.monotonic() + 10
            while time.monotonic() < end and not any(
                    f[0] == HEADERS and f[2] == 3 and f[1] & END_STREAM for f in got):
                got += reader.pump(0.2)
            self.assertTrue(any(f[0] == RST_STREAM and f[2] == 1 for f in got), got)
            self.assertFalse(any(f[0] == DATA and f[2] == 1 for f in got))
            self.assertTrue(any(f[0] == DATA and f[2] == 3 for f in got), got)
            c.close()
        finally:
            self.assertEqual(s.stop(), 0)


if __name__ == "__main__":
    sluiced_test.main()
