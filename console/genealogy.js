// The genealogy of a run: first one chart per in-process attribute (weight, hardness, thickness, capping) with its
// specification band and excursions (attributes.js), then one small time chart per setpoint group — the quantities of
// one unit of equipment in one unit of measure (press forces, the press's speed, the dryer's temperatures, its
// airflow, the coater's spray rate…) with the setpoints as written and read back — and a lane of the run's events
// (actions, approvals, QC results, arbitration…). Every axis says its unit as people write it (console/units.js);
// time is the site's clock (site.timezone) with its offset, whatever the browser's zone (console/site-time.js). The
// time charts move together: drag across one to zoom all, double-click or "Reset zoom" to return; the buttons zoom
// from the keyboard. The events are listed below, repeated lines (the
// same kind of event in the same step, differing only in their numbers: sensor snapshots, arbitration rounds) as one
// entry with their count and first and last time, in a region of its own height that scrolls (focusable, so the
// keyboard scrolls it too); the release package can be downloaded.
import { useEffect, useRef, useState } from '../vendor/hooks.js';
import uPlot from '../vendor/uplot.js';
import { api, download } from './api.js';
import { ATTRIBUTES, AttributeCharts } from './attributes.js';
import { axisLabelIn, isUtc, siteZone, tickIn } from './site-time.js';
import { Badge, clock, ErrorNote, html, short, span as between, time, unit } from './ui.js';

const KINDS = ['step', 'recommendation', 'action', 'response', 'arbitration', 'approval', 'qc', 'exception', 'watchdog'];
const PALETTE = ['#1b5e9e', '#b03a2e', '#1e7b4a', '#7d3c98', '#a04000', '#117a8b', '#5d6d7e', '#9a7d0a'];
const DASH = [[], [6, 3], [2, 2], [8, 2, 2, 2]];
const ATTRIBUTE_TAGS = new Set(ATTRIBUTES.map((a) => a.tag));
/** What a unit measures, for a chart's title and axis. */
const QUANTITY = {
  Cel: 'temperature', 'm3/h': 'airflow', '{rev}/min': 'speed', '{rev}': 'revolutions', kN: 'force', N: 'force', mm: 'length', mg: 'mass', ms: 'time',
  s: 'time', min: 'time', '%': 'percent', 'g/min': 'spray rate', kW: 'power', 'kW.h': 'energy', '{tbl}/h': 'output', nm: 'wavelength', 1: 'count',
};
const quantityOf = (u) => QUANTITY[u] ?? 'value';
/** The axis label of a unit: the quantity and the unit as people write it (a count is "count [1]"). */
const axisLabel = (u) => `${quantityOf(u)} [${unit(u) || '1'}]`;
/** The zone as the page's headings name it: "UTC", or the site's zone. */
const zoneWords = () => (isUtc(siteZone()) ? 'UTC' : siteZone());
/** The label of a time axis over `xs` (seconds): "time (UTC)", or the site's zone with its offset(s) over that range. */
const axisOf = (xs) => axisLabelIn(siteZone(), xs[0] * 1e3, xs[xs.length - 1] * 1e3);
/** Tick labels of the time axis on the site's clock, 24-hour: seconds on a short range, the date on one longer than a day. */
const ticks = (tz) => (u, splits) => {
  const range = u.scales.x.max - u.scales.x.min;
  return splits.map((ts) => tickIn(ts * 1e3, tz, range));
};
/** The cursor's time in the legend: the whole stamp, with the offset and the zone. */
const stamp = (_u, ts) => (ts === null || ts === undefined ? '--' : time(ts * 1e3));

/**
 * The setpoint groups of a genealogy: every numeric sensor value (but the in-process attributes, which have their own
 * charts) and every setpoint read back, by equipment and unit; each group's own time points, so a group sampled
 * rarely is not a column of empty cells. Sorted by equipment, then unit.
 */
