// Arbitration deadlocks waiting for a person: two agents of equal rank asking different targets for one setpoint.
// Both sides are shown (agent, target, attribute, why, when); a process engineer or QA reviewer picks the side
// that wins and must give a reason (audited with their name). The decision writes nothing to the equipment: the
// winner's agent proposes again and its move passes the guarded writer like any other.
import { useEffect, useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { Badge, ErrorNote, html, time } from './ui.js';

const DECIDERS = ['process_engineer', 'qa_reviewer'];

function ResolveForm({ e, onDone }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const key = e.id.replace(/[^A-Za-z0-9]/g, '-');
  const submit = async (ev) => {
    ev.preventDefault();
    const f = new FormData(ev.target);
    setBusy(true);
    setError(null);
    try {
      const r = await api('POST', `/arbitration/escalations/${encodeURIComponent(e.id)}`, { choose: String(f.get('choose')), reason: String(f.get('reason')) });
      onDone(r);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return html`<form onSubmit=${submit} aria-label=${`Resolve the deadlock on ${e.setpoint}`}>
    <fieldset><legend>Side that wins</legend>
      ${e.sides.map((sd) => html`<label><input type="radio" name="choose" value=${sd.requestId} required /> ${sd.agent} → ${sd.target}</label>`)}
    </fieldset>
    <label for=${`esc-reason-${key}`}>Reason (required, audited)</label>
    <input id=${`esc-reason-${key}`} name="reason" required minlength="3" maxlength="1000" />
    <${ErrorNote} error=${error} />
    <button type="submit" disabled=${busy}>Resolve deadlock</button>
  </form>`;
}

/** The tenant's pending deadlocks, polled every 5 s; the resolve form for the roles that may decide. */
export function Escalations({ s }) {
  const [items, setItems] = useState(null);
  const [error, setError] = useState(null);
  const [decided, setDecided] = useState(null);
  const load = () => api('GET', '/arbitration/escalations').then((r) => (setItems(r.items), setError(null))).catch(setError);
  useEffect(() => {
    load();
    const t = setInterval(load, 5000);
    return () => clearInterval(t);
  }, []);
  const may = DECIDERS.includes(s.user.role);
  return html`<section aria-labelledby="escalations-h" data-testid="escalations">
    <h2 id="escalations-h">Arbitration deadlocks</h2>
    <${ErrorNote} error=${error} />
    ${decided ? html`<p role="status" data-testid="escalation-decided">${decided.setpoint} decided by ${decided.decidedBy}: ${decided.winner.agent} (${decided.winner.target}) wins — “${decided.reason}”. Its agent proposes again; nothing was written yet.</p>` : null}
    ${items && items.length === 0 ? html`<p class="quiet">No deadlock waits for a person.</p>` : null}
    ${(items ?? []).map((e) => html`<article class="card" data-escalation=${e.id}>
      <h3>${e.setpoint} <${Badge} status="pending" label="deadlock: equal rank, different targets" /></h3>
      <p>Rank ${e.rank} (score ${e.score}) · pending since ${time(e.since)} · <strong>the setpoint is held</strong>: no agent moves it until a person decides (never by time)${e.runs?.length ? html` · run ${e.runs.map((r) => html`<a href=${`#/runs/${r}`}>${r}</a> `)}` : null}</p>
      ${e.outranked?.length ? html`<p class="quiet">Held with it (lower rank, declined when decided): ${e.outranked.map((o) => `${o.agent} → ${o.target}`).join(', ')}</p>` : null}
      <table><caption class="sr">Sides of the deadlock on ${e.setpoint}</caption>
        <thead><tr><th scope="col">Agent</th><th scope="col">Target</th><th scope="col">Serves</th><th scope="col">Why</th><th scope="col">Asked</th></tr></thead>
        <tbody>${e.sides.map((sd) => html`<tr><td>${sd.agent}</td><td class="num">${sd.target}</td><td>${sd.attribute}</td><td>${sd.justification}</td><td>${time(sd.at)}</td></tr>`)}</tbody>
      </table>
      ${may ? html`<${ResolveForm} e=${e} onDone=${(r) => (setDecided(r), load())} />` : html`<p class="quiet">A process engineer or QA reviewer decides it.</p>`}
    </article>`)}
  </section>`;
}
