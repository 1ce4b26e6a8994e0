#!/usr/bin/env node
// grpc_test.js SLUICED SOURCE_DIR: integration tests of sluiced's Envoy rate
// limit service with a real gRPC client (@grpc/grpc-js, @grpc/proto-loader,
// installed by grpc_test.sh) loading the upstream .proto definitions
// (grpc_protos/). Starts sluiced as sluiced_test.py does (port 0, ports read
// from its log) with the rule examples of envoyproxy/ratelimit's README, and
// checks: the README's semantics (nested descriptors, most specific match,
// wildcards, replaces, unlimited, shadow_mode), hits_addend, limit overrides,
// the sluice extensions (algorithm, burst), health checks, gRPC errors
// (INVALID_ARGUMENT, UNIMPLEMENTED, INTERNAL, RESOURCE_EXHAUSTED,
// DEADLINE_EXCEEDED, HTTP 415), framing split across DATA frames, broken
// HTTP/2 (GOAWAY) with the server still serving, POST /json, reload of the
// rule files, and a clean SIGTERM.
'use strict';

const assert = require('assert');
const child = require('child_process');
const fs = require('fs');
const http = require('http');
const http2 = require('http2');
const net = require('net');
const os = require('os');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');

const SLUICED = process.argv[2];
const SRC = process.argv[3];
const PROTOS = path.join(SRC, 'tests/integration/grpc_protos');
const RLS = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
const HEALTH = '/grpc.health.v1.Health/Check';

// ---- the rule files: envoyproxy/ratelimit README examples 1-9, unchanged ----

const RULES = {
  'example1.yaml': `
domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500

  - key: database
    value: default
    rate_limit:
      unit: second
      requests_per_unit: 500
`,
  'example2.yaml': `
domain: messaging
descriptors:
  # Only allow 5 marketing messages a day
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5

  # Only allow 100 messages a day to any unique phone number
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
`,
  'example3.yaml': `
domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10

  # Black list IP
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 0
`,
  'example4.yaml': `
domain: example4
descriptors:
  - key: key
    value: value
    rate_limit:
      requests_per_unit: 300
      unit: second
`,
  'example5.yaml': `
domain: internal
descriptors:
  - key: ldap
    rate_limit:
      unlimited: true

  - key: azure
    rate_limit:
      unit: minute
      requests_per_unit: 100
`,
  'example6.yaml': `
domain: example6
descriptors:
  - key: service
    descriptors:
      - key: user
        value: user-a
        rate_limit:
          requests_per_unit: 10
          unit: second
        shadow_mode: true
      - key: user
        value: user-b
        rate_limit:
          requests_per_unit: 20
          unit: second
`,
  'example7.yaml': `
domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          name: specific_limit
          requests_per_unit: 5
          unit: second
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces:
            - name: specific_limit
          requests_per_unit: 10
          unit: second
`,
  'example8.yaml': `
domain: example8
descriptors:
  - key: key1
    detailed_metric: true
    rate_limit:
      unit: minute
      requests_per_unit: 10
  - key: key1
    value: value1
    rate_limit:
      unit: minute
      requests_per_unit: 20
`,
  'example9.yaml': `
domain: example9
descriptors:
  - key: key1
    value: value*
    rate_limit:
      unit: minute
      requests_per_unit: 20
`,
  // sluice's own: every algorithm on the same rules, plus hits and overrides
  'sluice.yaml': `
domain: sluice
descriptors:
  - key: bucket
    rate_limit:
      unit: second
      requests_per_unit: 2
      algorithm: token_bucket
      burst: 4
  - key: window
    rate_limit:
      unit: hour
      requests_per_unit: 5
  - key: sliding
    rate_limit:
      unit: minute
      requests_per_unit: 3
      algorithm: sliding_log
`,
  // not a rule file: ignored by the directory loader
  'notes.txt': 'domain: ignored\n',
};

const CONFIG = `
listen:
  http: 127.0.0.1:0
  grpc: 127.0.0.1:0
  resp: "off"
workers: 2
limits:
  max_body_bytes: 4KiB
  idle_timeout: 5s
domains: rules
policies:
  - name: api
    algorithm: token_bucket
    rate: 5/s
    burst: 5
` + (process.env.SLUICE_STORE_YAML || '');

// ---- the server ---------------------------------------------------------------

class Server {
  constructor() {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluiced-grpc-'));
    fs.mkdirSync(path.join(this.dir, 'rules'));
    for (const [name, text] of Object.entries(RULES))
      fs.writeFileSync(path.join(this.dir, 'rules', name), text);
    this.config = path.join(this.dir, 'sluice.yaml');
    fs.writeFileSync(this.config, CONFIG);
    this.log = '';
  }

