/** The REST API of linekeeper: routes, server-sent events, identities, problem+json errors, OpenAPI. */
export { createApi, type ApiOptions, type ApiServer } from './server.js';
export type { ApiDaemon } from './context.js';
export { ensureDemoUsers, hashPassword, Identity, identitySettings, ROLES, SIGNING_ROLES, verifyPassword, type AuthUser, type DemoUser, type IdentityOptions, type IssuedToken, type NewUser, type Role } from './identity.js';
export { PROBLEM_TYPE, toProblem, type Problem } from './problem.js';
export { looksLikeJwt, OidcVerifier, type SsoIdentity } from './oidc.js';
export { FailureLimiter } from './limiter.js';
export { lineOf, RunStreams, type StreamOptions } from './sse.js';
