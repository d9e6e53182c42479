/**
 * Who may call what, written out by hand from the route declarations of src/api (routes-runs.ts, routes-exceptions.ts, routes-lifecycle.ts,
 * routes-site.ts, routes-line.ts, routes-review.ts, routes-trail-review.ts, routes-arbitration.ts, routes-waiting.ts, routes-auth.ts, routes-autonomy.ts, routes-models.ts, routes-signatures.ts, server.ts) — deliberately not imported from them, so a test built on this table fails when
 * a route's roles change without the table (and the README) changing with it. Also: the operations of the
 * API's own OpenAPI document, the demo identities and what the guard of a route answers to a caller.
 */
import type { Role } from '../../src/api/index.js';

export const ALL_ROLES: readonly Role[] = ['operator', 'process_engineer', 'qa_reviewer', 'auditor', 'admin'];
export const TENANTS = ['acme-pharma', 'borealis-bio'] as const;
export type Tenant = (typeof TENANTS)[number];

/** `public`: no token needed; otherwise the roles a tenant-scoped route admits. */
export type Access = 'public' | readonly Role[];

const READERS: readonly Role[] = ['operator', 'process_engineer', 'qa_reviewer', 'auditor'];
const T = '/v1/tenants/{tenant}';

/** Every operation of the OpenAPI document, `METHOD path` as the document spells it. */
export const ROUTE_ACCESS: Readonly<Record<string, Access>> = {
  'POST /v1/auth/token': 'public',
  // renewal and sign-out act on the caller's own token: any role, no tenant
  'POST /v1/auth/token/refresh': ['operator', 'process_engineer', 'qa_reviewer', 'auditor', 'admin'],
  'POST /v1/auth/logout': ['operator', 'process_engineer', 'qa_reviewer', 'auditor', 'admin'],
  // whoami: any signed-in caller, local or SSO (the console's check of a pasted identity-provider token)
  'GET /v1/auth/me': ['operator', 'process_engineer', 'qa_reviewer', 'auditor', 'admin'],
  // one's own password change: any signed-in local caller (the one route a must-change session reaches besides these)
  'POST /v1/auth/password': ['operator', 'process_engineer', 'qa_reviewer', 'auditor', 'admin'],
  'GET /healthz': 'public',
  'GET /readyz': 'public',
  [`POST ${T}/runs`]: ['operator', 'process_engineer'],
  [`GET ${T}/runs`]: READERS,
  [`GET ${T}/runs/{id}`]: READERS,
  [`GET ${T}/runs/{id}/stream`]: READERS,
  [`GET ${T}/runs/{id}/genealogy`]: READERS,
  // routes-exceptions.ts: review by exception
  [`GET ${T}/runs/{id}/exceptions`]: READERS,
  [`POST ${T}/exceptions/{id}/close`]: ['process_engineer', 'qa_reviewer'],
  // routes-lifecycle.ts: the ways out of the states a run stops in
  [`POST ${T}/runs/{id}/resume`]: ['process_engineer', 'qa_reviewer'],
  [`POST ${T}/runs/{id}/abort`]: ['process_engineer', 'qa_reviewer'],
  [`POST ${T}/runs/{id}/reassign`]: ['qa_reviewer', 'admin'],
  [`GET ${T}/approvals`]: ['process_engineer', 'qa_reviewer', 'auditor'],
  [`POST ${T}/approvals/{id}`]: ['process_engineer', 'qa_reviewer'],
  // routes-waiting.ts: counts of what waits for a person (the console's strip), for every reading role
  [`GET ${T}/waiting`]: READERS,
  [`GET ${T}/models`]: READERS,
  [`GET ${T}/design-space`]: READERS,
  [`POST ${T}/twin/simulate`]: ['process_engineer', 'qa_reviewer'],
  [`POST ${T}/attendance`]: ['operator'],
  [`GET ${T}/line`]: ['operator', 'process_engineer', 'qa_reviewer', 'auditor', 'admin'],
  // routes-line.ts: readiness before a run (everyone who sees the line), and the re-arm of a LOST PLC by a process engineer
  [`GET ${T}/line/readiness`]: ['operator', 'process_engineer', 'qa_reviewer', 'auditor', 'admin'],
  [`POST ${T}/line/equipment/{unit}/rearm`]: ['process_engineer'],
  [`GET ${T}/audit`]: ['auditor', 'qa_reviewer'],
  [`GET ${T}/audit/people`]: ['auditor', 'qa_reviewer'],
  // routes-review.ts: what the review console needs beyond the runs
  [`GET ${T}/audit/export`]: ['auditor', 'qa_reviewer'],
  [`GET ${T}/audit/verify`]: ['auditor', 'qa_reviewer'],
  // routes-trail-review.ts: the review of the audit trail (Annex 11 §9); the bundle's approvers.qa narrows who signs one (403 LK_APPROVAL_FORBIDDEN from the handler)
  [`GET ${T}/audit/review`]: ['auditor', 'qa_reviewer'],
  [`GET ${T}/audit/reviews`]: ['auditor', 'qa_reviewer'],
  [`POST ${T}/audit/reviews`]: ['process_engineer', 'qa_reviewer', 'auditor'],
  [`GET ${T}/runs/{id}/release`]: READERS,
  [`GET ${T}/autonomy`]: READERS,
  [`PUT ${T}/autonomy`]: ['operator', 'process_engineer', 'qa_reviewer'],
  // routes-arbitration.ts: deadlocks a person resolves
  [`GET ${T}/arbitration/escalations`]: READERS,
  [`POST ${T}/arbitration/escalations/{id}`]: ['process_engineer', 'qa_reviewer'],
  // the bundle's approvers.change narrows these further (403 LK_MODEL_CHANGE from the handler)
  [`POST ${T}/models/{id}/promote`]: ['process_engineer', 'qa_reviewer'],
  [`POST ${T}/models/{id}/retire`]: ['process_engineer', 'qa_reviewer'],
  // routes-signatures.ts: the site's signature meanings, for every signed-in role (what a signing request may name)
  [`GET ${T}/signature-meanings`]: ['operator', 'process_engineer', 'qa_reviewer', 'auditor', 'admin'],
};

