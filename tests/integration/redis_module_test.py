"""redis_module_test.py SLUICED SOURCE_DIR MODULE [--only NAME]: sluice-redis.so
(SLUICE.DECIDE) with real redis-servers and sluiced, on loopback:

- replication: a replica (a second redis-server with --replicaof, without the
  module) holds the same state strings, lists and absolute expiry times
  (PEXPIRETIME) as its master after decisions of every algorithm, made
  directly and through sluiced: the module replicates its effects (SET ...
  PXAT, DEL, LTRIM, RPUSH, PEXPIREAT), never the command (which the replica
  would not even know);
- late_listeners: a replica that attaches after keys were written, and an
  AOF switched on after them, get the state: the module replicates nothing
  while nothing listens (no AOF, no replica, no backlog), so a fork (the
  replica's full sync, the AOF rewrite) and the AOF flag must turn it back
  on; and with RDB save points only, rdb_changes_since_last_save still
  counts the calls;
- listener_windows: a replica attached while its full sync's fork is
  delayed (writes then are in the fork's snapshot), and a replica dropped by
  the master and kept stopped while keys are written (the backlog keeps the
  module replicating; its PSYNC brings them);
- cluster_replica: on a 3-master Redis Cluster with the module, a call's
  replicated EVAL (its keys in one slot) reaches the master's replica,
  stopped during the calls (WAIT on the calls' own connection);
- require_missing: store.redis.module: require on a Redis without the module
  refuses to decide (the fail mode answers) and /readyz says degraded,
  "decide":"missing";
- auto_fallback: module: auto on a Redis without the module decides through
  the script ("decide":"script"), and on one with it through the module
  ("decide":"module", sluice_redis_decide_calls_total{via="module"});
- config_key: store.redis.module takes auto, require, off (sluiced --check-config).

Built on distributed_test.py's Env, RedisServer and Daemon (standard library
only)."""
import argparse
import os
import signal
import subprocess
import sys
import time

import distributed_test as dt
import harness
import redis_cluster

MODULE = None


def config(url, module, on_failure="closed"):
    pols = [{"name": "tb", "algorithm": "token_bucket", "rate": "5/h", "burst": 5},
            {"name": "gc", "algorithm": "gcra", "rate": "5/h", "burst": 5},
            {"name": "lq", "algorithm": "leaky_queue", "rate": "5/h", "burst": 5},
            {"name": "fw", "algorithm": "fixed_window", "rate": "5/h"},
            {"name": "sw", "algorithm": "sliding_window", "rate": "5/h"},
            {"name": "sl", "algorithm": "sliding_log", "rate": "5/h"}]
    return dt.sluice_config(url, pols, module=module, on_failure=on_failure, deny_cache=0,
                            timeout="2s")


def keys_state(redis):
    """{key: (type, value or list, PEXPIRETIME)} of every key."""
    out = {}
    for k in redis.call("KEYS", "*"):
        t = redis.call("TYPE", k)
        v = redis.call("LRANGE", k, "0", "-1") if t == "list" else redis.call("GET", k)
        out[k] = (t, v, redis.call("PEXPIRETIME", k))
    return out


def decide(redis, n_keys, args):
    """One SLUICE.DECIDE call (args after the keys); the reply."""
    return redis.call("SLUICE.DECIDE", str(n_keys), *args)


# every algorithm: sets (alg, limit, period_us, burst, flags, origin, tag);
# periods of an hour: no state expires while a loaded machine runs the test
H = "3600000000"
SETS = [("1", "3", H, "0", "2", "0", "a1"),        # fixed window, count rejected
        ("2", "3", H, "0", "1", "1000000", "a2"),  # sliding log, start empty
        ("2", "3", H, "0", "0", "0", "a3"),        # sliding log
        ("3", "3", H, "0", "0", "0", "a4"),        # sliding window
        ("4", "3", H, "3", "0", "0", "a5"),        # token bucket
        ("5", "3", H, "3", "0", "0", "a6"),        # gcra (n 1: decimal state)
        ("5", "3", H, "3", "512", "0", "cell"),    # any rate
        ("6", "2", H, "2", "2", "0", "a8")]        # leaky queue


