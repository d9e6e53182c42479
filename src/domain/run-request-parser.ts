/**
 * The grammar of run requests: a recursive-descent reader over the tokens of
 * `run-request-lexer.ts` that fills a {@link Draft}; `run-request.ts` turns the
 * draft into the frozen `RunRequest`.
 *
 * Grammar (words in `run-request-vocabulary.ts`; clauses in any order, joined
 * by `,` `;` `.` `and` `with` `while` or nothing):
 *
 * ```
 * request   := (joiner | filler | clause)*
 * clause    := batch | line | autonomy | verb item | item | BARE-BATCH-ID
 * batch     := "batch" [no|number|id|:|#] ID            ID: ^[A-Z0-9][A-Z0-9-]{1,31}$ after upper-casing
 * line      := [on|at|in] "line" [no|number|:|#] N | [on|at|in] "line-N"|"lineN"   → line-N
 * autonomy  := "at" ["autonomy"] ["level"] Ln | "autonomy" [:] ["level"] (Ln | n)
 * item      := ["the"] subject [on-target] [copula] [limit] [on-target]
 * limit     := max-cmp number %          capping risk, weight RSD, defect rate
 *            | max-cmp number            acceptance value (AV)
 *            | ["within"] [±] number % [of target]                      tablet weight
 *            | between q and q | [within|in|from] q (-|to) q | bound [[,] and bound]   hardness
 * q         := number [N|kN]             (the last number of a range must carry the unit)
 * verb      := keep|hold|maintain|optimise|improve…   any attribute
 *            | maximise|increase…                     yield only, when named bare
 *            | minimise|reduce|lower…                 defect rate, takt only, when named bare
 * ```
 *
 * A verb governs the items after it up to `;`, `.`, another verb or a batch/line/autonomy
 * clause ("minimise defects and takt"); an item with its own limit or "on target" is not
 * checked against it ("maximise yield with capping risk under 2 %").
 *
 * Unknown words are an error, never skipped: an operator who wrote a limit must
 * not have it dropped. Every attribute named (with or without a limit) is an
 * objective. Pure: no I/O, no clock.
 */
import { LkError } from '../errors.js';
import type { Token } from './run-request-lexer.js';
import { AUTONOMY_LEVELS, type AutonomyLevel } from './policy.js';
import type { RunLimits } from './run-request.js';
import {
  BATCH_INFIX, COPULAS, FILLERS, FITS_DIRECTION, FORCE_UNITS, JOINERS, LINE_INFIX, MAX_COMPARATORS, MIN_COMPARATORS,
  OF_TARGET, ON_TARGET, PERCENT, SUBJECTS, VERBS, VOCABULARY,
  type Direction, type Objective, type PhraseTable, type Subject,
} from './run-request-vocabulary.js';

const BATCH_ID = /^[A-Z0-9][A-Z0-9-]{1,31}$/;
/** A bare batch id (without the word `batch`) must start with a letter and hold a digit: `B-1042`. */
const BARE_BATCH_ID = /^(?=.*\d)[a-z][a-z0-9-]{1,31}$/i;
/** Tablet testers read to a few hundred newtons; more is a slip (kN written for N). */
const HARDNESS_ABSURD_N = 1000;
const AV_ABSURD = 100;

type ScalarLimit = 'cappingRiskPct' | 'weightTolerancePct' | 'weightRsdMaxPct' | 'defectRateMaxPct' | 'avMax';
/** What the clauses of a request state, as they are read. */
export interface Draft {
  batch?: string;
  line?: string;
  autonomy?: AutonomyLevel;
  readonly objectives: Set<Objective>;
  readonly limits: RunLimits;
}

/**
 * Read every clause of `text` into `draft`.
 * @throws LkError `LK_RUN_REQUEST_INVALID` with `detail.unrecognised` and `detail.at` (see `parseRunRequest`).
 */
export function readClauses(text: string, tokens: readonly Token[], draft: Draft): void {
  new Reader(text, tokens, draft).read();
}

interface Quantity {
  readonly value: number;
  readonly text: string;
}

/** A hardness number as written and its power of ten to N (undefined: no unit written). */
interface Force {
  readonly text: string;
  readonly shift: 0 | 3 | undefined;
}

