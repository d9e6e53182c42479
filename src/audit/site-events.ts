/**
 * Events of the edge node itself, on the `site` chain: start (software
 * version, config hash), clean stop, connector connected / lost / restored,
 * heartbeat and watchdog events, configuration validation failures and
 * changes. `linekeeper serve` calls these; they are small on purpose so the
 * wording of the trail is decided in one place.
 *
 * Heartbeats are recorded when their state changes (started, failing,
 * recovered), not per beat: one entry a second would bury the events that
 * matter and say nothing a state change does not.
 */
import type { Json } from './entry.js';
import { SITE_TENANT, type AuditEntry, type AuditEntryInput } from './entry.js';

/**
 * Where an event goes: the audit trail (returns the entry) or the storage guard of the daemon, which holds it
 * while the disk is full (returns 'written' | 'held').
 */
export interface Appender<R = AuditEntry> {
  append(input: AuditEntryInput): R;
}

export interface SiteEvent {
  kind: 'system' | 'connector' | 'heartbeat' | 'watchdog' | 'config_change' | 'config_invalid';
  /** e.g. `site.start`, `connector.lost`. */
  action: string;
  /** user id when a person caused it; `system` otherwise. */
  actor?: string;
  detail?: Json;
  reason?: string;
  old?: Json;
  new?: Json;
  /** Equipment tag (`<equipment>.<Tag>`) the event is about. */
  setpoint?: string;
}

/**
 * Append one event to the site chain (durable when it returns).
 * @throws LkError LK_VALIDATION when the event is malformed (nothing written).
 */
export function recordSiteEvent<R = AuditEntry>(audit: Appender<R>, ev: SiteEvent): R {
  return audit.append({
    tenant: SITE_TENANT, actor: ev.actor ?? 'system', kind: ev.kind, action: ev.action,
    ...(ev.setpoint ? { subject: { setpoint: ev.setpoint } } : {}),
    ...(ev.detail !== undefined ? { args: ev.detail } : {}),
    ...(ev.reason !== undefined ? { reason: ev.reason } : {}),
    ...(ev.old !== undefined ? { old: ev.old } : {}),
    ...(ev.new !== undefined ? { new: ev.new } : {}),
  });
}

/** `serve` started: what software, with which validated configuration. */
export function siteStarted<R = AuditEntry>(audit: Appender<R>, p: { version: string; configHash: string; configFile?: string; node?: string; pid?: number }): R {
  return recordSiteEvent(audit, {
    kind: 'system', action: 'site.start',
    detail: { version: p.version, config_hash: p.configHash, ...(p.configFile ? { config_file: p.configFile } : {}), node: p.node ?? process.version, ...(p.pid !== undefined ? { pid: p.pid } : {}) },
  });
}

/** Clean stop (a crash leaves no stop entry: the next start follows a start, which is the evidence). */
export function siteStopped<R = AuditEntry>(audit: Appender<R>, p: { reason?: string; signal?: string } = {}): R {
  return recordSiteEvent(audit, { kind: 'system', action: 'site.stop', ...(p.signal ? { detail: { signal: p.signal } } : {}), ...(p.reason ? { reason: p.reason } : {}) });
}

export type ConnectorState = 'connected' | 'lost' | 'restored';

/** A connection changed state (id from config `connections[].id`). */
export function connectorEvent<R = AuditEntry>(audit: Appender<R>, p: { connection: string; state: ConnectorState; endpoint?: string; error?: string; downMs?: number }): R {
  return recordSiteEvent(audit, {
    kind: 'connector', action: `connector.${p.state}`,
    detail: { connection: p.connection, ...(p.endpoint ? { endpoint: p.endpoint } : {}), ...(p.error ? { error: p.error } : {}), ...(p.downMs !== undefined ? { down_ms: p.downMs } : {}) },
  });
}

export type HeartbeatState = 'started' | 'failing' | 'recovered' | 'stopped';

/** The supervisor heartbeat to an equipment's PLC changed state. */
export function heartbeatEvent<R = AuditEntry>(audit: Appender<R>, p: { equipment: string; state: HeartbeatState; error?: string }): R {
  return recordSiteEvent(audit, { kind: 'heartbeat', action: `heartbeat.${p.state}`, detail: { equipment: p.equipment, ...(p.error ? { error: p.error } : {}) } });
}

/**
 * A watchdog event: the PLC reverted to its LKG recipe, a model watchdog fired, a re-arm.
 * `event` is short and dotted-free (e.g. `lkg_revert`, `model_lost`, `rearm`).
 */
export function watchdogEvent<R = AuditEntry>(audit: Appender<R>, p: { event: string; equipment?: string; actor?: string; reason?: string; old?: Json; new?: Json; detail?: Json }): R {
  return recordSiteEvent(audit, {
    kind: 'watchdog', action: `watchdog.${p.event}`, ...(p.actor ? { actor: p.actor } : {}),
    detail: { ...(p.equipment ? { equipment: p.equipment } : {}), ...(p.detail !== undefined ? { detail: p.detail } : {}) },
    ...(p.reason !== undefined ? { reason: p.reason } : {}), ...(p.old !== undefined ? { old: p.old } : {}), ...(p.new !== undefined ? { new: p.new } : {}),
  });
}

/** The configuration failed validation at start or reload (issues as `loadConfig` reports them). */
export function configInvalid<R = AuditEntry>(audit: Appender<R>, p: { file: string; code: string; issues?: readonly { path: string; message: string; line?: number }[] }): R {
  return recordSiteEvent(audit, {
    kind: 'config_invalid', action: 'config.invalid',
    detail: { file: p.file, code: p.code, issues: (p.issues ?? []).map((i) => ({ path: i.path, message: i.message, ...(i.line ? { line: i.line } : {}) })) },
  });
}

/** A different validated configuration took effect (old → new hash, Annex 11 §9). */
export function configChanged<R = AuditEntry>(audit: Appender<R>, p: { file: string; oldHash: string; newHash: string; actor?: string; reason?: string }): R {
  return recordSiteEvent(audit, {
    kind: 'config_change', action: 'config.change', ...(p.actor ? { actor: p.actor } : {}),
    detail: { file: p.file }, old: p.oldHash, new: p.newHash, ...(p.reason ? { reason: p.reason } : {}),
  });
}
