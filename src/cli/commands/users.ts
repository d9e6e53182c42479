/**
 * `linekeeper users list | add | passwd | unlock | disable | enable`: the local users of the site, in the data directory
 * (like the other offline commands: no daemon needed, and a running daemon sees a change at the next request of
 * the user concerned — it watches the database for changes made by other connections).
 *
 * Who does it is never taken on trust: `--as <id>` names an administrator, whose password is typed now and
 * checked against the store (a failure is audited and counts toward that account's lock-out). A person may
 * change their own password with `users passwd <own id> --as <own id>` (the current one, then the new one: also
 * how a password an administrator set is replaced). A password set by an administrator must be changed at the
 * next sign-in. Passwords are prompted on the terminal
 * (without echo, the new one twice) or read from stdin lines when it is not a terminal — never arguments. Every
 * change is audited on the site chain with the administrator as actor. The one exception is the first
 * administrator of a site that has none: `users add --role admin` without `--as`, audited as `system` with
 * reason `BOOTSTRAP`.
 */
import { Option, type Command } from 'commander';
import { Identity, identitySettings } from '../../api/identity.js';
import { defaultConfigFile, loadConfig } from '../../config/load.js';
import { LkError } from '../../errors.js';
import { openStore, type Store } from '../../store/store.js';
import { ROLES, type Role } from '../../store/user-store.js';
import { readSecrets } from '../prompt.js';

interface Common {
  config: string;
  data?: string;
  json?: boolean;
}

function common(cmd: Command): Command {
  return cmd
    .option('-c, --config <file>', 'site configuration file', defaultConfigFile())
    .option('--data <dir>', 'data directory (default: data_dir of the configuration)')
    .option('--json', 'machine-readable output');
}

