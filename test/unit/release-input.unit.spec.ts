/**
 * releaseInput() (step 10): the package is written while step 10 runs, so its own row must be printed
 * with the status it has once the package exists (SUCCEEDED; SKIPPED after a rejection, as the gate's
 * `after` sets it), and the quality evaluation the gate left in the run's data travels into the
 * package with the run's exceptions as they stand when it is written, validated by the release schema,
 * not repaired.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { newStore, tempDir } from './audit-helpers.js';
import { reviewsOf } from '../../src/audit/review.js';
import type { StepContext } from '../../src/engine/run/step-context.js';
import { releaseInput, type ReleaseInputServices } from '../../src/engine/run/steps/release.js';
import { parseReleaseInput } from '../../src/engine/release-input.js';
import { SPEC_PLAN } from '../helpers/spec-plan.js';

const H = (c: string): string => c.repeat(64);
const t0 = Date.UTC(2026, 10, 20, 8);
const quality = {
  specTable: { verdict: 'FAIL', sha256: H('d'), results: [{ id: 'press.hardness', title: 'Hardness', source: 'in-process samples', limits: '≤ 150 N', limit: { max: 150, unit: 'N' }, data: { n: 3, unit: 'N', mean: 140, min: 120, max: 162 }, verdict: 'FAIL', reason: 'max 162 N > 150 N' }] },
  exceptions: [{ id: 'exc_01', kind: 'OOS', severity: 'critical', status: 'closed', step: '05 compress.press', title: 'OOS press.Hardness 162 N > 150 N', raisedAt: t0, closedBy: { user: 'm.rossi', name: 'Dr. Maria Rossi', at: '2026-11-20T11:50:00.000Z', comment: 'segregated', deviation: 'DEV-1' } }],
  reconciliation: { ok: true, lines: [{ name: 'pressed vs batch size', expected: 300000, actual: 300100, diff: 100, ok: true }] },
};
/** The exception as the store holds it (the package is built from the store, not from a copy in the run's data). */
const stored = {
  id: 'exc_01', tenant: 'acme-pharma', run: 'run_1', batch: 'B-1', key: 'OOS:press.Hardness:1:1', kind: 'OOS', severity: 'critical', step: '05 compress.press', title: 'OOS press.Hardness 162 N > 150 N',
  evidence: {}, raisedAt: t0, raisedBy: 'agent.orchestrator', auditSeq: 7, status: 'closed',
  closure: { user: 'm.rossi', name: 'Dr. Maria Rossi', at: Date.parse('2026-11-20T11:50:00.000Z'), comment: 'segregated', deviation: 'DEV-1', signature: null },
};
// the trail the package's audit-trail review statement is read from: a real store
const tmp = tempDir('lk-release-input-');
const { store } = newStore(tmp.dir);
afterAll(() => {
  store.close();
  tmp.cleanup();
});

/** What the gate stores in the run's data. */
const gateQuality = (q: typeof quality.specTable) => ({ specTable: { ...q, counts: { PASS: 0, FAIL: 1, NOT_EVALUATED: 0 } }, reconciliation: { ...quality.reconciliation, findings: [] } });

function fixture(status: 'approved' | 'rejected', data: Record<string, unknown>): { ctx: StepContext; engine: ReleaseInputServices } {
  const run = { tenant: 'acme-pharma', id: 'run_1', batch: 'B-1', line: 'line-3', product: 'p', tooling: 't', goal: 'g', createdAt: t0, record: { batch: 'B-1' }, recordSha: H('a') };
  const steps = SPEC_PLAN.map(([seq, name, agent, tool]) => ({ seq, name, agent, tool, status: seq === '10' ? 'RUNNING' : seq === '09' ? (status === 'approved' ? 'SUCCEEDED' : 'REJECTED') : 'SUCCEEDED', duration: '1s', detail: `${name} done` }));
  const signature = { user: 'm.rossi', name: 'Dr. Maria Rossi', role: 'qa_reviewer', meaning: 'approved for release', decision: status === 'approved' ? 'approve' : 'reject', timestamp: '2026-11-20T11:58:03.120Z', recordHash: H('b'), signature: 'c2ln', keyId: 'k' };
  // the engine's read-only views a step gets (StepServices), over the test's rows
  const engine = {
    events: () => [], runRecord: () => null, readApproval: () => ({ id: 'apr_1', status, signature }),
    exceptionsOfRun: () => [stored],
    site: { site: { id: 'site-ravenna', timezone: 'Europe/Rome' } },
    lims: undefined,
    trailReviewsOf: (tenant: string, run: string) => reviewsOf(store.db, tenant, run),
    runView: () => ({ steps }),
  } as unknown as ReleaseInputServices;
  const ctx = { run, data, now: t0 + 3_600_000, step: { name: 'release.genealogy' } } as unknown as StepContext;
  return { ctx, engine };
}

