/**
 * The audit trail as the daemon's site event sink (`startDaemon({ openSiteEvents })`):
 * opens the store in the data directory, records start / stop / connector
 * events on the `site` chain, keeps idle chains checkpointed on a timer, and
 * closes with a final checkpoint. Connector events arrive in bursts (every
 * failed heartbeat, every stale check); only state changes are recorded.
 *
 * A start that follows a start (no stop entry between: a crash, a kill, a
 * power loss) records `site.unclean_stop` and signs a checkpoint of every
 * chain at once, so the tail the crash left is anchored before anything new
 * is written. Events go through the {@link StorageGuard}: on a full disk they
 * are held, not lost (docs/fail-safe.md).
 */
import type { ConnectorEvent } from '../../connectors/types.js';
import type { Clock } from '../clock.js';
import type { SiteConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { openStore, type Store } from './store.js';
import { SITE_TENANT } from '../audit/entry.js';
import { connectorEvent, heartbeatEvent, recordSiteEvent, siteStarted, siteStopped } from '../audit/site-events.js';
import { isStorageFull, StorageGuard, type StorageGuardOptions, type StorageHooks } from '../audit/storage-guard.js';
import { startCheckpointTimer } from '../audit/trail.js';
import { EventBudget, type SuppressedRun } from '../audit/event-budget.js';
import type { Json } from '../audit/entry.js';

export interface AuditSiteSink {
  readonly store: Store;
  /** Site events while the disk is full: held in memory, written when space returns (docs/fail-safe.md). */
  readonly storage: StorageGuard;
  /**
   * Record the start (after `site.unclean_stop` when the previous run left no stop entry).
   * @throws when the start cannot be recorded (LK_STORE_FULL on a full disk): a daemon that cannot audit must not run.
   */
  started(info: { version: string; configHash: string; configFile: string }): void;
  /** Record the clean stop; false (logged, never thrown) when the disk is full: the next start then records an unclean stop. */
  stopped(info: { reason: string }): boolean;
  /** Never throws into the connector's event loop; a failure to record is logged as an error. */
  connector(info: { connector: string; event: ConnectorEvent }): void;
  /** Final checkpoint of every chain, then close the database. Never throws (a full disk is logged). */
  close(): void;
}

/** What the previous run's start entry said, when no stop entry followed it (a crash). */
interface UncleanRun {
  readonly seq: number;
  readonly ts: string;
  readonly pid: number | undefined;
}

function previousUncleanRun(store: Store): UncleanRun | undefined {
  const row = store.db
    .prepare("SELECT seq, ts, action, args FROM audit_entry WHERE tenant = ? AND kind = 'system' AND action IN ('site.start', 'site.stop') ORDER BY seq DESC LIMIT 1")
    .get(SITE_TENANT) as { seq: number; ts: string; action: string; args: string | null } | undefined;
  if (row?.action !== 'site.start') return undefined;
  let pid: number | undefined;
  try {
    const a = JSON.parse(row.args ?? '{}') as { pid?: unknown };
    if (typeof a.pid === 'number') pid = a.pid;
  } catch {
    pid = undefined;
  }
  return { seq: row.seq, ts: row.ts, pid };
}

/**
 * Open the audit store of `loaded.dataDir` with the configured checkpoint policy.
 * @throws LkError LK_STORE_CORRUPT, LK_STORE_MIGRATION, LK_AUDIT_KEY (see openStore).
 */
export function openAuditSiteEvents(
  loaded: { dataDir: string; config: Pick<SiteConfig, 'audit'> }, clock: Clock, logger?: Logger, timerMs = 5000,
  storage: { hooks?: StorageHooks; options?: StorageGuardOptions } = {}, repeatWindowMs = 60_000,
): AuditSiteSink {
  const store = openStore({
    dataDir: loaded.dataDir, clock, ...(logger ? { logger } : {}),
    audit: { checkpointEvery: loaded.config.audit.checkpoint_every, checkpointIntervalS: loaded.config.audit.checkpoint_interval_s },
  });
  const stopTimer = startCheckpointTimer(store, timerMs);
  const log = logger ?? store.logger;
  const guardStore = new StorageGuard(store, clock, log, storage.hooks ?? { onFailClosed: () => undefined, onRecovered: () => undefined }, storage.options ?? {});
  // site events through the guard: held while the disk is full, in order
  const held = guardStore;
  const lostAt = new Map<string, number>();
  const everConnected = new Set<string>();
  const failing = new Set<string>(); // heartbeat equipment ids currently failing
  const stale = new Set<string>(); // connector#subscription currently stale
  let closed = false;
  // a flapping connection repeats the same events: the first in a window is recorded, the rest are counted
  const budget = new EventBudget(repeatWindowMs);
  const recordRepeated = (r: SuppressedRun): void => {
    const ev = r.sample as { kind: 'connector' | 'heartbeat'; action: string; detail: Record<string, Json> };
    recordSiteEvent(held, {
      kind: ev.kind, action: ev.action,
      detail: { ...ev.detail, repeated: r.count, first: new Date(r.first).toISOString(), last: new Date(r.last).toISOString() },
      reason: `${r.count} more identical events within ${repeatWindowMs} ms of the one recorded before`,
    });
  };
  const flushDue = (): void => {
    for (const r of budget.due(clock.now())) recordRepeated(r);
  };
  /** Record `write()`'s event unless an identical one (same `key`) was recorded less than a window ago. */
  const limited = (key: string, sample: { kind: 'connector' | 'heartbeat'; action: string; detail: Record<string, Json> }, write: () => void): void => {
    flushDue();
    if (budget.offer(key, clock.now(), sample)) write();
  };
  const repeatTimer = setInterval(() => guard('repeated site events', flushDue), repeatWindowMs);
  repeatTimer.unref();

  const guard = (what: string, fn: () => void): void => {
    try {
      fn();
    } catch (err) {
      log.error({ err, what }, 'audit: could not record a site event');
    }
  };

  return {
    store,
    storage: guardStore,
    started: (info) => {
      const prev = previousUncleanRun(store);
      if (prev) {
        // the tail as the crash left it, signed before anything new is written after it
        const signed = store.audit.checkpointAll();
        recordSiteEvent(store.audit, {
          kind: 'system', action: 'site.unclean_stop',
          detail: {
            previous_start_seq: prev.seq, previous_start_ts: prev.ts, ...(prev.pid !== undefined ? { previous_pid: prev.pid } : {}),
            checkpointed: Object.fromEntries(signed.map((c) => [c.tenant, c.seq])),
          },
          reason: 'the previous run ended without a stop entry (crash, kill or power loss); the entries it left were checkpointed at this start',
        });
        log.warn({ previousStart: prev.seq, previousPid: prev.pid, checkpointed: signed.length }, 'the previous run ended without a clean stop: recorded, and its tail checkpointed');
      }
      siteStarted(store.audit, { version: info.version, configHash: info.configHash, configFile: info.configFile, pid: process.pid });
      guardStore.checkSpace();
      guardStore.start();
    },
    stopped: (info) => {
      // counted repeats and entries still held go first (behind their outage entry), so the stop is the last word
      guard('repeated site events', () => {
        for (const r of budget.drain()) recordRepeated(r);
      });
      let ok = guardStore.retry();
      if (ok) {
        try {
          siteStopped(store.audit, { reason: info.reason });
        } catch (err) {
          if (!isStorageFull(err)) throw err;
          ok = false;
        }
      }
      if (!ok) {
        // the process ends: what could not be written goes to the log, one line each, rather than nowhere
        for (const h of guardStore.pending()) log.error({ code: 'LK_STORE_FULL', at: new Date(h.at).toISOString(), entry: h.input }, 'audit entry held at stop and not written (disk full)');
        log.error({ code: 'LK_STORE_FULL', held: guardStore.outage()?.held ?? 0 }, 'disk full: the stop entry could not be written; the next start records an unclean stop');
      }
      return ok;
    },
    connector: ({ connector, event: e }) =>
      guard(`connector ${connector}`, () => {
        if (e.type === 'state') {
          if (e.to === 'connected') {
            const since = lostAt.get(connector);
            lostAt.delete(connector);
            const state = everConnected.has(connector) ? 'restored' : 'connected';
            everConnected.add(connector);
            limited(`connector.${state}|${connector}`, { kind: 'connector', action: `connector.${state}`, detail: { connection: connector } }, () =>
              connectorEvent(held, { connection: connector, state, ...(since !== undefined ? { downMs: clock.now() - since } : {}) }));
            for (const k of [...stale]) if (k.startsWith(`${connector}#`)) stale.delete(k);
            for (const eq of [...failing].filter((k) => k.startsWith(`${connector}#`))) {
              failing.delete(eq);
              const equipment = eq.slice(connector.length + 1);
              limited(`heartbeat.recovered|${equipment}`, { kind: 'heartbeat', action: 'heartbeat.recovered', detail: { equipment } }, () =>
                heartbeatEvent(held, { equipment, state: 'recovered' }));
            }
          } else if (e.to === 'lost' && !lostAt.has(connector)) {
            lostAt.set(connector, clock.now());
            limited(`connector.lost|${connector}`, { kind: 'connector', action: 'connector.lost', detail: { connection: connector, ...(e.reason ? { error: e.reason } : {}) } }, () =>
              connectorEvent(held, { connection: connector, state: 'lost', ...(e.reason ? { error: e.reason } : {}) }));
          }
        } else if (e.type === 'heartbeat_failed') {
          const k = `${connector}#${e.equipment}`;
          if (!failing.has(k)) {
            failing.add(k);
            limited(`heartbeat.failing|${e.equipment}`, { kind: 'heartbeat', action: 'heartbeat.failing', detail: { equipment: e.equipment, error: e.error } }, () =>
              heartbeatEvent(held, { equipment: e.equipment, state: 'failing', error: e.error }));
          }
        } else {
          const k = `${connector}#${e.subscription}`;
          if (!stale.has(k)) {
            stale.add(k);
            recordSiteEvent(held, { kind: 'connector', action: 'connector.stale', detail: { connection: connector, subscription: e.subscription, age_ms: e.ageMs } });
          }
        }
      }),
    close: () => {
      if (closed) return;
      closed = true;
      clearInterval(repeatTimer);
      // nothing counted is left unrecorded at stop
      guard('repeated site events', () => {
        for (const r of budget.drain()) recordRepeated(r);
      });
      stopTimer();
      guardStore.stop();
      try {
        store.close();
      } catch (err) {
        // the final checkpoint could not be written (a full disk): the database is closed all the same
        log.error({ err, code: isStorageFull(err) ? 'LK_STORE_FULL' : undefined }, 'audit: final checkpoint failed at close');
      }
    },
  };
}