  start() {
    this.proc = child.spawn(SLUICED, ['-c', this.config], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.proc.stderr.on('data', (d) => { this.log += d.toString(); });
    this.exited = new Promise((resolve) => this.proc.on('exit', (code, sig) => resolve({ code, sig })));
    return new Promise((resolve, reject) => {
      const deadline = Date.now() + 15000;
      const poll = () => {
        const g = /listening grpc on \S+:(\d+)/.exec(this.log);
        const h = /listening http on \S+:(\d+)/.exec(this.log);
        if (g && h && /\bready\b/.test(this.log)) {
          this.grpcPort = Number(g[1]);
          this.httpPort = Number(h[1]);
          return resolve();
        }
        if (this.proc.exitCode !== null) return reject(new Error('sluiced exited early:\n' + this.log));
        if (Date.now() > deadline) return reject(new Error('sluiced did not start:\n' + this.log));
        setTimeout(poll, 20);
      };
      poll();
    });
  }

  async stop() {
    if (this.proc.exitCode === null) this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 15000);
    const r = await this.exited;
    clearTimeout(timer);
    return r;
  }
}

// ---- clients --------------------------------------------------------------------

const opts = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true,
               includeDirs: [PROTOS] };
const rlsPkg = grpc.loadPackageDefinition(loader.loadSync('envoy/service/ratelimit/v3/rls.proto', opts));
const healthPkg = grpc.loadPackageDefinition(loader.loadSync('grpc/health/v1/health.proto', opts));

let server, rls, health, raw;

function call(client, method, req, options = {}) {
  return new Promise((resolve, reject) => {
    client[method](req, new grpc.Metadata(), options, (err, resp) => (err ? reject(err) : resolve(resp)));
  });
}

const should = (domain, descriptors, extra = {}) => call(rls, 'ShouldRateLimit', { domain, descriptors, ...extra });
const d = (...pairs) => ({ entries: pairs.map(([key, value]) => ({ key, value: value || '' })) });

async function expectStatus(promise, code, messageRe) {
  try {
    await promise;
  } catch (e) {
    assert.strictEqual(e.code, code, `expected gRPC status ${code}, got ${e.code} (${e.details})`);
    if (messageRe) assert.match(e.details, messageRe);
    return e;
  }
  assert.fail(`expected gRPC status ${code}, got OK`);
}

// A client that sends raw bytes as the message (identity serializers).
function rawCall(pathName, bytes, options = {}) {
  return new Promise((resolve, reject) => {
    raw.makeUnaryRequest(pathName, (b) => b, (b) => b, bytes, new grpc.Metadata(), options,
      (err, resp) => (err ? reject(err) : resolve(resp)));
  });
}

// Protobuf by hand, from the field tables of protocols.md §1.2: an
// independent check of the wire format.
function varint(n) {
  const out = [];
  let v = BigInt(n);
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return Buffer.from(out);
}
const field = (tag, bytes) => Buffer.concat([Buffer.from([tag]), varint(bytes.length), bytes]);
const str = (tag, s) => field(tag, Buffer.from(s));
const frame = (msg) => Buffer.concat([Buffer.from([0]), Buffer.from([msg.length >>> 24, (msg.length >>> 16) & 255, (msg.length >>> 8) & 255, msg.length & 255]), msg]);

// Makes sure that at least `need` ms are left in the current window of `ms`
// (fixed windows are aligned to the epoch), waiting for the next window when
// not, so that a burst of calls stays in one window.
async function alignTo(ms, need = Math.min(ms / 2, 2000)) {
  const into = Date.now() % ms;
  if (into >= 5 && ms - into >= need) return;
  await sleep(ms - into + 5);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Redis calls of sluiced that failed so far (sluice_redis_calls_total's error,
// timeout and open results; 0 on the memory store, which has none).
async function redisFailures() {
  const text = await new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: server.httpPort, path: '/metrics' }, (res) => {
      let t = '';
      res.on('data', (c) => { t += c; });
      res.on('end', () => resolve(t));
    }).on('error', reject);
  });
  let n = 0;
  for (const m of text.matchAll(/^sluice_redis_calls_total\{result="(?:error|timeout|open)"\} (\d+)$/gm))
    n += Number(m[1]);
  return n;
}

