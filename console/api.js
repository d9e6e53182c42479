// The console's client of the linekeeper REST API: a bearer token held for this tab only (sessionStorage,
// never localStorage, never a cookie), JSON calls that turn problem+json answers into ApiError with the LK_*
// code, and the run's server-sent events read with fetch() and a stream reader — EventSource cannot send the
// Authorization header — resumed with Last-Event-ID after a dropped connection.

export class ApiError extends Error {
  constructor(status, code, detail) {
    super(detail || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

const KEY = 'linekeeper.session';
const listeners = new Set();
let session = null;
try {
  const s = JSON.parse(sessionStorage.getItem(KEY) || 'null');
  if (s && Date.parse(s.expiresAt) > Date.now()) session = s;
} catch {
  session = null;
}

export function getSession() {
  return session;
}

/** Replace the session (null: signed out, with an optional reason shown on the sign-in page). */
export function setSession(s, reason) {
  session = s;
  if (s) sessionStorage.setItem(KEY, JSON.stringify(s));
  else sessionStorage.removeItem(KEY);
  for (const l of listeners) l(s, reason);
}

export function onSession(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/**
 * Whether the daemon answers, for the banner every page shows: `away` once a call found no daemon (or one that is
 * stopping), `lastAnswer` the time of the last answer — any answer, a refusal too — by the daemon's clock (its
 * `Date` header; the browser's clock only if that is missing). Every call of this module reports here, so the
 * banner goes as soon as any page's next poll or stream reconnection is answered.
 */
let link = { away: false, lastAnswer: null };
const linkListeners = new Set();

export function getLink() {
  return link;
}

export function onLink(fn) {
  linkListeners.add(fn);
  return () => linkListeners.delete(fn);
}

function setLink(next) {
  if (next.away === link.away && next.lastAnswer === link.lastAnswer) return;
  link = next;
  for (const l of linkListeners) l(link);
}

/** The daemon answered `r`: it is reachable. */
function answered(r) {
  const at = Date.parse(r.headers.get('date') ?? '');
  setLink({ away: false, lastAnswer: new Date(Number.isNaN(at) ? Date.now() : at).toISOString() });
}

/** No answer, or a daemon that says it is stopping (LK_NOT_READY): stopped, restarting, or the network is down. */
function silent() {
  if (!link.away) setLink({ ...link, away: true });
}

/** fetch() that reports to the banner; a network failure is thrown as LK_API_UNREACHABLE, never as a refusal. */
async function reach(url, init) {
  let r;
  try {
    r = await fetch(url, init);
  } catch (err) {
    if (init?.signal?.aborted) throw err;
    silent();
    // the daemon is not answering (stopped, restarting, the network): said as such, never as a refusal
    throw new ApiError(0, 'LK_API_UNREACHABLE', `linekeeper is not answering (${err?.message ?? 'no connection'})`);
  }
  answered(r);
  return r;
}

export async function signIn(user, password) {
  const askedAt = Date.now();
  const r = await fetch('/v1/auth/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user, password }) });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new ApiError(r.status, body.code, body.detail);
  // a password someone else set (or an expired one) opens nothing but its change: say how, keep no session
  if (body.mustChangePassword) {
    await fetch('/v1/auth/logout', { method: 'POST', headers: { authorization: `Bearer ${body.token}` } }).catch(() => undefined);
    throw new ApiError(403, 'LK_PASSWORD_CHANGE_REQUIRED', `The password of ${body.user.id} was set by someone else or has expired: choose your own first (linekeeper login, or linekeeper users passwd ${body.user.id} --as ${body.user.id}), then sign in here with it.`);
  }
  const s = { token: body.token, expiresAt: localExpiry(body, askedAt), user: body.user, tenant: body.user.tenants[0] };
  setSession(s);
  return s;
}

/**
 * Sign in with a bearer JWT of the site's identity provider, pasted (or handed over by a proxy in front of the
 * console): the console holds no client secret and runs no OIDC flow itself. The daemon verifies the token
 * (GET /v1/auth/me: signature against the site's JWKS, issuer, audience, expiry, role and tenant mapping) before
 * the tab keeps it; from then on it is used exactly as a local token. It is not renewed here (the provider
 * renews it): the session ends when it expires.
 */
export async function signInWithToken(jwt) {
  const token = jwt.trim();
  const r = await fetch('/v1/auth/me', { headers: { authorization: `Bearer ${token}` } });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new ApiError(r.status, body.code, body.detail);
  const s = { token, expiresAt: body.expiresAt, user: body.user, tenant: body.user.tenants[0], source: body.user.source };
  setSession(s);
  return s;
}

/** Sign out: the daemon ends the session at once (its token refused, its streams closed), then the tab forgets it. */
export async function signOut(reason = 'You signed out.') {
  const token = session?.token;
  if (token) {
    await fetch('/v1/auth/logout', { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{}' }).catch(() => undefined);
  }
  setSession(null, reason);
}

/**
 * When a token of the daemon expires by this browser's clock: its `expiresIn` (the daemon's lifetime, by the daemon's
 * clock) counted from when it was asked for. The daemon's `expiresAt` is on its own clock: a workstation ahead of it by
 * more than a token's lifetime took a fresh session for expired and renewed it every second.
 */
function localExpiry(body, askedAt) {
  return Number.isFinite(body.expiresIn) ? new Date(askedAt + body.expiresIn * 1000).toISOString() : body.expiresAt;
}

/**
 * Renew the token a minute before it expires, without the password (the daemon bounds the session's age), so a
 * reviewer watching a long run is not signed out mid-batch; a refused renewal ends the session here too.
 */
let renewTimer = null;
function scheduleRenewal(retry = false) {
  clearTimeout(renewTimer);
  // an identity-provider token is renewed at the provider, never here
  if (!session || session.source === 'sso') return;
  const due = retry ? 5_000 : Date.parse(session.expiresAt) - Date.now() - 60_000;
  renewTimer = setTimeout(async () => {
    const s = session;
    if (!s) return;
    const askedAt = Date.now();
    const r = await reach('/v1/auth/token/refresh', { method: 'POST', headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' }, body: '{}' }).catch(() => null);
    if (r && r.ok) {
      const body = await r.json();
      if (session === s) setSession({ ...s, token: body.token, expiresAt: localExpiry(body, askedAt) });
    } else if ((!r || r.status === 503) && session === s && Date.parse(s.expiresAt) > Date.now()) {
      // the daemon did not answer, or answered that it is stopping or starting (503: the session is kept in its
      // store): ask again while the token lives
      scheduleRenewal(true);
    }
    // not renewed (the session reached its maximum age, or was revoked): the next call's 401 signs the tab out
  }, Math.max(1_000, due));
}
listeners.add(() => scheduleRenewal());
scheduleRenewal();

function headers(extra = {}) {
  return { authorization: `Bearer ${session?.token ?? ''}`, ...extra };
}

async function fail(r) {
  const body = await r.json().catch(() => ({}));
  if (body.code === 'LK_NOT_READY') silent();
  if (r.status === 401 && body.code === 'LK_UNAUTHENTICATED') setSession(null, 'Your session ended (timed out or revoked): sign in again.');
  return new ApiError(r.status, body.code, body.detail);
}

/** A call under the session's tenant: `path` is relative to /v1/tenants/{tenant}. */
export async function api(method, path, body) {
  const t = session?.tenant;
  const init = { method, headers: headers(body !== undefined ? { 'content-type': 'application/json' } : {}) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const r = await reach(`/v1/tenants/${encodeURIComponent(t)}${path}`, init);
  if (!r.ok) throw await fail(r);
  return r.status === 204 ? null : r.json();
}

/** True for an error that means the daemon did not answer (or is stopping), rather than refused. */
export const unreachable = (err) => err?.code === 'LK_API_UNREACHABLE' || err?.code === 'LK_NOT_READY';

/** Download a file of the API (export, release package) through the session: a blob handed to the browser. */
export async function download(path, name) {
  const r = await reach(`/v1/tenants/${encodeURIComponent(session?.tenant)}${path}`, { headers: headers() });
  if (!r.ok) throw await fail(r);
  const disp = /filename="([^"]+)"/.exec(r.headers.get('content-disposition') || '');
  const blob = await r.blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = disp?.[1] || name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return { name: a.download, bytes: blob.size };
}

/**
 * Follow a run's tool-call log: `onLine(line)` per event in order, `onEnd(status)` once the run is terminal.
 * A dropped connection is resumed after a pause with Last-Event-ID, so nothing is missed or seen twice.
 * @returns stop()
 */
export function followRun(runId, after, { onLine, onEnd, onState }) {
  const ctl = new AbortController();
  let last = after;
  let stopped = false;
  const tenant = session?.tenant;
  const loop = async () => {
    while (!stopped) {
      try {
        onState?.('connecting');
        const r = await reach(`/v1/tenants/${encodeURIComponent(tenant)}/runs/${runId}/stream`, {
          headers: headers({ accept: 'text/event-stream', ...(last > 0 ? { 'last-event-id': String(last) } : {}) }), signal: ctl.signal,
        });
        if (!r.ok) throw await fail(r);
        onState?.('live');
        const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          // one pass over what arrived (a replay can bring thousands of events in one chunk): no re-slicing per event
          let at = 0;
          let i;
          while ((i = buf.indexOf('\n\n', at)) >= 0) {
            const block = buf.slice(at, i);
            at = i + 2;
            let event = 'message';
            let id;
            const data = [];
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) continue;
              const c = line.indexOf(':');
              const name = c < 0 ? line : line.slice(0, c);
              const v = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
              if (name === 'event') event = v;
              else if (name === 'id') id = v;
              else if (name === 'data') data.push(v);
            }
            if (data.length === 0) continue;
            if (event === 'end') {
              stopped = true;
              onState?.('ended');
              onEnd?.(JSON.parse(data.join('\n')).status);
              return;
            }
            if (id !== undefined) last = Number(id);
            onLine(JSON.parse(data.join('\n')));
          }
          buf = buf.slice(at);
        }
      } catch (err) {
        if (stopped || ctl.signal.aborted) return;
        if (err instanceof ApiError && (err.status === 401 || err.status === 404 || err.status === 403)) {
          onState?.('failed');
          return;
        }
      }
      if (stopped) return;
      onState?.('reconnecting');
      await new Promise((r) => setTimeout(r, 2000));
    }
  };
  void loop();
  return () => {
    stopped = true;
    ctl.abort();
  };
}
