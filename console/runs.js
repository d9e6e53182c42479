// Runs: the list (start one, filter), and a run's live steps and tool-call log over server-sent events. The log
// is virtualised — only the rows in view are in the DOM — so 10,000 entries stay responsive; a row opens its
// reasoning (inputs, the twin's prediction, candidates, why) in the panel beside the list.
import { useEffect, useMemo, useRef, useState } from '../vendor/hooks.js';
import { api, followRun } from './api.js';
import { Escalations } from './escalations.js';
import { PendingMoves } from './moves.js';
import { ExceptionsPanel } from './exceptions.js';
import { RunActions } from './run-actions.js';
import { Badge, clock, ErrorNote, fmt, html, short, time } from './ui.js';

const SAMPLE = 'run batch B-1042 on line-3, keep weight and hardness on target, capping risk under 1.5%';

export function RunsPage({ s }) {
  const [runs, setRuns] = useState(null);
  const [filter, setFilter] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const load = () => api('GET', '/runs?limit=200').then((p) => setRuns(p.items)).catch(setError);
  useEffect(() => {
    load();
    const t = setInterval(load, 5000);
    return () => clearInterval(t);
  }, []);
  const mayStart = ['operator', 'process_engineer'].includes(s.user.role);
  const start = async (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    setBusy(true);
    setError(null);
    try {
      const autonomy = String(f.get('autonomy'));
      const run = await api('POST', '/runs', { request: String(f.get('request')), ...(autonomy ? { autonomy } : {}) });
      location.hash = `#/runs/${run.id}`;
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const q = filter.trim().toLowerCase();
  const shown = (runs ?? []).filter((r) => !q || `${r.id} ${r.batch} ${r.status} ${r.startedBy} ${r.goal}`.toLowerCase().includes(q));
  return html`<h1 tabindex="-1">Runs</h1>
    ${mayStart ? html`<form class="start" onSubmit=${start} aria-label="Start a run">
      <label for="run-request">Run request</label>
      <textarea id="run-request" name="request" rows="2" required>${SAMPLE}</textarea>
      <label for="run-autonomy">Autonomy cap</label>
      <select id="run-autonomy" name="autonomy"><option value="">as the policy allows</option><option>L0</option><option>L1</option><option>L2</option><option>L3</option></select>
      <button type="submit" disabled=${busy}>Start run</button>
    </form>` : null}
    <${ErrorNote} error=${error} />
    <label for="runs-filter">Filter runs</label> <input id="runs-filter" type="search" value=${filter} onInput=${(e) => setFilter(e.target.value)} />
    <table class="runs"><caption class="sr">Runs of ${s.tenant}, newest first</caption>
      <thead><tr><th scope="col">Run</th><th scope="col">Batch</th><th scope="col">Status</th><th scope="col">Started by</th><th scope="col">Created</th><th scope="col">Genealogy</th></tr></thead>
      <tbody>${shown.map((r) => html`<tr>
        <td><a href=${`#/runs/${r.id}`}>${r.id}</a></td><td>${r.batch}</td><td><${Badge} status=${r.status} /></td><td>${r.startedBy}</td><td>${time(r.createdAt)}</td>
        <td><a href=${`#/genealogy/${r.id}`} aria-label=${`Genealogy of ${r.id}`}>plot</a></td></tr>`)}</tbody>
    </table>
    ${runs && shown.length === 0 ? html`<p>No runs${q ? ' match' : ' yet'}.</p>` : null}`;
}

const ROW = 28;

/** The tool-call log, virtualised: a spacer of the full height and only the rows in view (plus a few). */
export function LogList({ lines, version, selected, onSelect }) {
  const box = useRef(null);
  const [top, setTop] = useState(0);
  const [height, setHeight] = useState(420);
  const follow = useRef(true);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    setHeight(el.clientHeight || 420);
    if (follow.current) el.scrollTop = el.scrollHeight;
  }, [version]);
  const onScroll = (e) => {
    const el = e.target;
    follow.current = el.scrollTop + el.clientHeight >= el.scrollHeight - ROW * 2;
    setTop(el.scrollTop);
  };
  const first = Math.max(0, Math.floor(top / ROW) - 5);
  const last = Math.min(lines.length, Math.ceil((top + height) / ROW) + 5);
  const rows = [];
  for (let i = first; i < last; i++) {
    const l = lines[i];
    rows.push(html`<li key=${l.id} style=${{ top: `${i * ROW}px` }} class=${selected === l.id ? 'sel' : ''}>
      <button type="button" aria-expanded=${selected === l.id} aria-controls="log-detail" onClick=${() => onSelect(l)}>
        <span class="t">${clock(l.at)}</span> <${Badge} status=${l.kind} /> <span class="tool">${l.tool}</span> <span class="step">${l.step}</span> <span class="sum">${l.summary ?? ''}</span>
      </button></li>`);
  }
  return html`<div class="log" ref=${box} onScroll=${onScroll} tabindex="0" role="region" aria-label=${`Tool-call log, ${lines.length} entries`} data-testid="log">
    <ol style=${{ height: `${lines.length * ROW}px` }} data-total=${lines.length}>${rows}</ol>
  </div>`;
}

