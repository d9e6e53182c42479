/**
 * The shape of a bearer token, told without verifying it: what the identities ask of every request before they hand
 * a token to the identity provider's verifier (oidc.ts, which loads jose, only where one is configured).
 */

/** Whether a bearer token is a JWS compact serialisation (three base64url parts) rather than an opaque local token. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}