def decide_every(redis, rounds, prefix="k"):
    """`rounds` calls deciding one key of every algorithm each (Redis TIME)."""
    for rnd in range(rounds):
        keys, items = [], []
        for j in range(len(SETS)):
            keys.append("%s%d" % (prefix, j))
            items += [str(j + 1), str(1 + rnd % 3), "0"]
        args = keys + ["0", str(len(SETS))] + [x for s in SETS for x in s] + items
        r = decide(redis, len(keys), args)
        assert isinstance(r, list) and len(r) == 6 * len(keys), r


def live(state):
    """The keys of keys_state() whose expiry is not within 5 s (an aligned
    window's end may pass between two reads)."""
    soon = time.time() * 1000 + 5000
    return {k: v for k, v in state.items() if v[2] < 0 or v[2] > soon}


def same_keys(a, b, what):
    """Waits until redis b holds what a holds (every live key, value, expiry)."""
    harness.wait_until(lambda: live(keys_state(b)) == live(keys_state(a)), 20,
                       "%s: the keys differ:\n master  %s\n other   %s"
                       % (what, keys_state(a), keys_state(b)))
    return live(keys_state(a))


def replication():
    dt.REDIS_MODULE = MODULE
    with dt.Env("modrepl") as env:
        master = env.redis()
        dt.REDIS_MODULE = None  # the replica has no module: it gets effects only
        replica = env.redis(["--replicaof", "127.0.0.1", str(master.port)])
        dt.REDIS_MODULE = MODULE
        harness.wait_until(lambda: replica.info("replication").get("master_link_status") == "up",
                           30, "the replica did not sync")
        decide_every(master, 6)
        # a sliding log trimmed from its head (a call 61 s later on the fake clock)
        t = 1700000000000000
        slargs = ["0", "1", "2", "3", "60000000", "0", "0", "0", "t"]
        for dt_us in (0, 1, 2, 61000000, 61000001):
            decide(master, 1, ["lg", str(t + dt_us)] + slargs[1:] + ["1", "2", "0"])
        # and through sluiced (Redis TIME), every policy
        d = env.sluiced("sluiced", config(master.url, "require"))
        dt.wait_ready((d,))
        for p in ("tb", "gc", "lq", "fw", "sw", "sl"):
            for _ in range(7):
                st, _, body = d.check(p, "user-1")
                assert st in (200, 429) and not body.get("fallback"), (st, body)
        assert master.call("WAIT", "1", "10000") == 1
        want = same_keys(master, replica, "replica")
        assert len(want) >= 10, want
        kinds = {v[0] for v in want.values()}
        assert kinds == {"string", "list"}, kinds
        # the replica never saw the command itself
        assert "cmdstat_sluice.decide" not in replica.info("commandstats")
        print("  %d keys equal on master and replica" % len(want))


def late_listeners():
    dt.REDIS_MODULE = MODULE
    with dt.Env("modlate") as env:
        # a replica attached after the keys were written: the snapshot of its
        # full sync has them, and every write after it reaches it
        master = env.redis()
        decide_every(master, 3, "a")
        dt.REDIS_MODULE = None
        replica = env.redis(["--replicaof", "127.0.0.1", str(master.port)])
        harness.wait_until(lambda: replica.info("replication").get("master_link_status") == "up",
                           30, "the replica did not sync")
        decide_every(master, 3, "a")  # keys written before the replica came
        decide_every(master, 3, "b")  # new keys
        assert master.call("WAIT", "1", "10000") == 1
        want = same_keys(master, replica, "late replica")
        assert sum(k.startswith(b"b") for k in want) >= 6, want
    # the AOF switched on after the keys were written: after the rewrite,
    # every write is in it (a redis-server loading it alone, without the
    # module, holds the master's keys); a directory of its own (the replica
    # above left a dump.rdb)
    dt.REDIS_MODULE = MODULE
    with dt.Env("modaof") as env:
        master2 = env.redis()
        decide_every(master2, 3, "a")
        assert master2.call("CONFIG", "SET", "appendonly", "yes") == "OK"
        harness.wait_until(lambda: master2.info("persistence").get("aof_rewrite_in_progress") == "0"
                           and master2.info("persistence").get("aof_rewrite_scheduled") == "0"
                           and master2.info("persistence").get("aof_enabled") == "1", 30,
                           "the AOF rewrite did not end")
        decide_every(master2, 3, "a")
        decide_every(master2, 3, "b")
        aofdir = master2.call("CONFIG", "GET", "appenddirname")[1].decode()
        copy = env.path("aof-copy")
        os.makedirs(os.path.join(copy, aofdir))
        # appendfsync everysec replies before it writes when a background fsync
        # is still running (Redis postpones the write up to 2 s): the copy waits
        # until the AOF buffer is in the file
        harness.wait_until(lambda: master2.info("persistence").get("aof_buffer_length") == "0",
                           30, "the AOF buffer was not written")
        copy_aof(os.path.join(env.dir, aofdir), os.path.join(copy, aofdir))
        dt.REDIS_MODULE = None
        loaded = env.redis(["--dir", copy, "--appendonly", "yes", "--appenddirname", aofdir])
        want = same_keys(master2, loaded, "AOF")
        assert sum(k.startswith(b"b") for k in want) >= 6, want
    # RDB save points and nothing else: the calls still count as changes
    dt.REDIS_MODULE = MODULE
    with dt.Env("modsave") as env:
        saver = env.redis(["--save", "3600 1"])
        before = int(saver.info("persistence")["rdb_changes_since_last_save"])
        decide_every(saver, 2, "c")
        after = int(saver.info("persistence")["rdb_changes_since_last_save"])
        assert after > before, (before, after)
    print("  late replica, late AOF and save points: %d keys" % len(want))


