"""harness.py: the small helpers the integration tests share, in one place.
Standard library only; it imports no test file (sluiced itself is started by
sluiced_test.Server, which the other unittest files import from there).

- free_port, wait_port: loopback ports;
- spawn, die_with_parent, run, stop_process, stop_checked, wait_listening:
  processes that die with the test run, a program run to its end (status
  and output), processes stopped with a signal then killed (stop_checked:
  and what went wrong, a sanitizer report (SANITIZER_MARKS) included), and
  sluiced's ports read from its log ("listening http on 127.0.0.1:PORT" ...
  "ready");
- RedisServer, wait_ping, proc_state, private_redis: a redis-server of a
  test's own on a free port (waited for by PING, restarted on its port,
  killed, paused: state T), one for the whole run;
- temp_file, private_store, config_head, redis_store: a file (keys, rules,
  a config) in a temporary directory of its own, and the parts of a test's
  sluiced config: the store section of a private_redis, the `listen:` and
  `workers:` lines, the store YAML for a redis-server's port;
- Resp, RespError, resp_call, parse_info: a RESP2 client of the tests' own
  (redis-server, Redis Cluster nodes, sluiced's RESP listener) and INFO text;
- curl, parse_head, read_response, read_to_eof, raw, Pipe: HTTP with curl -i
  and on raw sockets;
- serve_http: a threaded HTTP server of a test's own (an upstream, a script);
- poll, wait_until: waiting for a state the servers reach in their own time
  (a fixed sleep races them on a loaded machine); in_one_window: a burst
  counted in a short fixed window, kept inside one window of the clock;
  window_room: a case counted in an hourly window started with a minute of
  it left at least;
- metric: one sample of /metrics text; tail: the last lines of a log;
- nginx_path, nginx_main: the nginx binary to run, and the main config of
  one in a test's own directory;
- select_tests, run_tests: the main loop of the scripts that are not unittest
  (distributed_test.py, redis_store_test.py)."""
import atexit
import ctypes
import http.server
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import traceback

HOST = "127.0.0.1"


# ---- ports ------------------------------------------------------------------------------

