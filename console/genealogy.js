// The genealogy of a run: first one chart per in-process attribute (weight, hardness, thickness, capping) with its
// specification limits and excursions (attributes.js), then one time-aligned plot (uPlot, made for thousands of
// points per series) of the other measurements of the sensor snapshots, the setpoints as written and read back,
// and the actions, approvals, QC results and arbitration as marked events on their own lane. Drag to zoom, double-click or "Reset zoom" to
// return; the buttons zoom from the keyboard. The same events are listed in a table below (the plot's text
// alternative), and the release package can be downloaded.
import { useEffect, useRef, useState } from '../vendor/hooks.js';
import uPlot from '../vendor/uplot.js';
import { api, download } from './api.js';
import { ATTRIBUTES, AttributeCharts } from './attributes.js';
import { Badge, ErrorNote, html, short, time, unit } from './ui.js';

const KINDS = ['step', 'recommendation', 'action', 'response', 'arbitration', 'approval', 'qc', 'watchdog'];
const PALETTE = ['#1b5e9e', '#b03a2e', '#1e7b4a', '#7d3c98', '#a04000', '#117a8b', '#5d6d7e', '#9a7d0a', '#c0392b', '#2e4053'];
const DASH = [[], [6, 3], [2, 2], [8, 2, 2, 2]];
const ATTRIBUTE_TAGS = new Set(ATTRIBUTES.map((a) => a.tag));

/** Series from the events: measurement tags (sensor), setpoints (read back), and one lane of event markers. */
function toPlot(events) {
  const t0 = events.length ? Date.parse(events[0].at) : 0;
  const series = new Map();
  const xs = [];
  const rows = [];
  const add = (key, unit, i, v) => {
    if (!series.has(key)) series.set(key, { unit, values: [] });
    series.get(key).values[i] = v;
  };
  for (const e of events) {
    const i = xs.length;
    xs.push(Date.parse(e.at) / 1000);
    rows.push(e);
    if (e.kind === 'sensor' && e.data && typeof e.data === 'object') {
      // the press's quality attributes have charts of their own, with their limits
      for (const [tag, r] of Object.entries(e.data)) if (typeof r?.value === 'number' && !ATTRIBUTE_TAGS.has(tag)) add(tag, r.unit, i, r.value);
    } else if (e.kind === 'response' && e.tag && typeof e.data?.readBack === 'number') {
      add(`${e.tag} (setpoint)`, e.data.unit ?? '', i, e.data.readBack);
    }
    const k = KINDS.indexOf(e.kind);
    if (k >= 0 && e.kind !== 'response') add('events', 'lane', i, k + 1);
  }
  const keys = [...series.keys()].sort((a, b) => (a === 'events') - (b === 'events') || a.localeCompare(b));
  const data = [xs, ...keys.map((k) => xs.map((_, i) => series.get(k).values[i] ?? null))];
  return { t0, keys, units: keys.map((k) => series.get(k).unit), data, rows };
}

function Plot({ g }) {
  const el = useRef(null);
  const plot = useRef(null);
  const [shown, setShown] = useState(null);
  useEffect(() => {
    const p = toPlot(g.events);
    setShown(p);
    const units = [...new Set(p.units.filter((u) => u !== 'lane'))];
    const scales = { x: { time: true } };
    for (const u of units) scales[u] = { auto: true };
    scales.lane = { range: [0, KINDS.length + 1] };
    const opts = {
      width: Math.max(600, el.current.clientWidth || 900), height: 380,
      title: `Batch ${g.batch}: other measurements, setpoints and events`,
      // the axis says UTC and shows UTC, whatever the browser's time zone (records are UTC)
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
      scales,
      cursor: { drag: { x: true, y: false } },
      series: [{ label: 'time (UTC)' }, ...p.keys.map((k, i) => (k === 'events'
        ? { label: 'events (lane: step, rec., action, resp., arbitr., approval, QC, watchdog)', scale: 'lane', stroke: '#111', width: 0, points: { show: true, size: 9, fill: '#111' }, paths: () => null }
        : { label: `${k} [${unit(p.units[i]) || '1'}]`, scale: p.units[i], stroke: PALETTE[i % PALETTE.length], dash: DASH[Math.floor(i / PALETTE.length) % DASH.length], width: 1.5, spanGaps: true, points: { show: true, size: 4 } }))],
      axes: [{}, ...units.slice(0, 2).map((u, i) => ({ scale: u, label: unit(u) || '1', side: i === 0 ? 3 : 1, grid: { show: i === 0 } }))],
    };
    plot.current = new uPlot(opts, p.data, el.current);
    return () => plot.current?.destroy();
  }, [g]);
  const zoom = (f) => {
    const u = plot.current;
    if (!u) return;
    const { min, max } = u.scales.x;
    const mid = (min + max) / 2;
    const half = ((max - min) / 2) * f;
    u.setScale('x', { min: mid - half, max: mid + half });
  };
  const reset = () => {
    const u = plot.current;
    if (u) u.setScale('x', { min: u.data[0][0], max: u.data[0][u.data[0].length - 1] });
  };
  return html`<div class="plotbar" role="group" aria-label="Zoom the plot">
      <button type="button" onClick=${() => zoom(0.5)}>Zoom in</button> <button type="button" onClick=${() => zoom(2)}>Zoom out</button> <button type="button" onClick=${reset}>Reset zoom</button>
      <span class="quiet">or drag across the plot to zoom; double-click to reset</span></div>
    <figure><div ref=${el} class="plot" data-testid="genealogy-plot" data-series=${shown ? shown.keys.length : 0} data-points=${shown ? shown.data[0].length : 0} role="img" aria-label=${`Time-aligned genealogy plot of batch ${g.batch}, ${g.events.length} events; the table below lists them`}></div>
    <figcaption class="quiet">${shown ? `${shown.keys.length} series, ${shown.data[0].length} time points` : ''}</figcaption></figure>`;
}

