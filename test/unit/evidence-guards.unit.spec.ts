/**
 * Issue 11, "losing or forging evidence" — the pure parts: a change reference belongs to one policy bundle
 * version forever, and the storage guard's bound (hold, retry, fail closed past the bound, nothing dropped
 * silently) against an appender that fails as a full disk does.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { LkError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { loadPolicyBundle } from '../../src/config/policy-bundle.js';
import { StorageGuard } from '../../src/audit/storage-guard.js';
import type { AuditEntryInput } from '../../src/audit/entry.js';
import { bundle, bundleCopy, cleanupCopies, site } from './policy-helpers.js';
import { codeOf } from './audit-helpers.js';

afterAll(cleanupCopies);

describe('change control: a change reference belongs to exactly one bundle version', () => {
  const v1 = { version: bundle.version, changeRef: bundle.change.change_ref };
  const edit = (allow: string, ref: string): string => {
    const dir = bundleCopy({ 'agents.yaml': (t) => t.replace('allow: [press.TurretSpeed, plc.LineSpeedFactor]', allow) });
    writeFileSync(join(dir, 'CHANGE.yaml'), `change_ref: ${ref}\napprover: { name: g.neri, role: qa_reviewer }\nreason: test\ndate: "2026-02-20"\n`);
    return dir;
  };

  it('refuses a new version whose reference an older accepted version carried (not only the last one)', () => {
    const v2dir = edit('allow: [plc.LineSpeedFactor]', 'CC-2026-0500');
    const v2 = { version: loadPolicyBundle(v2dir, { site, lastAccepted: v1, history: [v1] }).bundle.version, changeRef: 'CC-2026-0500' };
    // v3 replays v1's reference: the last accepted (v2) carries another one, so only the history shows it
    const v3dir = edit('allow: [press.TurretSpeed]', v1.changeRef);
    expect(codeOf(() => loadPolicyBundle(v3dir, { site, lastAccepted: v2, history: [v1, v2] }))).toBe('LK_POLICY_CHANGE_REF_REUSED');
    // the same content under a fresh reference is accepted
    const v3ok = edit('allow: [press.TurretSpeed]', 'CC-2026-0501');
    expect(loadPolicyBundle(v3ok, { site, lastAccepted: v2, history: [v1, v2] }).changeControl.kind).toBe('changed');
    // the last one's reference is still the older, more specific refusal
    expect(codeOf(() => loadPolicyBundle(edit('allow: [press.TurretSpeed]', 'CC-2026-0500'), { site, lastAccepted: v2, history: [v1, v2] }))).toBe('LK_POLICY_CHANGE_CONTROL');
  });

  it('refuses a reused reference even as the first bundle of a history whose rows name it for another version', () => {
    const other = { version: 'f'.repeat(64), changeRef: bundle.change.change_ref };
    expect(codeOf(() => loadPolicyBundle(bundleCopy(), { site, lastAccepted: null, history: [other] }))).toBe('LK_POLICY_CHANGE_REF_REUSED');
  });
});

/** An audit trail whose disk is full while `full` is true. */
function fakeStore() {
  const written: AuditEntryInput[] = [];
  const s = {
    full: false,
    written,
    dataDir: '/nonexistent',
    audit: {
      append: (e: AuditEntryInput) => {
        if (s.full) throw new LkError('LK_STORE_FULL');
        written.push(e);
        return e;
      },
      appendBatch: (es: readonly AuditEntryInput[]) => {
        if (s.full) throw new LkError('LK_STORE_FULL');
        written.push(...es);
        return es;
      },
    },
  };
  return s;
}
const ev = (i: number): AuditEntryInput => ({ tenant: 'site', actor: 'system', kind: 'watchdog', action: 'watchdog.lkg_revert', args: { i } });

