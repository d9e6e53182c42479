/**
 * Prometheus metrics of one daemon (prom-client). Each daemon owns its own `Registry` — never prom-client's
 * global default register — so two daemons in one process (tests) never share or double-register a metric.
 *
 * Two kinds of source:
 * - counted from the audit trail as entries commit (`AuditTrail.onCommitted`): audit appends by kind, policy
 *   decisions by outcome and reason, watchdog events. What is counted is what the trail holds, so a metric never
 *   shows a decision that was rolled back;
 * - read at scrape time (`collect`): connector state, reconnects and data age, run and step states from the
 *   store, SSE clients, the writer's pending queue. Nothing is polled between scrapes.
 * Connector read latency is timed by {@link Metrics.instrument}, a wrapper around a connector (the style of
 * undici's interceptors: metrics wrap a connector, they are not written into each one).
 *
 * The exposition passes `promtool check metrics`: prom-client's default `nodejs_active_{handles,requests,resources}_total`
 * are gauges named like counters, so they are not registered; the same counts are the sum over `type` of
 * `linekeeper_nodejs_active_handles` (and `_requests`, `_resources`), which are kept.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Connector } from '../../connectors/types.js';
import type { AuditEntry } from '../audit/entry.js';
import type { Store } from '../store/store.js';
import type { LoopDelaySnapshot } from './loop-delay.js';

/** The daemon's parts read at scrape time; each may be absent (a daemon without an API has no SSE clients). */
export interface MetricSources {
  connectors?: () => readonly Pick<Connector, 'health'>[];
  store?: () => Store | undefined;
  sseClients?: () => number;
  writerQueue?: () => number;
  now?: () => number;
  /** The event-loop delay monitor (loop-delay.ts). */
  loopDelay?: () => LoopDelaySnapshot | undefined;
  /** The Sparkplug publisher to the plant's broker, when `mqtt` is configured (connectors/mqtt). */
  mqtt?: () => MqttSource | undefined;
}

/** What the metrics read of the MQTT publisher. The oldest queued message is read from the outbox table. */
export interface MqttSource {
  /** The broker's URL without credentials (the label of the connection gauge). */
  readonly broker: string;
  /** Connected to the broker: the publisher is draining its outbox or live. */
  readonly connected: boolean;
  /** Messages and bytes in the store-and-forward outbox now. */
  readonly queued: number;
  readonly queuedBytes: number;
  /** Messages the outbox bound dropped since start (each drop is audited). */
  readonly dropped: number;
}

/** prom-client's default gauges with a counter's `_total` suffix (promtool: "non-counter metrics should not have _total suffix"). */
const TOTAL_GAUGES = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** An MQTT URL as a label: scheme, host and port, never a user or a password. */
export function brokerLabel(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return 'mqtt';
  }
}

const CONNECTOR_STATES = ['connecting', 'connected', 'lost', 'closed'] as const;
const ACTIVE = "('PENDING','RUNNING','APPROVAL','HELD','INTERRUPTED')";

export class Metrics {
  readonly registry = new Registry();
  private sources: MetricSources = {};
  private readonly reconnectsSeen = new Map<string, number>();
  private readonly auditAppends: Counter<'kind'>;
  private readonly decisions: Counter<'outcome' | 'reason'>;
  private readonly watchdog: Counter<'event'>;
  private readonly verifySeconds: Histogram;
  private readonly readSeconds: Histogram<'connector'>;
  private readonly backups: Counter<'result'>;
  private readonly lockouts: Counter<'event'>;

