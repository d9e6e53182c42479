/**
 * The CLI's session with a running daemon: the bearer token of `linekeeper login`, kept in the user's config
 * directory (`$XDG_CONFIG_HOME/linekeeper/session.json`, else `~/.config/linekeeper/session.json`). The file is
 * the only copy of the token outside the daemon, so it is written 0600 in a 0700 directory, atomically (a
 * reader never sees half a file), and never holds the password.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { z } from 'zod';
import { RUN_ID_RE } from '../domain/run.js';
import { LkError } from '../errors.js';
import type { LinekeeperClient } from '../sdk/client.js';
import { daemonClient } from './daemon-client.js';

/**
 * When a token the daemon gave expires by this machine's clock: its `expiresIn` (the daemon's lifetime, by the daemon's
 * clock) counted from `askedAt`, the moment the request was sent (epoch ms here; a little early, never late). The
 * daemon's own `expiresAt` is on its clock: on a machine whose clock is ahead of it by more than a token's lifetime, a
 * fresh session looked expired, and one behind it was renewed late.
 */
export function localExpiry(t: { readonly expiresIn: number }, askedAt: number): string {
  return new Date(askedAt + t.expiresIn * 1000).toISOString();
}

/** The daemon's REST API when neither `--url` nor `LINEKEEPER_URL` says otherwise (the config's api default). */
export const DEFAULT_URL = 'http://127.0.0.1:8080';

export const Session = z.strictObject({
  format: z.literal(1),
  url: z.string().min(1),
  user: z.string().min(1),
  name: z.string(),
  role: z.string(),
  tenant: z.string().min(1),
  tenants: z.array(z.string()),
  token: z.string().min(1),
  /** ISO 8601: when the daemon stops accepting the token, on this machine's clock ({@link localExpiry}). */
  expiresAt: z.string(),
  /** ISO 8601: renewals go no further (then `linekeeper login` again). */
  sessionEndsAt: z.string().optional(),
});
export type Session = z.infer<typeof Session>;

/**
 * The directory of linekeeper's per-user files. `XDG_CONFIG_HOME` counts only when absolute (the XDG base
 * directory rule: a relative one is ignored).
 */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env['XDG_CONFIG_HOME'];
  return join(xdg && isAbsolute(xdg) ? xdg : join(homedir(), '.config'), 'linekeeper');
}

export function sessionFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), 'session.json');
}

