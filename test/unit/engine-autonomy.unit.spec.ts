/**
 * Persisted autonomy levels (src/store/autonomy-store.ts) on a real SQLite
 * file: the bundle's levels until a change, per agent, per agent × setpoint
 * and per setpoint ceiling; every change one transaction with its
 * `autonomy_change` entry; a refused change writes nothing. Levels are per
 * tenant: one tenant's change is on its chain and governs its runs only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { queryAudit, SITE_TENANT, verifyStore } from '../../src/audit/index.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { ManualClock } from '../../src/clock.js';
import { chooseMeaning, DEFAULT_SIGNATURE_MEANINGS } from '../../src/domain/signature-meanings.js';
import { autonomyLevels, autonomyMeaningValues, autonomyRows, setAutonomy } from '../../src/store/autonomy-store.js';
import { LkError } from '../../src/errors.js';
import { type Store, openStore } from '../../src/store/store.js';
import { bundle } from './policy-helpers.js';
import { appendV13 } from './audit-helpers.js';

let dir: string;
let store: Store;
const clock = new ManualClock(Date.UTC(2026, 2, 3, 8));
const qa = { person: 'q.russo', role: 'qa_reviewer' };
const A = 'agent.compress_fill';
const T = 'acme-pharma';

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
    expect(autonomyLevels(store.db, T, bundle, A, 'press.MainForce')).toEqual({ agent: bundle.content.agents[A]!.autonomy, setpoint: bundle.content.setpoints['press.MainForce']!.autonomy });
    expect(autonomyLevels(store.db, T, bundle, 'agent.newcomer', 'press.MainForce').agent).toBe('L0');
  });

  it('an agent × setpoint level overrides the agent level on that setpoint only; a ceiling applies to every agent', () => {
    const general = autonomyLevels(store.db, T, bundle, A, 'press.FillDepth').agent;
    setAutonomy(store, bundle, { tenant: T, agent: A, setpoint: 'press.MainForce', to: 'L1', by: { person: 'l.verdi', role: 'operator' } });
    expect(autonomyLevels(store.db, T, bundle, A, 'press.MainForce').agent).toBe('L1');
    expect(autonomyLevels(store.db, T, bundle, A, 'press.FillDepth').agent).toBe(general);
    setAutonomy(store, bundle, { tenant: T, setpoint: 'press.FillDepth', to: 'L1', by: { person: 'l.verdi', role: 'operator' } });
    expect(autonomyLevels(store.db, T, bundle, 'agent.quality_conf', 'press.FillDepth').setpoint).toBe('L1');
    expect(autonomyRows(store.db, T).map((r) => [r.agent, r.setpoint, r.level])).toEqual([
      ['*', 'press.FillDepth', 'L1'],
      [A, 'press.MainForce', 'L1'],
    ]);
  });

  it('[LIM-AUTONOMY] raises one level at a time from the level in force, with a permitted role and a change reference', () => {
    // L3 in the shipped bundle (CC-2026-0219): a person lowers it to L2 (no role needed), then a QA reviewer raises it again
    expect(autonomyLevels(store.db, T, bundle, A, 'press.MainForce').agent).toBe('L3');
    setAutonomy(store, bundle, { tenant: T, agent: A, to: 'L2', by: { person: 'l.verdi', role: 'operator' }, reason: 'shadow the press after a tooling change' });
    expect(codeOf(() => setAutonomy(store, bundle, { tenant: T, agent: A, to: 'L3', by: { person: 'p.costa', role: 'process_engineer' }, changeRef: 'CC-2026-0179' }))).toBe('LK_AUTONOMY_CHANGE');
    const ev = setAutonomy(store, bundle, { tenant: T, agent: A, to: 'L3', by: qa, changeRef: 'CC-2026-0180', reason: 'qualified' });
    expect(ev).toMatchObject({ type: 'autonomy_raised', from: 'L2', to: 'L3' });
    const row = autonomyRows(store.db, T)[0]!;
    const entry = store.audit.head(T);
    expect(row).toMatchObject({ agent: A, setpoint: '*', level: 'L3', changedBy: 'q.russo', changeRef: 'CC-2026-0180', auditSeq: entry.seq });
  });

  it('[A11.14] [P11.50] a signed raise signs exactly the words chosen before the password, or nothing when the raise would fill them otherwise', () => {
    setAutonomy(store, bundle, { tenant: T, agent: A, to: 'L2', by: { person: 'l.verdi', role: 'operator' }, reason: 'shadow the press after a tooling change' });
    const chosenFor = (changeRef: string) => chooseMeaning(DEFAULT_SIGNATURE_MEANINGS, 'autonomy_raise', 'autonomy-raise', autonomyMeaningValues({ agent: A, from: 'L2', to: 'L3', changeRef }));
    const raise = (meaning: ReturnType<typeof chosenFor>) => setAutonomy(store, bundle, { tenant: T, agent: A, to: 'L3', by: qa, changeRef: 'CC-2026-0180', reason: 'qualified', requireSignatureToRaise: true, signer: { name: 'Quinto Russo', meaning } });
    // words chosen for another raise (another change reference): the refill would differ, so nothing is signed or changed
    const head = store.audit.head(T).seq;
    const other = chosenFor('CC-2026-0999');
    expect(codeOf(() => raise(other))).toBe('LK_CONFLICT');
    expect(autonomyLevels(store.db, T, bundle, A, 'press.MainForce').agent).toBe('L2');
    expect(store.audit.head(T).seq).toBe(head);
    // the words chosen for this raise: signed as they are
    const chosen = chosenFor('CC-2026-0180');
    expect(raise(chosen)).toMatchObject({ type: 'autonomy_raised', from: 'L2', to: 'L3' });
    const entry = queryAudit(store.db, T, { kind: 'autonomy_change' }, { limit: 10 }).entries.find((e) => e.action === 'autonomy.raise')!;
    expect(entry.signature?.meaning).toBe(chosen.text);
    expect(chosen.text).toBe(`raise autonomy of ${A} L2 → L3 (CC-2026-0180)`);
  });

  it('a refused change writes neither a row nor an audit entry', () => {
    const head = store.audit.head(T).seq;
    expect(codeOf(() => setAutonomy(store, bundle, { tenant: T, agent: 'agent.blend_dispense', to: 'L3', by: qa, changeRef: 'CC-1' }))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => setAutonomy(store, bundle, { tenant: T, agent: 'agent.blend_dispense', to: 'L2', by: { person: 'p.costa', role: 'process_engineer' }, changeRef: 'CC-1' }))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => setAutonomy(store, bundle, { tenant: T, agent: 'agent.blend_dispense', to: 'L2', by: qa }))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => setAutonomy(store, bundle, { tenant: T, agent: A, setpoint: 'press.NoSuchTag', to: 'L0', by: qa }))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => setAutonomy(store, bundle, { tenant: T, agent: 'compress_fill', to: 'L0', by: qa }))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => setAutonomy(store, bundle, { tenant: T, agent: A, to: 'L4' as 'L3', by: qa }))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => setAutonomy(store, bundle, { tenant: T, to: 'L0', by: qa }))).toBe('LK_VALIDATION');
    expect(codeOf(() => setAutonomy(store, bundle, { tenant: T, agent: A, to: 'L0', by: { person: 'agent.sneaky', role: 'qa_reviewer' } }))).toBe('LK_VALIDATION');
    expect(autonomyRows(store.db, T)).toEqual([]);
    expect(store.audit.head(T).seq).toBe(head);
  });

  it('lowering needs no role or change reference; an unchanged level writes nothing', () => {
    expect(setAutonomy(store, bundle, { tenant: T, agent: A, to: 'L0', by: { person: 'l.verdi', role: 'operator' }, reason: 'drift' })).toMatchObject({ type: 'autonomy_lowered', from: 'L3', to: 'L0' });
    const head = store.audit.head(T).seq;
    expect(setAutonomy(store, bundle, { tenant: T, agent: A, to: 'L0', by: { person: 'l.verdi', role: 'operator' } })).toMatchObject({ type: 'autonomy_unchanged', auditSeq: null });
    expect(store.audit.head(T).seq).toBe(head);
    expect(verifyStore(store).ok).toBe(true);
  });

  it('levels are per tenant: a change under one tenant governs, shows and is audited for that tenant only', () => {
    const B = 'borealis-bio';
    const bundleLevel = autonomyLevels(store.db, B, bundle, 'agent.coat_dry', 'coater.SprayRate');
    const ev = setAutonomy(store, bundle, { tenant: T, agent: 'agent.coat_dry', to: 'L1', by: { person: 'p.bianchi', role: 'process_engineer' }, reason: 'acme campaign' });
    expect(ev.type).toBe('autonomy_lowered');
    expect(autonomyLevels(store.db, T, bundle, 'agent.coat_dry', 'coater.SprayRate').agent).toBe('L1');
    expect(autonomyLevels(store.db, B, bundle, 'agent.coat_dry', 'coater.SprayRate')).toEqual(bundleLevel);
    expect(autonomyRows(store.db, B)).toEqual([]);
    expect(store.audit.head(T).seq).toBe(ev.auditSeq);
    expect(store.audit.chains()).not.toContain(B);
    expect(store.audit.chains()).not.toContain(SITE_TENANT);
    // the other tenant's own change starts from its own level, not from the first tenant's
    expect(setAutonomy(store, bundle, { tenant: B, agent: 'agent.coat_dry', to: 'L2', by: { person: 'l.conti', role: 'process_engineer' } })).toMatchObject({ from: bundleLevel.agent, to: 'L2' });
    expect(autonomyLevels(store.db, T, bundle, 'agent.coat_dry', 'coater.SprayRate').agent).toBe('L1');
    // a change names a tenant: none, the site chain's name or the pre-tenancy marker is refused, writing nothing
    for (const tenant of [undefined, SITE_TENANT, '*', '']) {
      expect(codeOf(() => setAutonomy(store, bundle, { tenant: tenant as string, agent: A, to: 'L0', by: qa }))).toBe('LK_VALIDATION');
    }
    expect(autonomyRows(store.db, T).map((r) => r.agent)).toEqual(['agent.coat_dry']);
  });

  it('a level changed before levels were per tenant stays in force for every tenant until that tenant changes it (migration 11)', () => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
    dir = mkdtempSync(join(tmpdir(), 'lk-autonomy-'));
    // a data directory of the previous schema, with a site-wide lowering on the site chain
    const old = openStore({ dataDir: dir, clock, migrations: MIGRATIONS.slice(0, 10) });
    old.tx(({ db }) => {
      // the entry as that version wrote it (one column per field)
      const e = appendV13(db, { tenant: SITE_TENANT, actor: 'l.verdi', kind: 'autonomy_change', action: 'autonomy.lower', subject: { agent: A }, old: 'L3', new: 'L0' }, new Date(clock.now()).toISOString());
      db.prepare("INSERT INTO autonomy_level (agent, setpoint, level, changed_by, role, change_ref, reason, changed_at, bundle, audit_seq) VALUES (?, '*', 'L0', 'l.verdi', 'operator', NULL, 'drift', ?, ?, ?)").run(A, e.ts, bundle.version, e.seq);
    });
    old.close();
    store = openStore({ dataDir: dir, clock });
    for (const t of [T, 'borealis-bio']) expect(autonomyLevels(store.db, t, bundle, A, 'press.MainForce').agent, t).toBe('L0');
    expect(autonomyRows(store.db, 'borealis-bio')).toMatchObject([{ tenant: '*', agent: A, level: 'L0', changedBy: 'l.verdi' }]);
    // acme's own raise overrides the old row for acme alone (one level at a time, from the level in force)
    setAutonomy(store, bundle, { tenant: T, agent: A, to: 'L1', by: qa, changeRef: 'CC-2026-0600' });
    expect(autonomyLevels(store.db, T, bundle, A, 'press.MainForce').agent).toBe('L1');
    expect(autonomyLevels(store.db, 'borealis-bio', bundle, A, 'press.MainForce').agent).toBe('L0');
    expect(autonomyRows(store.db, T)).toMatchObject([{ tenant: T, agent: A, level: 'L1', changedBy: 'q.russo' }]);
    expect(verifyStore(store).ok).toBe(true);
  });
});
