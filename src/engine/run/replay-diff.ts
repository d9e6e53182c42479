/**
 * What changed between a recorded agent output and its replay, in the terms a reviewer of a new model
 * version asks about: which setpoint moves changed (value and the twin's predicted attributes of each), which
 * verdict fields changed, and — for anything else — the first JSON path where the two outputs part. Pure.
 */

/**
 * How a setpoint's proposal changed: a move only the replay proposes, a move it no longer proposes (the setpoint
 * stays where it was), another value, or the same value for another attribute or with other predictions.
 */
export type ProposalChange = 'proposed' | 'withdrawn' | 'value' | 'attribute' | 'predicted';

/** One setpoint of one agent whose proposed move differs between the recorded output and the replay. */
export interface ProposalDiff {
  agent: string;
  setpoint: string;
  unit: string;
  change: ProposalChange;
  /** Proposed value; null when that output proposed no move of this setpoint (it stays at `current`). */
  recorded: number | null;
  replayed: number | null;
  /** The setpoint's value when the agent was called (from the recorded input), or null when the input does not hold it. */
  current: number | null;
  /** The proposal's attribute (content_uniformity, takt, …); null without a proposal. */
  recordedAttribute: string | null;
  replayedAttribute: string | null;
  /** The `predicted` attributes of the proposal holding the move; null without one. */
  recordedPredicted: Record<string, number> | null;
  replayedPredicted: Record<string, number> | null;
}

/** A verdict field (or, for an output without a verdict, a top-level field other than the trace) that changed. */
export interface VerdictChange {
  field: string;
  recorded: unknown;
  replayed: unknown;
}

/** The first place two JSON values differ, depth first in the recorded value's key order. */
export interface FirstDifference {
  /** JSONPath-like: `$.proposals[0].moves[1].value`. */
  path: string;
  /** The values there; `undefined` (left out of JSON) when the key is missing on that side. */
  recorded?: unknown;
  replayed?: unknown;
}

interface MoveOf {
  attribute: string | null;
  unit: string;
  value: number;
  predicted: Record<string, number> | null;
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** Moves by `agent setpoint` over every proposal of an agent output (the first proposal wins a repeat). */
function movesOf(output: unknown): Map<string, MoveOf & { agent: string; setpoint: string }> {
  const out = new Map<string, MoveOf & { agent: string; setpoint: string }>();
  const proposals = isObject(output) && Array.isArray(output['proposals']) ? output['proposals'] : [];
  for (const p of proposals) {
    if (!isObject(p) || !Array.isArray(p['moves'])) continue;
    const agent = typeof p['agent'] === 'string' ? p['agent'] : '?';
    const predicted = isObject(p['predicted']) ? (p['predicted'] as Record<string, number>) : null;
    for (const m of p['moves']) {
      if (!isObject(m) || typeof m['setpoint'] !== 'string' || typeof m['value'] !== 'number') continue;
      const key = `${agent} ${m['setpoint']}`;
      if (out.has(key)) continue;
      out.set(key, { agent, setpoint: m['setpoint'], unit: typeof m['unit'] === 'string' ? m['unit'] : '', value: m['value'], attribute: typeof p['attribute'] === 'string' ? p['attribute'] : null, predicted });
    }
  }
  return out;
}

/**
 * The setpoint moves that differ between two agent outputs (value, attribute or predicted attributes), in the
 * recorded output's order, then the replay's new ones. `current` holds the setpoints' values when the agent
 * was called. Outputs without `proposals` have none.
 */
export function diffProposals(recorded: unknown, replayed: unknown, current: Readonly<Record<string, number>> = {}): ProposalDiff[] {
  const a = movesOf(recorded);
  const b = movesOf(replayed);
  const out: ProposalDiff[] = [];
  for (const key of new Set([...a.keys(), ...b.keys()])) {
    const r = a.get(key);
    const n = b.get(key);
    let change: ProposalChange;
    if (!r) change = 'proposed';
    else if (!n) change = 'withdrawn';
    else if (r.value !== n.value) change = 'value';
    else if (r.attribute !== n.attribute) change = 'attribute';
    else if (JSON.stringify(r.predicted) !== JSON.stringify(n.predicted)) change = 'predicted';
    else continue;
    const any = (r ?? n)!;
    out.push({
      agent: any.agent,
      setpoint: any.setpoint,
      unit: any.unit,
      change,
      recorded: r?.value ?? null,
      replayed: n?.value ?? null,
      current: Object.hasOwn(current, any.setpoint) ? current[any.setpoint]! : null,
      recordedAttribute: r?.attribute ?? null,
      replayedAttribute: n?.attribute ?? null,
      recordedPredicted: r?.predicted ?? null,
      replayedPredicted: n?.predicted ?? null,
    });
  }
  return out;
}

/**
 * The verdict fields that differ. An agent output (`{ proposals, verdict, trace }`) is compared on its
 * verdict; any other output (a re-plan) on its top-level fields other than `trace`.
 */
export function diffVerdict(recorded: unknown, replayed: unknown): VerdictChange[] {
  const pick = (o: unknown): Record<string, unknown> => {
    if (!isObject(o)) return {};
    if (Array.isArray(o['proposals']) && isObject(o['verdict'])) return o['verdict'];
    const { trace: _trace, ...rest } = o;
    return rest;
  };
  const a = pick(recorded);
  const b = pick(replayed);
  const out: VerdictChange[] = [];
  for (const field of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (JSON.stringify(a[field]) !== JSON.stringify(b[field])) out.push({ field, recorded: a[field] ?? null, replayed: b[field] ?? null });
  }
  return out;
}

function key(path: string, k: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`;
}

/** The first path where two parsed JSON values differ (including key order), or null when they are equal. */
export function firstDifference(recorded: unknown, replayed: unknown, path = '$'): FirstDifference | null {
  if (Array.isArray(recorded) && Array.isArray(replayed)) {
    for (let i = 0; i < Math.max(recorded.length, replayed.length); i++) {
      if (i >= recorded.length) return { path: `${path}[${i}]`, replayed: replayed[i] };
      if (i >= replayed.length) return { path: `${path}[${i}]`, recorded: recorded[i] };
      const d = firstDifference(recorded[i], replayed[i], `${path}[${i}]`);
      if (d) return d;
    }
    return null;
  }
  if (isObject(recorded) && isObject(replayed)) {
    const ka = Object.keys(recorded);
    const kb = Object.keys(replayed);
    for (const k of ka) {
      if (!Object.hasOwn(replayed, k)) return { path: key(path, k), recorded: recorded[k] };
      const d = firstDifference(recorded[k], replayed[k], key(path, k));
      if (d) return d;
    }
    for (const k of kb) if (!Object.hasOwn(recorded, k)) return { path: key(path, k), replayed: replayed[k] };
    // same keys, same values, another order: the bytes differ all the same
    if (ka.join('\u0000') !== kb.join('\u0000')) return { path, recorded: ka, replayed: kb };
    return null;
  }
  return recorded === replayed ? null : { path, recorded, replayed };
}
