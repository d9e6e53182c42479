/**
 * The parallel `audit verify` (worker threads, ranges linked afterwards; the built module, as the command runs it)
 * against the sequential walk: on an intact trail and after each kind of tamper of audit-tamper.unit.spec.ts, placed
 * at, just before and just after range boundaries, the two reports are identical (same damage kind, same first bad
 * seq, same counts).
 */
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { verifyStoreParallel as VerifyStoreParallel } from '../../src/audit/verify-parallel.js';
import { verifyStore, type VerifyReport } from '../../src/audit/verify.js';
import { openStore } from '../../src/store/store.js';
import { entry, hashedOf, newStore, recordOf, rewriteSuffix, tamper, tempDir } from '../unit/audit-helpers.js';
import { builtModule } from '../helpers/bin.js';

/** The parallel verifier as built (its workers start from the compiled verify-worker.js, as `linekeeper audit verify` runs them). */
const { verifyStoreParallel } = (await import(builtModule('src/audit/verify-parallel.ts'))) as { verifyStoreParallel: typeof VerifyStoreParallel };

const T = 'acme-pharma';
const N = 40;
const RANGE = 6; // ranges 1–6, 7–12, …: tampers below sit on and beside their edges
let root: { dir: string; cleanup: () => void };
let runNo = 0;
beforeAll(() => {
  root = tempDir('lk-verify-par-');
});
afterAll(() => root.cleanup());

function build(): string {
  const dir = join(root.dir, `r${runNo++}`);
  const { store } = newStore(dir, { audit: { checkpointEvery: 5 } });
  for (let i = 1; i <= N; i += 4) {
    store.audit.appendBatch(Array.from({ length: Math.min(4, N - i + 1) }, (_, j) => entry(i + j, T)));
    store.audit.append(entry(i, 'borealis-bio'));
  }
  store.close();
  return dir;
}

async function both(dir: string): Promise<{ seq: VerifyReport; par: VerifyReport; progress: number }> {
  const s = openStore({ dataDir: dir, readonly: true });
  try {
    let progress = 0;
    const par = await verifyStoreParallel(s, { workers: 2, rangeRows: RANGE, minRows: 1, onProgress: (done) => (progress = done) });
    return { seq: verifyStore(s), par, progress };
  } finally {
    s.close();
  }
}

/** Same report both ways; the damage of T is `kind` at `at` (any seq when `at` is undefined). */
async function expectSame(dir: string, kind: string, at?: number): Promise<void> {
  const { seq, par, progress } = await both(dir);
  expect(par).toEqual(seq);
  expect(progress).toBeGreaterThan(0); // the workers ran
  const d = par.chains.find((x) => x.tenant === T)!.damage;
  expect(d?.kind).toBe(kind);
  if (at !== undefined) expect(d?.seq).toBe(at);
}

function checkpointsOf(dir: string): number[] {
  const s = openStore({ dataDir: dir, readonly: true });
  try {
    return s.db.prepare('SELECT seq FROM audit_checkpoint WHERE tenant = ? ORDER BY seq').pluck().all(T) as number[];
  } finally {
    s.close();
  }
}

const EDGES = [1, RANGE, RANGE + 1, 2 * RANGE, N - 1];

