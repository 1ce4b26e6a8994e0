// tests/graphql/diff.js: the differential check of tests/integration/graphql_diff.sh.
// Usage: node diff.js GQL_ACCEPT CORPUS_DIR [N_GENERATED]
// Every document of CORPUS_DIR (valid_*.graphql must be accepted, invalid_*
// refused) and N generated ones (seeded, from the grammar, then mutated byte by
// byte) go to graphql-js's parse() and to sluice's parser (GQL_ACCEPT); both
// must accept or both refuse. The reference: bytes decoded as UTF-8 (fatal, BOM
// kept), parse(text, {allowEmptySelectionSets: false}), and every definition an
// operation or a fragment (executable). For a syntax error in an ASCII document
// both must also name the same byte offset (except SDL, which sluice refuses at
// its keyword). Exit 0, or 1 with the disagreements.
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { parse } = require('graphql');

const [tool, corpus, nArg] = process.argv.slice(2);
const N = nArg ? Number(nArg) : 4000;

// Whether graphql-js accepts buf; for a syntax error in an ASCII document,
// also where (its offset, in UTF-16 units, is then the byte offset).
function reference(buf) {
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(buf);
  } catch {
    return { ok: false };
  }
  try {
    const doc = parse(text, { allowEmptySelectionSets: false, noLocation: true });
    return { ok: doc.definitions.every(
      (d) => d.kind === 'OperationDefinition' || d.kind === 'FragmentDefinition') };
  } catch (e) {
    if (!(e instanceof Error) || !/Syntax Error/.test(e.message)) throw e;
    const ascii = buf.every((b) => b < 0x80);
    return { ok: false, offset: ascii && e.positions ? e.positions[0] : undefined };
  }
}

// ---- a seeded generator ------------------------------------------------------------
let seed = 0x5eed1e;
function rnd(n) { // xorshift32
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed % n;
}
function pick(a) { return a[rnd(a.length)]; }
const names = ['a', 'viewer', 'repositories', 'issues', 'on', 'query', 'fragment', 'true', 'null',
  'edges', 'node', '_x1', 'first', 'last', 'type', 'extend', 'mutation'];
const strs = ['"s"', '"\\n\\u00e9"', '"\\u{1F600}"', '"""b\\"""l"""', '""', '"é😀"', '"\\uD83D\\uDE00"'];
const nums = ['0', '-0', '7', '-12', '1.5', '2e3', '-1.0E-2', '50', '20'];
function value(d, isConst) {
  switch (rnd(d > 3 ? 4 : 7)) {
    case 0: return pick(nums);
    case 1: return pick(strs);
    case 2: return pick(['true', 'false', 'null', 'ENUM']);
    case 3: return isConst ? pick(nums) : '$' + pick(names);
    case 4: return '[' + Array.from({ length: rnd(3) }, () => value(d + 1, isConst)).join(', ') + ']';
    case 5: return '{' + Array.from({ length: rnd(3) }, () => pick(names) + ': ' + value(d + 1, isConst)).join(' ') + '}';
    default: return pick(nums);
  }
}
function args(d, isConst) {
  if (rnd(2)) return '';
  return '(' + Array.from({ length: 1 + rnd(3) }, () => pick(names) + ': ' + value(d, isConst)).join(', ') + ')';
}
function directives(d, isConst) {
  return rnd(4) ? '' : ' @' + pick(names) + args(d, isConst);
}
function selections(d) {
  const n = 1 + rnd(3);
  const out = [];
  for (let i = 0; i < n; i++) {
    const k = rnd(d > 4 ? 2 : 6);
    if (k === 4) out.push('...' + pick(['F', 'G', 'x']) + directives(d, false));
    else if (k === 5) out.push('...' + (rnd(2) ? ' on T' : '') + directives(d, false) + ' ' + selections(d + 1));
    else {
      let f = (rnd(4) ? '' : pick(names) + ': ') + pick(names) + args(d, false) + directives(d, false);
      if (rnd(2) && d < 6) f += ' ' + selections(d + 1);
      out.push(f);
    }
  }
  return '{ ' + out.join(pick([' ', ', ', '\n', ' # c\n'])) + ' }';
}
function vardefs() {
  if (rnd(2)) return '';
  const n = 1 + rnd(2);
  return '(' + Array.from({ length: n }, () => (rnd(5) ? '' : '"d" ') + '$' + pick(names) + ': ' +
    pick(['Int', 'Int!', '[Int]', '[[Int!]]!']) + (rnd(2) ? ' = ' + value(0, true) : '') +
    directives(0, true)).join(' ') + ')';
}
function definition() {
  switch (rnd(4)) {
    case 0: return selections(0);
    case 1: return (rnd(5) ? '' : '"desc" ') + pick(['query', 'mutation', 'subscription']) +
      (rnd(2) ? ' ' + pick(names) : '') + vardefs() + directives(0, false) + ' ' + selections(0);
    case 2: return (rnd(5) ? '' : '"""desc""" ') + 'fragment ' + pick(['F', 'G', 'on']) + ' on T' +
      directives(0, false) + ' ' + selections(0);
    default: return pick(['query', '']) + ' ' + selections(0);
  }
}
function document() {
  return (rnd(8) ? '' : '\ufeff') + Array.from({ length: 1 + rnd(3) }, definition).join('\n');
}
const junk = ['{', '}', '(', ')', '[', ']', ':', '$', '@', '!', '=', '.', '...', '"', '"""', '\\',
  '#', '\n', '\r', ',', '|', '&', '-', '0', '1', 'e', '.5', 'on', 'type', '\'', 'é', '\u0000',
  '\\u', '\\u{', '}', '\ufeff'];
