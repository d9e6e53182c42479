/**
 * The audit trail as the daemon's site event sink (`startDaemon({ openSiteEvents })`):
 * opens the store in the data directory, records start / stop / connector
 * events on the `site` chain, keeps idle chains checkpointed on a timer, and
 * closes with a final checkpoint. Connector events arrive in bursts (every
 * failed heartbeat, every stale check); only state changes are recorded.
 */
import type { ConnectorEvent } from '../../connectors/types.js';
import type { Clock } from '../clock.js';
import type { SiteConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { openStore, type Store } from '../store/store.js';
import { connectorEvent, heartbeatEvent, recordSiteEvent, siteStarted, siteStopped } from './site-events.js';
import { startCheckpointTimer } from './trail.js';
import { EventBudget, type SuppressedRun } from './event-budget.js';
import type { Json } from './entry.js';

export interface AuditSiteSink {
  readonly store: Store;
  /** @throws when the start cannot be recorded: a daemon that cannot audit must not run. */
  started(info: { version: string; configHash: string; configFile: string }): void;
  stopped(info: { reason: string }): void;
  /** Never throws into the connector's event loop; a failure to record is logged as an error. */
  connector(info: { connector: string; event: ConnectorEvent }): void;
  /** Final checkpoint of every chain, then close the database. */
  close(): void;
}

/**
 * Open the audit store of `loaded.dataDir` with the configured checkpoint policy.
 * @throws LkError LK_STORE_CORRUPT, LK_STORE_MIGRATION, LK_AUDIT_KEY (see openStore).
 */
export function openAuditSiteEvents(
  loaded: { dataDir: string; config: Pick<SiteConfig, 'audit'> }, clock: Clock, logger?: Logger, timerMs = 5000, repeatWindowMs = 60_000,
): AuditSiteSink {
  const store = openStore({
    dataDir: loaded.dataDir, clock, ...(logger ? { logger } : {}),
    audit: { checkpointEvery: loaded.config.audit.checkpoint_every, checkpointIntervalS: loaded.config.audit.checkpoint_interval_s },
  });
  const stopTimer = startCheckpointTimer(store, timerMs);
  const lostAt = new Map<string, number>();
  const everConnected = new Set<string>();
  const failing = new Set<string>(); // heartbeat equipment ids currently failing
  const stale = new Set<string>(); // connector#subscription currently stale
  let closed = false;
  // a flapping connection repeats the same events: the first in a window is recorded, the rest are counted
  const budget = new EventBudget(repeatWindowMs);
  const recordRepeated = (r: SuppressedRun): void => {
    const ev = r.sample as { kind: 'connector' | 'heartbeat'; action: string; detail: Record<string, Json> };
    recordSiteEvent(store.audit, {
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
      (logger ?? store.logger).error({ err, what }, 'audit: could not record a site event');
    }
  };

  return {
    store,
    started: (info) => void siteStarted(store.audit, { version: info.version, configHash: info.configHash, configFile: info.configFile, pid: process.pid }),
    stopped: (info) => void siteStopped(store.audit, { reason: info.reason }),
    connector: ({ connector, event: e }) =>
      guard(`connector ${connector}`, () => {
        if (e.type === 'state') {
          if (e.to === 'connected') {
            const since = lostAt.get(connector);
            lostAt.delete(connector);
            const state = everConnected.has(connector) ? 'restored' : 'connected';
            everConnected.add(connector);
            limited(`connector.${state}|${connector}`, { kind: 'connector', action: `connector.${state}`, detail: { connection: connector } }, () =>
              connectorEvent(store.audit, { connection: connector, state, ...(since !== undefined ? { downMs: clock.now() - since } : {}) }));
            for (const k of [...stale]) if (k.startsWith(`${connector}#`)) stale.delete(k);
            for (const eq of [...failing].filter((k) => k.startsWith(`${connector}#`))) {
              failing.delete(eq);
              const equipment = eq.slice(connector.length + 1);
              limited(`heartbeat.recovered|${equipment}`, { kind: 'heartbeat', action: 'heartbeat.recovered', detail: { equipment } }, () =>
                heartbeatEvent(store.audit, { equipment, state: 'recovered' }));
            }
          } else if (e.to === 'lost' && !lostAt.has(connector)) {
            lostAt.set(connector, clock.now());
            limited(`connector.lost|${connector}`, { kind: 'connector', action: 'connector.lost', detail: { connection: connector, ...(e.reason ? { error: e.reason } : {}) } }, () =>
              connectorEvent(store.audit, { connection: connector, state: 'lost', ...(e.reason ? { error: e.reason } : {}) }));
          }
        } else if (e.type === 'heartbeat_failed') {
          const k = `${connector}#${e.equipment}`;
          if (!failing.has(k)) {
            failing.add(k);
            limited(`heartbeat.failing|${e.equipment}`, { kind: 'heartbeat', action: 'heartbeat.failing', detail: { equipment: e.equipment, error: e.error } }, () =>
              heartbeatEvent(store.audit, { equipment: e.equipment, state: 'failing', error: e.error }));
          }
        } else {
          const k = `${connector}#${e.subscription}`;
          if (!stale.has(k)) {
            stale.add(k);
            recordSiteEvent(store.audit, { kind: 'connector', action: 'connector.stale', detail: { connection: connector, subscription: e.subscription, age_ms: e.ageMs } });
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
      store.close();
    },
  };
}
