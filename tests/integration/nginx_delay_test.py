#!/usr/bin/env python3
"""nginx_delay_test.py NGINX_REPLAY [NGINX] [--seed N] [--rounds N]: a live
differential of nginx's two-stage limit_req against sluice's leaky queue.

A real nginx (one worker, on a free loopback port) has one zone per case,
`limit_req zone=z burst=B delay=D` keyed by the query's k, with delay=0
(plain burst=B) and delay=B (as nodelay) among the cases. Random request
schedules (bursts of requests sent together, gaps around the emission
interval) go to it, one new connection per request, every case at once.
What nginx did is read from its logs, never from the client's clock:
- when it read each request: $msec - $request_time (its wall ms) in the
  access log, and what it answered ($status: 204 passed, 429 refused);
- the delay it applied: the error log's "delaying request, excess: X" line
  (limit_req_log_level notice: delays at info), X the queue's excess in
  milli-requests after this one, so the delay is (X - D) x 1000 / R ms, as
  ngx_http_limit_req_module computes it; the access log's $request_time of
  that request must be at least that (it really was held; a bound on the
  time that passed, none on the machine's speed).
Those times, answers and delays go to nginx_replay (tests/peers/), which
replays the times through sluice's leaky queue as docs/nginx.md translates
the directive (rate R/s, burst B+1, delay_after D) and must answer every
request as nginx did (a request's time may move by the 1 ms between nginx's
two clocks), each delay within a quarter of the emission interval 1/R.
A loaded machine only moves the times nginx saw, which both sides share.
Standard library only; everything runs in a temporary directory.
"""
import argparse
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

import harness

# (zone name, R r/s, B, D)
CASES = [
    ("r10b5d2", 10, 5, 2),
    ("r20b8d0", 20, 8, 0),   # no delay= (nginx refuses delay=0): plain burst=8
    ("r5b4d4", 5, 4, 4),     # delay=B: as nodelay
    ("r10b9d6", 10, 9, 6),
    ("r4b3d1", 4, 3, 1),
]
REQUESTS = 22  # per schedule


def nginx_conf(d, port):
    zones, locations = [], []
    for name, rate, burst, delay in CASES:
        zones.append("  limit_req_zone $arg_k zone=%s:1m rate=%dr/s;\n" % (name, rate))
        # try_files answers in the content phase, after limit_req (preaccess);
        # `return` would answer before it
        locations.append("    location /%s {\n      limit_req zone=%s burst=%d%s;\n"
                         "      limit_req_status 429;\n      limit_req_log_level notice;\n"
                         "      try_files /nonexistent =204;\n    }\n"
                         % (name, name, burst, " delay=%d" % delay if delay else ""))
    return harness.nginx_main(
        d, "%s  server {\n    listen 127.0.0.1:%d;\n    root %s;\n%s  }\n"
        % ("".join(zones), port, d, "".join(locations)),
        worker_connections=1024, log_format="$arg_k $arg_i $status $msec $request_time")


