#!/usr/bin/env node
// Standalone verifier for linekeeper audit bundles (JSON Lines), for auditors
// who do not want to trust linekeeper to check its own trail.
//
//   node verify-audit-bundle.mjs BUNDLE.jsonl [--key SITE-PUBLIC-KEY.pem] [--json]
//   node verify-audit-bundle.mjs --archive DIR [--key SITE-PUBLIC-KEY.pem] [--json]
//   node verify-audit-bundle.mjs REPORT.json [--key SITE-PUBLIC-KEY.pem] [--json]
//
// A REPORT.json is a signed validation report (`linekeeper validate iq|oq`,
// `linekeeper config report`): its record's RFC 8785 canonical JSON must hash
// to recordHash and carry a valid Ed25519 signature by the key it names — the
// pinned --key when given (src/validation/report.ts; tested to agree).
//
// Exit 0: intact. 65: damaged (prints the kind and the first bad seq; for an
// archive, every damaged file). 2: not a bundle (not an archive). 1: key
// problem (unreadable, or not the --key you pinned).
//
// An archive (`linekeeper archive`) is a folder: MANIFEST.sha256 lists the
// SHA-256 of every file, MANIFEST.sig is the site key's signature of it. The
// check: every file against the manifest (none changed, missing or added),
// the signature, every audit bundle (*.jsonl) with the key, and each
// release.json against the bundle beside it — as linekeeper's
// `archive verify` does (src/ops/archive-manifest.ts; tested to agree).
//
// Deliberately self-contained: Node's own node:crypto, node:fs and node:path only, no
// npm packages and nothing imported from linekeeper. That is also why it
// carries its own RFC 8785 canonicaliser below (linekeeper itself uses the
// `canonicalize` package): independence is the point of this file. The
// format and the hashed bytes are described in linekeeper's docs/audit.md.
import { createHash, createPublicKey, verify } from 'node:crypto';
import { closeSync, existsSync, lstatSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';

const FORMAT = 'linekeeper.audit-bundle';
const GENESIS = '0'.repeat(64);

// RFC 8785 (JCS) for the values JSON.parse produces. Strings and numbers use
// ECMAScript JSON.stringify, which is exactly what RFC 8785 §3.2.2 specifies;
// object keys are sorted by UTF-16 code units (JavaScript's default sort).
function canonical(v) {
  if (typeof v === 'string') {
    if (/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(v)) throw new Error('lone surrogate');
    return JSON.stringify(v);
  }
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error('non-finite number');
    return JSON.stringify(v);
  }
  if (v === null || typeof v === 'boolean') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${canonical(k)}:${canonical(v[k])}`).join(',')}}`;
  }
  throw new Error(`not a JSON value: ${typeof v}`);
}

const sha256 = (s) => createHash('sha256').update(s, 'utf8').digest('hex');
const tryCanonical = (v) => {
  try {
    return canonical(v);
  } catch {
    return undefined;
  }
};

class Fail extends Error {
  constructor(exit, message) {
    super(message);
    this.exit = exit;
  }
}