describe('parallel audit verify agrees with the sequential walk', () => {
  it('an intact trail: the same report, every entry counted by progress', async () => {
    const dir = build();
    const { seq, par, progress } = await both(dir);
    expect(par).toEqual(seq);
    expect(par.ok).toBe(true);
    expect(progress).toBe(N + Math.ceil(N / 4));
  });

  it.each(EDGES)('edited at %i (a byte of a JSON column, and the hash)', async (s) => {
    const dir = build();
    tamper(dir, (db) => db.prepare("UPDATE audit_entry SET body = json_set(body, '$.reason', ?) WHERE tenant = ? AND seq = ?").run('edited by hand', T, s));
    await expectSame(dir, 'edited', s);
    const dir2 = build();
    tamper(dir2, (db) => db.prepare("UPDATE audit_entry SET hash = replace(hash, substr(hash, 1, 1), 'x') WHERE tenant = ? AND seq = ?").run(T, s));
    await expectSame(dir2, 'edited', s);
  });

  it.each(EDGES)('deleted at %i', async (s) => {
    const dir = build();
    tamper(dir, (db) => db.prepare('DELETE FROM audit_entry WHERE tenant = ? AND seq = ?').run(T, s));
    await expectSame(dir, 'deleted', s);
  });

  it.each(EDGES)('inserted at %i with a recomputed hash', async (s) => {
    const dir = build();
    tamper(dir, (db) => {
      const up = db.prepare('UPDATE audit_entry SET seq = seq + 1 WHERE tenant = ? AND seq = ?');
      for (let q = N; q >= s; q--) up.run(T, q);
      const prev = (db.prepare('SELECT hash FROM audit_entry WHERE tenant = ? AND seq = ?').pluck().get(T, s - 1) as string | undefined) ?? '0'.repeat(64);
      const forged: Record<string, unknown> = { seq: s, ts: '2026-01-01T06:00:00.000Z', actor: 'op-9', kind: 'tool_call', action: 'press.write_setpoint', run: null, batch: null, agent: null, tool: null, setpoint: null, reviewer: null, args: null, result: null, reason: 'looks legitimate', old_value: null, new_value: null, intent: null, signature: null, prev_hash: prev };
      const rec = recordOf(hashedOf(T, forged));
      db.prepare('INSERT INTO audit_entry (tenant, seq, body, hash) VALUES (?, ?, ?, ?)').run(T, s, rec.body, rec.hash);
    });
    await expectSame(dir, 'inserted', s);
  });

  it.each([[1, 2], [RANGE, RANGE + 1], [3, 20]])('reordered: %i and %i swapped', async (i, j) => {
    const dir = build();
    tamper(dir, (db) => {
      const mv = db.prepare('UPDATE audit_entry SET seq = ? WHERE tenant = ? AND seq = ?');
      mv.run(-1, T, i);
      mv.run(i, T, j);
      mv.run(j, T, -1);
    });
    await expectSame(dir, 'reordered', i);
  });

  it.each([RANGE + 1, N - 3])('truncated from %i', async (s) => {
    const dir = build();
    tamper(dir, (db) => db.prepare('DELETE FROM audit_entry WHERE tenant = ? AND seq >= ?').run(T, s));
    await expectSame(dir, 'truncated', s);
  });

  it.each([RANGE + 1, 2 * RANGE + 3])('a suffix rewritten from %i with recomputed hashes', async (s) => {
    const dir = build();
    const c0 = Math.max(0, ...checkpointsOf(dir).filter((x) => x < s));
    tamper(dir, (db) => rewriteSuffix(db, T, s, 'someone.else'));
    await expectSame(dir, 'rewritten', c0 + 1);
  });

  it('a checkpoint signature invalid', async () => {
    const dir = build();
    const cp = checkpointsOf(dir)[1]!;
    tamper(dir, (db) => db.prepare('UPDATE audit_checkpoint SET head_hash = ? WHERE tenant = ? AND seq = ?').run('0'.repeat(64), T, cp));
    await expectSame(dir, 'signature_invalid', cp);
  });

  it('a row moved outside 1..max (seq 0) and a seq stored as text: the sequential diagnosis', async () => {
    const dir = build();
    tamper(dir, (db) => db.prepare('UPDATE audit_entry SET seq = 0 WHERE tenant = ? AND seq = ?').run(T, N));
    const r = await both(dir);
    expect(r.par).toEqual(r.seq);
    expect(r.par.ok).toBe(false);
    const dir2 = build();
    tamper(dir2, (db) => db.prepare("UPDATE audit_entry SET seq = '9a' WHERE tenant = ? AND seq = 9").run(T));
    const { seq, par } = await both(dir2);
    expect(par).toEqual(seq);
    expect(par.ok).toBe(false);
  });

  it('a row moved far beyond the end (seq 10^12), a seq below 1 as a real number: no endless ranges, the sequential diagnosis', async () => {
    const dir = build();
    tamper(dir, (db) => db.prepare('UPDATE audit_entry SET seq = 1000000000000 WHERE tenant = ? AND seq = ?').run(T, N));
    const r = await both(dir);
    expect(r.par).toEqual(r.seq);
    expect(r.par.ok).toBe(false);
    const dir2 = build();
    tamper(dir2, (db) => db.prepare('UPDATE audit_entry SET seq = 0.5 WHERE tenant = ? AND seq = 3').run(T));
    const r2 = await both(dir2);
    expect(r2.par).toEqual(r2.seq);
    expect(r2.par.ok).toBe(false);
  });
});
