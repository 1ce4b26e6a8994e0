#!/usr/bin/env python3
"""redis_cluster.py: a real Redis Cluster on loopback for sluice's tests.

Importable (the cluster integration tests use it) and runnable:

    python3 tests/integration/redis_cluster.py              # start, print, wait for Ctrl-C
    python3 tests/integration/redis_cluster.py --self-test  # the harness's own test (ctest)

Cluster() starts 3 masters and 3 replicas (6 redis-server processes, Redis 7)
on free ephemeral loopback ports, each in its own temporary directory, joins
them with `redis-cli --cluster create`, and waits until every node says
cluster_state:ok, all agree on the slot map and every replica is in sync. It
can then migrate a slot the way redis-cli does (optionally stopping halfway,
so that the source answers ASK), kill a master and wait for its replica to be
promoted, restart a node, and always stops every process: on stop_all(), on
exceptions (use it as a context manager), at exit, and, through
PR_SET_PDEATHSIG, when this Python process itself is killed.

store() is the YAML under a sluiced config's `store:` that points it at the
cluster (seeds(): its masters). The RESP2 client (Resp) is harness.py's,
re-exported here; also
keyslot(): CRC16/XMODEM with hash tags, checked against CLUSTER KEYSLOT by the
self-test. Standard library only. Only loopback addresses are used."""
import atexit
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import HOST, Resp, RespError, die_with_parent, parse_info, wait_ping  # noqa: E402
REDIS_SERVER = "/usr/bin/redis-server"
REDIS_CLI = "/usr/bin/redis-cli"
SLOTS = 16384
BUS_OFFSET = 10000  # cluster bus port = port + 10000 (Redis's default)


# ---- key slot ------------------------------------------------------------------------

def _crc16_table():
    table = []
    for i in range(256):
        c = i << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else (c << 1)
        table.append(c & 0xFFFF)
    return table


_CRC16 = _crc16_table()


def crc16(data):
    """CRC16/XMODEM (poly 0x1021, init 0): crc16(b"123456789") == 0x31C3."""
    crc = 0
    for b in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC16[((crc >> 8) ^ b) & 0xFF]
    return crc


def keyslot(key):
    """The cluster slot of key (str or bytes), as Redis computes it: the part
    between the first '{' and the first '}' after it if that is not empty,
    else the whole key."""
    if isinstance(key, str):
        key = key.encode()
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    return crc16(key) & (SLOTS - 1)


def key_in_slot(slot, prefix="k", start=0):
    """A hash tag that falls in slot: returns tag such that keyslot(tag) == slot
    (keys "{tag}..." then all live in that slot)."""
    i = start
    while True:
        tag = "%s%d" % (prefix, i)
        if keyslot(tag) == slot:
            return tag
        i += 1


# ---- a minimal RESP2 client ------------------------------------------------------------

def parse_redirect(text):
    """('MOVED'|'ASK', slot, port) from an error text, or None."""
    m = re.fullmatch(r"(MOVED|ASK) (\d+) ([^ ]*):(\d+)", text)
    return (m.group(1), int(m.group(2)), int(m.group(4))) if m else None


def _port(node):
    """A node given as a port (int) or as 'host:port'."""
    if isinstance(node, int):
        return node
    return int(str(node).rsplit(":", 1)[1])


# ---- free ports -----------------------------------------------------------------------