// Runs fn (a burst of calls counted in fixed windows of `ms`, aligned to the
// epoch) from the start of a fresh window and returns its result when the
// whole burst stayed in that window: its first call sent and its last answer
// received in the same window, so that sluiced (on this machine's clock)
// decided every call in it. A burst that a loaded machine spread over two
// windows proves nothing and is run again in the next fresh window, where the
// counts start over; so is one during which a Redis call of sluiced failed
// (with grpc_test.sh's store, timeout 200 ms, on_failure: closed, a loaded
// machine holding Redis up refuses the burst's calls: not what it tests). A
// burst in one window on a healthy store must pass the caller's asserts.
async function oneWindow(ms, fn, attempts = 5) {
  for (let i = 1; ; i++) {
    const f0 = await redisFailures();
    await sleep(ms - (Date.now() % ms) + 5);
    const t0 = Date.now();
    const r = await fn();
    const t1 = Date.now();
    const failed = (await redisFailures()) - f0;
    if (Math.floor(t0 / ms) === Math.floor(t1 / ms) && failed === 0) return r;
    if (i === attempts) throw new Error(`${attempts} bursts each spread over two ${ms} ms windows or with failed Redis calls (the last took ${t1 - t0} ms, ${failed} calls failed)`);
    if (failed) console.log(`# ${failed} Redis calls failed or timed out during the burst: again`);
    else console.log(`# a burst took ${t1 - t0} ms from ${t0 % ms} ms into a ${ms} ms window: again`);
  }
}

// An HTTP/2 request with node's own client (for what grpc-js will not send).
function h2request(session, headers, chunks, { end = true } = {}) {
  return new Promise((resolve, reject) => {
    const req = session.request(headers, { endStream: false });
    const res = { headers: null, trailers: null, data: [] };
    req.on('response', (h) => { res.headers = h; });
    req.on('trailers', (t) => { res.trailers = t; });
    req.on('data', (c) => res.data.push(c));
    req.on('end', () => resolve({ ...res, data: Buffer.concat(res.data) }));
    req.on('error', reject);
    (async () => {
      for (const c of chunks) {
        req.write(c);
        await sleep(5); // separate DATA frames
      }
      if (end) req.end();
    })();
    res.req = req;
  });
}

function postJson(body) {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const req = http.request({ host: '127.0.0.1', port: server.httpPort, path: '/json', method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': data.length } }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, text, json: text ? JSON.parse(text) : null }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

function postReload() {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.httpPort, path: '/v1/reload', method: 'POST' }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

// Raw TCP: sends bytes, collects what comes back until the server closes.
function rawTcp(bytes, waitMs = 2000) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(server.grpcPort, '127.0.0.1');
    const got = [];
    const timer = setTimeout(() => { sock.destroy(); resolve({ data: Buffer.concat(got), closed: false }); }, waitMs);
    sock.on('connect', () => sock.write(bytes));
    sock.on('data', (c) => got.push(c));
    sock.on('error', () => {});
    sock.on('close', () => { clearTimeout(timer); resolve({ data: Buffer.concat(got), closed: true }); });
    sock.on('timeout', reject);
  });
}

// The frames in an HTTP/2 byte stream: [{type, flags, stream, payload}].
function frames(buf) {
  const out = [];
  for (let o = 0; o + 9 <= buf.length;) {
    const len = (buf[o] << 16) | (buf[o + 1] << 8) | buf[o + 2];
    out.push({ type: buf[o + 3], flags: buf[o + 4], stream: buf.readUInt32BE(o + 5) & 0x7fffffff,
               payload: buf.subarray(o + 9, o + 9 + len) });
    o += 9 + len;
  }
  return out;
}
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const h2frame = (type, flags, stream, payload) => {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, payload]);
};

// ---- the tests --------------------------------------------------------------------

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('health: Check for the server and the rate limit service; unknown services are NOT_FOUND', async () => {
  assert.deepStrictEqual(await call(health, 'Check', { service: '' }), { status: 'SERVING' });
  assert.deepStrictEqual(await call(health, 'Check', { service: 'envoy.service.ratelimit.v3.RateLimitService' }),
                         { status: 'SERVING' });
  // envoyproxy/ratelimit's own health service name
  assert.deepStrictEqual(await call(health, 'Check', { service: 'ratelimit' }), { status: 'SERVING' });
  await expectStatus(call(health, 'Check', { service: 'nope' }), grpc.status.NOT_FOUND);
  // Watch and List are not served: UNIMPLEMENTED tells clients not to retry
  await expectStatus(call(health, 'List', {}), grpc.status.UNIMPLEMENTED);
  // the wire: a SERVING answer is exactly 08 01 (protocols.md §2.1)
  const r = await rawCall(HEALTH, Buffer.alloc(0));
  assert.deepStrictEqual([...r], [0x08, 0x01]);
});

test('example 1: a key with a value, current_limit and duration_until_reset filled', async () => {
  await alignTo(1000);
  const r = await should('mongo_cps', [d(['database', 'users'])]);
  assert.strictEqual(r.overall_code, 'OK');
  assert.strictEqual(r.statuses.length, 1);
  const s = r.statuses[0];
  assert.strictEqual(s.code, 'OK');
  assert.deepStrictEqual(s.current_limit, { name: '', requests_per_unit: 500, unit: 'SECOND' });
  assert.strictEqual(s.limit_remaining, 499);
  assert.strictEqual(s.duration_until_reset.seconds, 1);
  // no rule for this value: OK, nothing else said
  const n = await should('mongo_cps', [d(['database', 'other'])]);
  assert.strictEqual(n.overall_code, 'OK');
  assert.strictEqual(n.statuses[0].current_limit, null);
  assert.strictEqual(n.statuses[0].limit_remaining, 0);
  // an unknown domain: OK (upstream)
  const u = await should('no_such_domain', [d(['database', 'users'])]);
  assert.strictEqual(u.overall_code, 'OK');
});

