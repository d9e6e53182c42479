/**
 * Tenancy (R1/R9) and roles over every route of the API's own OpenAPI document, over real HTTP against a real
 * daemon with objects in both tenants — runs with tool-call logs and genealogy events, batch releases at the
 * gate, setpoint writes the guarded writer holds — and a user of every role in each tenant.
 *
 * R1: a person of one tenant gets 404 for the other tenant's path and for the other tenant's objects under
 * their own path — never 403, whatever their role, and with nothing of the object in the body: the answer is
 * the one a made-up id gets. Lists show only the tenant's own objects.
 * Roles: each role reaches exactly the routes its declaration admits (test/helpers/api-routes.ts, written from
 * the route declarations): anything else is 403 LK_FORBIDDEN. A route whose roles change fails this test.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../../src/api/index.js';
import type { PendingWrite } from '../../src/engine/guarded-writer.js';
import type { ApprovalRecord, RunRecord } from '../../src/store/run-store.js';
import { call, signIn, startApiNode, type ApiNode, type Reply } from '../helpers/api.js';
import { ALL_ROLES, ENDS_SESSION, operationsOf, ROUTE_ACCESS, TENANTS, type Operation, type Tenant } from '../helpers/api-routes.js';
import { mesInboxDir } from '../../connectors/mes/folder.js';
import { registerModel } from '../../src/models/registry.js';
import type { ModelCard } from '../../src/twin/card.js';
import { logLines, queueWrite, seedGate, seedRun, setStatus } from '../helpers/api-seed.js';
import { addUser } from '../helpers/users.js';

let node: ApiNode;
let ops: Operation[];
const PASSWORD = 'a tenant user password';
/** One single-tenant user of every role in each tenant (demo users where they exist). */
const USERS: Readonly<Record<Tenant, Readonly<Record<Role, string>>>> = {
  'acme-pharma': { operator: 'o.operator', process_engineer: 'p.bianchi', qa_reviewer: 'm.rossi', auditor: 'aud.acme', admin: 'adm.acme' },
  'borealis-bio': { operator: 'op.borealis', process_engineer: 'l.conti', qa_reviewer: 'g.ferri', auditor: 'aud.borealis', admin: 'adm.borealis' },
};
const tokens = new Map<string, string>();
const passwords = new Map<string, string>();

/** What each tenant holds, and the strings that would give any of it away. */
interface Holdings {
  run: RunRecord;
  exception: string;
  release: ApprovalRecord;
  write: PendingWrite;
  /** A model only this tenant has (both have the demo models, under the same ids). */
  model: string;
  secrets: string[];
}
const held = {} as Record<Tenant, Holdings>;
const other = (t: Tenant): Tenant => (t === 'acme-pharma' ? 'borealis-bio' : 'acme-pharma');

/** A well-formed body for the operation (so only the tenant check can refuse it), in the caller's name. */
function bodyFor(op: Operation, user: string, t: Tenant): unknown {
  switch (op.key) {
    case 'POST /v1/tenants/{tenant}/runs':
      return { request: `run batch ${held[t].run.batch} on line-3` };
    case 'POST /v1/tenants/{tenant}/approvals/{id}':
      return { decision: 'approve', meaning: 'tenancy probe', password: passwords.get(user), recordHash: held[t].write.vectorHash };
    case 'POST /v1/tenants/{tenant}/twin/simulate':
      return { candidates: 5, horizon: 'full batch', seed: 1 };
    case 'POST /v1/tenants/{tenant}/attendance':
      return {};
    case 'PUT /v1/tenants/{tenant}/autonomy':
      return { agent: 'agent.compress_fill', level: 'L0', reason: 'tenancy probe' };
    case 'POST /v1/tenants/{tenant}/arbitration/escalations/{id}':
      return { choose: 'tenancy-probe:press.MainForce', reason: 'tenancy probe' };
    case 'POST /v1/tenants/{tenant}/models/{id}/promote':
      return { to: 'shadow', changeRef: 'CC-TENANCY-1', reason: 'tenancy probe', password: passwords.get(user) };
    case 'POST /v1/tenants/{tenant}/exceptions/{id}/close':
      return { comment: 'tenancy probe', password: passwords.get(user) };
    case 'POST /v1/tenants/{tenant}/runs/{id}/resume':
      return { reason: 'tenancy probe' };
    case 'POST /v1/tenants/{tenant}/runs/{id}/abort':
      return { reason: 'tenancy probe', password: passwords.get(user) };
    case 'POST /v1/tenants/{tenant}/runs/{id}/reassign':
      return { to: String(held[t].run.record['qa_reviewer']), reason: 'tenancy probe', password: passwords.get(user) };
    case 'POST /v1/tenants/{tenant}/line/equipment/{unit}/rearm':
      return { reason: 'tenancy probe' };
    case 'POST /v1/tenants/{tenant}/models/{id}/retire':
      return { changeRef: 'CC-TENANCY-1', reason: 'tenancy probe', password: passwords.get(user) };
    default:
      return undefined;
  }
}