function Reasoning({ line }) {
  if (!line) return html`<p class="quiet">Choose an entry of the log to see its inputs, result and reasoning.</p>`;
  const r = line.result && typeof line.result === 'object' ? line.result : null;
  return html`<dl>
      <dt>Entry</dt><dd>#${line.id} · ${line.kind} · <span data-testid="entry-time">${time(line.at)}</span></dd>
      <dt>Tool</dt><dd><code>${line.tool}</code> by ${line.agent} in step ${line.step}</dd>
      ${line.summary ? html`<dt>Summary</dt><dd>${line.summary}</dd>` : null}
      ${r?.predicted || r?.best?.predicted ? html`<dt>Twin prediction</dt><dd>${Object.entries(r.predicted ?? r.best.predicted).map(([k, v]) => `${k} ${fmt(v)}`).join(' · ')}</dd>` : null}
      ${r && (Array.isArray(r.ranked) || typeof r.ranked === 'number') ? html`<dt>Candidates considered</dt><dd>${Array.isArray(r.ranked) ? r.ranked.length : r.ranked} ranked${r.discarded !== undefined ? `, ${Array.isArray(r.discarded) ? r.discarded.length : r.discarded} discarded` : ''}${r.best ? `; chosen #${r.best.index}` : ''}</dd>` : null}
      ${r?.discardReasons ? html`<dt>Why discarded</dt><dd>${Object.entries(r.discardReasons).map(([k, v]) => `${k} ×${v}`).join(', ')}</dd>` : null}
      ${r?.reasons ? html`<dt>Why</dt><dd>${[].concat(r.reasons).join(', ')}</dd>` : null}
    </dl>
    ${line.args !== undefined ? html`<details open><summary>Inputs</summary><pre>${JSON.stringify(line.args, null, 2)}</pre></details>` : null}
    ${line.result !== undefined ? html`<details><summary>Result</summary><pre>${JSON.stringify(line.result, null, 2)}</pre></details>` : null}`;
}