test('example 2: nested descriptors; all must pass, one status per descriptor in order, a refusal consumes nothing', async () => {
  const both = [d(['message_type', 'marketing'], ['to_number', '2061111111']), d(['to_number', '2061111111'])];
  for (let i = 1; i <= 5; i++) {
    const r = await should('messaging', both);
    assert.strictEqual(r.overall_code, 'OK');
    assert.strictEqual(r.statuses[0].limit_remaining, 5 - i);
    assert.strictEqual(r.statuses[0].current_limit.unit, 'DAY');
    assert.strictEqual(r.statuses[1].limit_remaining, 100 - i);
  }
  const over = await should('messaging', both);
  assert.strictEqual(over.overall_code, 'OVER_LIMIT');
  assert.strictEqual(over.statuses[0].code, 'OVER_LIMIT');
  assert.strictEqual(over.statuses[1].code, 'OK');
  assert.strictEqual(over.statuses[1].limit_remaining, 95, 'the refused request consumed nothing');
  // the per-number limit alone still counts from 95 (envoyproxy/ratelimit would say 94)
  const alone = await should('messaging', [d(['to_number', '2061111111'])]);
  assert.strictEqual(alone.statuses[0].limit_remaining, 94);
  // another number: its own counters
  const other = await should('messaging', [d(['message_type', 'marketing'], ['to_number', '2062222222'])]);
  assert.strictEqual(other.statuses[0].limit_remaining, 4);
});

test('example 3: most specific match (key+value before key); 0 requests per unit always refuses', async () => {
  const results = await oneWindow(1000, () => Promise.all(Array.from({ length: 11 }, () => should('edge_proxy_per_ip', [d(['remote_address', '50.0.0.1'])]))));
  const codes = results.map((r) => r.overall_code);
  assert.strictEqual(codes.filter((c) => c === 'OK').length, 10);
  assert.strictEqual(codes.filter((c) => c === 'OVER_LIMIT').length, 1);
  const black = await should('edge_proxy_per_ip', [d(['remote_address', '50.0.0.5'])]);
  assert.strictEqual(black.overall_code, 'OVER_LIMIT');
  assert.strictEqual(black.statuses[0].current_limit.requests_per_unit, 0);
});

test('example 4: a descriptor longer than the rules matches nothing', async () => {
  const r = await should('example4', [d(['key', 'value'], ['subkey', 'subvalue'])]);
  assert.strictEqual(r.overall_code, 'OK');
  assert.strictEqual(r.statuses[0].current_limit, null);
  const m = await should('example4', [d(['key', 'value'])]);
  assert.strictEqual(m.statuses[0].current_limit.requests_per_unit, 300);
});

test('example 5: unlimited reports 4294967295 remaining', async () => {
  for (let i = 0; i < 3; i++) {
    const r = await should('internal', [d(['ldap', 'x'])]);
    assert.strictEqual(r.overall_code, 'OK');
    assert.strictEqual(r.statuses[0].limit_remaining, 4294967295);
    assert.strictEqual(r.statuses[0].current_limit, null);
  }
  await alignTo(60000);
  const a = await should('internal', [d(['azure', 'x'])]);
  assert.strictEqual(a.statuses[0].limit_remaining, 99);
  assert.strictEqual(a.statuses[0].current_limit.unit, 'MINUTE');
});

test('example 6: shadow_mode never refuses; its neighbour does', async () => {
  const a = await oneWindow(1000, () => Promise.all(Array.from({ length: 15 }, () => should('example6', [d(['service', 'auth-service'], ['user', 'user-a'])]))));
  assert.ok(a.every((r) => r.overall_code === 'OK' && r.statuses[0].code === 'OK'));
  assert.ok(a.some((r) => r.statuses[0].limit_remaining === 0), 'the shadow limit ran out');
  const b = await oneWindow(1000, () => Promise.all(Array.from({ length: 21 }, () => should('example6', [d(['service', 'auth-service'], ['user', 'user-b'])]))));
  assert.strictEqual(b.filter((r) => r.overall_code === 'OVER_LIMIT').length, 1);
  // a shadow refusal does not block the request nor stop the others consuming
  await alignTo(1000);
  const mixed = await should('example6', [d(['service', 'x'], ['user', 'user-a']), d(['service', 'y'], ['user', 'user-b'])]);
  assert.strictEqual(mixed.overall_code, 'OK');
});