function loadKey(pem, where) {
  let key;
  try {
    key = createPublicKey(pem);
  } catch {
    throw new Fail(1, `${where}: not a PEM public key`);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Fail(1, `${where}: not an Ed25519 key`);
  return { key, keyId: sha256Der(key) };
}
const sha256Der = (key) => createHash('sha256').update(key.export({ type: 'spki', format: 'der' })).digest('hex');

function sigValid(k, text, sig) {
  if (typeof sig !== 'string' || text === undefined) return false;
  try {
    return verify(null, Buffer.from(text, 'utf8'), k.key, Buffer.from(sig, 'base64'));
  } catch {
    return false;
  }
}

function asCheckpoint(o) {
  const str = (x) => typeof x === 'string';
  if (o.v !== 1 || !str(o.tenant) || !str(o.head_hash) || !str(o.ts) || !str(o.key_id) || !str(o.sig)) return undefined;
  if (typeof o.seq !== 'number' || !Number.isSafeInteger(o.seq) || o.seq < 1) return undefined;
  return o;
}

function checkpointValid(k, c) {
  const bytes = tryCanonical({ v: c.v, tenant: c.tenant, seq: c.seq, head_hash: c.head_hash, ts: c.ts, key_id: c.key_id });
  return c.key_id === k.keyId && sigValid(k, bytes, c.sig);
}

function asSegments(v) {
  if (!Array.isArray(v)) return undefined;
  let prev = 0;
  for (const s of v) {
    if (!Array.isArray(s) || s.length !== 2 || !s.every((n) => Number.isSafeInteger(n)) || !(s[0] > prev && s[1] >= s[0])) return undefined;
    prev = s[1];
  }
  return v;
}

// The entry lines in file order, the current one and those after it in view; each read once, from `items`.
class Lookahead {
  constructor(items) {
    this.items = items;
    this.buf = [];
    this.ended = false;
  }

  // the k-th line from the current one (0: the current one); undefined past the last
  at(k) {
    while (this.buf.length <= k && !this.ended) {
      const r = this.items.next();
      if (r.done) this.ended = true;
      else this.buf.push(r.value);
    }
    return k < this.buf.length ? this.buf[k] : undefined;
  }

  // move past the current line
  skip() {
    this.buf.shift();
  }

  // whether a line from the k-th on satisfies `p`, reading on to the end if need be (and keeping none of those)
  someFrom(k, p) {
    for (let j = k; j < this.buf.length; j++) if (p(this.buf[j])) return true;
    for (let r = this.items.next(); !r.done; r = this.items.next()) if (p(r.value)) return true;
    this.ended = true;
    return false;
  }

  // how many lines from the current one to the last (reads to the end)
  rest() {
    let n = this.buf.length;
    this.buf.length = 0;
    while (!this.ended && !this.items.next().done) n++;
    this.ended = true;
    return n;
  }
}

// The walk over entry lines in file order against the declared segments, one line at a time with the next two in
// view (only on damage the rest of them).
function walk(items, segments, checkpoints, tenant) {
  const cp = new Map();
  for (const c of checkpoints) if (!cp.has(c.seq)) cp.set(c.seq, c.head_hash);
  const d = (kind, seq, detail) => ({ damage: { kind, seq, detail }, head: null });
  const ok = (x, e, ph) => !!x && x.hashOk && x.seq === e && x.prev === ph && x.tenant === tenant;
  const line = new Lookahead(items[Symbol.iterator]());
  let head = null;
  for (const [from, to] of segments) {
    const anchor = from === 1 ? GENESIS : cp.get(from - 1);
    if (anchor === undefined) return d('checkpoint_missing', from - 1, `no valid checkpoint at seq ${from - 1} anchors the segment starting at ${from}`);
    let ph = anchor;
    let lastGood = from - 1;
    for (let e = from; e <= to; e++) {
      const x = line.at(0);
      if (x === undefined) return d('truncated', e, `bundle ends before entry ${e}`);
      if (ok(x, e, ph)) {
        const before = ph;
        ph = x.hash;
        line.skip();
        const c = cp.get(e);
        if (c !== undefined) {
          const y = line.at(0);
          // The genuine entry right behind an accepted forgery: the forgery was inserted.
          if (c !== ph && y && y.hashOk && y.seq === e && y.prev === before && y.hash === c) return d('inserted', e, `an extra line sits before entry ${e}`);
          if (c !== ph) return d('rewritten', lastGood + 1, `entries ${lastGood + 1}..${e} differ from the signed checkpoint at seq ${e}`);
          lastGood = e;
        }
        continue;
      }
      if (x === null) return d('edited', e, `the line of entry ${e} is unreadable`);
      if (ok(line.at(1), e, ph)) return d('inserted', e, `an extra line sits before entry ${e}`);
      if (!x.hashOk) return d('edited', e, `entry ${e} does not match its hash`);
      if (x.tenant !== tenant) return d('inserted', e, `an entry of another chain sits at ${e}`);
      if (typeof x.seq !== 'number' || !Number.isSafeInteger(x.seq)) return d('edited', e, `entry ${e} has no valid seq`);
      if (x.seq < e) return d('inserted', x.seq === e - 1 ? e - 1 : e, `entry ${x.seq} appears again at position ${e}`);
      if (x.seq > e) {
        const later = line.someFrom(1, (z) => ok(z, e, ph));
        return later ? d('reordered', e, `entry ${e} appears after entry ${x.seq}`) : d('deleted', e, `entry ${e} is missing`);
      }
      return e > from ? d('edited', e - 1, `entry ${e} does not link to entry ${e - 1}: ${e - 1} was replaced`) : d('edited', e, `entry ${e} does not link to the checkpoint before it`);
    }
    if (!cp.has(to)) return d('checkpoint_missing', to, `no valid checkpoint closes the segment ending at ${to}`);
    head = { seq: to, hash: ph };
  }
  const x = line.at(0);
  if (x !== undefined) return d('inserted', x && typeof x.seq === 'number' ? x.seq : null, `${line.rest()} entry lines beyond the declared segments`);
  return { head };
}

export function verifyBundleText(text, pinnedPem) {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return verifyBundleLines(() => lines, pinnedPem);
}

// The lines of a bundle file, read in chunks of a megabyte (a newline byte is never part of a multi-byte UTF-8
// character): a million-entry trail's bundle is longer than the longest string JavaScript holds (512 MiB).
function* fileLines(file) {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    let rest = Buffer.alloc(0);
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      const data = rest.length > 0 ? Buffer.concat([rest, buf.subarray(0, n)]) : buf.subarray(0, n);
      let start = 0;
      for (let nl = data.indexOf(10, start); nl >= 0; nl = data.indexOf(10, start)) {
        yield data.toString('utf8', start, nl);
        start = nl + 1;
      }
      rest = Buffer.from(data.subarray(start));
    }
    if (rest.length > 0) yield rest.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

// A bundle file, read line by line (twice: see verifyBundleLines), to the verdict of its text.
export function verifyBundleFile(file, pinnedPem) {
  return verifyBundleLines(() => fileLines(file), pinnedPem);
}

function objectOf(line) {
  try {
    const v = JSON.parse(line);
    return typeof v === 'object' && v !== null ? v : undefined;
  } catch {
    return undefined;
  }
}

// a line's `type` can only read "checkpoint" when its text spells the word or escapes a character
const mayBeCheckpoint = (line) => line.includes('checkpoint') || line.includes('\\u');

// The verification of a bundle's lines, which `lines()` gives from the start each time: the first reading takes the
// header and the checkpoints (wherever their lines are), the second hands the entry lines one at a time to the walk,
// so no reading holds all of a bundle's entries. The lines' damages are merged in line order.
function verifyBundleLines(lines, pinnedPem) {
  const reading = lines()[Symbol.iterator]();
  const headLine = reading.next();
  let header;
  try {
    header = JSON.parse(headLine.done ? '' : headLine.value);
  } catch {
    throw new Fail(2, 'not a linekeeper audit bundle (first line is not JSON)');
  }
  if (typeof header !== 'object' || header === null || header.type !== 'header' || header.format !== FORMAT || (header.version !== 1 && header.version !== 2)) {
    throw new Fail(2, 'not a linekeeper audit bundle (no header line)');
  }
  const embedded = loadKey(String(header.public_key ?? ''), 'bundle public key');
  const k = pinnedPem === undefined ? embedded : loadKey(pinnedPem, '--key');
  if (embedded.keyId !== k.keyId) throw new Fail(1, `bundle was signed by key ${embedded.keyId.slice(0, 16)}…, not the pinned key ${k.keyId.slice(0, 16)}…`);
  const tenant = String(header.tenant);
  const { sig, ...unsigned } = header;
  const segments = asSegments(header.segments);
  if (!segments) return { ok: false, tenant, entries: 0, keyId: k.keyId, head: null, damage: { kind: 'malformed', seq: null, detail: 'header segments are malformed' } };
  // version 2 signs which entries the filter chose (`selected`); version 1 left the in_filter flags uncovered
  const selected = header.version === 2 ? asSegments(header.selected) : undefined;
  if (header.version === 2 && !selected) return { ok: false, tenant, entries: 0, keyId: k.keyId, head: null, damage: { kind: 'malformed', seq: null, detail: 'header selected ranges are malformed' } };
  const inSelected = (seq) => selected.some(([a, b]) => seq >= a && seq <= b);

  const cps = [];
  const damages = [];
  const headDamages = [];
  if (header.key_id !== k.keyId || !sigValid(k, tryCanonical(unsigned), sig)) headDamages.push({ kind: 'signature_invalid', seq: null, detail: 'bundle header signature is invalid' });
  // first reading: the checkpoints
  let i = 0;
  for (const line of { [Symbol.iterator]: () => reading }) {
    i++;
    if (!mayBeCheckpoint(line)) continue;
    const o = objectOf(line);
    if (o?.type !== 'checkpoint') continue;
    const c = asCheckpoint(o);
    if (c && c.tenant === tenant && checkpointValid(k, c)) cps.push(c);
    else damages.push([i, { kind: 'signature_invalid', seq: typeof o.seq === 'number' ? o.seq : null, detail: `checkpoint on line ${i + 1} is not validly signed for this tenant` }]);
  }
  // second reading: the entry lines, one at a time through the walk, then the rest of them counted and checked
  let entries = 0;
  function* entryLines() {
    const again = lines()[Symbol.iterator]();
    again.next();
    let j = 0;
    for (const line of { [Symbol.iterator]: () => again }) {
      j++;
      const o = objectOf(line);
      if (o?.type === 'checkpoint') continue;
      if (o?.type === 'entry' && typeof o.entry === 'object' && o.entry !== null) {
        const body = tryCanonical(o.entry);
        if (selected && typeof o.entry.seq === 'number' && o.in_filter !== inSelected(o.entry.seq)) {
          damages.push([j, { kind: 'edited', seq: o.entry.seq, detail: `the in_filter flag of entry ${o.entry.seq} does not match the signed header` }]);
        }
        entries++;
        yield { seq: o.entry.seq, prev: o.entry.prev_hash, hash: o.hash, tenant: o.entry.tenant, hashOk: body !== undefined && sha256(body) === o.hash };
      } else if (entries === 0) {
        headDamages.push({ kind: 'malformed', seq: null, detail: `line ${j + 1} is not a checkpoint or entry` });
      } else {
        entries++;
        yield null;
      }
    }
  }
  const items = entryLines();
  const w = walk(items, segments, cps, tenant);
  for (const _ of items) {
    // the lines after the walk's last: counted, their flags checked
  }
  const all = [...(w.damage ? [w.damage] : []), ...damages.sort((a, b) => a[0] - b[0]).map(([, d]) => d), ...headDamages];
  const first = all.reduce((best, x) => (best === undefined || (x.seq ?? 0) < (best.seq ?? 0) ? x : best), undefined);
  const base = { ok: first === undefined, tenant, entries, keyId: k.keyId, head: first ? null : w.head };
  return first ? { ...base, damage: first } : base;
}

// ── archives ────────────────────────────────────────────────────────────────
const MANIFEST = 'MANIFEST.sha256';
const MANIFEST_SIG = 'MANIFEST.sig';
const SAFE_PATH = /^[A-Za-z0-9_][A-Za-z0-9._-]*(?:\/[A-Za-z0-9_][A-Za-z0-9._-]*)*$/;
const sha256Bytes = (b) => createHash('sha256').update(b).digest('hex');

function filesUnder(dir, base = '') {
  const out = [];
  for (const name of readdirSync(join(dir, base)).sort()) {
    const rel = base ? `${base}/${name}` : name;
    const st = lstatSync(join(dir, rel));
    if (st.isDirectory()) out.push(...filesUnder(dir, rel));
    else out.push({ path: rel, regular: st.isFile() });
  }
  return out;
}

export function verifyArchiveDir(dir, pinnedPem) {
  if (!existsSync(dir) || !lstatSync(dir).isDirectory()) throw new Fail(2, `${dir}: no such folder`);
  if (!existsSync(join(dir, MANIFEST))) throw new Fail(2, `${dir} is not a linekeeper archive (no ${MANIFEST})`);
  const problems = [];
  const manifest = readFileSync(join(dir, MANIFEST), 'utf8');
  const listed = new Map();
  const lines = manifest.split('\n');
  lines.forEach((l, i) => {
    if (l === '' && i === lines.length - 1) return;
    const m = /^([0-9a-f]{64}) {2}(.+)$/.exec(l);
    if (!m || !SAFE_PATH.test(m[2]) || listed.has(m[2]) || m[2] === MANIFEST || m[2] === MANIFEST_SIG) problems.push({ file: MANIFEST, kind: 'malformed', detail: `line ${i + 1} is not "<sha256>  <path>" of a file of the archive` });
    else listed.set(m[2], m[1]);
  });

  let pem = pinnedPem;
  if (pem === undefined) {
    if (!existsSync(join(dir, 'site-public-key.pem'))) throw new Fail(1, 'site-public-key.pem is missing from the archive: give the site\'s public key with --key');
    pem = readFileSync(join(dir, 'site-public-key.pem'), 'utf8');
  }
  const k = loadKey(pem, pinnedPem === undefined ? 'site-public-key.pem' : '--key');

  if (!existsSync(join(dir, MANIFEST_SIG))) problems.push({ file: MANIFEST_SIG, kind: 'missing', detail: 'the manifest carries no signature' });
  else {
    let sig;
    try {
      const v = JSON.parse(readFileSync(join(dir, MANIFEST_SIG), 'utf8'));
      sig = typeof v === 'object' && v !== null ? v : undefined;
    } catch {
      sig = undefined;
    }
    if (sig?.format !== 'linekeeper.archive-manifest-signature' || typeof sig.key_id !== 'string') problems.push({ file: MANIFEST_SIG, kind: 'malformed', detail: 'not a manifest signature' });
    else {
      if (pinnedPem !== undefined && sig.key_id !== k.keyId) throw new Fail(1, `the archive was signed by key ${sig.key_id.slice(0, 16)}…, not the pinned key ${k.keyId.slice(0, 16)}…`);
      if (sig.key_id !== k.keyId || !sigValid(k, manifest, sig.sig)) problems.push({ file: MANIFEST, kind: 'signature_invalid', detail: 'MANIFEST.sig is not a valid signature of the manifest by the site key' });
    }
  }

  const onDisk = new Map(filesUnder(dir).map((f) => [f.path, f.regular]));
  for (const [path, sum] of listed) {
    if (onDisk.get(path) !== true) problems.push({ file: path, kind: 'missing', detail: 'listed in MANIFEST.sha256 but not in the archive' });
    else if (sha256Bytes(readFileSync(join(dir, path))) !== sum) problems.push({ file: path, kind: 'modified', detail: 'its SHA-256 differs from MANIFEST.sha256' });
  }
  for (const path of onDisk.keys()) {
    if (path !== MANIFEST && path !== MANIFEST_SIG && !listed.has(path)) problems.push({ file: path, kind: 'unlisted', detail: 'in the archive but not in MANIFEST.sha256' });
  }
  for (const path of listed.keys()) {
    if (onDisk.get(path) !== true) continue;
    if (path.endsWith('.jsonl')) {
      try {
        const r = verifyBundleFile(join(dir, path), pem);
        if (!r.ok) problems.push({ file: path, kind: 'bundle_damaged', detail: `${r.damage.kind} at seq ${r.damage.seq ?? '-'}: ${r.damage.detail}` });
      } catch (err) {
        if (!(err instanceof Fail)) throw err;
        problems.push({ file: path, kind: 'bundle_damaged', detail: err.message });
      }
    }
    if (path === 'release.json' || path.endsWith('/release.json')) {
      const bundle = path.replace(/release\.json$/, 'audit-bundle.jsonl');
      let named;
      try {
        named = JSON.parse(readFileSync(join(dir, path), 'utf8'))?.audit?.bundle?.sha256;
      } catch {
        named = undefined;
      }
      if (typeof named !== 'string') problems.push({ file: path, kind: 'malformed', detail: 'not a release.json naming its audit bundle' });
      else if (!existsSync(join(dir, bundle)) || sha256Bytes(readFileSync(join(dir, bundle))) !== named) problems.push({ file: path, kind: 'release_mismatch', detail: `names an audit bundle of another SHA-256 than ${bundle}` });
    }
  }
  problems.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
  let archive = null;
  try {
    const m = JSON.parse(readFileSync(join(dir, 'archive.json'), 'utf8'));
    if (m.format === 'linekeeper.archive' && typeof m.tenant === 'string') archive = { tenant: m.tenant, scope: m.scope ?? null };
  } catch {
    archive = null;
  }
  return { ok: problems.length === 0, archive, files: listed.size, keyId: k.keyId, problems };
}

function scopeText(a) {
  if (!a) return 'archive';
  const s = a.scope ?? {};
  return typeof s.run === 'string' ? `archive of run ${s.run} (tenant ${a.tenant})` : `archive of ${s.from} .. ${s.to} (tenant ${a.tenant})`;
}

function mainArchive(dir, keyFile, json) {
  const r = verifyArchiveDir(dir, keyFile === undefined ? undefined : readFileSync(keyFile, 'utf8'));
  if (json) process.stdout.write(`${JSON.stringify(r)}\n`);
  else if (r.ok) process.stdout.write(`ok: ${scopeText(r.archive)}, ${r.files} files, key ${r.keyId}${keyFile === undefined ? ' (carried by the archive: pin it with --key)' : ' (pinned)'}\n`);
  else for (const p of r.problems) process.stdout.write(`DAMAGED: ${p.file}: ${p.kind}: ${p.detail}\n`);
  return r.ok ? 0 : 65;
}

const REPORT_FORMAT = 'linekeeper.signed-report';

export function verifyReportText(text, pinnedPem) {
  let doc;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Fail(2, 'not a signed report (not JSON)');
  }
  if (!doc || typeof doc !== 'object' || !doc.record || doc.record.format !== REPORT_FORMAT) throw new Fail(2, `not a signed report (no record of format ${REPORT_FORMAT})`);
  const carried = loadKey(typeof doc.publicKey === 'string' ? doc.publicKey : '', 'the report\'s publicKey');
  const k = pinnedPem === undefined ? carried : loadKey(pinnedPem, '--key');
  const problems = [];
  if (carried.keyId !== doc.keyId) problems.push(`keyId ${doc.keyId} is not the id of the key the report carries (${carried.keyId})`);
  if (pinnedPem !== undefined && carried.keyId !== k.keyId) problems.push(`signed by key ${carried.keyId}, not by the pinned key ${k.keyId}`);
  let text2;
  try {
    text2 = canonical(doc.record);
  } catch (err) {
    problems.push(`record is not canonicalisable JSON: ${err.message}`);
  }
  if (text2 !== undefined) {
    const h = createHash('sha256').update(text2, 'utf8').digest('hex');
    if (h !== doc.recordHash) problems.push(`recordHash does not match the record (changed after signing): ${h}`);
    if (!sigValid(k, text2, doc.signature)) problems.push('the Ed25519 signature does not verify over the record');
  }
  const r = doc.record;
  return { ok: problems.length === 0, kind: r.kind ?? null, result: r.result ?? null, signer: r.signer ? { user: r.signer.user, name: r.signer.name, timestamp: r.signer.timestamp } : null, keyId: carried.keyId, pinned: pinnedPem !== undefined, problems };
}