export function setpointGroups(events) {
  const groups = new Map();
  const put = (tag, u, at, v) => {
    const eq = tag.split('.')[0];
    const key = `${eq}|${u}`;
    if (!groups.has(key)) groups.set(key, { equipment: eq, unit: u, rows: new Map(), keys: new Set() });
    const g = groups.get(key);
    if (!g.rows.has(at)) g.rows.set(at, {});
    g.rows.get(at)[tag] = v;
    g.keys.add(tag);
  };
  // a read-back carries no unit of its own: its tag's, as the sensor snapshots give it
  const units = new Map();
  for (const e of events) if (e.kind === 'sensor' && e.data && typeof e.data === 'object') for (const [tag, r] of Object.entries(e.data)) if (r?.unit && !units.has(tag)) units.set(tag, r.unit);
  for (const e of events) {
    const at = Date.parse(e.at) / 1000;
    if (e.kind === 'sensor' && e.data && typeof e.data === 'object') {
      for (const [tag, r] of Object.entries(e.data)) if (typeof r?.value === 'number' && !ATTRIBUTE_TAGS.has(tag)) put(tag, r.unit ?? '1', at, r.value);
    } else if (e.kind === 'response' && e.tag && typeof e.data?.readBack === 'number') {
      put(`${e.tag} (read back)`, e.data.unit ?? units.get(e.tag) ?? '1', at, e.data.readBack);
    }
  }
  const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
  return [...groups.values()].sort((a, b) => cmp(a.equipment, b.equipment) || cmp(a.unit, b.unit)).map((g) => {
    const xs = [...g.rows.keys()].sort((a, b) => a - b);
    const keys = [...g.keys].sort();
    return { ...g, keys, data: [xs, ...keys.map((k) => xs.map((x) => g.rows.get(x)[k] ?? null))] };
  });
}

/**
 * The events lane: one point per event of a kind other than sensor snapshots and read-backs, one row per kind the
 * run has (in the order of KINDS). Returns the data and the kinds, the row of each.
 */
function lane(events) {
  const kinds = KINDS.filter((k) => k !== 'response' && events.some((e) => e.kind === k));
  const xs = [];
  const ys = [];
  for (const e of events) {
    const k = kinds.indexOf(e.kind);
    if (k < 0) continue;
    xs.push(Date.parse(e.at) / 1000);
    ys.push(k + 1);
  }
  return { data: [xs, ys], kinds };
}

/** The time charts of one page, zoomed together: a zoom on one sets the others' time scale. */
function linked() {
  const charts = new Set();
  let busy = false;
  return {
    charts,
    hook: (u, key) => {
      if (key !== 'x' || busy) return;
      busy = true;
      const { min, max } = u.scales.x;
      for (const o of charts) if (o !== u && (o.scales.x.min !== min || o.scales.x.max !== max)) o.setScale('x', { min, max });
      busy = false;
    },
  };
}

function TimeChart({ link, title, series, data, axisY, lanes, testid, attrs, label }) {
  const el = useRef(null);
  const tz = siteZone();
  useEffect(() => {
    const n = data[0].length;
    const axisX = axisOf(data[0]);
    const opts = {
      width: Math.max(400, el.current.clientWidth || 600), height: lanes ? 110 + 22 * lanes.length : 160, title,
      // the axis says the site's zone and shows its clock, whatever the browser's time zone (records are UTC)
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), isUtc(tz) ? 'Etc/UTC' : tz),
      scales: { x: { time: true }, ...(lanes ? { y: { range: [0.5, lanes.length + 0.5] } } : {}) },
      cursor: { drag: { x: true, y: false }, sync: { key: 'genealogy' } },
      series: [{ label: axisX, value: stamp }, ...series.map((s, i) => (lanes
        ? { label: s, stroke: '#111', width: 0, points: { show: true, size: 8, fill: '#111' }, paths: () => null }
        : { label: s, stroke: PALETTE[i % PALETTE.length], dash: DASH[Math.floor(i / PALETTE.length) % DASH.length], width: 1.5, spanGaps: true, points: { show: n < 200, size: 3 } }))],
      axes: [
        { label: axisX, values: ticks(tz) },
        lanes
          ? { label: axisY, size: 120, splits: () => lanes.map((_, i) => i + 1), values: (_u, splits) => splits.map((v) => lanes[v - 1] ?? '') }
          : { label: axisY, size: 60 },
      ],
      hooks: { setScale: [link.hook] },
    };
    const u = new uPlot(opts, data, el.current);
    link.charts.add(u);
    return () => {
      link.charts.delete(u);
      u.destroy();
    };
  }, [data, tz]);
  return html`<figure class="group" data-testid=${testid} ...${attrs}>
    <div ref=${el} class="plot" role="img" aria-label=${label}></div></figure>`;
}

