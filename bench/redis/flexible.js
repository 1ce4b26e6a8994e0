#!/usr/bin/env node
// flexible.js: the peer of bench/redis/run.sh. node-rate-limiter-flexible's
// RateLimiterRedis (the limiter a Node.js team would pick to share a limit
// through Redis) on one ioredis client, driven from inside the same process
// the way an application calls it: C async loops, each awaiting
// limiter.consume(randomKey) back to back. A consume() that resolves is an
// allowed decision; one that rejects with a RateLimiterRes is a refused
// decision (counted as a decision too); one that rejects with an Error is an
// error (counted apart, never as a decision).
//
// Usage: node flexible.js --port P [--host 127.0.0.1] [--concurrency 50]
//          [--seconds 5] [--warmup 1] [--keys 100000] [--points 1000000]
//          [--duration 1] [--redis-pid PID]
//          [--decisions N [--sequential 1] [--flush 1]]
// Keys are "key:" and 7 digits (the key bytes of bench/redis/loadgen.c).
// With --decisions, the measured window is N consume() calls instead of
// --seconds (bench/redis/cpu.sh): keys drawn from --keys, or with
// --sequential 1 the keys 0..N-1 in turn; --flush 1 sends FLUSHALL after the
// warm-up, before the window opens (the script stays loaded), so that the
// output's used_memory_delta and dbsize are those of the window's keys.
// Needs NODE_PATH to hold rate-limiter-flexible and ioredis (run.sh installs
// them from bench/redis/package.json).
//
// It measures itself, over the measured window only (after the warm-up):
// Redis INFO (total_commands_processed, commandstats) and the CPU time of
// redis-server (/proc/PID/stat, with --redis-pid) and of this process are
// read when the window opens and again once every consume() started in it
// has settled; the one INFO read on the admin connection in between is
// subtracted. It prints one line of key=value pairs on stdout.
'use strict';

const fs = require('fs');
const Redis = require('ioredis');
const { RateLimiterRedis, RateLimiterRes } = require('rate-limiter-flexible');

function parseArgs(argv) {
  const o = {
    host: '127.0.0.1', port: 0, concurrency: 50, seconds: 5, warmup: 1,
    keys: 100000, points: 1000000, duration: 1, redisPid: 0,
    decisions: 0, sequential: 0, flush: 0,
  };
  const names = {
    '--host': 'host', '--port': 'port', '--concurrency': 'concurrency', '--seconds': 'seconds',
    '--warmup': 'warmup', '--keys': 'keys', '--points': 'points', '--duration': 'duration',
    '--redis-pid': 'redisPid', '--decisions': 'decisions', '--sequential': 'sequential',
    '--flush': 'flush',
  };
  for (let i = 2; i < argv.length; i += 2) {
    const k = names[argv[i]];
    if (!k || i + 1 >= argv.length) {
      process.stderr.write(`flexible.js: bad argument ${argv[i]}\n`);
      process.exit(2);
    }
    o[k] = k === 'host' ? argv[i + 1] : Number(argv[i + 1]);
  }
  if (!o.port) {
    process.stderr.write('flexible.js: --port is required\n');
    process.exit(2);
  }
  return o;
}

// utime + stime of a process, in seconds (all its threads), or NaN.
function procCpu(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / hz;
  } catch (e) {
    return NaN;
  }
}
const hz = 100; // sysconf(_SC_CLK_TCK) is 100 on Linux (USER_HZ)

// INFO stats + commandstats -> {total, calls: {cmd: n}}
async function redisCounters(admin) {
  const text = await admin.info('everything');
  const c = { total: 0, calls: {}, usec: {}, memory: 0 };
  for (const line of text.split('\r\n')) {
    let m = /^total_commands_processed:(\d+)/.exec(line);
    if (m) c.total = Number(m[1]);
    m = /^used_memory:(\d+)/.exec(line);
    if (m) c.memory = Number(m[1]);
    m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (m) {
      c.calls[m[1]] = Number(m[2]);
      c.usec[m[1]] = Number(m[3]);
    }
  }
  return c;
}

