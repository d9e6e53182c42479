/**
 * A local user a test can sign in and sign with: created (by an administrator, or `system`) with a password
 * someone else chose — which must be changed — and then changed by the person to `password` through
 * {@link Identity.changePassword}, the code path of POST /v1/auth/password.
 */
import type { AuthUser, Identity, NewUser } from '../../src/api/identity.js';

/** @returns the user as created; they sign in with `u.password`. */
export async function addUser(identity: Identity, u: NewUser, by: string, reason: string): Promise<AuthUser> {
  const initial = `set by ${by} for ${u.id}: ${u.password.split('').reverse().join('')}`;
  const made = await identity.create({ ...u, password: initial }, by, reason);
  await identity.changePassword(u.id, initial, u.password);
  return made;
}
