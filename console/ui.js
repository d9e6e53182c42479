// Shared pieces of the console: htm bound to Preact, status badges that never rely on colour alone (a glyph
// and the word), a modal dialog on the native <dialog> (focus kept inside, Esc closes), formatters.
import { h } from '../vendor/preact.js';
import { useEffect, useRef } from '../vendor/hooks.js';
import htm from '../vendor/htm.js';
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

export const time = (iso) => (iso ? new Date(iso).toISOString().replace('T', ' ').slice(0, 19) + ' UTC' : '—');
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