def _bindable(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
            return True
        except OSError:
            return False


def _listening(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        return s.connect_ex((HOST, port)) == 0


def free_port(taken=()):
    """A free loopback port whose cluster bus port (+10000) is free too. Both
    are only free when checked: the caller retries if redis-server cannot
    bind (see Cluster._spawn)."""
    for _ in range(1000):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]
        bus = port + BUS_OFFSET
        if bus > 65535 or port in taken or bus in taken or port - BUS_OFFSET in taken:
            continue
        if _bindable(port) and _bindable(bus):
            return port
    raise RuntimeError("no free port pair (port, port+10000) found")


# ---- processes die with us -------------------------------------------------------------

# preexec_fn of every redis-server and redis-cli: if the test runner kills this
# Python process (ctest timeout: SIGKILL, no atexit), they follow
_die_with_parent = die_with_parent


_LIVE = set()  # clusters not yet stopped, for atexit and signals


def _stop_live():
    for c in list(_LIVE):
        c.stop_all()


atexit.register(_stop_live)


def _on_signal(signum, frame):
    _stop_live()
    raise SystemExit(128 + signum)


def install_signal_handlers():
    """SIGTERM/SIGHUP stop every cluster of this process, then exit (Ctrl-C
    already raises KeyboardInterrupt, which the context manager and atexit
    handle)."""
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _on_signal)


# ---- the cluster ----------------------------------------------------------------------

class Node:
    def __init__(self, port, dir):
        self.port = port
        self.dir = dir
        self.proc = None
        self.log = os.path.join(dir, "redis.log")

    @property
    def addr(self):
        return "%s:%d" % (HOST, self.port)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n=15):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return "(no log)"


