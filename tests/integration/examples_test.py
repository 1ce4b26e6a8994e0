#!/usr/bin/env python3
"""examples_test.py SLUICED SOURCE_DIR [NGINX]: what the README and examples/
tell a user to do works as written (issue 12 item 17).

- The README's "Many servers, one limit" block is run as a shell script, its
  commands as they stand, with only what a test must change: the ports (6379,
  9001, 9002) become free loopback ports, build/sluiced the sluiced under
  test, the rate 5/s becomes 5/h (no refill between two curl calls on a
  loaded machine), the Redis timeout 5ms becomes 500ms (no fallback on a
  loaded machine), and redis-server gets a pid file so it can be stopped.
  The two curl answers must say what the README shows: both instances count
  one allowance, on the ports the README names (no port dug out of a log).
- examples/nginx/sluice.conf, run by a real nginx (as nginx_test.py does):
  a 401 carries exactly one WWW-Authenticate.

Everything runs on ephemeral loopback ports in a temporary directory and is
stopped at the end. Standard library only."""
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import nginx_test  # noqa: E402  (the nginx + sluiced + upstream stack)
import harness  # noqa: E402
from harness import free_port  # noqa: E402

SLUICED = SRC = NGINX = None


def readme_block(title):
    """The first ```sh block after the heading `title` in README.md."""
    text = open(os.path.join(SRC, "README.md")).read()
    at = text.index(title)
    m = re.search(r"```sh\n(.*?)```", text[at:], re.S)
    return m.group(1).splitlines()


def split_session(lines):
    """A console session: [(command, [output lines])]. A command is a "$ "
    line with its here-document, if any, up to the closing word."""
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        assert line.startswith("$ "), "not a command: %r" % line
        cmd, i = [line[2:]], i + 1
        m = re.search(r"<<'?(\w+)'?", line)
        if m:
            while lines[i] != m.group(1):
                cmd.append(lines[i])
                i += 1
            cmd.append(lines[i])
            i += 1
        shown = []
        while i < len(lines) and not lines[i].startswith("$ "):
            shown.append(lines[i])
            i += 1
        out.append(("\n".join(cmd), shown))
    return out


def shown_fields(text):
    """'{"allowed":true,"limit":5,...}' -> {"allowed": True, "limit": 5}."""
    return {k: json.loads(v) for k, v in re.findall(r'"(\w+)":("[^"]*"|[^,}]+)', text)
            if v != "..."}


class ReadmeFleet(unittest.TestCase):
    def test_many_servers_one_limit(self):
        d = tempfile.mkdtemp(prefix="sluice-readme-")
        rport, p1, p2 = free_port(), free_port(), free_port()
        subst = [("6379", str(rport)), ("9001", str(p1)), ("9002", str(p2)),
                 ("build/sluiced", SLUICED), ("rate: 5/s", "rate: 5/h"),
                 ("--daemonize yes", "--daemonize yes --pidfile %s/redis.pid --dir %s" % (d, d))]
        session = split_session(readme_block("### Many servers, one limit"))
        for old, _ in subst:
            self.assertTrue(any(old in c for c, _ in session), "README lacks %r" % old)

        table = dict(subst)
        pattern = re.compile("|".join(re.escape(old) for old, _ in subst))

        def fix(cmd):  # one pass: a new port may contain an old one ("39001")
            return pattern.sub(lambda m: table[m.group(0)], cmd)

        fleet = None
        flog = open(os.path.join(d, "fleet.log"), "w")
        try:
            curls = []
            for cmd, shown in session:
                cmd = fix(cmd)
                if "sluiced" in cmd and "&" in cmd:
                    # background jobs: a shell of their own that waits for them,
                    # in its own process group (stopped with SIGTERM below)
                    fleet = subprocess.Popen(["bash", "-c", cmd + "\nwait"], cwd=d,
                                             start_new_session=True,
                                             stdout=flog,
                                             stderr=subprocess.STDOUT)
                elif cmd.startswith("curl"):
                    curls.append((cmd, shown))
                else:
                    r = subprocess.run(["bash", "-c", cmd], cwd=d, capture_output=True,
                                       text=True, timeout=30)
                    self.assertEqual(r.returncode, 0, "%s:\n%s" % (cmd, r.stderr))
            self.assertIsNotNone(fleet, "no command starts the two sluiced")
            self.assertEqual(len(curls), 2)
            # both instances up and connected to Redis (a user types slower than this)
            deadline = time.monotonic() + 20
            for port in (p1, p2):
                while True:
                    self.assertIsNone(fleet.poll(), open(os.path.join(d, "fleet.log")).read())
                    try:
                        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                        try:
                            c.request("GET", "/readyz")
                            if c.getresponse().status == 200:
                                break
                        finally:
                            c.close()
                    except OSError:
                        pass
                    self.assertLess(time.monotonic(), deadline, "port %d not ready" % port)
                    time.sleep(0.05)
            for cmd, shown in curls:
                r = subprocess.run(["bash", "-c", cmd], cwd=d, capture_output=True, text=True,
                                   timeout=30)
                self.assertEqual(r.returncode, 0, "%s:\n%s" % (cmd, r.stderr))
                got = json.loads(r.stdout)
                want = shown_fields("\n".join(shown))
                self.assertTrue(want, "the README shows no answer for %s" % cmd)
                self.assertEqual({k: got.get(k) for k in want}, want, cmd)
                self.assertNotIn("fallback", got, "an answer not from Redis: %s" % got)
        finally:
            if fleet is not None:
                if fleet.poll() is None:
                    os.killpg(fleet.pid, signal.SIGTERM)
                try:
                    fleet.wait(15)
                except subprocess.TimeoutExpired:
                    os.killpg(fleet.pid, signal.SIGKILL)
                    fleet.wait()
            flog.close()
            try:
                with open(os.path.join(d, "redis.pid")) as f:
                    os.kill(int(f.read().strip()), signal.SIGKILL)
            except (OSError, ValueError):
                pass
            log = ""
            if os.path.exists(os.path.join(d, "fleet.log")):
                log = open(os.path.join(d, "fleet.log")).read()
            shutil.rmtree(d, ignore_errors=True)
        self.assertNotIn("AddressSanitizer", log)
        self.assertNotIn("runtime error", log)


class NginxExample(unittest.TestCase):
    def test_401_has_one_challenge(self):
        nginx_test.SLUICED, nginx_test.SRC, nginx_test.NGINX = SLUICED, SRC, NGINX
        stack = nginx_test.Stack()
        try:
            c = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=5)
            c.request("GET", "/api/x", headers={"X-API-Key": "made-up-key"})
            r = c.getresponse()
            r.read()
            c.close()
            self.assertEqual(r.status, 401)
            got = [v for k, v in r.getheaders() if k.lower() == "www-authenticate"]
            self.assertEqual(got, ['Bearer realm="sluice"'])
        finally:
            self.assertEqual(stack.stop(), 0)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    SLUICED, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    NGINX = harness.nginx_path(sys.argv[3] if len(sys.argv) > 3 else None)
    unittest.main(argv=sys.argv[:1], verbosity=2)
