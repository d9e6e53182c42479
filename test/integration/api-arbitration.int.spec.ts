/**
 * Arbitration deadlocks over the REST API, with a real guarded writer over a real store: the deadlocks are made
 * by the pure arbitration (equal rank, different targets in one round) and persisted through the ArbitrationStore
 * exactly as the writer persists them (rows naming their audit entry), then the writer is built on that store and
 * reloads them — as after a restart. A person lists them (only their tenant's) and decides one with a reason;
 * the decision is the writer's own `resolve`: audited with who and why, the chosen side owns the setpoint, and
 * nothing is written to the equipment. Also GET /v1/auth/me for a local token and an SSO JWT.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arbitrate, EMPTY_ARBITRATION, type ArbitrationRequest, type ArbitrationState } from '../../src/arbitration/index.js';
import { queryAudit } from '../../src/audit/index.js';
import { ArbitrationStore } from '../../src/store/arbitration-store.js';
import { GuardedWriter } from '../../src/engine/guarded-writer.js';
import { oidcConfig, PASSWORD, providerKey, req, startIdentityApi, T0, token, writeJwks, type ApiParts, type IdentityApi } from '../helpers/identity-api.js';

const ACME = '/v1/tenants/acme-pharma';
const BOREALIS = '/v1/tenants/borealis-bio';
let a: IdentityApi;
let writer: GuardedWriter;
const tokens: Record<string, string> = {};

const request = (id: string, agent: string, setpoint: string, value: string, attribute: ArbitrationRequest['attribute']): ArbitrationRequest =>
  ({ id, agent, setpoint, value, attribute, justification: `${agent} wants ${value}`, at: T0 });

/** One arbitration round for `tenant`, persisted with its audit entry as the writer does; @returns the new state. */
function deadlock(p: ApiParts, before: ArbitrationState, tenant: string, reqs: ArbitrationRequest[]): ArbitrationState {
  const r = arbitrate(reqs, before, p.clock.now(), p.bundle, { product: 'ir-family-a', tooling: 'round-10mm-ff' });
  expect(r.escalated.map((e) => e.reason)).toEqual(['DEADLOCK_EQUAL_RANK']);
  const arb = new ArbitrationStore(p.store);
  p.store.tx((t) => {
    const e = t.audit.append({ tenant, actor: reqs[0]!.agent, kind: 'arbitration', action: 'arbitration.decline', subject: { setpoint: reqs[0]!.setpoint }, reason: 'DEADLOCK_EQUAL_RANK' });
    arb.sync(t, before, r.state, tenant, e.seq);
  });
  return r.state;
}

beforeAll(async () => {
  a = await startIdentityApi({
    writer: (p) => {
      const s1 = deadlock(p, EMPTY_ARBITRATION, 'acme-pharma', [
        request('prop-q:press.TurretSpeed', 'agent.quality_conf', 'press.TurretSpeed', '42 {rev}/min', 'content_uniformity'),
        request('prop-c:press.TurretSpeed', 'agent.compress_fill', 'press.TurretSpeed', '38 {rev}/min', 'dissolution'),
      ]);
      deadlock(p, s1, 'borealis-bio', [
        request('prop-b1:press.MainForce', 'agent.compress_fill', 'press.MainForce', '12 kN', 'content_uniformity'),
        request('prop-b2:press.MainForce', 'agent.quality_conf', 'press.MainForce', '14 kN', 'potency'),
      ]);
      writer = new GuardedWriter({ store: p.store, site: p.loaded.config, connectors: [], clock: p.clock, policy: () => p.bundle, batches: () => null });
      return writer;
    },
  });
  for (const u of ['m.rossi', 'o.operator', 'p.bianchi', 'd.marino']) {
    tokens[u] = (await req(a, 'POST', '/v1/auth/token', { body: { user: u, password: PASSWORD } })).body.token;
  }
});
afterAll(async () => {
  await a?.close();
});