function out(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

async function withIdentity<T>(opts: Common, fn: (identity: Identity, store: Store, tenants: readonly string[]) => Promise<T>): Promise<T> {
  const cfg = loadConfig(opts.config, opts.data !== undefined ? { dataDir: opts.data } : {});
  const store = openStore({ dataDir: cfg.dataDir });
  try {
    return await fn(new Identity({ store, clock: store.clock, ...identitySettings(cfg.config.api) }), store, cfg.config.tenants.map((t) => t.id));
  } finally {
    store.close();
  }
}

/**
 * The acting person, re-authenticated with the password typed now (the first of `secrets`).
 * @throws LkError LK_FORBIDDEN when they are not an administrator (and it is not their own password),
 *   LK_REAUTH_FAILED, LK_PASSWORD_CHANGE_REQUIRED from the check.
 */
async function actor(identity: Identity, as: string, password: string, what: string, self = false): Promise<string> {
  const u = identity.users.get(as);
  if (u && u.role !== 'admin' && !self) throw new LkError('LK_FORBIDDEN', `${as} is a ${u.role}: only an administrator may ${what}`);
  const who = await identity.reauthenticate(as, password, { purpose_detail: `users ${what}` });
  return who.id;
}

function newPasswordPrompts(user: string): string[] {
  // a terminal confirms the new password; a script gives it once
  return process.stdin.isTTY ? [`new password for ${user}: `, `new password for ${user} (again): `] : [`new password for ${user}`];
}

function sameTwice(secrets: readonly string[]): string {
  const [a, b] = secrets;
  if (b !== undefined && a !== b) throw new LkError('LK_VALIDATION', 'the two new passwords differ; nothing was changed');
  return a!;
}

export function registerUsers(program: Command): void {
  const users = program.command('users').description('Local users of the site (data directory): list, add, new password, disable, enable — as an administrator whose password is asked');

  common(users.command('list').description('The local users: id, name, role, tenants, disabled or locked')).action(async (opts: Common) => {
    await withIdentity(opts, async (identity, _store) => {
      const now = _store.clock.now();
      const rows = identity.users.all().map((u) => ({
        id: u.id, name: u.name, role: u.role, tenants: [...u.tenants], disabled: u.disabled, lockedAt: u.lockedAt, failedAttempts: u.failedAttempts, createdAt: u.createdAt, createdBy: u.createdBy, changedAt: u.changedAt,
        mustChangePassword: u.mustChange, passwordSetAt: u.passwordSetAt,
        waits: identity.lockouts.of(u.id).filter((w) => w.blockedUntil > now).map((w) => ({ source: w.source, failures: w.failures, until: new Date(w.blockedUntil).toISOString() })),
      }));
      if (opts.json) return out(JSON.stringify(rows, null, 2));
      if (rows.length === 0) return out('no local users (create the first administrator: linekeeper users add <id> --name "…" --role admin --tenant <id>)');
      for (const r of rows) {
        const state = r.disabled ? 'disabled' : r.lockedAt ? `locked since ${r.lockedAt}` : r.waits.length > 0 ? `${r.waits.length} source(s) wait` : r.mustChangePassword ? 'must change password' : 'active';
        out(`${r.id.padEnd(16)} ${r.role.padEnd(17)} ${state.padEnd(10)} ${r.tenants.join(',').padEnd(26)} ${r.name}`);
      }
    });
  });

  common(
    users
      .command('add')
      .description('Create a local user (ids are never reused); prompts for your password (--as) and the new user\'s')
      .argument('<id>', 'user id, e.g. m.rossi')
      .requiredOption('--name <name>', 'printed name (shown in signature manifestations)')
      .addOption(new Option('--role <role>', 'role').choices([...ROLES]).makeOptionMandatory())
      .requiredOption('--tenant <ids...>', 'tenants the user works for')
      .option('--as <admin>', 'the administrator making the change (omit only to create the first administrator of a site that has none)')
      .option('--reason <text>', 'why', 'account request'),
  ).action(async (id: string, opts: Common & { name: string; role: Role; tenant: string[]; as?: string; reason: string }) => {
    await withIdentity(opts, async (identity, _store, tenants) => {
      const unknown = opts.tenant.filter((t) => !tenants.includes(t));
      if (unknown.length > 0) throw new LkError('LK_VALIDATION', `no tenant ${unknown.join(', ')} on this site (${tenants.join(', ')})`);
      const bootstrap = opts.as === undefined;
      if (bootstrap) {
        const admins = identity.users.all().filter((u) => u.role === 'admin' && !u.disabled);
        if (admins.length > 0 || opts.role !== 'admin') throw new LkError('LK_VALIDATION', '--as <admin> is required (only the first administrator of a site without one is created without it)');
      }
      const secrets = await readSecrets([...(bootstrap ? [] : [`password for ${opts.as}: `]), ...newPasswordPrompts(id)]);
      const by = bootstrap ? 'system' : await actor(identity, opts.as!, secrets[0]!, 'add users');
      const password = sameTwice(bootstrap ? secrets : secrets.slice(1));
      // the bootstrap administrator typed their own password; anyone else's was chosen by the administrator and is changed at the first sign-in
      const u = await identity.create({ id, name: opts.name, role: opts.role, tenants: opts.tenant, password }, by, bootstrap ? `BOOTSTRAP: first administrator; ${opts.reason}` : opts.reason, { ownChoice: bootstrap });
      if (opts.json) return out(JSON.stringify({ ...u, by }, null, 2));
      out(`added ${u.id} (${u.name}, ${u.role}) for ${u.tenants.join(', ')} by ${by}${bootstrap ? '' : '; the password must be changed at the first sign-in (linekeeper login)'}`);
    });
  });

  common(
    users
      .command('passwd')
      .description('Set a new password (yours, or as an administrator anyone\'s); every session of the user ends')
      .argument('<id>', 'whose password')
      .requiredOption('--as <id>', 'you: the user themself, or an administrator')
      .option('--reason <text>', 'why', 'password change'),
  ).action(async (id: string, opts: Common & { as: string; reason: string }) => {
    await withIdentity(opts, async (identity) => {
      if (!identity.users.get(id)) throw new LkError('LK_NOT_FOUND', `no user ${id}`);
      const secrets = await readSecrets([`${opts.as === id ? 'current password' : `password for ${opts.as}`}: `, ...newPasswordPrompts(id)]);
      if (opts.as === id) {
        // one's own change: the current password, then the new one under the policy (also when it must be changed)
        await identity.changePassword(id, secrets[0]!, sameTwice(secrets.slice(1)));
        return out(`new password for ${id}, chosen by ${id}; your other sessions ended`);
      }
      const by = await actor(identity, opts.as, secrets[0]!, 'set other users\' passwords');
      await identity.setPassword(id, sameTwice(secrets.slice(1)), by, opts.reason);
      out(`new password for ${id}, set by ${by}; the user's sessions ended and ${id} must change it at the next sign-in`);
    });
  });

  common(
    users
      .command('unlock')
      .description('Lift the waits of an account after failed passwords (every source), audited; a wait also ends by itself')
      .argument('<id>', 'user id')
      .requiredOption('--as <admin>', 'the administrator making the change')
      .option('--reason <text>', 'why', 'lock-out cleared'),
  ).action(async (id: string, opts: Common & { as: string; reason: string }) => {
    await withIdentity(opts, async (identity) => {
      if (!identity.users.get(id)) throw new LkError('LK_NOT_FOUND', `no user ${id}`);
      const [pw] = await readSecrets([`password for ${opts.as}: `]);
      const by = await actor(identity, opts.as, pw!, 'unlock users');
      out(identity.unlock(id, by, opts.reason) ? `${id} unlocked by ${by}` : `${id} has no lock-out (nothing changed)`);
    });
  });

  for (const [name, disabled] of [['disable', true], ['enable', false]] as const) {
    common(
      users
        .command(name)
        .description(disabled ? 'Disable a user: sign-in and every session stop at once (ids are never deleted)' : 'Enable a user again; also clears a lock-out after failed sign-ins')
        .argument('<id>', 'user id')
        .requiredOption('--as <admin>', 'the administrator making the change')
        .option('--reason <text>', 'why', disabled ? 'account disabled' : 'account enabled'),
    ).action(async (id: string, opts: Common & { as: string; reason: string }) => {
      await withIdentity(opts, async (identity) => {
        if (!identity.users.get(id)) throw new LkError('LK_NOT_FOUND', `no user ${id}`);
        const [pw] = await readSecrets([`password for ${opts.as}: `]);
        const by = await actor(identity, opts.as, pw!, `${name} users`);
        const changed = identity.setDisabled(id, disabled, by, opts.reason);
        out(changed ? `${id} ${disabled ? 'disabled' : 'enabled'} by ${by}` : `${id} is already ${disabled ? 'disabled' : 'enabled'} (nothing changed)`);
      });
    });
  }
}
