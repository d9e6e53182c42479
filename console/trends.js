// Small trends of the line's key process values (tablet weight, hardness, thickness, capping rate, LOD) with the
// limits in force drawn as lines. The console keeps what it polled: each GET /line answer (every 2 s) adds the
// values it has not seen yet (a value is one sample per `at`, the time linekeeper received it), kept in this tab's
// memory for the last WINDOW_MS of linekeeper's clock — nothing is stored in the browser, nothing is asked of the
// daemon's history. The time axis is linekeeper's clock, read on the site's clock (site.timezone, with its offset;
// console/site-time.js), never the browser's zone. A tenant's trends are its own: they are dropped
// when the line's values are hidden from it (another tenant's run, R9) and when the tab's tenant changes.
import { useEffect, useRef } from '../vendor/hooks.js';
import uPlot from '../vendor/uplot.js';
import { judge, KEY_VALUES, limitNum, limitText, reading, tagOfRole } from './hmi.js';
import { axisLabelIn, isUtc, siteZone, tickIn } from './site-time.js';
import { html } from './ui.js';
import { numberIn, unitLabel } from './units.js';

/** How much of linekeeper's time the trends keep (10 minutes), and at most how many points each. */
export const WINDOW_MS = 10 * 60_000;
const MAX_POINTS = 1200;

/** tenant → role → { tag, unit, points: [{ t (ms, daemon clock), v }] } */
const kept = new Map();

/** Add a line view's key values to the tenant's trends (values already seen are not added twice). */
export function keep(tenant, line) {
  if (!line || line.equipment.every((e) => e.values === null)) {
    kept.delete(tenant);
    return;
  }
  const mine = kept.get(tenant) ?? new Map();
  kept.set(tenant, mine);
  const now = Date.parse(line.at);
  for (const k of KEY_VALUES) {
    const found = tagOfRole(line, k.role);
    if (!found) continue;
    const { tag, v } = found;
    let s = mine.get(k.role);
    if (!s || s.tag !== tag || s.unit !== v.unit) mine.set(k.role, (s = { tag, unit: v.unit, points: [] }));
    const t = Date.parse(v.at);
    const last = s.points[s.points.length - 1];
    if (v.quality === 'good' && typeof v.value === 'number' && Number.isFinite(v.value) && Number.isFinite(t) && (!last || t > last.t)) s.points.push({ t, v: v.value });
    // the window is linekeeper's time: a clock that moves faster (a paced simulation) keeps fewer points
    while (s.points.length > MAX_POINTS || (s.points.length > 0 && s.points[0].t < now - WINDOW_MS)) s.points.shift();
  }
}

/** The tenant's trend of a role: { tag, unit, points } or undefined. */
export const trendOf = (tenant, role) => kept.get(tenant)?.get(role);

