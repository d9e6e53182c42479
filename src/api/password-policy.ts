/**
 * The site's password policy (21 CFR 11.300(b): passwords are checked and revised periodically): a minimum length, a
 * minimum strength estimated by zxcvbn-ts (dictionaries of common passwords, names and words, keyboard patterns,
 * repeats and sequences — offline, nothing is fetched), a maximum age after which the password must be changed,
 * and a history of recent passwords that may not be chosen again. The estimator runs in a thread of its own.
 */
import { Worker } from 'node:worker_threads';
import { LkError } from '../errors.js';
import { workerScript } from '../worker-script.js';
import type { EstimateReply, EstimateRequest } from './password-worker.js';

export interface PasswordPolicy {
  /** Characters at least (never under 12). */
  readonly minLength: number;
  /** zxcvbn score at least: 0 (too guessable) … 4 (very unguessable). */
  readonly minStrength: number;
  /** Days a password lives before it must be changed; 0: no ageing. */
  readonly maxAgeDays: number;
  /** Previous passwords (besides the current one) that may not be chosen again. */
  readonly history: number;
}

export const DEFAULT_PASSWORD_POLICY: PasswordPolicy = { minLength: 12, minStrength: 3, maxAgeDays: 180, history: 5 };

/** Characters the estimator looks at: its matching grows faster than linearly (~0.6 s for 100 characters here). */
const ESTIMATED_CHARS = 100;
/** How long the estimator is kept after its last use: a person changing passwords is not made to wait twice. */
const ESTIMATOR_IDLE_MS = 60_000;

/**
 * The estimator runs in a thread of its own (password-worker.ts), started at first use (its dictionaries take
 * ~0.4 s to index) and stopped a minute after the last: off the event loop, a long password's estimate no longer
 * holds back the heartbeats, and its modules and indexed dictionaries (~72 MB of resident memory as a thread, 51 MB
 * on the main thread before: `npm run bench -- worker-memory`) are held only while passwords are being chosen, a few
 * times a year. While an estimate is awaited the thread keeps the process alive
 * (a `linekeeper users add` waits for it); idle, it does not.
 */
let worker: Worker | undefined;
let idle: NodeJS.Timeout | undefined;
let nextId = 0;
const waiting = new Map<number, { resolve: (r: EstimateReply) => void; reject: (err: Error) => void }>();

const estimatorFailed = (why: string): LkError => new LkError('LK_INTERNAL', `the password strength estimator failed (${why}): the password was not checked, so it is not accepted`);

function failAll(w: Worker, why: string): void {
  if (worker !== w) return;
  worker = undefined;
  for (const [, p] of waiting) p.reject(estimatorFailed(why));
  waiting.clear();
}

function estimator(): Worker {
  if (!worker) {
    const script = workerScript(new URL('./password-worker.js', import.meta.url));
    const w = new Worker(script.code, { eval: script.eval });
    w.on('message', (r: EstimateReply) => {
      const p = waiting.get(r.id);
      waiting.delete(r.id);
      if (waiting.size === 0) {
        w.unref();
        if (idle) clearTimeout(idle);
        idle = setTimeout(() => void releaseEstimator(), ESTIMATOR_IDLE_MS);
        idle.unref();
      }
      p?.resolve(r);
    });
    w.once('error', (err) => failAll(w, err.message));
    w.once('exit', (code) => failAll(w, `its thread exited with code ${code}`));
    worker = w;
  }
  if (idle) clearTimeout(idle);
  idle = undefined;
  worker.ref();
  return worker;
}

/** The estimator's verdict on `password` (cut to {@link ESTIMATED_CHARS}) with the account's `words`. */
function estimate(password: string, words: readonly string[]): Promise<EstimateReply> {
  const w = estimator();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    w.postMessage({ id, password: password.slice(0, ESTIMATED_CHARS), words } satisfies EstimateRequest);
  });
}

/** Stop the estimator's thread and let its dictionaries go (started again at the next check). */
export async function releaseEstimator(): Promise<void> {
  if (idle) clearTimeout(idle);
  idle = undefined;
  const w = worker;
  if (!w) return;
  failAll(w, 'released');
  await w.terminate();
}

/** Whether the estimator's thread is running now. */
export function estimatorRunning(): boolean {
  return worker !== undefined;
}

/** The words of an account (its id, its name, and their parts) that make a password guessable for it. */
export function accountWords(personal: readonly string[]): string[] {
  return personal.flatMap((p) => [p, ...p.split(/[\s._@-]+/)]).filter((w) => w.length >= 3);
}

/**
 * A password a person may choose under `policy`; `personal` are words of the account (id, name) that make a
 * password guessable. The length is checked here, the strength in the estimator's thread.
 * @throws LkError LK_VALIDATION (length), LK_PASSWORD_WEAK (strength, with the estimator's warning and
 *   suggestions), LK_INTERNAL (the estimator failed: the password is not accepted unchecked).
 */
export async function checkNewPassword(password: string, policy: PasswordPolicy = DEFAULT_PASSWORD_POLICY, personal: readonly string[] = []): Promise<void> {
  const min = Math.max(12, policy.minLength);
  if (password.length < min) throw new LkError('LK_VALIDATION', `a password has at least ${min} characters`);
  if (password.length > 1024) throw new LkError('LK_VALIDATION', 'a password has at most 1024 characters');
  const r = await estimate(password, accountWords(personal));
  if ('error' in r) throw estimatorFailed(r.error);
  if (r.score < policy.minStrength) {
    const why = r.warning ?? 'it is easy to guess';
    throw new LkError('LK_PASSWORD_WEAK', `the password is too weak (strength ${r.score} of 4, the site asks for ${policy.minStrength}): ${why}${r.suggestions.length > 0 ? ` ${r.suggestions.join(' ')}` : ''}`, {
      score: r.score, minStrength: policy.minStrength, warning: r.warning, suggestions: [...r.suggestions],
    });
  }
}

/** Whether a password set at `setAt` (epoch ms) has outlived the policy at `now`. */
export function passwordExpired(setAt: number, now: number, policy: PasswordPolicy): boolean {
  return policy.maxAgeDays > 0 && now - setAt >= policy.maxAgeDays * 86_400_000;
}