/** Operations that end the caller's session: probes that reuse a token must not call them (they get their own tests). */
export const ENDS_SESSION: ReadonlySet<string> = new Set(['POST /v1/auth/logout']);

/** A user the tests sign in as. */
export interface TestUser {
  readonly id: string;
  readonly role: Role;
  readonly tenants: readonly string[];
}

/** The demo identities the embedded default creates (src/api/identity.ts ensureDemoUsers). */
export const DEMO_USERS: readonly TestUser[] = [
  { id: 'o.operator', role: 'operator', tenants: ['acme-pharma'] },
  { id: 'p.bianchi', role: 'process_engineer', tenants: ['acme-pharma'] },
  { id: 'm.rossi', role: 'qa_reviewer', tenants: ['acme-pharma'] },
  { id: 'l.conti', role: 'process_engineer', tenants: ['borealis-bio'] },
  { id: 'g.ferri', role: 'qa_reviewer', tenants: ['borealis-bio'] },
  { id: 'a.ricci', role: 'auditor', tenants: ['acme-pharma', 'borealis-bio'] },
  { id: 'd.marino', role: 'admin', tenants: ['acme-pharma', 'borealis-bio'] },
];

/** One operation of an OpenAPI document. */
export interface Operation {
  readonly method: string;
  readonly path: string;
  /** `METHOD path`, the key of {@link ROUTE_ACCESS}. */
  readonly key: string;
  readonly parameters: readonly OpenApiParameter[];
  /** JSON schema of the application/json body, when the operation takes one. */
  readonly body: JsonSchema | undefined;
}

export interface OpenApiParameter {
  readonly name: string;
  readonly in: 'path' | 'query' | 'header' | 'cookie';
  readonly required?: boolean;
  readonly schema: JsonSchema;
}

export type JsonSchema = { readonly [k: string]: unknown };

interface OpenApiDoc {
  readonly paths: Record<string, Record<string, { parameters?: OpenApiParameter[]; requestBody?: { content?: Record<string, { schema?: JsonSchema }> } }>>;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);

/** The operations of `doc`, in document order. */
export function operationsOf(doc: unknown): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries((doc as OpenApiDoc).paths)) {
    for (const [m, op] of Object.entries(item)) {
      if (!METHODS.has(m)) continue;
      const method = m.toUpperCase();
      out.push({ method, path, key: `${method} ${path}`, parameters: op.parameters ?? [], body: op.requestBody?.content?.['application/json']?.schema });
    }
  }
  return out;
}

/** `/v1/tenants/{tenant}/runs/{id}` with the values of `params` (already encoded as the caller wants). */
export function fillPath(template: string, params: Readonly<Record<string, string>>): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => params[name] ?? `{${name}}`);
}

/**
 * What the guard of an operation answers before the handler runs, or null when it lets the caller through:
 * no valid token → 401, a tenant the caller does not work for (or the site does not have) → 404 (R1, before
 * the role), a role the route does not admit → 403.
 */
export function guardOutcome(access: Access, user: TestUser | null, tenant: string | undefined): { status: number; code: string } | null {
  if (access === 'public') return null;
  if (!user) return { status: 401, code: 'LK_UNAUTHENTICATED' };
  if (tenant !== undefined && (!(TENANTS as readonly string[]).includes(tenant) || !user.tenants.includes(tenant))) return { status: 404, code: 'LK_NOT_FOUND' };
  if (!access.includes(user.role)) return { status: 403, code: 'LK_FORBIDDEN' };
  return null;
}
