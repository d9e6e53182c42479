/**
 * The REST API over a real store (SQLite in a temp dir, the embedded default's configuration and policy bundle)
 * with a stub run engine, an injected clock and cheap scrypt: for the identity routes — sign-in, renewal,
 * sign-out, throttling, SSO, autonomy, arbitration decisions (with a real guarded writer the test builds) — without
 * a plant simulator. Also: keys and tokens of a made-up OIDC
 * provider (jose), and a JWKS file of its public keys.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { createApi, type ApiServer } from '../../src/api/index.js';
import { Identity } from '../../src/api/identity.js';
import { OidcVerifier } from '../../src/api/oidc.js';
import { ManualClock } from '../../src/clock.js';
import { defaultConfigFile, loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { Oidc, type OidcConfig } from '../../src/config/schema.js';
import { LkError } from '../../src/errors.js';
import { loadPolicyBundle } from '../../src/config/policy-bundle.js';
import type { PolicyBundle } from '../../src/policy/index.js';
import { openStore, type Store } from '../../src/store/store.js';
import { openApiCheckOn, OpenApiDocument } from './openapi-check.js';

export const ISSUER = 'https://idp.plant.example/realms/ravenna';
export const AUDIENCE = 'linekeeper';
export const PASSWORD = 'correct horse battery staple';
/** The password an administrator gives a new user; the user replaces it by {@link PASSWORD} at the first sign-in. */
export const INITIAL_PASSWORD = 'an administrator chose this one, 7 Nov';
export const RUN = `run_${'ab'.repeat(10)}`;
export const T0 = Date.UTC(2026, 10, 23, 6, 0, 0);

export interface IdentityApi {
  readonly api: ApiServer;
  readonly identity: Identity;
  readonly store: Store;
  readonly clock: ManualClock;
  readonly dir: string;
  close(): Promise<void>;
}

/** A provider's signing key: private for the test, public in the JWKS. */
export interface ProviderKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly jwk: JWK;
}

export async function providerKey(kid: string, alg: 'ES256' | 'RS256' = 'ES256'): Promise<ProviderKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/**
 * A signed token of the provider (claims override the defaults; `exp`/`iat` in epoch seconds): an RFC 9068
 * access token (`typ: at+jwt`) unless `o.typ` says otherwise (null: no `typ`, as many ID tokens).
 */
export async function token(key: ProviderKey, claims: Record<string, unknown> = {}, o: { kid?: string; alg?: string; now?: number; typ?: string | null } = {}): Promise<string> {
  const now = Math.floor((o.now ?? T0) / 1000);
  const body = { sub: 'f3c1-77aa', preferred_username: 'q.sso', name: 'Quinn Sso', groups: ['lk-qa'], auth_time: now, iat: now, exp: now + 600, iss: ISSUER, aud: AUDIENCE, ...claims };
  for (const k of Object.keys(body)) if ((body as Record<string, unknown>)[k] === undefined) delete (body as Record<string, unknown>)[k];
  const typ = o.typ === undefined ? 'at+jwt' : o.typ;
  return new SignJWT(body).setProtectedHeader({ alg: o.alg ?? (key.jwk.alg as string), kid: o.kid ?? key.kid, ...(typ !== null ? { typ } : {}) }).sign(key.privateKey);
}

/** An unsecured JWT (`alg: none`), which must never be accepted. */
export function unsecured(claims: Record<string, unknown>): string {
  const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
}

/** The site's OIDC section as a file would give it (parsed by the config schema). */
export function oidcConfig(extra: Record<string, unknown>): OidcConfig {
  return Oidc.parse({
    issuer: ISSUER, audience: AUDIENCE, algorithms: ['ES256', 'RS256'], clock_tolerance_s: 5,
    role_map: { 'lk-admin': 'admin', 'lk-qa': 'qa_reviewer', 'lk-pe': 'process_engineer', 'lk-op': 'operator' },
    tenant_map: { 'plant-acme': ['acme-pharma'], 'plant-borealis': ['borealis-bio'] }, tenants_claim: 'plants',
    ...extra,
  });
}

/** What a test's own daemon parts are built from (e.g. a real guarded writer over the API's store). */
export interface ApiParts {
  readonly store: Store;
  readonly clock: ManualClock;
  readonly bundle: PolicyBundle;
  readonly loaded: LoadedConfig;
}

