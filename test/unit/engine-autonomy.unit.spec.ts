/**
 * Persisted autonomy levels (src/store/autonomy-store.ts) on a real SQLite
 * file: the bundle's levels until a change, per agent, per agent × setpoint
 * and per setpoint ceiling; every change one transaction with its
 * `autonomy_change` entry; a refused change writes nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SITE_TENANT, verifyStore } from '../../src/audit/index.js';
import { ManualClock } from '../../src/clock.js';
import { autonomyLevels, autonomyRows, setAutonomy } from '../../src/store/autonomy-store.js';
import { LkError } from '../../src/errors.js';
import { type Store, openStore } from '../../src/store/store.js';
import { bundle } from './policy-helpers.js';

let dir: string;
let store: Store;
const clock = new ManualClock(Date.UTC(2026, 2, 3, 8));
const qa = { person: 'q.russo', role: 'qa_reviewer' };
const A = 'agent.compress_fill';

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lk-autonomy-'));
  store = openStore({ dataDir: dir, clock });
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
    return undefined;
  } catch (e) {
    return LkError.is(e) ? e.code : `not an LkError: ${String(e)}`;
  }
}

describe('persisted autonomy levels', () => {
  it('start at the bundle levels; unknown agents at L0', () => {
    expect(autonomyLevels(store.db, bundle, A, 'press.MainForce')).toEqual({ agent: bundle.content.agents[A]!.autonomy, setpoint: bundle.content.setpoints['press.MainForce']!.autonomy });
    expect(autonomyLevels(store.db, bundle, 'agent.newcomer', 'press.MainForce').agent).toBe('L0');
  });

  it('an agent × setpoint level overrides the agent level on that setpoint only; a ceiling applies to every agent', () => {
    const general = autonomyLevels(store.db, bundle, A, 'press.FillDepth').agent;
    setAutonomy(store, bundle, { agent: A, setpoint: 'press.MainForce', to: 'L1', by: { person: 'l.verdi', role: 'operator' } });
    expect(autonomyLevels(store.db, bundle, A, 'press.MainForce').agent).toBe('L1');
    expect(autonomyLevels(store.db, bundle, A, 'press.FillDepth').agent).toBe(general);
    setAutonomy(store, bundle, { setpoint: 'press.FillDepth', to: 'L1', by: { person: 'l.verdi', role: 'operator' } });
    expect(autonomyLevels(store.db, bundle, 'agent.quality_conf', 'press.FillDepth').setpoint).toBe('L1');
    expect(autonomyRows(store.db).map((r) => [r.agent, r.setpoint, r.level])).toEqual([
      ['*', 'press.FillDepth', 'L1'],
      [A, 'press.MainForce', 'L1'],
    ]);
  });

  it('raises one level at a time from the level in force, with a permitted role and a change reference', () => {
    // L3 in the shipped bundle (CC-2026-0219): a person lowers it to L2 (no role needed), then a QA reviewer raises it again
    expect(autonomyLevels(store.db, bundle, A, 'press.MainForce').agent).toBe('L3');
    setAutonomy(store, bundle, { agent: A, to: 'L2', by: { person: 'l.verdi', role: 'operator' }, reason: 'shadow the press after a tooling change' });
    expect(codeOf(() => setAutonomy(store, bundle, { agent: A, to: 'L3', by: { person: 'p.costa', role: 'process_engineer' }, changeRef: 'CC-2026-0179' }))).toBe('LK_AUTONOMY_CHANGE');
    const ev = setAutonomy(store, bundle, { agent: A, to: 'L3', by: qa, changeRef: 'CC-2026-0180', reason: 'qualified' });
    expect(ev).toMatchObject({ type: 'autonomy_raised', from: 'L2', to: 'L3' });
    const row = autonomyRows(store.db)[0]!;
    const entry = store.audit.head(SITE_TENANT);
    expect(row).toMatchObject({ agent: A, setpoint: '*', level: 'L3', changedBy: 'q.russo', changeRef: 'CC-2026-0180', auditSeq: entry.seq });
  });

  it('a refused change writes neither a row nor an audit entry', () => {
    const head = store.audit.head(SITE_TENANT).seq;
    expect(codeOf(() => setAutonomy(store, bundle, { agent: 'agent.blend_dispense', to: 'L3', by: qa, changeRef: 'CC-1' }))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => setAutonomy(store, bundle, { agent: 'agent.blend_dispense', to: 'L2', by: { person: 'p.costa', role: 'process_engineer' }, changeRef: 'CC-1' }))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => setAutonomy(store, bundle, { agent: 'agent.blend_dispense', to: 'L2', by: qa }))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => setAutonomy(store, bundle, { agent: A, setpoint: 'press.NoSuchTag', to: 'L0', by: qa }))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => setAutonomy(store, bundle, { agent: 'compress_fill', to: 'L0', by: qa }))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => setAutonomy(store, bundle, { agent: A, to: 'L4' as 'L3', by: qa }))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => setAutonomy(store, bundle, { to: 'L0', by: qa }))).toBe('LK_VALIDATION');
    expect(codeOf(() => setAutonomy(store, bundle, { agent: A, to: 'L0', by: { person: 'agent.sneaky', role: 'qa_reviewer' } }))).toBe('LK_VALIDATION');
    expect(autonomyRows(store.db)).toEqual([]);
    expect(store.audit.head(SITE_TENANT).seq).toBe(head);
  });

  it('lowering needs no role or change reference; an unchanged level writes nothing', () => {
    expect(setAutonomy(store, bundle, { agent: A, to: 'L0', by: { person: 'l.verdi', role: 'operator' }, reason: 'drift' })).toMatchObject({ type: 'autonomy_lowered', from: 'L3', to: 'L0' });
    const head = store.audit.head(SITE_TENANT).seq;
    expect(setAutonomy(store, bundle, { agent: A, to: 'L0', by: { person: 'l.verdi', role: 'operator' } })).toMatchObject({ type: 'autonomy_unchanged', auditSeq: null });
    expect(store.audit.head(SITE_TENANT).seq).toBe(head);
    expect(verifyStore(store).ok).toBe(true);
  });
});
