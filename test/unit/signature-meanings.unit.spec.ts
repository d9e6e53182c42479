/**
 * The controlled list of signature meanings (src/domain/signature-meanings.ts): which entries a signer may pick for
 * an act on a record, how an entry is named (its id or its text as filled), and what is refused — with the entries
 * that would do: an entry without a decision for a purpose that has decisions (in the list and when offered), and
 * words that, filled, would not fit a signature's manifestation whole. The surfaces call this before any password is
 * checked (test/integration/api-signature-meanings).
 */
import { describe, expect, it } from 'vitest';
import { AuditSignature } from '../../src/audit/entry-schema.js';
import {
  chooseMeaning, DEFAULT_SIGNATURE_MEANINGS, fillMeaning, MANIFESTATION_ACTS, MANIFESTATION_MEANING_MAX, manifestationMeaning, MEANING_FILLED_MAX,
  MEANING_TEXT_MAX, MEANING_VALUES, meaningListIssues, meaningsFor, meaningsInForce, PURPOSE_DECISIONS, PURPOSE_PLACEHOLDERS, SIGNATURE_PURPOSES,
  type SignatureMeaning, type SignaturePurpose,
} from '../../src/domain/signature-meanings.js';
import { LkError } from '../../src/errors.js';
import { TRANSITIONS } from '../../src/models/lifecycle.js';
import { POLICY_SIGNATURE_MEANING, POLICY_SIGNATURE_MEANING_ID } from '../../src/policy/signature.js';

const B1042 = { batch: 'B-1042', run: 'run_abc', approval: 'apr_1' };

/** The LkError `fn` throws. */
function refusal(fn: () => unknown): LkError {
  try {
    fn();
  } catch (e) {
    if (LkError.is(e)) return e;
    throw e;
  }
  throw new Error('expected a refusal');
}

describe('the built-in list', () => {
  it('[P11.50] words every purpose, is a valid list itself, and fills only what each purpose fills', () => {
    for (const p of SIGNATURE_PURPOSES) expect(DEFAULT_SIGNATURE_MEANINGS.some((m) => m.for.includes(p)), p).toBe(true);
    expect(meaningListIssues(DEFAULT_SIGNATURE_MEANINGS)).toEqual([]);
    // each decision of a purpose has its own words (a rejection is never signed with a release's): every built-in
    // entry of a purpose with decisions names one
    for (const p of SIGNATURE_PURPOSES) {
      for (const d of PURPOSE_DECISIONS[p]) expect(meaningsFor(DEFAULT_SIGNATURE_MEANINGS, p, Object.fromEntries(PURPOSE_PLACEHOLDERS[p].map((k) => [k, 'x'])), d).length, `${p} ${d}`).toBe(1);
    }
    for (const m of DEFAULT_SIGNATURE_MEANINGS) {
      for (const p of m.for) expect(m.decision !== undefined, `${m.id} for ${p}`).toBe(PURPOSE_DECISIONS[p].length > 0);
    }
  });

  it('keeps the words linekeeper signed with before: the model lifecycle\'s and the policy signature\'s', () => {
    for (const t of TRANSITIONS) expect(meaningsFor(DEFAULT_SIGNATURE_MEANINGS, 'model_change', { model: 'm', from: t.from, to: t.to }, t.to).map((m) => m.text)).toEqual([t.meaning]);
    expect(chooseMeaning(DEFAULT_SIGNATURE_MEANINGS, 'policy_change', undefined, { change: 'CC-1', version: 'abc' })).toMatchObject({ id: POLICY_SIGNATURE_MEANING_ID, text: POLICY_SIGNATURE_MEANING });
  });
});

