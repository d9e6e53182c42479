/**
 * The meanings a signature may carry (21 CFR 11.50(a)(3), EU GMP Annex 11 §14): a controlled list, so that "QA
 * release of batch B-1042" means the same at every site and on every record. Each entry has a stable id, a text
 * with placeholders filled from the signed object (`{batch}`, `{run}`, …) and the purposes — the kinds of
 * signature linekeeper makes — it may be chosen for; an entry may also be limited to one decision of its purpose
 * (a release's "approve" or "reject", the status a model goes to), so that a rejection cannot be signed as a
 * release: an entry for a purpose that has decisions names one, and is offered for that decision only. A site lists
 * its own under `signatures.meanings`; a purpose it lists nothing for keeps the built-in entries below. The signer
 * picks an entry (by its id or its text as shown); a free-text comment goes beside it, never into the meaning.
 *
 * Pure: the surfaces pass the list in force and the signed object's values ({@link MEANING_VALUES}); a meaning not
 * on the list, or one whose filled words would not fit a signature's manifestation, is LK_MEANING_NOT_ALLOWED,
 * naming the entries that would do. Surfaces resolve it before any password is checked.
 */
import { LkError } from '../errors.js';

/** Every kind of signature linekeeper makes, by the act signed. */
export const SIGNATURE_PURPOSES = [
  'release', 'move', 'trail_review', 'model_change', 'policy_change', 'config_change', 'exception_close', 'run_abort', 'run_reassign', 'autonomy_raise',
  'validation_report',
] as const;
export type SignaturePurpose = (typeof SIGNATURE_PURPOSES)[number];

/** What each purpose signs, in words (for messages and the list's readers). */
export const PURPOSE_TITLES: Readonly<Record<SignaturePurpose, string>> = {
  release: 'a batch release decision (POST /approvals/apr_…)',
  move: 'a setpoint move decision (POST /approvals/pw_…)',
  trail_review: 'an audit-trail review (POST /audit/reviews)',
  model_change: 'a model status change (POST /models/{id}/promote|retire)',
  policy_change: 'a policy bundle change (linekeeper policy apply)',
  config_change: 'a site configuration change (linekeeper config apply)',
  exception_close: 'the closure of a critical or major exception (POST /exceptions/{id}/close)',
  run_abort: 'the abort of a run (POST /runs/{id}/abort)',
  run_reassign: 'the reassignment of a run\'s QA reviewer (POST /runs/{id}/reassign)',
  autonomy_raise: 'raising an autonomy level (PUT /autonomy)',
  validation_report: 'a validation report (linekeeper validate iq|oq, config report)',
};

/** The decisions an entry may be limited to, per purpose (empty: the purpose has one act, and an entry names none). */
export const PURPOSE_DECISIONS: Readonly<Record<SignaturePurpose, readonly string[]>> = {
  release: ['approve', 'reject'], move: ['approve', 'reject'], model_change: ['shadow', 'validated', 'retired'],
  trail_review: [], policy_change: [], config_change: [], exception_close: [], run_abort: [], run_reassign: [], autonomy_raise: [],
  // the report's kind
  validation_report: ['iq', 'oq', 'config'],
};

/** The placeholders each purpose fills from the object signed. */
export const PURPOSE_PLACEHOLDERS: Readonly<Record<SignaturePurpose, readonly string[]>> = {
  release: ['batch', 'run', 'approval'],
  move: ['batch', 'run', 'approval'],
  trail_review: ['batch', 'run', 'from', 'to'],
  model_change: ['model', 'from', 'to'],
  policy_change: ['change', 'version'],
  config_change: ['change'],
  exception_close: ['exception', 'kind', 'severity', 'batch', 'run'],
  run_abort: ['run', 'batch'],
  run_reassign: ['run', 'batch', 'reviewer'],
  autonomy_raise: ['target', 'from', 'to', 'change'],
  validation_report: ['version', 'site'],
};

/** What fills a purpose's placeholders (`batch` → `B-1042`); an absent or empty value leaves an entry that needs it out. */
export type MeaningValues = Readonly<Record<string, string | undefined>>;

/** What a release or a move is signed on: its batch and run (when known) and the approval's id. */
interface ApprovalValues { readonly batch: string | null | undefined; readonly run: string | null | undefined; readonly approval: string }

/**
 * The placeholders' values of the purposes signed in more than one place, from the object signed: one function per
 * purpose, used by the surface that takes the signer's choice (routes, CLI) and by the engine's fallback to the
 * built-in entry alike, so both fill the same words. (A raise's are `autonomyMeaningValues` of
 * src/store/autonomy-store.ts; a policy, configuration or validation report is signed in one place each.)
 */