test('example 7: replaces drops the replaced limit and leaves it untouched', async () => {
  const both = [d(['key_1', 'value_1'], ['user', 'bkthomps']), d(['key_2', 'value_2'], ['user', 'bkthomps'])];
  const [rs, one] = await oneWindow(1000, async () => {
    const calls = [];
    for (let i = 0; i < 11; i++) calls.push(await should('example7', both));
    return [calls, await should('example7', [d(['key_1', 'value_1'], ['user', 'bkthomps'])])];
  });
  assert.strictEqual(rs.filter((r) => r.overall_code === 'OK').length, 10);
  assert.strictEqual(rs[10].overall_code, 'OVER_LIMIT');
  assert.strictEqual(rs[0].statuses[0].current_limit, null, 'the replaced limit is not reported');
  assert.strictEqual(rs[0].statuses[1].current_limit.requests_per_unit, 10);
  assert.strictEqual(one.statuses[0].limit_remaining, 4, 'the 5/s limit was not consumed');
  assert.strictEqual(one.statuses[0].current_limit.name, 'specific_limit');
});

test('example 8: detailed_metric loads; values pick the specific rule', async () => {
  await alignTo(60000);
  const r = await should('example8', [d(['key1', 'value1'])]);
  assert.strictEqual(r.statuses[0].current_limit.requests_per_unit, 20);
  const o = await should('example8', [d(['key1', 'something'])]);
  assert.strictEqual(o.statuses[0].current_limit.requests_per_unit, 10);
});

test('example 9: wildcard values, a counter per value', async () => {
  await alignTo(60000);
  const a = await should('example9', [d(['key1', 'value_1'])]);
  const a2 = await should('example9', [d(['key1', 'value_1'])]);
  const b = await should('example9', [d(['key1', 'value_2'])]);
  assert.strictEqual(a.statuses[0].limit_remaining, 19);
  assert.strictEqual(a2.statuses[0].limit_remaining, 18);
  assert.strictEqual(b.statuses[0].limit_remaining, 19);
  const no = await should('example9', [d(['key1', 'other'])]);
  assert.strictEqual(no.statuses[0].current_limit, null);
});

test('hits_addend: request level (0 means 1), descriptor level (0 checks without consuming)', async () => {
  const key = 'hits-' + process.pid;
  let r = await should('sluice', [d(['window', key])], { hits_addend: 2 });
  assert.strictEqual(r.statuses[0].limit_remaining, 3);
  r = await should('sluice', [d(['window', key])], { hits_addend: 0 });
  assert.strictEqual(r.statuses[0].limit_remaining, 2);
  r = await should('sluice', [{ ...d(['window', key]), hits_addend: { value: 0 } }], { hits_addend: 4 });
  assert.strictEqual(r.overall_code, 'OK');
  assert.strictEqual(r.statuses[0].limit_remaining, 2, 'a check without consuming');
  r = await should('sluice', [{ ...d(['window', key]), hits_addend: { value: 3 } }]);
  assert.strictEqual(r.overall_code, 'OVER_LIMIT', '3 > 2 left');
  assert.strictEqual(r.statuses[0].limit_remaining, 0, 'OVER_LIMIT says 0 remaining, as upstream');
  r = await should('sluice', [{ ...d(['window', key]), hits_addend: { value: 0 } }]);
  assert.strictEqual(r.statuses[0].limit_remaining, 2, 'nothing consumed by the refusal');
  r = await should('sluice', [{ ...d(['window', key]), hits_addend: { value: 2 } }]);
  assert.strictEqual(r.overall_code, 'OK');
  assert.strictEqual(r.statuses[0].limit_remaining, 0);
  // a cost beyond the limit can never pass
  r = await should('sluice', [{ ...d(['window', key + 'x']), hits_addend: { value: 1000 } }]);
  assert.strictEqual(r.overall_code, 'OVER_LIMIT');
});

test('descriptor limit override: its own counter at the given rate', async () => {
  await alignTo(60000);
  const desc = { ...d(['anything', 'override-' + process.pid]), limit: { requests_per_unit: 2, unit: 'MINUTE' } };
  const a = await should('sluice', [desc]);
  const b = await should('sluice', [desc]);
  const c = await should('sluice', [desc]);
  assert.deepStrictEqual([a, b, c].map((r) => r.overall_code), ['OK', 'OK', 'OVER_LIMIT']);
  assert.deepStrictEqual(a.statuses[0].current_limit, { name: '', requests_per_unit: 2, unit: 'MINUTE' });
  await expectStatus(should('sluice', [{ ...d(['a', 'b']), limit: { requests_per_unit: 2, unit: 'UNKNOWN' } }]),
                     grpc.status.INVALID_ARGUMENT);
});