describe('choosing a meaning', () => {
  it('[A11.14] [P11.50] takes an entry by id or by its text as filled for the record (spacing and case aside), and records the filled words', () => {
    expect(chooseMeaning(DEFAULT_SIGNATURE_MEANINGS, 'release', 'qa-release', B1042, 'approve')).toEqual({ id: 'qa-release', text: 'QA release of batch B-1042', template: 'QA release of batch {batch}' });
    expect(chooseMeaning(DEFAULT_SIGNATURE_MEANINGS, 'release', '  qa  RELEASE of batch b-1042 ', B1042, 'approve').id).toBe('qa-release');
    expect(chooseMeaning(DEFAULT_SIGNATURE_MEANINGS, 'release', 'QA rejection of batch B-1042', B1042, 'reject').id).toBe('qa-rejection');
  });

  it('[A11.14] refuses free text, another decision\'s words, another batch\'s words and another purpose\'s entry, listing the entries that would do', () => {
    for (const [chosen, decision] of [['QA release of the batch', 'approve'], ['qa-release', 'reject'], ['QA release of batch B-9999', 'approve'], ['move-approval', 'approve'], ['QA release of batch {batch}', 'approve']] as const) {
      const e = refusal(() => chooseMeaning(DEFAULT_SIGNATURE_MEANINGS, 'release', chosen, B1042, decision));
      expect(e.code, chosen).toBe('LK_MEANING_NOT_ALLOWED');
      expect(e.status).toBe(422);
      const allowed = decision === 'approve' ? { id: 'qa-release', text: 'QA release of batch B-1042' } : { id: 'qa-rejection', text: 'QA rejection of batch B-1042' };
      expect(e.detail).toEqual({ purpose: 'release', decision, meaning: chosen, meanings: [allowed] });
      expect(e.message).toContain(`${allowed.id} ("${allowed.text}")`);
    }
  });

  it('without a choice, the first entry that fits the record; an entry whose placeholders the record lacks does not fit', () => {
    expect(chooseMeaning(DEFAULT_SIGNATURE_MEANINGS, 'trail_review', undefined, { run: 'run_a', batch: 'B-1' }).id).toBe('trail-review-run');
    expect(chooseMeaning(DEFAULT_SIGNATURE_MEANINGS, 'trail_review', undefined, { from: '2026-01-01T00:00:00.000Z', to: '2026-01-02T00:00:00.000Z' }).text).toBe('Audit trail from 2026-01-01T00:00:00.000Z to 2026-01-02T00:00:00.000Z reviewed (EU GMP Annex 11 §9)');
    // a period has no run: the run's entry is not one to pick
    expect(refusal(() => chooseMeaning(DEFAULT_SIGNATURE_MEANINGS, 'trail_review', 'trail-review-run', { from: 'a', to: 'b' })).code).toBe('LK_MEANING_NOT_ALLOWED');
    // a list with nothing that fits refuses every choice, the default too
    const none = refusal(() => chooseMeaning([{ id: 'x', text: 'Batch {batch} released', for: ['release'], decision: 'approve' }], 'release', undefined, { run: 'r' }, 'approve'));
    expect(none.detail?.['meanings']).toEqual([]);
  });

  it('[A11.14] never offers an entry without a decision for a purpose that has decisions: it would sign a rejection with an approval\'s words', () => {
    // such a list does not load (meaningListIssues, below); were one in force anyway, its undecided entry is no option
    const list: SignatureMeaning[] = [
      { id: 'batch-done', text: 'Batch {batch} dispositioned by QA', for: ['release'] },
      { id: 'qa-rejection', text: 'QA rejection of batch {batch}', for: ['release'], decision: 'reject' },
    ];
    expect(meaningsFor(list, 'release', B1042, 'reject').map((m) => m.id)).toEqual(['qa-rejection']);
    expect(meaningsFor(list, 'release', B1042, 'approve')).toEqual([]);
    // nor one of any decision when the act names none
    expect(meaningsFor(list, 'release', B1042)).toEqual([]);
    for (const decision of ['approve', 'reject']) {
      const e = refusal(() => chooseMeaning(list, 'release', 'batch-done', B1042, decision));
      expect([e.code, e.detail?.['meanings']], decision).toEqual(['LK_MEANING_NOT_ALLOWED', decision === 'reject' ? [{ id: 'qa-rejection', text: 'QA rejection of batch B-1042' }] : []]);
    }
  });

  it('[A11.14] [P11.50] signs only words a manifestation holds whole: the longest filled text after the longest act fits, one character more is refused', () => {
    const longest = Math.max(...MANIFESTATION_ACTS.map((a) => `${a}: `.length));
    expect(MEANING_FILLED_MAX + longest).toBe(MANIFESTATION_MEANING_MAX);
    expect(AuditSignature.shape.meaning.maxLength).toBe(MANIFESTATION_MEANING_MAX);
    // an entry as long as a site may write it, its placeholder filled to exactly the most a meaning may have
    const template = `Reviewer of run {run} now ${'x'.repeat(MEANING_TEXT_MAX - 'Reviewer of run {run} now  {reviewer}'.length)} {reviewer}`;
    expect(template.length).toBe(MEANING_TEXT_MAX);
    const list: SignatureMeaning[] = [{ id: 'long-reassign', text: template, for: ['run_reassign'] }, { id: 'short-reassign', text: 'Reassigned to {reviewer}', for: ['run_reassign'] }];
    const base = { run: 'run_0123456789abcdef0123', batch: 'B-1042' };
    const fill = (n: number) => ({ ...base, reviewer: `r${'v'.repeat(n - 1)}` });
    const at = MEANING_FILLED_MAX - (template.length - '{run}'.length - '{reviewer}'.length + base.run.length);
    const m = chooseMeaning(list, 'run_reassign', 'long-reassign', fill(at));
    expect(m.text.length).toBe(MEANING_FILLED_MAX);
    for (const act of [...MANIFESTATION_ACTS, undefined]) {
      const signature = { user: 'm.rossi', name: 'Maria Rossi', meaning: manifestationMeaning(m.text, act), time: '2026-01-01T08:00:00.000Z' };
      // the manifestation holds the words signed, whole
      expect(AuditSignature.parse(signature).meaning.endsWith(m.text), String(act)).toBe(true);
    }
    expect(manifestationMeaning(m.text, 'reassign')).toHaveLength(MANIFESTATION_MEANING_MAX);
    // one character more: refused, never cut — named, with the entries that still fit
    const e = refusal(() => chooseMeaning(list, 'run_reassign', 'long-reassign', fill(at + 1)));
    expect(e.code).toBe('LK_MEANING_NOT_ALLOWED');
    expect(e.detail).toMatchObject({ length: MEANING_FILLED_MAX + 1, max: MEANING_FILLED_MAX, meanings: [{ id: 'short-reassign' }] });
    expect(meaningsFor(list, 'run_reassign', fill(at + 1)).map((x) => x.id)).toEqual(['short-reassign']);
    // without a choice, the first that fits; with none that fits, refused
    expect(chooseMeaning(list, 'run_reassign', undefined, fill(at + 1)).id).toBe('short-reassign');
    expect(refusal(() => chooseMeaning(list.slice(0, 1), 'run_reassign', undefined, fill(at + 1))).detail).toMatchObject({ length: MEANING_FILLED_MAX + 1, meanings: [] });
  });

  it('fills a placeholder only with a value: an empty or missing one leaves the entry out', () => {
    expect(fillMeaning('QA release of batch {batch} ({run})', { batch: 'B-1', run: 'run_1' })).toBe('QA release of batch B-1 (run_1)');
    expect(fillMeaning('QA release of batch {batch}', { batch: '' })).toBeNull();
    expect(fillMeaning('QA release of batch {batch}', {})).toBeNull();
    expect(fillMeaning('Reviewed', {})).toBe('Reviewed');
  });
});