describe('arbitration escalations over the API', () => {
  it('[ERR-DEADLOCK] lists the tenant\'s pending deadlocks with both sides — never another tenant\'s', async () => {
    const list = await req(a, 'GET', `${ACME}/arbitration/escalations`, { token: tokens['o.operator'] });
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(1);
    const [e] = list.body.items;
    expect(e).toMatchObject({ id: 'press.TurretSpeed', setpoint: 'press.TurretSpeed', reason: 'DEADLOCK_EQUAL_RANK', score: 2, rank: 'quality', since: new Date(T0).toISOString() });
    expect(e.sides.map((s: { agent: string; target: string; attribute: string }) => [s.agent, s.target, s.attribute]).sort()).toEqual([
      ['agent.compress_fill', '38 {rev}/min', 'dissolution'], ['agent.quality_conf', '42 {rev}/min', 'content_uniformity'],
    ]);
    expect(JSON.stringify(list.body)).not.toContain('MainForce');
    // borealis' deadlock is not acme's: 404 under acme's path, and its path is not acme's users' (R1)
    const foreign = await req(a, 'POST', `${ACME}/arbitration/escalations/press.MainForce`, { token: tokens['m.rossi'], body: { choose: 'prop-b1:press.MainForce', reason: 'not mine' } });
    expect([foreign.status, foreign.body.code]).toEqual([404, 'LK_NOT_FOUND']);
    expect((await req(a, 'GET', `${BOREALIS}/arbitration/escalations`, { token: tokens['m.rossi'] })).body.code).toBe('LK_NOT_FOUND');
    expect((await req(a, 'GET', `${BOREALIS}/arbitration/escalations`, { token: tokens['d.marino'] })).status).toBe(403);
  });

  it('refuses an operator, a missing reason and a side that is not in the deadlock; the deadlock stays pending', async () => {
    const url = `${ACME}/arbitration/escalations/press.TurretSpeed`;
    const op = await req(a, 'POST', url, { token: tokens['o.operator'], body: { choose: 'prop-c:press.TurretSpeed', reason: 'I want it' } });
    expect([op.status, op.body.code]).toEqual([403, 'LK_FORBIDDEN']);
    expect((await req(a, 'POST', url, { token: tokens['m.rossi'], body: { choose: 'prop-c:press.TurretSpeed' } })).body.code).toBe('LK_VALIDATION');
    expect((await req(a, 'POST', url, { token: tokens['m.rossi'], body: { choose: 'prop-c:press.TurretSpeed', reason: '   ' } })).body.code).toBe('LK_VALIDATION');
    const wrong = await req(a, 'POST', url, { token: tokens['m.rossi'], body: { choose: 'prop-b1:press.MainForce', reason: 'wrong side' } });
    expect([wrong.status, wrong.body.code]).toEqual([400, 'LK_VALIDATION']);
    expect(writer.arbitration().escalations['press.TurretSpeed']).toBeDefined();
  });

  it('[ERR-DEADLOCK] [R2] a process engineer decides with a reason: audited with who and why, the chosen side owns the setpoint, nothing is written', async () => {
    const before = queryAudit(a.store.db, 'acme-pharma', {}, { limit: 1000 }).entries.length;
    const r = await req(a, 'POST', `${ACME}/arbitration/escalations/press.TurretSpeed`, {
      token: tokens['p.bianchi'], body: { choose: 'prop-c:press.TurretSpeed', reason: 'dissolution first on this batch' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ setpoint: 'press.TurretSpeed', decidedBy: 'p.bianchi', role: 'process_engineer', reason: 'dissolution first on this batch', winner: { requestId: 'prop-c:press.TurretSpeed', agent: 'agent.compress_fill' } });
    expect(r.body.declined).toMatchObject([{ requestId: 'prop-q:press.TurretSpeed', reason: 'HUMAN_DECISION' }]);
    const added = queryAudit(a.store.db, 'acme-pharma', {}, { limit: 1000 }).entries.slice(before);
    expect(added.map((e) => [e.action, e.actor, e.reason])).toEqual([['arbitration.resolve', 'p.bianchi', 'dissolution first on this batch']]);
    // the decision is the writer's, persisted: after a reload the winner owns the setpoint and no deadlock is pending
    const stored = new ArbitrationStore(a.store).load();
    expect(stored.owners['press.TurretSpeed']).toMatchObject({ agent: 'agent.compress_fill', requestId: 'prop-c:press.TurretSpeed' });
    expect(stored.escalations['press.TurretSpeed']).toBeUndefined();
    expect(stored.escalations['press.MainForce']).toBeDefined(); // borealis' deadlock is untouched
    expect((await req(a, 'GET', `${ACME}/arbitration/escalations`, { token: tokens['m.rossi'] })).body.items).toEqual([]);
    const again = await req(a, 'POST', `${ACME}/arbitration/escalations/press.TurretSpeed`, { token: tokens['m.rossi'], body: { choose: 'prop-q:press.TurretSpeed', reason: 'too late' } });
    expect(again.body.code).toBe('LK_NOT_FOUND');
  });
});

describe('GET /v1/auth/me', () => {
  it('answers the signed-in local user, role, tenants and expiry; 401 without a token', async () => {
    const me = await req(a, 'GET', '/v1/auth/me', { token: tokens['m.rossi'] });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ user: { id: 'm.rossi', role: 'qa_reviewer', tenants: ['acme-pharma'], source: 'local' } });
    expect(Date.parse(me.body.expiresAt)).toBeGreaterThan(T0);
    expect(Date.parse(me.body.sessionEndsAt)).toBeGreaterThanOrEqual(Date.parse(me.body.expiresAt));
    expect((await req(a, 'GET', '/v1/auth/me')).body.code).toBe('LK_UNAUTHENTICATED');
  });

  it('answers an SSO user from a provider\'s JWT: source sso, the token\'s expiry, no session end', async () => {
    const key = await providerKey('k-me');
    const sso = await startIdentityApi({ oidc: (dir) => oidcConfig({ jwks_file: writeJwks(dir, [key]) }) });
    try {
      const me = await req(sso, 'GET', '/v1/auth/me', { token: await token(key, { plants: ['plant-acme'] }) });
      expect(me.status).toBe(200);
      expect(me.body).toEqual({
        user: { id: 'q.sso', name: 'Quinn Sso', role: 'qa_reviewer', tenants: ['acme-pharma'], source: 'sso' },
        expiresAt: new Date(T0 + 600_000).toISOString(), sessionEndsAt: null, mustChangePassword: false,
      });
      const forged = await req(sso, 'GET', '/v1/auth/me', { token: await token(await providerKey('k-me'), { plants: ['plant-acme'] }) });
      expect(forged.status).toBe(401);
    } finally {
      await sso.close();
    }
  });
});