/** The ids of `t`'s objects an operation can name. */
function idsFor(op: Operation, t: Tenant): string[] {
  if (!op.path.includes('{id}')) return [''];
  if (op.path.includes('/models/')) return [held[t].model];
  if (op.path.includes('/exceptions/')) return [held[t].exception];
  return op.path.includes('/approvals/') ? [held[t].release.id, held[t].write.id] : [held[t].run.id];
}

/** A made-up id of the same form, for the answer an object that does not exist gets. */
const madeUp = (id: string): string => (/-v[0-9]+$/.test(id) ? 'nosuch-model-v9' : id.startsWith('exc_') ? 'exc_ffffffffffffffff' : id.startsWith('run_') ? 'run_ffffffffffffffffffff' : id.startsWith('pw_') ? 'pw_zzzz_ffffffff' : 'apr_ffffffffffffffff');

function request(op: Operation, pathTenant: string, id: string, user: string, bodyTenant: Tenant): Promise<Reply> {
  const path = op.path.replace('{tenant}', pathTenant).replace('{id}', id).replace('{unit}', 'press');
  const body = bodyFor(op, user, bodyTenant);
  return call(node.url, op.method, path, { token: tokens.get(user)!, ...(body !== undefined ? { body } : {}) });
}

/**
 * A 404 that tells nothing: a problem body with nothing of the other tenant in it — but the path and the id the
 * caller asked for, which it knew already.
 */
function expectNothing(r: Reply, t: Tenant, what: string, asked = ''): void {
  expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(404);
  expect(r.type, what).toMatch(/^application\/problem\+json/);
  expect(r.body.code, what).toBe('LK_NOT_FOUND');
  expect(Object.keys(r.body).sort(), what).toEqual(['code', 'detail', 'instance', 'status', 'title', 'type']);
  const shown = JSON.stringify({ ...r.body, instance: undefined });
  for (const s of held[t].secrets.filter((x) => x !== asked)) expect(shown, `${what} shows ${s}`).not.toContain(s);
}

beforeAll(async () => {
  node = await startApiNode({ memory: true });
  for (const [id, pw] of node.passwords) passwords.set(id, pw);
  const identity = node.daemon.identity!;
  for (const t of TENANTS) {
    for (const role of ALL_ROLES) {
      const id = USERS[t][role];
      if (!passwords.has(id)) {
        await addUser(identity, { id, name: `${role} of ${t}`, role, tenants: [t], password: PASSWORD }, 'd.marino', 'tenancy test account');
        passwords.set(id, PASSWORD);
      }
      tokens.set(id, await signIn(node.url, id, passwords.get(id)!));
    }
  }
  const doc = (await call(node.url, 'GET', '/openapi.json')).body;
  ops = operationsOf(doc);

  // one line, one active run at a time: acme's run ends (its release still waits), then borealis' stays at its gate
  const d = node.daemon;
  const seed = async (t: Tenant, batch: string, setpoint: string, from: number, to: number, unit: string): Promise<Holdings> => {
    const run = seedRun(d, { tenant: t, batch, by: USERS[t].operator });
    logLines(d, run.id, 3);
    const write = await queueWrite(d, { run, agent: 'agent.coat_dry', setpoint, from, to, unit });
    const release = seedGate(d, run.id);
    const exception = d.engine.raiseException(d.engine.runs.runById(run.id)!, { kind: 'MANUAL_ACTION', key: 'tenancy-probe', step: null, title: `tenancy probe of ${batch}`, evidence: { probe: true }, by: USERS[t].operator })!.id;
    const model = registerModel(d.store, d.loaded.dataDir, {
      tenant: t, analyte: `${t.split('-')[0]}probe`, family: 'twin', kind: 'twin', artefact: { probe: t }, sites: [d.loaded.config.site.id], by: USERS[t].process_engineer,
      card: { tenant: t, analyte: `${t.split('-')[0]}probe`, family: 'twin' } as unknown as ModelCard,
    });
    return { run, release, write, exception, model: model.id, secrets: [exception, model.id, model.sha256, batch, run.product, String(run.record['reviewer']), String(run.record['qa_reviewer']), release.recordHash, write.vectorHash, release.id, write.id] };
  };
  held['acme-pharma'] = await seed('acme-pharma', 'B-1042', 'coater.PanSpeed', 14, 14.5, '{rev}/min');
  setStatus(d, held['acme-pharma'].run.id, 'REJECTED', 'test: the line is free for the other tenant');
  held['borealis-bio'] = await seed('borealis-bio', 'B-2001', 'coater.SprayRate', 200, 205, 'g/min');
  // the run id is in the path the caller asked for; anywhere else it would be a leak too
  for (const t of TENANTS) held[t].secrets.push(held[t].run.id);
}, 120_000);
afterAll(async () => {
  await node?.close();
});