def schedule(rng, rate, burst):
    """Send offsets (ms): bursts of 1 to B+3 requests together, gaps of 0 to
    2.5 emission intervals between them."""
    t_ms, interval, out = 0, 1000 // rate, []
    while len(out) < REQUESTS:
        out.extend([t_ms] * min(rng.randint(1, burst + 3), REQUESTS - len(out)))
        t_ms += rng.randint(0, interval * 5 // 2)
    return out


def send(port, path, errors):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(("GET %s HTTP/1.0\r\nHost: t\r\n\r\n" % path).encode())
            harness.read_to_eof(s)
    except OSError as e:
        errors.append("%s: %s" % (path, e))


def run_round(port, keys, rng):
    """Sends one schedule per case, all cases at once; keys[name] is the
    round's key of each case."""
    jobs = []
    for name, rate, burst, _ in CASES:
        for i, at in enumerate(schedule(rng, rate, burst)):
            jobs.append((at, "/%s?k=%s&i=%d" % (name, keys[name], i)))
    jobs.sort()
    errors, threads = [], []
    start = time.monotonic() + 0.05
    for at, path in jobs:  # a thread per request: nginx holds the delayed ones
        pause = start + at / 1000 - time.monotonic()
        if pause > 0:
            time.sleep(pause)  # pacing the schedule; nothing is assumed about when it arrives
        th = threading.Thread(target=send, args=(port, path, errors))
        th.start()
        threads.append(th)
    for th in threads:
        th.join(60)
    assert not errors, errors
    return len(jobs)


def ms(text):
    """'1733111111.123' or '0.153' (seconds, 3 decimals) -> whole ms."""
    sec, _, frac = text.partition(".")
    return int(sec) * 1000 + int((frac + "000")[:3])


ACCESS = re.compile(r"^(\S+) (\d+) (\d{3}) (\d+\.\d{3}) (\d+\.\d{3})$")
DELAYING = re.compile(r'delaying request, excess: (\d+)\.(\d{3}), by zone "(\w+)".*'
                      r'request: "GET /\w+\?k=([^&]+)&i=(\d+) ')


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def judge_input(d, keys):
    """What nginx did, per case, as nginx_replay reads it."""
    by_key = {}
    for line in read(os.path.join(d, "access.log")).splitlines():
        m = ACCESS.match(line)
        assert m, "unexpected access log line %r" % line
        k, i, status, at, took = m.groups()
        assert status in ("204", "429"), line
        by_key.setdefault(k, {})[int(i)] = (ms(at) - ms(took), status == "429", ms(took))
    applied = {}
    for m in DELAYING.finditer(read(os.path.join(d, "error.log"))):
        excess = int(m.group(1)) * 1000 + int(m.group(2))
        applied[(m.group(4), int(m.group(5)))] = (m.group(3), excess)
    text, delayed, refused = [], 0, 0
    for name, rate, burst, delay in CASES:
        got = by_key.get(keys[name], {})
        assert len(got) == REQUESTS, "%s: %d of %d requests logged" % (name, len(got), REQUESTS)
        rows = []
        for i, (t, is_refused, took) in got.items():
            zone, excess = applied.get((keys[name], i), (name, None))
            assert zone == name
            wait = 0
            if excess is not None:
                assert not is_refused
                wait = (excess - delay * 1000) * 1000 // (rate * 1000)
                # held at least that long (1 ms: the timer runs on the other clock)
                assert took >= wait - 1, "%s #%d: delay %d ms, answered after %d" % (
                    name, i, wait, took)
            rows.append((t, int(is_refused), wait))
            delayed += wait > 0
            refused += is_refused
        rows.sort()  # one ms: accepted first, by delay (nginx's order)
        t0 = rows[0][0]
        text.append("schedule %s %d %d %d\n" % (keys[name], rate, burst, delay))
        text.extend("%d %d %d\n" % (t - t0, r, w) for t, r, w in rows)
        text.append("end\n")
    return "".join(text), delayed, refused


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("replay")
    ap.add_argument("nginx", nargs="?")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("NGINX_DELAY_SEED", "1")))
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    nginx = harness.nginx_path(a.nginx)
    if not os.path.exists(nginx):
        sys.exit("nginx not found: install nginx-light (scripts/install-deps.sh)")
    d = tempfile.mkdtemp(prefix="sluice-nginx-delay-")
    os.chmod(d, 0o755)  # nginx workers may run as another user
    procs, failed = [], False
    try:
        port = harness.free_port()
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(nginx_conf(d, port))
        log = open(os.path.join(d, "nginx.out"), "w")
        ng = harness.spawn([nginx, "-p", d, "-c", conf, "-e", os.path.join(d, "error.log"),
                            "-g", "daemon off;"], log, procs)
        if not harness.wait_port(port, 10, step=0.02, proc=ng):
            sys.exit("nginx did not start:\n" + read(os.path.join(d, "nginx.out")) +
                     read(os.path.join(d, "error.log")))
        rng = random.Random(a.seed)
        print("nginx_delay: seed %d, %d rounds" % (a.seed, a.rounds), flush=True)
        total = {"delayed": 0, "refused": 0}
        for r in range(a.rounds):
            keys = {name: "%s-s%dr%d" % (name, a.seed, r) for name, _, _, _ in CASES}
            n = run_round(port, keys, rng)
            mine = set(keys.values())
            harness.wait_until(
                lambda: sum(1 for line in read(os.path.join(d, "access.log")).splitlines()
                            if line.split(" ")[0] in mine) == n,
                20, "nginx logs every request of round %d" % r)
            text, delayed, refused = judge_input(d, keys)
            total["delayed"] += delayed
            total["refused"] += refused
            res = subprocess.run([a.replay], input=text, capture_output=True, text=True)
            sys.stdout.write(res.stdout)
            if res.returncode != 0:
                sys.stdout.write(res.stderr)
                print("nginx_delay: FAIL (seed %d round %d; KEEP_TMP=1 keeps %s)"
                      % (a.seed, r, d))
                failed = True
                break
        # the schedules did reach the queue's two stages and its end
        assert failed or (total["delayed"] > 0 and total["refused"] > 0), total
    finally:
        for p in procs:
            harness.stop_process(p, signal.SIGQUIT, 10)
        if os.environ.get("KEEP_TMP") is None:
            shutil.rmtree(d, ignore_errors=True)
        else:
            print("kept", d)
    if failed:
        sys.exit(1)
    print("nginx_delay: ok", flush=True)


if __name__ == "__main__":
    main()