function Trend({ k, s, limit, at }) {
  const el = useRef(null);
  const plot = useRef(null);
  const u = unitLabel(s.unit);
  const axisUnit = u || '1';
  const lines = [];
  const lu = unitLabel(limit?.unit) ? ` ${unitLabel(limit?.unit)}` : '';
  if (limit?.min !== undefined) lines.push({ label: `lower limit ${limitNum(limit.min)}${lu}`, v: limit.min });
  if (limit?.max !== undefined) lines.push({ label: `${limit.applies === 'end_point' ? 'end-of-drying limit ≤' : 'upper limit'} ${limitNum(limit.max)}${lu}`, v: limit.max });
  // the right edge is the view's time (linekeeper's clock): a value that stopped coming ends short of it
  const right = useRef(0);
  right.current = Date.parse(at) / 1000;
  const data = () => {
    const xs = s.points.map((p) => p.t / 1000);
    return [xs, s.points.map((p) => p.v), ...lines.map((l) => xs.map(() => l.v))];
  };
  const tz = siteZone();
  const shape = JSON.stringify([s.tag, s.unit, lines, tz]);
  useEffect(() => {
    // the axis names the zone and the offset at the window's right edge, the view's time
    const axisX = axisLabelIn(tz, right.current * 1e3, right.current * 1e3);
    const vals = [...s.points.map((p) => p.v), ...lines.map((l) => l.v)];
    const lo = Math.min(...vals);
    const hi = Math.max(...vals);
    const pad = (hi - lo) * 0.1 || Math.abs(hi) * 0.05 || 1;
    const opts = {
      width: Math.max(240, el.current.clientWidth || 300), height: 150,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), isUtc(tz) ? 'Etc/UTC' : tz),
      scales: {
        x: { time: true, range: (_u, min) => [Math.min(min ?? right.current, right.current - 60), right.current] },
        y: { range: (_u, min, max) => [Math.min(min, lo) - pad, Math.max(max, hi) + pad] },
      },
      legend: { show: true, live: false },
      cursor: { show: false },
      series: [
        { label: `${axisX.slice(0, -1)}, linekeeper\u2019s clock)` },
        { label: `${k.title} [${axisUnit}]`, stroke: '#1b5e9e', width: 1.5, points: { show: s.points.length < 60, size: 3 }, value: (_u, v) => (v === null || v === undefined ? '—' : reading(v, s.unit)) },
        ...lines.map((l) => ({ label: l.label, stroke: '#a11d1d', dash: [6, 4], width: 1.5, points: { show: false }, value: () => '' })),
      ],
      axes: [
        { label: axisX, labelSize: 16, size: 30, space: 70, font: '11px system-ui, sans-serif', labelFont: '11px system-ui, sans-serif', values: (_u, splits) => splits.map((v) => tickIn(v * 1000, tz, 0)) },
        { label: axisUnit, labelSize: 18, size: 52, font: '11px system-ui, sans-serif', labelFont: '11px system-ui, sans-serif', values: (_u, splits) => splits.map((v) => numberIn(v, s.unit)) },
      ],
    };
    plot.current = new uPlot(opts, data(), el.current);
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
  }, [shape]);
  // new points: the same chart, its data replaced (no re-creation every 2 s)
  useEffect(() => {
    plot.current?.setData(data());
  });
  const last = s.points[s.points.length - 1];
  const outside = s.points.filter((p) => judge({ value: p.v, quality: 'good' }, limit) === 'out').length;
  const summary = `${k.title} (${k.unit}), ${s.points.length} readings of the last ${WINDOW_MS / 60_000} minutes on linekeeper's clock${last ? `, latest ${reading(last.v, s.unit)}` : ''}; ${limit ? `limit ${limitText(limit)}${limit.applies === 'end_point' ? ' at the end of drying' : `, ${outside} outside`}` : 'no limit in force'}`;
  return html`<figure class="trend" data-testid="trend" data-role=${k.role} data-tag=${s.tag} data-n=${s.points.length} data-limit-lines=${lines.length}
      data-limits=${JSON.stringify([limit?.min ?? null, limit?.max ?? null])} data-outside=${outside}>
    <figcaption><strong>${k.title}</strong> <span class="quiet">[${axisUnit}] · ${limit ? `limit ${limitText(limit)}` : 'no limit in force'}${outside ? html` · <span class="oos">✗ ${outside} outside</span>` : ''}</span></figcaption>
    <div ref=${el} class="plot" role="img" aria-label=${summary}></div>
  </figure>`;
}

/** The trends of the tenant's key values (those the line has read), with the limits of the tenant's run. */
export function Trends({ tenant, line }) {
  const shown = KEY_VALUES.map((k) => ({ k, s: trendOf(tenant, k.role) })).filter((x) => x.s && x.s.points.length > 0);
  if (!line || line.equipment.every((e) => e.values === null)) return null;
  return html`<section aria-labelledby="trends-h" data-testid="trends"><h2 id="trends-h">Trends <small>last ${WINDOW_MS / 60_000} min, linekeeper's clock (${isUtc(siteZone()) ? 'UTC' : siteZone()})</small></h2>
    ${shown.length === 0 ? html`<p class="quiet">No key value read yet.</p>` : html`<div class="trends">${shown.map(({ k, s }) => html`<${Trend} key=${k.role} k=${k} s=${s} at=${line.at} limit=${line.limits?.[s.tag] ?? null} />`)}</div>`}
  </section>`;
}
