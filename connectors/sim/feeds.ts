/**
 * Raw data of the simulated NIR analyser and inspection cameras: on every new
 * scan a spectrum, on every new trigger a six-camera frame set, drawn with the
 * pure generators of src/twin (nirSample, renderFrameSet) from the plant's
 * current true state, with the simulator's seeded stream. The truth behind
 * each one (potency per spectrum id, defect class per trigger id) is kept for
 * the last {@link HISTORY} ids so tests can score what linekeeper read against
 * what the plant made, without a protocol.
 *
 * Cost: at most one spectrum and one frame set per PLC scan (the newest; a
 * scan or trigger that an earlier one in the same PLC scan overtook is never
 * on the wire, as on a station that publishes only its latest result). A
 * spectrum is computed only when first read, from the draws of its scan; a
 * frame set (6 × 640×480, 1.8 MB) is rendered only when one of its frames is
 * first read, from a seed drawn for its trigger, and only the newest is held.
 */
import type { Rng } from '../../src/clock.js';
import { LkError } from '../../src/errors.js';
import { nirSample, skipNirSample, WAVELENGTHS_NM } from '../../src/twin/nir/spectra.js';
import { createRng } from '../../src/clock.js';
import { DEFECT_CLASSES, HEIGHT, renderFrameSet, WIDTH, type DefectClass } from '../../src/twin/vision/frames.js';
import { encodeFrame } from '../opcua/frames.js';
import type { Value } from './dynamics.js';
import type { TrueParameters } from './truth.js';

/** Ids of the last spectra and triggers whose truth is kept. */
export const HISTORY = 4096;

export type Defect = Exclude<DefectClass, 'good'>;
/** Rates of each defect class, % of tablets. */
export type DefectRates = Readonly<Partial<Record<Defect, number>>>;

/** How the base (non-capping) defect rate of the truth splits over the other classes. */
export const BASE_DEFECT_SHARES: Readonly<Record<Exclude<Defect, 'capped'>, number>> = Object.freeze({
  chipped: 0.35,
  sticking: 0.2,
  coating_defect: 0.2,
  foreign_particle: 0.15,
  broken: 0.1,
});

const DEFECTS = DEFECT_CLASSES.filter((c): c is Defect => c !== 'good');

/** Batch phases in which the probe looks into the blender rather than at tablets. */
const BLEND_PHASE = /^BLEND/i;

export interface NirScanTruth {
  readonly spectrumId: number;
  /** True API content where the probe looked, % label claim. */
  readonly potencyPct: number;
  /** Blend (BatchPhase BLEND…: local concentration, scattered by the blend RSD) or tablet (the batch's true potency). */
  readonly source: 'blend' | 'tablet';
  /** Wall-clock ms of the scan (the OPC UA source timestamp). */
  readonly at: number;
}

export interface TriggerTruth {
  readonly triggerId: number;
  readonly label: DefectClass;
  readonly at: number;
}

export interface FeedContext {
  readonly truth: TrueParameters;
  readonly phase: string;
  /** Wall-clock ms. */
  readonly now: number;
  readonly injected: DefectRates;
}

/** The raw-data side of one equipment. */
export interface Feed {
  /** After the equipment's model stepped: publish new data if it produced some. */
  update(state: Readonly<Record<string, number>>, ctx: FeedContext): void;
  /** Readings that override the model's (same tag names as the configuration). */
  readonly readings: Readonly<Record<string, Value>>;
  /** Tags whose value is an acquisition: their source timestamp is {@link acquiredAt}. */
  readonly stamped: ReadonlySet<string>;
  /** Wall-clock ms of the current data. */
  readonly acquiredAt: number;
  /** +1 on every publication (two in the same ms stay distinguishable). */
  readonly seq: number;
}

class History<T> {
  private readonly map = new Map<number, T>();
  add(id: number, v: T): void {
    this.map.delete(id);
    this.map.set(id, v);
    if (this.map.size > HISTORY) this.map.delete(this.map.keys().next().value!);
  }
  get(id: number): T | undefined {
    return this.map.get(id);
  }
}

const WAVELENGTHS = Float64Array.from(WAVELENGTHS_NM);

export class NirFeed implements Feed {
  readings: Readonly<Record<string, Value>> = { Wavelengths: WAVELENGTHS };
  readonly stamped: ReadonlySet<string> = new Set(['Spectrum', 'SpectrumId']);
  acquiredAt = 0;
  seq = 0;
  private id = -1;
  private readonly history = new History<NirScanTruth>();
  constructor(private readonly rng: Rng) {}