test('sluice extensions: a token bucket with a burst on the same rules', async () => {
  const key = 'tb-' + process.pid;
  const rs = await Promise.all(Array.from({ length: 5 }, () => should('sluice', [d(['bucket', key])])));
  assert.strictEqual(rs.filter((r) => r.overall_code === 'OK').length, 4, 'burst 4');
  const over = rs.find((r) => r.overall_code === 'OVER_LIMIT');
  assert.ok(over.statuses[0].duration_until_reset.seconds >= 1, 'retry within a second or so');
  const sl = await should('sluice', [d(['sliding', key])]);
  assert.strictEqual(sl.statuses[0].limit_remaining, 2);
});

test('errors: empty domain or descriptors INVALID_ARGUMENT, unknown method UNIMPLEMENTED', async () => {
  await expectStatus(should('', [d(['a', 'b'])]), grpc.status.INVALID_ARGUMENT, /domain must not be empty/);
  await expectStatus(should('messaging', []), grpc.status.INVALID_ARGUMENT, /descriptor list must not be empty/);
  await expectStatus(rawCall('/envoy.service.ratelimit.v3.RateLimitService/Nope', Buffer.alloc(0)), grpc.status.UNIMPLEMENTED);
  await expectStatus(rawCall('/grpc.health.v1.Health/Watch', Buffer.alloc(0)), grpc.status.UNIMPLEMENTED);
});

test('the wire: a hand-made RateLimitRequest and its response bytes', async () => {
  // domain "messaging", one descriptor (to_number = "wire"), descriptor hits_addend present = 0
  const entry = Buffer.concat([str(0x0a, 'to_number'), str(0x12, 'wire-' + process.pid)]);
  const desc = Buffer.concat([field(0x0a, entry), field(0x1a, Buffer.from([0x08, 0x00]))]);
  const req = Buffer.concat([str(0x0a, 'messaging'), field(0x12, desc)]);
  const r = await rawCall(RLS, req);
  // overall_code OK = 08 01, then statuses (12 ...)
  assert.deepStrictEqual([...r.subarray(0, 3)], [0x08, 0x01, 0x12]);
  const decoded = loader.loadSync('envoy/service/ratelimit/v3/rls.proto', opts);
  assert.ok(decoded['envoy.service.ratelimit.v3.RateLimitResponse']);
  // limit_remaining 100 (a peek: nothing consumed) = 18 64 inside the status
  assert.ok(r.includes(Buffer.from([0x18, 0x64])), r.toString('hex'));
});

test('malformed protobuf is INTERNAL and the connection goes on', async () => {
  await expectStatus(rawCall(RLS, Buffer.from([0x0a, 0x20, 0x41])), grpc.status.INTERNAL, /cannot parse/);
  await expectStatus(rawCall(RLS, Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])), grpc.status.INTERNAL);
  await expectStatus(rawCall(HEALTH, Buffer.from([0x0a, 0x05, 0x61])), grpc.status.INTERNAL);
  assert.strictEqual((await call(health, 'Check', { service: '' })).status, 'SERVING');
});

test('a message over limits.max_body_bytes is RESOURCE_EXHAUSTED', async () => {
  const big = Buffer.concat([str(0x0a, 'x'.repeat(5000))]);
  await expectStatus(rawCall(RLS, big), grpc.status.RESOURCE_EXHAUSTED, /larger than 4096/);
  assert.strictEqual((await call(health, 'Check', { service: '' })).status, 'SERVING');
});

