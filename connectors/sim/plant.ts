/**
 * The protocol-agnostic plant: every equipment's setpoints, internal process
 * state, instrument readings, last known-good (LKG) recipe and the PLC-side
 * heartbeat watchdog (the PLC half of rule R8).
 *
 * Two clocks, one injected: the watchdog runs on the clock's (wall) time —
 * a PLC watchdog is wall-clock — while the process runs `timeScale` times
 * faster, so a batch of hours passes in seconds. Nothing here reads
 * Date.now() or Math.random(): with a ManualClock and a seed the plant is
 * deterministic. The OPC UA and Modbus servers are thin views over it.
 */
import type { Clock, Rng } from '../../src/clock.js';
import { createRng } from '../../src/clock.js';
import type { EquipmentConfig, TagConfig } from '../../src/config/schema.js';
import { LkError } from '../../src/errors.js';
import { MODELS, type LineView, type Value } from './dynamics.js';
import { applyDrift, initialDrift, stepDrift, type DriftState } from './drift.js';
import { checkDefectRates, feedFor, NirFeed, VisionFeed, type DefectRates, type FeedContext, type NirScanTruth, type TriggerTruth } from './feeds.js';
import { SUPERVISED, type LkgRecipe, type PlantEvent, type PlantOptions, type RevertEvent, type SupervisorState, type SupervisorStatus } from './plant-types.js';
import { DEFAULT_LKG_NUMBER, DEFAULT_LKG_SETPOINTS, lkgRecipeId, trueParameters, type TrueParameters } from './truth.js';

export type { LkgRecipe, PlantEvent, PlantOptions, RevertEvent, SupervisorState, SupervisorStatus } from './plant-types.js';
export { SUPERVISED } from './plant-types.js';

interface Unit {
  readonly cfg: EquipmentConfig;
  readonly tags: ReadonlyMap<string, TagConfig>;
  readonly rng: Rng;
  setpoints: Record<string, number>;
  state: Record<string, number>;
  readings: Record<string, Value>;
  /** Raw data (spectra, frame sets) of an analyser or camera station whose configuration has those tags. */
  readonly feed: NirFeed | VisionFeed | undefined;
  sup: {
    state: SupervisorState;
    heartbeat: number;
    lastHeartbeatAt: number | undefined;
    armed: boolean;
    watchdogTimeoutMs: number;
    activeRecipe: string;
    lkg: LkgRecipe;
    revertCount: number;
  };
}

const UINT32 = 2 ** 32;

/** Equipment types whose process state a phase start resets (the batch's material enters that unit). */
const PHASE_UNITS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  IDLE: [],
  BLEND: ['blender'],
  DRY: ['fluidbed'],
  COMPRESS: ['press', 'vision'],
  COAT: ['coater'],
  INSPECT: [],
  RELEASE: [],
  COMPLETE: [],
});

/** The simulated line. Throws LkError from every method given bad input; a refused call changes nothing. */
export class Plant {
  readonly truth: TrueParameters;
  readonly timeScale: number;
  private readonly units = new Map<string, Unit>();
  /** The first unit of each equipment type, in configuration order (what {@link LineView} shows another model). */
  private readonly firstOfType = new Map<string, Unit>();
  /** What a model sees of the rest of the line: live (it reads the units' current state), made once. */
  private readonly line: LineView = {
    state: (type) => this.firstOfType.get(type)?.state,
    setpoint: (type, name) => this.firstOfType.get(type)?.setpoints[name],
  };
  private readonly listeners = new Set<(e: PlantEvent) => void>();
  private readonly clock: Clock;
  private lastStepAt: number;
  private processMs = 0;
  private phase: string;
  private readonly driftRng: Rng | undefined;
  private readonly driftState: DriftState = initialDrift();
  private effective: TrueParameters;
  private injected: DefectRates = Object.freeze({});
  private pressSkew: Readonly<Record<string, number>> = Object.freeze({});

