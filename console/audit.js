// Audit: the auditor's desk. Search the tenant's trail by actor, action, batch, run, agent, tool, reviewer and
// day (date pickers: a day alone means that whole day in UTC; `to` is inclusive of its day); each entry opens
// to show everything it records; export what the search finds (the JSONL bundle that verifies offline, CSV, the
// PDF report); the chain's verify status and head. A failed search or re-check leaves nothing stale on screen:
// the rows go, the verdict returns to unknown, and the reason is said; so does a daemon that stops answering.
// Sign-ins, failed attempts, re-authentications for a signature and other account events live on the site chain:
// "People's sign-ins and accounts" searches that chain for the tenant's people (GET /audit/people), so an auditor
// finds everything a person did on a day, the actor being the person.
import { useEffect, useRef, useState } from '../vendor/hooks.js';
import { api, download, onLink } from './api.js';
import { Badge, ErrorNote, html, short, time } from './ui.js';

const FIELDS = [
  ['actor', 'Actor (who)', 'o.operator'], ['action', 'Action', 'run.start'], ['batch', 'Batch', ''], ['run', 'Run', ''],
  ['agent', 'Agent', ''], ['tool', 'Tool', ''], ['reviewer', 'Reviewer', ''],
];
/** The site chain's view is about people: only these filters apply to it. */
const PEOPLE_FIELDS = new Set(['actor', 'action', 'from', 'to']);
const TRAILS = [['tenant', 'The tenant\u2019s chain', '/audit'], ['people', 'People\u2019s sign-ins and accounts (site chain)', '/audit/people']];
const DAYS = [['from', 'From day (UTC)'], ['to', 'To day (UTC, inclusive)']];
// what an entry holds beyond its row, in the order a reader wants it
const DETAIL = [['reason', 'Reason'], ['old', 'Old value'], ['new', 'New value'], ['args', 'Arguments'], ['result', 'Result'], ['intent', 'Intent'], ['subject', 'Subject']];

const shown = (v) => (v === null || v === undefined ? null : typeof v === 'object' ? JSON.stringify(v, null, 2) : String(v));

function Entry({ e, open, onToggle }) {
  const id = `audit-entry-${e.seq}`;
  return html`<tr>
      <td class="num"><button type="button" class="link" aria-expanded=${open ? 'true' : 'false'} aria-controls=${id} onClick=${onToggle}>
        <span aria-hidden="true">${open ? '▾' : '▸'} </span>#${e.seq}<span class="sr"> details</span></button></td>
      <td>${time(e.ts)}</td><td>${e.actor}</td><td>${e.kind}</td><td>${e.action}</td>
      <td>${e.subject && Object.keys(e.subject).length ? Object.entries(e.subject).map(([k, v]) => `${k} ${v}`).join(' · ') : e.tenant === 'site' && typeof e.args?.user === 'string' ? `account ${e.args.user}` : ''}</td>
      <td>${e.signature ? `${e.signature.name}: ${e.signature.meaning}, ${time(e.signature.time)}` : ''}</td></tr>
    ${open ? html`<tr id=${id} class="entry-detail" data-testid="audit-entry-detail"><td colspan="7"><dl>
      ${DETAIL.map(([k, label]) => (shown(e[k]) === null ? null : html`<dt>${label}</dt><dd>${typeof e[k] === 'object' ? html`<pre>${shown(e[k])}</pre>` : shown(e[k])}</dd>`))}
      ${e.signature ? html`<dt>Signature</dt><dd>${e.signature.name} (${e.signature.user}) · ${e.signature.meaning} · ${time(e.signature.time)}</dd>` : null}
      <dt>Entry hash</dt><dd><code>${e.hash}</code></dd><dt>Previous hash</dt><dd><code>${e.prevHash ?? e.prev_hash ?? '—'}</code></dd>
    </dl></td></tr>` : null}`;
}

