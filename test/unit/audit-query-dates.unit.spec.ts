/**
 * The audit query's time bounds and action filter on a real store: a date alone (2026-01-02) means that whole
 * day in UTC — `from` its start, `to` its end — so an auditor asks for "every action of a person on a day"
 * without writing times; instants work as before; a bad date is refused and names what is accepted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseFilter, queryAudit } from '../../src/audit/query.js';
import type { Store } from '../../src/store/store.js';
import { codeOf, entry, newStore, tempDir } from './audit-helpers.js';

const T = 'acme-pharma';
let t: { dir: string; cleanup: () => void };
let store: Store;

beforeAll(() => {
  t = tempDir('lk-query-dates-');
  const s = newStore(t.dir); // the clock starts 2026-01-01T06:00Z
  store = s.store;
  // one entry every 6 h: 2026-01-01T12:00, 18:00, 2026-01-02T00:00, 06:00, 12:00, 18:00, 2026-01-03T00:00, …
  for (let i = 1; i <= 8; i++) {
    s.clock.advance(6 * 3600_000);
    store.audit.append(entry(i, T, { actor: i % 2 ? 'o.operator' : 'p.bianchi', action: i % 2 ? 'run.start' : 'approval.decide' }));
  }
});
afterAll(() => {
  store.close();
  t.cleanup();
});

const times = (f: Record<string, string>) => queryAudit(store.db, T, f).entries.map((e) => e.ts);

describe('audit query: a date alone is a whole UTC day', () => {
  it('from=to=one date finds every entry of that day, from its midnight to the next (exclusive)', () => {
    expect(times({ from: '2026-01-02', to: '2026-01-02' })).toEqual(['2026-01-02T00:00:00.000Z', '2026-01-02T06:00:00.000Z', '2026-01-02T12:00:00.000Z', '2026-01-02T18:00:00.000Z']);
    expect(times({ from: '2026-01-02' })[0]).toBe('2026-01-02T00:00:00.000Z');
    expect(times({ to: '2026-01-01' })).toEqual(['2026-01-01T12:00:00.000Z', '2026-01-01T18:00:00.000Z']);
    // a date and an instant mix; an instant is exclusive as before
    expect(times({ from: '2026-01-01', to: '2026-01-02T06:00:00Z' })).toHaveLength(3);
  });

  it('filters by actor and action together with the day', () => {
    const got = queryAudit(store.db, T, { actor: 'o.operator', action: 'run.start', from: '2026-01-02', to: '2026-01-02' }).entries;
    expect(got.map((e) => [e.actor, e.action, e.ts])).toEqual([['o.operator', 'run.start', '2026-01-02T00:00:00.000Z'], ['o.operator', 'run.start', '2026-01-02T12:00:00.000Z']]);
  });

  it('refuses an impossible date, a date with another shape, and a range that ends before it starts', () => {
    for (const from of ['2026-02-30', '26-11-2026', '2026-11-26 08:00']) expect(codeOf(() => parseFilter({ from })), from).toBe('LK_VALIDATION');
    expect(() => parseFilter({ from: '2026-13-01' })).toThrow(/date-time .* or a date/);
    expect(codeOf(() => parseFilter({ from: '2026-01-03', to: '2026-01-02' }))).toBe('LK_VALIDATION');
  });
});