  constructor(opts: PlantOptions) {
    const scale = opts.timeScale ?? 1;
    if (!(scale > 0) || !Number.isFinite(scale)) throw new LkError('LK_VALIDATION', `time scale must be a positive finite number, got ${scale}`);
    if (!(opts.watchdogTimeoutMs > 0)) throw new LkError('LK_VALIDATION', `watchdog timeout must be positive, got ${opts.watchdogTimeoutMs}`);
    this.clock = opts.clock;
    this.timeScale = scale;
    this.truth = this.effective = trueParameters(opts.seed, opts.punchDiameterMm);
    this.lastStepAt = opts.clock.now();
    this.phase = opts.batchPhase ?? 'COMPRESS';
    const root = createRng(opts.seed);
    // a stream of its own, so the units' and the drift's streams stay what they were before the feeds existed
    const feedRoot = createRng(opts.seed ^ 0xfeed);
    for (const cfg of opts.equipment) {
      const tags = new Map<string, TagConfig>(cfg.tags.map((t) => [t.name, t]));
      const defaults = DEFAULT_LKG_SETPOINTS[cfg.type] ?? {};
      const setpoints: Record<string, number> = {};
      for (const t of cfg.tags) {
        if (t.kind !== 'setpoint') continue;
        const mid = t.range ? (t.range.min + t.range.max) / 2 : 0;
        const v = defaults[t.name] ?? mid;
        setpoints[t.name] = t.range ? Math.min(Math.max(v, t.range.min), t.range.max) : v;
      }
      const lkg: LkgRecipe = Object.freeze({ id: lkgRecipeId(cfg.id, DEFAULT_LKG_NUMBER), number: DEFAULT_LKG_NUMBER, setpoints: Object.freeze({ ...setpoints }) });
      const model = MODELS[cfg.type];
      this.units.set(cfg.id, {
        cfg,
        tags,
        rng: root.fork(),
        setpoints,
        state: model ? model.init(setpoints, this.truth) : {},
        readings: {},
        feed: feedFor(cfg.type, tags, feedRoot.fork()),
        sup: { state: 'ATTENDED', heartbeat: 0, lastHeartbeatAt: undefined, armed: false, watchdogTimeoutMs: opts.watchdogTimeoutMs, activeRecipe: lkg.id, lkg, revertCount: 0 },
      });
    }
    for (const u of this.units.values()) if (!this.firstOfType.has(u.cfg.type)) this.firstOfType.set(u.cfg.type, u);
    this.driftRng = opts.drift === false ? undefined : root.fork();
    const ctx = this.feedContext();
    for (const u of this.units.values()) u.feed?.update(u.state, ctx);
    for (const u of this.units.values()) this.measure(u);
  }

  /** The parameters the plant runs on now: {@link truth} with the current drift applied. */
  effectiveParameters(): TrueParameters {
    return this.effective;
  }

  /** Equipment ids in configuration order. */
  get equipmentIds(): string[] {
    return [...this.units.keys()];
  }

  equipment(id: string): EquipmentConfig {
    return this.unit(id).cfg;
  }

  /** Process milliseconds since the plant started (timeScale × wall time). */
  processTimeMs(): number {
    return this.processMs;
  }

  /**
   * One PLC scan: advance the process to now and run every watchdog. The
   * servers call it on a timer; tests on a ManualClock call it by hand.
   */
  tick(): void {
    // the watchdog is the fail-safe: a fault in a process model must never stop it
    try {
      this.step();
    } finally {
      this.checkWatchdogs();
    }
  }

  /** Advance the process to the clock's now (no watchdog). */
  step(): void {
    const now = this.clock.now();
    const dtMs = Math.max(0, now - this.lastStepAt) * this.timeScale;
    this.lastStepAt = now;
    if (dtMs === 0) return;
    this.processMs += dtMs;
    if (this.driftRng) {
      stepDrift(this.driftState, dtMs, this.driftRng);
      this.effective = this.skewed(applyDrift(this.truth, this.driftState));
    }
    const ctx = this.feedContext();
    for (const u of this.units.values()) {
      if (u.cfg.type === 'vision') u.state.injectedPct = this.injectedTotal();
      MODELS[u.cfg.type]?.step(u.state, u.setpoints, { truth: this.effective, rng: u.rng, line: this.line, dtMs });
      u.feed?.update(u.state, ctx);
      this.measure(u);
    }
  }