export async function startIdentityApi(o: { oidc?: (dir: string) => OidcConfig; writer?: (parts: ApiParts) => unknown; ttlMs?: number; maxMs?: number; keepAliveMs?: number; limits?: { windowMs: number; perAddress: number; perAccount: number } } = {}): Promise<IdentityApi> {
  const dir = mkdtempSync(join(tmpdir(), 'lk-identity-'));
  const clock = new ManualClock(T0);
  const loaded = loadConfig(defaultConfigFile(), { dataDir: join(dir, 'data') });
  const store = openStore({ dataDir: loaded.dataDir, clock });
  const bundle = loadPolicyBundle(loaded.policyDir, { site: loaded.config }).bundle;
  const tenants = loaded.config.tenants.map((t) => t.id);
  const oidc = o.oidc ? new OidcVerifier(o.oidc(dir), dir, tenants, clock) : undefined;
  const identity = new Identity({ store, clock, tokenTtlMs: o.ttlMs ?? 15 * 60_000, sessionMaxMs: o.maxMs ?? 60 * 60_000, scryptLog2N: 10, ...(oidc ? { oidc } : {}) });
  const seeded = [
    ['m.rossi', 'Maria Rossi', 'qa_reviewer', ['acme-pharma']], ['o.operator', 'Olga Operator', 'operator', ['acme-pharma']],
    ['p.bianchi', 'Paolo Bianchi', 'process_engineer', ['acme-pharma']], ['d.marino', 'Davide Marino', 'admin', tenants],
  ] as const;
  for (const [id, name, role, ts] of seeded) {
    await identity.create({ id, name, role, tenants: ts, password: INITIAL_PASSWORD }, 'system', 'test users');
  }
  const engine = {
    get: (tenant: string, id: string) => {
      if (tenant !== 'acme-pharma' || id !== RUN) throw new LkError('LK_NOT_FOUND', `no run ${id}`);
      return { id, status: 'RUNNING' };
    },
    toolCalls: () => [],
    onToolCall: () => () => undefined,
    onChange: () => () => undefined,
    settled: async () => undefined,
  };
  const api = await createApi({
    daemon: { engine, writer: o.writer ? o.writer({ store, clock, bundle: bundle!, loaded }) : {}, store, loaded, policy: { bundle }, connectors: [], live: new Map(), supervision: () => new Map() } as never,
    clock, users: identity, streams: { keepAliveMs: o.keepAliveMs ?? 50 }, ...(o.limits ? { signInLimits: o.limits } : {}),
  });
  // each user replaces the password someone else set, through the real routes (as `linekeeper login` does)
  for (const [id] of seeded) await changeOwnPassword(api, id, INITIAL_PASSWORD, PASSWORD);
  return {
    api, identity, store, clock, dir,
    async close() {
      await api.close();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Sign in with a password someone else set and change it to `next` (POST /v1/auth/token, then /v1/auth/password).
 * @returns the session's token, which works on after the change. @throws when either step is refused.
 */
export async function changeOwnPassword(api: ApiServer, user: string, current: string, next: string): Promise<string> {
  const post = async (url: string, body: unknown, token?: string) => {
    const r = await api.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, payload: JSON.stringify(body) });
    if (r.statusCode !== 200) throw new Error(`${url} for ${user}: ${r.statusCode} ${r.body}`);
    return JSON.parse(r.body) as { token: string; mustChangePassword?: boolean };
  };
  const t = await post('/v1/auth/token', { user, password: current });
  await post('/v1/auth/password', { current, password: next }, t.token);
  return t.token;
}

/** Write a JWKS of the keys into `dir`; @returns its file name. */
export function writeJwks(dir: string, keys: readonly ProviderKey[]): string {
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: keys.map((k) => k.jwk) }));
  return 'jwks.json';
}

/**
 * One request through fastify's inject (no socket), with an optional bearer token. The answer is checked against
 * the API's OpenAPI document (openapi-check.ts), and one that departs from it throws, as `call()` does for the
 * daemon's API — unless `LK_CHECK_OPENAPI=0` (with a reason) or the request names why in `unchecked`.
 */
export async function req(a: IdentityApi, method: 'GET' | 'POST' | 'PUT', url: string, o: { token?: string; body?: unknown; ip?: string; unchecked?: string } = {}) {
  if (o.unchecked !== undefined && !o.unchecked.trim()) throw new Error('req(): `unchecked` needs the reason the answer is not checked');
  const r = await a.api.app.inject({
    method, url, ...(o.ip ? { remoteAddress: o.ip } : {}),
    headers: { ...(o.token ? { authorization: `Bearer ${o.token}` } : {}), ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(o.body !== undefined ? { payload: JSON.stringify(o.body) } : {}),
  });
  let body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  try {
    body = JSON.parse(r.body);
  } catch {
    body = undefined;
  }
  if (o.unchecked === undefined && openApiCheckOn()) {
    const type = r.headers['content-type'];
    (await documentOf(a.api)).assert(method, url, { status: r.statusCode, type: typeof type === 'string' ? type : '', text: r.body });
  }
  return { status: r.statusCode, headers: r.headers, body };
}

const documents = new WeakMap<ApiServer, Promise<OpenApiDocument>>();

/** The validated OpenAPI document `api` serves, asked once per API (validated once per distinct text). */
function documentOf(api: ApiServer): Promise<OpenApiDocument> {
  let d = documents.get(api);
  if (!d) {
    d = api.app.inject({ method: 'GET', url: '/openapi.json' }).then((r) => {
      if (r.statusCode !== 200) throw new Error(`GET /openapi.json: ${r.statusCode}`);
      return OpenApiDocument.parse(r.body);
    });
    documents.set(api, d);
  }
  return d;
}

/** Audit actions of the site chain, in order. */
export function siteActions(store: Store): { action: string; actor: string; args: Record<string, unknown> }[] {
  return (store.db.prepare("SELECT action, actor, args FROM audit_entry WHERE tenant = 'site' AND kind IN ('identity', 'autonomy_change') ORDER BY seq").all() as { action: string; actor: string; args: string | null }[])
    .map((r) => ({ action: r.action, actor: r.actor, args: r.args ? (JSON.parse(r.args) as Record<string, unknown>) : {} }));
}
