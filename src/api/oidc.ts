/**
 * Single sign-on: bearer JWTs issued by the site's OIDC provider, verified with `jose` against the provider's
 * public keys — a JWKS file (an air-gapped site copies it from the provider) or the provider's JWKS URL (the
 * only endpoint ever contacted; jose caches the keys and re-reads them for an unknown `kid`). Issuer, audience,
 * algorithms (never `none`, never HMAC) and clock tolerance come from `api.oidc`; time from the injected clock.
 * The verified claims map to one linekeeper identity: the user id (`user_claim`, else `sub`), one role (the
 * first `role_map` entry whose value the person holds) and tenants (a claim, a map, or a fixed list).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createLocalJWKSet, createRemoteJWKSet, jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { Clock } from '../clock.js';
import type { OidcConfig } from '../config/schema.js';
import { LkError } from '../errors.js';
import { PERSON_RE } from '../models/registry.js';
import type { Role } from '../store/user-store.js';

/** A person as the provider's token names them. */
export interface SsoIdentity {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  /** Every linekeeper role the person's claims map to (`role` is the first): separation of duties looks at all. */
  readonly roles: readonly Role[];
  readonly tenants: readonly string[];
  /** `auth_time` (epoch ms): when the person last authenticated at the provider; null when the token has none. */
  readonly authTime: number | null;
  /** `exp` (epoch ms). */
  readonly expiresAt: number;
  readonly subject: string;
  readonly tokenId: string | null;
}

export { looksLikeJwt } from './jwt-shape.js';