def listener_windows():
    """The two windows in which a replica listens without a server event
    having said so, ordered by the test: (1) a replica attached (SYNC)
    but its full sync's fork not started yet (a diskless sync delay):
    writes then are skipped, and the snapshot taken at the fork has them;
    (2) a replica whose link the master dropped (REPLICA_CHANGE offline),
    kept stopped while keys are written: the backlog keeps the module
    replicating, so its partial resync (PSYNC) brings them."""
    dt.REDIS_MODULE = MODULE
    with dt.Env("modwin") as env:
        master = env.redis(["--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "3600"])
        dt.REDIS_MODULE = None
        replica = env.redis(["--replicaof", "127.0.0.1", str(master.port)])
        harness.wait_until(lambda: "state=wait_bgsave" in master.info("replication").get(
            "slave0", ""), 30, "the replica is not waiting for its fork")
        decide_every(master, 3, "w")  # attached, no fork yet
        assert master.call("CONFIG", "SET", "repl-diskless-sync-delay", "0") == "OK"
        harness.wait_until(lambda: replica.info("replication").get("master_link_status") == "up",
                           30, "the replica did not sync")
        decide_every(master, 3, "x")  # online
        want = same_keys(master, replica, "attached before the fork")
        assert sum(k.startswith(b"w") for k in want) >= 6, want
        partial = int(master.info("stats")["sync_partial_ok"])
        replica.proc.send_signal(signal.SIGSTOP)
        try:
            master.call("CLIENT", "KILL", "TYPE", "replica")
            harness.wait_until(lambda: master.info("replication")["connected_slaves"] == "0", 30,
                               "the master kept its replica")
            decide_every(master, 3, "y")  # no replica, a backlog
        finally:
            replica.proc.send_signal(signal.SIGCONT)
        harness.wait_until(lambda: int(master.info("stats")["sync_partial_ok"]) > partial, 30,
                           "the replica did not come back with PSYNC")
        want = same_keys(master, replica, "partial resync")
        assert sum(k.startswith(b"y") for k in want) >= 6, want
    print("  attached before the fork, back by PSYNC: %d keys" % len(want))


def copy_aof(src, dst):
    """Copies an AOF directory (manifest and parts) into dst."""
    for name in os.listdir(src):
        with open(os.path.join(src, name), "rb") as f, open(os.path.join(dst, name), "wb") as g:
            g.write(f.read())


class ModuleCluster(redis_cluster.Cluster):
    """redis_cluster.Cluster with sluice-redis.so loaded on every node."""

    def _args(self, node):
        return super()._args(node) + ["--loadmodule", MODULE]


def cluster_replica():
    """The calls and WAIT on one connection (WAIT counts the replicas that
    acknowledged the writes of its own connection: on a fresh one it returns
    at once), the replica stopped meanwhile, so that only the replicated
    EVAL can bring it the keys and WAIT cannot return before it did."""
    keys = ["sl:{u1}:%d" % j for j in range(len(SETS))]
    with ModuleCluster(masters=3, replicas=1) as cl:
        port = int(cl.node_for_key(keys[0]).split(":")[1])
        replica = [n["port"] for n in cl.cluster_nodes()
                   if "slave" in n["flags"] and n.get("master") == cl.ids[port]]
        assert len(replica) == 1, replica
        proc = cl.nodes[replica[0]].proc
        with cl.client(port) as c:
            proc.send_signal(signal.SIGSTOP)
            try:
                for rnd in range(3):
                    items = [x for j in range(len(SETS)) for x in (str(j + 1), str(1 + rnd), "0")]
                    r = c.call("SLUICE.DECIDE", str(len(keys)), *keys, "0", str(len(SETS)),
                               *[x for st in SETS for x in st], *items)
                    assert isinstance(r, list) and len(r) == 6 * len(keys), r
                # a stopped replica acknowledges nothing: 0 unless nothing
                # was replicated (the offset of this connection not moved)
                assert c.call("WAIT", "1", "100") == 0
            finally:
                proc.send_signal(signal.SIGCONT)
            assert c.call("WAIT", "1", "20000") == 1
            want = {k: (c.call("TYPE", k), c.call("PEXPIRETIME", k)) for k in keys}
        with cl.client(replica[0]) as c:
            c.call("READONLY")
            got = {k: (c.call("TYPE", k), c.call("PEXPIRETIME", k)) for k in keys}
            assert "cmdstat_sluice.decide" not in c.call("INFO", "commandstats").decode()
        assert got == want and all(v[0] != b"none" for v in want.values()), (want, got)


def require_missing():
    dt.REDIS_MODULE = None
    with dt.Env("modreq") as env:
        redis = env.redis()
        d = env.sluiced("sluiced", config(redis.url, "require", on_failure="closed"))
        dt.wait_ready((d,))  # connected; nothing decided yet
        st, _, body = d.check("tb", "u")
        assert st in (429, 503) and body.get("fallback"), (st, body)
        harness.wait_until(lambda: '"decide":"missing"' in d.readyz()[1], 20,
                           "/readyz does not say the module is missing: %s" % (d.readyz(),))
        st, body = d.readyz()
        assert st == 503 and '"status":"degraded"' in body, (st, body)
        m = d.metrics()
        assert m.need("sluice_redis_module_missing") >= 1
        assert "cmdstat_evalsha" not in redis.info("commandstats")


def auto_fallback():
    for module, via in ((None, "script"), (MODULE, "module")):
        dt.REDIS_MODULE = module
        with dt.Env("modauto") as env:
            redis = env.redis()
            d = env.sluiced("sluiced", config(redis.url, "auto"))
            dt.wait_ready((d,))

            def decided():
                st, _, body = d.check("gc", "u")
                assert st in (200, 429) and not body.get("fallback"), (st, body)
                return '"decide":"%s"' % via in d.readyz()[1]
            harness.wait_until(decided, 20, "/readyz does not say %s: %s" % (via, d.readyz(),))
            st, body = d.readyz()
            assert st == 200, (st, body)
            m = d.metrics()
            assert m.need("sluice_redis_decide_calls_total", via=via) >= 1
            cs = redis.info("commandstats")
            assert ("cmdstat_sluice.decide" in cs) == (via == "module"), sorted(cs)


def config_key():
    """store.redis.module takes auto, require and off, and nothing else."""
    with dt.Env("modcfg") as env:
        for value, ok in (("auto", True), ("require", True), ("off", True), ("yes", False)):
            path = env.write("c.yaml", config("redis://127.0.0.1:1/0", value))
            p = subprocess.run([dt.SLUICED, "--check-config", path], capture_output=True,
                               text=True, timeout=60)
            assert (p.returncode == 0) == ok, (value, p.returncode, p.stdout, p.stderr)
            if not ok:
                assert "module" in p.stdout + p.stderr, p.stderr


TESTS = [replication, late_listeners, listener_windows, cluster_replica, require_missing, auto_fallback, config_key]


def main():
    global MODULE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sluiced")
    ap.add_argument("src")
    ap.add_argument("module")
    ap.add_argument("--redis-server", default=dt.REDIS_SERVER)
    ap.add_argument("--only", action="append", metavar="NAME")
    args = ap.parse_args()
    dt.SLUICED, dt.SRC = os.path.abspath(args.sluiced), os.path.abspath(args.src)
    dt.REDIS_SERVER = args.redis_server
    MODULE = os.path.abspath(args.module)
    tests = harness.select_tests(ap, TESTS, args.only)
    return harness.run_tests(tests, dt.ALL_PROCS)


if __name__ == "__main__":
    sys.exit(main())