export function AuditPage({ s }) {
  const [filter, setFilter] = useState({});
  const [page, setPage] = useState(null);
  const [error, setError] = useState(null);
  const [verify, setVerify] = useState(null);
  const [verifyError, setVerifyError] = useState(null);
  const [got, setGot] = useState(null);
  const [open, setOpen] = useState(() => new Set());
  // the trail chosen in the form, and the one the rows on screen answer (Show more and exports follow the rows)
  const [trail, setTrail] = useState('tenant');
  const [asked, setAsked] = useState('tenant');
  const qs = (f, extra = {}) => new URLSearchParams(Object.entries({ ...f, ...extra }).filter(([, v]) => v)).toString();
  const pathOf = (t) => TRAILS.find(([k]) => k === t)[2];
  const search = (f, cursor, t = asked) => api('GET', `${pathOf(t)}?${qs(f, { limit: '100', ...(cursor ? { cursor } : {}) })}`)
    .then((p) => setPage((old) => (cursor && old ? { items: [...old.items, ...p.items], next: p.next } : p)))
    .catch((err) => {
      // the rows on screen answered another question: they go, and the reason is said
      setPage(null);
      setError(err);
    });
  // a failed re-check is no verdict: back to unknown rather than keeping an earlier "verified"; while a re-check
  // runs the earlier verdict is not shown either, and only the latest check's answer counts
  const checks = useRef(0);
  const check = () => {
    const n = ++checks.current;
    setVerify(null);
    setVerifyError(null);
    return api('GET', '/audit/verify').then((v) => n === checks.current && setVerify(v)).catch((err) => {
      if (n !== checks.current) return;
      setVerify({ unknown: true });
      setVerifyError(err);
    });
  };
  useEffect(() => {
    search({});
    check();
    // a daemon that stops answering vouches for nothing any more: the verdict returns to unknown until checked again
    return onLink((l) => {
      if (!l.away) return;
      checks.current++;
      setVerify({ unknown: true, away: true });
    });
  }, []);
  const submit = (e) => {
    e.preventDefault();
    const form = Object.fromEntries([...new FormData(e.target)].map(([k, v]) => [k, String(v).trim()]).filter(([, v]) => v));
    const t = form.trail === 'people' ? 'people' : 'tenant';
    delete form.trail;
    // the site chain's view takes only the person, the action and the days
    const f = t === 'people' ? Object.fromEntries(Object.entries(form).filter(([k]) => PEOPLE_FIELDS.has(k))) : form;
    setAsked(t);
    setFilter(f);
    setError(null);
    setOpen(new Set());
    search(f, undefined, t);
  };
  const toggle = (seq) => setOpen((o) => {
    const n = new Set(o);
    if (!n.delete(seq)) n.add(seq);
    return n;
  });
  const exp = (format) => download(`/audit/export?${qs(filter, { format })}`, `audit.${format}`).then(setGot).catch(setError);
  return html`<h1 tabindex="-1">Audit trail of ${s.tenant}</h1>
    <section aria-labelledby="verify-h" class="card">
      <h2 id="verify-h">Chain verification</h2>
      ${!verify ? html`<p>Verifying…</p>` : verify.unknown ? html`<p role="status" data-testid="verify-status"><${Badge} status="muted" label="unknown" /> ${verify.away ? 'linekeeper stopped answering after the last check: verify again once it answers' : 'the last check did not complete'}</p>`
        : html`<p role="status" data-testid="verify-status"><${Badge} status=${verify.ok ? 'ok' : 'error'} label=${verify.ok ? 'verified' : 'BROKEN'} />
        ${verify.count} entries · head #${verify.head.seq} <code>${short(verify.head.hash, 16)}</code> · ${verify.checkpoints} signed checkpoints${verify.unanchored ? `, ${verify.unanchored} entries after the last` : ''}
        ${verify.damage ? html` · first damage: ${verify.damage.kind} at #${verify.damage.seq}: ${verify.damage.detail}` : null}</p>`}
      <${ErrorNote} error=${verifyError} />
      <button type="button" onClick=${check}>Verify again</button>
    </section>
    <form class="filters" onSubmit=${submit} aria-label="Search the audit trail">
      <fieldset><legend>Trail</legend>${TRAILS.map(([k, label]) => html`<label><input type="radio" name="trail" value=${k} checked=${trail === k} onChange=${() => setTrail(k)} /> ${label}</label>`)}</fieldset>
      ${FIELDS.map(([k, label, eg]) => html`<span><label for=${`audit-${k}`}>${trail === 'people' && k === 'actor' ? 'Person (who, or whose account)' : label}</label><input id=${`audit-${k}`} name=${k} value=${filter[k] ?? ''} placeholder=${eg || null} disabled=${trail === 'people' && !PEOPLE_FIELDS.has(k)} /></span>`)}
      ${DAYS.map(([k, label]) => html`<span><label for=${`audit-${k}`}>${label}</label><input type="date" id=${`audit-${k}`} name=${k} value=${filter[k] ?? ''} /></span>`)}
      <button type="submit">Search</button>
    </form>
    ${asked === 'people'
      ? html`<p class="quiet" data-testid="people-note">Entries of the site chain about the tenant's people: what each person did and what was done about their account (a failed sign-in is made by <code>system</code> and names the account). Exports cover the tenant's chain; the site chain is exported by the site's administrator (<code>linekeeper audit export --tenant site</code>).</p>`
      : html`<div class="actions" role="group" aria-label="Export what the search finds">
      <button type="button" onClick=${() => exp('jsonl')}>Export JSONL bundle</button> <button type="button" onClick=${() => exp('csv')}>Export CSV</button> <button type="button" onClick=${() => exp('pdf')}>Export PDF</button>
      ${got ? html`<span role="status"> Downloaded ${got.name} (${got.bytes} bytes).</span>` : null}
    </div>`}
    <${ErrorNote} error=${error} />
    ${page ? html`<table class="audit"><caption class="sr">Audit entries in chain order</caption>
      <thead><tr><th scope="col">#</th><th scope="col">Time</th><th scope="col">Actor</th><th scope="col">Kind</th><th scope="col">Action</th><th scope="col">Subject</th><th scope="col">Signature</th></tr></thead>
      <tbody>${page.items.map((e) => html`<${Entry} key=${e.seq} e=${e} open=${open.has(e.seq)} onToggle=${() => toggle(e.seq)} />`)}</tbody></table>
      <p data-testid="audit-count">${page.items.length} ${page.items.length === 1 ? 'entry' : 'entries'} shown${page.next ? ' (more below)' : ''}.</p>
      ${page.next ? html`<button type="button" onClick=${() => search(filter, page.next)}>Show more</button>` : null}` : null}`;
}
