// Signature meanings (21 CFR 11.50, EU GMP Annex 11 §14): the site's controlled list (GET /signature-meanings),
// read when a signing dialog opens (a reload of the site's configuration may change it), and the <select> every
// signing dialog offers from it — the entries for the act, of its decision, whose placeholders the record fills
// ({batch} → B-1042, the same rule as the daemon's), with nothing chosen: the person picks the words, the dialog
// sends those words (not the entry's id: a list changed by a reload meanwhile refuses them rather than signing words
// nobody saw), and the daemon records them with the entry's id. Their own words go in the comment beside it, never
// in the meaning.
import { useEffect, useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { html } from './ui.js';

/** `text` with `{name}` filled from `values`, or null when the record has no value for one of them. */
export function fillMeaning(text, values) {
  let missing = false;
  const out = text.replace(/\{([a-z]+)\}/g, (_, k) => {
    const v = values[k];
    if (typeof v !== 'string' || v.length === 0) missing = true;
    return v ?? '';
  });
  return missing ? null : out;
}

/** Longest meaning as filled that the daemon signs (MEANING_FILLED_MAX of src/domain/signature-meanings.ts): a manifestation holds it whole. */
const FILLED_MAX = 190;

/**
 * The entries a signer may choose for `purpose` on this record, by the daemon's rule: of the purpose; when it has
 * decisions (`decisions`, as GET /signature-meanings lists them), those of `decision` only; whose placeholders the
 * record fills and whose filled words fit a manifestation. `{ id, text }` with the text filled.
 */
export function meaningOptions(items, purpose, values, decision, decisions = []) {
  const decided = decisions.length > 0;
  return items
    .filter((m) => m.for.includes(purpose) && (decided ? Boolean(m.decision) && m.decision === decision : !m.decision))
    .map((m) => ({ id: m.id, text: fillMeaning(m.text, values) }))
    .filter((m) => m.text !== null && m.text.length <= FILLED_MAX);
}

/** The options of `purpose` for this record and decision, once the list is read; `error` when it cannot be. */
export function useMeanings(purpose, values, decision) {
  const [list, setList] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    api('GET', '/signature-meanings').then(setList).catch(setError);
  }, []);
  const decisions = list?.purposes?.find((p) => p.purpose === purpose)?.decisions ?? [];
  return { options: list ? meaningOptions(list.items, purpose, values, decision, decisions) : null, error };
}

/**
 * The meaning <select> of a signing dialog: required, nothing pre-selected (like the decision: a password and Enter
 * never sign words nobody chose). `value` is the chosen entry's id ('' for none); `prompt` replaces the empty option's
 * text. The dialog signs with the chosen option's text, as shown.
 */
export function MeaningSelect({ id, options, value, onChange, disabled, prompt }) {
  const empty = prompt ?? (options ? (options.length ? 'Choose the meaning…' : 'No meaning of the site\u2019s list fits') : 'Reading the site\u2019s meanings…');
  return html`<label for=${id}>Meaning of this signature (the site's list)</label>
    <select id=${id} name="meaning" required value=${value} disabled=${disabled || !options} onChange=${(e) => onChange(e.target.value)}>
      <option value="" disabled selected=${value === ''}>${empty}</option>
      ${(options ?? []).map((o) => html`<option value=${o.id} selected=${o.id === value}>${o.text}</option>`)}
    </select>`;
}

/** The comment beside a meaning: optional, the signer's own words (recorded with the signature). */
export function CommentField({ id, value, onInput }) {
  return html`<label for=${id}>Comment (optional, your own words beside the meaning)</label>
    <textarea id=${id} name="comment" maxlength="1000" rows="2" value=${value} onInput=${(e) => onInput(e.target.value)}></textarea>`;
}
