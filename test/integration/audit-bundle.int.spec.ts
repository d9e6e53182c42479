/**
 * Bundles, the standalone verifier, the PDF report and the `linekeeper audit`
 * command, on real files: `audit verify --bundle` and tools/verify-audit-bundle.mjs
 * must reach the same verdict (kind and first bad seq) on intact and damaged bundles.
 */
import { spawnSync } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import canonicalize from 'canonicalize';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRng, type Rng } from '../../src/clock.js';
import { exportBundle, verifyBundle, verifyBundleFile } from '../../src/audit/bundle.js';
import { parseFilter } from '../../src/audit/query.js';
import { exportPdf } from '../../src/audit/export-pdf.js';
import { keyFiles } from '../../src/audit/keys.js';
import { DB_FILE, openStore } from '../../src/store/store.js';
// @ts-expect-error plain JavaScript on purpose (no types, no project imports)
import { verifyBundleFile as theirsFile, verifyBundleText } from '../../tools/verify-audit-bundle.mjs';
import { entry, newStore, rawDb, tempDir } from '../unit/audit-helpers.js';
import { LINEKEEPER_BIN } from '../helpers/bin.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const standalone = join(root, 'tools/verify-audit-bundle.mjs');
const T = 'acme-pharma';
let t: { dir: string; cleanup: () => void };
let full: string;
let filtered: string;

function run(args: string[], cli = true): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, cli ? [...LINEKEEPER_BIN, ...args] : [standalone, ...args], { encoding: 'utf8', cwd: root, timeout: 150_000 }); // hang guard: a CLI start took 20–90 s on a loaded 2-core box
  return { code: r.status, out: r.stdout, err: r.stderr };
}

beforeAll(() => {
  t = tempDir('lk-bundle-');
  const { store, clock } = newStore(t.dir, { audit: { checkpointEvery: 5 } });
  for (let i = 1; i <= 60; i++) {
    clock.advance(30_000);
    const batch = i % 13 === 0 || (i > 40 && i < 44) ? 'B-7' : 'B-1';
    store.audit.append(entry(i, T, { subject: { batch, setpoint: 'press.MainForce' }, old: 10 + i / 10, new: 10 + (i + 1) / 10 }));
    if (i % 3 === 0) store.audit.append(entry(i, 'borealis-bio'));
  }
  store.audit.append({ tenant: T, actor: 'qa.jroe', kind: 'approval', action: 'batch.release', subject: { batch: 'B-7', reviewer: 'qa.jroe' }, reason: 'all release criteria met', signature: { user: 'qa.jroe', name: 'Dr. Jane Roe', meaning: 'approved for release', time: '2026-01-01T07:00:00.000Z', value: 'c2lnbmF0dXJl' } });
  full = join(t.dir, 'full.jsonl');
  filtered = join(t.dir, 'b7.jsonl');
  exportBundle(store, T, parseFilter({}), full);
  exportBundle(store, T, parseFilter({ batch: 'B-7' }), filtered);
  store.close();
});
afterAll(() => t.cleanup());

type Verdict = { ok: boolean; kind?: string; seq?: number | null };
const ours = (text: string): Verdict => {
  const r = verifyBundle(text);
  return r.ok ? { ok: true } : { ok: false, kind: r.damage!.kind, seq: r.damage!.seq };
};
const theirs = (text: string): Verdict => {
  const r = verifyBundleText(text) as { ok: boolean; damage?: { kind: string; seq: number | null } };
  return r.ok ? { ok: true } : { ok: false, kind: r.damage!.kind, seq: r.damage!.seq };
};

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
const entryLines = (lines: string[]): number[] => lines.map((l, i) => (l.includes('"type":"entry"') ? i : -1)).filter((i) => i >= 0);

