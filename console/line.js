// The line: equipment, connections, each PLC's supervisor state and live values with units, polled every 2 s.
// A LOST PLC is announced at the top of the page (role=alert), in words, with a glyph and a heavy border —
// never by colour alone.
import { useEffect, useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { Escalations } from './escalations.js';
import { PendingMoves } from './moves.js';
import { Badge, ErrorNote, fmt, html, time, unit } from './ui.js';

export function LinePage({ s }) {
  const [line, setLine] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let live = true;
    const load = () => api('GET', '/line').then((l) => live && (setLine(l), setError(null))).catch((e) => live && setError(e));
    load();
    const t = setInterval(load, 2000);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, []);
  const lost = line?.equipment.filter((e) => e.supervisor.state === 'LOST') ?? [];
  return html`<h1 tabindex="-1">Line ${line?.line ?? ''}</h1>
    <${ErrorNote} error=${error} />
    ${lost.length > 0
      ? html`<div class="alarm" role="alert" data-testid="lost-alarm"><strong>⚠ PLC LOST:</strong> ${lost.map((e) => e.name).join(', ')} — running the last known-good recipe; supervisory writes refused until a person re-arms ${lost.length > 1 ? 'them' : 'it'}.</div>`
      : line ? html`<p class="quiet" role="status">Every PLC is supervised (ATTENDED).</p>` : null}
    ${line ? html`<p>Site <strong>${line.site}</strong> · ${line.busy ? (line.activeRun ? html`run <a href=${`#/runs/${line.activeRun.id}`}>${line.activeRun.id}</a> <${Badge} status=${line.activeRun.status} />` : 'busy with another tenant\'s batch') : 'idle'}</p>
      <h2>Connections</h2>
      <table><caption class="sr">Connections of the line</caption><thead><tr><th scope="col">Connection</th><th scope="col">Protocol</th><th scope="col">State</th><th scope="col">Endpoint</th></tr></thead>
      <tbody>${line.connections.map((c) => html`<tr><td>${c.id}</td><td>${c.protocol}</td><td><${Badge} status=${c.state} /></td><td><code>${c.endpoint}</code></td></tr>`)}</tbody></table>
      <h2>Equipment</h2>
      <div class="cards">${line.equipment.map((e) => html`<section class=${`card ${e.supervisor.state === 'LOST' ? 'lost' : ''}`} aria-labelledby=${`eq-${e.id}`}>
        <h3 id=${`eq-${e.id}`}>${e.name} <small>${e.type}</small></h3>
        <dl>
          <dt>Connection</dt><dd><${Badge} status=${e.connectionState} /></dd>
          <dt>Supervisor</dt><dd>${e.supervisor.state ? html`<${Badge} status=${e.supervisor.state} />` : '—'}</dd>
          <dt>Active recipe</dt><dd>${e.supervisor.activeRecipe ?? '—'}</dd>
          <dt>Reverts to LKG</dt><dd>${e.supervisor.revertCount ?? '—'}</dd>
        </dl>
        ${e.values === null ? html`<p class="quiet">Values hidden: the line runs another tenant's batch.</p>` : html`<table class="values"><caption class="sr">Live values of ${e.name}</caption>
          <thead><tr><th scope="col">Tag</th><th scope="col">Value</th><th scope="col">Quality</th></tr></thead>
          <tbody>${Object.entries(e.values).map(([tag, v]) => html`<tr><td>${tag.slice(e.id.length + 1)}</td><td class="num">${fmt(v.value)} ${unit(v.unit)}</td><td>${v.quality}</td></tr>`)}</tbody></table>`}
      </section>`)}</div>
      <p class="quiet">Updated ${time(new Date().toISOString())}.</p>` : html`<p>Loading…</p>`}
    <${PendingMoves} />
    ${s ? html`<${Escalations} s=${s} />` : null}`;
}