export function RunPage({ s, id }) {
  const [run, setRun] = useState(null);
  const [error, setError] = useState(null);
  const [stream, setStream] = useState('connecting');
  const [version, setVersion] = useState(0);
  const [selected, setSelected] = useState(null);
  const lines = useMemo(() => [], [id]);
  useEffect(() => {
    let live = true;
    let frame = 0;
    const load = () => api('GET', `/runs/${id}`).then((r) => live && setRun(r)).catch((e) => live && setError(e));
    load();
    // re-render at most once a frame however fast lines arrive
    const bump = () => {
      if (!frame) frame = requestAnimationFrame(() => { frame = 0; setVersion((v) => v + 1); });
    };
    // the run's steps are re-read when the log says something finished, at most twice a second
    let soon = 0;
    const reload = () => {
      if (!soon) soon = setTimeout(() => { soon = 0; load(); }, 500);
    };
    const stop = followRun(id, 0, {
      onLine: (l) => {
        lines.push(l);
        bump();
        if (l.kind !== 'call') reload();
      },
      onEnd: () => load(),
      onState: (st) => live && setStream(st),
    });
    const t = setInterval(load, 3000);
    return () => {
      live = false;
      stop();
      clearInterval(t);
      clearTimeout(soon);
      cancelAnimationFrame(frame);
    };
  }, [id]);
  const gate = run?.approvalGate;
  return html`<h1 tabindex="-1">Run ${id}</h1>
    <${ErrorNote} error=${error} />
    ${run ? html`<p>Batch <strong>${run.batch}</strong> on ${run.line} · ${run.product} × ${run.tooling} · autonomy ≤ ${run.autonomy} · started by ${run.startedBy} at ${time(run.createdAt)}</p>
      <p role="status" aria-live="polite" data-testid="run-status">Status: <${Badge} status=${run.status} />${run.reason ? ` — ${run.reason}` : ''}
        ${gate?.status === 'pending' ? html` · <a href="#/approvals">approvals</a>` : null}
        ${gate?.signature ? html` · <span data-testid="manifestation">${gate.status} by ${gate.signature.name} (${gate.signature.user}), ${time(gate.signature.timestamp)}, “${gate.signature.meaning}”</span>` : null}</p>
      <${RunActions} s=${s} run=${run} onChange=${() => api('GET', `/runs/${id}`).then(setRun).catch(setError)} />
      <p><a href=${`#/genealogy/${id}`}>Genealogy plot and release package</a></p>
      <h2>Steps <small>(${run.plan.text})</small></h2>
      <table class="steps"><caption class="sr">Steps of the run</caption>
        <thead><tr><th scope="col">#</th><th scope="col">Step</th><th scope="col">Status</th><th scope="col">Agent</th><th scope="col">Tool</th><th scope="col">Duration</th><th scope="col">Detail</th></tr></thead>
        <tbody>${run.steps.map((st) => html`<tr data-step=${st.seq} data-status=${st.status}><td>${st.seq}</td><td>${st.name}${st.gate ? ' (gate)' : ''}</td><td><${Badge} status=${st.status} />${st.exceptions?.total ? html` <${Badge} status=${st.exceptions.blocking ? 'error' : 'pending'} label=${`${st.exceptions.total} exception${st.exceptions.total === 1 ? '' : 's'} (${st.exceptions.kinds.join(', ')})${st.exceptions.open ? `, ${st.exceptions.open} open` : ''}`} />` : null}</td><td>${st.agent}</td><td>${st.tool}</td><td class="num">${st.duration}</td><td class="detail">${st.detail}</td></tr>`)}</tbody>
      </table>` : html`<p>Loading…</p>`}
    ${run ? html`<${ExceptionsPanel} s=${s} run=${id} />` : null}
    <h2>Tool-call log <${Badge} status=${stream} label=${`stream ${stream}`} /> <small data-testid="log-count">${lines.length} entries</small></h2>
    <div class="logwrap">
      <${LogList} lines=${lines} version=${version} selected=${selected?.id} onSelect=${(l) => setSelected(selected?.id === l.id ? null : l)} />
      <section id="log-detail" class="reasoning" aria-label="Reasoning of the chosen entry" aria-live="polite"><h3>Reasoning</h3><${Reasoning} line=${selected} /></section>
    </div>
    <${PendingMoves} run=${id} />
    <${Escalations} s=${s} />
    ${run?.release ? html`<p>${run.status === 'ABORTED' || run.status === 'REJECTED' ? 'Package (not a release)' : 'Release package'}: sha256 of release.json <code>${short(run.release.sha256.json)}</code></p>` : null}`;
}