describe('[R1] another tenant\'s objects are 404 with nothing in the body, never 403', () => {
  it('the route table is the OpenAPI document\'s: every operation, nothing else', () => {
    expect(ops.map((o) => o.key).sort()).toEqual(Object.keys(ROUTE_ACCESS).sort());
  });

  it('every tenant-scoped route, by every role of the other tenant, on the other tenant\'s path and objects', async () => {
    let probes = 0;
    for (const op of ops.filter((o) => o.path.includes('{tenant}'))) {
      for (const t of TENANTS) {
        const theirs = other(t);
        for (const role of ALL_ROLES) {
          const user = USERS[theirs][role];
          for (const id of idsFor(op, t)) {
            expectNothing(await request(op, t, id, user, t), t, `${role} of ${theirs}: ${op.key} on ${t}'s path`, id);
            probes++;
          }
        }
      }
    }
    expect(probes).toBeGreaterThan(ops.length * 5);
  });

  it('under their own path, another tenant\'s run or approval is exactly what a made-up id is: 404 for roles the route admits, the same 403 for the others', async () => {
    for (const op of ops.filter((o) => o.path.includes('{id}'))) {
      const access = ROUTE_ACCESS[op.key]!;
      for (const t of TENANTS) {
        const mine = other(t);
        for (const role of ALL_ROLES) {
          const user = USERS[mine][role];
          for (const id of idsFor(op, t)) {
            const what = `${role} of ${mine}: ${op.key} with ${t}'s ${id}`;
            const foreign = await request(op, mine, id, user, t);
            const none = await request(op, mine, madeUp(id), user, t);
            if (access !== 'public' && access.includes(role)) expectNothing(foreign, t, what, id);
            else expect(foreign.status, what).toBe(403);
            expect({ ...foreign.body, detail: foreign.body.detail.replaceAll(id, '<id>'), instance: undefined }, what)
              .toEqual({ ...none.body, detail: none.body.detail.replaceAll(madeUp(id), '<id>'), instance: undefined });
          }
        }
      }
    }
  });

  it('lists show only the tenant\'s own objects', async () => {
    for (const t of TENANTS) {
      const them = other(t);
      const runs = await call(node.url, 'GET', `/v1/tenants/${t}/runs`, { token: tokens.get(USERS[t].auditor)! });
      expect(runs.body.items.map((r: { id: string }) => r.id)).toEqual([held[t].run.id]);
      const approvals = await call(node.url, 'GET', `/v1/tenants/${t}/approvals`, { token: tokens.get(USERS[t].qa_reviewer)! });
      expect(approvals.body.items.map((a: { id: string }) => a.id).sort()).toEqual([held[t].release.id, held[t].write.id].sort());
      const trail = await call(node.url, 'GET', `/v1/tenants/${t}/audit?limit=1000`, { token: tokens.get(USERS[t].auditor)! });
      expect(trail.body.items.length).toBeGreaterThan(5);
      expect(trail.body.items.every((e: { tenant: string }) => e.tenant === t)).toBe(true);
      for (const s of held[them].secrets) expect(JSON.stringify([runs.body, approvals.body, trail.body]), `${t} sees ${s}`).not.toContain(s);
    }
    // R9: borealis' run is on the line: acme sees that the line is busy, not whose run it is nor its values
    const line = await call(node.url, 'GET', '/v1/tenants/acme-pharma/line', { token: tokens.get(USERS['acme-pharma'].admin)! });
    expect(line.body).toMatchObject({ busy: true, activeRun: null });
    expect(line.body.equipment.every((e: { values: unknown }) => e.values === null)).toBe(true);
    const own = await call(node.url, 'GET', '/v1/tenants/borealis-bio/line', { token: tokens.get(USERS['borealis-bio'].admin)! });
    expect(own.body.activeRun).toEqual({ id: held['borealis-bio'].run.id, batch: held['borealis-bio'].run.batch, status: 'APPROVAL' });
  });

  it('[R1] [P11.10(e)] [A11.9] the site chain\u2019s account entries, each tenant its own people\u2019s: sign-ins, a failed attempt at one of them; nobody of the other tenant, no attempt at an id that is nobody', async () => {
    const qa = USERS['acme-pharma'].qa_reviewer;
    const typed = 'hunter2-typed-as-a-user'; // a password typed into the user field is nobody's entry to read
    expect((await call(node.url, 'POST', '/v1/auth/token', { body: { user: qa, password: 'not the password' } })).status).toBe(401);
    expect((await call(node.url, 'POST', '/v1/auth/token', { body: { user: typed, password: 'x' } })).status).toBe(401);
    type Entry = { tenant: string; kind: string; actor: string; action: string; args?: { user?: string } };
    const about = (e: Entry): string => e.args?.user ?? e.actor;
    const of = async (t: Tenant, q = ''): Promise<Entry[]> => {
      const r = await call(node.url, 'GET', `/v1/tenants/${t}/audit/people?limit=1000${q}`, { token: tokens.get(USERS[t].auditor)! });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.items as Entry[];
    };
    for (const t of TENANTS) {
      const items = await of(t);
      expect(items.every((e) => e.tenant === 'site' && e.kind === 'identity')).toBe(true);
      // every person of the tenant signed in (beforeAll); nobody of the other is there
      expect(new Set(items.filter((e) => e.action === 'auth.sign_in').map(about))).toEqual(new Set(Object.values(USERS[t])));
      for (const u of Object.values(USERS[other(t)])) expect(items.map(about), `${t} sees ${u}`).not.toContain(u);
      expect(JSON.stringify(items)).not.toContain(typed);
    }
    // the person's own entries and those about their account (a failed attempt is made by `system`)
    const mine = await of('acme-pharma', `&actor=${qa}`);
    expect(mine.map((e) => e.action)).toEqual(expect.arrayContaining(['auth.sign_in', 'auth.failed']));
    expect(mine.find((e) => e.action === 'auth.failed')).toMatchObject({ actor: 'system', args: { user: qa } });
    expect(mine.every((e) => about(e) === qa || e.actor === qa)).toBe(true);
    expect(await of('borealis-bio', `&actor=${qa}`)).toEqual([]);

    // a person of both tenants: their sign-in is each tenant's to read; what names the other tenant (a signature
    // attempted there, an account made for both) is neither's
    const both = 'qa.both-tenants';
    await addUser(node.daemon.identity!, { id: both, name: 'QA of both', role: 'qa_reviewer', tenants: [...TENANTS], password: PASSWORD }, 'd.marino', 'tenancy test account');
    await signIn(node.url, both, PASSWORD);
    node.daemon.store.audit.append({ tenant: 'site', actor: 'system', kind: 'identity', action: 'auth.failed', args: { tenant: 'borealis-bio', approval: held['borealis-bio'].release.id, user: both, purpose: 'signature', why: 'bad_password' } });
    const acme = await of('acme-pharma', `&actor=${both}`);
    expect(acme.map((e) => e.action)).toContain('auth.sign_in');
    expect(JSON.stringify(acme)).not.toContain('borealis');
    const borealis = await of('borealis-bio', `&actor=${both}`);
    expect(borealis.map((e) => e.action)).toEqual(expect.arrayContaining(['auth.sign_in', 'auth.failed']));
    expect(JSON.stringify(borealis)).not.toContain('acme');
  });
});

