/**
 * GET /v1/tenants/{tenant}/design-space over real HTTP against a real daemon: the approved, unit-aware limits
 * of one of the tenant's product × tooling families exactly as the policy bundle in force holds them (what the
 * SDKs' DesignSpace.approved returns), to the roles that read models; another tenant's product is 404 like an
 * unknown one (R1/R9), never its limits; the query is strict.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, signIn, startApiNode, type ApiNode } from '../helpers/api.js';

const A = '/v1/tenants/acme-pharma';
const B = '/v1/tenants/borealis-bio';
const QUERY_A = '?product=ir-family-a&tooling=round-10mm-ff';
const QUERY_B = '?product=ir-family-b&tooling=round-10mm-ff';
let node: ApiNode;
let url: string;
const tokens = new Map<string, string>();
const tok = (u: string): string => tokens.get(u)!;

beforeAll(async () => {
  node = await startApiNode({ memory: true });
  url = node.url;
  for (const u of ['o.operator', 'm.rossi', 'a.ricci', 'd.marino', 'l.conti']) tokens.set(u, await signIn(url, u, node.passwords.get(u)!));
});
afterAll(async () => {
  await node?.close();
});

describe('GET /design-space', () => {
  it('returns the approved limits of the pair in the setpoints\' own units, the approval and the bundle version', async () => {
    const r = await call(url, 'GET', `${A}/design-space${QUERY_A}`, { token: tok('o.operator') });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const bundle = node.daemon.policy.bundle!;
    const held = bundle.designSpace.approved('ir-family-a', 'round-10mm-ff');
    expect(r.body).toMatchObject({ product: 'ir-family-a', tooling: 'round-10mm-ff', approvedBy: held.approvedBy, bundleVersion: bundle.version });
    expect(Object.keys(r.body.setpoints).sort()).toEqual(Object.keys(held.setpoints).sort());
    expect(r.body.setpoints['press.MainForce']).toEqual({ min: 8, max: 18, unit: 'kN', maxStep: 1.5, maxRatePerMin: 3 });
    expect(r.body.setpoints['fluidbed.InletAirTemp']).toEqual({ min: 55, max: 68, unit: 'Cel', maxStep: 2, maxRatePerMin: 2 });
  });

  it('is read by the roles that read models; an administrator is 403 and no token 401', async () => {
    for (const u of ['m.rossi', 'a.ricci']) expect((await call(url, 'GET', `${A}/design-space${QUERY_A}`, { token: tok(u) })).status, u).toBe(200);
    const admin = await call(url, 'GET', `${A}/design-space${QUERY_A}`, { token: tok('d.marino') });
    expect(admin.status).toBe(403);
    expect(admin.body.code).toBe('LK_FORBIDDEN');
    const none = await call(url, 'GET', `${A}/design-space${QUERY_A}`);
    expect(none.status).toBe(401);
    expect(none.body.code).toBe('LK_UNAUTHENTICATED');
  });

  it('another tenant\'s product family is 404 like an unknown pair, never its limits [R1] [R9]', async () => {
    const foreign = await call(url, 'GET', `${A}/design-space${QUERY_B}`, { token: tok('o.operator') });
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('LK_NOT_FOUND');
    expect(JSON.stringify(foreign.body)).not.toContain('MainForce');
    const unknown = await call(url, 'GET', `${A}/design-space?product=ir-family-a&tooling=oval-12mm`, { token: tok('o.operator') });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('LK_NOT_FOUND');
    // the other tenant reads its own, and not through this tenant's path
    const own = await call(url, 'GET', `${B}/design-space${QUERY_B}`, { token: tok('l.conti') });
    expect(own.status).toBe(200);
    expect(own.body.setpoints['press.MainForce']).toMatchObject({ min: 10, max: 22, unit: 'kN' });
    expect((await call(url, 'GET', `${A}/design-space${QUERY_A}`, { token: tok('l.conti') })).status).toBe(404);
  });

  it('refuses a missing, malformed or unknown query parameter, naming it', async () => {
    const missing = await call(url, 'GET', `${A}/design-space?product=ir-family-a`, { token: tok('o.operator') });
    expect(missing.status).toBe(400);
    expect(missing.body.code).toBe('LK_VALIDATION');
    expect(missing.body.issues.map((i: { path: string }) => i.path)).toEqual(['querystring.tooling']);
    const bad = await call(url, 'GET', `${A}/design-space?product=IR_A&tooling=round-10mm-ff`, { token: tok('o.operator') });
    expect(bad.status).toBe(400);
    expect(bad.body.issues.map((i: { path: string }) => i.path)).toEqual(['querystring.product']);
    const extra = await call(url, 'GET', `${A}/design-space${QUERY_A}&site=site-ravenna`, { token: tok('o.operator') });
    expect(extra.status).toBe(400);
    expect(extra.body.issues).toEqual([{ path: 'querystring.site', message: 'unknown field "site"' }]);
  });
});
