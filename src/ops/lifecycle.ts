/**
 * The daemon's lifecycle as data: an ordered list of named components, started in order and stopped in reverse
 * (fastify's avvio does the same for plugins). A hand-written stop that has to mirror a long start is where
 * fail-safe bugs hide — a step forgotten on a start failure, a throw that skips the store's close, a stop that
 * runs twice. Here the order is the list, and the rules are in one place:
 *
 * - `start` starts each component in order. When one throws, that component is stopped first (it may hold
 *   part of what it opens, so its stop must cope with a partial start), then every component started before
 *   it, in reverse; then the start error is rethrown.
 * - `stop` stops the started components in reverse order, once: a second call, concurrent or later, returns
 *   the same promise. A stop that throws is logged and recorded, the rest are stopped all the same, and the
 *   errors are reported at the end (an `AggregateError` naming the components).
 * - Every phase of every component is recorded ({@link Lifecycle.history}), so a test can pin the stop order
 *   that keeps the line safe, and listeners see each phase as it happens.
 *
 * No I/O of its own: the components do it.
 */
/** One part of the daemon: what it opens at start and closes at stop. Either may be absent. */
export interface Component {
  readonly name: string;
  start?(): Promise<void> | void;
  /** Close what `start` opened, also after a start that threw part-way. `reason` is the stop's. */
  stop?(reason: string): Promise<void> | void;
}

export type LifecyclePhase = 'starting' | 'started' | 'start_failed' | 'stopping' | 'stopped' | 'stop_failed';

export interface LifecycleEvent {
  readonly component: string;
  readonly phase: LifecyclePhase;
  readonly error?: unknown;
}

/** The two levels the runner logs at (a pino logger is one). */
export interface LifecycleLogger {
  error(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface LifecycleOptions {
  /** Where a stop that throws is logged (error), and each phase (debug): the daemon's pino logger. */
  readonly logger?: LifecycleLogger;
}

/** A component whose stop threw. */
export interface StopFailure {
  readonly component: string;
  readonly error: unknown;
}

/** Starts components in order and stops the started ones in reverse, once. One instance per daemon start. */
export class Lifecycle {
  private readonly events: LifecycleEvent[] = [];
  private readonly listeners = new Set<(e: LifecycleEvent) => void>();
  /** Components whose start began (a failed one included: its stop closes what it opened), in start order. */
  private readonly begun: Component[] = [];
  private phase: 'new' | 'starting' | 'running' | 'stopping' = 'new';
  private inFlight: Promise<unknown> | undefined;
  private stopping: Promise<void> | undefined;

  constructor(private readonly opts: LifecycleOptions = {}) {}

  /**
   * Start `components` in order.
   * @throws the first start error, after the components already started (and the failed one) are stopped in
   *   reverse; an Error when called twice, or when a stop was asked for during the start (nothing more starts).
   */
  async start(components: readonly Component[]): Promise<void> {
    if (this.phase !== 'new') throw new Error('a lifecycle starts once');
    const names = new Set<string>();
    for (const c of components) {
      if (names.has(c.name)) throw new Error(`two components are named ${c.name}`);
      names.add(c.name);
    }
    this.phase = 'starting';
    for (const c of components) {
      if (this.stopping) throw new Error(`stopped during start, before ${c.name}`);
      this.begun.push(c);
      this.emit({ component: c.name, phase: 'starting' });
      const run = Promise.resolve().then(() => c.start?.());
      this.inFlight = run.catch(() => undefined);
      try {
        await run;
      } catch (err) {
        this.emit({ component: c.name, phase: 'start_failed', error: err });
        this.inFlight = undefined;
        // the stop's own failures are logged and recorded; what the caller needs is why the start failed
        await this.stop(`start failed: ${err instanceof Error ? err.message : String(err)}`).catch(() => undefined);
        throw err;
      }
      this.inFlight = undefined;
      this.emit({ component: c.name, phase: 'started' });
    }
    if (this.phase === 'starting') this.phase = 'running';
  }

  /**
   * Stop every started component in reverse order, each once; concurrent and later calls share the first
   * call's promise (and its reason). A stop asked for during the start waits for the component starting then.
   * @throws AggregateError of the {@link StopFailure}s, after every component was stopped, when any stop threw.
   */
  stop(reason = 'stop requested'): Promise<void> {
    this.stopping ??= this.stopAll(reason);
    return this.stopping;
  }

  private async stopAll(reason: string): Promise<void> {
    this.phase = 'stopping';
    if (this.inFlight) await this.inFlight;
    const failures: StopFailure[] = [];
    for (const c of [...this.begun].reverse()) {
      this.emit({ component: c.name, phase: 'stopping' });
      try {
        await c.stop?.(reason);
        this.emit({ component: c.name, phase: 'stopped' });
      } catch (err) {
        this.opts.logger?.error({ err, component: c.name }, 'component did not stop cleanly; stopping the others');
        failures.push({ component: c.name, error: err });
        this.emit({ component: c.name, phase: 'stop_failed', error: err });
      }
    }
    if (failures.length > 0) {
      throw new AggregateError(failures, `${failures.length} component(s) did not stop cleanly: ${failures.map((f) => f.component).join(', ')}`);
    }
  }

  /** Every phase of every component so far, in order. */
  history(): readonly LifecycleEvent[] {
    return [...this.events];
  }

  /** The components in the order their stop began (failed stops included). */
  stopOrder(): readonly string[] {
    return this.events.filter((e) => e.phase === 'stopping').map((e) => e.component);
  }

  /** Be told of each phase as it happens (synchronously, before the next step); returns the unsubscribe. */
  on(listener: (e: LifecycleEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(e: LifecycleEvent): void {
    this.events.push(e);
    this.opts.logger?.debug({ component: e.component, phase: e.phase }, `component ${e.phase.replace('_', ' ')}`);
    for (const l of this.listeners) {
      try {
        l(e);
      } catch (err) {
        this.opts.logger?.error({ err, component: e.component, phase: e.phase }, 'lifecycle listener failed');
      }
    }
  }
}

/** What a lifecycle shows its owner's users: the record and the phases as they happen, not the controls. */
export type LifecycleView = Pick<Lifecycle, 'history' | 'stopOrder' | 'on'>;
