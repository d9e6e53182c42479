/**
 * The words of the run-request grammar (`run-request.ts`): every phrase the
 * parser accepts is listed here, so what an operator may write is reviewable
 * in one place. Phrases are lower-case token sequences (see
 * `run-request-lexer.ts`: `%`, `±`, `≤`, `<`, `≥`, `>` are tokens of their own).
 */

/** Attributes a run can be asked to keep or improve (canonical order: output and goal use it). */
export const OBJECTIVES = ['weight', 'hardness', 'thickness', 'content_uniformity', 'dissolution', 'potency', 'defect_rate', 'takt', 'yield'] as const;
export type Objective = (typeof OBJECTIVES)[number];

type Phrase = readonly string[];
export type PhraseTable<T> = readonly (readonly [Phrase, T])[];

/** Words skipped between clauses. Nothing else is skipped: an unknown word is an error. */
export const FILLERS: ReadonlySet<string> = new Set([
  'please', 'pls', 'kindly', 'run', 'start', 'begin', 'launch', 'execute', 'process', 'go',
  'the', 'a', 'an', 'for', 'now', 'then', 'also', 'to', 'ok', 'okay', 'thanks', 'thank', 'you',
]);

/** Words that join clauses, like `,`. (`;` and `.` also end the reach of a verb.) */
export const JOINERS: ReadonlySet<string> = new Set(['and', 'with', 'while', 'whilst', 'plus']);

/** How a verb bears on a bare attribute: `max` only fits yield, `min` only what should fall. */
export type Direction = 'neutral' | 'max' | 'min';
export const VERBS: PhraseTable<Direction> = [
  ...['keep', 'keeping', 'hold', 'holding', 'maintain', 'maintaining', 'optimise', 'optimize', 'optimising', 'optimizing', 'improve', 'improving', 'control', 'controlling'].map(
    (w) => [[w], 'neutral'] as const,
  ),
  ...['maximise', 'maximize', 'maximising', 'maximizing', 'increase', 'increasing', 'raise', 'raising'].map((w) => [[w], 'max'] as const),
  ...['minimise', 'minimize', 'minimising', 'minimizing', 'reduce', 'reducing', 'lower', 'lowering', 'cut'].map((w) => [[w], 'min'] as const),
];

/**
 * What a subject is: the attribute it names (objective), which limit tail it
 * takes, and whether it needs one. Capping risk, weight RSD and AV are limits
 * only: named bare they would be a goal the run cannot hold, so they need a number.
 */
export type SubjectKind = 'weight' | 'weightRsd' | 'hardness' | 'capping' | 'defects' | 'av' | 'attribute';
export interface Subject {
  readonly kind: SubjectKind;
  readonly objective?: Objective;
  /** Name used in messages. */
  readonly name: string;
}

const s = (kind: SubjectKind, name: string, objective?: Objective): Subject => (objective ? { kind, name, objective } : { kind, name });
const WEIGHT = s('weight', 'tablet weight', 'weight');
const RSD = s('weightRsd', 'weight RSD', 'weight');
const HARDNESS = s('hardness', 'hardness', 'hardness');
const CAPPING = s('capping', 'capping risk');
const DEFECTS = s('defects', 'defect rate', 'defect_rate');
const AV = s('av', 'acceptance value (AV)', 'content_uniformity');

export const SUBJECTS: PhraseTable<Subject> = [
  [['weight'], WEIGHT],
  [['tablet', 'weight'], WEIGHT],
  [['tablet-weight'], WEIGHT],
  [['weight', 'rsd'], RSD],
  [['tablet', 'weight', 'rsd'], RSD],
  [['rsd', 'of', 'weight'], RSD],
  [['rsd', 'of', 'tablet', 'weight'], RSD],
  [['hardness'], HARDNESS],
  [['tablet', 'hardness'], HARDNESS],
  [['breaking', 'force'], HARDNESS],
  [['capping'], CAPPING],
  [['capping', 'risk'], CAPPING],
  [['capping', 'rate'], CAPPING],
  [['predicted', 'capping'], CAPPING],
  [['predicted', 'capping', 'risk'], CAPPING],
  [['risk', 'of', 'capping'], CAPPING],
  [['defects'], DEFECTS],
  [['defect', 'rate'], DEFECTS],
  [['defect-rate'], DEFECTS],
  [['defect_rate'], DEFECTS],
  [['av'], AV],
  [['acceptance', 'value'], AV],
  [['cu', 'av'], AV],
  [['content', 'uniformity', 'av'], AV],
  [['thickness'], s('attribute', 'thickness', 'thickness')],
  [['tablet', 'thickness'], s('attribute', 'thickness', 'thickness')],
  [['content', 'uniformity'], s('attribute', 'content uniformity', 'content_uniformity')],
  [['content-uniformity'], s('attribute', 'content uniformity', 'content_uniformity')],
  [['content_uniformity'], s('attribute', 'content uniformity', 'content_uniformity')],
  [['cu'], s('attribute', 'content uniformity', 'content_uniformity')],
  [['dissolution'], s('attribute', 'dissolution', 'dissolution')],
  [['potency'], s('attribute', 'potency', 'potency')],
  [['assay'], s('attribute', 'potency', 'potency')],
  [['takt'], s('attribute', 'takt time', 'takt')],
  [['takt', 'time'], s('attribute', 'takt time', 'takt')],
  [['takt-time'], s('attribute', 'takt time', 'takt')],
  [['yield'], s('attribute', 'yield', 'yield')],
];