/** `lo`–`hi` in N; `lo` without a unit takes the unit of `hi` ("90-140 N"). */
function range(lo: Force, hi: Force): { min: number; max: number } {
  return { min: shiftDecimal(lo.text, lo.shift ?? hi.shift!), max: shiftDecimal(hi.text, hi.shift!) };
}

/** Recursive descent over the tokens; `pos` only moves forward once a clause is committed. */
class Reader {
  private pos = 0;
  /** The verb governing bare attributes until `;`, `.` or a batch/line/autonomy clause. */
  private verb: { readonly direction: Direction; readonly word: string } | undefined;

  constructor(
    private readonly text: string,
    private readonly toks: readonly Token[],
    private readonly draft: Draft,
  ) {}

  read(): void {
    while (this.pos < this.toks.length) {
      const t = this.tok()!;
      if (t.kind === 'sep') {
        if (t.text !== ',') this.verb = undefined;
        this.pos++;
      } else if (t.kind === 'word' && (JOINERS.has(t.lower) || FILLERS.has(t.lower))) {
        this.pos++;
      } else if (this.batch() || this.line() || this.autonomy()) {
        this.verb = undefined;
      } else if (this.verbItem() || this.item() || this.bareBatch()) {
        // read
      } else {
        throw this.fail(this.pos, 'no clause of a run request starts like this', 'unknown');
      }
    }
  }

  // ---- clauses ----

  private batch(): boolean {
    if (!this.isWord('batch')) return false;
    const start = this.pos++;
    this.take(BATCH_INFIX);
    const t = this.tok();
    if (!t || t.kind === 'sep' || (t.kind === 'word' && VOCABULARY.has(t.lower))) throw this.fail(start, 'no batch id after "batch"', 'read');
    const raw = this.chunk();
    const id = raw.toUpperCase();
    if (!BATCH_ID.test(id)) throw this.fail(start, `batch id "${raw}" is not 2–32 letters, digits and hyphens`, 'read');
    this.setOnce('batch', id, start);
    return true;
  }

  private line(): boolean {
    const k = this.isWord('on') || this.isWord('at') || this.isWord('in') ? 1 : 0;
    const t = this.tok(k);
    if (t?.kind !== 'word') return false;
    const glued = /^line-?([a-z0-9]+)$/.exec(t.lower);
    if (t.lower !== 'line' && !glued) return false;
    const start = this.pos;
    this.pos += k + 1;
    let id = glued?.[1];
    if (id === undefined) {
      this.take(LINE_INFIX);
      const v = this.tok();
      if (!v || v.kind === 'sep') throw this.fail(start, 'no line number after "line"', 'read');
      id = this.chunk().toLowerCase();
    }
    if (!/^[a-z0-9]*\d[a-z0-9]*$/.test(id)) throw this.fail(start, `line "${id}" is not a line number such as line-3`, 'read');
    this.setOnce('line', `line-${id.replace(/^0+(?=\d)/, '')}`, start);
    return true;
  }

  private autonomy(): boolean {
    const start = this.pos;
    let k = this.isWord('at') ? 1 : 0;
    let keyword = false;
    for (const w of ['autonomy', 'level']) {
      if (this.tok(k)?.kind === 'word' && this.tok(k)!.lower === w) {
        keyword = true;
        k++;
        if (this.tok(k)?.text === ':') k++;
      }
    }
    if (k === 0) return false;
    const v = this.tok(k);
    let level: string;
    if (v?.kind === 'word' && /^l\d+$/.test(v.lower)) level = v.text.toUpperCase();
    else if (keyword && v?.kind === 'num' && /^\d+$/.test(v.text)) level = `L${v.text}`;
    else if (keyword) {
      this.pos += k;
      throw this.fail(start, 'expected an autonomy level L0, L1, L2 or L3', 'read');
    }
    else return false;
    this.pos += k + 1;
    if (!(AUTONOMY_LEVELS as readonly string[]).includes(level)) {
      throw this.fail(start, `autonomy ${level} does not exist: L0 to L3 only (there is no unattended level)`, 'read');
    }
    this.setOnce('autonomy', level as AutonomyLevel, start);
    return true;
  }

  private verbItem(): boolean {
    const start = this.pos;
    const direction = this.take(VERBS);
    if (direction === undefined) return false;
    this.verb = { direction, word: this.toks[start]!.lower };
    if (!this.item()) throw this.fail(start, `say what to ${this.verb.word}, e.g. "keep weight and hardness on target"`);
    return true;
  }

