import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type MesChange, type MesSource, mesInboxDir, openFolderMes, seedInbox } from '../../connectors/mes/index.js';
import { defaultConfigFile, loadConfig } from '../../src/config/load.js';
import { codeOf } from '../helpers/codes.js';

const SAMPLES = join(defaultConfigFile(), '..', 'batches');
const sample = (file: string): Record<string, any> => JSON.parse(readFileSync(join(SAMPLES, file), 'utf8'));
const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

let dataDir: string;
let inbox: string;
const opened: MesSource[] = [];

/** Write a record the way an exporter should: a hidden temporary, then rename. */
function put(tenant: string, name: string, content: unknown): string {
  const dir = join(inbox, tenant);
  mkdirSync(dir, { recursive: true });
  const f = join(dir, name);
  writeFileSync(join(dir, `.${name}.tmp`), typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  renameSync(join(dir, `.${name}.tmp`), f);
  return f;
}

function open(opts: Parameters<typeof openFolderMes>[1] = { pollMs: 20, fsWatch: false }) {
  const mes = openFolderMes(dataDir, opts);
  opened.push(mes);
  return mes;
}

/** Events of a watch, and a way to await the next one that matches. */
function recorder(mes: MesSource) {
  const seen: MesChange[] = [];
  const waiters: { match: (e: MesChange) => boolean; resolve: (e: MesChange) => void }[] = [];
  const stop = mes.watch((e) => {
    seen.push(e);
    for (const w of [...waiters]) {
      if (w.match(e)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(e);
      }
    }
  });
  const next = (match: Partial<MesChange>): Promise<MesChange> =>
    new Promise((resolve) => {
      const hit = seen.find((e) => Object.entries(match).every(([k, v]) => e[k as keyof MesChange] === v));
      if (hit) seen.splice(seen.indexOf(hit), 1);
      if (hit) resolve(hit);
      else waiters.push({ match: (e) => Object.entries(match).every(([k, v]) => e[k as keyof MesChange] === v), resolve });
    });
  return { seen, next, stop };
}

beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'lk-mes-'));
  inbox = mesInboxDir(dataDir);
});
afterEach(() => {
  for (const m of opened.splice(0)) m.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('folder MES: seeding', () => {
  it('copies the samples into an empty inbox, byte for byte, and only once', () => {
    const copied = seedInbox(dataDir, SAMPLES);
    expect(copied.map((c) => c.file).sort()).toEqual(['acme-pharma/B-1042.json', 'borealis-bio/B-2001.json']);
    for (const c of copied) expect(readFileSync(join(inbox, c.file))).toEqual(readFileSync(join(SAMPLES, c.file)));
    expect(seedInbox(dataDir, SAMPLES)).toEqual([]);
  });

  it('never overwrites an existing record, and copies nothing into an inbox that holds one', () => {
    const mine = { ...sample('acme-pharma/B-1042.json'), mes_ref: 'MES-LOCAL-EDIT' };
    const f = put('acme-pharma', 'B-1042.json', mine);
    const before = readFileSync(f);
    expect(seedInbox(dataDir, SAMPLES)).toEqual([]);
    expect(readFileSync(f)).toEqual(before);
    expect(existsSync(join(inbox, 'borealis-bio', 'B-2001.json'))).toBe(false);
  });

  it('validates every sample before copying any', () => {
    const samples = mkdtempSync(join(tmpdir(), 'lk-samples-'));
    try {
      cpSync(SAMPLES, samples, { recursive: true });
      writeFileSync(join(samples, 'borealis-bio', 'B-2002.json'), JSON.stringify({ ...sample('borealis-bio/B-2001.json'), batch: 'B-2002', line: 42 }));
      expect(codeOf(() => seedInbox(dataDir, samples))).toBe('LK_BATCH_RECORD_INVALID');
      expect(open().list('acme-pharma')).toEqual([]);
      expect(codeOf(() => seedInbox(dataDir, join(samples, 'nowhere')))).toBe('LK_NOT_FOUND');
    } finally {
      rmSync(samples, { recursive: true, force: true });
    }
  });
});

describe('folder MES: list and read', () => {
  beforeEach(() => void seedInbox(dataDir, SAMPLES));

  it('lists and reads a tenant’s records with the digest of their bytes', () => {
    const mes = open();
    const bytes = readFileSync(join(inbox, 'acme-pharma', 'B-1042.json'));
    expect(mes.list('acme-pharma')).toEqual([{ batch: 'B-1042', tenant: 'acme-pharma', file: 'acme-pharma/B-1042.json', sha256: sha(bytes), valid: true }]);
    const r = mes.read('acme-pharma', 'B-1042');
    expect(r).toEqual(sample('acme-pharma/B-1042.json'));
    expect(Object.isFrozen(r)).toBe(true);
    expect(mes.readEntry('acme-pharma', 'B-1042').sha256).toBe(sha(bytes));
    expect(mes.list('globex')).toEqual([]);
  });

  it('never serves one tenant’s record to another [R1]', () => {
    const mes = open();
    expect(codeOf(() => mes.read('borealis-bio', 'B-1042'))).toBe('LK_NOT_FOUND');
    expect(codeOf(() => mes.read('acme-pharma', 'B-2001'))).toBe('LK_NOT_FOUND');
    // borealis's record dropped into acme's folder: refused, listed invalid, left untouched
    const f = put('acme-pharma', 'B-2001.json', sample('borealis-bio/B-2001.json'));
    const before = { bytes: readFileSync(f), mtime: statSync(f).mtimeMs };
    expect(codeOf(() => mes.read('acme-pharma', 'B-2001'))).toBe('LK_BATCH_RECORD_INVALID');
    const listed = mes.list('acme-pharma').find((l) => l.batch === 'B-2001');
    expect(listed?.valid).toBe(false);
    expect(listed?.error).not.toContain('borealis'); // nothing of the other tenant's record is repeated
    expect(readFileSync(f)).toEqual(before.bytes);
    expect(statSync(f).mtimeMs).toBe(before.mtime);
  });

  it('refuses a tenant or batch that is not an id (path traversal)', () => {
    const mes = open();
    for (const t of ['../borealis-bio', '..', 'acme-pharma/../borealis-bio', '/etc', 'Acme', '']) {
      expect(codeOf(() => mes.read(t, 'B-2001'))).toBe('LK_VALIDATION');
      expect(codeOf(() => mes.list(t))).toBe('LK_VALIDATION');
    }
    expect(codeOf(() => mes.read('acme-pharma', '../borealis-bio/B-2001'))).toBe('LK_VALIDATION');
  });

  it('does not follow symbolic links: a tenant folder linked to another tenant’s is empty', () => {
    const mes = open();
    symlinkSync(join(inbox, 'acme-pharma'), join(inbox, 'globex'));
    expect(mes.list('globex')).toEqual([]);
    expect(codeOf(() => mes.read('globex', 'B-1042'))).toBe('LK_NOT_FOUND');
    symlinkSync(join(inbox, 'borealis-bio', 'B-2001.json'), join(inbox, 'acme-pharma', 'B-7.json'));
    expect(mes.list('acme-pharma').find((l) => l.batch === 'B-7')).toMatchObject({ valid: false, sha256: null });
    expect(codeOf(() => mes.read('acme-pharma', 'B-7'))).toBe('LK_BATCH_RECORD_INVALID');
  });

  it('lists invalid files as invalid and leaves them where they are', () => {
    const mes = open();
    const broken = put('acme-pharma', 'B-1043.json', '{ "format": 1, ');
    const invalid = put('acme-pharma', 'B-1044.json', { ...sample('acme-pharma/B-1042.json'), batch: 'B-1044', specifications: { ...sample('acme-pharma/B-1042.json').specifications, hardness: { min: 150, max: 80, unit: 'N' } } });
    const misnamed = put('acme-pharma', 'B-1045.json', sample('acme-pharma/B-1042.json'));
    const oddName = put('acme-pharma', 'batch 7.json', sample('acme-pharma/B-1042.json'));
    const list = mes.list('acme-pharma');
    expect(list.map((l) => [l.batch, l.valid])).toEqual([
      ['B-1042', true],
      ['B-1043', false],
      ['B-1044', false],
      ['B-1045', false],
      ['batch 7', false],
    ]);
    expect(list.every((l) => l.valid || typeof l.error === 'string')).toBe(true);
    expect(list.find((l) => l.batch === 'B-1044')?.error).toMatch(/^acme-pharma\/B-1044\.json: specifications\.hardness\.min: /);
    expect(list.find((l) => l.batch === 'B-1043')?.sha256).toBe(sha(readFileSync(broken)));
    for (const b of ['B-1043', 'B-1044', 'B-1045']) expect(codeOf(() => mes.read('acme-pharma', b))).toBe('LK_BATCH_RECORD_INVALID');
    for (const f of [broken, invalid, misnamed, oddName]) expect(existsSync(f)).toBe(true);
  });

  it('with the site configuration, a record that does not fit the site is invalid', () => {
    const site = loadConfig().config;
    put('acme-pharma', 'B-1046.json', { ...sample('acme-pharma/B-1042.json'), batch: 'B-1046', line: 'line-4' });
    expect(open().list('acme-pharma').find((l) => l.batch === 'B-1046')?.valid).toBe(true);
    const withSite = open({ pollMs: 20, fsWatch: false, site });
    expect(withSite.list('acme-pharma').map((l) => [l.batch, l.valid])).toEqual([
      ['B-1042', true],
      ['B-1046', false],
    ]);
    expect(codeOf(() => withSite.read('acme-pharma', 'B-1046'))).toBe('LK_BATCH_RECORD_INVALID');
    expect(codeOf(() => withSite.read('borealis-bio', 'B-2001'))).toBeUndefined();
  });
});

describe('folder MES: watch', () => {
  it('reports records added, changed and removed (polling), and nothing after it stops', async () => {
    const mes = open({ pollMs: 20, fsWatch: false });
    seedInbox(dataDir, SAMPLES); // before the watch: the baseline, no events
    const a = recorder(mes);
    const b = recorder(mes);
    const f = put('acme-pharma', 'B-1050.json', { ...sample('acme-pharma/B-1042.json'), batch: 'B-1050' });
    expect(await a.next({ batch: 'B-1050' })).toEqual({ tenant: 'acme-pharma', batch: 'B-1050', kind: 'added' });
    put('acme-pharma', 'B-1050.json', { ...sample('acme-pharma/B-1042.json'), batch: 'B-1050', mes_ref: 'MES-REV-2' });
    expect(await a.next({ batch: 'B-1050', kind: 'changed' })).toEqual({ tenant: 'acme-pharma', batch: 'B-1050', kind: 'changed' });
    put('borealis-bio', 'B-2002.json', { ...sample('borealis-bio/B-2001.json'), batch: 'B-2002' });
    expect(await a.next({ tenant: 'borealis-bio' })).toEqual({ tenant: 'borealis-bio', batch: 'B-2002', kind: 'added' });
    unlinkSync(f);
    expect(await a.next({ batch: 'B-1050', kind: 'removed' })).toEqual({ tenant: 'acme-pharma', batch: 'B-1050', kind: 'removed' });
    expect(a.seen.filter((e) => e.batch === 'B-1042' || e.batch === 'B-2001')).toEqual([]);

    a.stop();
    const before = a.seen.length;
    put('acme-pharma', 'B-1051.json', { ...sample('acme-pharma/B-1042.json'), batch: 'B-1051' });
    await b.next({ batch: 'B-1051' });
    put('acme-pharma', 'B-1052.json', { ...sample('acme-pharma/B-1042.json'), batch: 'B-1052' });
    await b.next({ batch: 'B-1052' });
    expect(a.seen.length).toBe(before);
  });

  it('reports a new tenant folder’s records and an invalid record as well (fs.watch on)', async () => {
    const mes = open({ pollMs: 50 });
    const w = recorder(mes);
    put('globex', 'G-1.json', '{ not json');
    expect(await w.next({ tenant: 'globex' })).toEqual({ tenant: 'globex', batch: 'G-1', kind: 'added' });
    expect(mes.list('globex')[0]?.valid).toBe(false);
  });

  it('close stops every watch and refuses further use', async () => {
    const mes = open();
    const w = recorder(mes);
    mes.close();
    expect(codeOf(() => mes.list('acme-pharma'))).toBe('LK_CONN_UNAVAILABLE');
    expect(codeOf(() => mes.watch(() => {}))).toBe('LK_CONN_UNAVAILABLE');
    const other = open();
    const o = recorder(other);
    put('acme-pharma', 'B-1060.json', { ...sample('acme-pharma/B-1042.json'), batch: 'B-1060' });
    await o.next({ batch: 'B-1060' });
    expect(w.seen).toEqual([]);
  });
});

describe('folder MES: the archive of ingested records and the refused folder', () => {
  it('archives a record byte for byte under its hash, leaves the inbox only when removed with that hash, and still serves it from the archive', () => {
    const mes = open();
    const f = put('acme-pharma', 'B-1042.json', sample('acme-pharma/B-1042.json'));
    const bytes = readFileSync(f);
    const record = mes.read('acme-pharma', 'B-1042');
    const kept = mes.intake.archive('acme-pharma', 'B-1042');
    expect(kept).toEqual({ file: `archive/acme-pharma/B-1042.${sha(bytes).slice(0, 12)}.json`, sha256: sha(bytes) });
    expect(readFileSync(join(dataDir, 'mes', kept.file))).toEqual(bytes);
    // idempotent: the same bytes keep the same name, and the inbox is untouched until removed
    expect(mes.intake.archive('acme-pharma', 'B-1042')).toEqual(kept);
    expect(existsSync(f)).toBe(true);
    expect(mes.intake.removeFromInbox('acme-pharma', 'B-1042', 'f'.repeat(64))).toBe(false);
    expect(mes.intake.removeFromInbox('acme-pharma', 'B-1042', kept.sha256)).toBe(true);
    expect(existsSync(f)).toBe(false);
    expect(mes.list('acme-pharma')).toEqual([]);
    // the run that ingested it (and a resume of it) reads the archived record
    expect(mes.read('acme-pharma', 'B-1042')).toEqual(record);
    expect(mes.intake.archived('acme-pharma', 'B-1042')).toEqual([kept]);
    // another tenant has no such archived batch (R1)
    expect(codeOf(() => mes.read('borealis-bio', 'B-1042'))).toBe('LK_NOT_FOUND');
    expect(mes.intake.archived('borealis-bio', 'B-1042')).toEqual([]);
  });

  it('moves a refused record out of the inbox only when its bytes are the ones judged; the archive is not touched', () => {
    const mes = open();
    put('acme-pharma', 'B-1042.json', sample('acme-pharma/B-1042.json'));
    const kept = mes.intake.archive('acme-pharma', 'B-1042');
    mes.intake.removeFromInbox('acme-pharma', 'B-1042', kept.sha256);
    const changed = { ...sample('acme-pharma/B-1042.json'), mes_ref: 'MES-EDITED-AFTER-RELEASE' };
    const f = put('acme-pharma', 'B-1042.json', changed);
    const bytes = readFileSync(f);
    expect(mes.intake.inboxSha('acme-pharma', 'B-1042')).toBe(sha(bytes));
    expect(mes.intake.refuse('acme-pharma', 'B-1042', kept.sha256)).toBeNull();
    expect(existsSync(f)).toBe(true);
    const refused = mes.intake.refuse('acme-pharma', 'B-1042', sha(bytes));
    expect(refused).toEqual({ file: `refused/acme-pharma/B-1042.${sha(bytes).slice(0, 12)}.json`, sha256: sha(bytes) });
    expect(readFileSync(join(dataDir, 'mes', refused!.file))).toEqual(bytes);
    expect(existsSync(f)).toBe(false);
    expect(mes.intake.archived('acme-pharma', 'B-1042')).toEqual([kept]);
    expect(mes.read('acme-pharma', 'B-1042').mes_ref).toBe(sample('acme-pharma/B-1042.json')['mes_ref']);
  });

  it('seeds nothing into an empty inbox once the archive holds an ingested record', () => {
    const mes = open();
    seedInbox(dataDir, SAMPLES);
    for (const [t, b] of [['acme-pharma', 'B-1042'], ['borealis-bio', 'B-2001']] as const) {
      const kept = mes.intake.archive(t, b);
      mes.intake.removeFromInbox(t, b, kept.sha256);
    }
    expect(seedInbox(dataDir, SAMPLES)).toEqual([]);
    expect(existsSync(join(inbox, 'acme-pharma', 'B-1042.json'))).toBe(false);
  });
});
