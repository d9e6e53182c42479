/**
 * The first start of a test site, made once per `vitest run` and copied after that. A daemon's first start on the
 * embedded default signs the policy bundle, makes the site key and the demo people (scrypt) and fits and gates the
 * demo models: seconds of CPU, paid by every test file that starts a daemon on a fresh data directory, under load
 * tens of seconds. The first file to need a site makes its data directory once (in memory mode: no protocol
 * servers) into the run's template folder (test/global-setup.ts); the others copy it, with the demo people's
 * one-time passwords. The copy is what a first start leaves, byte for byte, save the MES inbox (seeded again from
 * the site's own batch records at the next start).
 *
 * The template is keyed by the site's files (site.yaml, policy, models: everything beside site.yaml but the
 * batch records and the data directory) and the clock it is made on. Outside vitest (no template folder) nothing
 * is copied and the daemon makes its first start itself.
 *
 * `ownPasswords`: the template goes one step further, as a site's people do at their first sign-in: each demo person
 * has replaced the one-time password by their own ({@link ownPassword}, through Identity.changePassword, the code the
 * password route runs) — scrypt work a test node otherwise repeats at every start.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { ManualClock, systemClock } from '../../src/clock.js';
import { startDaemon } from '../../src/daemon.js';
import { Identity, type DemoUser } from '../../src/api/index.js';
import { silentLogger } from '../../src/log.js';
import { TEMPLATE_ENV } from '../global-setup.js';

/**
 * The scrypt cost (log2 N) of the password hashes test daemons make (`DaemonOptions.passwordHashLog2N`): 2^10, about
 * 2 ms of CPU a hash, where the product's 2^15 takes 0.1 s — the suite signs people in and re-authenticates
 * signatures hundreds of times per worker (one of the three workers of a run hashed 315 times at 2^15: 34 s of CPU).
 * The same code hashes and checks; a password is checked at its stored hash's cost, so users a `linekeeper` command
 * made (at 2^15) sign in as they would on a site. The product's cost is tested where hashing is the subject.
 */
export const TEST_HASH_LOG2N = 10;

/** The password a demo person chooses in place of their one-time password `current` (the tests' convention). */
export const ownPassword = (user: string, current: string): string => `${current} is now my own, ${user}`;

/** A demo person of a first start: `password` the one-time password; `own` the one they chose (ownPasswords). */
export type FirstStartUser = DemoUser & { readonly own?: string };

function siteKey(configFile: string, dataDir: string, clock: 'wall' | number, own: boolean): string {
  const root = dirname(configFile);
  const h = createHash('sha256').update(`clock ${clock}\n${own ? 'own passwords\n' : ''}`);
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      const rel = relative(root, p);
      if (rel === 'batches' || p === dataDir) continue;
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) h.update(`${rel}\n`).update(readFileSync(p)).update('\n');
    }
  };
  walk(root);
  return h.digest('hex').slice(0, 24);
}

/**
 * Put the first start of `configFile`'s site into `dataDir` (which must not exist yet) and return the demo people
 * with their one-time passwords, as `Daemon.demoUsers` gives them at a first start; `undefined` when there is no
 * template folder (the daemon's own first start then makes them). `clock`: 'wall', or the epoch ms a ManualClock
 * of the test starts at (the template is made an hour before it, so the trail's times go forward).
 */
export async function firstStart(configFile: string, dataDir: string, clock: 'wall' | number = 'wall', o: { readonly ownPasswords?: boolean } = {}): Promise<readonly FirstStartUser[] | undefined> {
  const root = process.env[TEMPLATE_ENV];
  if (!root || !existsSync(root)) return undefined;
  if (existsSync(dataDir)) throw new Error(`firstStart: ${dataDir} exists already`);
  const own = o.ownPasswords === true;
  const dir = join(root, siteKey(configFile, dataDir, clock, own));
  const ready = join(dir, 'demo-users.json');
  if (!existsSync(ready)) await make(dir, configFile, clock, own);
  cpSync(join(dir, 'data'), dataDir, { recursive: true });
  return JSON.parse(readFileSync(ready, 'utf8')) as FirstStartUser[];
}

/** Make the template (one worker makes it; another that needs it meanwhile waits for it). */
async function make(dir: string, configFile: string, clock: 'wall' | number, own: boolean): Promise<void> {
  const ready = join(dir, 'demo-users.json');
  try {
    mkdirSync(dir);
  } catch {
    // another worker makes it: wait (a hang guard of minutes, not a speed limit)
    const deadline = Date.now() + 300_000;
    while (!existsSync(ready)) {
      if (existsSync(join(dir, 'failed'))) throw new Error(`first-start template ${dir}: ${readFileSync(join(dir, 'failed'), 'utf8')}`);
      if (Date.now() > deadline) throw new Error(`first-start template ${dir} not made in 5 minutes`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return;
  }
  try {
    const data = join(dir, 'data.tmp');
    const at = clock === 'wall' ? systemClock : new ManualClock(clock - 3_600_000);
    const d = await startDaemon({ configFile, dataDir: data, logger: silentLogger, clock: at, embeddedSimulator: 'memory', maintenance: false, connectTimeoutMs: 1, passwordHashLog2N: TEST_HASH_LOG2N });
    let users: readonly FirstStartUser[] = d.demoUsers;
    if (own) {
      const identity = new Identity({ store: d.store, clock: at, scryptLog2N: TEST_HASH_LOG2N });
      users = await Promise.all(users.map(async (u) => {
        const mine = ownPassword(u.id, u.password);
        await identity.changePassword(u.id, u.password, mine);
        return { ...u, own: mine };
      }));
    }
    await d.stop('first-start template made');
    rmSync(join(data, 'linekeeper.lock'), { force: true });
    rmSync(join(data, 'mes'), { recursive: true, force: true });
    renameSync(data, join(dir, 'data'));
    writeFileSync(join(dir, 'demo-users.tmp'), JSON.stringify(users));
    renameSync(join(dir, 'demo-users.tmp'), ready);
  } catch (err) {
    writeFileSync(join(dir, 'failed'), err instanceof Error ? err.message : String(err));
    throw err;
  }
}