  private item(): boolean {
    const start = this.pos;
    if (this.isWord('the')) this.pos++;
    const subject = this.take(SUBJECTS);
    if (!subject) {
      this.pos = start;
      return false;
    }
    let marked = this.take(ON_TARGET) !== undefined;
    const copula = this.take(COPULAS) !== undefined;
    const limited = this.limit(subject, start);
    if (this.take(ON_TARGET)) marked = true;
    if (!limited) {
      if (copula) throw this.fail(start, `expected a limit of ${subject.name} after "${this.toks[this.pos - 1]!.text}"`);
      if (subject.objective === undefined || subject.kind === 'weightRsd' || subject.kind === 'av') {
        throw this.fail(start, `${subject.name} needs a limit, e.g. "${subject.name} under 2${subject.kind === 'av' ? '' : ' %'}"`);
      }
      const d = this.verb?.direction;
      if (!marked && (d === 'max' || d === 'min') && !FITS_DIRECTION[d].has(subject.objective)) {
        throw this.fail(start, `cannot ${this.verb!.word} ${subject.name}: say "keep ${subject.name} on target" or give a limit`);
      }
    }
    if (subject.objective) this.draft.objectives.add(subject.objective);
    return true;
  }

  private bareBatch(): boolean {
    const t = this.tok();
    if (t?.kind !== 'word' || !BARE_BATCH_ID.test(t.text) || /^l\d+$/.test(t.lower)) return false;
    this.pos++;
    this.setOnce('batch', t.text.toUpperCase(), this.pos - 1);
    return true;
  }

  // ---- limits ----

  /** The limit after a subject, if any; false when none follows. */
  private limit(subject: Subject, start: number): boolean {
    switch (subject.kind) {
      case 'capping':
        return this.maxPct(start, subject.name, 'cappingRiskPct', true);
      case 'weightRsd':
        return this.maxPct(start, subject.name, 'weightRsdMaxPct', false);
      case 'defects':
        return this.maxPct(start, subject.name, 'defectRateMaxPct', false);
      case 'av':
        return this.maxAv(start, subject.name);
      case 'weight':
        return this.tolerance(start);
      case 'hardness':
        return this.hardness(start);
      case 'attribute':
        if (this.looksLikeLimit()) throw this.fail(start, `a run request cannot set a limit on ${subject.name}: the batch record's specification applies`);
        return false;
    }
  }

  private maxPct(start: number, name: string, field: ScalarLimit, below100: boolean): boolean {
    if (!this.take(MAX_COMPARATORS)) {
      if (this.looksLikeLimit()) throw this.fail(start, `${name} takes an upper limit, e.g. "${name} under 2 %"`);
      return false;
    }
    const q = this.number(start, name);
    if (!this.take(PERCENT)) throw this.fail(start, `the limit of ${name} needs a unit: "${q.text} %"`);
    this.checkPct(start, name, q, below100);
    this.setLimit(field, q.value, start);
    return true;
  }

  private maxAv(start: number, name: string): boolean {
    if (!this.take(MAX_COMPARATORS)) {
      if (this.looksLikeLimit()) throw this.fail(start, `${name} takes an upper limit, e.g. "AV under 10"`);
      return false;
    }
    const q = this.number(start, name);
    if (this.phrase(PERCENT)) throw this.fail(start, `${name} is a plain number (USP <905>), not a %`);
    if (q.value <= 0 || q.value > AV_ABSURD) throw this.fail(start, `${name} limit ${q.text} is outside 0 < AV ≤ ${AV_ABSURD}`);
    this.setLimit('avMax', q.value, start);
    return true;
  }

  private tolerance(start: number): boolean {
    const name = 'tablet weight tolerance';
    const within = this.isWord('within');
    if (within) this.pos++;
    const pm = this.tok()?.text === '±';
    if (pm) this.pos++;
    if (!within && !pm) {
      if (this.looksLikeLimit()) throw this.fail(start, 'tablet weight takes a tolerance, e.g. "weight within ±1.5 %"');
      return false;
    }
    const q = this.number(start, name);
    if (!this.take(PERCENT)) throw this.fail(start, `the ${name} is a % of target: "within ±${q.text} %"`);
    this.take(OF_TARGET);
    this.checkPct(start, name, q, false);
    this.setLimit('weightTolerancePct', q.value, start);
    return true;
  }

