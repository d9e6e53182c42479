/**
 * The API's OpenAPI document against independent tools, over real HTTP to a real daemon: swagger-parser
 * validates the document as served; then real responses — successes, downloads and refusals of many kinds —
 * are checked against it with Ajv (test/helpers/openapi-check.ts): the status is documented for the operation,
 * the media type is the documented one (errors: application/problem+json), and the body validates against the
 * documented schema. Every API test runs the same check on all its calls (test/helpers/api.ts call(); that it can
 * fail: openapi-check.int.spec.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, startApiNode, type ApiNode } from '../helpers/api.js';
import { req, startIdentityApi } from '../helpers/identity-api.js';
import { OpenApiDocument } from '../helpers/openapi-check.js';

const A = '/v1/tenants/acme-pharma';
let node: ApiNode;
let doc: OpenApiDocument;
const tokens = new Map<string, string>();

beforeAll(async () => {
  node = await startApiNode({ memory: true });
  doc = await OpenApiDocument.load(node.url);
  for (const u of ['o.operator', 'p.bianchi', 'm.rossi', 'a.ricci']) tokens.set(u, await signIn(node.url, u, node.passwords.get(u)!));
});
afterAll(async () => {
  await node?.close();
});

interface Sent {
  readonly method: string;
  readonly path: string;
  readonly as?: string;
  readonly body?: unknown;
  readonly raw?: { data: string; type: string };
}

/** Make the request and return what came back, as received (the body undecoded). */
async function send(s: Sent): Promise<{ status: number; type: string; text: string }> {
  const headers: Record<string, string> = {};
  if (s.as) headers['authorization'] = `Bearer ${tokens.get(s.as)!}`;
  let data: string | undefined;
  if (s.raw) {
    data = s.raw.data;
    headers['content-type'] = s.raw.type;
  } else if (s.body !== undefined) {
    data = JSON.stringify(s.body);
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(`${node.url}${s.path}`, { method: s.method, headers, ...(data !== undefined ? { body: data } : {}) });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

describe('the OpenAPI document as served', () => {
  it('is a valid OpenAPI 3.1 document for swagger-parser', async () => {
    expect(doc.doc['openapi']).toBe('3.1.0');
  });

  it('documents every error of every operation as application/problem+json with the Problem schema', () => {
    const paths = doc.doc['paths'] as Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema?: unknown }> }> }>>;
    let n = 0;
    for (const [path, ops] of Object.entries(paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const range of ['4XX', '5XX']) {
          if (path === '/healthz' && range === '4XX') continue; // refuses nothing: 200, or 503 while the API stops
          const r = op.responses[range];
          expect(r, `${method} ${path} ${range}`).toBeDefined();
          expect(Object.keys(r!.content ?? {}), `${method} ${path} ${range}`).toEqual(['application/problem+json']);
          expect(r!.content!['application/problem+json']!.schema).toEqual({ $ref: '#/components/schemas/Problem' });
          n++;
        }
      }
    }
    expect(n).toBeGreaterThan(60);
  });

  it('documents the downloads by their media types: the audit export (NDJSON, CSV, PDF) and the release files (JSON, PDF, NDJSON)', () => {
    expect(Object.keys(doc.operationOf('GET', `${A}/audit/export`)!.op['responses'] as object)).toContain('200');
    const media = (m: string, p: string): string[] => Object.keys(((doc.operationOf(m, p)!.op['responses'] as Record<string, { content: object }>)['200']!).content).sort();
    expect(media('GET', `${A}/audit/export`)).toEqual(['application/pdf', 'application/x-ndjson', 'text/csv']);
    expect(media('GET', `${A}/runs/run_nope000000/release`)).toEqual(['application/json', 'application/pdf', 'application/x-ndjson']);
  });
});

describe('an API that stops answers as its document says', () => {
  it('GET /healthz while the API stops is 503 LK_NOT_READY as application/problem+json, documented (req() checks it)', async () => {
    const a = await startIdentityApi();
    try {
      expect((await req(a, 'GET', '/healthz')).status).toBe(200);
      const closing = a.api.close();
      // the close has begun: the onRequest hook answers every request, the health probe too
      const r = await req(a, 'GET', '/healthz');
      expect([r.status, r.body.code]).toEqual([503, 'LK_NOT_READY']);
      await closing;
    } finally {
      await a.close();
    }
  });
});