async function main() {
  const o = parseArgs(process.argv);
  // As the project's wiki shows it: no offline queue (fail fast when Redis
  // is down). The default ioredis client writes each command to the socket
  // as soon as it is issued, so the C loops share one connection with up to
  // C commands in flight (pipelined).
  const client = new Redis({ host: o.host, port: o.port, enableOfflineQueue: false, lazyConnect: true });
  const admin = new Redis({ host: o.host, port: o.port, lazyConnect: true });
  client.on('error', () => {});
  admin.on('error', () => {});
  await client.connect();
  await admin.connect();

  const limiter = new RateLimiterRedis({
    storeClient: client, // ioredis: the default client type (no useRedisPackage)
    points: o.points, // a fixed window of `points` per `duration` seconds per key
    duration: o.duration,
    keyPrefix: 'rlflx',
  });

  let phase = 'warmup'; // warmup -> measure -> stop
  const n = { allowed: 0, refused: 0, errors: 0, inWindow: 0, all: 0 };
  let firstError = null;

  const keyName = (i) => 'key:' + String(i).padStart(7, '0');
  let issued = 0; // consume() calls started in the window (--decisions)
  let windowDone = null; // resolves when the --decisions window has all started
  async function loop() {
    while (phase !== 'stop') {
      const counted = phase === 'measure';
      if (counted && o.decisions) {
        if (issued >= o.decisions) {
          if (windowDone) windowDone();
          break;
        }
        issued++;
      }
      const idx = counted && o.decisions && o.sequential ? issued - 1 : Math.floor(Math.random() * o.keys);
      const key = keyName(idx);
      try {
        await limiter.consume(key);
        n.all++;
        if (counted) n.allowed++;
      } catch (e) {
        if (e instanceof RateLimiterRes) {
          n.all++;
          if (counted) n.refused++;
        } else {
          if (counted) n.errors++;
          if (!firstError) firstError = e;
        }
      }
      if (counted && phase === 'measure') n.inWindow++;
    }
  }

  const loops = [];
  for (let i = 0; i < o.concurrency; i++) loops.push(loop());
  await new Promise((r) => setTimeout(r, o.warmup * 1000));

  // The window opens: counters first, then the flag. The loops that are
  // waiting on a warm-up consume() finish it uncounted; their commands (at
  // most C) were sent before the INFO and are not in the delta either.
  // With --decisions the warm-up ends before the window instead (every
  // loop stops, then starts again), so that the window is exactly N calls.
  if (o.decisions) {
    phase = 'stop';
    await Promise.all(loops);
    loops.length = 0;
    if (o.flush) await admin.flushall();
  }
  const r0 = await redisCounters(admin);
  const rcpu0 = o.redisPid ? procCpu(o.redisPid) : NaN;
  const self0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  phase = 'measure';
  if (o.decisions) {
    const started = new Promise((r) => { windowDone = r; });
    for (let i = 0; i < o.concurrency; i++) loops.push(loop());
    await started;
  } else {
    await new Promise((r) => setTimeout(r, o.seconds * 1000));
  }
  const t1 = process.hrtime.bigint();
  const inWindow = n.inWindow;
  phase = 'stop';
  await Promise.all(loops); // drain: every consume() issued in the window settles
  const r1 = await redisCounters(admin);
  const dbsize = await admin.dbsize();
  const rcpu1 = o.redisPid ? procCpu(o.redisPid) : NaN;
  const self1 = process.cpuUsage(self0);

  const secs = Number(t1 - t0) / 1e9;
  const decisions = n.allowed + n.refused; // all of them, the drained ones included
  const dcmd = r1.total - r0.total - 1; // minus the first INFO itself
  const callsOf = (c) => (r1.calls[c] || 0) - (r0.calls[c] || 0);
  const top = callsOf('evalsha') + callsOf('eval');
  const perDecision = (x) => (decisions > 0 ? (x / decisions).toFixed(3) : 'nan');
  const inner = Object.keys(r1.calls)
    .filter((c) => !['info', 'evalsha', 'eval', 'script'].includes(c) && callsOf(c) > 0)
    .map((c) => `${c}:${perDecision(callsOf(c))}`)
    .join(',');
  const usecOf = (c) => (r1.usec[c] || 0) - (r0.usec[c] || 0);
  const out = {
    decisions_per_s: (inWindow / secs).toFixed(0),
    seconds: secs.toFixed(3),
    decisions_in_window: inWindow,
    decisions,
    all_decisions: n.all, // the warm-up's included
    allowed: n.allowed,
    refused: n.refused,
    errors: n.errors,
    redis_commands_per_decision: perDecision(dcmd),
    redis_scripts_per_decision: perDecision(top),
    redis_inner_per_decision: inner || '-',
    redis_us_per_script: top > 0 ? ((usecOf('evalsha') + usecOf('eval')) / top).toFixed(1) : 'nan',
    redis_cpu_us_per_decision: perDecision((rcpu1 - rcpu0) * 1e6),
    redis_usec_per_decision: perDecision(
      Object.keys(r1.usec).filter((c) => !['info', 'flushall'].includes(c)).reduce((a, c) => a + usecOf(c), 0)),
    used_memory_delta: r1.memory - r0.memory,
    dbsize,
    node_cpu_us_per_decision: perDecision((self1.user + self1.system)),
  };
  process.stdout.write(Object.entries(out).map(([k, v]) => `${k}=${v}`).join(' ') + '\n');
  if (firstError) process.stderr.write(`flexible.js: first error: ${firstError.message}\n`);
  client.disconnect();
  admin.disconnect();
  if (n.errors > 0 && decisions === 0) process.exit(1);
}

main().catch((e) => {
  process.stderr.write(`flexible.js: ${e.stack || e}\n`);
  process.exit(1);
});
