// app.js: sluiced's dashboard (GET /ui/app.js, embedded by ui.cmake). Reads
// GET /v1/stats every second, turns two documents' counters into decisions
// per second (their now_ms is a monotonic clock), keeps the last minute
// per policy and draws them as SVG lines. Everything from the server is
// written with textContent or as SVG attributes of numbers: a key name is
// never markup.
'use strict';

const KINDS = ['allowed', 'limited', 'shadow_limited', 'shed'];
const HISTORY = 60; // samples kept per policy (about a minute)
const W = 320, H = 90;
const SVG = 'http://www.w3.org/2000/svg';
const history = new Map(); // policy name -> [{allowed, limited, ...} per second]
let prev = null; // the previous document
let updates = 0;

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

function fill(tbody, rows) {
  const body = document.createDocumentFragment();
  for (const cells of rows) {
    const tr = el('tr');
    for (const c of cells) tr.appendChild(el('td', c.text, c.cls));
    body.appendChild(tr);
  }
  tbody.replaceChildren(body);
}

function rates(p, before, dt) {
  const r = {};
  for (const k of KINDS) {
    const d = before ? p.decisions[k] - before.decisions[k] : 0;
    r[k] = d > 0 && dt > 0 ? d * 1000 / dt : 0; // a reload may restart counters: never negative
  }
  return r;
}

function chart(name, points) {
  const box = el('div', undefined, 'chart');
  box.dataset.policy = name;
  box.appendChild(el('h3', name));
  const last = points.length ? points[points.length - 1] : null;
  const now = el('div', undefined, 'now');
  for (const k of KINDS) {
    const s = el('span', (last ? last[k].toFixed(1) : '0') + '/s ', k);
    s.dataset.kind = k;
    now.appendChild(s);
  }
  box.appendChild(now);
  let max = 1;
  for (const p of points) for (const k of KINDS) max = Math.max(max, p[k]);
  const g = svg('svg', { width: W, height: H + 12, viewBox: `0 0 ${W} ${H + 12}` });
  g.appendChild(svg('line', { x1: 0, y1: H, x2: W, y2: H, class: 'axis' }));
  const label = svg('text', { x: 2, y: 10 });
  label.textContent = max.toFixed(max < 10 ? 1 : 0) + '/s';
  g.appendChild(label);
  for (const k of KINDS) {
    const xy = points.map((p, i) => {
      const x = (W * (HISTORY - points.length + i)) / (HISTORY - 1);
      const y = H - (H - 12) * (p[k] / max);
      return x.toFixed(1) + ',' + y.toFixed(1);
    });
    if (xy.length) g.appendChild(svg('polyline', { points: xy.join(' '), class: k }));
  }
  box.appendChild(g);
  return box;
}

function render(doc) {
  const dt = prev ? doc.now_ms - prev.now_ms : 0;
  const before = new Map(prev ? prev.policies.map((p) => [p.name, p]) : []);
  const seen = new Set();
  for (const p of doc.policies) {
    seen.add(p.name);
    const h = history.get(p.name) || [];
    if (prev) h.push(rates(p, before.get(p.name), dt));
    while (h.length > HISTORY) h.shift();
    history.set(p.name, h);
  }
  for (const name of [...history.keys()]) if (!seen.has(name)) history.delete(name);

  document.getElementById('version').textContent = 'v' + doc.version;
  document.getElementById('uptime').textContent = 'up ' + doc.uptime_seconds + ' s';
  const store = document.getElementById('store');
  store.textContent = 'store: ' + doc.store.type + (doc.store.up ? ' up' : ' DOWN') +
    (doc.store.breakers_open ? ', ' + doc.store.breakers_open + ' breakers open' : '');
  store.className = 'badge ' + (doc.store.up && !doc.store.breakers_open ? 'ok' : 'bad');

  const charts = document.createDocumentFragment();
  for (const p of doc.policies) charts.appendChild(chart(p.name, history.get(p.name)));
  document.getElementById('charts').replaceChildren(charts);

  const n = (v) => ({ text: v === undefined ? '' : v, cls: 'n' });
  fill(document.querySelector('#policies tbody'), doc.policies.map((p) => [
    { text: p.name }, { text: p.algorithm }, { text: p.rate }, n(p.burst),
    { text: p.shadow ? 'shadow' : 'enforced' }, n(p.keys),
    n(p.decisions.allowed), n(p.decisions.limited), n(p.decisions.shadow_limited),
    n(p.decisions.shed),
  ]));
  const keys = (field, count) => doc.policies.flatMap((p) => p[field].map((k) => [
    { text: p.name }, { text: k.key, cls: 'key' }, n(k[count]),
  ]));
  fill(document.querySelector('#top-rejected tbody'), keys('top_rejected', 'rejected'));
  fill(document.querySelector('#top-near tbody'), keys('top_near', 'near'));

  const s = doc.store;
  const rows = [['type', s.type], ['up', s.up ? 'yes' : 'no'], ['breakers open', s.breakers_open]];
  if (s.calls) for (const [k, v] of Object.entries(s.calls)) rows.push(['calls ' + k, v]);
  if (s.deny_cache_hits !== undefined) rows.push(['deny cache hits', s.deny_cache_hits]);
  fill(document.querySelector('#store-table tbody'), rows.map(([k, v]) => [{ text: k }, n(v)]));
  prev = doc;
}

async function tick() {
  const status = document.getElementById('status');
  try {
    const r = await fetch('/v1/stats?top=10', { cache: 'no-store' });
    if (!r.ok) throw new Error('HTTP ' + r.status);
    render(await r.json());
    updates++;
    status.textContent = 'live';
    status.className = 'badge ok';
    status.dataset.updates = String(updates);
  } catch (e) {
    status.textContent = 'no answer: ' + e.message;
    status.className = 'badge bad';
  }
  setTimeout(tick, 1000);
}

tick();
