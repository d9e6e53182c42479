// The review console: sign-in, the session (its end shown and enforced), role-aware navigation and the pages.
// Routing is the URL fragment (#/runs/run_…), so every page has an address and the browser's back works.
import { render } from '../vendor/preact.js';
import { useEffect, useRef, useState } from '../vendor/hooks.js';
import { api, getLink, getSession, onLink, onSession, setSession, signIn, signInWithToken, signOut, unreachable } from './api.js';
import { ApprovalsPage } from './approvals.js';
import { AuditPage } from './audit.js';
import { AutonomyPage } from './autonomy.js';
import { LinePage } from './line.js';
import { ModelsPage } from './models.js';
import { RunPage, RunsPage } from './runs.js';
import { setSiteZone, zoneUnanswered } from './site-time.js';
import { Badge, clock, ErrorNote, fmt, html, time, usePoll, useSiteZone } from './ui.js';

const READERS = ['operator', 'process_engineer', 'qa_reviewer', 'auditor'];
const PAGES = [
  { path: 'line', label: 'Line', roles: [...READERS, 'admin'] },
  { path: 'runs', label: 'Runs', roles: READERS },
  { path: 'approvals', label: 'Approvals', roles: ['process_engineer', 'qa_reviewer', 'auditor'] },
  { path: 'genealogy', label: 'Genealogy', roles: READERS },
  { path: 'audit', label: 'Audit', roles: ['auditor', 'qa_reviewer'] },
  { path: 'autonomy', label: 'Autonomy', roles: READERS },
  { path: 'models', label: 'Models', roles: READERS },
];

/** The genealogy page brings uPlot (the largest file): loaded when first opened, not at first load. */
let genealogy = null;
function GenealogyPage(props) {
  const [Page, setPage] = useState(() => genealogy);
  useEffect(() => {
    if (!Page) import('./genealogy.js').then((m) => setPage(() => (genealogy = m.GenealogyPage)));
  }, []);
  return Page ? html`<${Page} ...${props} />` : html`<h1 tabindex="-1">Genealogy</h1><p>Loading the plot…</p>`;
}

function useRoute() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash.replace(/^#\/?/, '').split('/').filter(Boolean);
}