  private hardness(start: number): boolean {
    if (this.isWord('between')) {
      this.pos++;
      const lo = this.force(start, false);
      if (!this.isWord('and')) throw this.fail(start, 'expected "and" in "hardness between … and … N"');
      this.pos++;
      this.setHardness(start, range(lo, this.force(start, true)));
      return true;
    }
    if (this.phrase(MIN_COMPARATORS) || this.phrase(MAX_COMPARATORS)) {
      const first = this.bound(start);
      const save = this.pos;
      if (this.tok()?.text === ',') this.pos++;
      if (this.isWord('and')) this.pos++;
      if (!this.phrase(MIN_COMPARATORS) && !this.phrase(MAX_COMPARATORS)) {
        this.pos = save; // the `and` joins the next clause
        this.setHardness(start, { [first.side]: first.value });
        return true;
      }
      const second = this.bound(start);
      if (second.side === first.side) throw this.fail(start, `hardness has two ${first.side === 'min' ? 'lower' : 'upper'} bounds`);
      this.setHardness(start, { [first.side]: first.value, [second.side]: second.value });
      return true;
    }
    const prefixed = this.isWord('within') || this.isWord('in') || this.isWord('from');
    if (prefixed) this.pos++;
    if (!prefixed && !this.looksLikeLimit()) return false;
    const lo = this.force(start, false);
    if (this.tok()?.text === '-' || this.isWord('to')) this.pos++;
    else throw this.fail(start, 'expected a hardness range such as "90-140 N", "between 90 and 140 N" or "above 90 N"');
    this.setHardness(start, range(lo, this.force(start, true)));
    return true;
  }

  /** One hardness number and its unit (optional on the first number of a range). */
  private force(start: number, unitRequired: boolean): Force {
    const q = this.number(start, 'hardness');
    const shift = this.take(FORCE_UNITS);
    if (shift === undefined && unitRequired) {
      const got = this.tok();
      throw this.fail(start, `hardness needs a unit, N or kN${got && got.kind !== 'sep' ? ` (not "${got.text}")` : ''}`);
    }
    return { text: q.text, shift };
  }

  private bound(start: number): { side: 'min' | 'max'; value: number } {
    const side = this.take(MIN_COMPARATORS) ? 'min' : 'max';
    if (side === 'max') this.take(MAX_COMPARATORS);
    const f = this.force(start, true);
    return { side, value: shiftDecimal(f.text, f.shift!) };
  }

  private setHardness(start: number, b: { min?: number; max?: number }): void {
    const h = (this.draft.limits.hardnessN ??= {});
    for (const side of ['min', 'max'] as const) {
      const v = b[side];
      if (v === undefined) continue;
      if (!(v > 0) || v > HARDNESS_ABSURD_N) throw this.fail(start, `hardness ${side} ${v} N is outside 0 < hardness ≤ ${HARDNESS_ABSURD_N} N`);
      if (h[side] !== undefined) throw this.fail(start, `the hardness ${side} is given twice`);
      h[side] = v;
    }
    if (h.min !== undefined && h.max !== undefined && !(h.min < h.max)) throw this.fail(start, `hardness min ${h.min} N is not below max ${h.max} N`);
  }

  // ---- pieces ----

  private number(start: number, name: string): Quantity {
    const t = this.tok();
    const next = this.tok(1);
    if (t?.text === '-' && t.kind === 'sym' && next?.kind === 'num' && next.at === t.end) {
      throw this.fail(start, `${name}: a negative number (-${next.text}) is not a limit`);
    }
    if (t?.kind !== 'num') throw this.fail(start, `${name}: expected a number${t ? ` instead of "${t.text}"` : ''}`);
    this.pos++;
    return { value: Number(t.text), text: t.text };
  }

  private checkPct(start: number, name: string, q: Quantity, below100: boolean): void {
    if (!(q.value > 0)) throw this.fail(start, `${name} limit ${q.text} % is not above 0 %`);
    if (below100 ? q.value >= 100 : q.value > 100) throw this.fail(start, `${name} limit ${q.text} % is absurd (${below100 ? 'not below' : 'above'} 100 %)`);
  }

