/**
 * Password hashes of local users: scrypt from node:crypto (async, so the engine keeps the event loop), in the
 * stored form `scrypt$<log2 N>$<r>$<p>$<salt>$<key>`, compared in constant time.
 *
 * The async scrypt runs on libuv's thread pool, which the file system and DNS share, and each hash holds
 * 32 MiB and a core for a while: a burst of sign-ins once took every core and the PLC heartbeats were late
 * (issue 20). So at most {@link MAX_CONCURRENT_HASHES} hashes run at once, process-wide; the others wait
 * their turn without holding anything. How many ran is counted ({@link passwordHashStats}) so that a throttle
 * can be checked by what it let through, not by how long it took.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const KEY_LEN = 32;
const MAX_LOG2N = 20;

/** Hashes that may run at once in the process: one per core of a small edge node, leaving pool threads for files. */
export const MAX_CONCURRENT_HASHES = 2;

const stats = { started: 0, running: 0, peak: 0, waiting: 0 };
const queue: (() => void)[] = [];

/** Hashes started since the process began, running now, the most that ever ran at once, and waiting now. */
export function passwordHashStats(): { readonly started: number; readonly running: number; readonly peak: number; readonly waiting: number } {
  return { ...stats, waiting: queue.length };
}

async function turn(): Promise<void> {
  if (stats.running < MAX_CONCURRENT_HASHES) {
    stats.running++;
    return;
  }
  // the slot is handed over by the hash that ends, so `running` never passes the bound
  await new Promise<void>((resolve) => queue.push(resolve));
}

function leave(): void {
  const next = queue.shift();
  if (next) next();
  else stats.running--;
}

async function scryptAsync(password: string, salt: Buffer, log2N: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** log2N;
  const opts: ScryptOptions = { N, r, p, maxmem: 256 * N * r + 1024 * 1024 };
  await turn();
  stats.started++;
  stats.peak = Math.max(stats.peak, stats.running);
  try {
    return await new Promise((resolve, reject) => scrypt(password.normalize('NFC'), salt, KEY_LEN, opts, (err, key) => (err ? reject(err) : resolve(key))));
  } finally {
    leave();
  }
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

export { checkNewPassword } from './password-policy.js';