function mutate(s) {
  const b = Buffer.from(s, 'utf8');
  const at = rnd(b.length + 1);
  switch (rnd(5)) {
    case 0: return Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + 1 + rnd(3)))]);
    case 1: return Buffer.concat([b.subarray(0, at), Buffer.from(pick(junk)), b.subarray(at)]);
    case 2: return Buffer.concat([b.subarray(0, at), Buffer.from([rnd(256)]), b.subarray(at)]);
    case 3: return b.subarray(0, at);
    default: return b;
  }
}

// ---- run ------------------------------------------------------------------------------
const docs = [];
for (const f of fs.readdirSync(corpus).filter((f) => f.endsWith('.graphql')).sort()) {
  docs.push({ name: f, buf: fs.readFileSync(path.join(corpus, f)),
    want: f.startsWith('valid_') ? true : f.startsWith('invalid_') ? false : undefined });
}
for (let i = 0; i < N; i++) {
  const s = document();
  docs.push({ name: `generated #${i}`, buf: i % 3 ? mutate(s) : Buffer.from(s, 'utf8') });
}
const input = Buffer.concat(docs.flatMap((d) => [Buffer.from(d.buf.length + '\n'), d.buf]));
const lines = execFileSync(tool, { input, maxBuffer: 1 << 26 }).toString().split('\n');
let bad = 0, accepted = 0;
docs.forEach((d, i) => {
  const ours = lines[i] === '1';
  const r = reference(d.buf);
  const ref = r.ok;
  // SDL is refused at its keyword, where graphql-js goes on parsing it
  const sdl = / Type system definitions are not queries/.test(lines[i]);
  if (!ours && !ref && !sdl && r.offset !== undefined &&
      String(r.offset) !== lines[i].split(' ')[1]) {
    bad++;
    if (bad <= 20) {
      console.log(`${d.name}: graphql-js refuses at ${r.offset}, sluice at: ${lines[i]}`);
      console.log('  ' + JSON.stringify(d.buf.toString('latin1')));
    }
  }
  accepted += ref;
  if (d.want !== undefined && ref !== d.want) {
    bad++;
    console.log(`corpus ${d.name}: graphql-js ${ref ? 'accepts' : 'refuses'}, the file name says otherwise`);
  }
  if (ours !== ref) {
    bad++;
    if (bad <= 20) {
      console.log(`${d.name}: graphql-js ${ref ? 'accepts' : 'refuses'}, sluice ${ours ? 'accepts' : 'refuses (' + lines[i] + ')'}`);
      console.log('  ' + JSON.stringify(d.buf.toString('latin1')));
    }
  }
});
console.log(`graphql_diff: ${docs.length} documents (${docs.length - N} from the corpus), ` +
  `${accepted} accepted by graphql-js, ${bad} disagreements`);
process.exit(bad ? 1 : 0);
