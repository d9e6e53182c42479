/**
 * The controlled list of signature meanings (src/domain/signature-meanings.ts): which entries a signer may pick for
 * an act on a record, how an entry is named (its id or its text as filled), and what is refused — with the entries
 * that would do. The surfaces call this before any password is checked (test/integration/api-signature-meanings).
 */
import { describe, expect, it } from 'vitest';
import {
  chooseMeaning, DEFAULT_SIGNATURE_MEANINGS, fillMeaning, meaningListIssues, meaningsFor, meaningsInForce, PURPOSE_DECISIONS, PURPOSE_PLACEHOLDERS,
  SIGNATURE_PURPOSES, type SignatureMeaning,
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
    // each decision of a purpose has its own words (a rejection is never signed with a release's)
    for (const p of SIGNATURE_PURPOSES) {
      for (const d of PURPOSE_DECISIONS[p]) expect(meaningsFor(DEFAULT_SIGNATURE_MEANINGS, p, Object.fromEntries(PURPOSE_PLACEHOLDERS[p].map((k) => [k, 'x'])), d).length, `${p} ${d}`).toBe(1);
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
    const none = refusal(() => chooseMeaning([{ id: 'x', text: 'Batch {batch} released', for: ['release'] }], 'release', undefined, { run: 'r' }, 'approve'));
    expect(none.detail?.['meanings']).toEqual([]);
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
      { id: 'a', text: 'QA release of batch {batch}', for: ['release', 'release'] },
      { id: 'a', text: 'Moved {setpoint}', for: ['move'], decision: 'shadow' },
      { id: 'c', text: 'qa release of batch {batch}', for: ['release'] },
    ])).toEqual([
      { path: [0, 'for', 1], message: 'purpose "release" is listed twice' },
      { path: [1, 'id'], message: 'duplicate meaning id "a" (meanings[0] has it)' },
      { path: [1, 'decision'], message: '"shadow" is not a decision of move (approve, reject)' },
      { path: [1, 'text'], message: '{setpoint} is not filled for move (it fills {batch}, {run}, {approval})' },
      { path: [2, 'text'], message: 'the same words as meanings[0] for release' },
    ]);
  });
});