export const MEANING_VALUES = {
  release: (a: ApprovalValues): MeaningValues => ({ batch: a.batch ?? undefined, run: a.run ?? undefined, approval: a.approval }),
  move: (a: ApprovalValues): MeaningValues => ({ batch: a.batch ?? undefined, run: a.run ?? undefined, approval: a.approval }),
  trail_review: (scope: { readonly run: string } | { readonly from: string; readonly to: string }, batch?: string): MeaningValues => ('run' in scope ? { run: scope.run, batch } : { from: scope.from, to: scope.to }),
  model_change: (m: { model: string; from: string; to: string }): MeaningValues => ({ model: m.model, from: m.from, to: m.to }),
  exception_close: (e: { id: string; kind: string; severity: string; batch: string; run: string }): MeaningValues => ({ exception: e.id, kind: e.kind, severity: e.severity, batch: e.batch, run: e.run }),
  run_abort: (r: { id: string; batch: string }): MeaningValues => ({ run: r.id, batch: r.batch }),
  run_reassign: (r: { id: string; batch: string }, reviewer: string): MeaningValues => ({ run: r.id, batch: r.batch, reviewer }),
} satisfies Partial<Record<SignaturePurpose, (...args: never[]) => MeaningValues>>;

export interface SignatureMeaning {
  /** Stable id, recorded beside the text (`qa-release`). */
  readonly id: string;
  /** The words, with placeholders such as `{batch}`. */
  readonly text: string;
  readonly for: readonly SignaturePurpose[];
  /** Only with this decision of its purposes: required when they have decisions (PURPOSE_DECISIONS), absent when they have none. */
  readonly decision?: string | undefined;
}

/** An entry of the list in force, and whether the site or linekeeper's built-in list gave it. */
export interface MeaningInForce extends SignatureMeaning {
  readonly source: 'site' | 'default';
}

/** A meaning as signed: the entry's id, its text filled for the object, and the text it was filled from. */
export interface ChosenMeaning {
  readonly id: string;
  readonly text: string;
  readonly template: string;
}

/** The built-in list: the wording linekeeper signed with before meanings were configurable, one purpose each. */
export const DEFAULT_SIGNATURE_MEANINGS: readonly SignatureMeaning[] = [
  { id: 'qa-release', text: 'QA release of batch {batch}', for: ['release'], decision: 'approve' },
  { id: 'qa-rejection', text: 'QA rejection of batch {batch}', for: ['release'], decision: 'reject' },
  { id: 'move-approval', text: 'Approval of setpoint change for batch {batch}', for: ['move'], decision: 'approve' },
  { id: 'move-rejection', text: 'Rejection of setpoint change for batch {batch}', for: ['move'], decision: 'reject' },
  { id: 'trail-review-run', text: 'Audit trail of batch {batch}, run {run} reviewed (EU GMP Annex 11 §9)', for: ['trail_review'] },
  { id: 'trail-review-period', text: 'Audit trail from {from} to {to} reviewed (EU GMP Annex 11 §9)', for: ['trail_review'] },
  { id: 'model-shadow', text: 'Approved for shadow use: the model observes and predicts, nothing it proposes is written', for: ['model_change'], decision: 'shadow' },
  { id: 'model-validated', text: 'Approved as validated: proposals from this model may move equipment within policy', for: ['model_change'], decision: 'validated' },
  { id: 'model-retire', text: 'Retired: the model is withdrawn from any use', for: ['model_change'], decision: 'retired' },
  { id: 'policy-approval', text: 'approved: this policy bundle version may take effect on the line', for: ['policy_change'] },
  { id: 'config-approval', text: 'approved: this site configuration may take effect on the line', for: ['config_change'] },
  { id: 'exception-closure', text: 'Exception {exception} of batch {batch} reviewed and closed', for: ['exception_close'] },
  { id: 'run-abort', text: 'Abort of run {run} of batch {batch}: not a release', for: ['run_abort'] },
  { id: 'run-reassign', text: 'QA reviewer of run {run} (batch {batch}) reassigned to {reviewer}', for: ['run_reassign'] },
  { id: 'autonomy-raise', text: 'raise autonomy of {target} {from} → {to} ({change})', for: ['autonomy_raise'] },
  { id: 'iq-executed', text: 'Installation qualification of linekeeper {version} executed; results as recorded', for: ['validation_report'], decision: 'iq' },
  { id: 'oq-executed', text: 'Operational qualification of linekeeper {version} executed; results as recorded', for: ['validation_report'], decision: 'oq' },
  { id: 'config-specification', text: 'Configuration specification of linekeeper {version} as installed; reviewed for approval', for: ['validation_report'], decision: 'config' },
];