class Cluster:
    """A Redis Cluster of `masters` masters with `replicas` replicas each, on
    loopback. Use as a context manager, or call start() and stop_all()."""

    def __init__(self, masters=3, replicas=1, node_timeout_ms=1000, verbose=False, keep=None):
        self.nmasters = masters
        self.nreplicas = replicas
        self.node_timeout_ms = node_timeout_ms
        self.verbose = verbose
        self.keep = keep if keep is not None else bool(os.environ.get("SLUICE_KEEP_CLUSTER"))
        self.dir = None
        self.nodes = {}  # port -> Node
        self.ids = {}  # port -> node id

    # -- lifecycle --

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop_all()

    def log(self, *args):
        if self.verbose:
            print("[cluster %.2fs]" % (time.monotonic() - self._t0), *args, file=sys.stderr,
                  flush=True)

    def start(self, timeout=60):
        self._t0 = time.monotonic()
        for exe in (REDIS_SERVER, REDIS_CLI):
            if not os.access(exe, os.X_OK):
                raise FileNotFoundError(exe)
        self.dir = tempfile.mkdtemp(prefix="sluice-cluster-")
        _LIVE.add(self)
        try:
            n = self.nmasters * (1 + self.nreplicas)
            for _ in range(n):
                self._spawn_new()
            self.log("started", n, "redis-server:", sorted(self.nodes))
            for port in self.nodes:
                self.ids[port] = self.call(port, "CLUSTER", "MYID").decode()
            addrs = [self.nodes[p].addr for p in sorted(self.nodes)]
            out = subprocess.run(
                [REDIS_CLI, "--cluster", "create", *addrs, "--cluster-replicas",
                 str(self.nreplicas), "--cluster-yes"],
                stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, text=True,
                preexec_fn=_die_with_parent)
            with open(os.path.join(self.dir, "create.log"), "w") as f:
                f.write(out.stdout + out.stderr)
            created = out.returncode == 0 and "[OK] All 16384 slots covered" in out.stdout
            # Its own last check may run before gossip reached every node
            # ("[ERR] Not all 16384 slots are covered" right after assigning
            # them all, once under load in session 10): the cluster then
            # still converges, and _healthy checks everything that matters.
            try:
                self.wait_ok(timeout=timeout)
            except Exception:
                if created:
                    raise
                raise RuntimeError("redis-cli --cluster create failed:\n" + out.stdout +
                                   out.stderr)
            self.log("created" if created else "created (redis-cli's own check was early)")
            self.log("ok: masters", self.masters())
        except BaseException:
            self.stop_all()
            raise
        return self

    def _args(self, node):
        return [
            REDIS_SERVER,
            "--port", str(node.port),
            "--bind", HOST,
            "--dir", node.dir,
            "--logfile", node.log,
            "--daemonize", "no",
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(self.node_timeout_ms),
            "--cluster-announce-ip", HOST,
            # a replica may always take over (its data is seconds old at most)
            "--cluster-replica-validity-factor", "0",
            "--save", "",
            "--appendonly", "no",
            # full syncs start at once, without the default 5 s wait
            "--repl-diskless-sync", "yes",
            "--repl-diskless-sync-delay", "0",
            "--protected-mode", "yes",
            "--loglevel", "notice",
        ]

    def _spawn(self, node, timeout=10):
        """Starts node's redis-server and waits for PING. Returns False if it
        exited (e.g. its port was taken meanwhile)."""
        node.proc = subprocess.Popen(self._args(node), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=_die_with_parent)
        if wait_ping(node.port, node.proc, timeout):
            return True
        if node.proc.poll() is not None:
            return False
        raise RuntimeError("redis-server on %d did not answer:\n%s" % (node.port, node.log_tail()))

    def _spawn_new(self):
        taken = set(self.nodes)
        for _ in range(20):
            port = free_port(taken)
            d = os.path.join(self.dir, str(port))
            os.makedirs(d)
            node = Node(port, d)
            if self._spawn(node):
                self.nodes[port] = node
                return node
            self.log("port %d: redis-server exited, retrying:" % port, node.log_tail(3))
            taken.add(port)
        raise RuntimeError("could not start a redis-server")

    def stop_all(self):
        """Kills every redis-server of this cluster (SIGKILL: the data is
        thrown away anyway) and removes the directory. Idempotent."""
        _LIVE.discard(self)
        for node in self.nodes.values():
            if node.alive():
                node.proc.kill()
        for node in self.nodes.values():
            if node.proc is not None:
                try:
                    node.proc.wait(10)
                except subprocess.TimeoutExpired:  # pragma: no cover
                    pass
        if self.dir and not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        elif self.dir:
            print("cluster files kept in", self.dir, file=sys.stderr)

    # -- talking to nodes --

    def client(self, node, timeout=5.0):
        """A new Resp connection to a node (port or 'host:port'); the caller
        closes it (or uses `with`)."""
        return Resp(_port(node), timeout=timeout)

    def call(self, node, *args, raise_errors=True):
        with self.client(node) as c:
            return c.call(*args, raise_errors=raise_errors)

    def alive_ports(self):
        return sorted(p for p, n in self.nodes.items() if n.alive())

    def cluster_nodes(self, node=None):
        """CLUSTER NODES of a live node, as a list of dicts (id, port, flags,
        master, link, slots: list of (start, end); migrating/importing slots
        are left out)."""
        port = _port(node) if node is not None else self.alive_ports()[0]
        text = self.call(port, "CLUSTER", "NODES").decode()
        out = []
        for line in text.splitlines():
            f = line.split()
            if len(f) < 8:
                continue
            addr = f[1].split("@")[0]
            slots = []
            for s in f[8:]:
                if s.startswith("["):
                    continue
                a, _, b = s.partition("-")
                slots.append((int(a), int(b or a)))
            out.append({"id": f[0], "port": int(addr.rsplit(":", 1)[1]), "flags": f[2].split(","),
                        "master": f[3], "link": f[7], "slots": slots})
        return out

    def masters(self):
        """The live masters that serve slots, as 'host:port', by port."""
        alive = set(self.alive_ports())
        ms = [n["port"] for n in self.cluster_nodes()
              if "master" in n["flags"] and n["slots"] and n["port"] in alive
              and not {"fail", "fail?", "noaddr"} & set(n["flags"])]
        return ["%s:%d" % (HOST, p) for p in sorted(ms)]

    def seeds(self):
        """The live masters as a YAML flow list's items: "host:port", ..."""
        return ", ".join('"%s"' % m for m in self.masters())

    def store(self, timeout, on_failure="closed"):
        """The lines under a sluiced config's `store:` for this cluster (its
        masters the seeds; no trailing newline), as harness.redis_store."""
        return ("  type: redis\n  redis:\n    cluster: [%s]\n    timeout: %s\n    on_failure: %s"
                % (self.seeds(), timeout, on_failure))

    def replicas(self):
        alive = set(self.alive_ports())
        return ["%s:%d" % (HOST, n["port"]) for n in self.cluster_nodes()
                if "slave" in n["flags"] and n["port"] in alive]

    def slots_view(self, node):
        """CLUSTER SLOTS of a node as {(start, end): master port}."""
        return {(r[0], r[1]): r[2][1] for r in self.call(node, "CLUSTER", "SLOTS")}

    def node_for_slot(self, slot, node=None):
        """'host:port' of the master serving slot, in the view of node (any
        live node by default); None if unassigned."""
        port = _port(node) if node is not None else self.alive_ports()[0]
        for (a, b), p in self.slots_view(port).items():
            if a <= slot <= b:
                return "%s:%d" % (HOST, p)
        return None

    def node_for_key(self, key):
        return self.node_for_slot(keyslot(key))

    keyslot = staticmethod(keyslot)

    def command(self, key, *args):
        """args on the node serving key, following MOVED and ASK (as a
        cluster client does)."""
        port = _port(self.node_for_key(key))
        asking = False
        for _ in range(5):
            with self.client(port) as c:
                if asking:
                    c.call("ASKING")
                r = c.call(*args, raise_errors=False)
            if not isinstance(r, RespError):
                return r
            red = parse_redirect(str(r))
            if not red:
                raise r
            kind, _, port = red
            asking = kind == "ASK"
        raise RuntimeError("too many redirections for %r" % (key,))

    # -- waiting --

    def _wait(self, what, cond, timeout):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = cond()
                if last is True:
                    return
            except (OSError, ConnectionError, RespError) as e:
                last = e
            time.sleep(0.05)
        raise TimeoutError("%s: not within %g s (last: %r)\n%s" % (
            what, timeout, last, self.logs()))

    def logs(self, n=8):
        return "".join("--- node %d (%s)\n%s" % (p, "alive" if nd.alive() else "dead",
                                                 nd.log_tail(n))
                       for p, nd in sorted(self.nodes.items()))

    def topology(self, node):
        """A node's view of the live nodes: {port: (role, master port or None,
        slot ranges)}, role "master" or "replica", or "failing" for a node it
        flags fail/fail?/handshake/noaddr or is not connected to."""
        alive = set(self.alive_ports())
        nodes = self.cluster_nodes(node)
        port_of = {n["id"]: n["port"] for n in nodes}
        out = {}
        for n in nodes:
            if n["port"] not in alive:
                continue
            bad = {"fail", "fail?", "handshake", "noaddr"} & set(n["flags"])
            if bad or n["link"] != "connected":
                role = "failing"
            else:
                role = "replica" if "slave" in n["flags"] else "master"
            out[n["port"]] = (role, port_of.get(n["master"]), tuple(sorted(n["slots"])))
        return out

    def _healthy(self):
        """True when every live node says cluster_state:ok, live masters serve
        all 16384 slots, all live nodes have the same view of each other (who
        is master of which slots, who replicates whom, nobody failing), every
        live node is a master serving slots or a replica of a live master, and
        every replica is in sync (INFO replication on both sides). A returned
        string says what is missing."""
        alive = self.alive_ports()
        views = {}
        for p in alive:
            info = parse_info(self.call(p, "CLUSTER", "INFO"))
            if info.get("cluster_state") != "ok":
                return "node %d: cluster_state %s" % (p, info.get("cluster_state"))
            if info.get("cluster_slots_ok") != str(SLOTS):
                return "node %d: slots_ok %s" % (p, info.get("cluster_slots_ok"))
            views[p] = self.topology(p)
        view = views[alive[0]]
        for p in alive:
            if views[p] != view:
                return "views of %d and %d differ: %s / %s" % (alive[0], p, view, views[p])
        if set(view) != set(alive):
            return "live nodes %s, known %s" % (alive, sorted(view))
        served = sum(b - a + 1 for role, _, slots in view.values() if role == "master"
                     for a, b in slots)
        if served != SLOTS:  # e.g. a killed master not yet failed over
            return "live masters serve %d slots" % served
        for p, (role, master, slots) in view.items():
            if role == "failing":
                return "node %d seen failing" % p
            if role == "master" and not slots:
                return "master %d serves no slot" % p
            if role == "replica" and (master not in view or view[master][0] != "master"):
                return "replica %d follows %s" % (p, master)
        for p in alive:
            rep = parse_info(self.call(p, "INFO", "replication"))
            role, master, _ = view[p]
            if role == "replica":
                if (rep.get("role") != "slave" or rep.get("master_link_status") != "up"
                        or rep.get("master_sync_in_progress") != "0"
                        or int(rep.get("master_port", 0)) != master):
                    return "replica %d not in sync with %d" % (p, master)
            else:
                online = {int(re.search(r"port=(\d+)", v).group(1)) for k, v in rep.items()
                          if re.fullmatch(r"slave\d+", k) and "state=online" in v}
                want = {q for q, (r, m, _) in view.items() if r == "replica" and m == p}
                if rep.get("role") != "master" or not want <= online:
                    return "master %d: replicas online %s, want %s" % (p, online, want)
        return True

    def wait_ok(self, timeout=30):
        """Until the cluster is healthy (see _healthy)."""
        self._wait("cluster healthy", self._healthy, timeout)

    def wait_replicated(self, node, timeout=30):
        """Until every online replica of master node acknowledged the node's
        replication offset as it is now (what WAIT cannot do from a fresh
        connection: it waits for that connection's own writes, so there it
        returns at once). Returns how many replicas did (at least one)."""
        port = _port(node)
        target = int(parse_info(self.call(port, "INFO", "replication"))["master_repl_offset"])
        got = []

        def acked():
            rep = parse_info(self.call(port, "INFO", "replication"))
            offs = [int(re.search(r"offset=(\d+)", v).group(1)) for k, v in rep.items()
                    if re.fullmatch(r"slave\d+", k) and "state=online" in v]
            got[:] = [len(offs)]
            return bool(offs) and min(offs) >= target or "offsets %s < %d" % (offs, target)
        self._wait("replicas of %d at offset %d" % (port, target), acked, timeout)
        return got[0]

    # -- slot migration --

    def migrate_slot(self, slot, src, dst, pause=False, move_first=None, batch=100):
        """Moves slot from master src to master dst (ports or 'host:port') with
        the steps of the Redis Cluster specification: SETSLOT IMPORTING on
        dst, SETSLOT MIGRATING on src, MIGRATE of the slot's keys, SETSLOT
        NODE on dst, src, then every other master.

        pause=True stops after MIGRATE of some keys (move_first: a list of
        keys, or how many; default half of them, at least one): the slot is
        then MIGRATING on src and IMPORTING on dst, so src answers ASK for the
        moved keys. The returned Migration's finish() completes it. Without
        pause the migration is complete when this returns."""
        m = Migration(self, slot, _port(src), _port(dst), batch)
        m.begin()
        if pause:
            keys = m.keys_left()
            if move_first is None:
                move_first = max(1, len(keys) // 2) if keys else 0
            if isinstance(move_first, int):
                move_first = keys[:move_first]
            m.move(move_first)
            self.log("slot %d paused: %d keys moved, %d left" % (
                slot, len(m.moved), len(m.keys_left())))
            return m
        m.finish()
        return m

    # -- failures --

    def stop_master(self, node, how="kill"):
        """Stops a node: how="kill" (SIGKILL, nothing flushed: what a crash
        looks like) or "shutdown" (SHUTDOWN NOSAVE NOW)."""
        port = _port(node)
        nd = self.nodes[port]
        if how == "kill":
            nd.proc.kill()
        elif how == "shutdown":
            try:
                self.call(port, "SHUTDOWN", "NOSAVE", "NOW", raise_errors=False)
            except (OSError, ConnectionError):
                pass
        else:
            raise ValueError(how)
        nd.proc.wait(10)
        self.log("stopped", port, how)

    stop_node = stop_master

    def wait_failover(self, timeout=30):
        """Until a replica of every stopped master has been promoted, no slot
        is served by a dead node, and the cluster is healthy. Returns the
        masters ('host:port')."""
        t = time.monotonic()
        self.wait_ok(timeout)
        self.log("failover done in %.2f s" % (time.monotonic() - t))
        return self.masters()

    def restart(self, node, timeout=30):
        """Starts a stopped node again on its port and directory (it keeps
        its nodes.conf, so it rejoins, as a replica if it was failed over;
        its data is gone: no RDB, no AOF) and waits for a healthy cluster."""
        port = _port(node)
        nd = self.nodes[port]
        if nd.alive():
            raise RuntimeError("node %d is running" % port)
        if not self._spawn(nd):
            raise RuntimeError("node %d did not restart:\n%s" % (port, nd.log_tail()))
        self.wait_ok(timeout)
        self.log("restarted", port)


class Migration:
    """A slot migration in progress (see Cluster.migrate_slot)."""

    def __init__(self, cluster, slot, src, dst, batch):
        self.c, self.slot, self.src, self.dst, self.batch = cluster, slot, src, dst, batch
        self.moved = []
        self.done = False

    def begin(self):
        c = self.c
        owner = c.node_for_slot(self.slot, self.src)
        if owner != "%s:%d" % (HOST, self.src):
            raise RuntimeError("slot %d is served by %s, not %d" % (self.slot, owner, self.src))
        c.call(self.dst, "CLUSTER", "SETSLOT", self.slot, "IMPORTING", c.ids[self.src])
        c.call(self.src, "CLUSTER", "SETSLOT", self.slot, "MIGRATING", c.ids[self.dst])

    def keys_left(self):
        """Keys of the slot still on the source (at most 100000)."""
        return [k for k in self.c.call(self.src, "CLUSTER", "GETKEYSINSLOT", self.slot, 100000)]

    def move(self, keys):
        for i in range(0, len(keys), self.batch):
            part = keys[i:i + self.batch]
            if part:
                r = self.c.call(self.src, "MIGRATE", HOST, self.dst, "", 0, 5000, "KEYS", *part)
                if r not in ("OK", "NOKEY"):
                    raise RuntimeError("MIGRATE: %r" % (r,))
                self.moved.extend(part)

    def finish(self):
        """Moves the remaining keys and gives the slot to dst everywhere."""
        if self.done:
            return
        c = self.c
        while True:
            keys = self.keys_left()
            if not keys:
                break
            self.move(keys)
        dst_id = c.ids[self.dst]
        # target first, then source, then the other masters, as redis-cli does
        order = [self.dst, self.src] + [_port(m) for m in c.masters()
                                         if _port(m) not in (self.src, self.dst)]
        for p in order:
            c.call(p, "CLUSTER", "SETSLOT", self.slot, "NODE", dst_id)
        self.done = True
        c._wait("slot %d on %d everywhere" % (self.slot, self.dst),
                lambda: all(c.node_for_slot(self.slot, p) == "%s:%d" % (HOST, self.dst)
                            for p in c.alive_ports()) or "not yet", 15)
        c.log("slot %d moved %d -> %d (%d keys)" % (self.slot, self.src, self.dst, len(self.moved)))


# ---- the self-test ---------------------------------------------------------------------

def _check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def self_test(verbose=True):
    t0 = time.monotonic()
    stamps = []

    def stamp(what):
        stamps.append((what, time.monotonic() - t0))
        if verbose:
            print("self-test: %-38s %6.2f s" % (what, stamps[-1][1]), file=sys.stderr, flush=True)

    # the pure-Python CRC on the documented values, before any process starts
    _check(crc16(b"123456789") == 0x31C3, "crc16")
    for k, s in (("foo", 12182), ("bar", 5061), ("{user1000}.following", 3443),
                 ("{user1000}.followers", 3443), ("foo{}{bar}", 8363),
                 ("foo{{bar}}zap", 4015), ("foo{bar}{zap}", 5061), ("", 0)):
        _check(keyslot(k) == s, "keyslot(%r) = %d, want %d" % (k, keyslot(k), s))

    with Cluster(verbose=verbose) as c:
        stamp("cluster up")
        ms = c.masters()
        _check(len(ms) == 3 and len(c.replicas()) == 3, "3 masters + 3 replicas: %s" % ms)
        _check(all(p in c.nodes for p in map(_port, ms)), "masters are ours")

        # keyslot against CLUSTER KEYSLOT: 1000 random keys (braces frequent,
        # arbitrary bytes), one pipeline
        seed = int(os.environ.get("SLUICE_SEED", random.randrange(1 << 30)))
        rnd = random.Random(seed)
        alphabet = b"{}{}ab:xyz0123456789" + bytes(range(256))
        keys = [bytes(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 24)))
                for _ in range(1000)]
        with c.client(ms[0]) as r:
            got = r.pipeline([("CLUSTER", "KEYSLOT", k) for k in keys])
        for k, s in zip(keys, got):
            _check(keyslot(k) == s, "seed %d: keyslot(%r) = %d, Redis says %d"
                   % (seed, k, keyslot(k), s))
        stamp("keyslot == CLUSTER KEYSLOT x1000")

        # routing: a key on the wrong node is MOVED to the right one
        for i in range(30):
            k = "key:%d" % i
            right = _port(c.node_for_key(k))
            wrong = next(_port(m) for m in ms if _port(m) != right)
            r = c.call(wrong, "SET", k, i, raise_errors=False)
            _check(isinstance(r, RespError)
                   and parse_redirect(str(r)) == ("MOVED", keyslot(k), right),
                   "MOVED for %s: %r" % (k, r))
            _check(c.call(right, "SET", k, i) == "OK", "SET on owner")

        # a complete migration: ten keys of one slot move with it
        tag = "mig-a"
        slot = keyslot(tag)
        keys_a = ["{%s}:%d" % (tag, i) for i in range(10)]
        for i, k in enumerate(keys_a):
            _check(c.command(k, "SET", k, i) == "OK", "SET " + k)
        src = _port(c.node_for_slot(slot))
        dst = next(_port(m) for m in ms if _port(m) != src)
        c.migrate_slot(slot, src, dst)
        for p in c.alive_ports():
            _check(c.node_for_slot(slot, p) == "%s:%d" % (HOST, dst), "slot owner in %d's view" % p)
        for i, k in enumerate(keys_a):
            _check(c.call(dst, "GET", k) == str(i).encode(), "GET %s on the new owner" % k)
            r = c.call(src, "GET", k, raise_errors=False)
            _check(parse_redirect(str(r)) == ("MOVED", slot, dst), "old owner redirects: %r" % r)
        stamp("slot %d migrated %d -> %d" % (slot, src, dst))

        # a paused migration: the source answers ASK for moved keys, serves
        # the others; the target wants ASKING
        tag = key_in_slot((keyslot("mig-a") + SLOTS // 2) % SLOTS, "mig-b-")  # another slot
        slot = keyslot(tag)
        keys_b = ["{%s}:%d" % (tag, i) for i in range(10)]
        for i, k in enumerate(keys_b):
            c.command(k, "SET", k, i)
        src = _port(c.node_for_slot(slot))
        dst = next(_port(m) for m in ms if _port(m) != src)
        mig = c.migrate_slot(slot, src, dst, pause=True)
        moved = {k.decode() for k in mig.moved}
        _check(0 < len(moved) < len(keys_b), "paused halfway: %d moved" % len(moved))
        mig_line = [n for n in c.call(src, "CLUSTER", "NODES").decode().splitlines()
                    if "myself" in n][0]
        _check("[%d->-%s]" % (slot, c.ids[dst]) in mig_line, "MIGRATING state: " + mig_line)
        for i, k in enumerate(keys_b):
            r = c.call(src, "GET", k, raise_errors=False)
            if k in moved:
                _check(parse_redirect(str(r)) == ("ASK", slot, dst),
                       "ASK for moved %s: %r" % (k, r))
                r2 = c.call(dst, "GET", k, raise_errors=False)
                _check(parse_redirect(str(r2)) == ("MOVED", slot, src), "no ASKING: %r" % r2)
                with c.client(dst) as d:
                    _check(d.call("ASKING") == "OK", "ASKING")
                    _check(d.call("GET", k) == str(i).encode(), "GET after ASKING")
            else:
                _check(r == str(i).encode(), "source still serves %s: %r" % (k, r))
            _check(c.command(k, "GET", k) == str(i).encode(), "command() follows ASK")
        # a new key of the slot, written during the migration, lands on the
        # target (the source does not have it: ASK)
        newk = "{%s}:new" % tag
        _check(c.command(newk, "SET", newk, "n") == "OK", "SET during migration")
        mig.finish()
        for i, k in enumerate(keys_b):
            _check(c.call(dst, "GET", k) == str(i).encode(), "after finish: " + k)
        _check(c.call(dst, "GET", newk) == b"n", "new key after finish")
        stamp("slot %d paused, ASK, finished" % slot)
        c.wait_ok()

        # failover: kill the master that now holds keys_b; its replica (in
        # sync: WAIT) takes over with the data
        victim = dst
        _check(c.wait_replicated(victim) >= 1, "replica acknowledged")
        c.stop_master(victim)
        stamp("master %d killed" % victim)
        new_masters = c.wait_failover()
        stamp("failover done")
        _check(len(new_masters) == 3 and "%s:%d" % (HOST, victim) not in new_masters,
               "new masters %s" % new_masters)
        owner = _port(c.node_for_slot(slot))
        _check(owner != victim, "slot %d moved off the dead master" % slot)
        for i, k in enumerate(keys_b):
            _check(c.command(k, "GET", k) == str(i).encode(), "after failover: " + k)
        for i, k in enumerate(keys_a):
            _check(c.command(k, "GET", k) == str(i).encode(), "after failover: " + k)

        # the dead master comes back as a replica of its successor
        c.restart(victim)
        role = parse_info(c.call(victim, "INFO", "replication"))
        _check(role.get("role") == "slave" and int(role["master_port"]) == owner,
               "restarted node follows %d: %s" % (owner, role.get("master_port")))
        stamp("old master back as replica")
        ports = list(c.nodes)
        procs = [n.proc for n in c.nodes.values()]
    # everything stopped
    _check(all(p.poll() is not None for p in procs), "processes left")
    for p in ports:
        _check(not _listening(p), "port %d still listening" % p)
    stamp("stopped")
    print("self-test: ok in %.1f s" % (time.monotonic() - t0), file=sys.stderr)
    return 0


def main(argv):
    install_signal_handlers()
    if "--self-test" in argv:
        if not (os.access(REDIS_SERVER, os.X_OK) and os.access(REDIS_CLI, os.X_OK)):
            print("self-test: %s or %s missing: skipped" % (REDIS_SERVER, REDIS_CLI),
                  file=sys.stderr)
            return 77
        return self_test()
    with Cluster(verbose=True) as c:
        print("cluster up; masters:", " ".join(c.masters()))
        print("replicas:", " ".join(c.replicas()))
        print("files:", c.dir)
        print("Ctrl-C stops it.")
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
