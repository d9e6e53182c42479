// One chart per in-process attribute of the press — tablet weight, hardness, thickness, capping rate — with the
// specification limits drawn as lines around a shaded band (when both are recorded), each axis naming its unit, and
// every value outside them marked, so an excursion stands out instead of
// hiding among every tag of the line. The values are every in-process sample the specification table judged (once
// the run reached its gate), else the sensor snapshots of the genealogy so far; the limits are those the press
// step recorded in force (batch record, and the run's capping threshold), else the specification table's.
import { useEffect, useRef } from '../vendor/hooks.js';
import uPlot from '../vendor/uplot.js';
import { fmt, html } from './ui.js';

export const ATTRIBUTES = [
  { tag: 'press.TabletWeight', spec: 'tablet_weight', title: 'Tablet weight', unit: 'mg' },
  { tag: 'press.Hardness', spec: 'hardness', title: 'Hardness', unit: 'N' },
  { tag: 'press.Thickness', spec: 'thickness', title: 'Thickness', unit: 'mm' },
  { tag: 'press.CappingRate', spec: null, title: 'Capping rate', unit: '%' },
];

const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** Values, limits and excursions of one attribute from the genealogy events and the specification table (or null). */
export function attributeSeries(a, events, table) {
  const row = a.spec && table ? table.results.find((r) => r.id === a.spec) : undefined;
  let values = Array.isArray(row?.data?.values) && row.data.values.length ? row.data.values : null;
  const source = values ? 'every in-process sample judged at the gate' : 'sensor snapshots at the agents\' rounds';
  if (!values) values = events.filter((e) => e.kind === 'sensor' && num(e.data?.[a.tag]?.value) !== undefined).map((e) => e.data[a.tag].value);
  let limits = null;
  for (const e of events) if (e.kind === 'step' && e.data?.limits?.[a.tag]) limits = e.data.limits[a.tag];
  if (!limits && row?.limit && (num(row.limit.min) !== undefined || num(row.limit.max) !== undefined)) limits = row.limit;
  const min = num(limits?.min);
  const max = num(limits?.max);
  const outside = values.map((v) => (num(v) !== undefined && ((min !== undefined && v < min) || (max !== undefined && v > max)) ? v : null));
  return { values, min, max, outside, excursions: outside.filter((v) => v !== null).length, source };
}

function Chart({ a, s }) {
  const el = useRef(null);
  useEffect(() => {
    const xs = s.values.map((_, i) => i + 1);
    const lines = [];
    if (s.min !== undefined) lines.push({ label: `lower limit ${fmt(s.min)} ${a.unit}`, v: s.min });
    if (s.max !== undefined) lines.push({ label: `upper limit ${fmt(s.max)} ${a.unit}`, v: s.max });
    const data = [xs, s.values, ...lines.map((l) => xs.map(() => l.v)), s.outside];
    // the specification band: filled between the upper and the lower limit when both are recorded
    const band = lines.length === 2 ? [{ series: [3, 2], fill: 'rgba(30, 123, 74, 0.12)' }] : [];
    const opts = {
      width: Math.max(420, (el.current.clientWidth || 600)), height: 220,
      title: `${a.title} [${a.unit}]`,
      scales: { x: { time: false } },
      cursor: { drag: { x: true, y: false } },
      series: [
        { label: 'sample' },
        { label: `${a.title} [${a.unit}]`, stroke: '#1b5e9e', width: 1, points: { show: s.values.length < 400, size: 3 } },
        ...lines.map((l) => ({ label: l.label, stroke: '#b03a2e', dash: [6, 4], width: 1.5, points: { show: false } })),
        { label: 'outside the limits', stroke: '#b03a2e', width: 0, paths: () => null, points: { show: true, size: 7, fill: '#b03a2e' } },
      ],
      bands: band,
      axes: [{ label: 'sample no. (in time order)' }, { label: `${a.title.toLowerCase()} [${a.unit}]`, size: 60 }],
    };
    const u = new uPlot(opts, data, el.current);
    return () => u.destroy();
  }, [s]);
  const limitsText = s.min !== undefined && s.max !== undefined ? `${fmt(s.min)}–${fmt(s.max)} ${a.unit}` : s.max !== undefined ? `≤ ${fmt(s.max)} ${a.unit}` : s.min !== undefined ? `≥ ${fmt(s.min)} ${a.unit}` : 'no limits recorded';
  return html`<figure class="attribute" data-testid="attribute-chart" data-attribute=${a.tag} data-band=${s.min !== undefined && s.max !== undefined ? 'yes' : 'no'}
      data-axes=${JSON.stringify(['sample no. (in time order)', `${a.title.toLowerCase()} [${a.unit}]`])} data-n=${s.values.length} data-excursions=${s.excursions}
      data-limit-lines=${(s.min !== undefined ? 1 : 0) + (s.max !== undefined ? 1 : 0)} data-limits=${JSON.stringify([s.min ?? null, s.max ?? null])}>
    <div ref=${el} class="plot" role="img" aria-label=${`${a.title}: ${s.values.length} values against ${limitsText}, ${s.excursions} outside`}></div>
    <figcaption class=${s.excursions ? 'excursion' : 'quiet'}>${a.title}: n ${s.values.length} (${s.source}), limits ${limitsText};
      ${s.excursions ? html`<strong>${s.excursions} outside the limits</strong>` : 'none outside the limits'}.</figcaption></figure>`;
}

/** The per-attribute charts of a run (those with values). */
export function AttributeCharts({ events, table }) {
  const shown = ATTRIBUTES.map((a) => ({ a, s: attributeSeries(a, events, table) })).filter((x) => x.s.values.length > 0);
  if (!shown.length) return html`<p class="quiet" data-testid="attribute-none">No in-process press data yet.</p>`;
  return html`<section class="attributes" aria-label="In-process attributes against their limits">${shown.map(({ a, s }) => html`<${Chart} a=${a} s=${s} />`)}</section>`;
}
