/**
 * Fuzzing the REST API from its own OpenAPI document, over real HTTP against a real daemon (the embedded plant in
 * memory behind the in-memory connectors, SQLite in a temp dir), with no run in progress. Each request starts as a well-formed call of one
 * operation — path, query, header parameters and body drawn from the document's JSON Schemas — by a signed-in
 * user of each role (or nobody), then is mutated: wrong types, missing and extra fields (prototype keys
 * too), bodies of a megabyte and more, JSON nested thousands deep, lone surrogates, control characters and
 * invalid UTF-8, wrong methods, path traversal in ids, other media types, odd Authorization headers, URLs
 * longer than the server reads.
 *
 * Whatever arrives: never a 5xx; every error is application/problem+json with a registry code and its status;
 * the guard's answer (401/404/403) is exactly what the route table says for requests it can judge; a body of
 * 1 MB or more that passes the guard is a 413. Afterwards the daemon still answers /healthz, no run was started,
 * and nothing moved on the line: no `setpoint.write` intent in the audit trail and the simulator's setpoints as
 * they were. The seed is fixed and printed (LK_FUZZ_SEED=<n> runs another; LK_FUZZ_COUNT raises the count).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS, type ErrorCode } from '../../src/errors.js';
import { call, signIn, startApiNode, type ApiNode } from '../helpers/api.js';
import { DEMO_USERS, ENDS_SESSION, guardOutcome, operationsOf, ROUTE_ACCESS, TENANTS, type JsonSchema, type Operation, type TestUser } from '../helpers/api-routes.js';
import { arbitraryOf } from '../helpers/openapi-arb.js';
import { exchange, send, type Answer } from '../helpers/raw-http.js';
import { anyCodePoints } from '../helpers/code-points.js';

const SEED = Number(process.env['LK_FUZZ_SEED'] ?? 20261122);
const COUNT = Math.max(10_000, Number(process.env['LK_FUZZ_COUNT'] ?? 10_000));
const CONCURRENCY = 16;
const MB = 1024 * 1024;

const KINDS = ['none', 'wrongType', 'missing', 'extra', 'huge', 'deep', 'unicode', 'rawBytes', 'method', 'traversal', 'contentType', 'header', 'longUrl'] as const;
type Kind = (typeof KINDS)[number];
const WEIGHTS: Readonly<Record<Kind, number>> = { none: 12, wrongType: 10, missing: 6, extra: 8, huge: 2, deep: 4, unicode: 8, rawBytes: 3, method: 6, traversal: 6, contentType: 4, header: 3, longUrl: 1 };

const NASTY = [
  '\uD800', '\uDFFF', 'a\uD83Dz', '\uDC00\uD800', '\u0000', 'nul\u0000byte', '\u0007\u0008\u001b[31m', '\r\n\r\nX-Injected: 1', '\u202Eevil', '\uFEFF', 'e\u0301', '\u{1D54F}\u{1F600}',
  '%00', '%ff%fe', '%ED%A0%80', '../../etc/passwd', '${jndi:ldap://x}', "'; DROP TABLE run; --", '<script>alert(1)</script>', '\\u0000', ' ', '',
];
const TRAVERSAL = [
  '..', '../..', '..%2F..%2Fauth%2Ftoken', '%2e%2e%2f%2e%2e%2fhealthz', '..%5C..%5C', '....//....//', '%252e%252e%252f', '/etc/passwd', '%2Fetc%2Fpasswd', 'run_0000000000%00', 'run_..%2F..%2F..',
  '.', '%2e', 'approvals/../../runs', 'a'.repeat(150), 'run_' + 'a'.repeat(5000), '%C0%AE%C0%AE%2F', '..;/', 'run_00000000000000000000?x=1', 'run_00000000000000000000#frag',
];
const EXTRA_KEYS = ['__proto__', 'constructor', 'prototype', 'extra', 'user', 'tenant', 'role', 'signer', 'by', 'toString'];
const CONTENT_TYPES = ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'application/xml', 'application/json-patch+json', 'application/jsonx', '*/*', '', 'application/json; charset=latin1'];
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'PROPFIND', 'TRACE'];
const INVALID_UTF8 = [Buffer.from([0xff]), Buffer.from([0xc3, 0x28]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]), Buffer.from([0xe2, 0x82]), Buffer.from([0xc0, 0xaf])];