describe('roles: each role reaches exactly the routes its declaration admits', () => {
  it('[P11.10(g)] [A11.12] every operation × every role, on the role\'s own tenant, against the route table', async () => {
    const seen: Record<string, string[]> = {};
    const want: Record<string, string[]> = {};
    for (const op of ops) {
      // sign-out would end the session the probes share; its own tests are in api-identity
      if (ENDS_SESSION.has(op.key)) continue;
      const access = ROUTE_ACCESS[op.key]!;
      want[op.key] = ALL_ROLES.filter((r) => access === 'public' || access.includes(r));
      seen[op.key] = [];
      for (const role of ALL_ROLES) {
        const user = USERS['acme-pharma'][role];
        // ids no one has and a body no route takes: an admitted role gets 404 or 400, never a side effect
        const path = op.path.replace('{tenant}', 'acme-pharma').replace('{id}', madeUp(op.path.includes('/approvals/') ? 'apr_' : 'run_'));
        const r = await call(node.url, op.method, path, { token: tokens.get(user)!, ...(op.method === 'POST' ? { body: { roleMatrixProbe: true } } : {}) });
        expect(r.status, `${role} ${op.key}`).toBeLessThan(500);
        if (r.status === 403) expect(r.body.code, `${role} ${op.key}`).toBe('LK_FORBIDDEN');
        else seen[op.key]!.push(role);
      }
    }
    expect(seen).toEqual(want);
  });

  it('[P11.10(d)] a public route needs no token; every other one answers 401 without one', async () => {
    for (const op of ops) {
      const path = op.path.replace('{tenant}', 'acme-pharma').replace('{id}', 'run_ffffffffffffffffffff');
      const r = await call(node.url, op.method, path, op.method === 'POST' ? { body: {} } : {});
      if (ROUTE_ACCESS[op.key] === 'public') expect(r.status, op.key).not.toBe(401);
      else expect([r.status, r.body.code], op.key).toEqual([401, 'LK_UNAUTHENTICATED']);
    }
  });
});