  /** @param processMetrics also export Node's process metrics (memory, CPU, event-loop lag) — once per process. */
  constructor(opts: { processMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.registry.setDefaultLabels({});
    if (opts.processMetrics) {
      collectDefaultMetrics({ register: this.registry, prefix: 'linekeeper_' });
      for (const name of TOTAL_GAUGES) this.registry.removeSingleMetric(`linekeeper_${name}`);
    }
    this.auditAppends = new Counter({ name: 'linekeeper_audit_appends_total', help: 'Audit entries committed, by kind', labelNames: ['kind'], registers });
    this.decisions = new Counter({ name: 'linekeeper_policy_decisions_total', help: 'Policy decisions on setpoint moves, by outcome and reason (one count per reason)', labelNames: ['outcome', 'reason'], registers });
    this.watchdog = new Counter({ name: 'linekeeper_watchdog_events_total', help: 'PLC and model watchdog events recorded on the site chain', labelNames: ['event'], registers });
    this.verifySeconds = new Histogram({ name: 'linekeeper_audit_verify_seconds', help: 'Time to verify the audit chains (backups, restore, doctor)', buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 120], registers });
    this.readSeconds = new Histogram({ name: 'linekeeper_connector_read_seconds', help: 'Latency of reads from equipment, by connection', labelNames: ['connector'], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], registers });
    this.backups = new Counter({ name: 'linekeeper_backups_total', help: 'Online backups taken, by result', labelNames: ['result'], registers });
    this.lockouts = new Counter({ name: 'linekeeper_auth_lockouts_total', help: 'Lock-outs after failed passwords: a source made to wait for an account (locked), or one account failing from all sources past the alert threshold (alert)', labelNames: ['event'], registers });
    const self = this;
    new Gauge({
      name: 'linekeeper_connector_state', help: 'Connection state (1 for the current state)', labelNames: ['connector', 'state'], registers,
      collect() {
        this.reset();
        for (const c of self.sources.connectors?.() ?? []) {
          const h = c.health();
          for (const s of CONNECTOR_STATES) this.set({ connector: h.id, state: s }, h.state === s ? 1 : 0);
        }
      },
    });
    new Gauge({
      name: 'linekeeper_connector_bad_tags', help: 'Tags a connection serves bad while its other tags read (e.g. an engineering unit that differs from the configuration)', labelNames: ['connector'], registers,
      collect() {
        this.reset();
        for (const c of self.sources.connectors?.() ?? []) {
          const h = c.health();
          this.set({ connector: h.id }, Object.keys(h.badTags ?? {}).length);
        }
      },
    });
    new Counter({
      name: 'linekeeper_connector_reconnects_total', help: 'Reconnections of each connection since start', labelNames: ['connector'], registers,
      collect() {
        for (const c of self.sources.connectors?.() ?? []) {
          const h = c.health();
          const seen = self.reconnectsSeen.get(h.id) ?? 0;
          this.inc({ connector: h.id }, Math.max(0, h.reconnects - seen));
          self.reconnectsSeen.set(h.id, Math.max(seen, h.reconnects));
        }
      },
    });
    new Gauge({
      name: 'linekeeper_data_age_seconds', help: 'Age of the newest good data of each connection (absent before the first)', labelNames: ['connector'], registers,
      collect() {
        this.reset();
        const now = (self.sources.now ?? Date.now)();
        for (const c of self.sources.connectors?.() ?? []) {
          const h = c.health();
          if (h.lastDataAt !== undefined) this.set({ connector: h.id }, Math.max(0, (now - h.lastDataAt) / 1000));
        }
      },
    });
    new Gauge({
      name: 'linekeeper_runs', help: 'Runs by status (all runs this node holds)', labelNames: ['status'], registers,
      collect() {
        this.reset();
        const store = self.sources.store?.();
        if (!store) return;
        for (const r of store.db.prepare('SELECT status, COUNT(*) AS n FROM run GROUP BY status').all() as { status: string; n: number }[]) this.set({ status: r.status }, r.n);
      },
    });
    new Gauge({
      name: 'linekeeper_run_steps', help: 'Steps of the active runs by status', labelNames: ['status'], registers,
      collect() {
        this.reset();
        const store = self.sources.store?.();
        if (!store) return;
        const rows = store.db.prepare(`SELECT s.status, COUNT(*) AS n FROM run_step s JOIN run r ON r.id = s.run WHERE r.status IN ${ACTIVE} GROUP BY s.status`).all() as { status: string; n: number }[];
        for (const r of rows) this.set({ status: r.status }, r.n);
      },
    });
    let loopSeen = 0;
    const loop = (): LoopDelaySnapshot | undefined => self.sources.loopDelay?.();
    new Gauge({ name: 'linekeeper_event_loop_delay_p99_seconds', help: '99th percentile of the event-loop delay in the last window: how late PLC heartbeats could be', registers, collect() { this.set((loop()?.p99Ms ?? 0) / 1000); } });
    new Gauge({ name: 'linekeeper_event_loop_delay_max_seconds', help: 'Worst event-loop delay in the last window', registers, collect() { this.set((loop()?.maxMs ?? 0) / 1000); } });
    new Gauge({ name: 'linekeeper_event_loop_delay_bound_seconds', help: 'The bound past which an event-loop delay is logged and counted', registers, collect() { this.set((loop()?.boundMs ?? 0) / 1000); } });
    new Counter({
      name: 'linekeeper_event_loop_over_bound_total', help: 'Windows whose worst event-loop delay passed the bound', registers,
      collect() {
        const n = loop()?.overBound ?? 0;
        if (n > loopSeen) this.inc(n - loopSeen);
        loopSeen = Math.max(loopSeen, n);
      },
    });
    let mqttDropped = 0;
    const mqtt = (): MqttSource | undefined => self.sources.mqtt?.();
    new Gauge({
      name: 'linekeeper_mqtt_connected', help: 'Whether the Sparkplug publisher is connected to its broker (1) or not (0: messages go to the outbox)', labelNames: ['broker'], registers,
      collect() {
        this.reset();
        const m = mqtt();
        if (m) this.set({ broker: m.broker }, m.connected ? 1 : 0);
      },
    });
    new Gauge({ name: 'linekeeper_mqtt_outbox_messages', help: 'Sparkplug messages waiting in the store-and-forward outbox for the broker', registers, collect() { this.set(mqtt()?.queued ?? 0); } });
    new Gauge({ name: 'linekeeper_mqtt_outbox_bytes', help: 'Bytes waiting in the store-and-forward outbox', registers, collect() { this.set(mqtt()?.queuedBytes ?? 0); } });
    new Gauge({
      name: 'linekeeper_mqtt_outbox_oldest_age_seconds', help: 'Age of the oldest message waiting in the outbox (0 when it is empty): how far behind the broker is', registers,
      collect() {
        const store = mqtt() ? self.sources.store?.() : undefined;
        const at = store?.db.prepare('SELECT queued_at FROM mqtt_outbox ORDER BY ord LIMIT 1').pluck().get() as number | undefined;
        this.set(at === undefined ? 0 : Math.max(0, ((self.sources.now ?? Date.now)() - at) / 1000));
      },
    });
    new Counter({
      name: 'linekeeper_mqtt_outbox_dropped_total', help: 'Outbox messages dropped by its bound (each drop is an audit entry on the site chain)', registers,
      collect() {
        const n = mqtt()?.dropped ?? 0;
        if (n > mqttDropped) this.inc(n - mqttDropped);
        mqttDropped = Math.max(mqttDropped, n);
      },
    });
    new Gauge({ name: 'linekeeper_sse_clients', help: 'Open server-sent event streams', registers, collect() { this.set(self.sources.sseClients?.() ?? 0); } });
    new Gauge({ name: 'linekeeper_writer_queue', help: 'Setpoint writes waiting for a named reviewer', registers, collect() { this.set(self.sources.writerQueue?.() ?? 0); } });
  }

  /** Where the scrape-time gauges read from (set once the daemon's parts exist; later calls add to it). */
  setSources(s: MetricSources): void {
    this.sources = { ...this.sources, ...s };
  }

  /** Count what `store`'s audit trail commits from now on. @returns the function that stops counting. */
  observeAudit(store: Pick<Store, 'audit'>): () => void {
    return store.audit.onCommitted((e) => this.onEntry(e));
  }

  /** Count one committed audit entry (exported for tests of the mapping). */
  onEntry(e: Pick<AuditEntry, 'kind' | 'action' | 'result' | 'reason'>): void {
    this.auditAppends.inc({ kind: e.kind });
    if (e.kind === 'policy_decision') {
      const r = (e.result ?? {}) as { outcome?: unknown; reasons?: unknown };
      const outcome = typeof r.outcome === 'string' ? r.outcome : 'unknown';
      const reasons = Array.isArray(r.reasons) && r.reasons.length > 0 ? r.reasons.map(String) : ['none'];
      for (const reason of reasons) this.decisions.inc({ outcome, reason });
    } else if (e.kind === 'watchdog') {
      this.watchdog.inc({ event: e.action.replace(/^watchdog\./, '') });
    } else if (e.kind === 'identity' && (e.action === 'auth.locked' || e.action === 'auth.lockout_alert')) {
      this.lockouts.inc({ event: e.action === 'auth.locked' ? 'locked' : 'alert' });
    }
  }

  /** Record how long an audit verification took. */
  observeVerify(seconds: number): void {
    this.verifySeconds.observe(seconds);
  }

  /** Record a backup's outcome. */
  backupDone(ok: boolean): void {
    this.backups.inc({ result: ok ? 'ok' : 'failed' });
  }

  /**
   * The same connector with its reads timed. Everything else passes through to the connector itself (bound to
   * it, so private state works), including the write capability: the guarded writer stays its only holder.
   */
  instrument<C extends Connector>(c: C): C {
    const hist = this.readSeconds;
    return new Proxy(c, {
      get(target, key) {
        const v = Reflect.get(target, key, target) as unknown;
        if (key === 'read' && typeof v === 'function') {
          return async (...args: unknown[]) => {
            const end = hist.startTimer({ connector: target.id });
            try {
              return await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
            } finally {
              end();
            }
          };
        }
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }

  /** The exposition text (Prometheus text format 0.0.4). */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