interface Noise {
  readonly pick: number;
  readonly value: unknown;
  readonly text: string;
  readonly depth: number;
}
interface Draft {
  readonly op: Operation;
  readonly caller: number;
  readonly params: Record<string, unknown>;
  readonly query: Record<string, unknown>;
  readonly headers: Record<string, unknown>;
  readonly body: unknown;
  readonly kind: Kind;
  readonly noise: Noise;
}
interface FuzzRequest {
  readonly n: number;
  readonly kind: Kind;
  readonly op: Operation;
  readonly user: TestUser | null;
  readonly tenant: string | undefined;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer | undefined;
  /** Path, method and Authorization are as generated: the guard's answer is exactly predictable. */
  readonly exact: boolean;
}

let node: ApiNode;
let url: URL;
const tokens = new Map<string, string>();

const PERCENT = Array.from({ length: 256 }, (_, b) => (/[A-Za-z0-9._~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`));
/** Percent-encode every byte of the UTF-8 form (a lone surrogate becomes U+FFFD, as a browser would send it). */
const enc = (s: string): string => {
  if (/^[A-Za-z0-9._~-]*$/.test(s)) return s;
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) out += PERCENT[b]!;
  return out;
};
/**
 * A JSON body of more than `bytes` bytes: `obj` with `key` set to `text` repeated, or (no key) that string alone. Built
 * as bytes — the JSON form of `text` once, repeated by Buffer's fill — because a megabyte string put through
 * JSON.stringify and UTF-8 in the test was two thirds of this file's set-up (6.5 s of CPU for its ~270 such bodies).
 */
function hugeBody(text: string, bytes: number, obj: Record<string, unknown> | undefined, key: string | undefined): Buffer {
  const unit = Buffer.from(JSON.stringify(text || 'x').slice(1, -1), 'utf8');
  const mark = '\u0000lk-huge\u0000';
  const parts = obj && key ? JSON.stringify({ ...obj, [key]: mark }).split(JSON.stringify(mark)) : ['', ''];
  if (parts.length !== 2) throw new Error(`the draft's body holds the huge mark already: ${parts.length - 1} times`);
  const head = Buffer.from(`${parts[0]!}"`, 'utf8');
  const tail = Buffer.from(`"${parts[1]!}`, 'utf8');
  const size = unit.length * Math.ceil(bytes / unit.length);
  const out = Buffer.allocUnsafe(head.length + size + tail.length);
  head.copy(out, 0);
  out.fill(unit, head.length, head.length + size);
  tail.copy(out, head.length + size);
  return out;
}
const otherType = (v: unknown, noise: unknown): unknown => (typeof v === typeof noise && Array.isArray(v) === Array.isArray(noise) ? [noise] : noise);
const deep = (depth: number, obj: boolean): string => (obj ? '{"a":'.repeat(depth) + '1' + '}'.repeat(depth) : '['.repeat(depth) + ']'.repeat(depth));

function draftArbitrary(ops: readonly Operation[], components: Record<string, JsonSchema>, callers: number): fc.Arbitrary<Draft> {
  const tenantArb = fc.oneof({ arbitrary: fc.constantFrom(...TENANTS), weight: 8 }, { arbitrary: fc.constantFrom('globex', 'ACME-PHARMA', 'acme-pharma-x', 'site'), weight: 1 }, { arbitrary: fc.stringMatching(/^[a-z][a-z0-9-]{0,63}$/), weight: 1 });
  const perOp = ops.map((op) => {
    const of = (where: string): Record<string, fc.Arbitrary<unknown>> =>
      Object.fromEntries(op.parameters.filter((p) => p.in === where).map((p) => [p.name, p.name === 'tenant' ? tenantArb : arbitraryOf(p.schema, components)]));
    const required = (where: string): string[] => op.parameters.filter((p) => p.in === where && p.required).map((p) => p.name);
    return fc.record({
      op: fc.constant(op),
      params: fc.record(of('path')),
      query: fc.record(of('query'), { requiredKeys: required('query') }),
      headers: fc.record(of('header'), { requiredKeys: required('header') }),
      body: op.body ? arbitraryOf(op.body, components) : fc.constant(undefined),
    });
  });
  const noise = fc.record({
    pick: fc.nat(),
    value: fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constantFrom(null, true, 0, -1, 1e308, '', [], {}, '1', 'true')),
    text: fc.oneof(fc.constantFrom(...NASTY), anyCodePoints({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 40 })),
    depth: fc.integer({ min: 500, max: 60_000 }),
  });
  const kind = fc.oneof(...KINDS.map((k) => ({ arbitrary: fc.constant(k), weight: WEIGHTS[k] })));
  // a well-formed sign-in costs an scrypt hash (~0.1 s of CPU by design): fewer of those keep the run short
  const weighted = perOp.map((arbitrary, i) => ({ arbitrary, weight: ops[i]!.key === 'POST /v1/auth/token' ? 1 : 20 }));
  return fc.tuple(fc.oneof(...weighted), fc.nat({ max: callers - 1 }), kind, noise).map(([base, caller, k, n]) => ({ ...base, caller, kind: k, noise: n }));
}

/** The request a draft stands for, its mutation applied: the same draft (and tokens) always gives the same bytes. */
function build(d: Draft, n: number, callers: readonly (TestUser | null)[], declared: ReadonlyMap<string, ReadonlySet<string>>): FuzzRequest {
  const user = callers[d.caller] ?? null;
  const { pick, value, text, depth } = d.noise;
  const params: Record<string, string> = Object.fromEntries(Object.entries(d.params).map(([k, v]) => [k, enc(String(v))]));
  const query: [string, string][] = Object.entries(d.query).map(([k, v]) => [k, String(v)]);
  const headers: Record<string, string> = Object.fromEntries(Object.entries(d.headers).map(([k, v]) => [k, String(v)]));
  if (user) headers['authorization'] = `Bearer ${tokens.get(user.id)!}`;
  else if (d.caller % 2 === 0) headers['authorization'] = 'Bearer not-a-token-at-all';
  let method = d.op.method;
  let body: unknown = d.body;
  let raw: Buffer | undefined;
  const obj = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  const keys = obj ? Object.keys(obj) : [];
  const key = keys.length > 0 ? keys[pick % keys.length]! : undefined;
  let type = 'application/json';
  let exact = true;
  const idParam = 'id' in params ? 'id' : 'tenant' in params ? 'tenant' : undefined;

  switch (d.kind) {
    case 'none':
      break;
    case 'wrongType':
      if (obj && key && pick % 4 !== 0) body = { ...obj, [key]: otherType(obj[key], value) };
      else if (d.op.body) body = otherType(body, value);
      else if (query.length > 0) query[pick % query.length]![1] = JSON.stringify(value) ?? 'null';
      else query.push(['limit', JSON.stringify(value) ?? '[]']);
      break;
    case 'missing': {
      const required = ((d.op.body?.['required'] as string[] | undefined) ?? []).filter((k) => obj && k in obj);
      if (obj && required.length > 0) {
        const drop = required[pick % required.length]!;
        body = Object.fromEntries(Object.entries(obj).filter(([k]) => k !== drop));
      } else if (d.op.body) body = undefined;
      else if (idParam) {
        params[idParam] = '';
        exact = false;
      }
      break;
    }
    case 'extra': {
      const k = pick % 3 === 0 ? text : EXTRA_KEYS[pick % EXTRA_KEYS.length]!;
      if (d.op.body) {
        // built as text: an object literal would swallow `__proto__` instead of sending it
        const inner = obj ? JSON.stringify(obj).slice(1, -1) : '';
        raw = Buffer.from(`{${JSON.stringify(k)}:${JSON.stringify(value) ?? 'null'}${inner ? `,${inner}` : ''}}`);
      } else query.push([k === '' ? 'x' : k, JSON.stringify(value) ?? '']);
      break;
    }
    case 'huge': {
      raw = hugeBody(text, MB + (pick % 4096), obj, key);
      break;
    }
    case 'deep': {
      const nested = deep(depth, pick % 2 === 0);
      raw = Buffer.from(obj && key ? JSON.stringify({ ...obj, [key]: 0 }).replace(`${JSON.stringify(key)}:0`, `${JSON.stringify(key)}:${nested}`) : nested);
      break;
    }
    case 'unicode':
      if (obj && key && typeof obj[key] === 'string') body = { ...obj, [key]: text };
      else if (query.length > 0) query[pick % query.length]![1] = text;
      else if (idParam) {
        params[idParam] = pick % 2 === 0 ? enc(text) : text.replace(/[^\u0021-\u00ff]/g, '').replace(/[/?#]/g, '') || 'x';
        exact = false;
      } else query.push(['q', text]);
      break;
    case 'rawBytes': {
      const bad = INVALID_UTF8[pick % INVALID_UTF8.length]!;
      const json = Buffer.from(JSON.stringify(obj ?? { request: 'run' }));
      const at = Math.max(1, json.indexOf('"', 2) + 1);
      raw = Buffer.concat([json.subarray(0, at), bad, json.subarray(at)]);
      break;
    }
    case 'method': {
      const own = declared.get(d.op.path)!;
      const others = METHODS.filter((m) => !own.has(m));
      method = others[pick % others.length]!;
      exact = false;
      break;
    }
    case 'traversal':
      if (idParam) params[idParam] = TRAVERSAL[pick % TRAVERSAL.length]!;
      exact = false;
      break;
    case 'contentType':
      type = CONTENT_TYPES[pick % CONTENT_TYPES.length]!;
      if (d.op.body === undefined) body = { request: 'run batch B-1042 on line-3' };
      break;
    case 'header': {
      exact = false;
      const h = pick % 6;
      if (h === 0) headers['authorization'] = 'Bearer';
      else if (h === 1) headers['authorization'] = `Basic ${Buffer.from('o.operator:x').toString('base64')}`;
      else if (h === 2) headers['authorization'] = `Bearer ${'A'.repeat(8000)}`;
      else if (h === 3) headers['authorization'] = `bearer  ${tokens.get('m.rossi')!}`;
      else if (h === 4) headers['last-event-id'] = text.replace(/[^\u0020-\u007e]/g, '') || '-1';
      else headers['x-tenant'] = 'borealis-bio';
      break;
    }
    case 'longUrl':
      query.push(['cursor', 'c'.repeat(20_000 + (pick % 80_000))]);
      exact = false;
      break;
  }

  const qs = query.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&');
  const path = d.op.path.replace(/\{([^}]+)\}/g, (_, name: string) => params[name] ?? '') + (qs ? `?${qs}` : '');
  if (raw === undefined && body !== undefined && !(d.op.body === undefined && d.kind !== 'contentType' && d.kind !== 'huge')) raw = Buffer.from(JSON.stringify(body) ?? 'null');
  if (raw !== undefined && type) headers['content-type'] = type;
  const tenant = 'tenant' in d.params ? String(d.params['tenant']) : undefined;
  return { n, kind: d.kind, op: d.op, user, tenant, method, path, headers, body: raw, exact };
}

/** What is wrong with this answer, or null. */
function violation(r: FuzzRequest, a: Answer): string | null {
  if (a.status === -1) return null;
  if (a.error && a.status === 0) return `no answer (${a.error})`;
  if (a.status >= 500) return `a ${a.status}: ${a.text.slice(0, 300)}`;
  if (a.status >= 400) {
    if (!a.type.startsWith('application/problem+json')) return `error ${a.status} as "${a.type}": ${a.text.slice(0, 200)}`;
    if (r.method !== 'HEAD') {
      let p: { code?: string; status?: number; issues?: { path: string }[] };
      try {
        p = JSON.parse(a.text) as typeof p;
      } catch {
        return `problem body is not JSON: ${a.text.slice(0, 200)}`;
      }
      if (typeof p.code !== 'string' || !/^LK_[A-Z0-9_]+$/.test(p.code) || !(p.code in ERRORS)) return `problem code ${String(p.code)} is not a registry code`;
      if (p.status !== a.status || ERRORS[p.code as ErrorCode].status !== a.status) return `problem ${p.code} says ${String(p.status)}, HTTP says ${a.status}`;
      // an invalid field is a field of the request, never one of an internal record the request reached
      const foreign = (p.issues ?? []).find((i) => !/^(body|querystring|params|headers)(\.|$)/.test(i.path));
      if (foreign) return `problem names "${foreign.path}", not a field of the request: ${a.text.slice(0, 200)}`;
    }
  }
  const access = ROUTE_ACCESS[r.op.key]!;
  const guard = guardOutcome(access, r.user, r.tenant);
  const { exact } = r;
  if (exact && guard && (a.status !== guard.status || !a.text.includes(`"code":"${guard.code}"`))) return `guard: expected ${guard.status} ${guard.code}, got ${a.status} ${a.text.slice(0, 200)}`;
  if (exact && !guard && r.op.body && r.body && r.body.length >= MB && a.status !== 413) return `a body of ${r.body.length} bytes passed the guard and got ${a.status}, not 413`;
  if (r.op.key === 'POST /v1/tenants/{tenant}/runs' && a.status >= 200 && a.status < 300) return `a run was started (${a.status})`;
  return null;
}

/** Everything on the line that a write could move, and what the trail says was written or started. */
function lineState(): { writes: number; runs: number; starts: number; setpoints: Record<string, Readonly<Record<string, number>>> } {
  const db = node.daemon.store.db;
  const count = (sql: string): number => (db.prepare(sql).pluck().get() as number) ?? 0;
  const plant = node.plant;
  return {
    writes: count("SELECT count(*) FROM audit_entry WHERE action = 'setpoint.write'"),
    runs: count('SELECT count(*) FROM run'),
    starts: count("SELECT count(*) FROM audit_entry WHERE action = 'run.start'"),
    setpoints: Object.fromEntries(node.daemon.loaded.config.equipment.map((e) => [e.id, plant.setpoints(e.id)])),
  };
}

beforeAll(async () => {
  node = await startApiNode({ memory: true });
  url = new URL(node.url);
  for (const u of DEMO_USERS) tokens.set(u.id, await signIn(node.url, u.id, node.passwords.get(u.id)!));
}, 120_000);
afterAll(async () => {
  await node?.close();
});

describe('fuzzing the REST API from its OpenAPI document', () => {
  it(`${COUNT} generated and mutated requests: no 5xx, problem+json with registry codes, the guard as declared, 413 for huge bodies, nothing written or started`, { timeout: 600_000 }, async () => {
    const doc = (await call(node.url, 'GET', '/openapi.json')).body as { components?: { schemas?: Record<string, JsonSchema> } };
    const ops = operationsOf(doc);
    expect(ops.map((o) => o.key).sort()).toEqual(Object.keys(ROUTE_ACCESS).sort());
    const declared = new Map<string, Set<string>>();
    for (const o of ops) declared.set(o.path, new Set([...(declared.get(o.path) ?? []), o.method, ...(o.method === 'GET' ? ['HEAD'] : [])]));
    const callers: (TestUser | null)[] = [...DEMO_USERS, ...DEMO_USERS, null, null];
    process.stdout.write(`api fuzz: seed ${SEED} (LK_FUZZ_SEED=${SEED} replays it), ${COUNT} requests, ${CONCURRENCY} at a time\n`);

    // sign-out would end the sessions the generated requests share (its own tests are in api-identity)
    const drafts = fc.sample(draftArbitrary(ops.filter((o) => !ENDS_SESSION.has(o.key)), doc.components?.schemas ?? {}, callers.length), { seed: SEED, numRuns: COUNT });
    const before = lineState();

    const statuses = new Map<number, number>();
    const kinds = new Map<Kind, number>();
    const bad: string[] = [];
    let next = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < drafts.length) {
        // built when sent, so that no more than CONCURRENCY bodies (some over a megabyte) are held at once
        const i = next++;
        const r = build(drafts[i]!, i, callers, declared);
        const a = await send(url, r);
        statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
        kinds.set(r.kind, (kinds.get(r.kind) ?? 0) + 1);
        const v = violation(r, a);
        if (v) bad.push(`#${r.n} [${r.kind}] ${r.user?.id ?? 'anonymous'} ${r.method} ${r.path.slice(0, 200)} (${r.body?.length ?? 0} bytes): ${v}`);
      }
    }));
    process.stdout.write(`api fuzz: statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((x, y) => x[0] - y[0])))}\n`);
    expect(bad.slice(0, 25)).toEqual([]);

    // the requests reached every kind of answer the API has for them, so the run above proved something
    for (const k of KINDS) expect(kinds.get(k) ?? 0, k).toBeGreaterThan(0);
    for (const s of [200, 400, 401, 403, 404, 413, 415]) expect(statuses.get(s) ?? 0, `status ${s}`).toBeGreaterThan(0);
    expect([...statuses.keys()].filter((s) => s >= 500)).toEqual([]);

    expect((await call(node.url, 'GET', '/healthz')).body).toMatchObject({ status: 'ok' });
    const after = lineState();
    expect(after.writes).toBe(before.writes);
    expect(after.runs).toBe(0);
    expect(after.starts).toBe(0);
    expect(after.setpoints).toEqual(before.setpoints);
    expect(node.daemon.writer.pending()).toEqual([]);
  });

  it('free text with a lone surrogate is refused at the boundary naming the field (found while writing this fuzzer: a sign-in with one failed inside the audit append, unaudited, naming the audit entry field "args")', async () => {
    const signIn = await call(node.url, 'POST', '/v1/auth/token', { body: { user: 'o.operator\uD800', password: 'x' } });
    expect(signIn.status).toBe(400);
    expect(signIn.body).toMatchObject({ code: 'LK_VALIDATION', issues: [{ path: 'body.user' }] });
    const run = await call(node.url, 'POST', '/v1/tenants/acme-pharma/runs', { token: tokens.get('o.operator')!, body: { request: 'run batch B-1042 on line-3 \uDC00' } });
    expect(run.body).toMatchObject({ code: 'LK_VALIDATION', issues: [{ path: 'body.request' }] });
    // the audit's signature manifestation holds "<decision>: <meaning>" in 200 characters: a longer meaning is refused up front
    const long = await call(node.url, 'POST', '/v1/tenants/acme-pharma/approvals/apr_x', { token: tokens.get('m.rossi')!, body: { decision: 'approve', meaning: 'm'.repeat(191), password: 'x' } });
    expect(long.body).toMatchObject({ code: 'LK_VALIDATION', issues: [{ path: 'body.meaning' }] });
  });

  it('what Node\'s HTTP parser refuses before fastify sees it is a problem too (found by this fuzzer: it was plain JSON without a code)', async () => {
    const long = await exchange(url, `GET /v1/tenants/acme-pharma/runs?cursor=${'c'.repeat(20_000)} HTTP/1.1\r\nhost: x\r\n\r\n`);
    expect(long.answer).toMatchObject({ status: 431, type: 'application/problem+json' });
    expect(long.raw).toMatch(/\r\nconnection: close\r\n/i);
    expect(JSON.parse(long.answer.text)).toMatchObject({ code: 'LK_HEADERS_TOO_LARGE', status: 431, type: 'urn:linekeeper:error:LK_HEADERS_TOO_LARGE' });
    const garbage = await exchange(url, 'NOT A REQUEST\r\n\r\n');
    expect(garbage.answer.status).toBe(400);
    expect(JSON.parse(garbage.answer.text)).toMatchObject({ code: 'LK_VALIDATION', status: 400 });
    expect((await call(node.url, 'GET', '/healthz')).status).toBe(200);
  });
});