/** An entry's id: lower-case words joined by dashes. */
export const MEANING_ID_RE = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
/** Longest text of an entry, placeholders unfilled (what a site may configure; filled, it must still fit {@link MEANING_FILLED_MAX}). */
export const MEANING_TEXT_MAX = 150;
/** Longest meaning an audit entry's signature manifestation holds (src/audit/entry-schema.ts: `AuditSignature.meaning`). */
export const MANIFESTATION_MEANING_MAX = 200;
/** What a manifestation may put before the words, for the signatures whose words alone do not name the act ("approve: QA release of batch B-1042"). */
export const MANIFESTATION_ACTS = ['approve', 'reject', 'abort', 'reassign'] as const;
export type ManifestationAct = (typeof MANIFESTATION_ACTS)[number];
/**
 * Longest meaning as filled for a record: with the longest "<act>: " before it, it still fits a manifestation, so a
 * manifestation always holds the whole of the words signed. A longer one is refused ({@link chooseMeaning}).
 */
export const MEANING_FILLED_MAX = MANIFESTATION_MEANING_MAX - Math.max(...MANIFESTATION_ACTS.map((a) => `${a}: `.length));
/** Longest free-text comment beside a meaning. */
export const MEANING_COMMENT_MAX = 1000;

const PLACEHOLDER = /\{([a-z]+)\}/g;

/** The placeholders a text uses, in order (`{batch}` → batch). */
export function placeholdersOf(text: string): string[] {
  return [...text.matchAll(PLACEHOLDER)].map((m) => m[1]!);
}

/**
 * The list in force: the site's entries, and for each purpose the site lists nothing for, the built-in ones — so a
 * site that words only its releases keeps the model, policy and other meanings it had.
 */
export function meaningsInForce(site: readonly SignatureMeaning[] | undefined): MeaningInForce[] {
  const own = site ?? [];
  const covered = new Set(own.flatMap((m) => m.for));
  return [
    ...own.map((m) => ({ ...m, source: 'site' as const })),
    ...DEFAULT_SIGNATURE_MEANINGS.filter((m) => !m.for.some((p) => covered.has(p))).map((m) => ({ ...m, source: 'default' as const })),
  ];
}

/** `text` with its placeholders filled from `values`, or null when one has no value for this object. */
export function fillMeaning(text: string, values: MeaningValues): string | null {
  let missing = false;
  const out = text.replace(PLACEHOLDER, (_, k: string) => {
    const v = values[k];
    if (typeof v !== 'string' || v.length === 0) missing = true;
    return v ?? '';
  });
  return missing ? null : out;
}

/**
 * The meaning of a signature's manifestation: the words signed, after the act when the words alone do not name it.
 * Words of at most {@link MEANING_FILLED_MAX} characters (all that {@link chooseMeaning} returns) always fit it whole.
 */
export function manifestationMeaning(text: string, act?: ManifestationAct): string {
  return act === undefined ? text : `${act}: ${text}`;
}

/** The entries of the purpose and decision whose placeholders the object fills, filled — however long. */
function applicable(list: readonly SignatureMeaning[], purpose: SignaturePurpose, values: MeaningValues, decision: string | undefined): ChosenMeaning[] {
  const decided = PURPOSE_DECISIONS[purpose].length > 0;
  const out: ChosenMeaning[] = [];
  for (const m of list) {
    if (!m.for.includes(purpose)) continue;
    // a purpose with decisions: only an entry of this very decision (one without a decision would sign either)
    if (decided ? m.decision === undefined || m.decision !== decision : m.decision !== undefined) continue;
    const text = fillMeaning(m.text, values);
    if (text !== null) out.push({ id: m.id, text, template: m.text });
  }
  return out;
}

const fits = (m: ChosenMeaning): boolean => m.text.length <= MEANING_FILLED_MAX;

/**
 * The entries of `list` a signer may choose for `purpose` on this object: those of the purpose — for a purpose with
 * decisions, those of `decision` only (none when it is not given) — whose placeholders the object fills and whose
 * filled words fit a manifestation ({@link MEANING_FILLED_MAX}), each with its text filled.
 */
export function meaningsFor(list: readonly SignatureMeaning[], purpose: SignaturePurpose, values: MeaningValues, decision?: string): ChosenMeaning[] {
  return applicable(list, purpose, values, decision).filter(fits);
}

const norm = (s: string): string => s.normalize('NFC').replace(/\s+/g, ' ').trim().toLowerCase();

/**
 * The meaning a signer chose — an entry's id, or its text as shown (spacing and case aside) — among the entries for
 * this act; without a choice, the first of them (for the acts whose requests may leave it out). A client sends the
 * words it showed, so a list changed by a reload in between refuses them rather than signing words nobody saw.
 * @throws LkError LK_MEANING_NOT_ALLOWED: not one of them (or none applies), or its words as filled for this record
 *   are longer than {@link MEANING_FILLED_MAX} (`detail.length`, `detail.max`); `detail.meanings` lists those that do.
 */
