// Review by exception: a run's specification table (every specification of the batch record with its data and
// PASS, FAIL or NOT EVALUATED — never a pass without data) and its exceptions (what deviated, how severe, in which
// step, the evidence, open or closed by whom and why). Shown on the run page and, before the signing button, on
// the QA approval page. A QA reviewer closes an exception here with a comment, an optional deviation reference
// and the password entered again (a signature for a critical or major one, whose meaning is chosen from the site's
// list: console/meanings.js); a release is refused while one of those is open, and the panel says so.
import { useEffect, useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { MeaningSelect, useMeanings } from './meanings.js';
import { Badge, Dialog, ErrorNote, fmt, html, time } from './ui.js';

const VERDICT = { PASS: ['ok', 'PASS'], FAIL: ['error', 'FAIL'], NOT_EVALUATED: ['pending', 'NOT EVALUATED'] };

function dataText(d) {
  if (!d || !d.n) return d?.prediction ? `prediction ${fmt(d.prediction.pct)} % at ${fmt(d.prediction.atMin)} min` : 'no data';
  const range = d.min !== undefined && d.max !== undefined && d.n > 1 ? `, ${fmt(d.min)}–${fmt(d.max)}` : '';
  return `n ${d.n}, ${d.n > 1 ? 'mean ' : ''}${fmt(d.mean)}${range} ${d.unit ?? ''}${d.rsdPct !== undefined ? `, RSD ${fmt(d.rsdPct)} %` : ''}`;
}

export function SpecTable({ table }) {
  if (!table) return html`<p class="notice" data-testid="spec-none">Specifications are evaluated at the approval gate, on the run's own data.</p>`;
  return html`<table class="spec" data-testid="spec-table" aria-label="Specifications">
    <caption>Specifications: <strong>${table.verdict}</strong></caption>
    <thead><tr><th scope="col">Specification</th><th scope="col">Limits</th><th scope="col">Data</th><th scope="col">Verdict</th><th scope="col">Why</th></tr></thead>
    <tbody>${table.results.map((r) => {
      const [tone, word] = VERDICT[r.verdict] ?? ['muted', r.verdict];
      return html`<tr data-verdict=${r.verdict}><th scope="row">${r.title}</th><td>${r.limits}</td><td>${dataText(r.data)}</td><td><${Badge} status=${tone} label=${word} /></td><td class="detail">${r.reason}</td></tr>`;
    })}</tbody></table>`;
}

function CloseDialog({ e, onDone, onClose }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  // a critical or major closure is signed: its meaning from the site's list, nothing pre-selected
  const signed = e.severity !== 'minor';
  const [meaning, setMeaning] = useState('');
  const { options, error: listError } = useMeanings('exception_close', { exception: e.id, kind: e.kind, severity: e.severity, batch: e.batch ?? '', run: e.run ?? '' });
  const chosen = options?.find((o) => o.id === meaning) ?? null;
  const submit = async (ev) => {
    ev.preventDefault();
    const f = new FormData(ev.target);
    setBusy(true);
    setError(null);
    try {
      const deviation = String(f.get('deviation') ?? '').trim();
      if (signed && !chosen) throw new Error('choose the meaning of your signature from the list');
      await api('POST', `/exceptions/${e.id}/close`, { comment: String(f.get('comment')), ...(deviation ? { deviation } : {}), password: String(f.get('password')), ...(signed ? { meaning: chosen.text } : {}) });
      onDone();
      ev.target.closest('dialog').close();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return html`<${Dialog} id="close-exception" title=${`Close ${e.kind} exception`} onClose=${onClose}>
    <form onSubmit=${submit}>
      <p><strong>${e.title}</strong> (${e.severity}${e.step ? `, step ${e.step}` : ''})</p>
      <label for="exc-comment">Comment (required: what was found and why the batch may proceed)</label>
      <textarea id="exc-comment" name="comment" required minlength="3" maxlength="2000" rows="3"></textarea>
      <label for="exc-deviation">Deviation or CAPA reference</label>
      <input id="exc-deviation" name="deviation" placeholder="DEV-2026-0142" />
      ${signed ? html`<${MeaningSelect} id="exc-meaning" options=${options} value=${meaning} onChange=${setMeaning} /><${ErrorNote} error=${listError} />` : null}
      <label for="exc-password">Password (re-entered${e.severity === 'minor' ? '' : ' to sign'})</label>
      <input id="exc-password" name="password" type="password" autocomplete="current-password" required />
      <${ErrorNote} error=${error} />
      ${error ? html`<p class="quiet" data-testid="nothing-closed">Nothing was closed.</p>` : null}
      <div class="actions"><button type="submit" disabled=${busy || (signed && !chosen)}>Close exception</button> <button type="button" onClick=${(x) => x.target.closest('dialog').close()}>Cancel</button></div>
    </form>
  <//>`;
}

/** The run's specification table and exceptions; refreshes itself; `onChange(list)` after each load. */
export function ExceptionsPanel({ s, run, onChange }) {
  const [list, setList] = useState(null);
  const [error, setError] = useState(null);
  const [closing, setClosing] = useState(null);
  const load = () => api('GET', `/runs/${run}/exceptions`).then((l) => {
    setList(l);
    onChange?.(l);
  }).catch(setError);
  useEffect(() => {
    load();
    const t = setInterval(load, 3000);
    return () => clearInterval(t);
  }, [run]);
  const qa = s.user.role === 'qa_reviewer';
  const mayClose = (e) => e.status === 'open' && (qa || (e.severity === 'minor' && s.user.role === 'process_engineer'));
  return html`<section class="exceptions" aria-labelledby=${`exc-${run}`} data-testid="exceptions-panel">
    <h2 id=${`exc-${run}`}>Review by exception</h2>
    <${ErrorNote} error=${error} />
    ${list ? html`
      <${SpecTable} table=${list.specTable} />
      ${list.counts.blocking > 0
        ? html`<p class="alarm" role="status" data-testid="exceptions-blocking">${list.counts.blocking} critical or major exception${list.counts.blocking === 1 ? ' is' : 's are'} open: the batch cannot be released until QA has closed ${list.counts.blocking === 1 ? 'it' : 'each'} with a comment.</p>`
        : html`<p class="notice" role="status">${list.counts.total === 0 ? 'No exception was raised in this run.' : `${list.counts.total} exception${list.counts.total === 1 ? '' : 's'}, ${list.counts.open} open, none blocking the release.`}</p>`}
      ${list.items.length ? html`<table class="exc" aria-label="Exceptions">
        <thead><tr><th scope="col">Kind</th><th scope="col">Severity</th><th scope="col">Step</th><th scope="col">What</th><th scope="col">Raised</th><th scope="col">Status</th><th scope="col"></th></tr></thead>
        <tbody>${list.items.map((e) => html`<tr data-exception=${e.id} data-status=${e.status}>
          <td><code>${e.kind}</code></td><td><${Badge} status=${e.severity === 'minor' ? 'pending' : 'error'} label=${e.severity} /></td><td>${e.step ?? '—'}</td>
          <td>${e.title}</td><td>${time(e.raisedAt)}</td>
          <td>${e.closure ? html`<${Badge} status="ok" label="closed" /> by ${e.closure.name} (${e.closure.user}), ${time(e.closure.at)}: ${e.closure.comment}${e.closure.deviation ? ` [${e.closure.deviation}]` : ''}` : html`<${Badge} status=${e.blocking ? 'error' : 'pending'} label=${e.blocking ? 'open, blocks release' : 'open'} />`}</td>
          <td>${mayClose(e) ? html`<button type="button" onClick=${() => setClosing(e)}>Close…</button>` : null}</td>
        </tr>`)}</tbody></table>` : null}` : html`<p class="quiet">Loading…</p>`}
    ${closing ? html`<${CloseDialog} e=${closing} onDone=${load} onClose=${() => setClosing(null)} />` : null}
  </section>`;
}
