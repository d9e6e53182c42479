// The ways out of the states a run stops in, on the run page: resume a HELD or INTERRUPTED run (a process
// engineer or QA reviewer, with a reason), abort a run that is not final (signed: the password is entered again;
// the line goes to its last known-good recipe and the package says "not a release"), reassign the QA reviewer
// (signed, by QA or an administrator). A signed act's meaning is chosen from the site's list (console/meanings.js),
// the reason beside it. The daemon checks every role and state again; a refusal changes nothing.
import { useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { MeaningSelect, useMeanings } from './meanings.js';
import { Dialog, ErrorNote, html } from './ui.js';

const FINAL = ['SUCCEEDED', 'FAILED', 'REJECTED', 'ABORTED'];
const STEERS = ['process_engineer', 'qa_reviewer'];
const REASSIGNS = ['qa_reviewer', 'admin'];

function ActionDialog({ act, run, onDone, onClose }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState(null);
  const signed = act !== 'resume';
  // the new reviewer as typed: the meaning of a reassignment names them
  const [to, setTo] = useState('');
  const [meaning, setMeaning] = useState('');
  const { options, error: listError } = useMeanings(act === 'reassign' ? 'run_reassign' : 'run_abort', { run: run.id, batch: run.batch, reviewer: to.trim() || '…' });
  const chosen = options?.find((o) => o.id === meaning) ?? null;
  const submit = async (ev) => {
    ev.preventDefault();
    const f = new FormData(ev.target);
    setBusy(true);
    setError(null);
    try {
      if (signed && !chosen) throw new Error('choose the meaning of your signature from the list');
      const body = { reason: String(f.get('reason')), ...(signed ? { password: String(f.get('password')), meaning: chosen.text } : {}), ...(act === 'reassign' ? { to: to.trim() } : {}) };
      const out = await api('POST', `/runs/${run.id}/${act}`, body);
      onDone();
      if (act === 'abort') setResult(out);
      else ev.target.closest('dialog').close();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const titles = { resume: `Resume run ${run.id}`, abort: `Abort run ${run.id}`, reassign: `Reassign the QA reviewer of ${run.id}` };
  return html`<${Dialog} id=${`run-${act}`} title=${titles[act]} onClose=${onClose}>
    ${result ? html`<div data-testid="abort-result">
        <p role="status"><strong>ABORTED</strong> — not a release. Signed by ${result.signature.name} (${result.signature.user}).</p>
        <p>PLCs on their last known-good recipe, verified by read-back: ${result.reverted.filter((p) => p.ok).length}/${result.reverted.length}</p>
        <ul>${result.reverted.map((p) => html`<li data-plc=${p.equipment} data-ok=${String(p.ok)}>${p.equipment}: ${p.ok ? `ok, ${p.state ?? ''}` : html`<strong>NOT VERIFIED</strong> ${p.error ?? ''}`}</li>`)}</ul>
        ${result.approvalWithdrawn ? html`<p>Approval ${result.approvalWithdrawn} withdrawn: it can no longer be signed.</p>` : null}
        <div class="actions"><button type="button" onClick=${(x) => x.target.closest('dialog').close()}>Close</button></div>
      </div>`
    : html`<form onSubmit=${submit}>
      ${act === 'resume' ? html`<p>The step that stopped (${run.steps.find((s) => s.status === 'HELD' || s.status === 'INTERRUPTED')?.name ?? '—'}) runs again from its start with fresh readings and decisions; no write is replayed. Your resume is listed for QA.</p>` : null}
      ${act === 'abort' ? html`<p class="alarm">Every PLC of the line is commanded to its last known-good recipe, a pending approval is withdrawn, and the batch is <strong>not released</strong>. This cannot be undone.</p>` : null}
      ${act === 'reassign' ? html`<p>Current QA reviewer: <strong>${run.approvalGate.reviewer ?? '—'}</strong></p>
        <label for="run-reassign-to">New QA reviewer (user id)</label>
        <input id="run-reassign-to" name="to" required autocomplete="off" value=${to} onInput=${(e) => setTo(e.target.value)} />` : null}
      <label for=${`run-${act}-reason`}>Reason (required)</label>
      <textarea id=${`run-${act}-reason`} name="reason" required minlength="3" maxlength="1000" rows="3"></textarea>
      ${signed ? html`<${MeaningSelect} id=${`run-${act}-meaning`} options=${options} value=${meaning} onChange=${setMeaning} /><${ErrorNote} error=${listError} />
        <p class="meaning" data-testid="act-meaning-shown">${chosen ? html`This signature means: <strong>${chosen.text}</strong>` : 'Choose the meaning from the site\u2019s list: nothing is chosen for you.'}</p>` : null}
      ${signed ? html`<label for=${`run-${act}-password`}>Password (re-entered to sign)</label>
        <input id=${`run-${act}-password`} name="password" type="password" autocomplete="current-password" required />` : null}
      <${ErrorNote} error=${error} />
      ${error ? html`<p class="quiet" data-testid="nothing-done">Nothing was changed.</p>` : null}
      <div class="actions"><button type="submit" disabled=${busy || (signed && !chosen)}>${act === 'resume' ? 'Resume run' : act === 'abort' ? 'Abort run (sign)' : 'Reassign (sign)'}</button> <button type="button" onClick=${(x) => x.target.closest('dialog').close()}>Cancel</button></div>
    </form>`}
  <//>`;
}

/** The buttons the signed-in person may use on this run now, and their dialogs. `onChange` reloads the run. */
export function RunActions({ s, run, onChange }) {
  const [act, setAct] = useState(null);
  // a dialog open when the run became final stays until it is closed (the abort's outcome is shown in it)
  const open = !FINAL.includes(run.status);
  if (!open && !act) return null;
  const role = s.user.role;
  const mayResume = open && STEERS.includes(role) && (run.status === 'HELD' || run.status === 'INTERRUPTED');
  const mayAbort = open && STEERS.includes(role);
  const mayReassign = open && REASSIGNS.includes(role);
  if (!mayResume && !mayAbort && !mayReassign && !act) return null;
  return html`<div class="actions run-actions" role="group" aria-label="Act on this run">
    ${mayResume ? html`<button type="button" data-testid="run-resume" onClick=${() => setAct('resume')}>Resume…</button>` : null}
    ${mayReassign ? html`<button type="button" data-testid="run-reassign" onClick=${() => setAct('reassign')}>Reassign QA reviewer…</button>` : null}
    ${mayAbort ? html`<button type="button" class="danger" data-testid="run-abort" onClick=${() => setAct('abort')}>Abort run…</button>` : null}
    ${act ? html`<${ActionDialog} act=${act} run=${run} onDone=${onChange} onClose=${() => setAct(null)} />` : null}
  </div>`;
}
