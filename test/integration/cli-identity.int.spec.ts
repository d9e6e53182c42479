/**
 * The CLI with the signed-in identity: `policy autonomy set` through PUT /autonomy (the password asked only for
 * a raise, after the daemon said the change is permitted), `logout` ending the session on the daemon, and the
 * session renewed before it expires. Against the identity API (stub engine, real store) on loopback.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonClient } from '../../src/cli/daemon-client.js';
import { readSession, renewSession, saveSession, type Session } from '../../src/cli/session.js';
import { modelStatus, registerModel } from '../../src/models/registry.js';
import type { ModelCard } from '../../src/twin/card.js';
import { spawnCli } from '../helpers/cli.js';
import { PASSWORD, req, siteActions, startIdentityApi, type IdentityApi } from '../helpers/identity-api.js';

let a: IdentityApi;
let url: string;
let home: string;
const env = (): NodeJS.ProcessEnv => ({ XDG_CONFIG_HOME: home, LINEKEEPER_URL: url });

async function session(user: string): Promise<Session> {
  const r = await req(a, 'POST', '/v1/auth/token', { body: { user, password: PASSWORD } });
  const s: Session = {
    format: 1, url, user, name: r.body.user.name, role: r.body.user.role, tenant: 'acme-pharma', tenants: r.body.user.tenants, token: r.body.token,
    expiresAt: r.body.expiresAt, sessionEndsAt: r.body.sessionEndsAt,
  };
  saveSession(s, env());
  return s;
}

beforeAll(async () => {
  // the CLI child checks expiry with the wall clock: the API's injected clock starts now
  a = await startIdentityApi();
  a.clock.set(Date.now());
  url = await a.api.listen('127.0.0.1', 0);
  home = mkdtempSync(join(tmpdir(), 'lk-cli-identity-'));
});
afterAll(async () => {
  await a.close();
  rmSync(home, { recursive: true, force: true });
});

describe('the CLI as the signed-in person', () => {
  it('policy autonomy set: lowering at once; a raise asks the password, then is signed by the session\'s person; --by is gone', async () => {
    await session('m.rossi');
    const down = await spawnCli(['policy', 'autonomy', 'set', '--agent', 'agent.compress_fill', '--level', 'L0', '--reason', 'drift'], { env: env() });
    expect(down.code, down.err).toBe(0);
    expect(down.out).toContain('→ L0 by m.rossi (qa_reviewer)');
    const up = await spawnCli(['policy', 'autonomy', 'set', '--agent', 'agent.compress_fill', '--level', 'L1', '--change-ref', 'CC-2026-0500', '--json'], { env: env(), input: `${PASSWORD}\n` });
    expect(up.code, up.err).toBe(0);
    expect(JSON.parse(up.out)).toMatchObject({ type: 'autonomy_raised', from: 'L0', to: 'L1', by: 'm.rossi', signed: true });
    const onTrust = await spawnCli(['policy', 'autonomy', 'set', '--agent', 'agent.compress_fill', '--level', 'L0', '--by', 'someone', '--role', 'qa_reviewer'], { env: env() });
    expect(onTrust.code).toBe(2);
    // levels are the tenant's: the changes are on the session tenant's chain
    expect(a.store.db.prepare("SELECT action, actor FROM audit_entry WHERE tenant = 'acme-pharma' AND kind = 'autonomy_change' ORDER BY seq").raw().all()).toEqual([['autonomy.lower', 'm.rossi'], ['autonomy.raise', 'm.rossi']]);
  }, 120_000);

  it('models retire: through the daemon as the session\'s person, the password asked once the change is permitted; a role the bundle does not permit is refused before any prompt', async () => {
    const id = registerModel(a.store, join(a.dir, 'data'), {
      tenant: 'acme-pharma', analyte: 'cliprobe', family: 'twin', kind: 'twin', artefact: { probe: true }, sites: ['site-ravenna'], by: 'p.bianchi',
      card: { tenant: 'acme-pharma', analyte: 'cliprobe', family: 'twin' } as unknown as ModelCard,
    }).id;
    const args = ['models', 'retire', id, '--change-ref', 'CC-2026-0710', '--reason', 'superseded'];
    await session('p.bianchi');
    const refused = await spawnCli(args, { env: env() });
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/\[LK_MODEL_CHANGE\]/);
    expect(refused.err).not.toMatch(/password/);
    await session('m.rossi');
    const signed = await spawnCli([...args, '--json'], { env: env(), input: `${PASSWORD}\n` });
    expect(signed.code, signed.err).toBe(0);
    expect(JSON.parse(signed.out)).toMatchObject({ id, from: 'draft', to: 'retired', signature: { user: 'm.rossi', name: 'Maria Rossi' } });
    expect(modelStatus(a.store, 'acme-pharma', id)?.status).toBe('retired');
  }, 120_000);

  it('renewSession renews a token near its expiry, stores it, and the client uses it; logout ends the session on the daemon', async () => {
    const s = await session('p.bianchi');
    const client = daemonClient({ url, token: s.token, tenant: 'acme-pharma' });
    expect(await renewSession(s, client, Date.now(), 60_000, env())).toBe(s); // far from expiry: untouched
    const askedAt = Date.parse(s.expiresAt) - 30_000;
    const renewed = await renewSession(s, client, askedAt, 60_000, env());
    expect(renewed.token).not.toBe(s.token);
    // the expiry stored is on the caller's clock: the daemon's lifetime (api.token_ttl_s, 15 min) from when it was asked
    expect(renewed.expiresAt).toBe(new Date(askedAt + 900_000).toISOString());
    expect(readSession(env())?.token).toBe(renewed.token);
    expect(client.token).toBe(renewed.token);
    expect((await client.models()).items.map((m) => m.id)).toEqual(['cliprobe-twin-v1']);
    const out = await spawnCli(['logout'], { env: env() });
    expect(out.out).toContain('session ended on the daemon');
    expect((await req(a, 'GET', '/v1/tenants/acme-pharma/models', { token: renewed.token })).status).toBe(401);
    expect(readSession(env())).toBeNull();
  }, 120_000);
});
