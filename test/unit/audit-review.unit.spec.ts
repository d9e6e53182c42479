/**
 * The audit-trail review (EU GMP Annex 11 §9), src/audit/review.ts, on a real SQLite store: what a reviewer is
 * shown (GMP-relevant changes first, routine traffic counted and left out), a run's scope (its entries and the
 * outcomes of its write intents, nothing of another run or tenant), and the signed review record (the digest binds
 * every entry in scope; a changed record or a changed entry no longer matches).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { categoryOf, checkPeriodSize, parsePeriod, reviewMeaning, reviewsOf, reviewView, scopeEntries, signTrailReview, verifyTrailReview, type TrailReviewRecord } from '../../src/audit/review.js';
import { loadSitePublicKey } from '../../src/audit/keys.js';
import type { AuditEntry } from '../../src/audit/entry.js';
import type { ManualClock } from '../../src/clock.js';
import type { Store } from '../../src/store/store.js';
import { codeOf, newStore, tempDir } from './audit-helpers.js';

const T = 'acme-pharma';
let t: { dir: string; cleanup: () => void };
let store: Store;
let clock: ManualClock;

beforeAll(() => {
  t = tempDir('lk-review-');
  ({ store, clock } = newStore(t.dir));
  const run = (r: string) => ({ run: r, batch: 'B-1042' });
  const add = (e: Parameters<Store['audit']['append']>[0]) => {
    clock.advance(1000);
    return store.audit.append(e);
  };
  add({ tenant: T, actor: 'o.operator', kind: 'state_change', action: 'run.start', subject: run('run_a') });
  for (let i = 0; i < 5; i++) {
    add({ tenant: T, actor: 'agent.compress_fill', kind: 'tool_call', action: 'press.read_force_curve', subject: { ...run('run_a'), tool: 'press.read_force_curve' } });
    add({ tenant: T, actor: 'agent.compress_fill', kind: 'tool_result', action: 'press.read_force_curve', subject: { ...run('run_a'), tool: 'press.read_force_curve' } });
  }
  add({ tenant: T, actor: 'system', kind: 'policy_decision', action: 'policy.evaluate', subject: run('run_a'), result: { outcome: 'allow' } });
  add({ tenant: T, actor: 'system', kind: 'policy_decision', action: 'policy.evaluate', subject: run('run_a'), result: { outcome: 'deny' } });
  const intent = store.audit.intent({ tenant: T, actor: 'agent.compress_fill', action: 'setpoint.write', subject: { ...run('run_a'), setpoint: 'press.MainForce' }, args: { value: 12 } });
  clock.advance(1000);
  store.audit.outcome(intent, { actor: 'system', action: 'setpoint.write', result: { ok: true, readBack: 12 } });
  add({ tenant: T, actor: 'system', kind: 'tool_call', action: 'exception.raise', subject: run('run_a'), args: { kind: 'OOS' } });
  add({ tenant: T, actor: 'system', kind: 'watchdog', action: 'plc.revert_lkg', subject: run('run_a') });
  add({ tenant: T, actor: 'l.conti', kind: 'model_change', action: 'model.promote', subject: run('run_a') });
  add({ tenant: T, actor: 'agent.coat_dry', kind: 'tool_call', action: 'coater.read', subject: { run: 'run_b', batch: 'B-1043' } });
  add({ tenant: 'borealis-bio', actor: 'agent.compress_fill', kind: 'intent', action: 'setpoint.write', subject: { run: 'run_a' } });
  add({ tenant: T, actor: 'm.rossi', kind: 'approval', action: 'approval.decide', subject: { ...run('run_a'), reviewer: 'm.rossi' }, signature: { user: 'm.rossi', name: 'Maria Rossi', meaning: 'QA release of batch B-1042', time: '2026-01-01T07:00:00.000Z' } });
});
afterAll(() => {
  store.close();
  t.cleanup();
});

const entries = (): AuditEntry[] => [...scopeEntries(store.db, T, { run: 'run_a' })];

describe('[A11.9] the audit trail as a reviewer reads it', () => {
  it('a run\'s scope is its own entries and the outcome of its write intent, in chain order; never another run\'s or tenant\'s', () => {
    const e = entries();
    expect(e.map((x) => x.seq)).toEqual([...e.map((x) => x.seq)].sort((a, b) => a - b));
    expect(e.some((x) => x.kind === 'outcome' && x.subject.run === undefined)).toBe(true);
    expect(e.every((x) => x.tenant === T)).toBe(true);
    expect(e.some((x) => x.subject.run === 'run_b')).toBe(false);
    expect(e).toHaveLength(19);
  });

  it('shows the GMP-relevant changes first (signature, setpoint, change, revert, exception), then the run\'s state; routine traffic is counted per action, not listed', () => {
    const v = reviewView(T, { run: 'run_a' }, entries());
    expect(v.shown.map((s) => `${s.category} ${s.entry.action}`)).toEqual([
      'signature approval.decide',
      'setpoint policy.evaluate', 'setpoint setpoint.write', 'setpoint setpoint.write',
      'change model.promote',
      'revert plc.revert_lkg',
      'exception exception.raise',
      'run run.start',
    ]);
    expect(v.routine).toEqual({ 'press.read_force_curve': 10, 'policy.evaluate': 1 });
    expect(v.counts).toMatchObject({ signature: 1, setpoint: 3, change: 1, revert: 1, exception: 1, run: 1, routine: 11, access: 0 });
    expect(v.entries).toBe(19);
    expect([v.first, v.last]).toEqual([entries()[0]!.seq, entries().at(-1)!.seq]);
    // the denied policy decision is shown; the allowed one is routine
    expect(v.shown.find((s) => s.entry.action === 'policy.evaluate')!.entry.result).toEqual({ outcome: 'deny' });
  });

  it('an unknown kind is shown, never filtered out as routine', () => {
    expect(categoryOf({ kind: 'something_new', action: 'x.y', signature: undefined, result: undefined })).toBe('run');
    expect(categoryOf({ kind: 'tool_call', action: 'exception.raise', signature: undefined, result: undefined })).toBe('exception');
  });

  it('the digest covers every entry in scope, routine ones included: one entry more or another hash changes it', () => {
    const e = entries();
    const d = reviewView(T, { run: 'run_a' }, e).digest;
    expect(d).toMatch(/^[0-9a-f]{64}$/);
    expect(reviewView(T, { run: 'run_a' }, e.slice(1)).digest).not.toBe(d);
    const changed = e.map((x, i) => (i === 3 ? { ...x, hash: '0'.repeat(64) } : x));
    expect(reviewView(T, { run: 'run_a' }, changed).digest).not.toBe(d);
  });

  it('a signed review verifies with the site public key; a changed comment, scope or digest does not', () => {
    const v = reviewView(T, { run: 'run_a' }, entries());
    const head = store.audit.head(T);
    const record: TrailReviewRecord = {
      format: 1, kind: 'audit_trail_review', tenant: T, scope: { run: 'run_a' }, batch: 'B-1042', entries: v.entries, first: v.first, last: v.last, digest: v.digest, counts: v.counts,
      head: { seq: head.seq, hash: head.hash }, user: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer', meaning: reviewMeaning({ run: 'run_a' }, 'B-1042'), comment: 'no findings', timestamp: '2026-01-01T08:00:00.000Z',
    };
    const s = signTrailReview(store.audit.siteKey(), record);
    const pub = loadSitePublicKey(t.dir);
    expect(verifyTrailReview(pub, s)).toBe(true);
    expect(verifyTrailReview(pub, { ...s, record: { ...record, comment: 'no findings!' } })).toBe(false);
    expect(verifyTrailReview(pub, { ...s, record: { ...record, scope: { run: 'run_b' } } })).toBe(false);
    expect(verifyTrailReview(pub, { ...s, record: { ...record, digest: 'f'.repeat(64) } })).toBe(false);
    expect(record.meaning).toBe('Audit trail of batch B-1042, run run_a reviewed (EU GMP Annex 11 §9)');
    // recorded on the chain, it is listed for its run only
    store.audit.append({ tenant: T, actor: 'm.rossi', kind: 'audit_review', action: 'audit.review', subject: { run: 'run_a', reviewer: 'm.rossi' }, result: s as never });
    expect(reviewsOf(store.db, T, 'run_a').map((r) => r.record.comment)).toEqual(['no findings']);
    expect(reviewsOf(store.db, T, 'run_b')).toEqual([]);
    expect(reviewsOf(store.db, 'borealis-bio')).toEqual([]);
  });

  it('a period is two UTC date-times, to after from, at most a year', () => {
    expect(parsePeriod('2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z')).toEqual({ from: '2026-01-01T00:00:00.000Z', to: '2026-01-02T00:00:00.000Z' });
    expect(codeOf(() => parsePeriod('2026-01-02T00:00:00Z', '2026-01-01T00:00:00Z'))).toBe('LK_VALIDATION');
    expect(codeOf(() => parsePeriod('2026-01-01T00:00:00Z', '2027-06-01T00:00:00Z'))).toBe('LK_VALIDATION');
    expect(codeOf(() => parsePeriod('yesterday', '2026-01-01T00:00:00Z'))).toBe('LK_VALIDATION');
    const year = { from: '2026-01-01T00:00:00.000Z', to: '2027-01-01T00:00:00.000Z' };
    const all = [...scopeEntries(store.db, T, year)];
    expect(all.length).toBeGreaterThan(entries().length);
    expect(all.every((x) => x.tenant === T)).toBe(true);
    // a period is read on the daemon's main thread: one that holds too many entries is refused, to be reviewed in parts
    expect(checkPeriodSize(store.db, T, year)).toBe(all.length);
    expect(checkPeriodSize(store.db, T, year, { max: all.length })).toBe(all.length);
    expect(codeOf(() => checkPeriodSize(store.db, T, year, { max: all.length - 1 }))).toBe('LK_VALIDATION');
  });
});