  /** Run every watchdog against the wall clock; reverts the equipment whose heartbeat has stood still for its timeout. */
  checkWatchdogs(): void {
    const now = this.clock.now();
    for (const [id, u] of this.units) {
      const s = u.sup;
      if (s.state === 'ATTENDED' && s.armed && s.lastHeartbeatAt !== undefined && now - s.lastHeartbeatAt >= s.watchdogTimeoutMs) {
        this.revert(id, 'watchdog');
      }
    }
  }

  /** Current value of any tag of an equipment (setpoint, measurement or supervisor tag). Throws LK_TAG_UNKNOWN. */
  read(equipmentId: string, tag: string): Value {
    const u = this.unit(equipmentId);
    const t = u.tags.get(tag);
    if (!t) throw new LkError('LK_TAG_UNKNOWN', `${equipmentId}.${tag} is not a tag of the simulator`, { tag: `${equipmentId}.${tag}` });
    if (t.kind === 'setpoint') return u.setpoints[tag] ?? 0;
    if (t.kind === 'measurement') {
      // the feed's readings override the model's, read as they are: a frame is an accessor that renders on first read
      const feed = u.feed?.readings;
      return (feed && tag in feed ? feed[tag] : u.readings[tag]) ?? 0;
    }
    const s = u.sup;
    switch (tag) {
      case 'Heartbeat':
        return s.heartbeat;
      case 'WatchdogTimeoutMs':
        return s.watchdogTimeoutMs;
      case 'SupervisorState':
        return s.state;
      case 'ActiveRecipe':
        return s.activeRecipe;
      case 'LkgRecipeId':
        return s.lkg.id;
      case 'RevertCount':
        return s.revertCount;
      default:
        return 0;
    }
  }

  /** Every tag of an equipment by name. */
  snapshot(equipmentId: string): Record<string, Value> {
    const u = this.unit(equipmentId);
    const out: Record<string, Value> = {};
    for (const name of u.tags.keys()) out[name] = this.read(equipmentId, name);
    return out;
  }

  /** The current setpoint vector of an equipment. */
  setpoints(equipmentId: string): Readonly<Record<string, number>> {
    return { ...this.unit(equipmentId).setpoints };
  }

  /** Internal (noise-free) process state of an equipment, for tests and the twin's ground truth. */
  processState(equipmentId: string): Readonly<Record<string, number>> {
    return { ...this.unit(equipmentId).state };
  }

  /**
   * A supervisory setpoint write, as the PLC judges it: refused while LOST
   * (LK_PLC_LOST), outside the tag's EURange (LK_PLC_OUT_OF_RANGE), not a
   * finite number (LK_VALUE_INVALID), not a setpoint (LK_TAG_UNKNOWN /
   * LK_TAG_NOT_WRITABLE). Accepted writes make ActiveRecipe SUPERVISED and arm the watchdog.
   */
  writeSetpoint(equipmentId: string, tag: string, value: number): void {
    this.writeSetpoints(equipmentId, { [tag]: value });
  }

  /** Several setpoints of one equipment, all or nothing (one Modbus FC16 write). Same refusals as {@link writeSetpoint}. */
  writeSetpoints(equipmentId: string, values: Readonly<Record<string, number>>): void {
    const u = this.unit(equipmentId);
    for (const [tag, value] of Object.entries(values)) {
      const t = u.tags.get(tag);
      const id = `${equipmentId}.${tag}`;
      if (!t) throw new LkError('LK_TAG_UNKNOWN', `${id} is not a tag of the simulator`, { tag: id });
      if (t.kind !== 'setpoint') throw new LkError('LK_TAG_NOT_WRITABLE', `${id} is not a setpoint`, { tag: id });
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new LkError('LK_VALUE_INVALID', `${id}: ${String(value)} is not a finite number`, { tag: id });
      if (u.sup.state === 'LOST') throw new LkError('LK_PLC_LOST', `${equipmentId} is LOST (running LKG ${u.sup.lkg.id}); re-arm before writing setpoints`, { tag: id });
      if (t.range && (value < t.range.min || value > t.range.max)) {
        throw new LkError('LK_PLC_OUT_OF_RANGE', `${id}: ${value} is outside ${t.range.min}..${t.range.max}`, { tag: id, range: t.range });
      }
    }
    Object.assign(u.setpoints, values);
    u.sup.activeRecipe = SUPERVISED;
    this.arm(u);
  }

