/**
 * The cost of the password hashes a daemon makes: scrypt at 2^15 unless the daemon was told otherwise — and it can
 * be told only in code (`DaemonOptions.passwordHashLog2N`), never by a site's configuration. The test daemons use
 * 2^10 (test/helpers/first-start.ts); this is where the product's cost is the subject.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Identity } from '../../src/api/identity.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultConfigFile } from '../../src/config/load.js';
import { configRefusal } from '../helpers/config.js';
import { codeOf, newStore, tempDir } from './audit-helpers.js';

const t = tempDir('lk-pwcost-');
afterAll(() => t.cleanup());

describe('password hashes a daemon makes', () => {
  it('are scrypt at 2^15 by default, checked at their own cost; a cost outside 1..20 is refused', async () => {
    const { store, clock } = newStore(t.dir);
    const identity = new Identity({ store, clock });
    await identity.create({ id: 'v.lead', name: 'Vera Lead', role: 'qa_reviewer', tenants: ['acme-pharma'], password: 'a long and unguessable Pw-42 for Vera' }, 'system', 'test', { ownChoice: true });
    const stored = store.db.prepare('SELECT password FROM app_user WHERE id = ?').pluck().get('v.lead') as string;
    expect(stored).toMatch(/^scrypt\$15\$8\$1\$/);
    // a daemon at the tests' cost still checks this hash at 2^15, its own
    const cheap = new Identity({ store, clock, scryptLog2N: 10 });
    expect((await cheap.reauthenticate('v.lead', 'a long and unguessable Pw-42 for Vera')).id).toBe('v.lead');
    await expect(cheap.reauthenticate('v.lead', 'a long and unguessable Pw-42 for Vero')).rejects.toMatchObject({ code: 'LK_REAUTH_FAILED' });
    for (const bad of [0, 21, 12.5]) expect(codeOf(() => new Identity({ store, clock, scryptLog2N: bad }))).toBe('LK_INTERNAL');
    store.close();
  });

  it('cannot be lowered by the site configuration: the api section has no such key (refused, naming it)', () => {
    const f = join(t.dir, 'site.yaml');
    writeFileSync(f, `${readFileSync(defaultConfigFile(), 'utf8')}api:\n  password_hash_log2n: 10\n`);
    expect(configRefusal(f).message).toMatch(/password_hash_log2n/);
  });
});
