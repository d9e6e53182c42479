import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { SITE_TENANT } from '../../src/audit/entry.js';
import { queryAudit } from '../../src/audit/query.js';
import { openAuditSiteEvents } from '../../src/store/site-sink.js';
import { verifyStore } from '../../src/audit/verify.js';
import { openStore } from '../../src/store/store.js';
import { tempDir } from './audit-helpers.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

describe('the audit trail as the daemon’s site event sink', () => {
  it('records start, connector state changes (not every repeat), heartbeat failure and recovery, stop; closes on a checkpoint', () => {
    const t = tempDir('lk-sink-');
    cleanups.push(t.cleanup);
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 6));
    const sink = openAuditSiteEvents({ dataDir: t.dir, config: { audit: { checkpoint_every: 1000, checkpoint_interval_s: 300 } } }, clock);
    sink.started({ version: '0.1.0', configHash: 'c'.repeat(64), configFile: 'config/site.yaml' });
    const ev = (connector: string, event: Parameters<typeof sink.connector>[0]['event']): void => sink.connector({ connector, event });
    ev('press-opcua', { type: 'state', from: 'connecting', to: 'connected' });
    ev('press-opcua', { type: 'heartbeat_failed', equipment: 'press', error: 'BadTimeout' });
    ev('press-opcua', { type: 'heartbeat_failed', equipment: 'press', error: 'BadTimeout' });
    ev('press-opcua', { type: 'state', from: 'connected', to: 'lost', reason: 'ECONNRESET' });
    ev('press-opcua', { type: 'state', from: 'lost', to: 'lost' });
    ev('press-opcua', { type: 'stale', subscription: 1, ageMs: 6000 });
    ev('press-opcua', { type: 'stale', subscription: 1, ageMs: 7000 });
    clock.advance(4200);
    ev('press-opcua', { type: 'state', from: 'lost', to: 'connected' });
    sink.stopped({ reason: 'SIGTERM' });
    sink.close();
    sink.close(); // idempotent

    const s = openStore({ dataDir: t.dir, readonly: true });
    const site = queryAudit(s.db, SITE_TENANT, {}, { limit: 100 }).entries;
    expect(site.map((e) => e.action)).toEqual([
      'site.start', 'connector.connected', 'heartbeat.failing', 'connector.lost', 'connector.stale', 'connector.restored', 'heartbeat.recovered', 'site.stop',
    ]);
    expect(site[0]!.args).toMatchObject({ version: '0.1.0', config_hash: 'c'.repeat(64), config_file: 'config/site.yaml' });
    expect(site[5]!.args).toMatchObject({ connection: 'press-opcua', down_ms: 4200 });
    const r = verifyStore(s);
    expect(r.ok).toBe(true);
    expect(r.chains[0]).toMatchObject({ tenant: SITE_TENANT, count: 8, unanchored: 0 });
    s.close();
  });
});