  /**
   * The supervisor's heartbeat. Only a CHANGE of value counts as a beat: a
   * stuck counter is a dead supervisor. Throws LK_VALUE_INVALID unless a UInt32.
   */
  heartbeat(equipmentId: string, value: number): void {
    const u = this.unit(equipmentId);
    if (!Number.isInteger(value) || value < 0 || value >= UINT32) {
      throw new LkError('LK_VALUE_INVALID', `${equipmentId}.Heartbeat: ${String(value)} is not a UInt32`, { tag: `${equipmentId}.Heartbeat` });
    }
    if (value !== u.sup.heartbeat) {
      u.sup.heartbeat = value;
      u.sup.lastHeartbeatAt = this.clock.now();
      u.sup.armed = true;
    }
  }

  /**
   * A write of SupervisorState. `ATTENDED` re-arms a LOST equipment, and only
   * while heartbeats are arriving (else LK_PLC_NO_HEARTBEAT): nothing is
   * re-armed for a supervisor that is not there. `LOST` commands an immediate
   * revert to LKG (the supervisor's own fail-safe). Anything else: LK_VALUE_INVALID.
   */
  setSupervisorState(equipmentId: string, state: string): void {
    const u = this.unit(equipmentId);
    if (state === 'LOST') {
      if (u.sup.state !== 'LOST') this.revert(equipmentId, 'commanded');
      return;
    }
    if (state !== 'ATTENDED') throw new LkError('LK_VALUE_INVALID', `${equipmentId}.SupervisorState: "${state}" is neither ATTENDED nor LOST`, { tag: `${equipmentId}.SupervisorState` });
    if (u.sup.state === 'ATTENDED') return;
    const now = this.clock.now();
    const last = u.sup.lastHeartbeatAt;
    if (last === undefined || now - last >= u.sup.watchdogTimeoutMs) {
      throw new LkError('LK_PLC_NO_HEARTBEAT', `${equipmentId}: no heartbeat within ${u.sup.watchdogTimeoutMs} ms; cannot re-arm`, { tag: `${equipmentId}.SupervisorState` });
    }
    u.sup.state = 'ATTENDED';
    u.sup.armed = true;
    this.emit({ type: 'rearm', equipment: equipmentId, at: now });
  }

  supervisor(equipmentId: string): SupervisorStatus {
    const s = this.unit(equipmentId).sup;
    return { ...s, activeRecipeNumber: s.activeRecipe === SUPERVISED ? 0 : s.lkg.number };
  }

  /** Change the watchdog timeout of one equipment (or all). Throws LK_VALIDATION unless a positive integer of ms. */
  setWatchdogTimeout(ms: number, equipmentId?: string): void {
    if (!Number.isInteger(ms) || ms <= 0 || ms >= UINT32) throw new LkError('LK_VALIDATION', `watchdog timeout must be a positive integer of ms, got ${ms}`);
    for (const u of equipmentId === undefined ? this.units.values() : [this.unit(equipmentId)]) u.sup.watchdogTimeoutMs = ms;
  }