describe('storage guard: a daemon that cannot audit must not supervise', () => {
  it('[INV-FAIL-CLOSED-AUDIT] holds entries while the disk is full, fails closed at the bound, and writes them in order behind an outage entry when space returns', () => {
    const store = fakeStore();
    const clock = new ManualClock(Date.UTC(2026, 10, 23, 6));
    const calls: string[] = [];
    const g = new StorageGuard(store as never, clock, silentLogger, { onFailClosed: () => calls.push('closed'), onRecovered: () => calls.push('recovered') }, { holdMax: 3, failClosedAfterMs: 60_000 });
    expect(g.record(ev(0))).toBe('written');
    store.full = true;
    expect(g.record(ev(1))).toBe('held');
    clock.advance(1000);
    expect(g.record(ev(2))).toBe('held');
    expect(calls).toEqual([]);
    expect(g.record(ev(3))).toBe('held');
    expect(calls).toEqual(['closed']);
    expect(g.outage()).toMatchObject({ held: 3, failedClosed: true, dropped: 0 });
    expect(g.retry()).toBe(false);
    store.full = false;
    expect(g.retry()).toBe(true);
    expect(calls).toEqual(['closed', 'recovered']);
    expect(g.outage()).toBeNull();
    const actions = store.written.map((e) => e.action);
    expect(actions).toEqual(['watchdog.lkg_revert', 'storage.outage', 'watchdog.lkg_revert', 'watchdog.lkg_revert', 'watchdog.lkg_revert']);
    expect(store.written.slice(2).map((e) => (e.args as { i: number }).i)).toEqual([1, 2, 3]);
    const outage = store.written[1]!.args as { from: string; to: string; failed_closed: boolean; held: { at: string }[] };
    expect(outage.failed_closed).toBe(true);
    expect(outage.held.map((h) => h.at)).toEqual([new Date(clock.now() - 1000).toISOString(), new Date(clock.now()).toISOString(), new Date(clock.now()).toISOString()]);
  });

  it('[INV-FAIL-CLOSED-AUDIT] fails closed after the outage has lasted failClosedAfterMs, even with few entries held', () => {
    const store = fakeStore();
    const clock = new ManualClock(Date.UTC(2026, 10, 23, 6));
    let closed = 0;
    const g = new StorageGuard(store as never, clock, silentLogger, { onFailClosed: () => closed++, onRecovered: () => undefined }, { holdMax: 100, failClosedAfterMs: 10_000 });
    store.full = true;
    g.record(ev(1));
    clock.advance(9_999);
    expect(g.retry()).toBe(false);
    expect(closed).toBe(0);
    clock.advance(1);
    expect(g.retry()).toBe(false);
    expect(closed).toBe(1);
  });

  it('[INV-FAIL-CLOSED-AUDIT] a full disk met by another writer (a run step, an equipment intent) starts the outage too: fail closed on time, an outage entry when space returns', () => {
    const store = fakeStore();
    let full: (() => void) | undefined;
    const withListener = { ...store, onFull: (f: () => void) => ((full = f), () => (full = undefined)) };
    const clock = new ManualClock(0);
    const calls: string[] = [];
    const g = new StorageGuard(withListener as never, clock, silentLogger, { onFailClosed: () => calls.push('closed'), onRecovered: () => calls.push('recovered') }, { failClosedAfterMs: 5000 });
    store.full = true;
    full!(); // what the store does when any transaction fails with LK_STORE_FULL
    expect(g.outage()).toMatchObject({ held: 0, failedClosed: false });
    clock.advance(5000);
    expect(g.retry()).toBe(false);
    expect(calls).toEqual(['closed']);
    store.full = false;
    expect(g.retry()).toBe(true);
    expect(store.written.map((e) => e.action)).toEqual(['storage.outage']);
    expect(store.written[0]!.args).toMatchObject({ from: new Date(0).toISOString(), to: new Date(5000).toISOString(), failed_closed: true, held: [] });
    g.stop();
    expect(full).toBeUndefined();
  });

  it('[INV-FAIL-CLOSED-AUDIT] past the memory bound an entry is counted in the outage entry, never dropped silently', () => {
    const store = fakeStore();
    const g = new StorageGuard(store as never, new ManualClock(0), silentLogger, { onFailClosed: () => undefined, onRecovered: () => undefined }, { holdMax: 1 });
    store.full = true;
    for (let i = 0; i < 12; i++) g.record(ev(i));
    expect(g.outage()).toMatchObject({ held: 10, dropped: 2 });
    store.full = false;
    g.retry();
    expect(store.written[0]!.args).toMatchObject({ not_held: { 'watchdog.lkg_revert': 2 } });
    expect(store.written).toHaveLength(11);
  });

  it('warns once per crossing when free space falls below the threshold', () => {
    const store = fakeStore();
    let free = 1000;
    const g = new StorageGuard(store as never, new ManualClock(0), silentLogger, { onFailClosed: () => undefined, onRecovered: () => undefined }, {
      warnFreeBytes: 500, warnFreeRatio: 0, statfs: () => ({ bavail: free, bsize: 1, blocks: 10_000 }),
    });
    expect(g.checkSpace()).toMatchObject({ low: false, freeBytes: 1000 });
    free = 400;
    expect(g.checkSpace()?.low).toBe(true);
    g.checkSpace();
    free = 900;
    g.checkSpace();
    free = 100;
    g.checkSpace();
    expect(store.written.map((e) => e.action)).toEqual(['storage.low', 'storage.low']);
  });
});
