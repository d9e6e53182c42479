// Shared pieces of the console: htm bound to Preact, status badges that never rely on colour alone (a glyph
// and the word), a modal dialog on the native <dialog> (focus kept inside, Esc closes), formatters — every time on
// the site's clock with its offset (console/site-time.js), never the browser's zone.
import { h } from '../vendor/preact.js';
import { useEffect, useRef, useState } from '../vendor/hooks.js';
import htm from '../vendor/htm.js';
import { clockIn, onSiteZone, siteZone, spanIn, stampIn, zoneState } from './site-time.js';
import { unitLabel } from './units.js';

export const html = htm.bind(h);

const TONE = {
  ok: ['ok', '✓'], SUCCEEDED: ['ok', '✓'], approved: ['ok', '✓'], validated: ['ok', '✓'], connected: ['ok', '✓'], ATTENDED: ['ok', '✓'], written: ['ok', '✓'],
  RUNNING: ['info', '▶'], live: ['info', '●'], shadow: ['info', '◐'], draft: ['muted', '○'], PENDING: ['muted', '○'], pending: ['warn', '‖'],
  APPROVAL: ['warn', '‖'], WAITING: ['warn', '‖'], connecting: ['warn', '…'], reconnecting: ['warn', '↻'],
  error: ['bad', '✕'], FAILED: ['bad', '✕'], REJECTED: ['bad', '✕'], rejected: ['bad', '✕'], LOST: ['bad', '⚠'], disconnected: ['bad', '✕'], INTERRUPTED: ['bad', '⚠'],
  retired: ['muted', '⊘'], SKIPPED: ['muted', '–'], call: ['muted', '→'], ABORTED: ['bad', '⊘'], withdrawn: ['muted', '⊘'], HELD: ['warn', '‖'],
};

/** A status as glyph + word; the colour only repeats what the text already says. */
export function Badge({ status, label }) {
  const [tone, glyph] = TONE[status] ?? ['muted', '•'];
  return html`<span class=${`badge ${tone}`}><span aria-hidden="true">${glyph} </span>${label ?? status}</span>`;
}

/** A modal dialog (native <dialog>: focus trapped, Esc closes); `onClose` when it closes by any means. */
export function Dialog({ title, onClose, children, id }) {
  const ref = useRef(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    const close = () => onClose?.();
    d?.addEventListener('close', close);
    return () => d?.removeEventListener('close', close);
  }, []);
  return html`<dialog ref=${ref} aria-labelledby=${`${id}-title`} id=${id}>
    <h2 id=${`${id}-title`}>${title}</h2>
    ${children}
  </dialog>`;
}

export function ErrorNote({ error }) {
  if (!error) return null;
  const away = error.code === 'LK_API_UNREACHABLE' || error.code === 'LK_NOT_READY';
  return html`<p class="error" role="alert"><strong>${away ? 'Not answering:' : 'Refused:'}</strong> ${error.message}${error.code ? html` <code>[${error.code}]</code>` : ''}</p>`;
}

/** A time (ISO 8601 or epoch ms) on the site's clock: "2026-11-27 16:43:00 UTC+01:00 (Europe/Rome)"; on UTC "… UTC". */
export const time = (at) => stampIn(at, siteZone());
/** Its time of day with the offset: "16:43:00 UTC+01:00" (`{ seconds: false }`: "16:43 UTC+01:00"). */
export const clock = (at, o) => clockIn(at, siteZone(), o);
/** From `a` to `b` on the site's clock: "10:00:00–10:05:00 UTC+05:30". */
export const span = (a, b) => spanIn(a, b, siteZone());
/** The site's zone as the daemon said it ({ zone, unanswered }); a component that uses it renders again when it changes. */
export function useSiteZone() {
  const [z, setZ] = useState(zoneState());
  useEffect(() => onSiteZone(setZ), []);
  return z;
}
export const short = (hash, n = 12) => (hash ? `${hash.slice(0, n)}…` : '—');
export const fmt = (v) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : String(+v.toPrecision(5))) : v === null || v === undefined ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v));
/** A UCUM code as a person writes it (console/units.js): 'Cel' → '°C'. */
export const unit = (u) => unitLabel(u);

/**
 * Call `load(live)` when the component appears, every `ms` after, and afresh when `deps` change; `live()` is false
 * once the component is gone or `deps` changed, so a late answer is dropped rather than shown.
 */
export function usePoll(load, ms, deps) {
  useEffect(() => {
    let on = true;
    const live = () => on;
    const run = () => load(live);
    run();
    const t = setInterval(run, ms);
    return () => {
      on = false;
      clearInterval(t);
    };
  }, deps);
}