export function GenealogyPage({ s, id }) {
  const [runs, setRuns] = useState(null);
  const [g, setG] = useState(null);
  const [error, setError] = useState(null);
  const [got, setGot] = useState(null);
  const [table, setTable] = useState(null);
  useEffect(() => {
    if (!id) api('GET', '/runs?limit=50').then((p) => setRuns(p.items)).catch(setError);
    else {
      api('GET', `/runs/${id}/genealogy`).then(setG).catch(setError);
      // the specification table (every in-process sample it judged), once the run reached its gate
      api('GET', `/runs/${id}/exceptions`).then((l) => setTable(l.specTable)).catch(setError);
    }
  }, [id]);
  const get = (file) => download(`/runs/${id}/release?file=${file}`, `release.${file}`).then(setGot).catch(setError);
  if (!id) {
    return html`<h1 tabindex="-1">Genealogy</h1><${ErrorNote} error=${error} /><p>Choose a run:</p>
      <ul>${(runs ?? []).map((r) => html`<li><a href=${`#/genealogy/${r.id}`}>${r.id}</a> · batch ${r.batch} · <${Badge} status=${r.status} /></li>`)}</ul>`;
  }
  return html`<h1 tabindex="-1">Genealogy of ${g?.batch ?? ''} <small>${id}</small></h1>
    <${ErrorNote} error=${error} />
    ${g ? html`<p>Status <${Badge} status=${g.status} /> · <a href=${`#/runs/${id}`}>run detail</a></p>
      <h2>In-process attributes against their limits</h2>
      <${AttributeCharts} events=${g.events} table=${table} />
      <h2>Setpoints, other measurements and events</h2>
      ${g.events.length ? html`<${Plot} g=${g} />` : html`<p>No events yet.</p>`}
      <h2>Release package</h2>
      ${g.release ? html`<ul class="downloads">
          <li><button type="button" onClick=${() => get('json')}>Download release.json</button> <code>${short(g.release.sha256.json, 16)}</code></li>
          <li><button type="button" onClick=${() => get('pdf')}>Download release.pdf</button> <code>${short(g.release.sha256.pdf, 16)}</code></li>
          <li><button type="button" onClick=${() => get('bundle')}>Download the audit bundle</button> <code>${short(g.release.sha256.bundle, 16)}</code></li></ul>
          ${got ? html`<p role="status">Downloaded ${got.name} (${got.bytes} bytes).</p>` : null}` : html`<p>Not released yet: the package is written once the release is signed.</p>`}
      ${g.losingRequests.length ? html`<h2>Arbitration: requests that lost</h2><ul>${g.losingRequests.map((l) => html`<li>${time(l.at)} ${l.agent} on ${l.setpoint} (score ${l.score}): ${l.reason}</li>`)}</ul>` : null}
      <h2>Events</h2>
      <table class="events"><caption class="sr">Genealogy events in time order</caption>
        <thead><tr><th scope="col">Time</th><th scope="col">Kind</th><th scope="col">Step</th><th scope="col">Agent</th><th scope="col">What</th></tr></thead>
        <tbody>${g.events.map((e) => html`<tr><td>${time(e.at).slice(11)}</td><td>${e.kind}</td><td>${e.step ?? ''}</td><td>${e.agent ?? ''}</td><td>${e.summary}</td></tr>`)}</tbody></table>` : html`<p>Loading…</p>`}`;
}