describe('real responses conform to the document (status, media type, body)', () => {
  // a representative set: every kind of answer — JSON successes, the three export formats, refusals of each
  // kind (validation, authentication, role, tenant, not found, unknown route, media type, conflict)
  const requests: (Sent & { want: number })[] = [
    { method: 'GET', path: '/healthz', want: 200 },
    { method: 'GET', path: '/readyz', want: 200 },
    { method: 'GET', path: '/v1/auth/me', as: 'm.rossi', want: 200 },
    { method: 'POST', path: '/v1/auth/token', body: { user: 'o.operator', password: 'not the password' }, want: 401 },
    { method: 'POST', path: '/v1/auth/token', body: { user: 'o.operator' }, want: 400 },
    { method: 'GET', path: `${A}/runs`, as: 'o.operator', want: 200 },
    { method: 'GET', path: `${A}/runs`, want: 401 },
    { method: 'GET', path: `${A}/runs/run_nope000000`, as: 'o.operator', want: 404 },
    { method: 'GET', path: `${A}/runs/run_nope000000/genealogy`, as: 'o.operator', want: 404 },
    { method: 'GET', path: `${A}/runs/run_nope000000/release?file=pdf`, as: 'm.rossi', want: 404 },
    { method: 'GET', path: '/v1/tenants/borealis-bio/runs', as: 'o.operator', want: 404 },
    { method: 'GET', path: `${A}/approvals`, as: 'm.rossi', want: 200 },
    { method: 'GET', path: `${A}/approvals`, as: 'o.operator', want: 403 },
    { method: 'GET', path: `${A}/models`, as: 'p.bianchi', want: 200 },
    { method: 'GET', path: `${A}/design-space?product=ir-family-a&tooling=round-10mm-ff`, as: 'p.bianchi', want: 200 },
    { method: 'GET', path: `${A}/line`, as: 'o.operator', want: 200 },
    { method: 'GET', path: `${A}/line/readiness`, as: 'o.operator', want: 200 },
    { method: 'GET', path: `${A}/autonomy`, as: 'o.operator', want: 200 },
    { method: 'GET', path: `${A}/arbitration/escalations`, as: 'p.bianchi', want: 200 },
    { method: 'GET', path: `${A}/audit?limit=3`, as: 'a.ricci', want: 200 },
    { method: 'GET', path: `${A}/audit?limit=nope`, as: 'a.ricci', want: 400 },
    { method: 'GET', path: `${A}/audit/verify`, as: 'a.ricci', want: 200 },
    { method: 'GET', path: `${A}/audit/export?format=jsonl`, as: 'a.ricci', want: 200 },
    { method: 'GET', path: `${A}/audit/export?format=csv`, as: 'a.ricci', want: 200 },
    { method: 'GET', path: `${A}/audit/export?format=pdf`, as: 'a.ricci', want: 200 },
    { method: 'GET', path: `${A}/audit/export?format=xml`, as: 'a.ricci', want: 400 },
    { method: 'POST', path: `${A}/runs`, as: 'o.operator', body: { request: 'run batch B-1042 on line-3', operator: 'x' }, want: 400 },
    { method: 'POST', path: `${A}/runs`, as: 'o.operator', raw: { data: 'run batch B-1042', type: 'text/plain' }, want: 415 },
    { method: 'POST', path: `${A}/approvals/A-nope`, as: 'm.rossi', body: { decision: 'approve', password: 'x', meaning: 'approve' }, want: 404 },
    { method: 'POST', path: `${A}/twin/simulate`, as: 'p.bianchi', body: { candidates: 0, horizon: 'full batch' }, want: 400 },
    { method: 'DELETE', path: `${A}/runs`, as: 'o.operator', want: 404 },
    { method: 'GET', path: '/nope', want: 404 },
  ];

  it.each(requests.map((r) => [`${r.method} ${r.path} → ${r.want}`, r] as const))('%s', async (_name, r) => {
    const res = await send(r);
    expect(res.status, res.text).toBe(r.want);
    const c = doc.check(r.method, r.path, res);
    expect(c.errors).toEqual([]);
    if (r.want >= 400) expect(c.mediaType).toBe('application/problem+json');
  });

  it('the check fails a response that departs from the document: an error as application/json, an undocumented media type, a body off its schema, an undocumented success', async () => {
    const problem = await send({ method: 'GET', path: `${A}/runs/run_nope000000`, as: 'o.operator' });
    expect(doc.check('GET', `${A}/runs/run_nope000000`, { ...problem, type: 'application/json' }).errors.join('\n')).toMatch(/media type "application\/json" is not documented/);
    const csv = await send({ method: 'GET', path: `${A}/audit/export?format=csv`, as: 'a.ricci' });
    expect(doc.check('GET', `${A}/audit/export`, { ...csv, type: 'text/plain' }).errors.join('\n')).toMatch(/media type "text\/plain" is not documented/);
    const runs = await send({ method: 'GET', path: `${A}/runs`, as: 'o.operator' });
    const broken = JSON.stringify({ ...JSON.parse(runs.text), items: 'not a list' });
    expect(doc.check('GET', `${A}/runs`, { ...runs, text: broken }).errors.join('\n')).toMatch(/body\/items must be array/);
    expect(doc.check('GET', '/nope', { status: 200, type: 'application/json', text: '{}' }).errors.join('\n')).toMatch(/not in the document, yet answered 200/);
    expect(doc.check('POST', `${A}/runs`, { ...runs, status: 200 }).errors.join('\n')).toMatch(/status 200 is not documented/);
  });
});
