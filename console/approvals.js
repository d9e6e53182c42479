// Approvals: what waits for a person — batch releases at a run's gate and setpoint writes held by the guarded
// writer — each with exactly what is signed (the record's hash, the moves or the release, the policy's reasons).
// Signing is Part 11's dialog: the meaning chosen and shown in words, the password entered again (11.200), and
// the signature's manifestation — name, date and time, meaning — shown once it is made. A refused signature
// (wrong password, not the named reviewer) says so and signs nothing.
import { useEffect, useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { Escalations } from './escalations.js';
import { ExceptionsPanel } from './exceptions.js';
import { Badge, Dialog, ErrorNote, fmt, html, short, time } from './ui.js';

function meanings(item) {
  const what = item.kind === 'batch_release' ? `batch ${item.batch}` : `setpoint write ${item.id} of batch ${item.batch}`;
  return {
    approve: item.kind === 'batch_release' ? `QA release of batch ${item.batch}` : `Approve ${what}`,
    reject: item.kind === 'batch_release' ? `QA rejection of batch ${item.batch}` : `Reject ${what}`,
  };
}

/** A batch whose specification table FAILed is never released: the only decision offered is a rejection. */
const rejectOnly = (item) => item.kind === 'batch_release' && item.detail?.releasable === false;

function SignDialog({ item, onDone, onClose }) {
  const m = meanings(item);
  const only = rejectOnly(item);
  const [decision, setDecision] = useState(only ? 'reject' : 'approve');
  const [meaning, setMeaning] = useState(only ? m.reject : m.approve);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [signed, setSigned] = useState(null);
  const choose = (d) => {
    setDecision(d);
    setMeaning(m[d]);
  };
  const submit = async (e) => {
    e.preventDefault();
    const password = new FormData(e.target).get('password');
    setBusy(true);
    setError(null);
    try {
      const r = await api('POST', `/approvals/${item.id}`, { decision, meaning, password: String(password), ...(item.recordHash ? { recordHash: item.recordHash } : {}) });
      setSigned(r.kind === 'setpoint_write' ? r.signature : r);
      onDone();
    } catch (err) {
      setError(err);
      e.target.reset();
    } finally {
      setBusy(false);
    }
  };
  return html`<${Dialog} id="sign" title=${signed ? 'Signed' : 'Electronic signature'} onClose=${onClose}>
    ${signed ? html`<div class="manifestation" data-testid="signature-manifestation" role="status">
        <p>Signature recorded:</p>
        <dl><dt>Name</dt><dd>${signed.name} (${signed.user}, ${signed.role})</dd><dt>Date and time</dt><dd>${time(signed.timestamp)}</dd>
        <dt>Meaning</dt><dd>${signed.decision}: ${signed.meaning}</dd><dt>Record</dt><dd><code>${short(signed.recordHash, 16)}</code></dd><dt>Key</dt><dd><code>${short(signed.keyId, 16)}</code></dd></dl>
        <form method="dialog"><button type="submit" autofocus>Close</button></form></div>`
      : html`<form onSubmit=${submit}>
        <p>You are signing <strong>${item.kind === 'batch_release' ? `the release of batch ${item.batch}` : `setpoint write ${item.id}`}</strong>, record <code>${short(item.recordHash, 16)}</code>.</p>
        ${only ? html`<p class="refusal" data-testid="release-refused" role="note">Batch ${item.batch} failed ${(item.detail.failed ?? []).map((f) => `${f.title} (${f.reason})`).join('; ') || 'its specifications'}: it cannot be released; the decision left is a rejection.</p>` : null}
        <fieldset><legend>Decision</legend>
          <label><input type="radio" name="decision" value="approve" checked=${decision === 'approve'} disabled=${only} onChange=${() => choose('approve')} /> Approve</label>
          <label><input type="radio" name="decision" value="reject" checked=${decision === 'reject'} onChange=${() => choose('reject')} /> Reject</label>
        </fieldset>
        <label for="sign-meaning">Meaning of this signature</label>
        <input id="sign-meaning" value=${meaning} onInput=${(e) => setMeaning(e.target.value)} required minlength="3" maxlength="190" />
        <p class="meaning" data-testid="meaning-shown">This signature means: <strong>${decision}: ${meaning}</strong></p>
        <label for="sign-password">Password (re-entered to sign)</label>
        <input id="sign-password" name="password" type="password" autocomplete="current-password" required autofocus />
        <${ErrorNote} error=${error} />
        ${error ? html`<p class="quiet" data-testid="nothing-signed">Nothing was signed.</p>` : null}
        <div class="actions"><button type="submit" disabled=${busy}>Sign</button> <button type="button" onClick=${(e) => e.target.closest('dialog').close()}>Cancel</button></div>
      </form>`}
  <//>`;
}

function What({ item }) {
  const d = item.detail ?? {};
  if (item.kind === 'batch_release') {
    return html`<p>Release package of batch <strong>${item.batch}</strong>, run <a href=${`#/runs/${item.run}`}>${item.run}</a> (<a href=${`#/genealogy/${item.run}`}>genealogy</a>).</p>
      ${rejectOnly(item) ? html`<p><${Badge} status="FAILED" label="specification failed: rejection only" /></p>` : null}`;
  }
  return html`<p>${d.agent} proposes ${(d.moves ?? []).map((mv) => `${mv.setpoint} → ${fmt(mv.value?.value ?? mv.value)} ${mv.value?.unit ?? ''}`).join(', ')} for ${d.attribute ?? '—'}.</p>
    ${d.justification ? html`<p>Why: ${typeof d.justification === 'string' ? d.justification : JSON.stringify(d.justification)}</p>` : null}
    ${d.reasons ? html`<p>Policy: ${[...new Set([].concat(d.reasons))].join(', ')}</p>` : null}`;
}

export function ApprovalsPage({ s }) {
  const [items, setItems] = useState(null);
  const [error, setError] = useState(null);
  const [open, setOpen] = useState(null);
  const load = () => api('GET', '/approvals').then((r) => setItems(r.items)).catch(setError);
  useEffect(() => {
    load();
    const t = setInterval(load, 3000);
    return () => clearInterval(t);
  }, []);
  const maySign = ['qa_reviewer', 'process_engineer'].includes(s.user.role);
  return html`<h1 tabindex="-1">Approvals</h1>
    <${ErrorNote} error=${error} />
    ${items && items.length === 0 ? html`<p role="status">Nothing waits for a person.</p>` : null}
    <ul class="approvals">${(items ?? []).map((i) => html`<li class="card" aria-labelledby=${`apr-${i.id}`}>
      <h2 id=${`apr-${i.id}`}>${i.kind === 'batch_release' ? 'Batch release' : 'Setpoint write'} · ${i.batch ?? ''} <${Badge} status="pending" label=${`waits for ${i.needs === 'qa' ? 'QA' : 'the reviewer'}`} /></h2>
      <dl><dt>Approval</dt><dd><code>${i.id}</code></dd><dt>Reviewer</dt><dd>${i.reviewer ?? 'any QA reviewer'}</dd><dt>Requested</dt><dd>${time(i.requestedAt)}</dd><dt>Record hash</dt><dd><code>${i.recordHash}</code></dd></dl>
      <${What} item=${i} />
      ${i.kind === 'batch_release' && i.run ? html`<${ExceptionsPanel} s=${s} run=${i.run} />` : null}
      ${maySign ? html`<button type="button" onClick=${() => setOpen(i)}>Review and sign…</button>` : null}
    </li>`)}</ul>
    ${open ? html`<${SignDialog} item=${open} onDone=${load} onClose=${() => setOpen(null)} />` : null}
    <${Escalations} s=${s} />`;
}
