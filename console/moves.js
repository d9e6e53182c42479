// Setpoint moves waiting for a person, where people look (the line and the run pages): whom each waits for, what
// it moves (now → proposed against the approved limits), what it is for, since when, and the way to decide it (the
// approvals page signs it). Polled every 5 s. A role that may not see approvals (an operator) is told who decides
// instead of being shown an error. The move table and the "for" line are shared with the approvals page: both read
// them from the approval's `detail` as the daemon built it (GET /approvals), so what a reviewer reads is what the
// policy in force judges.
import { useEffect, useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { ErrorNote, fmt, html, time, unit } from './ui.js';
import { quantity } from './units.js';

const target = (v) => (v && typeof v === 'object' ? `${v.value} ${unit(v.unit)}`.trim() : String(v));
/** A value someone signs keeps every digit it has; only its unit is written the people's way. */
const signed = (v, u) => (typeof v === 'number' ? `${fmt(v)} ${unit(u)}`.trim() : '—');
// the press's in-process attributes by tag (as attributes.js charts them; not imported: that module loads uPlot)
const TITLES = { 'press.TabletWeight': 'tablet weight', 'press.Hardness': 'hardness', 'press.Thickness': 'thickness', 'press.CappingRate': 'capping rate' };
const words = (code) => String(code ?? '—').replace(/_/g, ' ');

/** The measured attributes a move serves, as its agent reasoned (`press.Hardness` 164.5 → 137.4 N), or its attribute's name. */
export function servesText(d) {
  const s = Array.isArray(d?.serves) ? d.serves : [];
  if (!s.length) return words(d?.attribute);
  return s.map((x) => `${TITLES[x.tag] ?? x.tag} ${quantity(x.from, x.unit)} → ${quantity(x.to, x.unit)}`).join(', ');
}

/** The line under a move: what it serves, and, when that is not the attribute itself, the class arbitration ranks it as. */
export function MoveFor({ d }) {
  const served = Array.isArray(d?.serves) && d.serves.length > 0;
  return html`<p data-testid="move-for"><strong>For:</strong> <span data-testid="move-serves">${servesText(d)}</span>${served ? html` <span class="quiet">(ranked in arbitration as a quality move: ${words(d.attribute)})</span>` : null}</p>`;
}

// the twin's figures an agent gives with a move: camelCase keys ending in their unit
const SUFFIX = [[/Mg$/, 'mg'], [/Pct$/, '%'], [/Mm$/, 'mm'], [/Ms$/, 'ms'], [/Kn$/, 'kN'], [/N$/, 'N'], [/Min$/, 'min'], [/C$/, 'Cel'], [/PerHour$/, '{tbl}/h']];
function predictedRows(p) {
  return Object.entries(p ?? {}).filter(([, v]) => typeof v === 'number').map(([k, v]) => {
    const hit = SUFFIX.find(([re]) => re.test(k));
    const name = (hit ? k.replace(hit[0], '') : k).replace(/([A-Z])/g, ' $1').toLowerCase().trim();
    return { k, name, text: hit ? quantity(v, hit[1]) : fmt(v) };
  });
}

/** The twin's prediction that came with the move, if it carries one. */
export function Predicted({ d }) {
  const rows = predictedRows(d?.predicted);
  if (!rows.length) return html`<p class="quiet" data-testid="move-predicted">No twin prediction came with this move.</p>`;
  return html`<p data-testid="move-predicted"><strong>The twin predicts</strong> (${d.model ? `${d.model.id} v${d.model.version}` : 'the agent\'s model'}): ${rows.map((r, i) => html`${i ? ' · ' : ''}<span data-key=${r.k}>${r.name} ${r.text}</span>`)}</p>`;
}

/** Each move of a write: now → proposed against the approved limits and maximum step (the policy's own figures). */
export function MoveTable({ item }) {
  const rows = item.detail?.table;
  if (!Array.isArray(rows)) return null;
  const read = rows.map((r) => r.currentAt).find(Boolean) ?? null;
  return html`<table class="moves values" data-testid="move-table"><caption class="sr">Moves of ${item.id}: value now, proposed, approved limits and maximum step</caption>
    <thead><tr><th scope="col">Setpoint</th><th scope="col">Now</th><th scope="col">Proposed</th><th scope="col">Change</th><th scope="col">Approved limits</th><th scope="col">Max step</th></tr></thead>
    <tbody>${rows.map((r) => {
      const l = r.limits;
      const flags = [r.inside === false ? 'outside the limits' : null, r.stepWithin === false ? 'larger than the max step' : null].filter(Boolean);
      return html`<tr data-setpoint=${r.setpoint} data-current=${r.current ?? ''} data-proposed=${r.proposed ?? ''} data-min=${l?.min ?? ''} data-max=${l?.max ?? ''} data-max-step=${l?.maxStep ?? ''}>
        <th scope="row"><code>${r.setpoint}</code></th>
        <td class="num">${r.current === null ? html`<span class="quiet">not read</span>` : quantity(r.current, r.unit)}</td>
        <td class="num"><strong>${r.proposed === null ? target(r.requested) : signed(r.proposed, r.unit)}</strong></td>
        <td class="num">${r.step === null ? '—' : `${r.proposed >= r.current ? '+' : '−'}${signed(r.step, r.unit)}`}${flags.length ? html` <strong class="refusal">⚠ ${flags.join(', ')}</strong>` : null}</td>
        <td class="num">${l ? `${fmt(l.min)}–${fmt(l.max)} ${unit(l.unit)}` : html`<span class="quiet">none approved</span>`}</td>
        <td class="num">${l ? signed(l.maxStep, l.unit) : '—'}</td></tr>`;
    })}</tbody></table>
    ${read ? html`<p class="quiet" data-testid="move-read-at">“Now” as read from the equipment at ${time(read)} (linekeeper's clock), when this list was fetched; the writer reads it again before it writes.</p>`
      : html`<p class="quiet" data-testid="move-read-at">“Now” not read: the equipment did not answer in time, or another tenant's batch is on the line (its values are not shown). The writer reads it before it writes.</p>`}`;
}

/** The tenant's waiting moves (only the run's when `run` is given). */
export function PendingMoves({ run }) {
  const [items, setItems] = useState(null);
  const [error, setError] = useState(null);
  const [hidden, setHidden] = useState(false);
  useEffect(() => {
    let live = true;
    const load = () => api('GET', '/approvals')
      .then((r) => live && (setItems(r.items.filter((a) => a.kind === 'setpoint_write' && (!run || a.run === run))), setError(null)))
      // a failed poll: the rows on screen answered an earlier question and go, with the reason
      .catch((e) => live && (e?.status === 403 ? setHidden(true) : (setItems(null), setError(e))));
    load();
    const t = setInterval(load, 5000);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [run]);
  if (hidden) return html`<p class="quiet" data-testid="pending-moves">Moves waiting for a person are decided by the batch's process engineer or QA.</p>`;
  const moveText = (m) => (Array.isArray(m.detail.table)
    ? m.detail.table.map((r) => `${r.setpoint} ${r.current === null ? '' : `${quantity(r.current, r.unit)} `}→ ${r.proposed === null ? target(r.requested) : signed(r.proposed, r.unit)}${r.limits ? ` (approved ${fmt(r.limits.min)}–${fmt(r.limits.max)} ${unit(r.limits.unit)}, step ≤ ${signed(r.limits.maxStep, r.limits.unit)})` : ''}`)
    : (m.detail.moves ?? []).map((x) => `${x.setpoint} → ${target(x.value)}`)).join(', ');
  return html`<section aria-labelledby="moves-h" data-testid="pending-moves">
    <h2 id="moves-h">Moves waiting for a person</h2>
    <${ErrorNote} error=${error} />
    ${items && items.length === 0 ? html`<p class="quiet">No move waits for a person.</p>` : null}
    ${items && items.length > 0 ? html`<table><caption class="sr">Setpoint moves waiting for a person</caption>
      <thead><tr><th scope="col">Waits for</th><th scope="col">Move (now → proposed, approved limits)</th><th scope="col">For</th><th scope="col">Agent</th><th scope="col">Since</th><th scope="col">Run</th><th scope="col">Decide</th></tr></thead>
      <tbody>${items.map((m) => html`<tr data-move=${m.id}>
        <td>${m.needs === 'qa' ? 'QA' : (m.reviewer ?? 'the batch\'s reviewer (none assigned)')}</td>
        <td>${moveText(m)}</td>
        <td>${servesText(m.detail)}</td>
        <td>${m.detail.agent}</td><td>${time(m.requestedAt)}</td>
        <td>${m.run ? html`<a href=${`#/runs/${m.run}`}>${m.run}</a>` : '—'}</td>
        <td><a href="#/approvals">sign in Approvals</a> · <code>linekeeper moves approve ${m.id}</code></td></tr>`)}</tbody></table>` : null}
  </section>`;
}