export function chooseMeaning(list: readonly SignatureMeaning[], purpose: SignaturePurpose, chosen: string | undefined, values: MeaningValues, decision?: string): ChosenMeaning {
  const all = applicable(list, purpose, values, decision);
  const options = all.filter(fits);
  const what = `${PURPOSE_TITLES[purpose].replace(/ \(.*\)$/, '')}${decision !== undefined ? ` (${decision})` : ''}`;
  const detail = { purpose, ...(decision !== undefined ? { decision } : {}), ...(chosen !== undefined ? { meaning: chosen } : {}), meanings: options.map((o) => ({ id: o.id, text: o.text })) };
  const key = chosen === undefined ? undefined : norm(chosen);
  const hit = chosen === undefined ? undefined : all.find((o) => o.id === chosen.trim()) ?? all.find((o) => norm(o.text) === key);
  // the words filled for this record would not fit a manifestation whole: refused, never cut
  const long = hit ?? (options.length === 0 ? all[0] : undefined);
  if (long && !fits(long)) {
    throw new LkError('LK_MEANING_NOT_ALLOWED', `${long.id} filled for this record is ${long.text.length} characters, more than the ${MEANING_FILLED_MAX} a signature's meaning may have${options.length ? `: choose one of ${options.map((o) => `${o.id} ("${o.text}")`).join(', ')}` : ': shorten its words (signatures.meanings)'}`, { ...detail, length: long.text.length, max: MEANING_FILLED_MAX });
  }
  if (options.length === 0) throw new LkError('LK_MEANING_NOT_ALLOWED', `the site's list of signature meanings has none for ${what} on this record: add one (signatures.meanings)`, detail);
  if (chosen === undefined) return options[0]!;
  if (hit) return hit;
  throw new LkError('LK_MEANING_NOT_ALLOWED', `"${chosen}" is not a meaning the site allows for ${what}: choose one of ${options.map((o) => `${o.id} ("${o.text}")`).join(', ')}`, detail);
}

/** One problem of a configured list: where in `signatures.meanings` (an index and a field) and what. */
export interface MeaningListIssue {
  readonly path: (string | number)[];
  readonly message: string;
}

/**
 * What is wrong with a site's list beyond its shape: a duplicate id, a purpose named twice, a decision the purpose
 * does not have or, for a purpose with decisions, none, a placeholder it does not fill, a brace that is no
 * placeholder, two entries of one purpose and decision with the same words.
 */
export function meaningListIssues(list: readonly SignatureMeaning[]): MeaningListIssue[] {
  const issues: MeaningListIssue[] = [];
  const ids = new Map<string, number>();
  const texts = new Map<string, number>();
  list.forEach((m, i) => {
    const first = ids.get(m.id);
    if (first !== undefined) issues.push({ path: [i, 'id'], message: `duplicate meaning id "${m.id}" (meanings[${first}] has it)` });
    else ids.set(m.id, i);
    m.for.forEach((p, k) => {
      if (m.for.indexOf(p) !== k) issues.push({ path: [i, 'for', k], message: `purpose "${p}" is listed twice` });
    });
    for (const p of new Set(m.for)) {
      const ds = PURPOSE_DECISIONS[p];
      // an entry of a purpose with decisions names one: without, it would sign a rejection with an approval's words
      if (m.decision === undefined) {
        if (ds.length > 0) issues.push({ path: [i, 'decision'], message: `required for ${p}: the decision it is signed for (${ds.join(', ')})` });
      } else if (!ds.includes(m.decision)) issues.push({ path: [i, 'decision'], message: ds.length === 0 ? `${p} has no decisions to limit an entry to: leave decision out` : `"${m.decision}" is not a decision of ${p} (${ds.join(', ')})` });
    }
    if (m.text.replace(PLACEHOLDER, '').includes('{') || m.text.replace(PLACEHOLDER, '').includes('}')) issues.push({ path: [i, 'text'], message: 'a brace that is not a placeholder: placeholders are {name}, e.g. {batch}' });
    for (const name of new Set(placeholdersOf(m.text))) {
      for (const p of new Set(m.for)) {
        if (!PURPOSE_PLACEHOLDERS[p].includes(name)) issues.push({ path: [i, 'text'], message: `{${name}} is not filled for ${p} (it fills ${PURPOSE_PLACEHOLDERS[p].map((x) => `{${x}}`).join(', ')})` });
      }
    }
    for (const p of new Set(m.for)) {
      const key = `${p}\u0000${m.decision ?? ''}\u0000${norm(m.text)}`;
      const same = texts.get(key);
      if (same !== undefined) issues.push({ path: [i, 'text'], message: `the same words as meanings[${same}] for ${p}` });
      else texts.set(key, i);
    }
  });
  return issues;
}
