import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleLines, exportBundle } from '../../src/audit/bundle.js';
import { csvCell, exportCsv } from '../../src/audit/export-csv.js';
import { parseFilter, queryAudit, type ValidFilter } from '../../src/audit/query.js';
import { configChanged, configInvalid, connectorEvent, heartbeatEvent, siteStarted, siteStopped, watchdogEvent } from '../../src/audit/site-events.js';
import { SITE_TENANT } from '../../src/audit/entry.js';
import type { Store } from '../../src/store/store.js';
import type { ManualClock } from '../../src/clock.js';
import { codeOf, entry, newStore, tempDir } from './audit-helpers.js';

let t: { dir: string; cleanup: () => void };
let store: Store;
let clock: ManualClock;

beforeAll(() => {
  t = tempDir('lk-query-');
  ({ store, clock } = newStore(t.dir, { audit: { checkpointEvery: 7 } }));
  for (let i = 0; i < 40; i++) {
    clock.advance(60_000);
    store.audit.append(entry(i, 'acme-pharma', { subject: { batch: `A-${i % 4}`, run: `run_a${i % 2}`, agent: i % 5 === 0 ? 'agent.coat_dry' : 'agent.compress_fill', tool: i % 3 === 0 ? 'coater.write_setpoint' : 'press.write_setpoint' }, reason: 'ACME-ONLY-MARKER' }));
    if (i % 2 === 0) store.audit.append(entry(i, 'borealis-bio', { subject: { batch: `A-${i % 4}` }, reason: 'BOREALIS-SECRET-RECIPE' }));
  }
  store.audit.append({ tenant: 'acme-pharma', actor: 'qa.jroe', kind: 'approval', action: 'batch.release', subject: { batch: 'A-1', reviewer: 'qa.jroe' }, reason: '=HYPERLINK("http://x")', signature: { user: 'qa.jroe', name: 'Jane Roe', meaning: 'approved for release', time: '2026-01-01T07:00:00.000Z' } });
});
afterAll(() => {
  store.close();
  t.cleanup();
});

describe('audit query', () => {
  it('[R1] [A11.9] filters by batch, run, agent, tool, reviewer, kind and time, in chain order, within one tenant', () => {
    const all = queryAudit(store.db, 'acme-pharma', {}, { limit: 1000 }).entries;
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: 41 }, (_, i) => i + 1));
    const byBatch = queryAudit(store.db, 'acme-pharma', { batch: 'A-2' }, { limit: 1000 }).entries;
    expect(byBatch.length).toBe(10);
    expect(byBatch.every((e) => e.subject.batch === 'A-2' && e.tenant === 'acme-pharma')).toBe(true);
    const combo = queryAudit(store.db, 'acme-pharma', { run: 'run_a0', agent: 'agent.coat_dry', tool: 'coater.write_setpoint' }, { limit: 1000 }).entries;
    expect(combo.map((e) => e.seq)).toEqual(all.filter((e) => e.subject.run === 'run_a0' && e.subject.agent === 'agent.coat_dry' && e.subject.tool === 'coater.write_setpoint').map((e) => e.seq));
    expect(combo.length).toBeGreaterThan(0);
    expect(queryAudit(store.db, 'acme-pharma', { reviewer: 'qa.jroe' }).entries.map((e) => e.kind)).toEqual(['approval']);
    const from = all[10]!.ts;
    const to = all[20]!.ts;
    expect(queryAudit(store.db, 'acme-pharma', { from, to }, { limit: 1000 }).entries.map((e) => e.seq)).toEqual(Array.from({ length: 10 }, (_, i) => 11 + i));
    expect(queryAudit(store.db, 'borealis-bio', { batch: 'A-2' }, { limit: 1000 }).entries.every((e) => e.tenant === 'borealis-bio' && e.reason === 'BOREALIS-SECRET-RECIPE')).toBe(true);
  });

  it('pages with cursors: every entry exactly once; a cursor only works for its own tenant and filter', () => {
    const seen: number[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const p = queryAudit(store.db, 'acme-pharma', { batch: 'A-1' }, { limit: 3, ...(cursor ? { cursor } : {}) });
      seen.push(...p.entries.map((e) => e.seq));
      cursor = p.next;
      pages++;
    } while (cursor);
    const expected = queryAudit(store.db, 'acme-pharma', { batch: 'A-1' }, { limit: 1000 }).entries.map((e) => e.seq);
    expect(seen).toEqual(expected);
    expect(pages).toBe(Math.ceil(expected.length / 3));
    const c = queryAudit(store.db, 'acme-pharma', { batch: 'A-1' }, { limit: 3 }).next!;
    expect(codeOf(() => queryAudit(store.db, 'borealis-bio', { batch: 'A-1' }, { cursor: c }))).toBe('LK_VALIDATION');
    expect(codeOf(() => queryAudit(store.db, 'acme-pharma', { batch: 'A-2' }, { cursor: c }))).toBe('LK_VALIDATION');
    expect(codeOf(() => queryAudit(store.db, 'acme-pharma', {}, { cursor: 'garbage' }))).toBe('LK_VALIDATION');
  });

  it.each([
    ['an unknown filter key', { lot: 'x' }, {}],
    ['a bad time', { from: 'yesterday' }, {}],
    ['from after to', { from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' }, {}],
    ['limit 0', {}, { limit: 0 }],
    ['limit over the page maximum', {}, { limit: 5000 }],
  ])('refuses %s with LK_VALIDATION', (_what, filter, opts) => {
    expect(codeOf(() => queryAudit(store.db, 'acme-pharma', filter, opts))).toBe('LK_VALIDATION');
  });
});

