/**
 * The run view, kept per run between the state changes that alter it, so that reading a run (GET /runs/{id},
 * the event stream's checks) costs a map lookup instead of the run row, ten step rows, the approval row and the
 * JSON columns parsed again on every request.
 *
 * Exactness: the engine's RunStore announces every write of what a view shows (run row, steps, approval) inside
 * the writing transaction, and the engine drops the run's frame there; a frame is only ever built outside a
 * transaction, so it never holds uncommitted (or rolled-back) state. The one thing that changes without a write
 * is time: a step that has started and not ended shows its duration so far, so the frame keeps those steps
 * apart and their durations are computed at every read.
 *
 * A frame can also keep its view serialised (the REST body) as a template: the view is encoded and validated
 * once, through the caller's encoder (the API's response schema), and only the running steps' durations — a
 * number and a string, the types the schema gives them — are spliced in per read.
 */
import { randomBytes } from 'node:crypto';
import { formatDuration } from '../../domain/run.js';
import type { RunView, StepView } from './types.js';

/** A step whose duration runs on with the clock: started, not ended. */
export interface OpenStep {
  /** Index in `view.steps`. */
  readonly index: number;
  readonly startedAt: number;
  readonly continuous: boolean;
}

/**
 * The encoder of a serialised view: validates the view and returns what is to be written as JSON (the API
 * passes its response schema's encode), its steps in the view's order. @throws whatever it throws for an
 * invalid view.
 */
export type ViewEncoder = (view: RunView) => RunView;

interface Body {
  readonly encode: ViewEncoder;
  /** The JSON text around the open steps' durations (a single part when no step is open); null: no template. */
  readonly parts: readonly string[] | null;
  /** Per gap between parts: which open step, and whether its `durationMs` or its `duration` text. */
  readonly slots: readonly { readonly open: number; readonly kind: 'ms' | 'text' }[];
}

/** One run's view between two state changes. */
export class ViewFrame {
  private body: Body | undefined;

  constructor(
    readonly tenant: string,
    /** The view as built (deep-frozen: callers share it); open steps' durations are as of the build. */
    readonly view: RunView,
    readonly open: readonly OpenStep[],
  ) {
    deepFreeze(view);
  }

  /** The view at `now`: the frozen view itself when no step is open, else a copy with the open durations. */
  at(now: number): RunView {
    if (this.open.length === 0) return this.view;
    const steps = this.view.steps.slice();
    for (const o of this.open) steps[o.index] = { ...steps[o.index]!, durationMs: now - o.startedAt, duration: formatDuration(now - o.startedAt, o.continuous) };
    return { ...this.view, steps };
  }

  /**
   * The view at `now` as JSON text, exactly `JSON.stringify(encode(this.at(now)))`. The encoding (and the
   * validation in it) runs once per frame and encoder.
   * @throws whatever `encode` throws for an invalid view
   */
  json(now: number, encode: ViewEncoder): string {
    if (this.body?.encode !== encode) this.body = template(this, encode);
    const { parts, slots } = this.body;
    if (parts === null) return JSON.stringify(encode(this.at(now)));
    if (slots.length === 0) return parts[0]!;
    let text = parts[0]!;
    for (let i = 0; i < slots.length; i++) {
      const o = this.open[slots[i]!.open]!;
      const ms = now - o.startedAt;
      text += (slots[i]!.kind === 'ms' ? JSON.stringify(ms) : JSON.stringify(formatDuration(ms, o.continuous))) + parts[i + 1]!;
    }
    return text;
  }
}

/** Markers no view can contain by chance: a NUL and a per-process nonce (JSON.stringify writes NUL as \u0000). */
const NONCE = randomBytes(12).toString('hex');
const MARKER = new RegExp(`"\\\\u0000${NONCE}:(\\d+):(ms|text)"`, 'g');
const marker = (open: number, kind: 'ms' | 'text'): string => `\u0000${NONCE}:${open}:${kind}`;

function template(frame: ViewFrame, encode: ViewEncoder): Body {
  const encoded = encode(frame.view);
  if (frame.open.length === 0) return { encode, parts: [JSON.stringify(encoded)], slots: [] };
  // the encoder validated the durations as of the build; the markers stand where later ones go
  const steps: unknown[] = encoded.steps.slice();
  frame.open.forEach((o, n) => {
    const step: Record<string, unknown> = { ...(encoded.steps[o.index] as StepView) };
    // only where the encoder wrote them (key order kept): a missing one shows below as a missing marker
    if ('durationMs' in step) step['durationMs'] = marker(n, 'ms');
    if ('duration' in step) step['duration'] = marker(n, 'text');
    steps[o.index] = step;
  });
  const text = JSON.stringify({ ...encoded, steps });
  const parts: string[] = [];
  const slots: { open: number; kind: 'ms' | 'text' }[] = [];
  let from = 0;
  for (const m of text.matchAll(MARKER)) {
    parts.push(text.slice(from, m.index));
    slots.push({ open: Number(m[1]), kind: m[2] as 'ms' | 'text' });
    from = m.index + m[0].length;
  }
  parts.push(text.slice(from));
  const unique = new Set(slots.map((s) => `${s.open}:${s.kind}`)).size === slots.length;
  if (!unique || slots.length !== 2 * frame.open.length) {
    // an encoder that dropped or renamed a duration: no template, the view is encoded at every read instead
    return { encode, parts: null, slots: [] };
  }
  return { encode, parts, slots };
}

function deepFreeze(v: unknown): void {
  if (typeof v !== 'object' || v === null || Object.isFrozen(v)) return;
  Object.freeze(v);
  for (const x of Object.values(v)) deepFreeze(x);
}

/**
 * The frames of the most recently read runs, at most `max` (least recently read dropped first); `max` 0 keeps
 * none (every read builds its view).
 */
export class ViewCache {
  private readonly frames = new Map<string, ViewFrame>();

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 0) throw new RangeError(`view cache size must be a non-negative integer, got ${max}`);
  }

  get size(): number {
    return this.frames.size;
  }

  get(id: string): ViewFrame | undefined {
    const f = this.frames.get(id);
    if (f) {
      // most recently read last: the first key is the one to evict
      this.frames.delete(id);
      this.frames.set(id, f);
    }
    return f;
  }

  set(id: string, frame: ViewFrame): void {
    if (this.max === 0) return;
    this.frames.delete(id);
    this.frames.set(id, frame);
    if (this.frames.size > this.max) this.frames.delete(this.frames.keys().next().value!);
  }

  drop(id: string): void {
    this.frames.delete(id);
  }
}
