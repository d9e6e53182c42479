/**
 * MQTT: optional Sparkplug B publishing of the line to the plant's broker (the Unified Namespace), with
 * store-and-forward. Absent from the configuration (the air-gapped default) nothing is created and no socket is
 * opened. The daemon feeds it samples, run engine events and signed audit checkpoints through the small hooks of
 * {@link LineMqtt}; what goes on the wire is in docs/mqtt.md.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { SignedCheckpoint } from '../../src/audit/checkpoints.js';
import type { Clock } from '../../src/clock.js';
import type { LoadedConfig } from '../../src/config/load.js';
import type { MqttConfig } from '../../src/config/schema.js';
import { LkError } from '../../src/errors.js';
import type { Logger } from '../../src/log.js';
import type { Store } from '../../src/store/store.js';
import type { Sample, TagDescription } from '../types.js';
import { SparkplugPublisher, type PublisherState } from './publisher.js';

export { SparkplugPublisher, stateTopic, type PublisherOptions, type PublisherState } from './publisher.js';
export { Outbox, type DropReport, type OutboxBound } from './outbox.js';
export { DATATYPE, NAMESPACE, decode, encode, num, sparkplugType, topicOf, valueField, type SpMessage, type SpMetric } from './sparkplug.js';

/** A tool-call log line as published (no arguments or results: those stay in the site's own trail). */
export interface ToolCallEvent {
  readonly id: number;
  readonly run: string;
  readonly at: number;
  readonly kind: string;
  readonly step: string;
  readonly agent: string;
  readonly tool: string;
  readonly summary: string | null;
  readonly auditSeq: number;
}

/** What of a run's state is published when it changes. */
export interface RunStateEvent {
  readonly id: string;
  readonly tenant: string;
  readonly batch: string;
  readonly status: string;
  readonly reason: string | null;
  readonly steps: readonly { readonly seq: string; readonly name: string; readonly status: string }[];
}

/** The daemon's handle on the publisher: small hooks, each safe to call at any time (they never throw). */
export interface LineMqtt {
  readonly publisher: SparkplugPublisher;
  samples(samples: readonly Sample[]): void;
  toolCall(row: ToolCallEvent, tenant: string): void;
  runChanged(run: RunStateEvent): void;
  checkpoint(c: SignedCheckpoint): void;
  stop(): Promise<void>;
}

export interface LineMqttDeps {
  readonly loaded: Pick<LoadedConfig, 'config' | 'file'>;
  readonly store: Pick<Store, 'db' | 'tx' | 'clock' | 'audit'>;
  readonly clock: Clock;
  readonly log: Logger;
  readonly version: string;
  readonly tags: () => readonly TagDescription[];
  readonly current: (tag: string) => Sample | undefined;
}

/**
 * The line's MQTT publisher, started (connecting in the background), or undefined when the configuration has no
 * `mqtt` section — then nothing is opened.
 * @throws LkError LK_CONFIG_INVALID when a TLS or password file named by the configuration cannot be read.
 */
export function startLineMqtt(deps: LineMqttDeps): LineMqtt | undefined {
  const m = deps.loaded.config.mqtt;
  if (!m) return undefined;
  const base = dirname(deps.loaded.file);
  const publisher = new SparkplugPublisher({
    url: m.url, clientId: m.client_id ?? `linekeeper-${m.group_id}-${m.edge_node_id}`, group: m.group_id, node: m.edge_node_id,
    ...(m.primary_host_id !== undefined ? { primaryHostId: m.primary_host_id } : {}),
    ...credentials(m, base),
    keepaliveS: m.keepalive_s, reconnectMs: m.reconnect_ms,
    bound: { maxMessages: m.outbox.max_messages, maxBytes: m.outbox.max_bytes },
    store: deps.store, clock: deps.clock, log: deps.log,
    properties: { site: deps.loaded.config.site.id, line: deps.loaded.config.line.id, version: deps.version },
    tags: deps.tags, current: deps.current,
  });
  const runs = new Map<string, string>();
  const guard = (what: string, fn: () => void): void => {
    try {
      fn();
    } catch (err) {
      deps.log.error({ err, what }, 'MQTT hook failed');
    }
  };
  publisher.start();
  return {
    publisher,
    samples: (s) => guard('samples', () => publisher.samples(s)),
    toolCall: (row, tenant) => guard('tool call', () => {
      const line = { id: row.id, run: row.run, tenant, at: row.at, kind: row.kind, step: row.step, agent: row.agent, tool: row.tool, summary: row.summary, auditSeq: row.auditSeq };
      publisher.nodeData([{ name: 'Run/ToolCall', type: 'String', value: JSON.stringify(line) }]);
    }),
    runChanged: (run) => guard('run state', () => {
      const state = { run: run.id, tenant: run.tenant, batch: run.batch, status: run.status, reason: run.reason, steps: run.steps.map((s) => ({ seq: s.seq, name: s.name, status: s.status })) };
      const json = JSON.stringify(state);
      // the engine reports every change of the run record; the broker hears of status changes only
      if (runs.get(run.id) === json) return;
      runs.set(run.id, json);
      publisher.nodeData([{ name: 'Run/State', type: 'String', value: json }]);
    }),
    checkpoint: (c) => guard('checkpoint', () => publisher.nodeData(checkpointMetrics(c))),
    stop: () => publisher.stop(),
  };
}

/** A signed checkpoint as NDATA metrics: everything an outside party needs to check the signature. */
export function checkpointMetrics(c: SignedCheckpoint): { name: string; type: 'String' | 'UInt64'; value: string | number }[] {
  return [
    { name: 'Audit/Checkpoint/Tenant', type: 'String', value: c.tenant },
    { name: 'Audit/Checkpoint/Seq', type: 'UInt64', value: c.seq },
    { name: 'Audit/Checkpoint/HeadHash', type: 'String', value: c.head_hash },
    { name: 'Audit/Checkpoint/Timestamp', type: 'String', value: c.ts },
    { name: 'Audit/Checkpoint/KeyId', type: 'String', value: c.key_id },
    { name: 'Audit/Checkpoint/Signature', type: 'String', value: c.sig },
  ];
}

function credentials(m: MqttConfig, base: string): { username?: string; password?: string; tls?: { ca?: Buffer; cert?: Buffer; key?: Buffer } } {
  const read = (path: string, field: string): Buffer => {
    const abs = resolve(base, path);
    try {
      return readFileSync(abs);
    } catch (err) {
      const errno = (err as NodeJS.ErrnoException).code ?? 'UNKNOWN';
      throw new LkError('LK_CONFIG_INVALID', `mqtt.${field}: ${abs}: ${errno === 'ENOENT' ? 'file not found' : errno}`, { path: `mqtt.${field}`, file: abs, errno }, { cause: err });
    }
  };
  const tls = m.tls
    ? {
        ...(m.tls.ca ? { ca: read(m.tls.ca, 'tls.ca') } : {}),
        ...(m.tls.cert ? { cert: read(m.tls.cert, 'tls.cert') } : {}),
        ...(m.tls.key ? { key: read(m.tls.key, 'tls.key') } : {}),
      }
    : undefined;
  const password = m.password_file ? read(m.password_file, 'password_file').toString('utf8').split(/\r?\n/)[0] : undefined;
  return { ...(m.username ? { username: m.username } : {}), ...(password !== undefined ? { password } : {}), ...(tls ? { tls } : {}) };
}

export type { PublisherState as MqttState };
