/**
 * The daemon: main-level composition of configuration, embedded simulator,
 * connectors, heartbeats and live values. This is I/O code; it creates the
 * clock and the sockets and hands them to everything else.
 *
 * It is an ordered list of named components (src/ops/lifecycle.ts), started in
 * order and stopped in reverse. Start: validate config (before the list) →
 * data directory checked and locked (one daemon per directory) → audit store →
 * site start event (after an unclean-stop entry when the previous run crashed)
 * → metrics → policy bundle under change control → simulator (when embedded) →
 * connectors (connect, keep-alive check) → subscriptions → the one guarded
 * writer → MES/LIMS folders → run engine → MQTT publisher (only with an `mqtt`
 * section: Sparkplug B to the plant broker, store-and-forward) → inbox screen →
 * runs recovered → heartbeats → maintenance → REST API → ready.
 * Stop is the reverse: the API stops taking requests, then the heartbeats stop
 * (the PLC watchdogs take the line to its last known-good recipe by
 * themselves), then the runs are interrupted and the writer drains, and the
 * store closes last.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { openFolderLims, type LimsSource } from '../connectors/lims/index.js';
import { openFolderMes, seedInbox, type FolderMes } from '../connectors/mes/index.js';
import { createConnectors, profilesOf } from '../connectors/index.js';
import type { LineMqtt } from '../connectors/mqtt/index.js';
import { routeOpcUaConsole } from '../connectors/opcua/index.js';
import type { Simulator } from '../connectors/sim/index.js';
import { startSimulatorProcess, type SimulatorProcess } from '../connectors/sim/child-process.js';
import type { MemoryLine } from '../connectors/memory/index.js';
import type { Plant } from '../connectors/sim/index.js';
import type { Connector, Sample, Subscription, TagDescription } from '../connectors/types.js';
import { createApi, type ApiServer } from './api/server.js';
import { ensureDemoUsers, Identity, identitySettings, type DemoUser } from './api/identity.js';
import { openAuditSiteEvents, type AuditSiteSink } from './store/site-sink.js';
import type { StorageGuard, StorageGuardOptions } from './audit/storage-guard.js';
import { configChanged, configInvalid, recordSiteEvent, watchdogEvent } from './audit/site-events.js';
import { scaledClock, systemClock, within, type Clock } from './clock.js';
import { loadConfig, type ConfigIssue, type LoadedConfig } from './config/load.js';
import { LkError } from './errors.js';
import { startBackupSchedule, startWalTimer, type BackupSchedule } from './ops/backup.js';
import { changedSections, findApproval, LIVE_SECTIONS } from './ops/config-change.js';
import { loadTls } from './config/api-tls.js';
import { brokerLabel, Metrics } from './ops/metrics.js';
import { LoopDelayMonitor } from './ops/loop-delay.js';
import { Lifecycle, type Component, type LifecycleView } from './ops/lifecycle.js';
import { type PolicyBundle } from './policy/index.js';
import { readPolicyBundle } from './config/policy-bundle.js';
import { signEmbeddedDefault } from './ops/policy-change.js';
import { GuardedWriter } from './engine/guarded-writer.js';
import { createRunEngine } from './engine/run/compose.js';
import type { PeopleLookup } from './engine/run/lifecycle.js';
import { UserStore } from './store/user-store.js';
import { screenInboxRecord } from './engine/run/batch-closure.js';
import { BATCH_ID_RE } from './domain/batch-record.js';
import { demoModelsPending } from './models/demo-plan.js';
import { registrySources } from './models/sources.js';
import type { RunEngine } from './engine/run/engine.js';
import { openPolicy, type PolicyGateResult } from './engine/policy-gate.js';
import type { Logger } from './log.js';
import type { Store } from './store/store.js';
import { prepareDataDir, fsError, lockDataDir, type DataLock } from './store/data-dir.js';
import { keepAliveRefusals, WATCHED_SUPERVISOR_TAGS, type SupervisorView } from './supervision/plc-watch.js';
import { PlcWatcher } from './supervision/plc-watcher.js';
import { VERSION } from './version.js';

export interface DaemonOptions {
  configFile?: string;
  dataDir?: string;
  logger: Logger;
  clock?: Clock;
  /** How long to wait for first connections before reporting ready anyway (connectors keep retrying). */
  connectTimeoutMs?: number;
  /** Interval of the live-value summary in the log. */
  liveLogMs?: number;
  /** Wall ms between the run engine's readings inside a step (default 250). */
  pollMs?: number;
  /**
   * How many times faster than the wall clock the line's process time runs when its plant simulator is NOT embedded
   * (a `linekeeper sim` started on its own at a `time_scale`): the steps' process minutes and the writer's rates of
   * change are judged on it. Not in site.yaml, so that a real line (1, the default) cannot be given another; the
   * embedded simulator's own time scale always wins.
   */
  processTimeScale?: number;
  /**
   * Serve the REST API once the engine is up (without it, none: the daemon alone). `host`/`port` default to the
   * configuration's `api` section; port 0 takes a free port. On the embedded default the demo identities are
   * created at the first start and returned once in `Daemon.demoUsers`.
   */
  api?: { host?: string; port?: number };
  /** What to do on a full disk: the bound of held entries, the outage before failing closed, the free-space warning. */
  storage?: StorageGuardOptions;
  /** Export Node's process metrics (memory, CPU, event loop) too: once per process, so `serve` only. */
  processMetrics?: boolean;
  /** The event-loop delay monitor's bound and window (default 250 ms in 5 s windows; docs/fail-safe.md). */
  loopDelay?: { boundMs?: number; windowMs?: number };
  /** Scheduled backups and the WAL checkpoint timer (default on; tests of other things turn it off). */
  maintenance?: boolean;
  /**
   * Where the embedded simulator runs (only with `simulator.embedded`): `process` — a child process started and
   * stopped with the daemon, so the plant's servers are not in the daemon's heap (what `serve` does; if it dies
   * its PLCs are lost like any equipment's) — or `in-process` (default: tests that reach into the plant through
   * `Daemon.simulator`).
   */
  embeddedSimulator?: 'in-process' | 'process' | 'memory';
  /** `embeddedSimulator: 'memory'`: the plant's seed (default: the configuration's `simulator.seed`). */
  memorySeed?: number;
  /** `embeddedSimulator: 'memory'`: a plant the caller keeps and scans across daemons (the core simulator's restarts). */
  memoryPlant?: Plant;
  /**
   * The scrypt cost (log2 N, 1–20) of the password hashes this daemon makes: demo identities, new users, changed
   * passwords (default 15: about 0.1 s of CPU and 32 MiB a hash). Not in site.yaml, so that no site can lower it;
   * tests of other things do (2^10: about 2 ms). A password is always checked at its stored hash's own cost.
   */
  passwordHashLog2N?: number;
}