  /**
   * Install a new LKG recipe at the PLC (a QA-released recipe, done at the
   * equipment, never over the supervisory link). Unspecified setpoints keep
   * their current LKG value. Throws LK_VALIDATION / LK_TAG_* / LK_PLC_OUT_OF_RANGE.
   */
  setLkgRecipe(equipmentId: string, recipeNumber: number, setpoints: Readonly<Record<string, number>> = {}): LkgRecipe {
    const u = this.unit(equipmentId);
    if (!Number.isInteger(recipeNumber) || recipeNumber < 1 || recipeNumber > 9999) throw new LkError('LK_VALIDATION', `recipe number must be an integer 1..9999, got ${recipeNumber}`);
    for (const [tag, v] of Object.entries(setpoints)) {
      const t = u.tags.get(tag);
      if (!t || t.kind !== 'setpoint') throw new LkError(t ? 'LK_TAG_NOT_WRITABLE' : 'LK_TAG_UNKNOWN', `${equipmentId}.${tag} is not a setpoint`);
      if (!Number.isFinite(v)) throw new LkError('LK_VALUE_INVALID', `${equipmentId}.${tag}: not a finite number`);
      if (t.range && (v < t.range.min || v > t.range.max)) throw new LkError('LK_PLC_OUT_OF_RANGE', `${equipmentId}.${tag}: ${v} is outside ${t.range.min}..${t.range.max}`);
    }
    const wasLkg = u.sup.activeRecipe === u.sup.lkg.id;
    const lkg: LkgRecipe = Object.freeze({ id: lkgRecipeId(equipmentId, recipeNumber), number: recipeNumber, setpoints: Object.freeze({ ...u.sup.lkg.setpoints, ...setpoints }) });
    u.sup.lkg = lkg;
    if (wasLkg) {
      // the PLC runs its LKG recipe: installing a new one means running it, not just renaming it
      u.sup.activeRecipe = lkg.id;
      u.setpoints = { ...u.setpoints, ...lkg.setpoints };
    }
    return lkg;
  }

  /** Start a new batch: blender revolutions, drying and coating progress and counters back to zero. */
  resetBatch(equipmentId?: string): void {
    const ctx = this.feedContext();
    for (const u of equipmentId === undefined ? this.units.values() : [this.unit(equipmentId)]) {
      u.state = MODELS[u.cfg.type]?.init(u.setpoints, this.effective) ?? {};
      u.feed?.update(u.state, ctx);
      this.measure(u);
    }
  }

  /**
   * Start a phase of a new batch as the line's operator does at the HMI (ISA-88 phase start): the unit of the
   * phase starts from its initial process state (blender at 0 revolutions, fluid bed at the wet granulate's LOD,
   * coater at 0 % weight gain, inspection counters at 0 for compression) and BatchPhase reports the phase.
   * Setpoints are not touched: they are the recipe the unit runs. Throws LK_VALIDATION for an unknown phase.
   */
  startPhase(phase: string): void {
    const units = PHASE_UNITS[phase];
    if (!units) throw new LkError('LK_VALIDATION', `unknown batch phase "${phase}" (one of ${Object.keys(PHASE_UNITS).join(', ')})`, { phase });
    for (const u of this.units.values()) if (units.includes(u.cfg.type)) this.resetBatch(u.cfg.id);
    this.setBatchPhase(phase);
  }

  setBatchPhase(phase: string): void {
    this.phase = phase;
    for (const u of this.units.values()) if (u.cfg.type === 'plc') this.measure(u);
  }

  /**
   * Move the press away from its true parameters by factors (`{ sigma0: 1.4 }`: tablets 40 % stronger at the same
   * force) — a fault hook for tests: a plant the fitted twin no longer describes (model fidelity, R8); `{}` ends it.
   * Throws LK_VALIDATION for a parameter the press does not have or a factor that is not a positive finite number.
   */
  skewPress(factors: Readonly<Record<string, number>>): void {
    for (const [k, f] of Object.entries(factors)) {
      if (!Object.hasOwn(this.truth.press, k)) throw new LkError('LK_VALIDATION', `the press has no parameter "${k}"`, { parameter: k });
      if (!(typeof f === 'number' && Number.isFinite(f) && f > 0)) throw new LkError('LK_VALIDATION', `skew of ${k} must be a positive finite factor, got ${String(f)}`, { parameter: k });
    }
    this.pressSkew = Object.freeze({ ...factors });
    this.effective = this.skewed(this.driftRng ? applyDrift(this.truth, this.driftState) : this.truth);
  }

  /** Factors set by {@link skewPress}. */
  pressSkewFactors(): Readonly<Record<string, number>> {
    return this.pressSkew;
  }

  private skewed(p: TrueParameters): TrueParameters {
    const keys = Object.keys(this.pressSkew);
    if (keys.length === 0) return p;
    const press = { ...p.press } as Record<string, number>;
    for (const k of keys) press[k] = press[k]! * this.pressSkew[k]!;
    return { ...p, press: press as unknown as TrueParameters['press'] };
  }

