#!/usr/bin/env python3
"""fetch_aimd_test.py SLUICE: `sluice fetch --aimd` from the command line
reproduces the seed's AIMD example (issue 12 item 18): from 20/s, two
successes and a 429 give 20.5, 21, 10.5. --rate is where AIMD starts and
--aimd-max its ceiling; before --aimd-max existed, --rate was both, so the
rate could not grow past 20.

A small HTTP/1.1 server on an ephemeral loopback port answers 200, 200, then
429 with Retry-After: 0, then 200; the client's -v lines report the host rate
after each answer. Nothing here depends on time: the rates follow from the
answers alone. Standard library only."""
import http.server
import re
import subprocess
import sys
import threading
import unittest

import harness

SLUICE = None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        with self.server.lock:
            self.server.n += 1
            nth = self.server.n
        if nth == 3:
            status, body, fields = 429, b"slow down\n", [("Retry-After", "0")]
        else:
            status, body, fields = 200, b"ok\n", []
        self.send_response(status)
        for k, v in fields:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class FetchAimd(unittest.TestCase):
    def setUp(self):
        self.srv = harness.serve_http(Handler, lock=threading.Lock(), n=0)
        self.url = "http://127.0.0.1:%d/x" % self.srv.server_address[1]

    def tearDown(self):
        self.srv.shutdown()
        self.srv.server_close()

    def fetch(self, *args):
        p = subprocess.run([SLUICE, "fetch", "-v", "-o", "/dev/null", *args, self.url],
                           capture_output=True, timeout=60)
        return p.returncode, p.stderr.decode()

    def rates(self, err):
        """The host rate after each answer, in order, from the -v lines."""
        return re.findall(r"(?:final: .*, host rate|host rate now) ([0-9.]+)/s", err)

    def test_seed_example(self):
        rc, err = self.fetch("--aimd", "--rate", "20", "--aimd-max", "50", "--count", "3",
                             "--seed", "1")
        self.assertEqual(rc, 0, err)
        # request 1: 200 -> 20.5; request 2: 200 -> 21; request 3: 429 -> 10.5,
        # retried (and paced at the host's new rate): 200 -> 11
        self.assertEqual(self.rates(err)[:3], ["20.5", "21", "10.5"], err)
        self.assertIn("request 3: attempt 1: 429", err)
        self.assertRegex(err, r"request 3: final: 200 .*host rate 11/s")

    def test_rate_alone_is_start_and_ceiling(self):
        rc, err = self.fetch("--aimd", "--rate", "20", "--count", "3", "--seed", "1")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.rates(err)[:3], ["20", "20", "10"], err)

    def test_usage_errors(self):
        for args, text in ((["--aimd-max", "50"], "--aimd-max: needs --aimd"),
                           (["--aimd", "--rate", "30", "--aimd-max", "20"], "at least"),
                           (["--aimd", "--aimd-max", "x"], "--aimd-max: expected")):
            rc, err = self.fetch(*args)
            self.assertEqual(rc, 2, (args, err))
            self.assertIn(text, err)
            self.assertEqual(self.srv.n, 0, "a usage error sent a request")


if __name__ == "__main__":
    SLUICE = sys.argv[1]
    unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[2:])
