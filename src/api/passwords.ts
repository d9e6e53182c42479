/**
 * Password hashes of local users: scrypt from node:crypto (async, so the engine keeps the event loop), in the
 * stored form `scrypt$<log2 N>$<r>$<p>$<salt>$<key>`, compared in constant time.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { LkError } from '../errors.js';

const KEY_LEN = 32;
const MAX_LOG2N = 20;

function scryptAsync(password: string, salt: Buffer, log2N: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** log2N;
  const opts: ScryptOptions = { N, r, p, maxmem: 256 * N * r + 1024 * 1024 };
  return new Promise((resolve, reject) => scrypt(password.normalize('NFC'), salt, KEY_LEN, opts, (err, key) => (err ? reject(err) : resolve(key))));
}

/** An scrypt hash in the stored form `scrypt$<log2 N>$<r>$<p>$<salt>$<key>` (async: the engine shares the event loop). */
export async function hashPassword(password: string, log2N = 15): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, log2N, 8, 1);
  return `scrypt$${log2N}$8$1$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** Constant-time check of a password against a stored hash; a malformed hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const m = /^scrypt\$(\d{1,2})\$(\d{1,2})\$(\d{1,2})\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/.exec(stored);
  if (!m) return false;
  const [log2N, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (log2N < 1 || log2N > MAX_LOG2N || r < 1 || p < 1) return false;
  const want = Buffer.from(m[5]!, 'base64url');
  const got = await scryptAsync(password, Buffer.from(m[4]!, 'base64url'), log2N, r, p);
  return got.length === want.length && timingSafeEqual(got, want);
}

/** A password a person may choose. @throws LkError LK_VALIDATION naming the rule. */
export function checkNewPassword(password: string): void {
  if (password.length < 12) throw new LkError('LK_VALIDATION', 'a password has at least 12 characters');
  if (password.length > 1024) throw new LkError('LK_VALIDATION', 'a password has at most 1024 characters');
}
