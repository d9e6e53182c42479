/** The demo identities of the embedded default site, created once with one-time passwords. */
import { randomBytes } from 'node:crypto';
import type { AuthUser, Identity, NewUser } from './identity.js';

export interface DemoUser extends AuthUser {
  /** One-time password, returned once to the caller (the daemon prints it once); only its hash is stored. */
  readonly password: string;
}

/**
 * The demo identities of the embedded default, created once (audited, change `DEMO-SETUP`) for the tenants
 * the site has: o.operator, p.bianchi (process engineer) and m.rossi (QA) for acme-pharma; l.conti and g.ferri
 * for borealis-bio; an auditor and an administrator of every tenant. Users that exist are left alone, so
 * passwords are returned only at creation.
 * @throws LkError as {@link Identity.create}.
 */
export async function ensureDemoUsers(identity: Identity, tenants: readonly string[]): Promise<DemoUser[]> {
  const has = (t: string): boolean => tenants.includes(t);
  const all = [...tenants];
  const wanted: Omit<NewUser, 'password'>[] = [
    ...(has('acme-pharma')
      ? [
          { id: 'o.operator', name: 'Olga Operator', role: 'operator' as const, tenants: ['acme-pharma'] },
          { id: 'p.bianchi', name: 'Paolo Bianchi', role: 'process_engineer' as const, tenants: ['acme-pharma'] },
          { id: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer' as const, tenants: ['acme-pharma'] },
        ]
      : []),
    ...(has('borealis-bio')
      ? [
          { id: 'l.conti', name: 'Luca Conti', role: 'process_engineer' as const, tenants: ['borealis-bio'] },
          { id: 'g.ferri', name: 'Giulia Ferri', role: 'qa_reviewer' as const, tenants: ['borealis-bio'] },
        ]
      : []),
    ...(all.length > 0
      ? [
          { id: 'a.ricci', name: 'Anna Ricci', role: 'auditor' as const, tenants: all },
          { id: 'd.marino', name: 'Davide Marino', role: 'admin' as const, tenants: all },
        ]
      : []),
  ];
  const made: DemoUser[] = [];
  for (const w of wanted) {
    if (identity.users.get(w.id)) continue;
    const password = randomBytes(12).toString('base64url');
    made.push({ ...(await identity.create({ ...w, password }, 'system', 'DEMO-SETUP: demo identities of the embedded default site')), password });
  }
  return made;
}
