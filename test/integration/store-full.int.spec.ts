/**
 * A full data directory on every machine: the store's own connection is capped with `PRAGMA max_page_count` at the
 * pages the file has, so SQLite itself answers SQLITE_FULL exactly as it does on a full file system (the file cannot
 * grow). The tmpfs case in evidence-daemon.int.spec.ts needs `mount` (root) and is skipped elsewhere; this one needs
 * nothing but a temp dir. What must hold is the same: a write on a full disk is refused with LK_STORE_FULL and leaves
 * nothing half-written, nothing already written is lost, events are held and the daemon fails closed past the bound,
 * and when space returns everything held is written behind a `storage.outage` entry.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { watchdogEvent } from '../../src/audit/site-events.js';
import { verifyStore } from '../../src/audit/verify.js';
import { startDaemon } from '../../src/daemon.js';
import { silentLogger } from '../../src/log.js';
import { openStore } from '../../src/store/store.js';
import { unreachableSite } from '../fault/daemon-child.js';
import { fillToFailClosed } from '../helpers/storage.js';

let dir: string;
let config: string;

beforeAll(() => {
  ({ dir, config } = unreachableSite('lk-store-full-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Let the file grow no more (SQLite keeps the cap at the pages it has); returns the function that lifts the cap. */
function fillUp(db: Database.Database): () => void {
  const before = db.pragma('max_page_count', { simple: true }) as number;
  const pages = db.pragma('page_count', { simple: true }) as number;
  const cap = db.pragma('max_page_count = 1', { simple: true }) as number;
  expect(cap).toBe(pages);
  return () => void db.pragma(`max_page_count = ${before}`);
}

/** A tenant's chain as [action, args], oldest first (straight from the table: no page limit). */
const actions = (db: Database.Database, tenant: string): [string, unknown][] =>
  (db.prepare('SELECT action, args FROM audit_entry WHERE tenant = ? ORDER BY seq').all(tenant) as { action: string; args: string | null }[]).map((r) => [r.action, r.args === null ? null : JSON.parse(r.args)]);

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    return (err as { code?: string }).code;
  }
  return undefined;
};

describe('a full data directory (SQLITE_FULL from SQLite itself; runs everywhere)', () => {
  it('a transaction that runs out of space is refused as a whole with LK_STORE_FULL: nothing of it written, nothing before it lost, the chain verifies', () => {
    const store = openStore({ dataDir: join(dir, 'store') });
    try {
      const kept = store.audit.append({ tenant: 'acme-pharma', actor: 'p.bianchi', kind: 'system', action: 'test.before', args: { n: 1 } });
      const full = vi.fn();
      store.onFull!(full);
      const lift = fillUp(store.db);
      const head = store.audit.head('acme-pharma').seq;
      let err: { code?: string; message?: string; detail?: unknown } | undefined;
      try {
        store.tx(({ audit }) => {
          // the first entries fit in pages the file already has; one of the later ones cannot
          for (let n = 2; n < 1000; n++) audit.append({ tenant: 'acme-pharma', actor: 'p.bianchi', kind: 'system', action: 'test.inside', args: { n, blob: 'x'.repeat(4096) } });
        });
      } catch (e) {
        err = e as typeof err;
      }
      expect(err).toMatchObject({ code: 'LK_STORE_FULL', detail: { sqlite: 'SQLITE_FULL' } });
      expect(err!.message).toMatch(/disk is full: nothing was written/);
      expect(full).toHaveBeenCalled();
      expect(store.audit.head('acme-pharma').seq).toBe(head);
      expect(actions(store.db, 'acme-pharma')).toEqual([['test.before', { n: 1 }]]);
      expect(kept.seq).toBe(head);
      lift();
      for (let n = 0; n < 50; n++) store.audit.append({ tenant: 'acme-pharma', actor: 'p.bianchi', kind: 'system', action: 'test.after', args: { n, blob: 'x'.repeat(4096) } });
      expect(verifyStore(store).ok).toBe(true);
    } finally {
      store.close();
    }
  });

  it('[INV-FAIL-CLOSED-AUDIT] a daemon holds events while the file cannot grow, fails closed past the bound, refuses an equipment write\'s intent with LK_STORE_FULL, and writes everything held behind an outage entry when space returns', async () => {
    const data = join(dir, 'data');
    mkdirSync(data, { mode: 0o700 });
    const d = await startDaemon({ configFile: config, dataDir: data, logger: silentLogger, connectTimeoutMs: 300, storage: { holdMax: 3, retryMs: 3_600_000 } });
    let stopped = false;
    try {
      const stops = d.connectors.map((c) => vi.spyOn(c, 'stopHeartbeat'));
      const starts = d.connectors.map((c) => vi.spyOn(c, 'startHeartbeat'));
      const lift = fillUp(d.store.db);
      const firstHeld = fillToFailClosed(d, stops);
      // the events before the first held one stay written, in order; none after it
      const written = actions(d.store.db, 'site').filter(([a]) => a === 'watchdog.lkg_revert').map(([, args]) => (args as { detail: { i: number } }).detail.i);
      expect(written).toEqual([...Array(firstHeld).keys()]);
      // an equipment write's intent entry cannot be written, so the write is refused with the code
      expect(codeOf(() => d.store.audit.append({ tenant: 'acme-pharma', actor: 'agent.compress_fill', kind: 'intent', action: 'setpoint.write', subject: { setpoint: 'press.MainForce' }, new: 12 }))).toBe('LK_STORE_FULL');
      expect(actions(d.store.db, 'acme-pharma').some(([a]) => a === 'setpoint.write')).toBe(false);

      lift();
      expect(d.storage.retry()).toBe(true);
      expect(d.storage.outage()).toBeNull();
      expect(starts.every((s) => s.mock.calls.length === 1)).toBe(true);
      const site = actions(d.store.db, 'site');
      const at = site.findIndex(([a]) => a === 'storage.outage');
      expect(at).toBeGreaterThan(0);
      expect(site[at]![1]).toMatchObject({ failed_closed: true, held: [{ action: 'watchdog.lkg_revert' }, { action: 'watchdog.lkg_revert' }, { action: 'watchdog.lkg_revert' }] });
      expect(site.slice(at + 1, at + 4).map(([, args]) => [(args as { equipment: string }).equipment, (args as { detail: { i: number } }).detail.i])).toEqual([['press', firstHeld], ['coater', firstHeld + 1], ['blender', firstHeld + 2]]);
      expect(verifyStore(d.store).ok).toBe(true);

      // full again, then a stop: it does not throw; the next start records the stop it could not write
      fillUp(d.store.db);
      for (let i = 0; i < 20_000 && d.storage.outage() === null; i++) watchdogEvent(d.storage, { event: 'lkg_revert', equipment: 'press', detail: { i } });
      expect(d.storage.outage()).not.toBeNull();
      await expect(d.stop('test: stop on a full disk')).resolves.toBeUndefined();
      stopped = true;
    } finally {
      if (!stopped) await d.stop('test done');
    }
    const d2 = await startDaemon({ configFile: config, dataDir: data, logger: silentLogger, connectTimeoutMs: 300 });
    try {
      expect(actions(d2.store.db, 'site').map(([a]) => a)).toContain('site.unclean_stop');
      expect(verifyStore(d2.store).ok).toBe(true);
    } finally {
      await d2.stop('test done');
    }
  }, 180_000);
});
