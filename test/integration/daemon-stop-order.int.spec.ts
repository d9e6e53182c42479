/**
 * The order in which a real daemon stops is the order that keeps the line safe (docs/fail-safe.md, "The stop
 * order"): the API stops taking requests → the heartbeats stop, so each PLC's watchdog takes its line to the last
 * known-good recipe whatever the rest of the stop takes → the runs are interrupted and the guarded writer drains (a
 * write under way finishes and is audited) → the store closes last. The daemon runs with its embedded simulator in
 * this process, its REST API on port 0; the test watches the lifecycle's phases as they happen (src/ops/lifecycle.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { iterateAudit, queryAudit } from '../../src/audit/index.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import type { WriteOutcome } from '../../src/engine/guarded-writer.js';
import { silentLogger } from '../../src/log.js';
import { openStore } from '../../src/store/store.js';
import { makeRunSite, waitFor, type RunSite } from '../helpers/run-site.js';

const T = 'acme-pharma';
let site: RunSite;
let daemon: Daemon;

beforeAll(async () => {
  site = makeRunSite({ timeScale: 120, batches: {} });
  daemon = await startDaemon({ configFile: site.config, dataDir: site.data, logger: silentLogger, api: { host: '127.0.0.1', port: 0 } });
}, 300_000);
afterAll(async () => {
  await daemon?.stop('test done');
  site?.cleanup();
});

describe('the daemon stops in the order that keeps the line safe', () => {
  it('API → heartbeats → runs → writer drained → connectors → store, and a write queued as the writer begins to drain is finished and audited before the store closes', async () => {
    const plant = daemon.simulator!.plant;
    // the heartbeats are on: the PLCs are armed by them (hang guard only)
    await waitFor('heartbeats to arm the press', () => plant.supervisor('press').armed, 120_000);
    const url = daemon.ready.api!;
    const evaluations = (db: Daemon['store']['db']) => [...iterateAudit(db, T, {})].filter((e) => e.action === 'policy.evaluate');
    const evaluatedBefore = evaluations(daemon.store.db).length;

    // what happens at each step of the stop, seen as it happens
    let afterApi: Promise<unknown> | undefined;
    let write: Promise<WriteOutcome> | undefined;
    let writeSettled = false;
    let settledWhenStoreStops: boolean | undefined;
    let settledWhenSubscriptionsStop: boolean | undefined;
    let storeOpenWhenWriterStopped: boolean | undefined;
    daemon.lifecycle.on((e) => {
      if (e.component === 'api' && e.phase === 'stopped') {
        // the surface is closed: a request is refused at the socket
        afterApi = fetch(`${url}/readyz`).then((r) => r.status, (err: unknown) => err);
      }
      if (e.component === 'writer' && e.phase === 'stopping') {
        // a write under way as the writer's drain begins (the heartbeats are stopped, the runs interrupted): it must
        // be decided, audited and answered before anything after the writer stops
        write = daemon.writer.propose({
          id: 'stop-order-1', tenant: T, batch: 'B-2026-0312', agent: 'agent.compress_fill', product: 'ir-family-a', tooling: 'round-10mm-ff',
          moves: [{ setpoint: 'press.MainForce', value: '13 kN' }], attribute: 'content_uniformity', justification: 'stop-order test',
          model: { id: 'process-twin-v1', version: '1' },
        });
        write.then(() => { writeSettled = true; }, () => { writeSettled = true; });
      }
      if (e.component === 'subscriptions' && e.phase === 'stopping') settledWhenSubscriptionsStop = writeSettled;
      if (e.component === 'writer' && e.phase === 'stopped') storeOpenWhenWriterStopped = daemon.store.db.open;
      if (e.component === 'store' && e.phase === 'stopping') settledWhenStoreStops = writeSettled;
    });

    await daemon.stop('stop-order test');

    const order = daemon.lifecycle.stopOrder();
    // the whole order is pinned: a component added or moved is a decision about the line's safety, made here
    expect(order).toEqual([
      'api', 'live-log', 'maintenance', 'heartbeats', 'runs', 'lims-watch', 'mes-screen', 'mqtt-feed', 'engine', 'mes-lims', 'writer',
      'subscriptions', 'connectors', 'simulator', 'policy', 'metrics', 'site-record', 'mqtt', 'store', 'data-lock',
    ]);
    const at = (name: string): number => order.indexOf(name);
    expect(at('api')).toBe(0);
    expect(at('heartbeats')).toBeLessThan(at('runs'));
    expect(at('runs')).toBeLessThan(at('writer'));
    expect(at('writer')).toBeLessThan(at('connectors'));
    expect(at('connectors')).toBeLessThan(at('store'));
    expect(order.at(-2)).toBe('store');
    // every component stopped cleanly, each stop finished before the next began
    const history = daemon.lifecycle.history().filter((e) => e.phase === 'stopping' || e.phase === 'stopped' || e.phase === 'stop_failed');
    expect(history.map((e) => `${e.phase} ${e.component}`)).toEqual(order.flatMap((c) => [`stopping ${c}`, `stopped ${c}`]));

    // the API refused a request once it had stopped, before anything else stopped
    expect(await afterApi).toBeInstanceOf(Error);
    // the writer drained: the proposal queued as its stop began was answered (denied: no batch runs) before the
    // next component began to stop, and so before the store began to close, which was open until then
    expect(write).toBeDefined();
    expect(settledWhenSubscriptionsStop).toBe(true);
    expect(storeOpenWhenWriterStopped).toBe(true);
    expect(settledWhenStoreStops).toBe(true);
    const outcome = await write!;
    expect(outcome.status).toBe('denied');
    expect(daemon.store.db.open).toBe(false);

    // and its decision is on the tenant's chain; the site chain ends with the stop, and the file verifies
    const store = openStore({ dataDir: site.data, readonly: true });
    try {
      const decided = evaluations(store.db);
      expect(outcome.decisions).toHaveLength(1);
      expect(decided).toHaveLength(evaluatedBefore + 1);
      expect([decided.at(-1)!.subject, (decided.at(-1)!.result as { outcome: string }).outcome]).toEqual([{ setpoint: 'press.MainForce', agent: 'agent.compress_fill', batch: 'B-2026-0312' }, 'deny']);
      const last = queryAudit(store.db, 'site', {}, { limit: 1000 }).entries.at(-1)!;
      expect([last.action, last.reason]).toEqual(['site.stop', 'stop-order test']);
    } finally {
      store.close();
    }
  }, 300_000);

  it('stops once: a second stop shares the first and stops nothing again', async () => {
    const before = daemon.lifecycle.history().length;
    await daemon.stop('again');
    expect(daemon.lifecycle.history()).toHaveLength(before);
  });
});
