// Approvals: what waits for a person — batch releases at a run's gate and setpoint writes held by the guarded
// writer — each with exactly what is signed (the record's hash, the moves or the release, the policy's reasons).
// Signing is Part 11's dialog: the meaning chosen from the site's controlled list (console/meanings.js: nothing
// pre-selected, a comment in the signer's own words beside it) and shown in words, the password entered again
// (11.200), and the signature's manifestation — name, date and time, meaning — shown once it is made. A refused signature
// (wrong password, not the named reviewer) says so and signs nothing. A move's card shows each setpoint now →
// proposed against the approved limits and maximum step, what the move is for and the twin's prediction; after the
// signature, what the guarded writer did (written and read back, or denied and why). A release's dialog restates
// the disposition (the specification table's verdict and counts, the exceptions and who closed them); once signed,
// focus is on the dialog's Close button, and back on the page's heading when it closes.
import { useEffect, useRef, useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { CommentField, MeaningSelect, useMeanings } from './meanings.js';
import { Escalations } from './escalations.js';
import { ExceptionsPanel } from './exceptions.js';
import { MoveFor, MoveTable, Predicted } from './moves.js';
import { Badge, Dialog, ErrorNote, fmt, html, short, time, unit } from './ui.js';

/** A batch whose specification table FAILed is never released: the only decision offered is a rejection. */
const rejectOnly = (item) => item.kind === 'batch_release' && item.detail?.releasable === false;

/**
 * Who can take a decision: a batch release its named QA reviewer (any QA reviewer when none is named); a move that
 * needs QA a QA reviewer; an L2 review the batch's assigned reviewer or QA. The daemon decides (it refuses anyone
 * else); the console offers the dialog only to who can sign it, and tells the others who it waits for.
 */
export function canSign(item, user) {
  if (item.kind === 'batch_release') return user.role === 'qa_reviewer' && (!item.reviewer || item.reviewer === user.id);
  if (item.needs === 'qa') return user.role === 'qa_reviewer';
  return user.role === 'qa_reviewer' || (user.role === 'process_engineer' && item.reviewer === user.id);
}

function SignDialog({ item, onDone, onClose }) {
  const only = rejectOnly(item);
  // nothing is pre-selected: a password and Enter must never release a batch or approve a move by default
  const [decision, setDecision] = useState(only ? 'reject' : null);
  const [meaning, setMeaning] = useState('');
  const [comment, setComment] = useState('');
  // the site's meanings for this act and decision, filled for this record; a decision changed drops a meaning it does not allow
  const { options, error: listError } = useMeanings(item.kind === 'batch_release' ? 'release' : 'move', { batch: item.batch ?? '', run: item.run ?? '', approval: item.id }, decision);
  const chosen = options?.find((o) => o.id === meaning) ?? null;
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [signed, setSigned] = useState(null);
  const closeRef = useRef(null);
  // once signed, focus is on Close: the person reads the manifestation and leaves the dialog from there
  useEffect(() => {
    if (signed) closeRef.current?.focus();
  }, [signed]);
  const choose = (d) => {
    setDecision(d);
    setMeaning('');
  };
  const submit = async (e) => {
    e.preventDefault();
    const password = new FormData(e.target).get('password');
    setBusy(true);
    setError(null);
    try {
      if (!decision) throw new Error('choose a decision first: approve or reject');
      if (!chosen) throw new Error('choose the meaning of your signature from the list');
      const r = await api('POST', `/approvals/${item.id}`, { decision, meaning: chosen.text, ...(comment.trim() ? { comment: comment.trim() } : {}), password: String(password), ...(item.recordHash ? { recordHash: item.recordHash } : {}) });
      setSigned(r.kind === 'setpoint_write' ? { ...r.signature, outcome: r.outcome } : r);
      onDone();
    } catch (err) {
      setError(err);
      // the password goes; the decision, the meaning and the comment stay as chosen (and as shown)
      e.target.elements.password.value = '';
    } finally {
      setBusy(false);
    }
  };
  return html`<${Dialog} id="sign" title=${signed ? 'Signed' : 'Electronic signature'} onClose=${onClose}>
    ${signed ? html`<div class="manifestation" data-testid="signature-manifestation" role="status">
        <p>Signature recorded:</p>
        ${signed.outcome ? html`<${Outcome} o=${signed.outcome} item=${item} />` : null}
        <dl><dt>Name</dt><dd>${signed.name} (${signed.user}, ${signed.role})</dd><dt>Date and time</dt><dd>${time(signed.timestamp)}</dd>
        <dt>Meaning</dt><dd>${signed.decision}: ${signed.meaning}</dd>${signed.comment ? html`<dt>Comment</dt><dd>${signed.comment}</dd>` : null}<dt>Record</dt><dd><code>${short(signed.recordHash, 16)}</code></dd><dt>Key</dt><dd><code>${short(signed.keyId, 16)}</code></dd></dl>
        <form method="dialog"><button type="submit" ref=${closeRef} data-testid="sign-close">Close</button></form></div>`
      : html`<form onSubmit=${submit}>
        <p>You are signing <strong>${item.kind === 'batch_release' ? `the release of batch ${item.batch}` : `setpoint write ${item.id}: ${moveText(item)}`}</strong>, record <code>${short(item.recordHash, 16)}</code>.</p>
        ${item.kind === 'batch_release' ? html`<${Disposition} item=${item} />` : html`<${MoveTable} item=${item} /><${MoveFor} d=${item.detail} />`}
        ${only ? html`<p class="refusal" data-testid="release-refused" role="note">Batch ${item.batch} failed ${(item.detail.failed ?? []).map((f) => `${f.title} (${f.reason})`).join('; ') || 'its specifications'}: it cannot be released; the decision left is a rejection.</p>` : null}
        <fieldset><legend>Decision</legend>
          <label><input type="radio" name="decision" value="approve" checked=${decision === 'approve'} disabled=${only} onChange=${() => choose('approve')} autofocus=${!only} /> Approve</label>
          <label><input type="radio" name="decision" value="reject" checked=${decision === 'reject'} onChange=${() => choose('reject')} /> Reject</label>
        </fieldset>
        <${MeaningSelect} id="sign-meaning" options=${options} value=${meaning} onChange=${setMeaning} disabled=${!decision} prompt=${decision ? undefined : 'Choose a decision first'} />
        <${CommentField} id="sign-comment" value=${comment} onInput=${setComment} />
        <${ErrorNote} error=${listError} />
        <p class="meaning" data-testid="meaning-shown">${decision && chosen ? html`This signature means: <strong>${decision}: ${chosen.text}</strong>` : decision ? 'Choose the meaning from the site\u2019s list: nothing is chosen for you.' : 'Choose a decision and a meaning: nothing is chosen for you.'}</p>
        <label for="sign-password">Password (re-entered to sign)</label>
        <input id="sign-password" name="password" type="password" autocomplete="current-password" required autofocus=${only} />
        <${ErrorNote} error=${error} />
        ${error ? html`<p class="quiet" data-testid="nothing-signed">Nothing was signed.</p>` : null}
        <div class="actions"><button type="submit" disabled=${busy || !decision || !chosen}>Sign</button> <button type="button" onClick=${(e) => e.target.closest('dialog').close()}>Cancel</button></div>
      </form>`}
  <//>`;
}

/** `press.MainForce 12 → 10.5 kN, …` of a move. */
const moveText = (item) => (item.detail?.moves ?? []).map((mv) => `${mv.setpoint} → ${fmt(mv.value?.value ?? mv.value)} ${unit(mv.value?.unit)}`.trim()).join(', ');

/**
 * What the guarded writer did with a signed move: written, with each tag's read-back; or denied, rejected, … with
 * the policy's reasons and nothing written to the equipment.
 */
function Outcome({ o, item }) {
  const units = Object.fromEntries((item.detail?.table ?? []).map((r) => [r.setpoint, r.unit]));
  return html`<div class=${o.status === 'written' ? 'notice' : 'refusal'} data-testid="write-outcome" role="note">
    <p>What the guarded writer did with it: <strong>${o.status}</strong>${o.reasons?.length ? ` (${o.reasons.join(', ')})` : ''}${o.error ? ` — ${o.error.code}: ${o.error.message}` : ''}${o.status === 'written' ? '' : '; nothing was written to the equipment'}.</p>
    ${o.readBack?.length ? html`<ul data-testid="write-readback">${o.readBack.map((r) => html`<li><code>${r.tag}</code>: written ${fmt(r.written)} ${unit(units[r.tag])}, read back ${r.readBack === null ? 'nothing' : `${fmt(r.readBack)} ${unit(units[r.tag])}`.trim()} — ${r.verified ? '✓ verified' : '✕ NOT verified'}</li>`)}</ul>` : null}
  </div>`;
}

/** A release's disposition as the reviewer signs it: the specification table's verdict and counts, the exceptions and their closures. */
function Disposition({ item }) {
  const d = item.detail ?? {};
  const c = d.specCounts;
  const e = d.exceptionCounts;
  const xs = d.exceptions ?? [];
  return html`<section class="disposition" data-testid="release-disposition" aria-label="Disposition of the batch">
    <p data-testid="disposition-verdict"><strong>Specifications: ${d.verdict ?? 'not evaluated'}</strong>${c ? ` — ${c.total} specifications: ${c.PASS ?? 0} PASS, ${c.FAIL ?? 0} FAIL, ${c.NOT_EVALUATED ?? 0} NOT EVALUATED` : ''}.</p>
    <p data-testid="disposition-exceptions"><strong>Exceptions:</strong> ${e ? (e.total === 0 ? 'none was raised in this run.' : `${e.total} raised, ${e.closed} closed, ${e.open} open${e.blocking ? ` (${e.blocking} blocking the release)` : ''}.`) : 'not listed.'}</p>
    ${xs.length ? html`<ul data-testid="disposition-exception-list">${xs.map((x) => html`<li data-exception=${x.id} data-status=${x.status}><code>${x.kind}</code> ${x.severity}: ${x.title} — ${x.closure
      ? `closed by ${x.closure.name} (${x.closure.user}), ${time(x.closure.at)}: ${x.closure.comment}${x.closure.deviation ? ` [${x.closure.deviation}]` : ''}`
      : 'OPEN'}</li>`)}</ul>` : null}
  </section>`;
}

function What({ item }) {
  const d = item.detail ?? {};
  if (item.kind === 'batch_release') {
    return html`<p>Release package of batch <strong>${item.batch}</strong>, run <a href=${`#/runs/${item.run}`}>${item.run}</a> (<a href=${`#/genealogy/${item.run}`}>genealogy</a>).</p>
      ${rejectOnly(item) ? html`<p><${Badge} status="FAILED" label="specification failed: rejection only" /></p>` : null}`;
  }
  return html`<p>${d.agent} proposes ${moveText(item)}:</p>
    <${MoveTable} item=${item} />
    <${MoveFor} d=${d} />
    <${Predicted} d=${d} />
    ${d.justification ? html`<p>Why: ${typeof d.justification === 'string' ? d.justification : JSON.stringify(d.justification)}</p>` : null}
    ${d.reasons ? html`<p>Policy: ${[...new Set([].concat(d.reasons))].join(', ')}</p>` : null}`;
}

export function ApprovalsPage({ s }) {
  const [items, setItems] = useState(null);
  const [error, setError] = useState(null);
  const [open, setOpen] = useState(null);
  // oldest first, and a stable order: the card under the pointer stays where it is between refreshes
  const load = () =>
    api('GET', '/approvals')
      .then((r) => {
        setError(null);
        setItems([...r.items].sort((a, b) => (a.requestedAt < b.requestedAt ? -1 : a.requestedAt > b.requestedAt ? 1 : a.id < b.id ? -1 : 1)));
      })
      .catch(setError);
  useEffect(() => {
    load();
    const t = setInterval(load, 3000);
    return () => clearInterval(t);
  }, []);
  // after the dialog closes, focus returns to the page, not to <body>
  const close = () => {
    setOpen(null);
    document.querySelector('h1')?.focus();
  };
  return html`<h1 tabindex="-1">Approvals</h1>
    <${ErrorNote} error=${error} />
    ${items && items.length === 0 ? html`<p role="status">Nothing waits for a person.</p>` : null}
    <ul class="approvals">${(items ?? []).map((i) => html`<li class="card" aria-labelledby=${`apr-${i.id}`}>
      <h2 id=${`apr-${i.id}`}>${i.kind === 'batch_release' ? 'Batch release' : 'Setpoint write'} · ${i.batch ?? ''} <${Badge} status="pending" label=${`waits for ${i.needs === 'qa' ? 'QA' : 'the reviewer'}`} /></h2>
      <dl><dt>Approval</dt><dd><code>${i.id}</code></dd><dt>Reviewer</dt><dd>${i.reviewer ?? 'any QA reviewer'}</dd><dt>Requested</dt><dd>${time(i.requestedAt)}</dd><dt>Record hash</dt><dd><code>${i.recordHash}</code></dd></dl>
      <${What} item=${i} />
      ${i.kind === 'batch_release' && i.run ? html`<${ExceptionsPanel} s=${s} run=${i.run} />` : null}
      ${canSign(i, s.user)
        ? html`<button type="button" onClick=${() => setOpen(i)}>Review and sign…</button>`
        : html`<p class="quiet" data-testid="not-yours">Waits for ${i.kind === 'batch_release' || i.needs === 'qa' ? (i.reviewer ? `QA reviewer ${i.reviewer}` : 'a QA reviewer') : `reviewer ${i.reviewer ?? '(none assigned)'} or QA`}: you (${s.user.id}, ${s.user.role}) cannot sign it.</p>`}
    </li>`)}</ul>
    ${open ? html`<${SignDialog} item=${open} onDone=${load} onClose=${close} />` : null}
    <${Escalations} s=${s} />`;
}
