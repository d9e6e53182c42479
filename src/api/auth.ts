/**
 * Who may call a route. Every route declares the roles it needs; the guard runs first (onRequest, before the
 * body is even read): a missing or bad token is 401, a tenant the user does not work for — or that the site
 * does not have — is 404 exactly as a missing object is (R1: never 403, never data), and only then a role
 * that may not do this is 403. A session whose password must be changed is 403 LK_PASSWORD_CHANGE_REQUIRED
 * everywhere but the password change, who-am-I, renewal and sign-out (routes-auth.ts).
 */
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { LkError } from '../errors.js';
import type { AuthUser, Identity, Role } from './identity.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in person, set by the route's guard. */
    lkUser: AuthUser | null;
  }
}

/** Roles of the site, grouped as routes use them. */
export const READERS: readonly Role[] = ['operator', 'process_engineer', 'qa_reviewer', 'auditor'];
export const EVERYONE: readonly Role[] = ['operator', 'process_engineer', 'qa_reviewer', 'auditor', 'admin'];

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearer(header: string | undefined): string | undefined {
  const m = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(header ?? '');
  return m?.[1];
}

/** The signed-in user of a guarded route. @throws LkError LK_UNAUTHENTICATED when the route had no guard. */
export function userOf(req: FastifyRequest): AuthUser {
  if (!req.lkUser) throw new LkError('LK_UNAUTHENTICATED', 'no signed-in user');
  return req.lkUser;
}

/**
 * The guard of a route: authenticate, then the tenant of the path, then the role.
 * @param tenants the tenant ids of the site
 */
export function guardFactory(identity: Identity, tenants: ReadonlySet<string>): (roles: readonly Role[], what: string) => onRequestAsyncHookHandler {
  return (roles, what) => async (req) => {
    const user = await identity.authenticate(bearer(req.headers.authorization));
    const tenant = (req.params as { tenant?: unknown } | undefined)?.tenant;
    if (tenant !== undefined && (typeof tenant !== 'string' || !tenants.has(tenant) || !user.tenants.includes(tenant))) {
      throw new LkError('LK_NOT_FOUND', `no tenant ${String(tenant)}`);
    }
    // a password someone else set (or an expired one) opens the password change and nothing else
    if (user.mustChangePassword) throw new LkError('LK_PASSWORD_CHANGE_REQUIRED', `${user.id} must change the password first (POST /v1/auth/password; the CLI: linekeeper login)`, { user: user.id });
    if (!roles.includes(user.role)) throw new LkError('LK_FORBIDDEN', `a ${user.role} may not ${what} (needs ${roles.join(', ')})`, { role: user.role, needs: [...roles] });
    req.lkUser = { ...user, address: req.ip };
  };
}
