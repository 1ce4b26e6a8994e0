#!/usr/bin/env python3
"""notify_test.py SLUICED SOURCE_DIR: sluiced's readiness protocol with systemd
(Type=notify in packaging/sluiced.service). A Unix datagram socket stands in
for the service manager (NOTIFY_SOCKET): READY=1 once the listeners are bound,
RELOADING=1 then READY=1 around a SIGHUP reload, STOPPING=1 on SIGTERM.
Standard library only."""
import os
import signal
import socket
import tempfile
import unittest

import harness
import sluiced_test

DEADLINE = 30  # seconds: generous, a loaded machine under ASan is slow


class Notify(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sluiced-notify-")
        self.path = os.path.join(self.dir, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        os.environ["NOTIFY_SOCKET"] = self.path
        try:
            self.server = sluiced_test.Server()
        finally:
            del os.environ["NOTIFY_SOCKET"]

    def tearDown(self):
        self.server.stop()
        self.sock.close()

    def next_state(self):
        """The next message's variables, as a set of 'K=V' lines."""
        self.sock.settimeout(DEADLINE)
        data = self.sock.recv(4096)
        return set(data.decode().split("\n")) - {""}

    def test_ready_reload_stopping(self):
        self.assertEqual(self.next_state(), {"READY=1"})
        self.server.proc.send_signal(signal.SIGHUP)
        self.assertEqual(self.next_state(), {"RELOADING=1"})
        self.assertEqual(self.next_state(), {"READY=1"})
        self.server.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.next_state(), {"STOPPING=1"})
        self.assertEqual(self.server.stop(), 0)

    def test_ready_comes_after_listeners(self):
        # Server() returned once the log said "ready": the message is already
        # queued, and the HTTP listener answers.
        self.assertEqual(self.next_state(), {"READY=1"})
        status, _, _ = harness.curl(self.server.url("/healthz"))
        self.assertEqual(int(status), 200)


if __name__ == "__main__":
    sluiced_test.main()
