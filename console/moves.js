// Setpoint moves waiting for a person, where people look (the line and the run pages): whom each waits for, what
// it moves, since when, and the way to decide it (the approvals page signs it). Polled every 5 s. A role that
// may not see approvals (an operator) is told who decides instead of being shown an error.
import { useEffect, useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { ErrorNote, html, time, unit } from './ui.js';

const target = (v) => (v && typeof v === 'object' ? `${v.value} ${unit(v.unit)}`.trim() : String(v));

/** The tenant's waiting moves (only the run's when `run` is given). */
export function PendingMoves({ run }) {
  const [items, setItems] = useState(null);
  const [error, setError] = useState(null);
  const [hidden, setHidden] = useState(false);
  useEffect(() => {
    let live = true;
    const load = () => api('GET', '/approvals')
      .then((r) => live && (setItems(r.items.filter((a) => a.kind === 'setpoint_write' && (!run || a.run === run))), setError(null)))
      .catch((e) => live && (e?.status === 403 ? setHidden(true) : setError(e)));
    load();
    const t = setInterval(load, 5000);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [run]);
  if (hidden) return html`<p class="quiet" data-testid="pending-moves">Moves waiting for a person are decided by the batch's process engineer or QA.</p>`;
  return html`<section aria-labelledby="moves-h" data-testid="pending-moves">
    <h2 id="moves-h">Moves waiting for a person</h2>
    <${ErrorNote} error=${error} />
    ${items && items.length === 0 ? html`<p class="quiet">No move waits for a person.</p>` : null}
    ${items && items.length > 0 ? html`<table><caption class="sr">Setpoint moves waiting for a person</caption>
      <thead><tr><th scope="col">Waits for</th><th scope="col">Move</th><th scope="col">Agent</th><th scope="col">Since</th><th scope="col">Run</th><th scope="col">Decide</th></tr></thead>
      <tbody>${items.map((m) => html`<tr data-move=${m.id}>
        <td>${m.needs === 'qa' ? 'QA' : (m.reviewer ?? 'the batch\'s reviewer (none assigned)')}</td>
        <td>${(m.detail.moves ?? []).map((x) => `${x.setpoint} → ${target(x.value)}`).join(', ')}</td>
        <td>${m.detail.agent}</td><td>${time(m.requestedAt)}</td>
        <td>${m.run ? html`<a href=${`#/runs/${m.run}`}>${m.run}</a>` : '—'}</td>
        <td><a href="#/approvals">sign in Approvals</a> · <code>linekeeper moves approve ${m.id}</code></td></tr>`)}</tbody></table>` : null}
  </section>`;
}
