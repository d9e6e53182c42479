/**
 * In-process monitoring, one sample at a time: OOS (outside the specification)
 * at once, OOT (inside the specification but unusual against the process's own
 * history) by an EWMA chart. Pure and incremental: `observe(state, …)` returns
 * the next state and the findings, and the state is plain JSON, so the engine
 * can persist it and a recorded run replays to the same findings.
 *
 * Why EWMA (λ = 0.2, L = 2.962) rather than Western Electric rules on an
 * individuals chart: what matters on a press is a small sustained shift (a
 * drifting fill, a worn punch). With asymptotic limits this chart has an
 * in-control ARL of about 500 and detects a 1σ shift in about 10.5 samples
 * (1.5σ: about 5.5), where a 3σ Shewhart individuals chart has ARL 370 in
 * control and about 44 samples for 1σ (15 for 1.5σ) — Lucas & Saccucci (1990),
 * tabulated in Montgomery, Introduction to Statistical Quality Control. Adding
 * the Western Electric run rules shortens the 1σ ARL but drops the in-control
 * ARL to about 90, i.e. many more false OOT exceptions for QA to close.
 *
 * The centre line is the target; σ is estimated from the average moving range
 * of the attribute's finite values (σ̂ = MR̄ / 1.128, which a level shift
 * barely moves) and the chart judges from the 10th finite sample on. σ̂ = 0
 * (identical values) leaves OOT unjudged. A change of target restarts the EWMA.
 * The ARLs above are for a known σ; with σ estimated from the run's own first
 * samples the in-control ARL is shorter (Jones, Champ & Rigdon 2001): over
 * 1,000 seeded runs of 200 in-control samples about half raise one false OOT
 * (the unit test pins the rate). Freezing σ from a validated baseline of
 * earlier batches would lengthen it; that is the engine's choice to make.
 *
 * Each kind of finding is raised once per excursion: when it starts, not again
 * for every further sample of the same excursion, and anew after the attribute
 * has come back and left again. A non-finite value is an OOS finding (rule
 * `non-finite`), once per run of non-finite values.
 *
 * Pure: no I/O, no clock, no randomness.
 */

export interface MonitorLimits {
  min: number;
  max: number;
  target: number;
  unit: string;
}

export interface Finding {
  kind: 'OOS' | 'OOT';
  attribute: string;
  /** The sample that raised it. */
  value: number;
  unit: string;
  limits: MonitorLimits;
  /** `spec-max`, `spec-min`, `non-finite`, `ewma-high`, `ewma-low`. */
  rule: string;
  text: string;
  /** 0-based index of the sample among the attribute's observations. */
  index: number;
}

type Side = 'low' | 'high';

/** One attribute's chart: plain JSON numbers, never NaN. */
export interface AttributeMonitor {
  /** Observations so far (all of them). */
  count: number;
  /** Finite observations, and the last one (for the moving range). */
  n: number;
  last: number | null;
  mrSum: number;
  /** Centre line the EWMA runs against, and the EWMA itself. */
  target: number;
  ewma: number;
  /** Open excursions. */
  oos: Side | null;
  oot: Side | null;
  nonFinite: boolean;
}

export interface MonitorState {
  attributes: Record<string, AttributeMonitor>;
}

export const EWMA_LAMBDA = 0.2;
export const EWMA_L = 2.962;
/** d2 for moving ranges of two. */
export const D2 = 1.128;
/** Finite samples before the chart judges. */
export const MIN_OOT_SAMPLES = 10;

export function initialMonitor(): MonitorState {
  return { attributes: {} };
}

const fmt = (x: number): string => String(Number(x.toFixed(3)));

/** The EWMA control limits' half-width for σ̂ (asymptotic: the limits the ARLs above are for). */
export function ewmaHalfWidth(sigma: number): number {
  return EWMA_L * sigma * Math.sqrt(EWMA_LAMBDA / (2 - EWMA_LAMBDA));
}

/**
 * Take one sample of `attribute` (e.g. `press.Hardness`) with its limits.
 * Returns the next state (the given one is not changed) and what this sample raised.
 */
export function observe(state: MonitorState, attribute: string, value: number, limits: MonitorLimits): { state: MonitorState; findings: Finding[] } {
  const prev: AttributeMonitor | undefined = Object.hasOwn(state.attributes, attribute) ? state.attributes[attribute] : undefined;
  const a: AttributeMonitor = prev
    ? { ...prev }
    : { count: 0, n: 0, last: null, mrSum: 0, target: limits.target, ewma: limits.target, oos: null, oot: null, nonFinite: false };
  const index = a.count++;
  const findings: Finding[] = [];
  const raise = (kind: Finding['kind'], rule: string, text: string): void => void findings.push({ kind, attribute, value, unit: limits.unit, limits: { ...limits }, rule, text, index });
  const u = limits.unit;

  if (!Number.isFinite(value)) {
    if (!a.nonFinite) raise('OOS', 'non-finite', `OOS ${attribute} ${value} ${u}: not a finite measurement`);
    a.nonFinite = true;
  } else {
    a.nonFinite = false;
    // OOS
    const side: Side | null = value > limits.max ? 'high' : value < limits.min ? 'low' : null;
    if (side && side !== a.oos) raise('OOS', side === 'high' ? 'spec-max' : 'spec-min', `OOS ${attribute} ${fmt(value)} ${u} ${side === 'high' ? `> ${fmt(limits.max)}` : `< ${fmt(limits.min)}`} ${u}`);
    a.oos = side;
    // OOT: EWMA against the target, σ̂ from the average moving range
    if (limits.target !== a.target) {
      a.target = limits.target;
      a.ewma = limits.target;
      a.oot = null;
    }
    if (a.last !== null) a.mrSum += Math.abs(value - a.last);
    a.last = value;
    a.n++;
    a.ewma = EWMA_LAMBDA * value + (1 - EWMA_LAMBDA) * a.ewma;
    const sigma = a.n > 1 ? a.mrSum / (a.n - 1) / D2 : 0;
    if (a.n >= MIN_OOT_SAMPLES && sigma > 0) {
      const h = ewmaHalfWidth(sigma);
      const dev = a.ewma - a.target;
      const oot: Side | null = dev > h ? 'high' : dev < -h ? 'low' : null;
      if (oot && oot !== a.oot) {
        const bound = oot === 'high' ? `> UCL ${fmt(a.target + h)}` : `< LCL ${fmt(a.target - h)}`;
        raise('OOT', oot === 'high' ? 'ewma-high' : 'ewma-low', `OOT ${attribute} EWMA ${fmt(a.ewma)} ${u} ${bound} ${u} (target ${fmt(a.target)} ${u}, σ̂ ${fmt(sigma)} ${u}, λ ${EWMA_LAMBDA}, L ${EWMA_L}; sample ${fmt(value)} ${u})`);
      }
      a.oot = oot;
    }
  }
  return { state: { attributes: { ...state.attributes, [attribute]: a } }, findings };
}
