// The line as an operator's HMI: equipment, connections, each PLC's supervisor state and live values with units,
// polled every 2 s. Each value and each unit says how old it is on linekeeper's clock (the view's `at` minus the
// value's; never the browser's clock), and a value older than the daemon's staleAfterMs is greyed and says
// "stale, 14 s old" instead of passing for live. The key process values (press weight, hardness, thickness,
// capping; the dryer's LOD) are shown against the limits of this tenant's run, out-of-spec ones marked in words,
// with small trends (console/trends.js). A LOST PLC is announced at the top of the page (role=alert), in words,
// with a glyph and a heavy border — never by colour alone. Whether a run may start (GET /line/readiness) is said
// with every reason it may not; a process engineer re-arms a LOST PLC from its card, with a reason (audited).
import { useEffect, useState } from '../vendor/hooks.js';
import { api, unreachable } from './api.js';
import { Escalations } from './escalations.js';
import { PendingMoves } from './moves.js';
import { ageMs, ageText, isStale, judge, judgementText, KEY_VALUES, limitText, tagOfRole } from './hmi.js';
import { keep, Trends } from './trends.js';
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

/** A value's age in words, greyed and said stale past the daemon's threshold. */
function Age({ line, v, away = false }) {
  const ms = ageMs(line.at, v.at);
  // while linekeeper is silent no value is live, whatever its age when last read
  if (away) return html`<span class="stale-v" data-age-ms=${ms}><span aria-hidden="true">⌛ </span>not live: ${ageText(ms)} old at ${time(line.at)}</span>`;
  return isStale(ms, line.staleAfterMs)
    ? html`<span class="stale-v" data-age-ms=${ms}><span aria-hidden="true">⌛ </span>stale, ${ageText(ms)} old</span>`
    : html`<span class="age" data-age-ms=${ms}>${ageText(ms)} old</span>`;
}

/** How old a unit's data is: its newest value's age, and how many of its values are stale. */
function unitAge(line, e) {
  const vs = Object.values(e.values ?? {});
  const ages = vs.map((v) => ageMs(line.at, v.at)).filter((x) => x !== null);
  if (ages.length === 0) return null;
  const newest = Math.min(...ages);
  return { newest, stale: ages.filter((a) => isStale(a, line.staleAfterMs)).length, of: ages.length, allStale: isStale(newest, line.staleAfterMs) };
}

function UnitAge({ a }) {
  if (!a) return '—';
  if (a.allStale) return html`<span class="stale-v" data-testid="unit-age" data-unit-stale="true"><span aria-hidden="true">⌛ </span>stale: newest value ${ageText(a.newest)} old</span>`;
  return html`<span data-testid="unit-age" data-unit-stale="false">newest value ${ageText(a.newest)} old${a.stale ? html`; <span class="stale-v">${a.stale} of ${a.of} stale</span>` : ''}</span>`;
}

/** The key process values against the limits of this tenant's run. */
function KeyValues({ line, away = false }) {
  if (line.equipment.every((e) => e.values === null)) return null;
  const rows = KEY_VALUES.map((k) => ({ k, found: tagOfRole(line, k.role) })).filter((x) => x.found);
  if (rows.length === 0) return null;
  return html`<section aria-labelledby="kv-h"><h2 id="kv-h">Key process values <small>${line.limits ? `limits of batch ${line.activeRun?.batch ?? ''}` : 'no run of this tenant on the line: no limits in force'}</small></h2>
    <table class="values key" data-testid="key-values"><caption class="sr">Key process values, their limits and their age on linekeeper's clock</caption>
      <thead><tr><th scope="col">Value</th><th scope="col">Reading</th><th scope="col">Specification</th><th scope="col">Age</th><th scope="col">Limit from</th></tr></thead>
      <tbody>${rows.map(({ k, found: { tag, v, equipment } }) => {
        const limit = line.limits?.[tag] ?? null;
        const ms = ageMs(line.at, v.at);
        const stale = away || isStale(ms, line.staleAfterMs);
        const j = judge(v, limit, line.phase?.value);
        return html`<tr data-testid="key-value" data-role=${k.role} data-tag=${tag} data-judgement=${j ?? 'none'} data-value-stale=${stale ? 'true' : 'false'} class=${`${stale ? 'stale' : ''} ${j === 'out' ? 'oos-row' : ''}`}>
          <th scope="row">${k.title} <small>${equipment.name}</small></th>
          <td class="num"><span class="v">${quantity(v.value, v.unit)}</span></td>
          <td class=${j === 'out' ? 'oos' : ''}>${stale && j !== null ? html`<span class="stale-v">last read: </span>` : ''}${judgementText(j, limit)}</td>
          <td><${Age} line=${line} v=${v} away=${away} /></td>
          <td class="quiet">${limit ? limit.source : '—'}</td></tr>`;
      })}</tbody></table></section>`;
}

