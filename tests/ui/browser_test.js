// browser_test.js SLUICED ARTEFACT_DIR: the /ui/ dashboard in a real browser
// (tests/ui/browser_test.sh installs playwright-core and runs this with
// NODE_PATH set). Starts sluiced (admin.ui: loopback) on a free loopback
// port, loads /ui/ in headless Chromium (Debian's /usr/bin/chromium, or
// $CHROMIUM), sends traffic, and waits until the page shows it: the policy's
// counters, a limited/s line above zero in its chart, the refused keys in
// the top-keys table (one of them markup, which must stay text). No console
// error and no CSP violation may occur. Waits by polling the page with
// generous deadlines, never by sleeping; nothing depends on the machine's
// speed. Keeps a screenshot, ARTEFACT_DIR/dashboard.png.
'use strict';

const { spawn } = require('child_process');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const [sluiced, artefacts] = process.argv.slice(2);
const DEADLINE = 120000; // ms for any one wait: a loaded 2-core machine, ASan
const HOSTILE = '<img src=x id=pwned onerror=alert(1)>';

const CONFIG = `
listen:
  http: 127.0.0.1:0
  grpc: "off"
  resp: "off"
workers: 2
admin:
  ui: loopback
policies:
  - name: api
    algorithm: token_bucket
    rate: 1/m
    burst: 3
  - name: dry
    algorithm: fixed_window
    rate: 1/h
    shadow: true
`;

function fail(msg) {
  throw new Error(msg);
}

function startSluiced() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-ui-'));
  const cfg = path.join(dir, 'sluice.yaml');
  fs.writeFileSync(cfg, CONFIG);
  const proc = spawn(sluiced, ['-c', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('sluiced did not start:\n' + log)), DEADLINE);
    const seen = (chunk) => {
      log += chunk;
      const m = log.match(/listening http on \S+:(\d+)/);
      if (m && /\bready\b/.test(log)) {
        clearTimeout(timer);
        resolve({ proc, port: Number(m[1]), log: () => log, dir });
      }
    };
    proc.stdout.on('data', seen);
    proc.stderr.on('data', seen);
    proc.on('exit', (code) => reject(new Error(`sluiced exited (${code}):\n${log}`)));
  });
}

function get(port, p) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: p, agent: false }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    }).on('error', reject);
  });
}

async function traffic(port, policy, key, n) {
  for (let i = 0; i < n; i++)
    await get(port, `/v1/check?policy=${policy}&key=${encodeURIComponent(key)}`);
}

// The text of the policies table's cell for (policy, column index), as a number.
async function cell(page, policy, column) {
  return page.evaluate(([p, c]) => {
    for (const tr of document.querySelectorAll('#policies tbody tr'))
      if (tr.cells[0].textContent === p) return Number(tr.cells[c].textContent);
    return null;
  }, [policy, column]);
}

async function main() {
  const s = await startSluiced();
  const problems = [];
  let browser;
  try {
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
      timeout: DEADLINE,
    });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(DEADLINE);
    page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
    page.on('response', (r) => { if (r.status() >= 400) problems.push('HTTP ' + r.status() + ' ' + r.url()); });
    page.on('pageerror', (e) => problems.push('page error: ' + e.message));
    page.on('dialog', (d) => { problems.push('dialog: ' + d.message()); d.dismiss(); });

    const res = await page.goto(`http://127.0.0.1:${s.port}/ui/`);
    if (res.status() !== 200) fail('GET /ui/: ' + res.status());
    if (!/default-src 'none'/.test(res.headers()['content-security-policy'] || ''))
      fail('no Content-Security-Policy on /ui/');
    // the page has read /v1/stats at least once: the tables are there, all zero
    await page.waitForFunction(() => Number(document.getElementById('status').dataset.updates) >= 1);
    const COL_ALLOWED = 6, COL_LIMITED = 7, COL_SHADOW = 8;
    if ((await cell(page, 'api', COL_LIMITED)) !== 0) fail('api limited is not 0 before traffic');
    if ((await page.locator('#top-rejected tbody tr').count()) !== 0) fail('top keys before traffic');

    await traffic(s.port, 'api', 'alice', 6); // 3 allowed, 3 limited
    await traffic(s.port, 'api', HOSTILE, 5); // 3 allowed, 2 limited
    await traffic(s.port, 'dry', 'carol', 3); // 1 allowed, 2 shadow-limited

    // Every wait starts now and polls the page on each frame: the chart's spike is
    // seen while it is in its minute of history, however slowly the rest goes.
    const row = (policy, column, want) => page.waitForFunction(([p, c, w]) => {
      const tr = [...document.querySelectorAll('#policies tbody tr')]
        .find((t) => t.cells[0].textContent === p);
      return tr && Number(tr.cells[c].textContent) === w;
    }, [policy, column, want]);
    await Promise.all([
      // the counters the page shows reach the totals
      row('api', COL_ALLOWED, 6),
      row('api', COL_LIMITED, 5),
      row('dry', COL_SHADOW, 2),
      // the top-keys table lists the refused keys, the hostile one as text
      page.waitForFunction((hostile) => {
        const keys = [...document.querySelectorAll('#top-rejected tbody td.key')]
          .map((td) => td.textContent);
        return keys.includes('alice') && keys.includes(hostile) && keys.includes('carol');
      }, HOSTILE),
      // a limited/s line above the chart's baseline (two documents around the traffic)
      page.waitForFunction(() => {
        const line = document.querySelector('.chart[data-policy="api"] polyline.limited');
        return line && line.getAttribute('points').split(' ')
          .some((xy) => Number(xy.split(',')[1]) < 89);
      }),
    ]);
    if ((await page.locator('#pwned').count()) !== 0) fail('a key name became markup');
    await page.locator('#status.ok').waitFor();
    // a few more seconds of chart in the screenshot (a count of updates, not a time)
    const seen = await page.evaluate(() => Number(document.getElementById('status').dataset.updates));
    await page.waitForFunction((n) => Number(document.getElementById('status').dataset.updates) >= n,
      seen + 5);

    fs.mkdirSync(artefacts, { recursive: true });
    const shot = path.join(artefacts, 'dashboard.png');
    await page.screenshot({ path: shot, fullPage: true });
    if (fs.statSync(shot).size < 1000) fail('the screenshot is empty');
    if (problems.length) fail('the page reported:\n' + problems.join('\n'));
    console.log('browser_test: ok; screenshot ' + shot);
  } finally {
    if (browser) await browser.close();
    s.proc.removeAllListeners('exit');
    s.proc.kill('SIGTERM');
    fs.rmSync(s.dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error('browser_test: FAIL: ' + (e && e.stack || e));
  process.exit(1);
});
