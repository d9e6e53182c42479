/**
 * `linekeeper login` / `logout`: the session with a running daemon. The password is typed (no echo) or, when
 * stdin is not a terminal, its first line — never an argument. The token, not the password, is stored. When the
 * password was set by someone else (an administrator, the demo set-up) or has expired, the daemon opens a session
 * that may only change it: login then asks for a new password (twice on a terminal; the second line of stdin
 * otherwise) and changes it before the session is stored.
 */
import type { Command } from 'commander';
import { LkError } from '../../errors.js';
import { LinekeeperError } from '../../sdk/errors.js';
import { cliError, daemonClient } from '../daemon-client.js';
import { createInterface } from 'node:readline';
import { readLine, readPassword, readSecrets } from '../prompt.js';
import { localExpiry, readSession, removeSession, saveSession, urlFor } from '../session.js';

/** Every line of stdin when it is not a terminal (the password, then perhaps a new one). */
async function stdinLines(): Promise<string[]> {
  const rl = createInterface({ input: process.stdin, terminal: false, crlfDelay: Infinity });
  const lines: string[] = [];
  for await (const l of rl) lines.push(l);
  return lines;
}

export function registerLogin(program: Command): void {
  program
    .command('login')
    .description('sign in to the daemon: prompts for the password (from stdin when it is not a terminal) and stores the session token 0600 in your config directory')
    .option('--user <id>', 'your user id (default: the previous session\'s, else asked)')
    .option('--tenant <id>', 'the tenant commands work on (default: your first tenant)')
    .option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else http://127.0.0.1:8080)')
    .action(async (opts: { user?: string; tenant?: string; url?: string }) => {
      const url = urlFor(opts.url);
      let previous = null;
      try {
        previous = readSession();
      } catch {
        // a damaged session is replaced
      }
      let user = opts.user ?? (previous?.url === url ? previous.user : undefined);
      if (user === undefined) {
        if (!process.stdin.isTTY) throw new LkError('LK_VALIDATION', '--user is required when stdin is not a terminal');
        user = (await readLine('user: '))?.trim() ?? '';
        if (!user) throw new LkError('LK_VALIDATION', 'no user id was given');
      }
      const tty = process.stdin.isTTY === true;
      const piped = tty ? [] : await stdinLines();
      const password = tty ? await readPassword(`password for ${user} at ${url}: `) : (piped[0] ?? '');
      if (!password) throw new LkError('LK_VALIDATION', 'no password was given');
      // POST /v1/auth/token; the client keeps the token for the password change below
      const client = daemonClient({ url, user, password });
      const askedAt = Date.now();
      const t = await client.signIn().catch((err: unknown) => {
        // a refused sign-in is not an expired session: no "sign in again" hint
        throw LinekeeperError.is(err, 'LK_UNAUTHENTICATED') ? new LkError('LK_UNAUTHENTICATED', err.detail) : err;
      });
      // the CLI stores the token and renews it itself (session.ts)
      client.close();
      if (t.mustChangePassword) {
        process.stderr.write(`linekeeper: the password of ${t.user.id} was set by someone else or has expired; choose your own now\n`);
        let next: string;
        if (tty) {
          const [a, b] = await readSecrets([`new password for ${t.user.id}: `, `new password for ${t.user.id} (again): `]);
          if (a !== b) throw new LkError('LK_VALIDATION', 'the two new passwords differ; nothing was changed (sign in again)');
          next = a!;
        } else {
          next = piped[1] ?? '';
          if (!next) throw new LkError('LK_PASSWORD_CHANGE_REQUIRED', `${t.user.id} must change the password: give the new one as the second line of stdin`);
        }
        await daemonClient({ url, token: t.token }).changePassword({ current: password, password: next });
        process.stderr.write(`linekeeper: new password for ${t.user.id} set\n`);
      }
      const tenant = opts.tenant ?? (previous && previous.user === t.user.id && t.user.tenants.includes(previous.tenant) ? previous.tenant : t.user.tenants[0]);
      // a tenant the person does not work for is not found, as the API answers it (R1)
      if (!tenant || !t.user.tenants.includes(tenant)) throw new LkError('LK_NOT_FOUND', `no tenant ${tenant ?? '(none)'} for ${t.user.id}`, { tenants: t.user.tenants });
      const expiresAt = localExpiry(t, askedAt);
      const file = saveSession({
        format: 1, url, user: t.user.id, name: t.user.name, role: t.user.role, tenant, tenants: t.user.tenants, token: t.token, expiresAt,
        ...(t.sessionEndsAt ? { sessionEndsAt: t.sessionEndsAt } : {}),
      });
      process.stdout.write(`signed in to ${url} as ${t.user.name} (${t.user.id}, ${t.user.role}), tenant ${tenant}, until ${expiresAt}\n`);
      process.stderr.write(`linekeeper: session stored in ${file}\n`);
    });

  program
    .command('logout')
    .description('sign out: the daemon ends the session at once (its token is refused, open event streams close), and the stored session is removed')
    .action(async () => {
      let s = null;
      try {
        s = readSession();
      } catch {
        // a damaged file is removed all the same
      }
      let ended = false;
      if (s) {
        try {
          await daemonClient({ url: s.url, token: s.token }).signOut();
          ended = true;
        } catch (caught) {
          // expired or already ended: nothing to end; unreachable: say the token stays valid until it expires
          const err = cliError(caught);
          if (!LkError.is(err, 'LK_UNAUTHENTICATED')) process.stderr.write(`linekeeper: the daemon did not end the session (${LinekeeperError.is(err) ? err.detail : (err as Error).message}); its token stays valid until ${s.expiresAt}\n`);
        }
      }
      removeSession();
      process.stdout.write(s ? `signed out: ${s.user} at ${s.url}${ended ? ' (session ended on the daemon)' : ''}\n` : 'not signed in\n');
    });
}