/** Create the directory 0700, and take group and other access away if it already had it (it holds a token). */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if ((statSync(dir).mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** Write `text` to `file` 0600 through a temporary file and a rename, so no reader sees a partial file. */
export function writePrivateFile(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  // the mode of openSync applies only when it creates the file; a stale temporary file keeps its own
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/** Store a session (replacing the previous one). */
export function saveSession(s: Session, env: NodeJS.ProcessEnv = process.env): string {
  const dir = configDir(env);
  ensurePrivateDir(dir);
  const file = sessionFile(env);
  writePrivateFile(file, `${JSON.stringify(Session.parse(s), null, 2)}\n`);
  return file;
}

/**
 * The stored session, or null when there is none.
 * @throws LkError LK_UNAUTHENTICATED when the file is unreadable or not a session (sign in again).
 */
export function readSession(env: NodeJS.ProcessEnv = process.env): Session | null {
  const file = sessionFile(env);
  if (!existsSync(file)) return null;
  try {
    return Session.parse(JSON.parse(readFileSync(file, 'utf8')));
  } catch (err) {
    throw new LkError('LK_UNAUTHENTICATED', `${file} is not a linekeeper session`, { hint: 'sign in again: linekeeper login' }, { cause: err });
  }
}

/** Remove the stored session. @returns the session that was removed, or null. */
export function removeSession(env: NodeJS.ProcessEnv = process.env): Session | null {
  let s: Session | null = null;
  try {
    s = readSession(env);
  } catch {
    // a damaged file is removed all the same
  }
  rmSync(sessionFile(env), { force: true });
  return s;
}

/** Where a command that needs no session (login) talks to: `--url`, `LINEKEEPER_URL`, the default. */
export function urlFor(explicit: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return normaliseUrl(explicit ?? env['LINEKEEPER_URL'] ?? DEFAULT_URL);
}

/**
 * `http://host:port` without a trailing slash.
 * @throws LkError LK_VALIDATION for anything but an http(s) URL.
 */
export function normaliseUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new LkError('LK_VALIDATION', `"${raw}" is not a URL of the linekeeper daemon (e.g. ${DEFAULT_URL})`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new LkError('LK_VALIDATION', `"${raw}" is not an http(s) URL`);
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
}

/**
 * The signed-in session a command runs under, checked before any request: present, not expired, and for the
 * daemon the command talks to (`--url` or `LINEKEEPER_URL` when given; a token is good only where it was issued).
 * @throws LkError LK_UNAUTHENTICATED (the CLI's exit code 77) otherwise.
 */
export function requireSession(explicitUrl: string | undefined, now: number, env: NodeJS.ProcessEnv = process.env): Session {
  const s = readSession(env);
  if (!s) throw new LkError('LK_UNAUTHENTICATED', 'not signed in', { hint: 'sign in first: linekeeper login --user <id>' });
  const want = explicitUrl ?? env['LINEKEEPER_URL'];
  if (want !== undefined && normaliseUrl(want) !== s.url) {
    throw new LkError('LK_UNAUTHENTICATED', `signed in to ${s.url}, not to ${normaliseUrl(want)}`, { hint: `sign in there: linekeeper login --url ${normaliseUrl(want)}` });
  }
  if (!(Date.parse(s.expiresAt) > now)) {
    throw new LkError('LK_UNAUTHENTICATED', `the session of ${s.user} expired at ${s.expiresAt}`, { hint: `sign in again: linekeeper login --user ${s.user}` });
  }
  return s;
}

/** Where the transcript of an attachment to `run` resumes from (`runs watch`), beside the session. */
export function cursorFile(run: string, env: NodeJS.ProcessEnv = process.env): string {
  // the id names a file: only a run id's characters reach the path
  if (!RUN_ID_RE.test(run)) throw new LkError('LK_VALIDATION', `"${run}" is not a run id (run_<token>)`);
  return join(configDir(env), 'watch', `${run}.json`);
}

const Cursor = z.strictObject({ lastEventId: z.int().min(0), printed: z.array(z.string()), seen: z.string() });
export type Cursor = z.infer<typeof Cursor>;

/** The saved transcript state of `run`, or null (none, or unreadable: the watch then prints from the start). */
export function readCursor(run: string, env: NodeJS.ProcessEnv = process.env): Cursor | null {
  try {
    return Cursor.parse(JSON.parse(readFileSync(cursorFile(run, env), 'utf8')));
  } catch {
    return null;
  }
}

export function saveCursor(run: string, c: Cursor, env: NodeJS.ProcessEnv = process.env): void {
  const file = cursorFile(run, env);
  ensurePrivateDir(configDir(env));
  ensurePrivateDir(join(configDir(env), 'watch'));
  writePrivateFile(file, JSON.stringify(Cursor.parse(c)));
}

export function removeCursor(run: string, env: NodeJS.ProcessEnv = process.env): void {
  rmSync(cursorFile(run, env), { force: true });
}

/** A signed-in client of the daemon (the SDK's, src/cli/daemon-client.ts): the session, its client, and the tenant a command works on. */
export function connect(opts: { url?: string; tenant?: string }, now: number, env: NodeJS.ProcessEnv = process.env): { session: Session; client: LinekeeperClient; tenant: string } {
  const session = requireSession(opts.url, now, env);
  const tenant = opts.tenant ?? session.tenant;
  return { session, client: daemonClient({ url: session.url, token: session.token, tenant }), tenant };
}

/**
 * Renew the session's token when less than `withinMs` of it is left (default 5 min), without the password, and
 * store the new one; the client uses it from then on. A long `runs watch` calls this on a timer so the
 * attachment survives the token lifetime, up to the session's maximum age.
 * @returns the session in force (renewed or not).
 * @throws LinekeeperError of the daemon (LK_UNAUTHENTICATED once the session reached its maximum age or was signed out).
 */
export async function renewSession(session: Session, client: LinekeeperClient, now: number, withinMs = 5 * 60_000, env: NodeJS.ProcessEnv = process.env): Promise<Session> {
  if (Date.parse(session.expiresAt) - now > withinMs) return session;
  // POST /v1/auth/token/refresh; the client takes the new token (and renews it itself only when asked: no expiry was given to it)
  const r = await client.renew();
  client.close();
  const next: Session = { ...session, token: r.token, expiresAt: localExpiry(r, now), ...(r.sessionEndsAt ? { sessionEndsAt: r.sessionEndsAt } : {}) };
  // another command may have signed in as someone else meanwhile: only our own session file is replaced
  let current: Session | null = null;
  try {
    current = readSession(env);
  } catch {
    current = null;
  }
  if (current === null || (current.token === session.token && current.url === session.url)) saveSession(next, env);
  return next;
}
