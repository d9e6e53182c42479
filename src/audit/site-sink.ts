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
export function openAuditSiteEvents(loaded: { dataDir: string; config: Pick<SiteConfig, 'audit'> }, clock: Clock, logger?: Logger, timerMs = 5000): AuditSiteSink {
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
            connectorEvent(store.audit, { connection: connector, state, ...(since !== undefined ? { downMs: clock.now() - since } : {}) });
            for (const k of [...stale]) if (k.startsWith(`${connector}#`)) stale.delete(k);
            for (const eq of [...failing].filter((k) => k.startsWith(`${connector}#`))) {
              failing.delete(eq);
              heartbeatEvent(store.audit, { equipment: eq.slice(connector.length + 1), state: 'recovered' });
            }
          } else if (e.to === 'lost' && !lostAt.has(connector)) {
            lostAt.set(connector, clock.now());
            connectorEvent(store.audit, { connection: connector, state: 'lost', ...(e.reason ? { error: e.reason } : {}) });
          }
        } else if (e.type === 'heartbeat_failed') {
          const k = `${connector}#${e.equipment}`;
          if (!failing.has(k)) {
            failing.add(k);
            heartbeatEvent(store.audit, { equipment: e.equipment, state: 'failing', error: e.error });
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
      stopTimer();
      store.close();
    },
  };
}