function Plots({ g }) {
  const [link] = useState(linked);
  const [p, setP] = useState(null);
  useEffect(() => {
    const groups = setpointGroups(g.events);
    const l = lane(g.events);
    setP({ groups, lane: l.data, kinds: l.kinds, points: new Set(groups.flatMap((x) => x.data[0])).size });
  }, [g]);
  const each = (fn) => link.charts.forEach(fn);
  const zoom = (f) => {
    const u = [...link.charts][0];
    if (!u) return;
    const { min, max } = u.scales.x;
    const mid = (min + max) / 2;
    const half = ((max - min) / 2) * f;
    u.setScale('x', { min: mid - half, max: mid + half });
  };
  const reset = () => {
    const xs = [p.groups.flatMap((x) => [x.data[0][0], x.data[0][x.data[0].length - 1]]), [p.lane[0][0], p.lane[0][p.lane[0].length - 1]]].flat().filter((v) => v !== undefined);
    if (xs.length) each((u) => u.setScale('x', { min: Math.min(...xs), max: Math.max(...xs) }));
  };
  if (!p) return null;
  const series = p.groups.reduce((n, x) => n + x.keys.length, 0) + (p.lane[0].length ? 1 : 0);
  return html`<div class="plotbar" role="group" aria-label="Zoom the time charts">
      <button type="button" onClick=${() => zoom(0.5)}>Zoom in</button> <button type="button" onClick=${() => zoom(2)}>Zoom out</button> <button type="button" onClick=${reset}>Reset zoom</button>
      <span class="quiet">or drag across a chart to zoom them all; double-click to reset</span></div>
    <div class="attributes groups" data-testid="genealogy-plot" data-series=${series} data-points=${p.points} data-charts=${p.groups.length + (p.lane[0].length ? 1 : 0)}>
      ${p.groups.map((x) => html`<${TimeChart} key=${`${x.equipment}|${x.unit}`} link=${link} data=${x.data} testid="group-chart"
        title=${`${x.equipment} · ${quantityOf(x.unit)} [${unit(x.unit) || '1'}]`} axisY=${axisLabel(x.unit)}
        series=${x.keys.map((k) => `${k.slice(x.equipment.length + 1)} [${unit(x.unit) || '1'}]`)}
        attrs=${{ 'data-group': `${x.equipment}|${x.unit}`, 'data-unit': x.unit, 'data-series': x.keys.length, 'data-axes': JSON.stringify([axisOf(x.data[0]), axisLabel(x.unit)]) }}
        label=${`${x.equipment}, ${quantityOf(x.unit)} in ${unit(x.unit) || 'no unit'} over time (${zoneWords()}): ${x.keys.join(', ')}; ${x.data[0].length} time points`} />`)}
      ${p.lane[0].length ? html`<${TimeChart} link=${link} data=${p.lane} lanes=${p.kinds} testid="events-lane" title="Events by kind" axisY="event kind"
        series=${['event']}
        attrs=${{ 'data-axes': JSON.stringify([axisOf(p.lane[0]), 'event kind']) }}
        label=${`Events of the run by kind over time (${zoneWords()}), ${p.lane[0].length} events; the table below lists them`} />` : null}
    </div>
    <p class="quiet">${series} series in ${p.groups.length} setpoint group${p.groups.length === 1 ? '' : 's'}, ${p.points} time points.</p>`;
}

/** Numbers out, so that rounds differing only in their figures read as the same line. */
const shape = (s) => String(s ?? '').replace(/[-+]?\d+(?:[.,:]\d+)*(?:e[-+]?\d+)?/gi, '#');

/**
 * The events as entries: the same kind of event of the same agent in the same step, differing only in its numbers, is
 * one entry with its count and first and last time (the latest line shown), in order of its first time.
 */
export function groupEvents(events) {
  const out = [];
  const byKey = new Map();
  for (const e of events) {
    const key = [e.step, e.kind, e.agent, e.kind === 'sensor' ? '' : shape(e.summary)].join('\u0000');
    const g = byKey.get(key);
    if (g) {
      g.n++;
      g.last = e;
    } else {
      const entry = { first: e, last: e, n: 1 };
      byKey.set(key, entry);
      out.push(entry);
    }
  }
  return out;
}

/** Losing requests grouped the same way: one entry per agent, setpoint and reason (its numbers aside), with a count. */
export function groupLosing(list) {
  const out = new Map();
  for (const l of list) {
    const key = [l.agent, l.setpoint, shape(l.reason)].join('\u0000');
    const g = out.get(key);
    if (g) {
      g.n++;
      g.last = l;
    } else out.set(key, { first: l, last: l, n: 1 });
  }
  return [...out.values()];
}

/** When an entry happened on the site's clock: its time, or its first and last ("10:00:00–10:05:00 UTC+05:30"). */
const span = (g) => (g.n > 1 ? between(g.first.at, g.last.at) : clock(g.first.at));

