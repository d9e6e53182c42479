// Autonomy per agent and per setpoint, with the history of changes (who, when, why, change reference).
// Lowering is one click for anyone who works the line; raising is one level at a time, by a role the policy
// bundle permits, with a change reference, signed by re-entering the password, its meaning chosen from the site's
// list (console/meanings.js).
import { useEffect, useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { MeaningSelect, useMeanings } from './meanings.js';
import { Dialog, ErrorNote, html, time } from './ui.js';

const LEVELS = ['L0', 'L1', 'L2', 'L3'];
const CHANGERS = ['operator', 'process_engineer', 'qa_reviewer'];

function RaiseDialog({ target, onClose, onDone }) {
  const [error, setError] = useState(null);
  // the change reference as typed: the meaning of a raise names it
  const [changeRef, setChangeRef] = useState('');
  const [meaning, setMeaning] = useState('');
  const { options, error: listError } = useMeanings('autonomy_raise', { target: target.name, from: target.from, to: target.to, change: changeRef.trim() || '…' });
  const chosen = options?.find((o) => o.id === meaning) ?? null;
  const submit = async (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    try {
      if (!chosen) throw new Error('choose the meaning of your signature from the list');
      await api('PUT', '/autonomy', { ...target.key, level: target.to, changeRef: changeRef.trim(), reason: String(f.get('reason')), password: String(f.get('password')), meaning: chosen.text });
      onDone();
      e.target.closest('dialog').close();
    } catch (err) {
      setError(err);
    }
  };
  return html`<${Dialog} id="raise" title=${`Raise ${target.name} to ${target.to}`} onClose=${onClose}>
    <form onSubmit=${submit}>
      <p>You are signing: <strong>raise ${target.name} from ${target.from} to ${target.to}</strong>.</p>
      <label for="raise-ref">Change reference</label><input id="raise-ref" name="changeRef" required placeholder="CC-2026-0001" value=${changeRef} onInput=${(e) => setChangeRef(e.target.value)} />
      <${MeaningSelect} id="raise-meaning" options=${options} value=${meaning} onChange=${setMeaning} /><${ErrorNote} error=${listError} />
      <p class="meaning" data-testid="raise-meaning-shown">${chosen ? html`This signature means: <strong>${chosen.text}</strong>` : 'Choose the meaning from the site\u2019s list: nothing is chosen for you.'}</p>
      <label for="raise-reason">Reason</label><input id="raise-reason" name="reason" required />
      <label for="raise-password">Password (re-entered to sign)</label><input id="raise-password" name="password" type="password" autocomplete="current-password" required />
      <${ErrorNote} error=${error} />
      <div class="actions"><button type="submit" disabled=${!chosen}>Sign and raise</button> <button type="button" onClick=${(e) => e.target.closest('dialog').close()}>Cancel</button></div>
    </form><//>`;
}

export function AutonomyPage({ s }) {
  const [a, setA] = useState(null);
  const [error, setError] = useState(null);
  const [raise, setRaise] = useState(null);
  const load = () => api('GET', '/autonomy').then(setA).catch(setError);
  useEffect(() => {
    load();
  }, []);
  const may = CHANGERS.includes(s.user.role);
  const lower = (key, name, level) => api('PUT', '/autonomy', { ...key, level: LEVELS[LEVELS.indexOf(level) - 1], reason: `lowered from the console by ${s.user.id}` }).then(load).catch(setError);
  const row = (key, name, level, bundleLevel, m) => {
    const i = LEVELS.indexOf(level);
    const up = LEVELS[i + 1];
    const canRaise = may && up && (a.raiseRoles[up] ?? []).includes(s.user.role);
    const source = m.source === 'changed' ? `changed by ${m.by}${m.changeRef ? ` (${m.changeRef})` : ''}` : 'bundle';
    return html`<tr><th scope="row">${name}</th><td><strong>${level}</strong></td><td>${bundleLevel ?? '—'}</td><td>${source}</td><td>
      ${may && i > 0 ? html`<button type="button" onClick=${() => lower(key, name, level)} aria-label=${`Lower ${name} to ${LEVELS[i - 1]}`}>Lower to ${LEVELS[i - 1]}</button> ` : null}
      ${canRaise ? html`<button type="button" onClick=${() => setRaise({ key, name, from: level, to: up })} aria-label=${`Raise ${name} to ${up}`}>Raise to ${up}…</button>` : null}</td></tr>`;
  };
  return html`<h1 tabindex="-1">Autonomy</h1>
    <${ErrorNote} error=${error} />
    ${a ? html`<p class="quiet">Levels of ${s.tenant} (a change here governs this tenant's runs only) under policy bundle <code>${a.bundleVersion.slice(0, 12)}…</code>. Raising to L1: ${a.raiseRoles.L1.join(', ')}; L2: ${a.raiseRoles.L2.join(', ')}; L3: ${a.raiseRoles.L3.join(', ')}.</p>
      <h2>Agents</h2>
      <table><caption class="sr">Autonomy of each agent</caption><thead><tr><th scope="col">Agent</th><th scope="col">Level</th><th scope="col">Bundle level</th><th scope="col">Source</th><th scope="col">Change</th></tr></thead>
      <tbody>${Object.entries(a.agents).map(([id, x]) => row({ agent: id }, id, x.level, x.bundleLevel, x))}</tbody></table>
      <h2>Setpoints (ceiling for every agent)</h2>
      <table><caption class="sr">Autonomy ceiling of each setpoint</caption><thead><tr><th scope="col">Setpoint</th><th scope="col">Level</th><th scope="col">Bundle level</th><th scope="col">Source</th><th scope="col">Change</th></tr></thead>
      <tbody>${Object.entries(a.setpoints).map(([id, x]) => row({ setpoint: id }, id, x.level, x.bundleLevel, x))}</tbody></table>
      <h2>History</h2>
      ${a.history.length ? html`<table><caption class="sr">Autonomy changes, newest first</caption><thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">From → to</th><th scope="col">Change ref.</th><th scope="col">Why</th></tr></thead>
        <tbody>${a.history.map((h) => html`<tr><td>${time(h.ts)}</td><td>${h.actor}${h.role ? ` (${h.role})` : ''}</td><td>${h.action} ${Object.values(h.subject ?? {}).join(' on ')}</td><td>${h.from} → ${h.to}</td><td>${h.changeRef ?? '—'}</td><td>${h.reason ?? '—'}</td></tr>`)}</tbody></table>`
        : html`<p>No change since the bundle's levels.</p>`}` : html`<p>Loading…</p>`}
    ${raise ? html`<${RaiseDialog} target=${raise} onClose=${() => setRaise(null)} onDone=${load} />` : null}`;
}