function mainReport(file, keyFile, json) {
  const r = verifyReportText(readFileSync(file, 'utf8'), keyFile === undefined ? undefined : readFileSync(keyFile, 'utf8'));
  if (json) process.stdout.write(`${JSON.stringify(r)}\n`);
  else if (r.ok) process.stdout.write(`ok: ${r.kind} report, result ${r.result}, signed by ${r.signer?.name} (${r.signer?.user}) at ${r.signer?.timestamp}, key ${r.keyId}${r.pinned ? ' (pinned)' : ' (carried by the report: pin it with --key)'}\n`);
  else for (const p of r.problems) process.stdout.write(`NOT VERIFIED: ${p}\n`);
  return r.ok ? 0 : 65;
}

function main(argv) {
  const args = argv.slice(2);
  const json = args.includes('--json');
  const ki = args.indexOf('--key');
  const keyFile = ki >= 0 ? args[ki + 1] : undefined;
  const ai = args.indexOf('--archive');
  const file = args.find((a, i) => !a.startsWith('--') && (ki < 0 || i !== ki + 1) && (ai < 0 || i !== ai + 1));
  const dir = ai >= 0 ? args[ai + 1] : undefined;
  if ((ai >= 0 ? !dir || dir.startsWith('--') || file : !file) || (ki >= 0 && !keyFile)) {
    process.stderr.write('usage: node verify-audit-bundle.mjs BUNDLE.jsonl [--key SITE-PUBLIC-KEY.pem] [--json]\n       node verify-audit-bundle.mjs --archive DIR [--key SITE-PUBLIC-KEY.pem] [--json]\n       node verify-audit-bundle.mjs REPORT.json [--key SITE-PUBLIC-KEY.pem] [--json]\n');
    return 2;
  }
  try {
    if (dir !== undefined) return mainArchive(dir, keyFile, json);
    if (/\.json$/i.test(file)) return mainReport(file, keyFile, json);
    const r = verifyBundleFile(file, keyFile === undefined ? undefined : readFileSync(keyFile, 'utf8'));
    if (json) process.stdout.write(`${JSON.stringify(r)}\n`);
    else if (r.ok) process.stdout.write(`ok: tenant ${r.tenant}, ${r.entries} entries, head ${r.head ? `#${r.head.seq} ${r.head.hash}` : '(none)'}, key ${r.keyId}\n`);
    else process.stdout.write(`DAMAGED: tenant ${r.tenant}: ${r.damage.kind} at seq ${r.damage.seq ?? '-'}: ${r.damage.detail}\n`);
    return r.ok ? 0 : 65;
  } catch (err) {
    if (!(err instanceof Fail)) {
      if (err && err.code === 'ENOENT') {
        process.stderr.write(`verify-audit-bundle: ${err.path}: no such file\n`);
        return 2;
      }
      throw err;
    }
    if (json) process.stdout.write(`${JSON.stringify({ ok: false, error: err.message, exit: err.exit })}\n`);
    process.stderr.write(`verify-audit-bundle: ${err.message}\n`);
    return err.exit;
  }
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('verify-audit-bundle.mjs')) {
  process.exitCode = main(process.argv);
}