describe('exports', () => {
  it('[P11.10(b)] CSV: one row per entry, quoted, formula cells defused, nothing of another tenant', () => {
    const f = join(t.dir, 'acme.csv');
    expect(exportCsv(store.db, 'acme-pharma', {}, f)).toBe(41);
    const text = readFileSync(f, 'utf8');
    const lines = text.trimEnd().split('\r\n');
    expect(lines.length).toBe(42);
    expect(lines[0]!.startsWith('tenant,seq,ts,actor')).toBe(true);
    expect(text).not.toContain('BOREALIS');
    expect(text).toContain(`"'=HYPERLINK(""http://x"")"`);
    expect(text).toContain('Jane Roe,approved for release');
    expect(csvCell('-12.5')).toBe('-12.5');
    expect(csvCell('@SUM(A1)')).toBe("'@SUM(A1)");
  });

  it('[R1] [R9] a bundle of tenant A, filtered or not, contains nothing of tenant B', () => {
    for (const filter of [{}, { batch: 'A-2' }]) {
      const f = join(t.dir, `acme-${Object.keys(filter).length}.jsonl`);
      exportBundle(store, 'acme-pharma', parseFilter(filter), f);
      const text = readFileSync(f, 'utf8');
      expect(text).toContain('ACME-ONLY-MARKER');
      expect(text).not.toContain('BOREALIS');
      expect(text).not.toContain('borealis-bio');
    }
    expect(codeOf(() => exportBundle(store, 'no-such-tenant', parseFilter({}), join(t.dir, 'x.jsonl')))).toBe('LK_NOT_FOUND');
  });

  it('a bundle selects only by a filter parseFilter returned: a cast, a copy or a changed one is refused, nothing written', () => {
    const checked = parseFilter({ batch: 'A-2' });
    const unchecked = [{ from: 'yesterday' } as unknown as ValidFilter, { ...checked, from: 'yesterday' }, { ...checked }];
    for (const [i, f] of unchecked.entries()) {
      const file = join(t.dir, `unchecked-${i}.jsonl`);
      expect(codeOf(() => exportBundle(store, 'acme-pharma', f, file))).toBe('LK_INTERNAL');
      expect(codeOf(() => [...bundleLines(store, 'acme-pharma', f)])).toBe('LK_INTERNAL');
      expect(existsSync(file)).toBe(false);
    }
    // what parseFilter returned stays what it checked
    expect(Object.isFrozen(checked)).toBe(true);
    expect(() => Object.assign(checked, { from: 'yesterday' })).toThrow(TypeError);
  });
});

describe('site events', () => {
  it('record the edge node’s own events on the site chain', () => {
    siteStarted(store.audit, { version: '0.1.0', configHash: 'a'.repeat(64) });
    connectorEvent(store.audit, { connection: 'press-opcua', state: 'lost', error: 'ECONNRESET' });
    connectorEvent(store.audit, { connection: 'press-opcua', state: 'restored', downMs: 1200 });
    heartbeatEvent(store.audit, { equipment: 'press', state: 'failing' });
    watchdogEvent(store.audit, { event: 'lkg_revert', equipment: 'press', old: 'recipe-7', new: 'lkg-3' });
    configInvalid(store.audit, { file: 'config/site.yaml', code: 'LK_CONFIG_INVALID', issues: [{ path: 'equipment[0].tags[1].unit', message: 'unknown unit', line: 57 }] });
    configChanged(store.audit, { file: 'config/site.yaml', oldHash: 'a'.repeat(64), newHash: 'b'.repeat(64), actor: 'op-7' });
    siteStopped(store.audit, { signal: 'SIGTERM' });
    const site = queryAudit(store.db, SITE_TENANT, {}, { limit: 100 }).entries;
    expect(site.map((e) => e.action)).toEqual([
      'site.start', 'connector.lost', 'connector.restored', 'heartbeat.failing', 'watchdog.lkg_revert', 'config.invalid', 'config.change', 'site.stop',
    ]);
    expect(site[0]!.args).toMatchObject({ version: '0.1.0', config_hash: 'a'.repeat(64) });
    expect(site[4]).toMatchObject({ kind: 'watchdog', old: 'recipe-7', new: 'lkg-3' });
    expect(site[6]).toMatchObject({ actor: 'op-7', old: 'a'.repeat(64), new: 'b'.repeat(64) });
    expect(queryAudit(store.db, 'acme-pharma', { kind: 'system' }).entries).toEqual([]);
  });
});
