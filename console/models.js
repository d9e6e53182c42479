// Models: a card per model version — kind, status, pinned sites, artefact hash, the card's figures — and the
// lifecycle actions the role allows (promote draft → shadow → validated, retire), each signed with the password and
// a meaning chosen from the site's list for the status the model goes to (console/meanings.js).
import { useEffect, useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { MeaningSelect, useMeanings } from './meanings.js';
import { Badge, Dialog, ErrorNote, fmt, html, short, time } from './ui.js';

const NEXT = { draft: 'shadow', shadow: 'validated' };

function ChangeDialog({ target, onClose, onDone }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [meaning, setMeaning] = useState('');
  const { options, error: listError } = useMeanings('model_change', { model: target.id, from: target.from, to: target.to }, target.to);
  const chosen = options?.find((o) => o.id === meaning) ?? null;
  const submit = async (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    setBusy(true);
    try {
      if (!chosen) throw new Error('choose the meaning of your signature from the list');
      const signed = { changeRef: String(f.get('changeRef')), reason: String(f.get('reason')), password: String(f.get('password')), meaning: chosen.text };
      if (target.to === 'retired') await api('POST', `/models/${encodeURIComponent(target.id)}/retire`, signed);
      else await api('POST', `/models/${encodeURIComponent(target.id)}/promote`, { to: target.to, ...signed });
      onDone();
      e.target.closest('dialog').close();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return html`<${Dialog} id="model-change" title=${`${target.to === 'retired' ? 'Retire' : 'Promote'} ${target.id}`} onClose=${onClose}>
    <form onSubmit=${submit}>
      <p>You are signing <strong>${target.id} ${target.from} → ${target.to}</strong>${target.to !== 'retired' ? ' (after the golden-dataset evaluation passes)' : ''}.</p>
      <${MeaningSelect} id="mc-meaning" options=${options} value=${meaning} onChange=${setMeaning} /><${ErrorNote} error=${listError} />
      <p class="meaning" data-testid="model-meaning-shown">${chosen ? html`This signature means: <strong>${chosen.text}</strong>` : 'Choose the meaning from the site\u2019s list: nothing is chosen for you.'}</p>
      <label for="mc-ref">Change reference</label><input id="mc-ref" name="changeRef" required placeholder="CC-2026-0001" />
      <label for="mc-reason">Reason</label><input id="mc-reason" name="reason" required />
      <label for="mc-password">Password (re-entered to sign)</label><input id="mc-password" name="password" type="password" autocomplete="current-password" required />
      <${ErrorNote} error=${error} />
      <div class="actions"><button type="submit" disabled=${busy || !chosen}>Sign</button> <button type="button" onClick=${(e) => e.target.closest('dialog').close()}>Cancel</button></div>
    </form><//>`;
}

function figures(card) {
  if (!card || typeof card !== 'object') return [];
  return Object.entries(card).filter(([, v]) => typeof v === 'number' || typeof v === 'string').slice(0, 8);
}

export function ModelsPage({ s }) {
  const [models, setModels] = useState(null);
  const [error, setError] = useState(null);
  const [change, setChange] = useState(null);
  const load = () => api('GET', '/models').then((r) => setModels(r.items)).catch(setError);
  useEffect(() => {
    load();
  }, []);
  // the route admits these; the bundle's approvers.change may narrow it further (the daemon says so, before any password)
  const may = s.user.role === 'qa_reviewer' || s.user.role === 'process_engineer';
  return html`<h1 tabindex="-1">Models of ${s.tenant}</h1>
    <${ErrorNote} error=${error} />
    ${may ? null : html`<p class="quiet">Lifecycle changes are signed by a process engineer or QA reviewer the policy bundle's change approvers name.</p>`}
    <div class="cards">${(models ?? []).map((m) => html`<section class="card" aria-labelledby=${`m-${m.id}`}>
      <h2 id=${`m-${m.id}`}>${m.id} <small>v${m.version}</small></h2>
      <p><${Badge} status=${m.status} /> · ${m.kind}</p>
      <dl><dt>Pinned sites</dt><dd>${m.sites.join(', ') || '—'}</dd><dt>SHA-256</dt><dd><code>${short(m.sha256, 16)}</code></dd>
        <dt>Last change</dt><dd>${time(m.changedAt)} by ${m.changedBy}${m.changeRef ? ` (${m.changeRef})` : ''}</dd>
        ${figures(m.card).map(([k, v]) => html`<dt>${k}</dt><dd>${fmt(v)}</dd>`)}</dl>
      ${may && m.status !== 'retired' ? html`<div class="actions">
        ${NEXT[m.status] ? html`<button type="button" onClick=${() => setChange({ id: m.id, from: m.status, to: NEXT[m.status] })}>Promote to ${NEXT[m.status]}…</button> ` : null}
        <button type="button" onClick=${() => setChange({ id: m.id, from: m.status, to: 'retired' })}>Retire…</button></div>` : null}
    </section>`)}</div>
    ${change ? html`<${ChangeDialog} target=${change} onClose=${() => setChange(null)} onDone=${load} />` : null}`;
}