/** One random damage of a kind an editor of the file could make. */
function damage(text: string, kind: number, rng: Rng): string {
  const lines = text.trimEnd().split('\n');
  const idx = entryLines(lines);
  const pick = (): number => idx[rng.int(0, idx.length - 1)]!;
  switch (kind) {
    case 0: { // change one character inside an entry's hashed part or hash
      const i = pick();
      const l = lines[i]!;
      const start = l.indexOf('"entry":') + 9;
      const p = rng.int(start, l.length - 2);
      lines[i] = l.slice(0, p) + (l[p] === '7' ? '8' : '7') + l.slice(p + 1);
      break;
    }
    case 1: lines.splice(pick(), 1); break;
    case 2: { const i = pick(); lines.splice(rng.int(idx[0]!, lines.length), 0, lines[i]!); break; }
    case 3: { // a forged, self-consistent entry with the seq and prev_hash of an existing one, placed before it
      const i = pick();
      const o = JSON.parse(lines[i]!) as { entry: Record<string, unknown> };
      const forged = { ...o.entry, actor: 'op-9', reason: 'looks legitimate' };
      lines.splice(i, 0, canonicalize({ type: 'entry', in_filter: true, hash: sha(canonicalize(forged)!), entry: forged })!);
      break;
    }
    case 4: { const a = pick(); const b = pick(); [lines[a], lines[b]] = [lines[b]!, lines[a]!]; break; }
    case 5: lines.splice(lines.length - rng.int(1, 6)); break;
    case 6: { // rewrite a suffix of entries with recomputed hashes
      let i = pick();
      let prev: string | undefined;
      for (; i < lines.length; i++) {
        const o = JSON.parse(lines[i]!) as { type: string; entry: Record<string, unknown>; hash: string; in_filter: boolean };
        if (o.type !== 'entry') continue;
        const e = prev === undefined ? { ...o.entry, reason: 'rewritten later' } : { ...o.entry, prev_hash: prev };
        prev = sha(canonicalize(e)!);
        lines[i] = canonicalize({ ...o, entry: e, hash: prev })!;
      }
      break;
    }
    case 7: lines[0] = lines[0]!.replace(/"segments":\[\[(\d+)/, (_m, a: string) => `"segments":[[${Number(a) + 1}`); break;
    case 8: { const i = lines.findIndex((l) => l.includes('"type":"checkpoint"')); lines[i] = lines[i]!.replace(/"sig":"(.)/, (_m, c: string) => `"sig":"${c === 'A' ? 'B' : 'A'}`); break; }
    default: { const i = lines.findIndex((l) => l.includes('"type":"checkpoint"')); lines.splice(i, 1); }
  }
  return `${lines.join('\n')}\n`;
}

describe('audit bundle', () => {
  it('[R12] [P11.10(b)] intact bundles verify the same in linekeeper and in the standalone verifier', () => {
    for (const f of [full, filtered]) {
      const text = readFileSync(f, 'utf8');
      expect(ours(text)).toEqual({ ok: true });
      expect(theirs(text)).toEqual({ ok: true });
    }
    const r = verifyBundle(readFileSync(full, 'utf8'));
    expect(r.entries).toBe(61);
    expect(r.segments).toEqual([[1, 61]]);
    const b7 = verifyBundle(readFileSync(filtered, 'utf8'));
    expect(b7.segments.length).toBeGreaterThan(1);
    expect(b7.entries).toBeLessThan(61);
    // Whole checkpoint intervals travel, but in_filter marks exactly the entries the filter chose.
    const rows = readFileSync(filtered, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as { type: string; in_filter?: boolean; entry?: { subject: { batch?: string } } });
    const es = rows.filter((r) => r.type === 'entry');
    expect(es.filter((r) => r.in_filter).length).toBe(8);
    expect(es.every((r) => r.in_filter === (r.entry!.subject.batch === 'B-7'))).toBe(true);
  });

  it('[R12] [P11.10(a)] every damage is detected, and both verifiers name the same kind and first bad seq', () => {
    const rng = createRng(42);
    const kinds = new Set<string>();
    for (let n = 0; n < 120; n++) {
      const base = readFileSync(n % 2 ? filtered : full, 'utf8');
      const bad = damage(base, n % 10, rng);
      const a = ours(bad);
      expect({ n, ...a }).toEqual({ n, ...theirs(bad) });
      expect({ n, ok: a.ok }).toEqual({ n, ok: false });
      kinds.add(a.kind!);
    }
    for (const k of ['edited', 'deleted', 'inserted', 'reordered', 'truncated', 'rewritten', 'signature_invalid']) expect(kinds).toContain(k);
  });

  it('a bundle file is verified line by line to the verdict of its text, by linekeeper and by the standalone verifier: intact and damaged, across read chunks and multi-byte characters', () => {
    // a million-entry trail's bundle is longer than the longest string there can be: the release package reads it by lines
    const rng = createRng(7);
    for (let n = 0; n < 30; n++) {
      const text = n < 2 ? readFileSync(n ? filtered : full, 'utf8') : damage(readFileSync(n % 2 ? filtered : full, 'utf8'), n % 10, rng);
      const f = join(t.dir, `by-lines-${n}.jsonl`);
      writeFileSync(f, n === 1 ? text.trimEnd() : text); // with and without the last newline
      const r = verifyBundleFile(f);
      expect({ n, ...r.report }).toEqual({ n, ...verifyBundle(text) });
      expect(r.sha256).toBe(createHash('sha256').update(readFileSync(f)).digest('hex'));
      // the standalone verifier reads a file line by line too, to the verdict of its text
      expect({ n, ...(theirsFile(f) as object) }).toEqual({ n, ...(verifyBundleText(text) as object) });
    }
    // more than one 1 MiB read, every line long and full of two-byte characters, so reads end inside lines and characters
    const big = tempDir('lk-bundle-big-');
    try {
      const { store, clock } = newStore(big.dir, { audit: { checkpointEvery: 100 } });
      for (let i = 1; i <= 700; i++) {
        clock.advance(1000);
        store.audit.append(entry(i, T, { reason: `${'µ°±'.repeat(500 + (i % 7))} ${i}` }));
      }
      const f = join(big.dir, 'big.jsonl');
      exportBundle(store, T, parseFilter({}), f);
      const head = store.audit.head(T);
      store.close();
      const bytes = readFileSync(f);
      expect(bytes.length).toBeGreaterThan(2 * 2 ** 20);
      const r = verifyBundleFile(f);
      expect(r.report).toEqual(verifyBundle(bytes.toString('utf8')));
      expect(r.report).toMatchObject({ ok: true, entries: 700, head: { seq: head.seq, hash: head.hash } });
      expect(theirsFile(f)).toMatchObject({ ok: true, entries: 700, head: { seq: head.seq, hash: head.hash } });
      expect(r.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
      expect(r.checkpoints.some((c) => c.seq === head.seq && c.head_hash === head.hash)).toBe(true);
    } finally {
      big.cleanup();
    }
  });

  it('the standalone verifier as a process: exit 0 intact, 65 damaged, 1 wrong pinned key, 2 not a bundle', () => {
    expect(run([full], false).code).toBe(0);
    expect(run([full, '--key', keyFiles(t.dir).publicFile], false).code).toBe(0);
    const bad = join(t.dir, 'bad.jsonl');
    writeFileSync(bad, damage(readFileSync(full, 'utf8'), 1, createRng(3)));
    const r = run([bad, '--json'], false);
    expect(r.code).toBe(65);
    expect((JSON.parse(r.out) as { damage: { kind: string } }).damage.kind).toBe(ours(readFileSync(bad, 'utf8')).kind);
    const other = join(t.dir, 'other.pem');
    writeFileSync(other, generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }));
    expect(run([full, '--key', other], false).code).toBe(1);
    expect(run([join(root, 'package.json')], false).code).toBe(2);
  });
});

describe('PDF report', () => {
  /** Text shown by an uncompressed pdfkit PDF: the hex strings of every TJ operator. */
  function pdfText(file: string): string {
    const raw = readFileSync(file, 'latin1');
    return [...raw.matchAll(/\[([^\]]*)\] TJ/g)].map((m) => [...m[1]!.matchAll(/<([0-9a-f]*)>/g)].map((h) => Buffer.from(h[1]!, 'hex').toString('latin1')).join('')).join('\n');
  }

  it('[P11.50] [P11.10(e)] [A11.8] [A11.9] shows each entry with actor, time, old -> new, reason, signature manifestation and the changed-since statement', async () => {
    const f = join(t.dir, 'report.pdf');
    const s = openStore({ dataDir: t.dir, readonly: true });
    const r = await exportPdf(s, T, { batch: 'B-7' }, f, { now: Date.UTC(2026, 0, 2), compress: false, siteName: 'Ravenna' });
    s.close();
    expect(readFileSync(f, 'latin1').startsWith('%PDF-')).toBe(true);
    const text = pdfText(f);
    expect(r.entries).toBe(8);
    expect(text).toContain('Chain verification: intact');
    expect(text).toContain('Signature: Dr. Jane Roe (qa.jroe), 2026-01-01 07:00:00.000 UTC, meaning: approved for release');
    expect(text).toContain('Value: 11.3 -> 11.4');
    expect(text).toContain('Reason: all release criteria met');
    expect(text).toContain('Actor: qa.jroe');
    expect(text.match(/Changed since original entry: No\./g)?.length).toBe(8);
    expect(text).not.toContain('borealis');
  });
});

describe('linekeeper audit (CLI)', () => {
  it('verify exits 0 with count and head per chain; exits 65 naming the damage; key --export prints the PEM', () => {
    const ok = run(['audit', 'verify', '--data', t.dir]);
    expect(ok.code).toBe(0);
    expect(ok.out).toMatch(/acme-pharma: ok, 61 entries, head #61 [0-9a-f]{64}/);
    expect(ok.out).toMatch(/borealis-bio: ok, 20 entries/);
    const key = run(['audit', 'key', '--export', '--data', t.dir]);
    expect(key.out).toBe(readFileSync(keyFiles(t.dir).publicFile, 'utf8'));
    const bundleOk = run(['audit', 'verify', '--bundle', filtered]);
    expect(bundleOk.code).toBe(0);

    const db = rawDb(t.dir);
    db.prepare("UPDATE audit_entry SET body = json_set(body, '$.reason', 'nothing to see') WHERE tenant = ? AND seq = 17").run(T);
    db.close();
    const bad = run(['audit', 'verify', '--data', t.dir]);
    expect(bad.code).toBe(65);
    expect(bad.out).toContain('acme-pharma: DAMAGED: edited at seq 17');
    expect(bad.err).toContain('[LK_AUDIT_BROKEN]');
  });

  it('a file that is not a database is a clear LK_STORE_CORRUPT, not a crash', () => {
    const d = tempDir('lk-bundle-corrupt-');
    try {
      writeFileSync(join(d.dir, DB_FILE), 'this is not a database, it is a shopping list'.repeat(200));
      const r = run(['audit', 'verify', '--data', d.dir]);
      expect(r.code).toBe(1);
      expect(r.err).toContain('[LK_STORE_CORRUPT]');
      expect(r.err).not.toContain('    at ');
    } finally {
      d.cleanup();
    }
  });
});