  private setLimit(field: ScalarLimit, value: number, start: number): void {
    if (this.draft.limits[field] !== undefined) throw this.fail(start, `the ${LIMIT_NAMES[field]} limit is given twice`);
    this.draft.limits[field] = value;
  }

  private setOnce<K extends 'batch' | 'line' | 'autonomy'>(key: K, value: NonNullable<Draft[K]>, start: number): void {
    if (this.draft[key] !== undefined) throw this.fail(start, `the ${key} is given twice (${this.draft[key]} and ${value})`, 'read');
    this.draft[key] = value;
  }

  /** A comparator, a number, `±`, a dash, or within/between/from before a number: the start of a limit. */
  private looksLikeLimit(): boolean {
    const t = this.tok();
    if (!t) return false;
    if (t.kind === 'num' || t.text === '±' || t.text === '-' || this.phrase(MAX_COMPARATORS) || this.phrase(MIN_COMPARATORS)) return true;
    const n = this.tok(1);
    return ['within', 'between', 'from'].includes(t.lower) && (n?.kind === 'num' || n?.text === '±' || n?.text === '-');
  }

  private tok(k = 0): Token | undefined {
    return this.toks[this.pos + k];
  }

  private isWord(w: string): boolean {
    const t = this.tok();
    return t?.kind === 'word' && t.lower === w;
  }

  /** Longest phrase of `table` at `pos` (numbers never match a phrase word). */
  private phrase<T>(table: PhraseTable<T>): { value: T; len: number } | undefined {
    let best: { value: T; len: number } | undefined;
    for (const [p, value] of table) {
      if (best && p.length <= best.len) continue;
      if (p.every((w, k) => this.tok(k) !== undefined && this.tok(k)!.kind !== 'num' && this.tok(k)!.lower === w)) best = { value, len: p.length };
    }
    return best;
  }

  private take<T>(table: PhraseTable<T>): T | undefined {
    const m = this.phrase(table);
    if (m) this.pos += m.len;
    return m?.value;
  }

  /** The raw text of the chunk at `pos` (`2026-11` was split into pieces by the lexer), consumed. */
  private chunk(): string {
    const first = this.tok()!;
    let e = this.pos;
    while (this.toks[e]?.chunk === first.chunk) e++;
    this.pos = e;
    return this.text.slice(first.at, this.toks[e - 1]!.end);
  }

  /**
   * An `LK_RUN_REQUEST_INVALID` naming the clause that starts at token `start`. `span` says how far its
   * text runs: `read` — the tokens read so far (batch, line, autonomy: short fixed clauses); `clause` — on
   * to the next `,` `;` `.` after where reading stopped (a limit: the operator sees the whole phrase);
   * `unknown` — to the next separator or joiner word (nothing recognised the clause).
   */
  private fail(start: number, why: string, span: 'read' | 'clause' | 'unknown' = 'clause'): LkError {
    let e = span === 'unknown' ? start + 1 : Math.max(start + 1, Math.min(this.pos + (span === 'clause' ? 1 : 0), this.toks.length));
    if (span !== 'read') {
      while (e < this.toks.length) {
        const t = this.toks[e]!;
        if (t.kind === 'sep' || (span === 'unknown' && t.kind === 'word' && JOINERS.has(t.lower))) break;
        e++;
      }
    }
    const at = this.toks[start]!.at;
    const unrecognised = this.text.slice(at, this.toks[e - 1]!.end);
    return new LkError('LK_RUN_REQUEST_INVALID', `cannot read "${unrecognised}" at ${at}: ${why}`, { unrecognised, at });
  }
}

const LIMIT_NAMES: Readonly<Record<ScalarLimit, string>> = {
  cappingRiskPct: 'capping risk',
  weightTolerancePct: 'tablet weight tolerance',
  weightRsdMaxPct: 'weight RSD',
  defectRateMaxPct: 'defect rate',
  avMax: 'acceptance value',
};

/** `text` (a plain decimal) × 10^shift without binary rounding: "0.14" kN → 140 N, not 140.00000000000003. */
function shiftDecimal(text: string, shift: 0 | 3): number {
  if (shift === 0) return Number(text);
  const [int = '', frac = ''] = text.split('.');
  const digits = int + frac.padEnd(shift, '0');
  const point = int.length + shift;
  const rest = digits.slice(point);
  return Number(`${digits.slice(0, point) || '0'}${rest ? `.${rest}` : ''}`);
}