describe('the list in force', () => {
  const site: SignatureMeaning[] = [
    { id: 'released', text: 'Released for distribution: batch {batch}', for: ['release'], decision: 'approve' },
    { id: 'any-review', text: 'Reviewed by QA', for: ['trail_review', 'exception_close'] },
  ];

  it('[A11.14] is the site\'s entries, and the built-in ones of every purpose the site lists nothing for', () => {
    const inForce = meaningsInForce(site);
    expect(inForce.filter((m) => m.source === 'site').map((m) => m.id)).toEqual(['released', 'any-review']);
    const kept = new Set(inForce.filter((m) => m.source === 'default').flatMap((m) => m.for));
    expect([...kept].sort()).toEqual(SIGNATURE_PURPOSES.filter((p) => !['release', 'trail_review', 'exception_close'].includes(p)).sort());
    // the site words its release only: a rejection has no meaning until the site lists one
    expect(meaningsFor(inForce, 'release', B1042, 'reject')).toEqual([]);
    expect(meaningsFor(inForce, 'release', B1042, 'approve').map((m) => m.text)).toEqual(['Released for distribution: batch B-1042']);
    expect(chooseMeaning(inForce, 'exception_close', 'Reviewed by QA', {}).id).toBe('any-review');
    expect(meaningsInForce(undefined).map((m) => m.id)).toEqual(DEFAULT_SIGNATURE_MEANINGS.map((m) => m.id));
  });

  it('names every problem of a list by index and field', () => {
    expect(meaningListIssues([
      { id: 'a', text: 'QA release of batch {batch}', for: ['release', 'release'], decision: 'approve' },
      { id: 'a', text: 'Moved {setpoint}', for: ['move'], decision: 'shadow' },
      { id: 'c', text: 'qa release of batch {batch}', for: ['release'], decision: 'approve' },
    ])).toEqual([
      { path: [0, 'for', 1], message: 'purpose "release" is listed twice' },
      { path: [1, 'id'], message: 'duplicate meaning id "a" (meanings[0] has it)' },
      { path: [1, 'decision'], message: '"shadow" is not a decision of move (approve, reject)' },
      { path: [1, 'text'], message: '{setpoint} is not filled for move (it fills {batch}, {run}, {approval})' },
      { path: [2, 'text'], message: 'the same words as meanings[0] for release' },
    ]);
  });

  it('[A11.14] requires the decision of an entry for a purpose that has decisions, and only there', () => {
    expect(meaningListIssues([
      { id: 'batch-done', text: 'Batch {batch} dispositioned by QA', for: ['release'] },
      { id: 'moved', text: 'Move of batch {batch} decided', for: ['move'] },
      { id: 'model-ok', text: 'Model {model} changed', for: ['model_change'] },
      { id: 'iq', text: 'Qualification of linekeeper {version}', for: ['validation_report'] },
      { id: 'reviewed', text: 'Reviewed by QA', for: ['trail_review', 'exception_close'] },
      // one purpose with decisions among others: none fits every purpose, so the entry is refused either way
      { id: 'mixed', text: 'Batch {batch} reviewed', for: ['release', 'trail_review'] },
    ])).toEqual([
      { path: [0, 'decision'], message: 'required for release: the decision it is signed for (approve, reject)' },
      { path: [1, 'decision'], message: 'required for move: the decision it is signed for (approve, reject)' },
      { path: [2, 'decision'], message: 'required for model_change: the decision it is signed for (shadow, validated, retired)' },
      { path: [3, 'decision'], message: 'required for validation_report: the decision it is signed for (iq, oq, config)' },
      { path: [5, 'decision'], message: 'required for release: the decision it is signed for (approve, reject)' },
    ]);
  });
});