describe('releaseInput', () => {
  it('prints the release step as SUCCEEDED with "this package", not RUNNING, and carries the quality section', () => {
    const { ctx, engine } = fixture('approved', { quality: gateQuality(quality.specTable) });
    const input = parseReleaseInput(releaseInput(ctx, engine));
    const own = input.steps.find((s) => s.seq === '10')!;
    expect({ status: own.status, detail: own.detail }).toEqual({ status: 'SUCCEEDED', detail: 'this package' });
    expect(input.steps.filter((s) => s.status === 'RUNNING')).toEqual([]);
    expect(input.steps.find((s) => s.seq === '05')!.detail).toBe('compress.press done');
    expect(input.quality).toEqual(quality);
  });

  it('after a rejection the row is SKIPPED, as the gate marks it once the package is written', () => {
    const { ctx, engine } = fixture('rejected', {});
    const input = releaseInput(ctx, engine);
    expect(input.steps.find((s) => s.seq === '10')!.status).toBe('SKIPPED');
    expect(input.run.status).toBe('REJECTED');
    expect(input.quality).toBeUndefined();
  });

  it('[A11.9] states that the run\'s trail was NOT reviewed, until a review of this run is on the trail; then who and which entries', () => {
    const { ctx, engine } = fixture('approved', {});
    const before = parseReleaseInput(releaseInput(ctx, engine));
    expect(before.trailReview).toMatchObject({ reviewed: false, reviews: [] });
    expect(before.trailReview!.statement).toContain('run_1 was NOT reviewed before this package was written');
    expect(before.timezone).toBe('Europe/Rome');
    const record = { format: 1, kind: 'audit_trail_review', tenant: 'acme-pharma', scope: { run: 'run_1' }, batch: 'B-1', entries: 12, first: 1, last: 12, digest: H('e'), counts: {}, head: { seq: 12, hash: H('f') }, user: 'm.rossi', name: 'Dr. Maria Rossi', role: 'qa_reviewer', meaning: 'Audit trail of batch B-1, run run_1 reviewed (EU GMP Annex 11 §9)', comment: 'no findings', timestamp: '2026-11-20T11:40:00.000Z' };
    // a review of another run says nothing of this one
    store.audit.append({ tenant: 'acme-pharma', actor: 'm.rossi', kind: 'audit_review', action: 'audit.review', subject: { run: 'run_2', reviewer: 'm.rossi' }, result: { record: { ...record, scope: { run: 'run_2' } }, recordHash: H('1'), signature: 'c2ln', keyId: 'k' } });
    expect(parseReleaseInput(releaseInput(ctx, engine)).trailReview!.reviewed).toBe(false);
    const seq = store.audit.append({ tenant: 'acme-pharma', actor: 'm.rossi', kind: 'audit_review', action: 'audit.review', subject: { run: 'run_1', reviewer: 'm.rossi' }, result: { record, recordHash: H('2'), signature: 'c2ln', keyId: 'k' } }).seq;
    const after = parseReleaseInput(releaseInput(ctx, engine)).trailReview!;
    expect(after).toMatchObject({ reviewed: true, reviews: [{ seq, user: 'm.rossi', name: 'Dr. Maria Rossi', first: 1, last: 12, entries: 12, digest: H('e'), recordHash: H('2') }] });
    expect(after.statement).toBe('The audit trail of run run_1 was reviewed by Dr. Maria Rossi (m.rossi, qa_reviewer) at 2026-11-20T11:40:00.000Z: entries #1–#12 (12 entries of the run). Entries after #12 (the release decision, this package) are not covered by that review.');
  });

  it('a malformed evaluation is passed on for the schema to refuse, not dropped into "no evaluation"', () => {
    const { ctx, engine } = fixture('approved', { quality: gateQuality({ ...quality.specTable, verdict: 'PASS' }) });
    expect(() => parseReleaseInput(releaseInput(ctx, engine))).toThrow(/quality\.specTable\.verdict/);
  });
});