export function GenealogyPage({ s, id }) {
  const [runs, setRuns] = useState(null);
  const [g, setG] = useState(null);
  const [error, setError] = useState(null);
  const [got, setGot] = useState(null);
  const [table, setTable] = useState(null);
  const asked = useRef(0); // the genealogy's refreshes while an ended run's package is written (below)
  useEffect(() => {
    asked.current = 0;
    if (!id) api('GET', '/runs?limit=50').then((p) => setRuns(p.items)).catch(setError);
    else {
      api('GET', `/runs/${id}/genealogy`).then(setG).catch(setError);
      // the specification table (every in-process sample it judged), once the run reached its gate
      api('GET', `/runs/${id}/exceptions`).then((l) => setTable(l.specTable)).catch(setError);
    }
  }, [id]);
  // a run ends before its package is on disk when QA rejects it or it is aborted (the decision is committed first,
  // the package "not a release" written after it): until the package is there, ask again every two seconds
  // (for two minutes: a package that failed to be written is an exception of the run, not something to wait for)
  const ended = g && ['SUCCEEDED', 'REJECTED', 'ABORTED'].includes(g.status);
  useEffect(() => {
    if (!id || !ended || g.release || asked.current >= 60) return undefined;
    const t = setTimeout(() => {
      asked.current++;
      api('GET', `/runs/${id}/genealogy`).then(setG).catch(setError);
    }, 2000);
    return () => clearTimeout(t);
  }, [id, g]);
  const get = (file) => download(`/runs/${id}/release?file=${file}`, `release.${file}`).then(setGot).catch(setError);
  if (!id) {
    return html`<h1 tabindex="-1">Genealogy</h1><${ErrorNote} error=${error} /><p>Choose a run:</p>
      <ul>${(runs ?? []).map((r) => html`<li><a href=${`#/genealogy/${r.id}`}>${r.id}</a> · batch ${r.batch} · <${Badge} status=${r.status} /></li>`)}</ul>`;
  }
  const entries = g ? groupEvents(g.events) : [];
  const losing = g ? groupLosing(g.losingRequests) : [];
  return html`<h1 tabindex="-1">Genealogy of ${g?.batch ?? ''} <small>${id}</small></h1>
    <${ErrorNote} error=${error} />
    ${g ? html`<p>Status <${Badge} status=${g.status} /> · <a href=${`#/runs/${id}`}>run detail</a></p>
      <h2>In-process attributes against their specification</h2>
      <${AttributeCharts} events=${g.events} table=${table} />
      <h2>Setpoint groups and events over time (${zoneWords()})</h2>
      ${g.events.length ? html`<${Plots} g=${g} />` : html`<p>No events yet.</p>`}
      <h2>Release package</h2>
      ${g.release ? html`<ul class="downloads">
          <li><button type="button" onClick=${() => get('json')}>Download release.json</button> <code>${short(g.release.sha256.json, 16)}</code></li>
          <li><button type="button" onClick=${() => get('pdf')}>Download release.pdf</button> <code>${short(g.release.sha256.pdf, 16)}</code></li>
          <li><button type="button" onClick=${() => get('bundle')}>Download the audit bundle</button> <code>${short(g.release.sha256.bundle, 16)}</code></li></ul>
          ${got ? html`<p role="status">Downloaded ${got.name} (${got.bytes} bytes).</p>` : null}` : ended ? html`<p role="status">${asked.current >= 60 ? 'The run has ended without a package: see its exceptions.' : 'The run has ended; its package is being written…'}</p>` : html`<p>Not released yet: the package is written once the release is signed.</p>`}
      ${losing.length ? html`<h2>Arbitration: requests that lost</h2><ul data-testid="losing-requests" data-requests=${g.losingRequests.length}>${losing.map((l) => html`<li data-count=${l.n}>
          ${span(l)} ${l.first.agent} on ${l.first.setpoint} (score ${l.last.score}): ${l.last.reason}${l.n > 1 ? html` <strong>× ${l.n}</strong>` : ''}</li>`)}</ul>` : null}
      <h2>Events</h2>
      <p class="quiet" data-testid="events-count">${g.events.length} events in ${entries.length} entries: the same kind of event in the same step, differing only in its figures, is one entry with its count (the latest line shown).</p>
      <div class="events-scroll" tabindex="0" role="region" aria-label="Events of the run, repeated ones grouped (scrolls)" style=${{ maxHeight: '36em', overflowY: 'auto' }}>
      <table class="events" data-testid="events-table"><caption class="sr">Genealogy events in time order, repeated ones grouped</caption>
        <thead><tr><th scope="col">Time (${zoneWords()})</th><th scope="col">Kind</th><th scope="col">Step</th><th scope="col">Agent</th><th scope="col">What</th><th scope="col">Count</th></tr></thead>
        <tbody>${entries.map((x) => html`<tr data-kind=${x.first.kind} data-count=${x.n}><td>${span(x)}</td><td>${x.first.kind}</td><td>${x.first.step ?? ''}</td><td>${x.first.agent ?? ''}</td>
          <td>${x.first.kind === 'sensor' ? `sensor snapshot${x.n > 1 ? 's' : ''} of ${Object.keys(x.last.data ?? {}).length} values (in the charts above)` : x.last.summary}</td><td class="num">${x.n > 1 ? `× ${x.n}` : ''}</td></tr>`)}</tbody></table></div>` : html`<p>Loading…</p>`}`;
}