test('framing: a message split over DATA frames, the prefix too; 415 for another content-type; trailers', async () => {
  const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
  try {
    const msg = frame(Buffer.concat([str(0x0a, 'mongo_cps'), field(0x12, field(0x0a, Buffer.concat([str(0x0a, 'database'), str(0x12, 'default')])))]));
    const pieces = [msg.subarray(0, 2), msg.subarray(2, 7), msg.subarray(7, 12), msg.subarray(12)];
    const r = await h2request(session, { ':method': 'POST', ':path': RLS, 'content-type': 'application/grpc', te: 'trailers' }, pieces);
    assert.strictEqual(r.headers[':status'], 200);
    assert.strictEqual(r.headers['content-type'], 'application/grpc');
    assert.strictEqual(r.trailers['grpc-status'], '0');
    assert.strictEqual(r.data[0], 0);
    assert.strictEqual(r.data.readUInt32BE(1), r.data.length - 5);
    // SETTINGS: the concurrent stream limit
    assert.strictEqual(session.remoteSettings.maxConcurrentStreams, 128);
    const bad = await h2request(session, { ':method': 'POST', ':path': RLS, 'content-type': 'application/json' }, [Buffer.from('{}')]);
    assert.strictEqual(bad.headers[':status'], 415);
    const get = await h2request(session, { ':method': 'GET', ':path': RLS, 'content-type': 'application/grpc' }, []);
    assert.strictEqual(get.headers[':status'], 405);
    // two messages on a unary method: UNIMPLEMENTED (cardinality)
    const two = await h2request(session, { ':method': 'POST', ':path': HEALTH, 'content-type': 'application/grpc' }, [frame(Buffer.alloc(0)), frame(Buffer.alloc(0))]);
    assert.strictEqual(two.headers['grpc-status'], '12');
    // a compressed message without grpc-encoding: INTERNAL; with gzip: UNIMPLEMENTED
    const comp = await h2request(session, { ':method': 'POST', ':path': HEALTH, 'content-type': 'application/grpc' }, [Buffer.from([1, 0, 0, 0, 0])]);
    assert.strictEqual(comp.headers['grpc-status'], '13');
    const gz = await h2request(session, { ':method': 'POST', ':path': HEALTH, 'content-type': 'application/grpc', 'grpc-encoding': 'gzip' }, [Buffer.from([1, 0, 0, 0, 0])]);
    assert.strictEqual(gz.headers['grpc-status'], '12');
    assert.strictEqual(gz.headers['grpc-accept-encoding'], 'identity');
    // a truncated message: INTERNAL
    const cut = await h2request(session, { ':method': 'POST', ':path': HEALTH, 'content-type': 'application/grpc' }, [Buffer.from([0, 0, 0, 0, 9, 1])]);
    assert.strictEqual(cut.headers['grpc-status'], '13');
  } finally {
    session.close();
  }
});

test('grpc-timeout: a stream left open past its deadline gets DEADLINE_EXCEEDED', async () => {
  const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
  try {
    const open = h2request(session, { ':method': 'POST', ':path': HEALTH, 'content-type': 'application/grpc', 'grpc-timeout': '50m' },
                           [Buffer.from([0, 0])], { end: false });
    await sleep(150);
    // any later bytes on the connection let the server notice
    const ok = await h2request(session, { ':method': 'POST', ':path': HEALTH, 'content-type': 'application/grpc', 'grpc-timeout': '5S' }, [frame(Buffer.alloc(0))]);
    assert.strictEqual(ok.trailers['grpc-status'], '0');
    const late = await open;
    assert.strictEqual(late.headers['grpc-status'], '4');
  } finally {
    session.close();
  }
  // and grpc-js's own deadline
  assert.strictEqual((await call(health, 'Check', { service: '' }, { deadline: Date.now() + 5000 })).status, 'SERVING');
});

test('broken HTTP/2: GOAWAY and close; not HTTP/2 at all: close; the server keeps serving', async () => {
  // DATA on stream 0 is a connection error (PROTOCOL_ERROR)
  let r = await rawTcp(Buffer.concat([PREFACE, h2frame(4, 0, 0, Buffer.alloc(0)), h2frame(0, 0, 0, Buffer.from('x'))]));
  let fs2 = frames(r.data);
  let goaway = fs2.find((f) => f.type === 7);
  assert.ok(goaway, 'a GOAWAY');
  assert.strictEqual(goaway.payload.readUInt32BE(4), 1, 'PROTOCOL_ERROR');
  assert.ok(r.closed, 'closed');
  // a SETTINGS frame of a bad length: FRAME_SIZE_ERROR
  r = await rawTcp(Buffer.concat([PREFACE, h2frame(4, 0, 0, Buffer.from([0, 3, 0]))]));
  goaway = frames(r.data).find((f) => f.type === 7);
  assert.ok(goaway, 'a GOAWAY');
  assert.strictEqual(goaway.payload.readUInt32BE(4), 6, 'FRAME_SIZE_ERROR');
  // HPACK garbage in HEADERS: COMPRESSION_ERROR
  r = await rawTcp(Buffer.concat([PREFACE, h2frame(4, 0, 0, Buffer.alloc(0)), h2frame(1, 5, 1, Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff]))]));
  goaway = frames(r.data).find((f) => f.type === 7);
  assert.ok(goaway, 'a GOAWAY');
  assert.strictEqual(goaway.payload.readUInt32BE(4), 9, 'COMPRESSION_ERROR');
  // HTTP/1.1 on the gRPC port: closed at once
  r = await rawTcp(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
  assert.ok(r.closed);
  // still serving
  assert.strictEqual((await call(health, 'Check', { service: '' })).status, 'SERVING');
  assert.strictEqual((await should('mongo_cps', [d(['database', 'users'])])).overall_code, 'OK');
});

