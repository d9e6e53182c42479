/**
 * Model lifecycle changes through the API as the signed-in person (POST /models/{id}/promote|retire): checks that
 * need no password first (the tenant's model, a role in the bundle's approvers.change, a step the lifecycle has),
 * then the signature — 428 without the password, 401 with a wrong one, and a signed `model_change` entry by the
 * session's person with one. Against the identity API (stub engine, real store, embedded default bundle).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { iterateAudit, loadSitePublicKey } from '../../src/audit/index.js';
import { verifyModelChange } from '../../src/models/change.js';
import { modelStatus, registerModel } from '../../src/models/registry.js';
import type { ModelCard } from '../../src/twin/card.js';
import { cloneParams, NOMINAL_PARAMS } from '../../src/twin/params.js';
import { PASSWORD, req, startIdentityApi, type IdentityApi } from '../helpers/identity-api.js';
import { goldenPlantTwin, SITE } from '../helpers/models.js';

let a: IdentityApi;
const tokens: Record<string, string> = {};
const A = '/v1/tenants/acme-pharma';

function draft(tenant: string, analyte: string): string {
  const dataDir = join(a.dir, 'data');
  return registerModel(a.store, dataDir, {
    tenant, analyte, family: 'twin', kind: 'twin', artefact: { probe: analyte }, sites: ['site-ravenna'], by: 'p.bianchi',
    card: { tenant, analyte, family: 'twin' } as unknown as ModelCard,
  }).id;
}

beforeAll(async () => {
  a = await startIdentityApi();
  for (const u of ['m.rossi', 'p.bianchi', 'o.operator']) tokens[u] = (await req(a, 'POST', '/v1/auth/token', { body: { user: u, password: PASSWORD } })).body.token;
});
afterAll(async () => {
  await a.close();
});

describe('model lifecycle changes by the signed-in person', () => {
  it('refuses without a password prompt what it can refuse first: another tenant\'s model (404), a role outside approvers.change, a step the lifecycle lacks', async () => {
    const mine = draft('acme-pharma', 'lifecycle');
    const theirs = draft('borealis-bio', 'theirs');
    const body = { changeRef: 'CC-2026-0700', reason: 'probe' };
    const foreign = await req(a, 'POST', `${A}/models/${theirs}/retire`, { token: tokens['m.rossi']!, body });
    const none = await req(a, 'POST', `${A}/models/nosuch-model-v9/retire`, { token: tokens['m.rossi']!, body });
    expect([foreign.status, foreign.body.code]).toEqual([404, 'LK_NOT_FOUND']);
    expect(foreign.body.detail.replace(theirs, '<id>')).toBe(none.body.detail.replace('nosuch-model-v9', '<id>'));
    expect((await req(a, 'POST', `${A}/models/${mine}/retire`, { token: tokens['p.bianchi']!, body })).body.code).toBe('LK_MODEL_CHANGE');
    expect((await req(a, 'POST', `${A}/models/${mine}/retire`, { token: tokens['o.operator']!, body })).body.code).toBe('LK_FORBIDDEN');
    expect((await req(a, 'POST', `${A}/models/${mine}/promote`, { token: tokens['m.rossi']!, body: { ...body, to: 'validated' } })).body.code).toBe('LK_MODEL_TRANSITION');
    expect((await req(a, 'POST', `${A}/models/${mine}/retire`, { token: tokens['m.rossi']!, body: { ...body, by: 'someone' } })).body.code).toBe('LK_VALIDATION');
    expect(modelStatus(a.store, 'acme-pharma', mine)?.status).toBe('draft');
    expect(modelStatus(a.store, 'borealis-bio', theirs)?.status).toBe('draft');
  });

  it('[P11.200] a change is signed: 428 without the password, 401 with a wrong one, then a model_change entry by the session\'s person that verifies', async () => {
    const id = draft('acme-pharma', 'signed');
    const body = { changeRef: 'CC-2026-0701', reason: 'superseded' };
    const url = `${A}/models/${id}/retire`;
    expect(await req(a, 'POST', url, { token: tokens['m.rossi']!, body }).then((r) => [r.status, r.body.code])).toEqual([428, 'LK_REAUTH_REQUIRED']);
    expect(await req(a, 'POST', url, { token: tokens['m.rossi']!, body: { ...body, password: 'not hers at all' } }).then((r) => [r.status, r.body.code])).toEqual([401, 'LK_REAUTH_FAILED']);
    expect(modelStatus(a.store, 'acme-pharma', id)?.status).toBe('draft');
    const ok = await req(a, 'POST', url, { token: tokens['m.rossi']!, body: { ...body, password: PASSWORD } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ id, from: 'draft', to: 'retired', changeRef: 'CC-2026-0701', evaluation: null, signature: { user: 'm.rossi', name: 'Maria Rossi', meaning: expect.stringMatching(/Retired/) } });
    const e = [...iterateAudit(a.store.db, 'acme-pharma')].find((x) => x.seq === ok.body.auditSeq)!;
    expect(e).toMatchObject({ kind: 'model_change', action: 'model.retire', actor: 'm.rossi', old: 'draft', new: 'retired' });
    expect(e.args).toMatchObject({ by: 'm.rossi', role: 'qa_reviewer', change_ref: 'CC-2026-0701' });
    expect(verifyModelChange(e, loadSitePublicKey(join(a.dir, 'data')))).toBe(true);
    // retired is final
    expect((await req(a, 'POST', url, { token: tokens['m.rossi']!, body: { ...body, password: PASSWORD } })).body.code).toBe('LK_MODEL_TRANSITION');
  });

  it('a promotion is re-authenticated before its golden gate runs: a well-formed twin that fails the gate is 422 LK_MODEL_GATE_FAILED and stays a draft; the fitted twin passes the same route', async () => {
    const c = goldenPlantTwin();
    const register = (artefact: unknown): string => registerModel(a.store, join(a.dir, 'data'), { ...c, artefact, tenant: 'acme-pharma', sites: [SITE], by: 'p.bianchi' }).id;
    // the plant's hidden parameters differ from nominal: a twin with nominal parameters misses the golden batches
    const nominal = register({ kind: 'twin', params: cloneParams(NOMINAL_PARAMS), validRanges: (c.artefact as { validRanges: unknown }).validRanges });
    const fitted = register(c.artefact);
    const body = { to: 'shadow', changeRef: 'CC-2026-0702', reason: 'probe' };
    const url = (id: string) => `${A}/models/${id}/promote`;
    const head = a.store.audit.head('acme-pharma').seq;
    // the password is asked for before anything is evaluated
    expect(await req(a, 'POST', url(nominal), { token: tokens['m.rossi']!, body }).then((r) => [r.status, r.body.code])).toEqual([428, 'LK_REAUTH_REQUIRED']);
    const r = await req(a, 'POST', url(nominal), { token: tokens['m.rossi']!, body: { ...body, password: PASSWORD } });
    expect([r.status, r.body.code]).toEqual([422, 'LK_MODEL_GATE_FAILED']);
    expect(r.body.detail).toMatch(/failed its golden-dataset evaluation on twin-batches\.json: .*rmsep\./);
    expect(modelStatus(a.store, 'acme-pharma', nominal)?.status).toBe('draft');
    expect(a.store.audit.head('acme-pharma').seq).toBe(head);
    // the same request for a twin that meets its criteria goes through: the refusal above is the gate's
    const ok = await req(a, 'POST', url(fitted), { token: tokens['m.rossi']!, body: { ...body, password: PASSWORD } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ id: fitted, from: 'draft', to: 'shadow', evaluation: { passed: true, kind: 'twin', dataset: { file: 'twin-batches.json' } } });
  });
});