describe('[R1] autonomy levels are the tenant\'s', () => {
  const get = (t: Tenant, user: string) => call(node.url, 'GET', `/v1/tenants/${t}/autonomy`, { token: tokens.get(user)! });
  /** The effective level the guarded writer decides a coater.Airflow move of agent.coat_dry at, for `t`'s run. */
  const levelInForce = async (t: Tenant): Promise<string> => {
    const run = held[t].run;
    const out = await node.daemon.writer.propose({
      id: `tenancy-autonomy-${t}`, tenant: t, batch: run.batch, run: run.id, agent: 'agent.coat_dry', product: run.product, tooling: run.tooling,
      moves: [{ setpoint: 'coater.Airflow', value: '1500 m3/h' }], attribute: 'content_uniformity', justification: 'which levels govern this tenant\'s run',
    });
    return out.decisions[0]!.autonomy;
  };

  it('a process engineer\'s change under one tenant\'s path is that tenant\'s: the other sees, and its runs use, its own level; neither reads nor changes the other\'s', async () => {
    const A: Tenant = 'acme-pharma';
    const B: Tenant = 'borealis-bio';
    const before = (await get(B, USERS[B].process_engineer)).body;
    expect(before.agents['agent.coat_dry']).toMatchObject({ level: 'L3', source: 'bundle' });
    expect(await levelInForce(B)).toBe('L3');

    const down = await call(node.url, 'PUT', `/v1/tenants/${A}/autonomy`, { token: tokens.get(USERS[A].process_engineer)!, body: { agent: 'agent.coat_dry', level: 'L1', changeRef: 'CC-ACME-7781', reason: 'acme coating campaign under review' } });
    expect(down.status, JSON.stringify(down.body)).toBe(200);
    expect(down.body).toMatchObject({ type: 'autonomy_lowered', from: 'L3', to: 'L1', by: USERS[A].process_engineer });
    const mine = (await get(A, USERS[A].auditor)).body;
    expect(mine.agents['agent.coat_dry']).toMatchObject({ level: 'L1', source: 'changed', by: USERS[A].process_engineer, changeRef: 'CC-ACME-7781' });
    expect(mine.history[0]).toMatchObject({ seq: down.body.auditSeq, actor: USERS[A].process_engineer, changeRef: 'CC-ACME-7781' });

    // the other tenant: its own level, nothing of the change (who, reference, reason) anywhere in what it reads
    for (const role of ['operator', 'process_engineer', 'qa_reviewer', 'auditor'] as const) {
      const theirs = await get(B, USERS[B][role]);
      expect(theirs.body.agents['agent.coat_dry'], role).toMatchObject({ level: 'L3', source: 'bundle' });
      expect(theirs.body.history, role).toEqual(before.history);
      for (const s of [USERS[A].process_engineer, 'CC-ACME-7781', 'acme coating campaign']) expect(JSON.stringify(theirs.body), `${role} of ${B} sees ${s}`).not.toContain(s);
    }
    const trail = await call(node.url, 'GET', `/v1/tenants/${B}/audit?kind=autonomy_change&limit=1000`, { token: tokens.get(USERS[B].auditor)! });
    expect(trail.body.items).toEqual([]);
    const own = await call(node.url, 'GET', `/v1/tenants/${A}/audit?kind=autonomy_change&limit=1000`, { token: tokens.get(USERS[A].auditor)! });
    expect(own.body.items.map((e: { seq: number; actor: string }) => [e.seq, e.actor])).toEqual([[down.body.auditSeq, USERS[A].process_engineer]]);
    // the guarded writer decides each tenant's moves at that tenant's levels
    expect(await levelInForce(A)).toBe('L1');
    expect(await levelInForce(B)).toBe('L3');

    // a person of one tenant neither reads nor changes the other's levels: 404, as for every other cross-tenant path
    const raise = await call(node.url, 'PUT', `/v1/tenants/${B}/autonomy`, { token: tokens.get(USERS[A].qa_reviewer)!, body: { agent: 'agent.coat_dry', level: 'L3', changeRef: 'CC-ACME-7782', password: passwords.get(USERS[A].qa_reviewer) } });
    expectNothing(raise, B, 'acme QA reviewer raising on borealis\' path');
    const lower = await call(node.url, 'PUT', `/v1/tenants/${B}/autonomy`, { token: tokens.get(USERS[A].process_engineer)!, body: { agent: 'agent.coat_dry', level: 'L0', reason: 'not my tenant' } });
    expectNothing(lower, B, 'acme process engineer lowering on borealis\' path');
    expectNothing(await get(B, USERS[A].auditor), B, 'acme auditor reading borealis\' levels');
    // an acme QA raise under its own path moves acme only
    const up = await call(node.url, 'PUT', `/v1/tenants/${A}/autonomy`, { token: tokens.get(USERS[A].qa_reviewer)!, body: { agent: 'agent.coat_dry', level: 'L2', changeRef: 'CC-ACME-7783', password: passwords.get(USERS[A].qa_reviewer) } });
    expect(up.body, JSON.stringify(up.body)).toMatchObject({ type: 'autonomy_raised', from: 'L1', to: 'L2', signed: true });
    expect((await get(B, USERS[B].qa_reviewer)).body.agents['agent.coat_dry']).toMatchObject({ level: 'L3', source: 'bundle' });
    expect(await levelInForce(B)).toBe('L3');
    // a person of both tenants sees each tenant's own levels under its path
    tokens.set('a.ricci', await signIn(node.url, 'a.ricci', passwords.get('a.ricci')!));
    expect((await get(A, 'a.ricci')).body.agents['agent.coat_dry'].level).toBe('L2');
    expect((await get(B, 'a.ricci')).body.agents['agent.coat_dry'].level).toBe('L3');
  });
});