test('POST /json: the same decisions in the proto3 JSON form, 429 when over the limit', async () => {
  const body = { domain: 'messaging', descriptors: [{ entries: [{ key: 'message_type', value: 'marketing' }, { key: 'to_number', value: 'json-' + process.pid }] }] };
  let r;
  for (let i = 0; i < 5; i++) {
    r = await postJson(body);
    assert.strictEqual(r.status, 200);
  }
  assert.deepStrictEqual(Object.keys(r.json.statuses[0]).sort(), ['code', 'currentLimit', 'durationUntilReset']);
  r = await postJson(body);
  assert.strictEqual(r.status, 429);
  assert.strictEqual(r.json.overallCode, 'OVER_LIMIT');
  assert.deepStrictEqual(r.json.statuses[0].currentLimit, { requestsPerUnit: 5, unit: 'DAY' });
  assert.match(r.json.statuses[0].durationUntilReset, /^\d+s$/);
  r = await postJson({ domain: 'internal', descriptors: [{ entries: [{ key: 'ldap', value: 'x' }] }], hits_addend: 2 });
  assert.strictEqual(r.json.statuses[0].limitRemaining, 4294967295);
  r = await postJson('{"domain": ');
  assert.strictEqual(r.status, 400);
  r = await postJson({ domain: 'x', descriptors: [], bogus: 1 });
  assert.strictEqual(r.status, 400);
  r = await postJson({ domain: '', descriptors: [{ entries: [] }] });
  assert.strictEqual(r.status, 400);
});

test('reload: changed rule files apply; a broken one is refused and the old rules stay', async () => {
  const file = path.join(server.dir, 'rules', 'example4.yaml');
  fs.writeFileSync(file, RULES['example4.yaml'].replace('300', '7'));
  let rr = await postReload();
  assert.strictEqual(rr.status, 200, rr.text);
  let r = await should('example4', [d(['key', 'value'])]);
  assert.strictEqual(r.statuses[0].current_limit.requests_per_unit, 7);
  fs.writeFileSync(file, RULES['example4.yaml'].replace('unit: second', 'unit: fortnight'));
  rr = await postReload();
  assert.strictEqual(rr.status, 500);
  assert.match(rr.text, /example4\.yaml:\d+: descriptors\[0\]\.rate_limit\.unit: invalid rate limit unit 'fortnight'/);
  r = await should('example4', [d(['key', 'value'])]);
  assert.strictEqual(r.statuses[0].current_limit.requests_per_unit, 7);
  fs.writeFileSync(file, RULES['example4.yaml']);
  assert.strictEqual((await postReload()).status, 200);
});

test('many connections at once (both workers): the total admitted never exceeds the limit', async () => {
  const key = 'conc-' + process.pid;
  const target = `127.0.0.1:${server.grpcPort}`;
  const clients = Array.from({ length: 8 }, () => new rlsPkg.envoy.service.ratelimit.v3.RateLimitService(
    target, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }));
  try {
    const calls = [];
    for (const c of clients)
      for (let i = 0; i < 40; i++) calls.push(call(c, 'ShouldRateLimit', { domain: 'sluice', descriptors: [d(['window', key])] }));
    const rs = await Promise.all(calls);
    assert.strictEqual(rs.filter((r) => r.overall_code === 'OK').length, 5, '5 per hour');
  } finally {
    clients.forEach((c) => c.close());
  }
});

test('many calls at once on one connection (more than the stream limit)', async () => {
  const rs = await Promise.all(Array.from({ length: 300 }, (_, i) => should('mongo_cps', [d(['database', 'conc-' + (i % 7)])])));
  assert.ok(rs.every((r) => r.overall_code === 'OK'));
});

// ---- main ---------------------------------------------------------------------------

(async () => {
  server = new Server();
  let failed = 0;
  try {
    await server.start();
    const target = `127.0.0.1:${server.grpcPort}`;
    rls = new rlsPkg.envoy.service.ratelimit.v3.RateLimitService(target, grpc.credentials.createInsecure());
    health = new healthPkg.grpc.health.v1.Health(target, grpc.credentials.createInsecure());
    raw = new grpc.Client(target, grpc.credentials.createInsecure());
    for (const t of tests) {
      const t0 = Date.now();
      try {
        await t.fn();
        console.log(`ok   ${t.name} (${Date.now() - t0} ms)`);
      } catch (e) {
        failed++;
        console.log(`FAIL ${t.name}\n${e.stack}`);
      }
    }
    rls.close();
    health.close();
    raw.close();
  } catch (e) {
    failed++;
    console.log(`FAIL setup\n${e.stack}`);
  }
  const r = await server.stop();
  if (r.code !== 0) {
    failed++;
    console.log(`FAIL sluiced exited with ${r.code} ${r.sig || ''}`);
  }
  if (failed) console.log('--- sluiced log ---\n' + server.log);
  if (!failed) fs.rmSync(server.dir, { recursive: true, force: true });
  console.log(failed ? `${failed} failed` : `all ${tests.length} passed`);
  process.exit(failed ? 1 : 0);
})();