  /**
   * Raise the camera station's defect rates (% of tablets per class, on top
   * of the press's capping and the truth's base rate) — a fault hook for
   * tests; `{}` ends it. Counters (Rejected, DefectRate) and the frame sets'
   * labels both follow. Throws LK_VALIDATION (unknown class, not 0–100 %, sum > 100 %).
   */
  injectDefects(rates: DefectRates): void {
    this.injected = checkDefectRates(rates);
  }

  /** Defect rates injected by {@link injectDefects}. */
  injectedDefects(): DefectRates {
    return this.injected;
  }

  /** Ground truth of an NIR spectrum by its SpectrumId (the last HISTORY scans), or undefined. */
  nirScan(spectrumId: number, equipmentId?: string): NirScanTruth | undefined {
    const f = this.feedOf('nir', equipmentId);
    return f instanceof NirFeed ? f.truth(spectrumId) : undefined;
  }

  /** Ground truth of a frame set by its TriggerId (the last HISTORY triggers), or undefined. */
  visionTrigger(triggerId: number, equipmentId?: string): TriggerTruth | undefined {
    const f = this.feedOf('vision', equipmentId);
    return f instanceof VisionFeed ? f.truth(triggerId) : undefined;
  }

  /**
   * When the current value of a raw-data tag (Spectrum, SpectrumId, Frame1…6,
   * TriggerId) was acquired, wall ms, and a sequence number that changes with
   * every acquisition; undefined for any other tag. The OPC UA server gives
   * these tags this source timestamp, so a client can pair them.
   */
  acquisition(equipmentId: string, tag: string): { at: number; seq: number } | undefined {
    const f = this.unit(equipmentId).feed;
    return f && f.stamped.has(tag) ? { at: f.acquiredAt, seq: f.seq } : undefined;
  }

  /** Listen to reverts and re-arms; returns the unsubscribe function. */
  on(listener: (e: PlantEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private revert(equipmentId: string, reason: RevertEvent['reason']): void {
    const u = this.unit(equipmentId);
    const now = this.clock.now();
    u.setpoints = { ...u.setpoints, ...u.sup.lkg.setpoints };
    u.sup.state = 'LOST';
    u.sup.activeRecipe = u.sup.lkg.id;
    u.sup.revertCount = (u.sup.revertCount + 1) % UINT32;
    this.emit({ type: 'revert', equipment: equipmentId, reason, at: now, revertCount: u.sup.revertCount, recipe: u.sup.lkg.id });
  }

  private arm(u: Unit): void {
    if (!u.sup.armed) {
      u.sup.armed = true;
      // a supervisor that writes without ever beating gets one timeout's grace, then the PLC reverts
      u.sup.lastHeartbeatAt ??= this.clock.now();
    }
  }

  private measure(u: Unit): void {
    const model = MODELS[u.cfg.type];
    const r = model ? model.measure(u.state, u.setpoints, { truth: this.effective, rng: u.rng, line: this.line }) : {};
    if (u.cfg.type === 'plc') r.BatchPhase = this.phase;
    const feed = u.feed?.readings;
    // a tag the feed publishes is read from the feed (read()); the model's value is kept for the others
    for (const t of u.cfg.tags) if (t.kind === 'measurement' && !(feed && t.name in feed)) u.readings[t.name] = r[t.name] ?? u.readings[t.name] ?? 0;
  }

  private feedContext(): FeedContext {
    return { truth: this.effective, phase: this.phase, now: this.clock.now(), injected: this.injected };
  }

  private injectedTotal(): number {
    let t = 0;
    for (const v of Object.values(this.injected)) t += v ?? 0;
    return t;
  }

  private feedOf(type: string, equipmentId: string | undefined): NirFeed | VisionFeed | undefined {
    if (equipmentId !== undefined) return this.unit(equipmentId).feed;
    for (const u of this.units.values()) if (u.cfg.type === type && u.feed) return u.feed;
    return undefined;
  }

  private emit(e: PlantEvent): void {
    for (const l of this.listeners) l(e);
  }

  private unit(id: string): Unit {
    const u = this.units.get(id);
    if (!u) throw new LkError('LK_NOT_FOUND', `equipment "${id}" is not simulated`, { equipment: id });
    return u;
  }
}