/** Which bare attributes a `max` / `min` verb may govern. */
export const FITS_DIRECTION: Readonly<Record<'max' | 'min', ReadonlySet<Objective>>> = {
  max: new Set<Objective>(['yield']),
  min: new Set<Objective>(['defect_rate', 'takt']),
};

/** Upper bounds. Inclusive or not, the number is the limit: the consumers compare as the site's limits do. */
export const MAX_COMPARATORS: PhraseTable<true> = [
  ['under'], ['below'], ['less', 'than'], ['lower', 'than'], ['at', 'most'], ['no', 'more', 'than'], ['not', 'more', 'than'],
  ['not', 'above'], ['not', 'exceeding'], ['not', 'to', 'exceed'], ['up', 'to'], ['max'], ['maximum'], ['<'], ['≤'],
].map((p) => [p, true] as const);

export const MIN_COMPARATORS: PhraseTable<true> = [
  ['above'], ['over'], ['more', 'than'], ['greater', 'than'], ['higher', 'than'], ['at', 'least'], ['no', 'less', 'than'],
  ['not', 'less', 'than'], ['not', 'below'], ['min'], ['minimum'], ['>'], ['≥'],
].map((p) => [p, true] as const);

export const PERCENT: PhraseTable<true> = [['%'], ['percent'], ['pct'], ['per', 'cent']].map((p) => [p, true] as const);

/** Newton units of hardness and their factor to N, as a power of ten (exact decimal shift). */
export const FORCE_UNITS: PhraseTable<0 | 3> = [
  [['n'], 0],
  [['newton'], 0],
  [['newtons'], 0],
  [['kn'], 3],
];

/** After a weight tolerance: "within ±1.5 % of target". */
export const OF_TARGET: PhraseTable<true> = [['of', 'target'], ['of', 'the', 'target'], ['of', 'target', 'weight'], ['of', 'nominal']].map((p) => [p, true] as const);

/** "on target" and its kin: mark an attribute as kept, carry no number. */
export const ON_TARGET: PhraseTable<true> = [
  ['on', 'target'], ['at', 'target'], ['to', 'target'], ['on', 'spec'], ['in', 'spec'], ['within', 'spec'],
  ['in', 'specification'], ['within', 'specification'],
].map((p) => [p, true] as const);

/** Words allowed between a subject and its limit: "capping risk is under 2 %". */
export const COPULAS: PhraseTable<true> = [['is'], ['stays'], ['stay'], ['kept'], ['remains'], ['must', 'be'], ['must', 'stay']].map((p) => [p, true] as const);

/** After `batch`: "batch no. B-1042", "batch number B-1042", "batch id B-1042", "batch: B-1042", "batch #B-1042". */
export const BATCH_INFIX: PhraseTable<true> = [['no', '.'], ['no'], ['number'], ['nr'], ['id'], [':'], ['#']].map((p) => [p, true] as const);
export const LINE_INFIX: PhraseTable<true> = [['no', '.'], ['no'], ['number'], ['nr'], [':'], ['#']].map((p) => [p, true] as const);

/** Every word the grammar gives a meaning: none of them can be a batch id. */
export const VOCABULARY: ReadonlySet<string> = new Set([
  ...FILLERS,
  ...JOINERS,
  'batch',
  'line',
  'at',
  'on',
  'in',
  'autonomy',
  'level',
  ...[VERBS, SUBJECTS, MAX_COMPARATORS, MIN_COMPARATORS, PERCENT, FORCE_UNITS, ON_TARGET, OF_TARGET, COPULAS].flatMap((t) => t.flatMap(([p]) => p)),
]);