export function LinePage({ s }) {
  const [line, setLine] = useState(null);
  const [readiness, setReadiness] = useState(null);
  const [rearmed, setRearmed] = useState(null);
  const [error, setError] = useState(null);
  // since when linekeeper has not answered, on this browser's clock (the time of the values is the daemon's: line.at)
  const [awaySince, setAwaySince] = useState(null);
  const tenant = s?.tenant ?? '';
  const mayRearm = REARMERS.includes(s?.user?.role);
  useEffect(() => {
    let live = true;
    const load = () => Promise.all([api('GET', '/line'), api('GET', '/line/readiness')])
      .then(([l, r]) => live && (keep(tenant, l), setLine(l), setReadiness(r), setError(null), setAwaySince(null)))
      .catch((e) => live && (setError(e), unreachable(e) && setAwaySince((x) => x ?? new Date().toISOString())));
    load();
    const t = setInterval(load, 2000);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [tenant]);
  const lost = line?.equipment.filter((e) => e.supervisor.state === 'LOST') ?? [];
  const stale = awaySince !== null && line !== null;
  // while linekeeper is silent the header's banner (app.js) is the alert; the page's own notice (a status) says
  // what that means for the line
  return html`<h1 tabindex="-1">Line ${line?.line ?? ''}</h1>
    <${ErrorNote} error=${error} />
    ${stale ? html`<div class="alarm" role="status" data-testid="line-stale"><strong>⚠ No data since ${time(line.at)}</strong> (linekeeper's clock): linekeeper has not answered since ${time(awaySince)} (this browser's clock). The states and values below are the last ones read, their ages as of then, and may no longer be true; the PLCs run on their own (on their last known-good recipe once their watchdog fires).</div>` : null}
    ${lost.length > 0
      ? html`<div class="alarm" role="alert" data-testid="lost-alarm"><strong>⚠ PLC LOST:</strong> ${lost.map((e) => e.name).join(', ')} — running the last known-good recipe; supervisory writes refused until a person re-arms ${lost.length > 1 ? 'them' : 'it'}.</div>`
      : line ? html`<p class="quiet" role="status">Every PLC is supervised (ATTENDED).</p>` : null}
    ${rearmed ? html`<p role="status" data-testid="rearmed">${rearmed.equipment} re-armed by ${rearmed.rearmedBy}: ${rearmed.state} — “${rearmed.reason}”.</p>` : null}
    <${Readiness} r=${readiness} />
    ${line ? html`<p>Site <strong>${line.site}</strong> · ${line.busy ? (line.activeRun ? html`run <a href=${`#/runs/${line.activeRun.id}`}>${line.activeRun.id}</a> <${Badge} status=${line.activeRun.status} />` : 'busy with another tenant\'s batch') : 'idle'}
        · <span data-testid="line-at">linekeeper's clock ${time(line.at)}</span> · a value older than ${Math.round(line.staleAfterMs / 1000)} s is stale</p>
      <h2>Connections</h2>
      <table><caption class="sr">Connections of the line</caption><thead><tr><th scope="col">Connection</th><th scope="col">Protocol</th><th scope="col">State</th><th scope="col">Endpoint</th></tr></thead>
      <tbody>${line.connections.map((c) => html`<tr><td>${c.id}</td><td>${c.protocol}</td><td>${stale ? html`unknown (last read: ${c.state})` : html`<${Badge} status=${c.state} />`}</td><td><code>${c.endpoint}</code></td></tr>`)}</tbody></table>
      <div class=${stale ? 'stale' : ''}><${KeyValues} line=${line} away=${stale} /></div>
      <${Trends} tenant=${tenant} line=${line} />
      <h2>Equipment</h2>
      <div class=${`cards line-cards ${stale ? 'stale' : ''}`} data-stale=${stale ? 'true' : 'false'}>${line.equipment.map((e) => html`<section class=${`card ${e.supervisor.state === 'LOST' ? 'lost' : ''}`} aria-labelledby=${`eq-${e.id}`}>
        <h3 id=${`eq-${e.id}`}>${e.name} <small>${e.type}</small></h3>
        <dl>
          <dt>Connection</dt><dd>${stale ? html`unknown (last read: ${e.connectionState})` : html`<${Badge} status=${e.connectionState} />`}</dd>
          <dt>Supervisor</dt><dd>${e.supervisor.state ? html`<${Badge} status=${e.supervisor.state} />` : '—'}</dd>
          <dt>Active recipe</dt><dd>${e.supervisor.activeRecipe ?? '—'}</dd>
          <dt>Reverts to LKG</dt><dd>${e.supervisor.revertCount ?? '—'}</dd>
          ${e.values === null ? null : html`<dt>Data</dt><dd><${UnitAge} a=${unitAge(line, e)} /></dd>`}
        </dl>
        ${e.supervisor.state === 'LOST' ? (mayRearm ? html`<${RearmForm} e=${e} onDone=${setRearmed} />` : html`<p class="quiet">A process engineer re-arms it.</p>`) : null}
        ${e.values === null ? html`<p class="quiet">Values hidden: the line runs another tenant's batch.</p>` : html`<table class="values"><caption class="sr">Live values of ${e.name}</caption>
          <thead><tr><th scope="col">Tag</th><th scope="col">Value</th><th scope="col">Quality</th><th scope="col">Age</th></tr></thead>
          <tbody>${Object.entries(e.values).map(([tag, v]) => {
            const old = isStale(ageMs(line.at, v.at), line.staleAfterMs);
            const j = judge(v, line.limits?.[tag], line.phase?.value);
            return html`<tr class=${old ? 'stale' : ''} data-tag=${tag} data-value-stale=${old ? 'true' : 'false'}><td>${tag.slice(e.id.length + 1)}</td><td class="num"><span class="v">${quantity(v.value, v.unit)}</span></td>
              <td>${v.quality}</td><td><${Age} line=${line} v=${v} away=${stale} /></td></tr>
              ${j === 'out' ? html`<tr class="oos-note" data-oos-for=${tag}><td colspan="4" class="oos" data-testid="value-oos">${judgementText(j, line.limits[tag])}</td></tr>` : null}`;
          })}</tbody></table>`}
      </section>`)}</div>
      <p class="quiet" data-testid="line-updated">Values read at ${time(line.at)} (linekeeper's clock).</p>` : html`<p>Loading…</p>`}
    <${PendingMoves} />
    ${s ? html`<${Escalations} s=${s} />` : null}`;
}
