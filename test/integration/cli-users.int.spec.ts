/**
 * `linekeeper users …` on a data directory, as a child process with passwords on stdin (never arguments): the
 * first administrator of a site without one, then every change as a re-authenticated administrator, audited on
 * the site chain with that administrator as actor.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/store.js';
import { spawnCli } from '../helpers/cli.js';

let dir: string;
const ADMIN_PW = 'admin password 2026';
const NEW_PW = 'a new password of twelve+';

const users = (args: readonly string[], input: string) => spawnCli(['users', ...args, '--data', dir], { input });

function trail(): { action: string; actor: string; reason: string | null; args: string | null }[] {
  const store = openStore({ dataDir: dir, readonly: true });
  try {
    return store.db.prepare("SELECT action, actor, reason, args FROM audit_entry WHERE tenant = 'site' AND kind = 'identity' ORDER BY seq").all() as never;
  } finally {
    store.close();
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lk-cli-users-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('linekeeper users', () => {
  it('creates the first administrator without --as (BOOTSTRAP, actor system), and only that', async () => {
    const notAdmin = await users(['add', 'q.first', '--name', 'Quinn First', '--role', 'qa_reviewer', '--tenant', 'acme-pharma'], `${NEW_PW}\n`);
    expect(notAdmin.code).toBe(2);
    const r = await users(['add', 'd.admin', '--name', 'Dana Admin', '--role', 'admin', '--tenant', 'acme-pharma', 'borealis-bio'], `${ADMIN_PW}\n`);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('added d.admin');
    const again = await users(['add', 'd.second', '--name', 'Second', '--role', 'admin', '--tenant', 'acme-pharma'], `${NEW_PW}\n`);
    expect([again.code, again.err]).toEqual([2, expect.stringContaining('--as <admin> is required')]);
    expect(trail().find((e) => e.action === 'user.create')).toMatchObject({ actor: 'system', reason: expect.stringMatching(/^BOOTSTRAP/) });
  }, 180_000);

  it('[R2] [A11.12] adds, disables, enables as the administrator whose password is typed; a wrong one is refused and audited', async () => {
    const add = await users(['add', 'm.new', '--name', 'Mara New', '--role', 'qa_reviewer', '--tenant', 'acme-pharma', '--as', 'd.admin'], `${ADMIN_PW}\n${NEW_PW}\n`);
    expect(add.code, add.err).toBe(0);
    const wrong = await users(['disable', 'm.new', '--as', 'd.admin'], 'not the admin password\n');
    expect([wrong.code, wrong.err]).toEqual([1, expect.stringContaining('[LK_REAUTH_FAILED]')]);
    const byNonAdmin = await users(['disable', 'd.admin', '--as', 'm.new'], `${NEW_PW}\n`);
    expect(byNonAdmin.err).toContain('[LK_FORBIDDEN]');
    const off = await users(['disable', 'm.new', '--as', 'd.admin', '--reason', 'on leave'], `${ADMIN_PW}\n`);
    expect(off.code, off.err).toBe(0);
    const list = JSON.parse((await users(['list', '--json'], '')).out) as { id: string; disabled: boolean }[];
    // an administrator chose m.new's password: it must be changed before m.new signs anything
    expect(list.find((u) => u.id === 'm.new')).toMatchObject({ disabled: true, mustChangePassword: true });
    expect((await users(['enable', 'm.new', '--as', 'd.admin'], `${ADMIN_PW}\n`)).code).toBe(0);
    const t = trail();
    expect(t.filter((e) => e.action.startsWith('user.')).map((e) => [e.action, e.actor])).toEqual([
      ['user.create', 'system'], ['user.create', 'd.admin'], ['user.disable', 'd.admin'], ['user.enable', 'd.admin'],
    ]);
    expect(t.some((e) => e.action === 'auth.failed' && e.args?.includes('d.admin'))).toBe(true);
    // no password, old or new, is in the trail
    expect(JSON.stringify(t)).not.toContain(NEW_PW);
    expect(JSON.stringify(t)).not.toContain(ADMIN_PW);
  }, 240_000);

  it('passwd: a person changes their own with the current one; after it the old one is refused', async () => {
    const r = await users(['passwd', 'm.new', '--as', 'm.new'], `${NEW_PW}\n${NEW_PW}-2\n`);
    expect(r.code, r.err).toBe(0);
    const wrongOld = await users(['passwd', 'm.new', '--as', 'm.new'], `${NEW_PW}\n${NEW_PW}-3\n`);
    expect(wrongOld.err).toContain('[LK_REAUTH_FAILED]');
    expect(trail().filter((e) => e.action === 'user.password').map((e) => e.actor)).toEqual(['m.new']);
    const list = JSON.parse((await users(['list', '--json'], '')).out) as { id: string; mustChangePassword: boolean; waits: unknown[] }[];
    expect(list.find((u) => u.id === 'm.new')).toMatchObject({ mustChangePassword: false });
    // the wrong current password above counted for m.new from this machine ('local'); an administrator clears it
    const unlock = await users(['unlock', 'm.new', '--as', 'd.admin', '--reason', 'typo confirmed'], `${ADMIN_PW}\n`);
    expect([unlock.code, unlock.out]).toEqual([0, expect.stringContaining('m.new unlocked by d.admin')]);
    expect(trail().find((e) => e.action === 'user.unlock')).toMatchObject({ actor: 'd.admin', reason: 'typo confirmed' });
    const weak = await users(['add', 'w.eak', '--name', 'Wes Eak', '--role', 'operator', '--tenant', 'acme-pharma', '--as', 'd.admin'], `${ADMIN_PW}\naaaaaaaaaaaa\n`);
    expect([weak.code, weak.err]).toEqual([1, expect.stringMatching(/Repeated characters.*\[LK_PASSWORD_WEAK\]/)]);
  }, 240_000);
});