describe('[R9] a busy line says that it is busy, not whose run it is', () => {
  it('GET /line: the daemon\u2019s clock, and the limits of the tenant\u2019s own run on the line in force; none of another tenant\u2019s', async () => {
    const before = node.daemon.engine.options.clock.now();
    const own = await call(node.url, 'GET', '/v1/tenants/borealis-bio/line', { token: tokens.get(USERS['borealis-bio'].operator)! });
    const after = node.daemon.engine.options.clock.now();
    expect(own.status).toBe(200);
    // `at` is the daemon's clock when the view was composed; every value was received at or before it
    expect(Date.parse(own.body.at)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(own.body.at)).toBeLessThanOrEqual(after);
    const values = own.body.equipment.flatMap((e: { values: Record<string, { at: string }> }) => Object.values(e.values));
    expect(values.length).toBeGreaterThan(0);
    for (const v of values) expect(Date.parse(v.at)).toBeLessThanOrEqual(Date.parse(own.body.at));
    expect(own.body.staleAfterMs).toBe(10_000);
    // borealis' batch record B-2001 (hardness 90–160 N, thickness 2.7–3.3 mm, LOD ≤ 1.8 %), in each tag's unit
    const { limits } = own.body as { limits: Record<string, { min?: number; max?: number; unit: string; source: string; applies: string }> };
    expect(Object.keys(limits).sort()).toEqual(['fluidbed.Lod', 'press.CappingRate', 'press.Hardness', 'press.TabletWeight', 'press.Thickness']);
    expect(limits['press.Hardness']).toEqual({ min: 90, max: 160, unit: 'N', source: 'batch record B-2001', applies: 'in_process' });
    expect(limits['press.Thickness']).toEqual({ min: 2.7, max: 3.3, unit: 'mm', source: 'batch record B-2001', applies: 'in_process' });
    expect(limits['press.TabletWeight']).toMatchObject({ unit: 'mg', applies: 'in_process', source: 'batch record B-2001: target 300 mg ± 5 %' });
    expect(limits['press.TabletWeight']!.min).toBeCloseTo(285, 9);
    expect(limits['press.TabletWeight']!.max).toBeCloseTo(315, 9);
    expect(limits['press.CappingRate']).toEqual({ max: node.daemon.policy.bundle!.content.cappingRiskThreshold * 100, unit: '%', source: 'policy bundle: capping threshold', applies: 'in_process' });
    expect(limits['fluidbed.Lod']).toEqual({ max: 1.8, unit: '%', source: 'batch record B-2001: LOD at end of drying', applies: 'end_point' });
    // the value the limit applies to names its role
    const press = own.body.equipment.find((e: { id: string }) => e.id === 'press');
    expect(press.values['press.Hardness'].role).toBe('press.Hardness');
    // acme: the line is busy with a run that is not its own — no limits, no values, nothing of B-2001
    const theirs = await call(node.url, 'GET', '/v1/tenants/acme-pharma/line', { token: tokens.get(USERS['acme-pharma'].operator)! });
    expect(theirs.status).toBe(200);
    expect(theirs.body).toMatchObject({ busy: true, activeRun: null, limits: null, phase: null });
    expect(typeof theirs.body.at).toBe('string');
    expect(JSON.stringify(theirs.body)).not.toContain('B-2001');
  });

  it('another tenant\'s run on the line: 409 LK_LINE_BUSY with nothing of that run; the tenant\'s own run is named', async () => {
    // a fresh acme batch record in the MES inbox, so the start reaches the line check (B-1042 ran already)
    const inbox = mesInboxDir(node.daemon.loaded.dataDir);
    const record = JSON.parse(readFileSync(join(inbox, 'acme-pharma', 'B-1042.json'), 'utf8').toString()) as Record<string, unknown>;
    writeFileSync(join(inbox, 'acme-pharma', 'B-1077.json'), JSON.stringify({ ...record, batch: 'B-1077' }));
    const theirs = JSON.parse(readFileSync(join(inbox, 'borealis-bio', 'B-2001.json'), 'utf8').toString()) as Record<string, unknown>;
    writeFileSync(join(inbox, 'borealis-bio', 'B-2077.json'), JSON.stringify({ ...theirs, batch: 'B-2077' }));
    const B = held['borealis-bio'];
    const foreign = await call(node.url, 'POST', '/v1/tenants/acme-pharma/runs', { token: tokens.get(USERS['acme-pharma'].operator)!, body: { request: 'run batch B-1077 on line-3' } });
    expect([foreign.status, foreign.body.code], JSON.stringify(foreign.body)).toEqual([409, 'LK_LINE_BUSY']);
    const shown = JSON.stringify({ ...foreign.body, instance: undefined });
    for (const s of [...B.secrets, 'APPROVAL', 'borealis']) expect(shown, `acme sees ${s}`).not.toContain(s);
    expect(foreign.body.detail).toContain('another tenant');
    // borealis' own people are told which of their runs holds the line
    const own = await call(node.url, 'POST', '/v1/tenants/borealis-bio/runs', { token: tokens.get(USERS['borealis-bio'].operator)!, body: { request: 'run batch B-2077 on line-3' } });
    expect([own.status, own.body.code], JSON.stringify(own.body)).toEqual([409, 'LK_LINE_BUSY']);
    expect(own.body.detail).toContain(B.run.id);
  });
});