function SignIn({ reason }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const attempt = async (e, how) => {
    e.preventDefault();
    const f = new FormData(e.target);
    setBusy(true);
    setError(null);
    try {
      await how(f);
      if (!location.hash || location.hash === '#/') location.hash = '#/line';
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const submit = (e) => attempt(e, (f) => signIn(String(f.get('user')), String(f.get('password'))));
  const withToken = (e) => attempt(e, (f) => signInWithToken(String(f.get('jwt'))));
  return html`<main id="main" class="signin">
    <h1>linekeeper review console</h1>
    ${reason ? html`<p class="notice" role="status">${reason}</p>` : null}
    <form onSubmit=${submit} aria-label="Sign in">
      <label for="signin-user">User</label>
      <input id="signin-user" name="user" autocomplete="username" required autofocus />
      <label for="signin-password">Password</label>
      <input id="signin-password" name="password" type="password" autocomplete="current-password" required />
      <button type="submit" disabled=${busy}>Sign in</button>
    </form>
    <${ErrorNote} error=${error} />
    <h2>Sign in with an identity-provider token</h2>
    <form onSubmit=${withToken} aria-label="Sign in with an identity-provider token">
      <label for="signin-jwt">Identity-provider token (JWT)</label>
      <textarea id="signin-jwt" name="jwt" rows="3" required spellcheck="false" autocomplete="off"></textarea>
      <button type="submit" disabled=${busy}>Use this token</button>
    </form>
  </main>`;
}

/** Sends the operator's presence while their console is open and visible (R5: no unattended level). */
function usePresence(s) {
  useEffect(() => {
    if (s?.user.role !== 'operator') return undefined;
    const beat = () => {
      if (document.visibilityState === 'visible') api('POST', '/attendance').catch(() => undefined);
    };
    beat();
    const t = setInterval(beat, 30_000);
    return () => clearInterval(t);
  }, [s?.token, s?.tenant]);
}

/** Ends the session when its token expires: the page says so instead of failing call by call. */
function useExpiry(s) {
  useEffect(() => {
    if (!s) return undefined;
    const left = Date.parse(s.expiresAt) - Date.now();
    const t = setTimeout(() => setSession(null, 'Your session timed out: sign in again.'), Math.max(0, left));
    return () => clearTimeout(t);
  }, [s?.token]);
}

/**
 * The line's state on every page, from GET /line (polled every 5 s): the batch of this tenant's run on the line,
 * the phase the line PLC reports and the run's state — or that the line is idle (with the PLC's phase all the
 * same: the PLC, not linekeeper, says what the line does), busy with another tenant's batch, or not answering.
 * The same answer names the site's time zone, whose clock every time of the console is shown on (site-time.js).
 */
function LineState({ s }) {
  const [line, setLine] = useState(null);
  const [away, setAway] = useState(false);
  usePoll((live) => api('GET', '/line').then((l) => live() && (setSiteZone(l.timezone), setLine(l), setAway(false)))
    .catch((e) => {
      zoneUnanswered();
      if (live() && unreachable(e)) setAway(true);
    }), 5000, [s.tenant]);
  if (away) return html`<span class="linestate" data-testid="header-run"><${Badge} status="error" label="not answering" /></span>`;
  if (!line) return html`<span class="linestate" data-testid="header-run">…</span>`;
  const phase = line.phase && line.phase.value !== null && line.phase.value !== '' ? html`<span title=${`${line.phase.tag} (${line.phase.quality}, ${time(line.phase.at)})`}>phase <strong data-testid="header-phase">${fmt(line.phase.value)}</strong></span>` : null;
  const run = line.activeRun;
  return html`<span class="linestate" data-testid="header-run" role="group" aria-label="Line state">
    ${run ? html`<a href=${`#/runs/${run.id}`} data-testid="header-batch">${run.batch}</a>` : html`<span>${line.busy ? 'line busy (another tenant)' : 'line idle'}</span>`}
    ${phase}
    ${run ? html`<${Badge} status=${run.status} />` : null}
  </span>`;
}

/**
 * The banner of every page while the daemon does not answer (role="alert", a glyph and words, never colour alone):
 * since when, and the time of its last answer by its own clock. It goes at the next answer to any call — a page's
 * poll, the strip's, a stream's reconnection — and the pages resume on their own (polls continue, streams resume
 * with Last-Event-ID; a restarted daemon keeps the session, so nobody signs in again).
 */
function AwayBanner() {
  const [link, setLink] = useState(getLink());
  useEffect(() => onLink(setLink), []);
  if (!link.away) return null;
  return html`<div class="away" role="alert" data-testid="away-banner">
    <span aria-hidden="true">⚠ </span><strong>linekeeper is not answering</strong> — what you see was read before it went silent;
    nothing you send reaches it.${link.lastAnswer ? html` Last answer: <time datetime=${link.lastAnswer} data-testid="away-last">${time(link.lastAnswer)}</time>.` : ' No answer yet since this page opened.'}${' '}Trying again every 5 s.
  </div>`;
}

/** Roles that have the Approvals page: there the moves, deadlocks and releases are decided (or read, for an auditor). */
const DESK = ['process_engineer', 'qa_reviewer', 'auditor'];

/**
 * What waits for a person, in the navigation of every page (GET /waiting, polled every 5 s): moves waiting for a
 * signature, arbitration deadlocks, open exceptions and batch releases at the gate — each count a link to where it
 * is decided, with whom it waits for and how many are the signed-in person's to decide. The four items keep their
 * place (a count changes, never the order), and while the pointer is over the strip a new answer waits until it
 * leaves, so nothing changes under it — for at most 15 s: a pointer resting there does not freeze the counts.
 */
const HOLD_MS = 15_000;
function WaitingStrip({ s }) {
  const [shown, setShown] = useState(null);
  const latest = useRef(null);
  // while linekeeper is silent the counts are the last ones read, and say so
  const [away, setAway] = useState(getLink().away);
  useEffect(() => onLink((l) => setAway(l.away)), []);
  const over = useRef(0); // when the pointer came over the strip (browser clock), 0 while it is not
  usePoll((live) => api('GET', '/waiting').then((w) => {
    if (!live()) return;
    latest.current = w;
    if (!over.current || Date.now() - over.current > HOLD_MS) setShown(w);
  }).catch(() => undefined), 5000, [s.tenant]); // the banner says when the daemon is away; the counts stay as last read
  const desk = DESK.includes(s.user.role);
  const w = shown;
  const yours = (c) => (c.yours > 0 ? html` <span class="yours">· ${c.yours} yours</span>` : null);
  const runOf = (c) => (c.runs[0] ? `#/runs/${c.runs[0]}` : '#/runs');
  const items = w ? [
    { key: 'moves', href: desk ? '#/approvals' : '#/line', label: 'Moves to sign', c: w.moves,
      who: w.moves.count === 0 ? null : [w.moves.needs.qa ? `QA ${w.moves.needs.qa}` : null, w.moves.needs.reviewer ? `batch reviewer ${w.moves.needs.reviewer}` : null].filter(Boolean).join(', ') },
    { key: 'escalations', href: desk ? '#/approvals' : '#/line', label: 'Deadlocks', c: w.escalations, who: w.escalations.count ? 'process engineer or QA' : null },
    { key: 'exceptions', href: runOf(w.exceptions), label: 'Open exceptions', c: w.exceptions,
      who: w.exceptions.count ? (w.exceptions.blocking ? `QA; ${w.exceptions.blocking} blocking a release` : 'QA or process engineer') : null },
    { key: 'gates', href: desk ? '#/approvals' : runOf(w.gates), label: 'Releases at the gate', c: w.gates, who: w.gates.count ? 'its QA reviewer' : null },
  ] : [];
  const leave = () => {
    over.current = 0;
    if (latest.current !== shown) setShown(latest.current);
  };
  return html`<nav class=${`waiting ${away ? 'stale' : ''}`} aria-label="Waiting for a person" data-testid="waiting" data-away=${away ? 'true' : 'false'} onPointerEnter=${() => { over.current = Date.now(); }} onPointerLeave=${leave}>
    <span class="waiting-title">Waiting for a person${away ? html` <span class="stale-v" data-testid="waiting-stale">(as last read: linekeeper is not answering)</span>` : null}:</span>
    ${w ? html`<ul>${items.map((i) => html`<li><a href=${i.href} data-testid=${`waiting-${i.key}`} data-count=${i.c.count} data-yours=${i.c.yours}
        class=${i.c.count > 0 ? 'some' : 'none'} title=${i.c.since ? `the oldest waits since ${time(i.c.since)}` : 'nothing waits'}>
        ${i.c.count > 0 ? html`<span aria-hidden="true">‖ </span>` : null}${i.label} <strong class="n">${i.c.count}</strong>${i.who ? html` <span class="for">(for ${i.who})</span>` : null}${yours(i.c)}</a></li>`)}</ul>`
      : html`<span>…</span>`}
  </nav>`;
}

function Shell({ s }) {
  const route = useRoute();
  const mainRef = useRef(null);
  // the pages show their times once the site's zone is known (the header's first GET /line), so none flips from
  // UTC to the site's clock under the reader's eyes; if that first question fails they show UTC, said as UTC
  const zone = useSiteZone();
  const clockKnown = zone.zone !== null || zone.unanswered;
  const allowed = PAGES.filter((p) => p.roles.includes(s.user.role));
  const page = route[0] ?? allowed[0]?.path ?? 'line';
  useEffect(() => {
    // a new page: move focus to its heading so a screen reader announces it and Tab starts there
    mainRef.current?.querySelector('h1')?.focus();
  }, [route.join('/'), clockKnown]);
  const may = allowed.some((p) => p.path === page);
  let body;
  if (!clockKnown) body = html`<h1 tabindex="-1">${PAGES.find((p) => p.path === page)?.label ?? 'linekeeper'}</h1><p data-testid="clock-wait">Reading the site's clock…</p>`;
  else if (!may) body = html`<h1 tabindex="-1">Not available</h1><p>A ${s.user.role.replace('_', ' ')} has no ${page} page here.</p>`;
  else if (page === 'line') body = html`<${LinePage} s=${s} />`;
  else if (page === 'runs' && route[1]) body = html`<${RunPage} s=${s} id=${route[1]} key=${route[1]} />`;
  else if (page === 'runs') body = html`<${RunsPage} s=${s} />`;
  else if (page === 'approvals') body = html`<${ApprovalsPage} s=${s} />`;
  else if (page === 'genealogy') body = html`<${GenealogyPage} s=${s} id=${route[1]} key=${route[1] ?? 'none'} />`;
  else if (page === 'audit') body = html`<${AuditPage} s=${s} />`;
  else if (page === 'autonomy') body = html`<${AutonomyPage} s=${s} />`;
  else if (page === 'models') body = html`<${ModelsPage} s=${s} />`;
  const tenant = (e) => setSession({ ...s, tenant: e.target.value });
  return html`<a class="skip" href="#main" onClick=${(e) => { e.preventDefault(); mainRef.current?.focus(); }}>Skip to content</a>
    <header class="top">
      <span class="brand">linekeeper</span>
      <${LineState} s=${s} />
      <nav aria-label="Console pages">
        <ul>${allowed.map((p) => html`<li><a href=${`#/${p.path}`} aria-current=${p.path === page ? 'page' : undefined}>${p.label}</a></li>`)}</ul>
      </nav>
      <div class="who">
        ${s.user.tenants.length > 1
          ? html`<label for="tenant-select" class="sr">Tenant</label><select id="tenant-select" value=${s.tenant} onChange=${tenant}>${s.user.tenants.map((t) => html`<option value=${t}>${t}</option>`)}</select>`
          : html`<span><span class="sr">Tenant </span><strong>${s.tenant}</strong></span>`}
        <span data-testid="who">${s.user.name} (${s.user.id}, ${s.user.role.replace('_', ' ')})</span>
        <span class="expiry" title=${`session until ${time(s.expiresAt)}`}>until ${clock(s.expiresAt, { seconds: false })}</span>
        <button type="button" onClick=${() => signOut()}>Sign out</button>
      </div>
    </header>
    <${AwayBanner} />
    ${READERS.includes(s.user.role) ? html`<${WaitingStrip} s=${s} key=${s.tenant} />` : null}
    <main id="main" ref=${mainRef} tabindex="-1" key=${s.tenant}>${body}</main>`;
}

function App() {
  const [s, setS] = useState(getSession());
  const [reason, setReason] = useState(null);
  useEffect(() => onSession((next, why) => {
    setS(next);
    setReason(why ?? null);
  }), []);
  usePresence(s);
  useExpiry(s);
  return s ? html`<${Shell} s=${s} />` : html`<${SignIn} reason=${reason} />`;
}

const root = document.getElementById('root');
root.textContent = ''; // the boot line goes: Preact renders beside what it did not create
render(html`<${App} />`, root);
