/**
 * Repeated identical site events (a flapping connection) become one entry with a count per window, on an
 * injected clock; the first of each window is recorded as it is, and nothing counted is lost at stop.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { SITE_TENANT } from '../../src/audit/entry.js';
import { EventBudget } from '../../src/audit/event-budget.js';
import { queryAudit } from '../../src/audit/query.js';
import { openAuditSiteEvents } from '../../src/store/site-sink.js';
import { verifyStore } from '../../src/audit/verify.js';
import { openStore } from '../../src/store/store.js';
import { tempDir } from './audit-helpers.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

describe('EventBudget', () => {
  it('records the first event of a window, counts the identical ones, reports the count once the window ends', () => {
    const b = new EventBudget(1000);
    expect(b.offer('k', 0, 'a')).toBe(true);
    expect(b.offer('k', 10, 'b')).toBe(false);
    expect(b.offer('other', 10)).toBe(true);
    expect(b.offer('k', 990, 'c')).toBe(false);
    expect(b.due(999)).toEqual([]);
    expect(b.due(1000)).toEqual([{ key: 'k', count: 2, first: 10, last: 990, sample: 'c' }]);
    expect(b.due(5000)).toEqual([]); // 'other' had nothing counted
    expect(b.offer('k', 5000)).toBe(true);
    expect(b.offer('k', 5001)).toBe(false);
    expect(b.drain()).toEqual([{ key: 'k', count: 1, first: 5001, last: 5001, sample: undefined }]);
    expect(b.drain()).toEqual([]);
  });
});

describe('the site sink under a connection storm', () => {
  it('10,000 connect/loss cycles in one minute are 4 entries plus 2 counts, not 20,000 entries; the chain verifies', () => {
    const t = tempDir('lk-storm-');
    cleanups.push(t.cleanup);
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 6));
    const sink = openAuditSiteEvents({ dataDir: t.dir, config: { audit: { checkpoint_every: 1000, checkpoint_interval_s: 300 } } }, clock, undefined, 5000, {}, 60_000);
    const ev = (event: Parameters<typeof sink.connector>[0]['event']): void => sink.connector({ connector: 'blender-modbus', event });
    ev({ type: 'state', from: 'connecting', to: 'connected' });
    for (let i = 0; i < 10_000; i++) {
      clock.advance(5);
      ev({ type: 'state', from: 'connected', to: 'lost', reason: 'connection closed by peer' });
      ev({ type: 'state', from: 'lost', to: 'connected' });
    }
    clock.advance(60_000); // the window has ended: the next event first records the counts
    ev({ type: 'state', from: 'connected', to: 'lost', reason: 'connection closed by peer' });
    sink.close();

    const s = openStore({ dataDir: t.dir, readonly: true });
    cleanups.unshift(() => s.close());
    const site = queryAudit(s.db, SITE_TENANT, { kind: 'connector' }, { limit: 1000 }).entries;
    expect(site.map((e) => [e.action, (e.args as { repeated?: number } | undefined)?.repeated ?? 1])).toEqual([
      ['connector.connected', 1],
      ['connector.lost', 1],
      ['connector.restored', 1],
      ['connector.lost', 9_999],
      ['connector.restored', 9_999],
      ['connector.lost', 1],
    ]);
    expect(verifyStore(s).ok).toBe(true);
  });

  it('a count still open at stop is recorded before the store closes', () => {
    const t = tempDir('lk-storm-');
    cleanups.push(t.cleanup);
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 6));
    const sink = openAuditSiteEvents({ dataDir: t.dir, config: { audit: { checkpoint_every: 1000, checkpoint_interval_s: 300 } } }, clock);
    for (let i = 0; i < 3; i++) sink.connector({ connector: 'press-opcua', event: { type: 'heartbeat_failed', equipment: 'press', error: 'BadTimeout' } });
    // the sink records a failing heartbeat once per failing period; a recovery in between makes it repeat
    for (let i = 0; i < 3; i++) {
      sink.connector({ connector: 'press-opcua', event: { type: 'state', from: 'connecting', to: 'connected' } });
      sink.connector({ connector: 'press-opcua', event: { type: 'heartbeat_failed', equipment: 'press', error: 'BadTimeout' } });
    }
    sink.close();
    const s = openStore({ dataDir: t.dir, readonly: true });
    cleanups.unshift(() => s.close());
    const hb = queryAudit(s.db, SITE_TENANT, { kind: 'heartbeat' }, { limit: 100 }).entries;
    const failing = hb.filter((e) => e.action === 'heartbeat.failing').map((e) => (e.args as { repeated?: number }).repeated ?? 1);
    expect(failing).toEqual([1, 3]);
  });
});