describe('the values a purpose fills', () => {
  it('one function per purpose signed in more than one place fills exactly its placeholders, and the built-in words with them', () => {
    const samples: Record<keyof typeof MEANING_VALUES, Record<string, string | undefined>> = {
      release: MEANING_VALUES.release({ batch: 'B-1042', run: 'run_a', approval: 'apr_1' }),
      move: MEANING_VALUES.move({ batch: 'B-1042', run: 'run_a', approval: 'pw_1' }),
      trail_review: MEANING_VALUES.trail_review({ run: 'run_a' }, 'B-1042'),
      model_change: MEANING_VALUES.model_change({ model: 'nir-1', from: 'shadow', to: 'validated' }),
      exception_close: MEANING_VALUES.exception_close({ id: 'exc_1', kind: 'OOS', severity: 'major', batch: 'B-1042', run: 'run_a' }),
      run_abort: MEANING_VALUES.run_abort({ id: 'run_a', batch: 'B-1042' }),
      run_reassign: MEANING_VALUES.run_reassign({ id: 'run_a', batch: 'B-1042' }, 'm.rossi'),
    };
    for (const [p, values] of Object.entries(samples) as [SignaturePurpose, Record<string, string | undefined>][]) {
      expect(Object.keys(values).filter((k) => !PURPOSE_PLACEHOLDERS[p].includes(k)), p).toEqual([]);
      // a model change's decision is the status it goes to
      const decision = p === 'model_change' ? values['to'] : PURPOSE_DECISIONS[p][0];
      expect(meaningsFor(DEFAULT_SIGNATURE_MEANINGS, p, values, decision).length, p).toBeGreaterThan(0);
    }
    expect(MEANING_VALUES.trail_review({ from: '2026-01-01T00:00:00.000Z', to: '2026-01-02T00:00:00.000Z' })).toEqual({ from: '2026-01-01T00:00:00.000Z', to: '2026-01-02T00:00:00.000Z' });
  });
});