/** The value at a dotted claim path (`realm_access.roles`). */
function claimAt(payload: JWTPayload, path: string): unknown {
  let v: unknown = payload;
  for (const part of path.split('.')) {
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, part)) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** A claim as a list of strings (a single string counts as one; anything else as none). */
function strings(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

const REASONS: Record<string, string> = {
  ERR_JWT_EXPIRED: 'the token has expired',
  ERR_JWT_CLAIM_VALIDATION_FAILED: 'a claim is not valid',
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: 'the signature does not verify with the provider\'s keys',
  ERR_JOSE_ALG_NOT_ALLOWED: 'the signature algorithm is not allowed',
  ERR_JWKS_NO_MATCHING_KEY: 'no key of the provider matches the token (kid)',
  ERR_JWKS_MULTIPLE_MATCHING_KEYS: 'several keys of the provider match the token',
  ERR_JWS_INVALID: 'the token is not a valid JWS',
  ERR_JWT_INVALID: 'the token is not a valid JWT',
  ERR_JOSE_NOT_SUPPORTED: 'the token uses an unsupported algorithm or key',
};

export class OidcVerifier {
  private readonly keys: JWTVerifyGetKey;
  private readonly tenantIds: ReadonlySet<string>;

  /**
   * @param baseDir the configuration file's folder (`jwks_file` is relative to it)
   * @param siteTenants tenant ids of the site (others named by a token are ignored)
   * @throws LkError LK_CONFIG_INVALID when the JWKS file cannot be read or is not a key set.
   */
  constructor(readonly cfg: OidcConfig, baseDir: string, siteTenants: readonly string[], private readonly clock: Clock) {
    this.tenantIds = new Set(siteTenants);
    if (cfg.jwks_file !== undefined) {
      const file = resolve(baseDir, cfg.jwks_file);
      let jwks: JSONWebKeySet;
      try {
        jwks = JSON.parse(readFileSync(file, 'utf8')) as JSONWebKeySet;
        this.keys = createLocalJWKSet(jwks);
      } catch (err) {
        throw new LkError('LK_CONFIG_INVALID', `api.oidc.jwks_file ${file} is not a readable JWKS: ${(err as Error).message}`, { file }, { cause: err });
      }
    } else {
      this.keys = createRemoteJWKSet(new URL(cfg.jwks_url!), { timeoutDuration: 5000, cooldownDuration: 30_000, cacheMaxAge: 600_000 });
    }
  }

  /**
   * Verify a bearer JWT and map its claims.
   * @throws LkError LK_UNAUTHENTICATED (bad signature, unknown key, expired, wrong issuer or audience, a
   *   disallowed algorithm — `detail.reason` says which), LK_SSO_TOKEN_TYPE (not an access token), LK_SSO_UNMAPPED (valid, but no role or tenant of this
   *   site, or no usable user id), LK_SSO_UNAVAILABLE (the JWKS URL does not answer).
   */
  async verify(token: string): Promise<SsoIdentity> {
    const c = this.cfg;
    let payload: JWTPayload;
    let typ: unknown;
    try {
      ({ payload, protectedHeader: { typ } } = await jwtVerify(token, this.keys, {
        issuer: c.issuer, audience: c.audience, algorithms: c.algorithms, clockTolerance: c.clock_tolerance_s, currentDate: new Date(this.clock.now()), requiredClaims: ['exp', 'sub'],
      }));
    } catch (err) {
      const code = (err as { code?: string }).code ?? '';
      // the key set could not be fetched (timeout, no answer, not 200, not a JWKS): the provider's fault, not the token's
      if (c.jwks_url !== undefined && ['ERR_JWKS_TIMEOUT', 'ERR_JOSE_GENERIC', 'ERR_JWKS_INVALID', ''].includes(code)) {
        throw new LkError('LK_SSO_UNAVAILABLE', `the identity provider's keys at ${c.jwks_url ?? c.jwks_file} cannot be read: ${(err as Error).message}`, {}, { cause: err });
      }
      const claim = (err as { claim?: string }).claim;
      const reason = code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && claim ? `the ${claim} claim is not valid` : (REASONS[code] ?? 'the token is not valid');
      throw new LkError('LK_UNAUTHENTICATED', `the identity provider's token was refused: ${reason}`, { reason: code || 'invalid', ...(claim ? { claim } : {}) }, { cause: err });
    }
    this.checkType(typ);
    return this.map(payload);
  }

  /**
   * The token's type (header `typ`): an RFC 9068 access token (`at+jwt`, or `application/at+jwt`, any case);
   * an ID token (`JWT` or none) only with `accept_id_tokens`. Anything else — a logout token, a refresh token
   * in JWT form, another audience's token type — is refused. @throws LkError LK_SSO_TOKEN_TYPE.
   */
  private checkType(typ: unknown): void {
    const t = typeof typ === 'string' ? typ.toLowerCase().replace(/^application\//, '') : undefined;
    if (t === 'at+jwt') return;
    if (this.cfg.accept_id_tokens && (t === undefined || t === 'jwt')) return;
    throw new LkError('LK_SSO_TOKEN_TYPE', `the identity provider's token has type ${typ === undefined ? '(none)' : JSON.stringify(typ)}: send an access token (RFC 9068, typ at+jwt)${this.cfg.accept_id_tokens ? ' or an ID token (typ JWT)' : ''}`, { typ: typeof typ === 'string' ? typ : null, acceptIdTokens: this.cfg.accept_id_tokens });
  }

  /** The linekeeper identity of verified claims. @throws LkError LK_SSO_UNMAPPED. */
  map(p: JWTPayload): SsoIdentity {
    const c = this.cfg;
    const sub = String(p.sub);
    const named = claimAt(p, c.user_claim);
    const id = typeof named === 'string' && named.length > 0 ? named : sub;
    if (!PERSON_RE.test(id)) throw new LkError('LK_SSO_UNMAPPED', `the token's user id "${id.slice(0, 64)}" is not a person's id linekeeper accepts`, { claim: c.user_claim });
    const held = new Set(strings(claimAt(p, c.roles_claim)));
    const mapped = Object.entries(c.role_map).filter(([value]) => held.has(value));
    const match = mapped[0];
    if (!match) throw new LkError('LK_SSO_UNMAPPED', `${id} holds no ${c.roles_claim} value mapped to a linekeeper role`, { user: id, claim: c.roles_claim });
    let tenants: string[];
    if (c.tenants_claim !== undefined || c.tenant_map !== undefined) {
      const values = strings(claimAt(p, c.tenants_claim ?? c.roles_claim));
      tenants = c.tenant_map ? values.flatMap((v) => (Object.hasOwn(c.tenant_map!, v) ? c.tenant_map![v]! : [])) : values;
    } else {
      tenants = [...(c.tenants ?? [])];
    }
    tenants = [...new Set(tenants)].filter((t) => this.tenantIds.has(t)).sort();
    if (tenants.length === 0) throw new LkError('LK_SSO_UNMAPPED', `${id} works for no tenant of this site`, { user: id });
    const name = typeof p['name'] === 'string' && p['name'].length > 0 ? p['name'].slice(0, 200) : id;
    const authTime = typeof p['auth_time'] === 'number' ? p['auth_time'] * 1000 : null;
    return { id, name, role: match[1], roles: [...new Set(mapped.map(([, r]) => r))], tenants, authTime, expiresAt: p.exp! * 1000, subject: sub, tokenId: typeof p.jti === 'string' ? p.jti : null };
  }
}