/** What a reload (SIGHUP) did. */
export interface ReloadResult {
  /** `applied`: the new configuration is in force; `unchanged`; `refused`: the old one is kept (audited). */
  readonly outcome: 'applied' | 'unchanged' | 'refused';
  readonly reason?: string;
  readonly sections?: readonly string[];
  /** The policy bundle version in force after the reload, when it changed. */
  readonly policy?: string;
}

export interface ReadyInfo {
  site: string;
  line: string;
  version: string;
  data: string;
  /** Connection id → endpoint actually used. */
  endpoints: Record<string, string>;
  /** Connection id → state at ready time. */
  connections: Record<string, string>;
  /** Version of the policy bundle in force, or null (every write denied). */
  policy: string | null;
  /** Base URL of the REST API, when it is served. */
  api?: string;
}

export interface Daemon {
  readonly loaded: LoadedConfig;
  readonly ready: ReadyInfo;
  readonly connectors: readonly Connector[];
  /** The embedded simulator when it runs in this process (`embeddedSimulator: 'in-process'`). */
  readonly simulator: Simulator | undefined;
  /** The embedded simulator's child process (`embeddedSimulator: 'process'`). */
  readonly simulatorProcess: SimulatorProcess | undefined;
  /** The embedded plant and its in-memory connectors (`embeddedSimulator: 'memory'`). */
  readonly memoryLine: MemoryLine | undefined;
  /** The audit store (SQLite) of the data directory. */
  readonly store: Store;
  /** Site events while the disk is full: held, retried, failing closed past the bound (docs/fail-safe.md). */
  readonly storage: StorageGuard;
  readonly policy: PolicyGateResult;
  /** The single write path to equipment: it holds every connector's write capability. */
  readonly writer: GuardedWriter;
  /** The run engine: supervised batch runs on this line. */
  readonly engine: RunEngine;
  /** Latest sample per tag id. */
  readonly live: ReadonlyMap<string, Sample>;
  /** What each PLC's supervisor tags report now, by equipment id. */
  supervision(): ReadonlyMap<string, SupervisorView>;
  /** The REST API, when `api` was asked for. */
  readonly api: ApiServer | undefined;
  /** The site's identities (local users), when the API is served. */
  readonly identity: Identity | undefined;
  /** Demo identities created at this start, with their one-time passwords (empty after the first start). */
  readonly demoUsers: readonly DemoUser[];
  /** The daemon's Prometheus metrics (its own registry). */
  readonly metrics: Metrics;
  /** The event-loop delay: how late heartbeats could be (metrics, /readyz, doctor). */
  readonly loopDelay: LoopDelayMonitor;
  /** Scheduled backups (`now()` takes one), when maintenance is on. */
  readonly backups: BackupSchedule | undefined;
  /**
   * Re-read the configuration file and the policy bundle (SIGHUP). The log level is the caller's to apply (it owns
   * the logger). Equipment connections are never touched: a
   * change to a section other than log / maintenance is refused until a restart; so is a file whose content no
   * `config.apply` approved, and an invalid one. Every refusal is audited and keeps the configuration in force.
   */
  reload(): Promise<ReloadResult>;
  /** The components in start order, each phase recorded (`stopOrder()` after a stop): what the stop-order test reads. */
  readonly lifecycle: LifecycleView;
  /**
   * Stop every component in reverse start order (src/ops/lifecycle.ts), once: concurrent and later calls share
   * the first call's promise. A component whose stop throws is logged and the others are stopped all the same.
   * @throws AggregateError naming the components that did not stop cleanly, after all were stopped.
   */
  stop(reason?: string): Promise<void>;
}

/**
 * Start linekeeper on a site configuration.
 *
 * @throws LkError LK_CONFIG_* when the configuration is invalid — before any equipment is touched.
 */
