import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type LimsChange, type LimsSource, limsResultsDir, openFolderLims } from '../../connectors/lims/index.js';
import { codeOf } from '../helpers/codes.js';

let dataDir: string;
let root: string;
const opened: LimsSource[] = [];

function result(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    format: 1,
    batch: 'B-1042',
    tenant: 'acme-pharma',
    test: 'assay',
    result: 99.4,
    unit: '%',
    specification: '95.0–105.0 % of label claim',
    status: 'pass',
    analyst: 'a.verdi',
    reviewed_by: 's.neri',
    reported_at: '2026-11-21T09:30:00Z',
    lims_ref: 'LIMS-88123',
    ...over,
  };
}

function put(tenant: string, name: string, content: unknown): string {
  const dir = join(root, tenant);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `.${name}.tmp`), typeof content === 'string' ? content : JSON.stringify(content));
  renameSync(join(dir, `.${name}.tmp`), join(dir, name));
  return join(dir, name);
}

function open(): LimsSource {
  const lims = openFolderLims(dataDir, { pollMs: 20, fsWatch: false });
  opened.push(lims);
  return lims;
}

beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'lk-lims-'));
  root = limsResultsDir(dataDir);
});
afterEach(() => {
  for (const l of opened.splice(0)) l.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('folder LIMS', () => {
  it('joins results to their batch by the batch field, sorted by report time then LIMS ref', () => {
    const lims = open();
    put('acme-pharma', 'zz-assay.json', result({ lims_ref: 'L-2', reported_at: '2026-11-21T09:30:00Z' }));
    put('acme-pharma', 'aa-cu.json', result({ test: 'content_uniformity', result: 6.1, unit: '1', lims_ref: 'L-3', reported_at: '2026-11-21T11:30:00+02:00' }));
    put('acme-pharma', 'mm-diss.json', result({ test: 'dissolution', result: 92, lims_ref: 'L-1', reported_at: '2026-11-21T09:30:00Z' }));
    put('acme-pharma', 'other-batch.json', result({ batch: 'B-1043', lims_ref: 'L-9' }));
    expect(lims.results('acme-pharma', 'B-1042').map((r) => r.lims_ref)).toEqual(['L-1', 'L-2', 'L-3']);
    expect(lims.results('acme-pharma', 'B-1043').map((r) => r.lims_ref)).toEqual(['L-9']);
    expect(lims.results('acme-pharma', 'B-9999')).toEqual([]);
    expect(Object.isFrozen(lims.results('acme-pharma', 'B-1043')[0])).toBe(true);
    expect(lims.problems()).toEqual([]);
  });

  it('reports invalid files separately, never throws them at the caller, and leaves them unchanged', () => {
    const lims = open();
    put('acme-pharma', 'ok.json', result());
    const broken = put('acme-pharma', 'broken.json', '{ "format": 1');
    const invalid = put('acme-pharma', 'invalid.json', result({ status: 'probably fine', lims_ref: 'L-5' }));
    const bytes = readFileSync(invalid);
    expect(lims.results('acme-pharma', 'B-1042').map((r) => r.lims_ref)).toEqual(['LIMS-88123']);
    const problems = lims.problems('acme-pharma');
    expect(problems.map((p) => p.file)).toEqual(['acme-pharma/broken.json', 'acme-pharma/invalid.json']);
    expect(problems[1]?.error).toMatch(/^acme-pharma\/invalid\.json: status: /);
    expect(problems.every((p) => p.tenant === 'acme-pharma' && /^[0-9a-f]{64}$/.test(p.sha256 ?? ''))).toBe(true);
    expect(readFileSync(invalid)).toEqual(bytes);
    expect(readFileSync(broken, 'utf8')).toBe('{ "format": 1');
  });

  it('keeps tenants apart: another tenant’s folder is not visible, and a result naming another tenant is a problem, not a result [R1]', () => {
    const lims = open();
    put('borealis-bio', 'b.json', result({ tenant: 'borealis-bio', batch: 'B-1042', lims_ref: 'BB-1' }));
    put('acme-pharma', 'stray.json', result({ tenant: 'borealis-bio', lims_ref: 'BB-2' }));
    expect(lims.results('acme-pharma', 'B-1042')).toEqual([]);
    expect(lims.results('borealis-bio', 'B-1042').map((r) => r.lims_ref)).toEqual(['BB-1']);
    expect(lims.problems('acme-pharma').map((p) => p.file)).toEqual(['acme-pharma/stray.json']);
    expect(lims.problems('borealis-bio')).toEqual([]);
    expect(lims.problems().map((p) => p.tenant)).toEqual(['acme-pharma']);
    // a tenant folder that is a link to another tenant's is not followed
    symlinkSync(join(root, 'borealis-bio'), join(root, 'globex'));
    expect(lims.results('globex', 'B-1042')).toEqual([]);
  });

  it('refuses a tenant or batch that is not an id (path traversal)', () => {
    const lims = open();
    for (const t of ['../acme-pharma', '..', 'a/b', '']) {
      expect(codeOf(() => lims.results(t, 'B-1042'))).toBe('LK_VALIDATION');
      expect(codeOf(() => lims.problems(t))).toBe('LK_VALIDATION');
    }
    expect(codeOf(() => lims.results('acme-pharma', '../B-1042'))).toBe('LK_VALIDATION');
  });

  it('watch reports result files added, changed and removed with their batch (polling)', async () => {
    const lims = open();
    const seen: LimsChange[] = [];
    const waiters: [(e: LimsChange) => boolean, (e: LimsChange) => void][] = [];
    const stop = lims.watch((e) => {
      seen.push(e);
      for (const w of [...waiters]) if (w[0](e)) waiters.splice(waiters.indexOf(w), 1), w[1](e);
    });
    const next = (kind: LimsChange['kind']): Promise<LimsChange> => new Promise((res) => waiters.push([(e) => e.kind === kind, res]));

    let p = next('added');
    const f = put('acme-pharma', 'r1.json', result());
    expect(await p).toEqual({ tenant: 'acme-pharma', file: 'acme-pharma/r1.json', kind: 'added', batch: 'B-1042' });
    p = next('changed');
    put('acme-pharma', 'r1.json', result({ status: 'oos', result: 93.1 }));
    expect(await p).toEqual({ tenant: 'acme-pharma', file: 'acme-pharma/r1.json', kind: 'changed', batch: 'B-1042' });
    p = next('removed');
    unlinkSync(f);
    expect(await p).toEqual({ tenant: 'acme-pharma', file: 'acme-pharma/r1.json', kind: 'removed', batch: 'B-1042' });
    p = next('added');
    put('acme-pharma', 'junk.json', 'not json');
    expect(await p).toEqual({ tenant: 'acme-pharma', file: 'acme-pharma/junk.json', kind: 'added' });
    stop();
    expect(seen.map((e) => e.kind)).toEqual(['added', 'changed', 'removed', 'added']);
  });
});
