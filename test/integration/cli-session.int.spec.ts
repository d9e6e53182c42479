/**
 * The CLI's per-user files, on real files in a temp dir: the session of `linekeeper login` (0600 in a 0700
 * directory, under XDG_CONFIG_HOME or ~/.config), the checks before a command uses it (present, not expired,
 * for the daemon asked), and the transcript cursors `runs watch` resumes from.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configDir, cursorFile, readCursor, readSession, removeCursor, removeSession, requireSession, saveCursor, saveSession, sessionFile, urlFor, type Session } from '../../src/cli/session.js';
import { codeOf } from '../helpers/codes.js';

let home: string;
let env: NodeJS.ProcessEnv;
const NOW = Date.parse('2026-11-20T10:00:00.000Z');
const session = (over: Partial<Session> = {}): Session => ({
  format: 1, url: 'http://127.0.0.1:8080', user: 'o.operator', name: 'Olga Operator', role: 'operator', tenant: 'acme-pharma', tenants: ['acme-pharma'],
  token: 'tok-123', expiresAt: '2026-11-20T10:15:00.000Z', ...over,
});
const mode = (p: string): number => statSync(p).mode & 0o777;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'lk-cli-session-'));
  env = { XDG_CONFIG_HOME: join(home, 'config') };
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

describe('the session file', () => {
  it('lives under XDG_CONFIG_HOME when it is absolute, else under ~/.config', () => {
    expect(configDir(env)).toBe(join(home, 'config', 'linekeeper'));
    expect(sessionFile(env)).toBe(join(home, 'config', 'linekeeper', 'session.json'));
    expect(configDir({ XDG_CONFIG_HOME: 'relative/dir' })).toBe(join(homedir(), '.config', 'linekeeper'));
    expect(configDir({})).toBe(join(homedir(), '.config', 'linekeeper'));
  });

  it('is written 0600 in a 0700 directory, and read back equal', () => {
    const file = saveSession(session(), env);
    expect(mode(file)).toBe(0o600);
    expect(mode(configDir(env))).toBe(0o700);
    expect(readSession(env)).toEqual(session());
    expect(readFileSync(file, 'utf8')).not.toMatch(/password/i);
  });

  it('takes group and other access away from a directory that had it, and replaces a session atomically', () => {
    mkdirSync(configDir(env), { recursive: true });
    chmodSync(configDir(env), 0o755);
    saveSession(session(), env);
    expect(mode(configDir(env))).toBe(0o700);
    saveSession(session({ user: 'm.rossi', token: 'tok-456' }), env);
    expect(readSession(env)?.token).toBe('tok-456');
    expect(mode(sessionFile(env))).toBe(0o600);
  });

  it('is gone after logout; a damaged file is not a session (sign in again) and is removed too', () => {
    saveSession(session(), env);
    expect(removeSession(env)?.user).toBe('o.operator');
    expect(existsSync(sessionFile(env))).toBe(false);
    expect(removeSession(env)).toBeNull();
    writeFileSync(sessionFile(env), '{"token": 1}');
    expect(codeOf(() => readSession(env))).toBe('LK_UNAUTHENTICATED');
    removeSession(env);
    expect(readSession(env)).toBeNull();
  });
});

describe('a command\'s session', () => {
  it('is refused when there is none, when it expired, or when it is for another daemon (LK_UNAUTHENTICATED, exit 77)', () => {
    expect(codeOf(() => requireSession(undefined, NOW, env))).toBe('LK_UNAUTHENTICATED');
    saveSession(session(), env);
    expect(requireSession(undefined, NOW, env).user).toBe('o.operator');
    expect(codeOf(() => requireSession(undefined, Date.parse('2026-11-20T10:15:00.000Z'), env))).toBe('LK_UNAUTHENTICATED');
    expect(codeOf(() => requireSession('http://10.0.0.7:8080', NOW, env))).toBe('LK_UNAUTHENTICATED');
    expect(codeOf(() => requireSession(undefined, NOW, { ...env, LINEKEEPER_URL: 'http://10.0.0.7:8080' }))).toBe('LK_UNAUTHENTICATED');
    // the same daemon written differently is the same daemon
    expect(requireSession('http://127.0.0.1:8080/', NOW, env).user).toBe('o.operator');
  });

  it('login goes to --url, else LINEKEEPER_URL, else the loopback default; anything but http(s) is a usage error', () => {
    expect(urlFor('http://edge-3:9000/', {})).toBe('http://edge-3:9000');
    expect(urlFor(undefined, { LINEKEEPER_URL: 'http://edge-3:9001' })).toBe('http://edge-3:9001');
    expect(urlFor(undefined, {})).toBe('http://127.0.0.1:8080');
    expect(codeOf(() => urlFor('ftp://edge-3', {}))).toBe('LK_VALIDATION');
    expect(codeOf(() => urlFor('not a url', {}))).toBe('LK_VALIDATION');
  });
});

describe('watch cursors', () => {
  it('are saved 0600 per run and read back; a path that is not a run id is refused', () => {
    const run = 'run_0123456789abcdef0123';
    expect(readCursor(run, env)).toBeNull();
    saveCursor(run, { lastEventId: 49, printed: ['01/1/SUCCEEDED', 'gate/apr_1'], seen: '09' }, env);
    expect(mode(cursorFile(run, env))).toBe(0o600);
    expect(mode(join(configDir(env), 'watch'))).toBe(0o700);
    expect(readCursor(run, env)).toEqual({ lastEventId: 49, printed: ['01/1/SUCCEEDED', 'gate/apr_1'], seen: '09' });
    removeCursor(run, env);
    expect(readCursor(run, env)).toBeNull();
    expect(codeOf(() => cursorFile('../session', env))).toBe('LK_VALIDATION');
    expect(codeOf(() => cursorFile('run_../../x', env))).toBe('LK_VALIDATION');
  });
});
