/**
 * The site's password policy (21 CFR 11.300(b): passwords are checked and revised periodically): a minimum length, a
 * minimum strength estimated by zxcvbn-ts (dictionaries of common passwords, names and words, keyboard patterns,
 * repeats and sequences — offline, nothing is fetched), a maximum age after which the password must be changed,
 * and a history of recent passwords that may not be chosen again. Pure apart from the estimator's tables.
 */
import { createRequire } from 'node:module';
import type { ZxcvbnFactory } from '@zxcvbn-ts/core';
import type * as Common from '@zxcvbn-ts/language-common';
import type * as En from '@zxcvbn-ts/language-en';
import { LkError } from '../errors.js';

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

/** Characters the estimator looks at: its matching grows faster than linearly, and it runs on the event loop. */
const ESTIMATED_CHARS = 100;

let estimator: ZxcvbnFactory | undefined;
let idle: NodeJS.Timeout | undefined;
/** How long the estimator is kept after its last use: a person changing passwords is not made to wait twice. */
const ESTIMATOR_IDLE_MS = 60_000;
const ESTIMATOR_MODULES = ['@zxcvbn-ts/core', '@zxcvbn-ts/language-common', '@zxcvbn-ts/language-en'] as const;

/**
 * The estimator, built at first use (its dictionaries take a moment to index) and let go a minute after the
 * last: its modules and indexed dictionaries hold ~60 MB of resident memory, and passwords are chosen a few
 * times a year, so a daemon that is not choosing one does not keep them (loaded through `require`, so that
 * dropping them from the module cache lets them be collected).
 */
function zxcvbn(): ZxcvbnFactory {
  if (!estimator) {
    const require = createRequire(import.meta.url);
    const { ZxcvbnFactory: Factory } = require('@zxcvbn-ts/core') as typeof import('@zxcvbn-ts/core');
    const common = require('@zxcvbn-ts/language-common') as typeof Common;
    const en = require('@zxcvbn-ts/language-en') as typeof En;
    estimator = new Factory({ dictionary: { ...common.dictionary, ...en.dictionary }, graphs: common.adjacencyGraphs, translations: en.translations });
  }
  if (idle) clearTimeout(idle);
  idle = setTimeout(releaseEstimator, ESTIMATOR_IDLE_MS);
  idle.unref();
  return estimator;
}

/** Let the estimator and its dictionaries go (rebuilt at the next check). */
export function releaseEstimator(): void {
  if (idle) clearTimeout(idle);
  idle = undefined;
  estimator = undefined;
  const require = createRequire(import.meta.url);
  for (const m of ESTIMATOR_MODULES) delete require.cache[require.resolve(m)];
}

/**
 * A password a person may choose under `policy`; `personal` are words of the account (id, name) that make a
 * password guessable. @throws LkError LK_VALIDATION (length), LK_PASSWORD_WEAK (strength, with the estimator's
 * warning and suggestions).
 */
export function checkNewPassword(password: string, policy: PasswordPolicy = DEFAULT_PASSWORD_POLICY, personal: readonly string[] = []): void {
  const min = Math.max(12, policy.minLength);
  if (password.length < min) throw new LkError('LK_VALIDATION', `a password has at least ${min} characters`);
  if (password.length > 1024) throw new LkError('LK_VALIDATION', 'a password has at most 1024 characters');
  const words = personal.flatMap((p) => [p, ...p.split(/[\s._@-]+/)]).filter((w) => w.length >= 3);
  const r = zxcvbn().check(password.slice(0, ESTIMATED_CHARS), words);
  if (r.score < policy.minStrength) {
    const why = r.feedback.warning ?? 'it is easy to guess';
    throw new LkError('LK_PASSWORD_WEAK', `the password is too weak (strength ${r.score} of 4, the site asks for ${policy.minStrength}): ${why}${r.feedback.suggestions.length > 0 ? ` ${r.feedback.suggestions.join(' ')}` : ''}`, {
      score: r.score, minStrength: policy.minStrength, warning: r.feedback.warning, suggestions: [...r.feedback.suggestions],
    });
  }
}

/** Whether a password set at `setAt` (epoch ms) has outlived the policy at `now`. */
export function passwordExpired(setAt: number, now: number, policy: PasswordPolicy): boolean {
  return policy.maxAgeDays > 0 && now - setAt >= policy.maxAgeDays * 86_400_000;
}
