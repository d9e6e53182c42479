// Audit: search the tenant's trail by batch, run, agent, tool, reviewer and time; export it (the JSONL bundle
// that verifies offline, CSV, the PDF report); the chain's verify status and head.
import { useEffect, useState } from '../vendor/hooks.js';
import { api, download } from './api.js';
import { Badge, ErrorNote, html, short, time } from './ui.js';

const FIELDS = [['batch', 'Batch'], ['run', 'Run'], ['agent', 'Agent'], ['tool', 'Tool'], ['reviewer', 'Reviewer'], ['from', 'From (ISO UTC)'], ['to', 'To (ISO UTC)']];

export function AuditPage({ s }) {
  const [filter, setFilter] = useState({});
  const [page, setPage] = useState(null);
  const [error, setError] = useState(null);
  const [verify, setVerify] = useState(null);
  const [got, setGot] = useState(null);
  const qs = (f, extra = {}) => new URLSearchParams(Object.entries({ ...f, ...extra }).filter(([, v]) => v)).toString();
  const search = (f, cursor) => api('GET', `/audit?${qs(f, { limit: '100', ...(cursor ? { cursor } : {}) })}`)
    .then((p) => setPage((old) => (cursor && old ? { items: [...old.items, ...p.items], next: p.next } : p))).catch(setError);
  const check = () => api('GET', '/audit/verify').then(setVerify).catch(setError);
  useEffect(() => {
    search({});
    check();
  }, []);
  const submit = (e) => {
    e.preventDefault();
    const f = Object.fromEntries([...new FormData(e.target)].map(([k, v]) => [k, String(v).trim()]).filter(([, v]) => v));
    setFilter(f);
    setError(null);
    search(f);
  };
  const exp = (format) => download(`/audit/export?${qs(filter, { format })}`, `audit.${format}`).then(setGot).catch(setError);
  return html`<h1 tabindex="-1">Audit trail of ${s.tenant}</h1>
    <section aria-labelledby="verify-h" class="card">
      <h2 id="verify-h">Chain verification</h2>
      ${verify ? html`<p role="status" data-testid="verify-status"><${Badge} status=${verify.ok ? 'ok' : 'error'} label=${verify.ok ? 'verified' : 'BROKEN'} />
        ${verify.count} entries · head #${verify.head.seq} <code>${short(verify.head.hash, 16)}</code> · ${verify.checkpoints} signed checkpoints${verify.unanchored ? `, ${verify.unanchored} entries after the last` : ''}
        ${verify.damage ? html` · first damage: ${verify.damage.kind} at #${verify.damage.seq}: ${verify.damage.detail}` : null}</p>` : html`<p>Verifying…</p>`}
      <button type="button" onClick=${check}>Verify again</button>
    </section>
    <form class="filters" onSubmit=${submit} aria-label="Search the audit trail">
      ${FIELDS.map(([k, label]) => html`<span><label for=${`audit-${k}`}>${label}</label><input id=${`audit-${k}`} name=${k} value=${filter[k] ?? ''} /></span>`)}
      <button type="submit">Search</button>
    </form>
    <div class="actions" role="group" aria-label="Export what the search finds">
      <button type="button" onClick=${() => exp('jsonl')}>Export JSONL bundle</button> <button type="button" onClick=${() => exp('csv')}>Export CSV</button> <button type="button" onClick=${() => exp('pdf')}>Export PDF</button>
      ${got ? html`<span role="status"> Downloaded ${got.name} (${got.bytes} bytes).</span>` : null}
    </div>
    <${ErrorNote} error=${error} />
    ${page ? html`<table class="audit"><caption class="sr">Audit entries in chain order</caption>
      <thead><tr><th scope="col">#</th><th scope="col">Time</th><th scope="col">Actor</th><th scope="col">Kind</th><th scope="col">Action</th><th scope="col">Subject</th><th scope="col">Signature</th></tr></thead>
      <tbody>${page.items.map((e) => html`<tr><td class="num">${e.seq}</td><td>${time(e.ts)}</td><td>${e.actor}</td><td>${e.kind}</td><td>${e.action}</td>
        <td>${e.subject ? Object.entries(e.subject).map(([k, v]) => `${k} ${v}`).join(' · ') : ''}</td>
        <td>${e.signature ? `${e.signature.name}: ${e.signature.meaning}, ${time(e.signature.time)}` : ''}</td></tr>`)}</tbody></table>
      <p>${page.items.length} entries shown.</p>
      ${page.next ? html`<button type="button" onClick=${() => search(filter, page.next)}>Show more</button>` : null}` : null}`;
}
