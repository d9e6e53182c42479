/**
 * The site's password policy (21 CFR 11.300(b): passwords are checked and revised periodically): a minimum length, a
 * minimum strength estimated by zxcvbn-ts (dictionaries of common passwords, names and words, keyboard patterns,
 * repeats and sequences — offline, nothing is fetched), a maximum age after which the password must be changed,
 * and a history of recent passwords that may not be chosen again. Pure apart from the estimator's tables.
 */
import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import * as common from '@zxcvbn-ts/language-common';
import * as en from '@zxcvbn-ts/language-en';
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

/** The estimator, built at first use (its dictionaries take a moment to index). */
function zxcvbn(): ZxcvbnFactory {
  return (estimator ??= new ZxcvbnFactory({ dictionary: { ...common.dictionary, ...en.dictionary }, graphs: common.adjacencyGraphs, translations: en.translations }));
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