  update(st: Readonly<Record<string, number>>, ctx: FeedContext): void {
    const scans = st.scans ?? 0;
    if (scans === this.id) return;
    const blend = BLEND_PHASE.test(ctx.phase);
    const potencyPct = blend ? (st.blendTrue ?? 100) : ctx.truth.nir.potencyPct;
    // the spectrum is the scan's draws of the feed's stream, computed when first read: the stream moves on past
    // them now (skipNirSample), and a clone taken before draws them then — the same values as drawn at the scan
    const at = this.rng.clone();
    skipNirSample(this.rng);
    let spectrum: Float64Array | undefined;
    const readings: Record<string, Value> = { SpectrumId: scans, Wavelengths: WAVELENGTHS };
    Object.defineProperty(readings, 'Spectrum', { get: () => (spectrum ??= nirSample(potencyPct, at).spectrum), enumerable: true, configurable: true });
    this.id = scans;
    this.acquiredAt = ctx.now;
    this.seq++;
    this.readings = readings;
    this.history.add(scans, { spectrumId: scans, potencyPct, source: blend ? 'blend' : 'tablet', at: ctx.now });
  }

  truth(spectrumId: number): NirScanTruth | undefined {
    return this.history.get(spectrumId);
  }
}

/**
 * Defect rates (%) at the camera station: capping from the press, the
 * truth's base rate split by {@link BASE_DEFECT_SHARES}, plus injected rates.
 */
export function defectRates(cappingPct: number, baseDefectPct: number, injected: DefectRates = {}): Record<Defect, number> {
  const out = {} as Record<Defect, number>;
  for (const c of DEFECTS) out[c] = (c === 'capped' ? cappingPct : baseDefectPct * BASE_DEFECT_SHARES[c]) + (injected[c] ?? 0);
  return out;
}

/** Draw one tablet's class from rates in %; rates summing past 100 are scaled down to 100. */
export function drawDefect(rates: Readonly<Record<Defect, number>>, rng: Rng): DefectClass {
  let total = 0;
  for (const c of DEFECTS) total += Math.max(0, rates[c]);
  const u = rng.next() * Math.max(100, total);
  let acc = 0;
  for (const c of DEFECTS) {
    acc += Math.max(0, rates[c]);
    if (u < acc) return c;
  }
  return 'good';
}

const FRAME_TAGS = ['Frame1', 'Frame2', 'Frame3', 'Frame4', 'Frame5', 'Frame6'] as const;

export class VisionFeed implements Feed {
  readings: Readonly<Record<string, Value>> = {};
  readonly stamped: ReadonlySet<string> = new Set(['TriggerId', ...FRAME_TAGS]);
  acquiredAt = 0;
  seq = 0;
  private id = -1;
  private readonly history = new History<TriggerTruth>();
  /** Seeds of the triggers' pixels: a stream apart from the labels', so drawing one does not correlate with the other. */
  private readonly seeds: Rng;
  constructor(private readonly rng: Rng) {
    this.seeds = rng.fork();
  }

  update(st: Readonly<Record<string, number>>, ctx: FeedContext): void {
    const triggerId = Math.floor(st.inspected ?? 0) % 2 ** 32;
    if (triggerId === this.id) return;
    const label = drawDefect(defectRates(st.capping ?? 0, ctx.truth.vision.baseDefectPct, ctx.injected), this.rng);
    // the pixels are drawn from a stream of the trigger's own, when first read: most triggers are never looked at
    const seed = this.seeds.int(0, 0x7fffffff);
    let encoded: Uint8Array[] | undefined;
    const frames = (): Uint8Array[] =>
      (encoded ??= renderFrameSet(label, triggerId, createRng(seed)).frames.map((pixels, camera) => encodeFrame({ triggerId, camera, width: WIDTH, height: HEIGHT, pixels })));
    const readings: Record<string, Value> = { TriggerId: triggerId };
    FRAME_TAGS.forEach((tag, camera) => Object.defineProperty(readings, tag, { get: () => frames()[camera]!, enumerable: true, configurable: true }));
    this.id = triggerId;
    this.acquiredAt = ctx.now;
    this.seq++;
    this.readings = readings;
    this.history.add(triggerId, { triggerId, label, at: ctx.now });
  }

  truth(triggerId: number): TriggerTruth | undefined {
    return this.history.get(triggerId);
  }
}

/**
 * Check injected defect rates: known classes, finite, 0–100 %, summing to at
 * most 100 %. Throws LK_VALIDATION; returns a frozen copy.
 */
export function checkDefectRates(rates: DefectRates): DefectRates {
  let total = 0;
  const out: Partial<Record<Defect, number>> = {};
  for (const [c, v] of Object.entries(rates)) {
    if (!(DEFECTS as readonly string[]).includes(c)) throw new LkError('LK_VALIDATION', `"${c}" is not a defect class (${DEFECTS.join(', ')})`);
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 100) throw new LkError('LK_VALIDATION', `${c}: ${String(v)} is not a rate of 0–100 %`);
    out[c as Defect] = v;
    total += v;
  }
  if (total > 100) throw new LkError('LK_VALIDATION', `injected defect rates sum to ${total} % (> 100 %)`);
  return Object.freeze(out);
}

/** The feed of an equipment, when its configuration has the raw-data tags (older configurations run without). */
export function feedFor(type: string, tagNames: { has(name: string): boolean }, rng: Rng): NirFeed | VisionFeed | undefined {
  if (type === 'nir' && tagNames.has('Spectrum')) return new NirFeed(rng);
  if (type === 'vision' && FRAME_TAGS.some((t) => tagNames.has(t))) return new VisionFeed(rng);
  return undefined;
}