export async function startDaemon(opts: DaemonOptions): Promise<Daemon> {
  const log = opts.logger;
  routeOpcUaConsole(log);
  const clock = opts.clock ?? systemClock;
  const hashCost = opts.passwordHashLog2N !== undefined ? { scryptLog2N: opts.passwordHashLog2N } : {};
  let loaded = loadConfig(opts.configFile, opts.dataDir !== undefined ? { dataDir: opts.dataDir } : {});
  const { config } = loaded;
  const connectors: Connector[] = [];
  // PLCs whose watchdog cannot be kept alive by our heartbeat period, per connector: never heartbeated, also not
  // when heartbeats resume after a full disk
  const unsupervised = new Map<string, ReadonlySet<string>>();
  let stopped = false;
  // between the start and the stop of the `heartbeats` component: a full disk may stop and resume them only then
  let beating = false;
  // A daemon that cannot audit must not supervise: on a full disk the storage guard fails closed (docs/fail-safe.md).
  const storageHooks = {
    onFailClosed: (reason: string): void => {
      log.error({ code: 'LK_STORE_FULL', reason }, 'cannot audit: heartbeats stopped, every PLC reverts to its last known-good recipe; equipment writes are refused');
      for (const c of connectors) c.stopHeartbeat();
    },
    onRecovered: (): void => {
      if (stopped || !beating) return;
      log.warn('the audit trail is written again: heartbeats resume; a PLC that reverted stays LOST until a person re-arms it');
      for (const c of connectors) c.startHeartbeat(unsupervised.get(c.id));
    },
  };
  let lock: DataLock | undefined;
  let events!: AuditSiteSink;
  let recordedStart = false;
  const metrics = new Metrics({ processMetrics: opts.processMetrics === true });
  let unobserve: (() => void) | undefined;
  const loopDelay = new LoopDelayMonitor({ ...opts.loopDelay, logger: log.child({ component: 'event-loop' }) });
  let backups: BackupSchedule | undefined;
  let stopWal: (() => void) | undefined;
  const startMaintenance = (c: LoadedConfig): void => {
    if (opts.maintenance === false) return;
    const m = c.config.maintenance;
    stopWal = startWalTimer(events.store, m.wal_checkpoint_s * 1000, m.wal_max_mb * 1024 * 1024);
    backups = startBackupSchedule({
      store: events.store, dir: m.backup_dir ?? join(c.dataDir, 'backups'), everyMs: m.backup_every_h * 3_600_000, keep: m.backup_keep, logger: log.child({ component: 'backup' }),
      onDone: (ok, r) => {
        metrics.backupDone(ok);
        if (r) metrics.observeVerify(r.verifySeconds);
      },
    });
  };
  const stopMaintenance = (): void => {
    stopWal?.();
    backups?.stop();
  };
  let policy: PolicyGateResult = { bundle: null };
  // the bundle the writer and the engine ask at call time: the one in force (a reload replaces it)
  let bundle: PolicyBundle | null = null;
  let writer: GuardedWriter | undefined;
  // process time: the embedded simulator's scaled clock, a standalone simulator's scale when the caller gives it, else the wall clock
  let processScale = 1;

  let simulator: Simulator | undefined;
  let simProcess: SimulatorProcess | undefined;
  let memoryLine: MemoryLine | undefined;
  const usesSim = config.connections.some((c) => c.endpoint === 'sim');
  const subscriptions: Subscription[] = [];
  const live = new Map<string, Sample>();
  // tag → the connector that serves it
  const served = new Map<string, string>();
  let timer: NodeJS.Timeout | undefined;
  let engine: RunEngine | undefined;
  let mes: FolderMes | undefined;
  let lims: LimsSource | undefined;
  let unwatchLims: (() => void) | undefined;
  let api: ApiServer | undefined;
  let apiUrl: string | undefined;
  let identity: Identity | undefined;
  let demoUsers: DemoUser[] = [];
  const supervisionProfiles = profilesOf(loaded.config.equipment);
  // optional Sparkplug B publishing (config `mqtt`); absent: nothing is opened
  let mqttLine: LineMqtt | undefined;
  const unhookMqtt: (() => void)[] = [];
  let unwatchMes: (() => void) | undefined;
  const describedTags: TagDescription[] = [];
  // latest setpoint and supervisor samples, for the Sparkplug births (measurements are in `live`)
  const published = new Map<string, Sample>();

  // What the PLC watchdogs do (R8) is an event of the edge node: recorded on the site chain.
  const plcWatch = new PlcWatcher({
    profiles: supervisionProfiles, log, stopped: () => stopped,
    read: async (tags) => {
      const c = connectors.find((x) => x.id === served.get(tags[0]!));
      if (!c) throw new Error(`no connector serves ${tags[0]}`);
      return c.read(tags);
    },
    record: (e) => {
      log.warn({ equipment: e.equipment, event: e.event, old: e.old, new: e.new }, 'PLC watchdog');
      try {
        engine?.plcEvent({ equipment: e.equipment, event: e.event, new: { ...e.new } });
      } catch (err) {
        log.error({ err, equipment: e.equipment }, 'could not record a PLC watchdog event in the runs');
      }
      try {
        // through the storage guard: held, not lost, while the disk is full
        watchdogEvent(events.storage, { event: e.event, equipment: e.equipment, ...(e.old ? { old: { ...e.old } } : {}), new: { ...e.new } });
      } catch (err) {
        log.error({ err, equipment: e.equipment, event: e.event }, 'could not record a PLC watchdog event');
      }
    },
  });

  /*
   * The daemon, in start order; it stops in reverse (src/ops/lifecycle.ts). The order on stop is what keeps the
   * line safe, and test/integration/daemon-stop-order.int.spec.ts pins it: the API stops taking requests → the
   * heartbeats stop (each PLC's watchdog takes its line to the last known-good recipe, whatever the rest of the
   * stop takes) → the runs are interrupted (audited) → the guarded writer drains (a write under way finishes, its
   * outcome audited) → subscriptions, connectors and simulator close → the stop entry → the broker's last
   * checkpoints → the store closes, last but for the data directory's lock.
   */
  const components: Component[] = [
    {
      name: 'data-lock',
      // writable, not writable by others, and ours alone (one daemon per directory): before anything in it is opened
      start: () => {
        prepareDataDir(loaded.dataDir);
        lock = lockDataDir(loaded.dataDir);
      },
      stop: () => lock?.release(),
    },
    {
      name: 'store',
      start: () => {
        try {
          // A daemon that cannot audit must not run: opening the store may throw.
          events = openAuditSiteEvents(loaded, clock, log, 5000, { hooks: storageHooks, ...(opts.storage ? { options: opts.storage } : {}) });
        } catch (err) {
          throw startError(err, loaded.dataDir);
        }
      },
      stop: () => {
        if (events) events.close();
      },
    },
    {
      // The broker hears of the node's death after the stop entry, with the chains' last checkpoints: this stop
      // sits just above the store's. The publisher itself opens with `mqtt-feed`, once the tags its birth names
      // are described; this place holds its end.
      name: 'mqtt',
      stop: async () => {
        if (!mqttLine) return;
        try {
          for (const c of events.store.audit.checkpointAll()) mqttLine.checkpoint(c);
        } catch (err) {
          log.error({ err }, 'could not sign the last checkpoints');
        }
        await mqttLine.stop().catch((err: unknown) => log.error({ err }, 'MQTT did not stop cleanly'));
      },
    },
    {
      // site.start (after an unclean-stop entry when the previous run crashed) and site.stop on the site chain
      name: 'site-record',
      start: () => {
        try {
          events.started({ version: VERSION, configHash: loaded.hash, configFile: loaded.file });
        } catch (err) {
          throw startError(err, loaded.dataDir);
        }
        recordedStart = true;
        log.info({ site: config.site.id, line: config.line.id, config: loaded.file, configHash: loaded.hash, data: loaded.dataDir }, 'starting');
      },
      stop: (reason) => {
        if (!recordedStart) return;
        try {
          events.stopped({ reason });
        } catch (err) {
          log.error({ err }, 'could not record the stop');
        }
      },
    },
    {
      name: 'metrics',
      start: () => {
        unobserve = metrics.observeAudit(events.store);
        loopDelay.start();
        metrics.setSources({ loopDelay: () => loopDelay.snapshot(), connectors: () => connectors, store: () => events.store, writerQueue: () => writer?.pending().length ?? 0, now: () => clock.now() });
      },
      stop: () => {
        unobserve?.();
        loopDelay.stop();
      },
    },
    {
      name: 'policy',
      start: async () => {
        // the embedded default's first start: its bundle is signed as the DEMO-SETUP change by the demo QA reviewer
        // (created here, before the signature names them); any other unsigned bundle is refused by openPolicy
        const setupIdentity = new Identity({ store: events.store, clock, ...hashCost });
        demoUsers = await signEmbeddedDefault(events.store, loaded, setupIdentity, () => ensureDemoUsers(setupIdentity, config.tenants.map((t) => t.id)));
        policy = openPolicy(events.store, loaded, log);
        bundle = policy.bundle;
        // the embedded default's first start: the demo models, through the same golden gate and change control as a
        // site's — before any equipment is connected, since fitting them holds the event loop for seconds
        if (usesSim && config.simulator.embedded && policy.bundle) {
          const demoOpts = { site: config.site.id, tenants: config.tenants.map((t) => t.id), approvers: policy.bundle.content.approvers.change };
          // asked at every start (it refuses a bundle no role of which may sign a model change); loaded only when there is
          // something to fit or promote: the twin fit, PLS and the simulated ground truth are not needed by a daemon at work
          if (demoModelsPending(events.store, demoOpts)) {
            const { ensureDemoModels } = await import('./models/demo.js');
            const demo = ensureDemoModels(events.store, loaded.dataDir, demoOpts);
            const made = demo.filter((d) => d.registered.length > 0);
            if (made.length > 0) log.info({ models: made }, 'demo models registered and validated (change DEMO-SETUP)');
          }
        }
      },
    },
    {
      name: 'simulator',
      start: async () => {
        if (usesSim && config.simulator.embedded && opts.embeddedSimulator === 'memory') {
          // the plant in this process, no protocol servers: its connectors are in-memory, on the daemon's clock
          const { startMemoryLine } = await import('../connectors/memory/index.js');
          memoryLine = startMemoryLine(loaded, clock, { ...(opts.memorySeed !== undefined ? { seed: opts.memorySeed } : {}), ...(opts.memoryPlant ? { plant: opts.memoryPlant } : {}) });
          log.info({ equipment: memoryLine.plant.equipmentIds }, 'embedded plant simulator started (in memory)');
        } else if (usesSim && config.simulator.embedded && opts.embeddedSimulator === 'process') {
          simProcess = await startSimulatorProcess({ configFile: loaded.file, dataDir: loaded.dataDir, logLevel: log.level, log: log.child({ component: 'sim' }) });
          log.info({ opcua: simProcess.opcuaUrl, modbus: `${simProcess.modbusHost}:${simProcess.modbusPort}`, pid: simProcess.pid }, 'embedded plant simulator started (child process)');
        } else if (usesSim && config.simulator.embedded) {
          // loaded on demand: node-opcua's server and the plant model stay out of a daemon that does not run them
          const { startSimulator } = await import('../connectors/sim/index.js');
          simulator = await startSimulator({ config: loaded, dataDir: loaded.dataDir, log: log.child({ component: 'sim' }) });
          log.info({ opcua: simulator.opcuaUrl, modbus: `${simulator.modbusHost}:${simulator.modbusPort}` }, 'embedded plant simulator started');
        }
      },
      stop: async () => {
        memoryLine?.close();
        if (simulator) await simulator.close();
        if (simProcess) await simProcess.close();
      },
    },
    {
      // connect (each gets connectTimeoutMs, then keeps retrying in the background) and check each PLC's watchdog
      // against its heartbeat period; the heartbeats themselves start with `heartbeats`, once the daemon supervises
      name: 'connectors',
      start: async () => {
        const embeddedSim = simulator ?? simProcess;
        const sim = embeddedSim ? { opcuaUrl: embeddedSim.opcuaUrl, modbusHost: embeddedSim.modbusHost, modbusPort: embeddedSim.modbusPort } : undefined;
        // read latency is timed by a wrapper (metrics wrap a connector; they are not written into each one)
        const made = memoryLine ? [...memoryLine.connectors] : createConnectors(config, { dataDir: loaded.dataDir, clock, logger: log, ...(sim ? { sim } : {}) });
        connectors.push(...made.map((c) => metrics.instrument(c)));
        for (const c of connectors) {
          c.on((event) => {
            events.connector({ connector: c.id, event });
            if (event.type === 'state') log.info({ connector: c.id, from: event.from, to: event.to, reason: event.reason }, 'connection state');
            else log.warn({ connector: c.id, event }, 'connector event');
          });
        }
        const timeoutMs = opts.connectTimeoutMs ?? 15_000;
        await Promise.all(
          connectors.map(async (c) => {
            const connected = c.connect().then(
              () => true,
              (err: unknown) => {
                log.error({ connector: c.id, err }, 'connection failed; retrying in the background');
                return false;
              },
            );
            // the timer is cleared when the connection wins (within): left running, it held the whole start — store,
            // identities, engine — for the 15 s after a stop (1.1–1.5 MB of heap per stopped daemon in a probe)
            const ok = await within(connected, timeoutMs, false);
            if (!ok) log.warn({ connector: c.id, timeoutMs }, 'not connected yet; continuing, the connector keeps retrying');
          }),
        );
        // A PLC whose watchdog times out before the next beat cannot be kept alive: refuse to supervise it (its
        // watchdog takes it to LKG and it refuses writes) rather than pretend, and say so on the site chain.
        for (const c of connectors) {
          const mine = config.equipment.filter((e) => e.connection === c.id);
          const reported = await c.read(mine.map((e) => `${e.id}.WatchdogTimeoutMs`)).catch(() => []);
          const refused = keepAliveRefusals(mine, reported);
          for (const r of refused) {
            log.error({ equipment: r.equipment, periodMs: r.periodMs, watchdogTimeoutMs: r.watchdogTimeoutMs }, 'PLC not supervised: its watchdog times out before the next heartbeat');
            watchdogEvent(events.storage, {
              event: 'supervision_refused', equipment: r.equipment,
              detail: { heartbeat_period_ms: r.periodMs, watchdog_timeout_ms: r.watchdogTimeoutMs },
              reason: `heartbeat period ${r.periodMs} ms is not below the PLC's WatchdogTimeoutMs ${r.watchdogTimeoutMs} ms`,
            });
          }
          unsupervised.set(c.id, new Set(refused.map((r) => r.equipment)));
        }
      },
      stop: async () => {
        // stopped with `heartbeats` already; a connector never closes beating
        for (const c of connectors) c.stopHeartbeat();
        await Promise.allSettled(connectors.map((c) => c.close()));
      },
    },
    {
      // live values, the supervisor tags (what the PLC watchdogs do) and, with a broker, setpoints
      name: 'subscriptions',
      start: async () => {
        for (const c of connectors) {
          const described = await c.describe();
          for (const t of described) served.set(t.tag, c.id);
          describedTags.push(...described);
          // camera frames (ByteString) are evidence the inspection step reads with their trigger id when it inspects,
          // not values a person reads live: polling six frames a second for nothing costs the vision system, the session
          // and the heap (and, against the simulator, a rendered frame set a second)
          const tags = described.filter((t) => t.kind === 'measurement' && t.dataType !== 'ByteString').map((t) => t.tag);
          if (tags.length > 0) {
            subscriptions.push(
              await c.subscribe(tags, { intervalMs: 1000 }, (samples) => {
                for (const s of samples) live.set(s.tag, s);
                mqttLine?.samples(samples);
              }),
            );
          }
          const supervisor = described.filter((t) => t.kind === 'supervisor' && (WATCHED_SUPERVISOR_TAGS as readonly string[]).includes(t.name)).map((t) => t.tag);
          if (supervisor.length > 0) {
            const baseline = await c.read(supervisor); // baseline, and any PLC already found LOST
            for (const s of baseline) published.set(s.tag, s);
            plcWatch.observe(baseline);
            subscriptions.push(await c.subscribe(supervisor, { intervalMs: 250 }, (samples) => {
              plcWatch.observe(samples);
              for (const s of samples) published.set(s.tag, s);
              mqttLine?.samples(samples);
            }));
          }
          // with a broker, a host sees the setpoints and every supervisor tag too (a PLC going LOST, a revert, the
          // recipe in force): they are read for the broker only, so the air-gapped default polls nothing more
          if (config.mqtt) {
            const extra = described.filter((t) => t.kind === 'setpoint' || (t.kind === 'supervisor' && !supervisor.includes(t.tag))).map((t) => t.tag);
            if (extra.length > 0) {
              for (const s of await c.read(extra).catch(() => [])) published.set(s.tag, s);
              subscriptions.push(await c.subscribe(extra, { intervalMs: 1000 }, (samples) => {
                for (const s of samples) published.set(s.tag, s);
                mqttLine?.samples(samples);
              }));
            }
          }
        }
      },
      stop: async () => {
        await Promise.allSettled(subscriptions.map((s) => s.close()));
      },
    },
    {
      // The one holder of every write capability (R6/R7): policy is asked at call time, with the bundle in force;
      // batch state and reviewer come from the run engine at call time, attendance from the operator it holds.
      name: 'writer',
      start: async () => {
        processScale = simulator ? simulator.plant.timeScale : simProcess ? simProcess.timeScale : memoryLine ? memoryLine.plant.timeScale : (opts.processTimeScale ?? 1);
        writer = new GuardedWriter({
          store: events.store, site: config, connectors, clock, policy: () => bundle,
          // capping risk from the tenant's pinned twin and model validity from the registry, at call time
          ...registrySources(events.store, loaded.dataDir, config.site.id),
          batches: (tenant, batch) => engine?.batches(tenant, batch) ?? null,
          attendance: () => engine?.attended() ?? null,
          // rates of change are judged in process time: the embedded simulator runs it time_scale times faster
          ...(processScale !== 1 ? { processTimeScale: processScale } : {}),
        });
        // after connect, before ready: close intents a crash left open with what the equipment holds now
        const recovered = await writer.recover();
        if (recovered.interrupted.length > 0 || recovered.approvalsInterrupted.length > 0) log.warn({ interrupted: recovered.interrupted, approvals: recovered.approvalsInterrupted }, 'interrupted equipment writes recorded');
        log.info({ pending: writer.pending().length }, 'guarded writer ready');
      },
      // a write under way finishes, with its outcome audited, before the connectors and the store close
      stop: async () => {
        if (writer) await writer.idle();
      },
    },
    {
      // MES inbox (sample records on the embedded default's first start) and LIMS results folder
      name: 'mes-lims',
      start: () => {
        if ((simulator ?? simProcess ?? memoryLine) && config.simulator.embedded) {
          const samples = join(dirname(loaded.file), 'batches');
          if (existsSync(samples)) {
            const seeded = seedInbox(loaded.dataDir, samples);
            if (seeded.length > 0) log.info({ records: seeded.map((r) => `${r.tenant}/${r.batch}`) }, 'sample batch records put in the MES inbox');
          }
        }
        mes = openFolderMes(loaded.dataDir, { site: config });
        lims = openFolderLims(loaded.dataDir);
      },
      stop: () => {
        mes?.close();
        lims?.close();
      },
    },
    {
      // created here; its runs are recovered and stopped by `runs`, below the heartbeats, so that the hooks of
      // `mqtt-feed` and `mes-screen` see the stop's run changes
      name: 'engine',
      start: () => {
        const embedded = simulator;
        const child = simProcess;
        engine = createRunEngine({
          store: events.store, loaded, clock, writer: writer!, connectors, served, mes: mes!, lims: lims!, log: log.child({ component: 'engine' }), policy: () => bundle,
          supervision: () => plcWatch.views(), unsupervised: () => new Set([...unsupervised.values()].flatMap((s) => [...s])),
          processClock: processScale !== 1 ? scaledClock(processScale, clock) : clock,
          ...(embedded ? { startPhase: (phase: string) => embedded.plant.startPhase(phase) } : child ? { startPhase: (phase: string) => child.startPhase(phase) } : memoryLine ? { startPhase: (phase: string) => memoryLine!.plant.startPhase(phase) } : {}),
          ...(opts.pollMs !== undefined ? { pollMs: opts.pollMs } : {}),
          // the people a batch record names are checked at intake against the site's local identities, which exist
          // with the API; where people also sign in through an identity provider, someone not local is not known here
          // (their role is checked when they sign)
          ...(opts.api ? { people: peopleOf(new UserStore(events.store.db), config.api.oidc !== undefined) } : {}),
        });
      },
    },
    {
      // Sparkplug B to the plant broker, store-and-forward (only with an `mqtt` section); its end is `mqtt`'s
      name: 'mqtt-feed',
      start: async () => {
        if (!config.mqtt) return;
        // loaded only with an `mqtt` section: mqtt.js and the Sparkplug payload codec stay out of an air-gapped daemon
        const { startLineMqtt } = await import('../connectors/mqtt/index.js');
        mqttLine = startLineMqtt({
          loaded, store: events.store, clock, log: log.child({ component: 'mqtt' }), version: VERSION,
          tags: () => describedTags, current: (tag) => live.get(tag) ?? published.get(tag),
        });
        if (!mqttLine) return;
        const m = mqttLine;
        const e = engine!;
        unhookMqtt.push(
          e.onToolCall((row, run) => m.toolCall(row, run.tenant)),
          e.onChange((run) => m.runChanged(run)),
          events.store.audit.onCheckpoint((c) => m.checkpoint(c)),
        );
        log.info({ url: config.mqtt!.url, group: config.mqtt!.group_id, node: config.mqtt!.edge_node_id }, 'Sparkplug B publishing to the plant broker (store-and-forward)');
        const broker = brokerLabel(config.mqtt!.url);
        metrics.setSources({
          mqtt: () => {
            const st = m.publisher.stats();
            return { broker, connected: st.state === 'draining' || st.state === 'live', queued: st.queued, queuedBytes: st.queuedBytes, dropped: st.dropped };
          },
        });
      },
      stop: () => {
        for (const u of unhookMqtt.splice(0)) u();
      },
    },
    {
      // a record that arrives for a closed batch is not ingested: refused (or dropped as a duplicate), audited
      name: 'mes-screen',
      start: () => {
        const e = engine!;
        const m = mes!;
        const screen = (tenant: string, batch: string): void => {
          try {
            screenInboxRecord({ store: events.store, runs: e.runs, intake: m.intake }, tenant, batch, clock.now());
          } catch (err) {
            log.error({ err, tenant, batch }, 'could not screen an MES inbox record');
          }
        };
        for (const t of config.tenants) for (const l of m.list(t.id)) if (BATCH_ID_RE.test(l.batch)) screen(t.id, l.batch);
        unwatchMes = m.watch((c) => {
          if (c.kind !== 'removed' && BATCH_ID_RE.test(c.batch) && config.tenants.some((t) => t.id === c.tenant)) screen(c.tenant, c.batch);
        });
      },
      stop: () => unwatchMes?.(),
    },
    {
      // a LIMS result that arrives for a batch already released is judged against it (engine.limsChanged): a
      // specification it fails is a critical exception of the released run, for QA
      name: 'lims-watch',
      start: () => {
        const e = engine!;
        unwatchLims = lims!.watch((c) => {
          // a removed file un-fails nothing: what a released batch was found to fail stays found
          if (c.kind === 'removed' || c.batch === undefined || !config.tenants.some((t) => t.id === c.tenant)) return;
          try {
            const raised = e.limsChanged(c.tenant, c.batch);
            if (raised.length > 0) log.error({ tenant: c.tenant, batch: c.batch, exceptions: raised.map((x) => x.id), file: c.file }, 'a LIMS result fails a specification of a batch already released');
          } catch (err) {
            log.error({ err, tenant: c.tenant, batch: c.batch }, 'could not judge a LIMS result against its batch');
          }
        });
      },
      stop: () => unwatchLims?.(),
    },
    {
      // at start, a run an unclean stop left RUNNING is interrupted (it waits for a named person); at stop, the step
      // under way is interrupted (audited) before the writer drains, and a run at the approval gate keeps waiting
      name: 'runs',
      start: () => {
        const rec = engine!.recover();
        if (rec.interrupted.length > 0) log.warn({ runs: rec.interrupted }, 'runs interrupted by an unclean stop: each waits for a named person to resume it');
      },
      stop: async (reason) => {
        if (engine) await engine.stop(reason);
      },
    },
    {
      // The heartbeats say that linekeeper supervises: they start once everything that supervises is up, and stop
      // right after the API, so each PLC's watchdog takes its line to the last known-good recipe whatever the rest
      // of the stop takes (a release package being written, a write draining).
      name: 'heartbeats',
      start: () => {
        beating = true;
        // a disk that filled during start-up has failed closed already: no heartbeats until the trail is written again
        if (events.storage.outage()?.failedClosed) return;
        for (const c of connectors) c.startHeartbeat(unsupervised.get(c.id));
      },
      stop: () => {
        beating = false;
        for (const c of connectors) c.stopHeartbeat();
      },
    },
    { name: 'maintenance', start: () => startMaintenance(loaded), stop: stopMaintenance },
    {
      name: 'live-log',
      start: () => {
        timer = setInterval(() => log.info({ values: summarise(live) }, 'live values'), opts.liveLogMs ?? 5000);
        timer.unref();
      },
      stop: () => {
        if (timer) clearInterval(timer);
      },
    },
    {
      // the surface last: at a stop, no request reaches an engine, a writer or a store that is closing
      name: 'api',
      start: async () => {
        if (!opts.api) return;
        const a = config.api;
        // jose (JWT verification) only where people sign in through an identity provider; the verifier is made here
        // all the same, so that its configuration (the JWKS file) is checked at start
        const oidc = a.oidc ? new (await import('./api/oidc.js')).OidcVerifier(a.oidc, dirname(loaded.file), config.tenants.map((t) => t.id), clock) : undefined;
        identity = new Identity({ store: events.store, clock, tokenTtlMs: a.token_ttl_s * 1000, sessionMaxMs: a.session_max_s * 1000, ...identitySettings(a), ...hashCost, ...(oidc ? { oidc } : {}) });
        if (usesSim && config.simulator.embedded) {
          demoUsers = [...demoUsers, ...(await ensureDemoUsers(identity, config.tenants.map((t) => t.id)))];
          if (demoUsers.length > 0) log.warn({ users: demoUsers.map((u) => u.id) }, 'demo identities created (DEMO-SETUP); their one-time passwords are shown once by serve');
        }
        // `loaded` read at each request: a reload that applies a live section (signatures) is seen by the routes
        const parts = { engine: engine!, writer: writer!, store: events.store, get loaded() { return loaded; }, policy: { get bundle() { return policy.bundle; } }, connectors, live, supervision: () => plcWatch.views() };
        const tls = a.tls ? loadTls(a.tls, dirname(loaded.file), clock.now()) : undefined;
        api = await createApi({
          ...(tls ? { tls } : {}),
          daemon: parts, clock, users: identity, logger: log, streams: { perUser: a.streams_per_user }, ready: () => !stopped, loopDelay: () => loopDelay.snapshot(),
          metrics: { metrics, tokenFile: a.metrics_token_file },
          signInLimits: { windowMs: a.sign_in_window_s * 1000, perAddress: a.sign_in_failures_per_address, perAccount: a.sign_in_failures_per_account },
        });
        apiUrl = await api.listen(opts.api.host ?? a.host, opts.api.port ?? a.port);
        log.info({ url: apiUrl }, 'REST API listening');
      },
      stop: async () => {
        if (api) await api.close().catch((err: unknown) => log.error({ err }, 'REST API did not close cleanly'));
      },
    },
  ];

  const lifecycle = new Lifecycle({ logger: log });
  let stopping: Promise<void> | undefined;
  const stop = (reason = 'stop requested'): Promise<void> => {
    stopping ??= (async () => {
      stopped = true;
      try {
        await lifecycle.stop(reason);
      } catch (err) {
        // every component was stopped all the same; the ones that threw are named (and each was logged)
        log.error({ err, reason }, 'stopped; some components did not stop cleanly');
        throw err;
      }
      log.info({ reason }, 'stopped');
    })();
    return stopping;
  };
  try {
    await lifecycle.start(components);
  } catch (err) {
    // the lifecycle stopped what had started, in reverse
    stopped = true;
    if (recordedStart) log.info({ reason: `start failed: ${err instanceof Error ? err.message : String(err)}` }, 'stopped');
    throw err;
  }

  const ready: ReadyInfo = {
    site: config.site.id,
    line: config.line.id,
    version: VERSION,
    data: loaded.dataDir,
    endpoints: Object.fromEntries(connectors.map((c) => [c.id, c.health().endpoint])),
    connections: Object.fromEntries(connectors.map((c) => [c.id, c.health().state])),
    policy: policy.bundle?.version ?? null,
    ...(apiUrl ? { api: apiUrl } : {}),
  };
  const refuse = (reason: string, detail: Record<string, string | string[]>): ReloadResult => {
    recordSiteEvent(events.storage, { kind: 'config_change', action: 'config.reload_refused', detail: { file: loaded.file, in_force: loaded.hash, ...detail }, reason });
    log.error({ reason, ...detail }, 'configuration reload refused; the configuration in force is kept');
    return { outcome: 'refused', reason };
  };
  /** The policy bundle folder again: a new version, signed against the one in force, replaces it; anything else leaves it in force. */
  const reloadPolicy = (): string | undefined => {
    let version: string;
    try {
      version = readPolicyBundle(loaded.policyDir, loaded.config).version;
    } catch {
      version = '';
    }
    if (version !== '' && version === policy.bundle?.version) return undefined;
    const next = openPolicy(events.store, loaded, log, { inForce: policy.bundle });
    if (!next.bundle) {
      log.error('the new policy bundle was refused: the bundle in force is kept');
      return undefined;
    }
    policy = next;
    bundle = next.bundle;
    return next.bundle.version;
  };
  const reload = async (): Promise<ReloadResult> => {
    if (stopped) return { outcome: 'refused', reason: 'stopping' };
    let next: LoadedConfig;
    try {
      next = loadConfig(loaded.file, opts.dataDir !== undefined ? { dataDir: opts.dataDir } : {});
    } catch (err) {
      const code = LkError.is(err) ? err.code : 'LK_INTERNAL';
      configInvalid(events.storage, { file: loaded.file, code, issues: (LkError.is(err) ? (err.detail?.['issues'] as ConfigIssue[] | undefined) : undefined) ?? [] });
      log.error({ err }, 'configuration reload refused: the file is invalid; the configuration in force is kept');
      return { outcome: 'refused', reason: code };
    }
    const pv = reloadPolicy();
    if (next.hash === loaded.hash) return { outcome: 'unchanged', ...(pv ? { policy: pv } : {}) };
    const approval = findApproval(events.store, next.hash);
    if (!approval) return refuse('no config.apply approved this content (use `linekeeper config apply FILE --change <ref>`)', { candidate: next.hash });
    const sections = changedSections(loaded.config, next.config);
    const restart = sections.filter((s) => !(LIVE_SECTIONS as readonly string[]).includes(s));
    if (restart.length > 0) return refuse(`sections ${restart.join(', ')} change only at a restart (they would drop equipment connections)`, { candidate: next.hash, sections: restart });
    configChanged(events.storage, { file: loaded.file, oldHash: loaded.hash, newHash: next.hash, actor: approval.approver, reason: `change ${approval.changeRef} (config.apply seq ${approval.seq})` });
    loaded = next;
    stopMaintenance();
    startMaintenance(next);
    log.info({ sections, changeRef: approval.changeRef, approver: approval.approver, configHash: next.hash }, 'configuration reloaded');
    return { outcome: 'applied', sections, ...(pv ? { policy: pv } : {}) };
  };
  return {
    get loaded() { return loaded; }, ready, connectors, simulator, simulatorProcess: simProcess, memoryLine, live, stop, store: events.store, storage: events.storage, get policy() { return policy; }, writer: writer!, engine: engine!,
    supervision: () => plcWatch.views(), api, identity, demoUsers, metrics, loopDelay, get backups() { return backups; }, reload, lifecycle,
  };
}

/** `{ "press.Hardness": "118.2 N", "nir.Spectrum": "[701 values]", ... }` of good samples, bad ones by status. */
function summarise(live: ReadonlyMap<string, Sample>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [tag, s] of live) {
    const v = s.value;
    if (s.quality !== 'good') out[tag] = `(${s.status})`;
    else if (typeof v === 'number') out[tag] = `${+v.toPrecision(4)} ${s.unit}`;
    else if (v instanceof Uint8Array) out[tag] = `<${v.byteLength} bytes>`;
    else if (Array.isArray(v)) out[tag] = `[${v.length} values]`;
    else out[tag] = String(v);
  }
  return out;
}

/** A start failure as an LkError: a full disk or a read-only directory under the store is no stack trace. */
function startError(err: unknown, dataDir: string): unknown {
  return LkError.is(err) ? err : fsError(err, dataDir);
}


/** The site's local identities as the run engine asks them: who a user id is, and whether they may act now. */
function peopleOf(users: UserStore, sso: boolean): PeopleLookup {
  return (id) => {
    const u = users.get(id);
    if (!u) return sso ? undefined : null;
    return { id: u.id, name: u.name, role: u.role, tenants: u.tenants, active: !u.disabled && u.lockedAt === null };
  };
}