def free_port():
    """An ephemeral loopback port that was free a moment ago (the usual race:
    whoever binds it next wins; the servers fail loudly if they lose)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, within=10, step=0.05, proc=None):
    """Polls until a connection to the loopback port succeeds (True); False
    after `within` seconds, or at once when the process `proc` has exited."""
    deadline = time.time() + within
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            if time.time() > deadline or (proc is not None and proc.poll() is not None):
                return False
            time.sleep(step)


# ---- processes --------------------------------------------------------------------------

SETPRIV = shutil.which("setpriv")
_PR_SET_PDEATHSIG = 1
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover
    _libc = None


def die_with_parent():
    """A preexec_fn (runs in the child between fork and exec): the child gets
    SIGKILL when this Python process dies (a ctest timeout kills it with no
    atexit). Only for a process with one thread; spawn() is for the others."""
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def spawn(cmd, log, procs=None, env=None, preexec_fn=None):
    """Starts cmd with stdout and stderr to the open file log (stdin closed)
    and appends it to the list procs, if given. With setpriv (util-linux) the
    child gets SIGKILL if this script dies, so nothing outlives a killed test
    run; no preexec_fn of its own, so it is safe from a process with threads
    (unless the caller passes one: conn_test.py's limits). env: the child's
    environment (default: this one's)."""
    if SETPRIV:
        cmd = [SETPRIV, "--pdeathsig", "KILL", "--"] + list(cmd)
    p = subprocess.Popen(cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env,
                         preexec_fn=preexec_fn)
    if procs is not None:
        procs.append(p)
    return p


def run(*argv, timeout=60):
    """Runs argv to its end (a bound of timeout s against a hang); returns
    (exit status, stdout, stderr) as text."""
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def stop_process(proc, sig=signal.SIGTERM, timeout=10):
    """Sends sig to proc if it still runs and waits up to timeout s for it to
    exit, then kills it. Returns True when it exited (or had exited) on its
    own, False when it had to be killed."""
    if proc.poll() is not None:
        return True
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return False


SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "runtime error:", "ThreadSanitizer")


def stop_checked(proc, log_path, name="sluiced", timeout=20):
    """Stops proc (SIGTERM, killed after timeout s) and returns what went
    wrong, as messages (none when all is well): it had exited before, did
    not exit in time or not with 0, or its log has a sanitizer report."""
    problems = []
    if proc.poll() is not None:
        problems.append("%s had exited with %s before the end of the test"
                        % (name, proc.returncode))
    else:
        if not stop_process(proc, signal.SIGTERM, timeout):
            problems.append("%s did not exit within %d s of SIGTERM" % (name, timeout))
        if proc.returncode != 0:
            problems.append("%s exited with %s on SIGTERM" % (name, proc.returncode))
    with open(log_path, errors="replace") as f:
        text = f.read()
    if any(mark in text for mark in SANITIZER_MARKS):
        problems.append("%s: sanitizer report in its log:\n%s" % (name, tail(text, 80)))
    return problems


def wait_listening(proc, log_path, protos=("http", "resp"), within=20, name="sluiced"):
    """Polls the log of proc (sluiced, or what logs the same way) until it has
    said "listening PROTO on HOST:PORT" for each of protos and then "ready";
    returns {proto: port}. Raises RuntimeError (with the log's end) when proc
    exits first or after within s."""
    deadline = time.time() + within
    text = ""
    while time.time() < deadline:
        with open(log_path, errors="replace") as f:
            text = f.read()
        ports = {}
        for proto in protos:
            m = re.search(r"listening %s on \S+:(\d+)" % proto, text)
            if m:
                ports[proto] = int(m.group(1))
        if len(ports) == len(protos) and re.search(r"\bready\b", text):
            return ports
        if proc.poll() is not None:
            raise RuntimeError("%s exited early (%s):\n%s" % (name, proc.returncode, tail(text, 80)))
        time.sleep(0.03)
    raise RuntimeError("%s did not start within %d s:\n%s" % (name, within, tail(text, 80)))


# ---- a redis-server of our own ----------------------------------------------------------

class RedisServer:
    """redis-server on a free loopback port (or the one given), no persistence,
    spawned (it dies with the test run, and joins procs if given), started and
    waited for (PING) before the constructor returns: on another free port
    when the one picked was taken meanwhile, RuntimeError with its log's end
    when it does not answer. In a temporary directory of its own (removed by
    stop) unless dir is given; its output goes to log_path (default: redis.log
    there). extra: more arguments (--loadmodule, --replicaof, ...)."""

    def __init__(self, prefix="sluice-test-redis-", port=None, dir=None, log_path=None,
                 extra=(), procs=None, exe="redis-server", within=10):
        self.own_dir = dir is None
        self.dir = tempfile.mkdtemp(prefix=prefix) if dir is None else dir
        self.log_path = log_path or os.path.join(self.dir, "redis.log")
        self.exe, self.extra, self.procs, self.within = exe, list(extra), procs, within
        self.proc, self.paused = None, False
        if port:
            self.port = port
            self.start()
            return
        for attempt in range(3):  # the port may be taken between free_port() and bind
            self.port = free_port()
            if self.start(must=attempt == 2):
                return

    def start(self, must=True):
        """Starts (or restarts, on the same port) redis-server and waits for
        PING; False (or RuntimeError when must) if it exited or did not answer."""
        with open(self.log_path, "a") as log:
            self.proc = spawn([self.exe, "--port", str(self.port), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no", "--dir", self.dir,
                               "--protected-mode", "no"] + self.extra, log, self.procs)
        self.paused = False
        if wait_ping(self.port, self.proc, self.within):
            return True
        self.kill()
        if must:
            with open(self.log_path, errors="replace") as f:
                raise RuntimeError("redis-server did not start on port %d:\n%s"
                                   % (self.port, tail(f.read())))
        return False

    def wait(self, within=10):
        """Waits until it accepts connections; False if it did not in time."""
        return wait_port(self.port, within)

    @property
    def url(self):
        return "redis://127.0.0.1:%d/0" % self.port

    def call(self, *args):
        """One command on a fresh connection; its reply (RespError raised)."""
        return resp_call(self.port, *args)

    def info(self, section):
        """INFO section as a dict of strings."""
        return parse_info(self.call("INFO", section))

    def commands(self):
        """(total_commands_processed, script calls) so far. The total counts
        the commands a script runs too; script calls are EVAL/EVALSHA/FCALL
        only (one per client round trip of a scripted decision)."""
        total = int(self.info("stats")["total_commands_processed"])
        scripts = 0
        for k, v in self.info("commandstats").items():
            if k in ("cmdstat_eval", "cmdstat_evalsha", "cmdstat_eval_ro",
                     "cmdstat_evalsha_ro", "cmdstat_fcall", "cmdstat_fcall_ro"):
                scripts += int(re.search(r"calls=(\d+)", v).group(1))
        return total, scripts

    def kill(self):
        """SIGKILL: the port refuses connections at once."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.paused = False

    def pause(self):
        """SIGSTOP: connections stay open, nothing answers (a hung Redis).
        Returns once the kernel says the process is stopped (state T)."""
        self.proc.send_signal(signal.SIGSTOP)
        self.paused = True
        wait_until(lambda: proc_state(self.proc.pid) in ("T", "t"), 10,
                   "redis-server (pid %d) not stopped 10 s after SIGSTOP" % self.proc.pid)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)
        self.paused = False

    def stop(self):
        """Kills it (nothing to persist; SIGKILL also ends a stopped process)
        and removes its directory if it is its own."""
        self.kill()
        if self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def wait_ping(port, proc=None, within=10):
    """Polls until redis-server on the loopback port answers PING (True);
    False after `within` s, or at once when the process `proc` has exited."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if resp_call(port, "PING", timeout=1) == "PONG":
                return True
        except (OSError, RespError):
            pass
        if proc is not None and proc.poll() is not None:
            return False
        time.sleep(0.02)
    return False


def proc_state(pid):
    """The state letter of /proc/PID/stat (R, S, T for stopped, ...)."""
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rpartition(")")[2].split()[0]


def private_redis(prefix, within=10):
    """A RedisServer for the whole run (stopped at exit), waited for up to `within` s."""
    redis = RedisServer(prefix, within=within)
    atexit.register(redis.stop)
    return redis


def temp_file(prefix, name, text):
    """A new temporary directory (its name starts with prefix) holding the
    file name with text in it (a keys file, a rules file); returns (the
    directory, the file's path)."""
    d = tempfile.mkdtemp(prefix=prefix)
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return d, path


def private_store(prefix, timeout="2s"):
    """The whole `store:` section, its newline included, for a private_redis
    of the whole run (the SLUICE_TEST_REDIS=1 runs of the unittest files)."""
    return "store:\n%s\n" % redis_store(private_redis(prefix).port, timeout)


def config_head(workers=2, grpc=False, resp=True, http="127.0.0.1:0"):
    """The first lines of a test's sluiced config: `listen:` with HTTP and RESP
    on port 0 (wait_listening reads the ports from the log; resp=False: off),
    gRPC off (grpc=True: on port 0), then `workers:`. Neither braces nor %, so
    it heads a str.format or %-template as well (workers or http may be one
    of its fields: "{workers}")."""
    return ('listen:\n  http: %s\n  grpc: %s\n  resp: %s\nworkers: %s\n'
            % (http, "127.0.0.1:0" if grpc else '"off"', "127.0.0.1:0" if resp else '"off"',
               workers))


def redis_store(port, timeout, on_failure="closed"):
    """The lines under `store:` for the Redis store at the loopback port (no
    trailing newline; on_failure=None leaves the default)."""
    text = "  type: redis\n  redis:\n    url: redis://127.0.0.1:%d/0\n    timeout: %s" % (
        port, timeout)
    if on_failure is not None:
        text += "\n    on_failure: %s" % on_failure
    return text


# ---- RESP -------------------------------------------------------------------------------

class RespError(Exception):
    """An error reply (-ERR ..., -MOVED ..., -ASK ...). str(e) is its text."""


class Resp:
    """One RESP2 connection (redis-server, a Redis Cluster node, sluiced's RESP
    listener). call() sends one command and returns its reply: str for
    +simple, int for :integer, bytes for $bulk, None for nil, list for *array;
    an -error reply raises RespError (or is returned as a RespError when
    raise_errors=False; inside an array it is always returned). pipeline()
    sends many commands in one write and reads all their replies."""

    def __init__(self, port, timeout=5.0, host=HOST):
        self.addr = (host, port)
        self.sock = socket.create_connection(self.addr, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rf = self.sock.makefile("rb")

    def close(self):
        try:
            self.rf.close()
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @staticmethod
    def encode(*args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if not isinstance(a, bytes):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def _line(self):
        line = self.rf.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("connection to %s:%d closed" % self.addr)
        return line[:-2]

    def read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return RespError(rest.decode(errors="replace"))
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.rf.read(n + 2)
            if len(data) != n + 2:
                raise ConnectionError("connection to %s:%d closed" % self.addr)
            return data[:-2]
        if t == b"*":
            n = int(rest)
            if n < 0:
                return None
            return [self.read() for _ in range(n)]
        raise ConnectionError("bad RESP from %s:%d: %r" % (self.addr + (line,)))

    @staticmethod
    def _raise(reply, raise_errors):
        if raise_errors and isinstance(reply, RespError):
            raise reply
        return reply

    def call(self, *args, raise_errors=True):
        self.sock.sendall(self.encode(*args))
        return self._raise(self.read(), raise_errors)

    def pipeline(self, commands, raise_errors=True):
        self.sock.sendall(b"".join(self.encode(*c) for c in commands))
        return [self._raise(self.read(), raise_errors) for _ in commands]


def resp_call(port, *args, timeout=5.0, raise_errors=True):
    """One command on a fresh connection to the loopback port."""
    with Resp(port, timeout=timeout) as r:
        return r.call(*args, raise_errors=raise_errors)


def parse_info(text):
    """INFO (or CLUSTER INFO) text, str or bytes, as a dict of strings."""
    out = {}
    for line in (text.decode() if isinstance(text, bytes) else text).splitlines():
        k, sep, v = line.partition(":")
        if sep:
            out[k.strip()] = v.strip()
    return out


# ---- HTTP -------------------------------------------------------------------------------

def parse_head(head):
    """A response head (str, CRLF lines) -> (status, headers dict: lower-case
    names, a repeated header keeps the last)."""
    lines = head.split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return int(lines[0].split()[1]), headers


def curl(*args, data=None, max_time=20, text=True):
    """Runs curl -sS -i (data: bytes sent as the body from stdin); returns
    (status, headers dict (lower-case), body: str, or bytes with text=False).
    max_time only guards against a hang: generous, for a loaded machine."""
    cmd = ["curl", "-sS", "-i", "--max-time", str(max_time)]
    if data is not None:
        cmd += ["--data-binary", "@-"]
    out = subprocess.run(cmd + list(args), input=data, capture_output=True,
                         check=True).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    status, headers = parse_head(head.decode())
    return status, headers, body.decode() if text else body


def read_response(sock, buf=b""):
    """Reads one HTTP response (Content-Length framed); returns (status,
    headers dict, body bytes, the bytes read after it)."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed inside a response head: %r" % buf[:200])
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    status, headers = parse_head(head.decode("latin-1"))
    n = int(headers.get("content-length", "0"))
    while len(rest) < n:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed inside a response body")
        rest += chunk
    return status, headers, rest[:n], rest[n:]


def read_to_eof(sock):
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def raw(port, data, read_until_close=True, timeout=5):
    """Sends data on a new connection; returns what comes back until the
    peer closes (or the first chunk), or the timeout."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    chunks = []
    try:
        while True:
            c = s.recv(65536)
            if not c:
                break
            chunks.append(c)
            if not read_until_close:
                break
    except socket.timeout:
        pass
    s.close()
    return b"".join(chunks)


class Pipe:
    """One keep-alive HTTP/1.1 connection from a chosen loopback source
    address; requests are written in batches and the answers read back in
    order (status, lower-case headers, body)."""

    def __init__(self, port, source="127.0.0.1"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30,
                                             source_address=(source, 0))
        self.buf = b""

    def close(self):
        self.sock.close()

    def _read_answer(self):
        status, headers, body, self.buf = read_response(self.sock, self.buf)
        return status, headers, body.decode("utf-8", "replace")

    def run(self, requests, batch=200):
        """Sends every request (bytes) and returns their answers in order."""
        out = []
        for i in range(0, len(requests), batch):
            part = requests[i:i + batch]
            self.sock.sendall(b"".join(part))
            out.extend(self._read_answer() for _ in part)
        return out


def serve_http(handler, **attrs):
    """An HTTP server on a free loopback port, each request answered by
    handler in a daemon thread of its own, serving in a daemon thread; attrs
    are set on the server before it serves. Stop it with shutdown() and
    server_close()."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    for k, v in attrs.items():
        setattr(srv, k, v)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


# ---- waiting ----------------------------------------------------------------------------

def poll(cond, within=20, step=0.05):
    """Calls cond() every `step` s until it returns a true value, which is
    returned; after `within` s, what one last call returns."""
    end = time.time() + within
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


def wait_until(cond, within, what):
    """Polls cond() (every 50 ms) until it returns a true value, which is
    returned; fails with `what` after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        got = cond()
        if got:
            return got
        assert time.monotonic() < deadline, "%s (waited %d s)" % (what, within)
        time.sleep(0.05)


def window_room(period, room, what="the case"):
    """Waits, polling the clock, until at least `room` s are left of the
    current fixed window of `period` s ([k*P, (k+1)*P) of the Unix clock),
    saying so; returns at once when they are. For a case of a few seconds
    counted in an hourly window, window_room(3600, 60) keeps it inside one
    (a straddle would start its count over) and waits at most a minute."""
    left = period - time.time() % period
    if left >= room:
        return
    print("  %s: %.1f s left of its %g s window, under %g s: waiting for the next"
          % (what, left, period, room), flush=True)
    now = int(time.time() // period)
    wait_until(lambda: int(time.time() // period) > now, period + 5,
               "the next %g s window" % period)


def in_one_window(period, case, room=None, what="the run", attempts=3):
    """Runs case(), requests counted in a fixed window of `period` s (windows
    are [k*P, (k+1)*P) of the Unix clock, sluiced's and this one's), so that
    its first request and its last answer fall in one window, and returns
    what case() returned. First waits, polling the clock, until at least
    `room` s of the window are left (a quarter of the period unless given),
    saying so. A run that ended in a later window proves nothing, passed or
    failed (the count started over under it): it is run again from the start
    of the window after the one it ended in (which holds part of its count),
    at most `attempts` runs; one that stayed in its window must pass."""
    room = period / 4 if room is None else room
    for attempt in range(attempts):
        window_room(period, room, what)
        window = int(time.time() // period)
        try:
            got = case()
        except AssertionError:
            if int(time.time() // period) == window or attempt == attempts - 1:
                raise
            got = None
        ended = int(time.time() // period)
        if ended == window:
            return got
        if attempt == attempts - 1:
            break
        print("  %s crossed into the next %g s window: again in a fresh one" % (what, period),
              flush=True)
        wait_until(lambda: int(time.time() // period) > ended, period + 5,
                   "the next %g s window" % period)
    raise AssertionError("%d runs of %s each crossed a %g s window" % (attempts, what, period))


# ---- logs and metrics -------------------------------------------------------------------

def built_with_tsan(binary):
    """True if the executable was built with ThreadSanitizer (it imports
    __tsan_init). For the few tests TSan's own emulation cannot run: it
    delivers a signal inside the handler of another even where sa_mask
    blocks it (google/sanitizers#1855), which libuv's signal lock (a pipe
    read, not reentrant) does not survive."""
    with open(binary, "rb") as f:
        return b"__tsan_init" in f.read()


def tail(text, n=40):
    return "\n".join(text.splitlines()[-n:])


def metric(text, name, **labels):
    """The value (float) of one sample of /metrics text with exactly these
    labels (in any order), or None."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and line.split(" ")[0] != name:
            continue
        series, _, value = line.rpartition(" ")
        got = dict(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', series))
        if series.split("{")[0] == name and got == labels:
            return float(value)
    return None


# ---- scripts that are not unittest ------------------------------------------------------

def nginx_main(d, http, worker_connections=256, log_format=None):
    """An nginx main config of a test's own in the directory d: pid, error
    log, access log (in log_format, named t, when given) and temporary paths
    there, one worker (user root when run as root), and the http block's
    own lines, http, after those."""
    return ("%spid %s/nginx.pid;\nerror_log %s/error.log info;\nworker_processes 1;\n"
            "events { worker_connections %d; }\n"
            "http {\n%s  access_log %s/access.log%s;\n"
            "  client_body_temp_path %s/body;\n  proxy_temp_path %s/proxy;\n"
            "  fastcgi_temp_path %s/fastcgi;\n  uwsgi_temp_path %s/uwsgi;\n"
            "  scgi_temp_path %s/scgi;\n%s}\n"
            % ("user root;\n" if os.geteuid() == 0 else "", d, d, worker_connections,
               "  log_format t '%s';\n" % log_format if log_format else "", d,
               " t" if log_format else "", d, d, d, d, d, http))


def nginx_path(arg):
    """The nginx that CMake found (arg; none, empty or ...-NOTFOUND: the one on
    PATH, else /usr/sbin/nginx)."""
    if arg and not arg.endswith("NOTFOUND"):
        return arg
    return shutil.which("nginx") or "/usr/sbin/nginx"


def select_tests(ap, tests, only):
    """The tests named by --only (all without it); ap.error on an unknown name."""
    if not only:
        return tests
    names = {t.__name__: t for t in tests}
    unknown = [n for n in only if n not in names]
    if unknown:
        ap.error("unknown test %s; tests: %s" % (unknown, ", ".join(names)))
    return [names[n] for n in only]


def run_tests(tests, procs):
    """Runs each test function, printing ok / FAIL and the time; at the end
    kills whatever in procs still runs. Returns the exit code (1 on a failure)."""
    failed = []
    t_all = time.monotonic()
    try:
        for t in tests:
            print("== %s" % t.__name__, flush=True)
            t0 = time.monotonic()
            try:
                t()
                print("   ok (%.1f s)" % (time.monotonic() - t0), flush=True)
            except Exception:
                failed.append(t.__name__)
                traceback.print_exc()
                print("   FAIL (%.1f s)" % (time.monotonic() - t0), flush=True)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    print("%d of %d passed in %.1f s%s" % (len(tests) - len(failed), len(tests),
                                           time.monotonic() - t_all,
                                           "; failed: " + ", ".join(failed) if failed else ""))
    return 1 if failed else 0
