// The line: equipment, connections, each PLC's supervisor state and live values with units, polled every 2 s.
// A LOST PLC is announced at the top of the page (role=alert), in words, with a glyph and a heavy border —
// never by colour alone. Whether a run may start (GET /line/readiness) is said with every reason it may not; a
// process engineer re-arms a LOST PLC from its card, with a reason (audited with their name).
import { useEffect, useState } from '../vendor/hooks.js';
import { api, unreachable } from './api.js';
import { Escalations } from './escalations.js';
import { PendingMoves } from './moves.js';
import { Badge, ErrorNote, html, time } from './ui.js';
import { quantity } from './units.js';

/** Who may re-arm a PLC (the policy bundle's approvers.reviewer; the daemon checks again). */
const REARMERS = ['process_engineer'];

function RearmForm({ e, onDone }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (ev) => {
    ev.preventDefault();
    const f = new FormData(ev.target);
    setBusy(true);
    setError(null);
    try {
      onDone(await api('POST', `/line/equipment/${encodeURIComponent(e.id)}/rearm`, { reason: String(f.get('reason')) }));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return html`<form onSubmit=${submit} aria-label=${`Re-arm ${e.name}`} data-testid=${`rearm-${e.id}`}>
    <label for=${`rearm-reason-${e.id}`}>Reason for re-arming ${e.name} (required, audited)</label>
    <input id=${`rearm-reason-${e.id}`} name="reason" required minlength="3" maxlength="1000" />
    <${ErrorNote} error=${error} />
    <button type="submit" disabled=${busy}>Re-arm ${e.name}</button>
  </form>`;
}

function Readiness({ r }) {
  if (!r) return null;
  if (r.ready) return html`<p class="quiet" role="status" data-testid="readiness">✓ Ready for a run.</p>`;
  return html`<section aria-labelledby="readiness-h" data-testid="readiness"><h2 id="readiness-h">✗ Not ready for a run</h2>
    <ul>${r.reasons.map((x) => html`<li><code>${x.code}</code> ${x.message}</li>`)}</ul></section>`;
}

export function LinePage({ s }) {
  const [line, setLine] = useState(null);
  const [readiness, setReadiness] = useState(null);
  const [rearmed, setRearmed] = useState(null);
  const [error, setError] = useState(null);
  // when the values were last read from the daemon (not the browser's clock), and since when it has not answered
  const [updatedAt, setUpdatedAt] = useState(null);
  const [awaySince, setAwaySince] = useState(null);
  const mayRearm = REARMERS.includes(s?.user?.role);
  useEffect(() => {
    let live = true;
    const load = () => Promise.all([api('GET', '/line'), api('GET', '/line/readiness')])
      .then(([l, r]) => live && (setLine(l), setReadiness(r), setError(null), setUpdatedAt(new Date().toISOString()), setAwaySince(null)))
      .catch((e) => live && (setError(e), unreachable(e) && setAwaySince((x) => x ?? new Date().toISOString())));
    load();
    const t = setInterval(load, 2000);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, []);
  const lost = line?.equipment.filter((e) => e.supervisor.state === 'LOST') ?? [];
  const stale = awaySince !== null && line !== null;
  return html`<h1 tabindex="-1">Line ${line?.line ?? ''}</h1>
    <${ErrorNote} error=${error} />
    ${stale ? html`<div class="alarm" role="alert" data-testid="line-stale"><strong>⚠ No data since ${time(updatedAt)}:</strong> linekeeper has not answered since ${time(awaySince)}. The states and values below are the last ones read and may no longer be true; the PLCs run on their own (on their last known-good recipe once their watchdog fires).</div>` : null}
    ${lost.length > 0
      ? html`<div class="alarm" role="alert" data-testid="lost-alarm"><strong>⚠ PLC LOST:</strong> ${lost.map((e) => e.name).join(', ')} — running the last known-good recipe; supervisory writes refused until a person re-arms ${lost.length > 1 ? 'them' : 'it'}.</div>`
      : line ? html`<p class="quiet" role="status">Every PLC is supervised (ATTENDED).</p>` : null}
    ${rearmed ? html`<p role="status" data-testid="rearmed">${rearmed.equipment} re-armed by ${rearmed.rearmedBy}: ${rearmed.state} — “${rearmed.reason}”.</p>` : null}
    <${Readiness} r=${readiness} />
    ${line ? html`<p>Site <strong>${line.site}</strong> · ${line.busy ? (line.activeRun ? html`run <a href=${`#/runs/${line.activeRun.id}`}>${line.activeRun.id}</a> <${Badge} status=${line.activeRun.status} />` : 'busy with another tenant\'s batch') : 'idle'}</p>
      <h2>Connections</h2>
      <table><caption class="sr">Connections of the line</caption><thead><tr><th scope="col">Connection</th><th scope="col">Protocol</th><th scope="col">State</th><th scope="col">Endpoint</th></tr></thead>
      <tbody>${line.connections.map((c) => html`<tr><td>${c.id}</td><td>${c.protocol}</td><td>${stale ? html`unknown (last read: ${c.state})` : html`<${Badge} status=${c.state} />`}</td><td><code>${c.endpoint}</code></td></tr>`)}</tbody></table>
      <h2>Equipment</h2>
      <div class=${`cards ${stale ? 'stale' : ''}`} data-stale=${stale ? 'true' : 'false'}>${line.equipment.map((e) => html`<section class=${`card ${e.supervisor.state === 'LOST' ? 'lost' : ''}`} aria-labelledby=${`eq-${e.id}`}>
        <h3 id=${`eq-${e.id}`}>${e.name} <small>${e.type}</small></h3>
        <dl>
          <dt>Connection</dt><dd>${stale ? html`unknown (last read: ${e.connectionState})` : html`<${Badge} status=${e.connectionState} />`}</dd>
          <dt>Supervisor</dt><dd>${e.supervisor.state ? html`<${Badge} status=${e.supervisor.state} />` : '—'}</dd>
          <dt>Active recipe</dt><dd>${e.supervisor.activeRecipe ?? '—'}</dd>
          <dt>Reverts to LKG</dt><dd>${e.supervisor.revertCount ?? '—'}</dd>
        </dl>
        ${e.supervisor.state === 'LOST' ? (mayRearm ? html`<${RearmForm} e=${e} onDone=${setRearmed} />` : html`<p class="quiet">A process engineer re-arms it.</p>`) : null}
        ${e.values === null ? html`<p class="quiet">Values hidden: the line runs another tenant's batch.</p>` : html`<table class="values"><caption class="sr">Live values of ${e.name}</caption>
          <thead><tr><th scope="col">Tag</th><th scope="col">Value</th><th scope="col">Quality</th></tr></thead>
          <tbody>${Object.entries(e.values).map(([tag, v]) => html`<tr><td>${tag.slice(e.id.length + 1)}</td><td class="num"><span class="v">${quantity(v.value, v.unit)}</span></td><td>${v.quality}</td></tr>`)}</tbody></table>`}
      </section>`)}</div>
      <p class="quiet" data-testid="line-updated">Values read at ${time(updatedAt)}.</p>` : html`<p>Loading…</p>`}
    <${PendingMoves} />
    ${s ? html`<${Escalations} s=${s} />` : null}`;
}
