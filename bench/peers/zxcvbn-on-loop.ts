/**
 * The peer of bench/password.bench.ts: zxcvbn-ts as its documentation shows it — one `ZxcvbnFactory` with the
 * common and English dictionaries, `check(password, userInputs)` called where the password arrives (on the event
 * loop), the first 100 characters as linekeeper estimates. What a team adding a strength estimate to a Node
 * service would write.
 */
import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import * as common from '@zxcvbn-ts/language-common';
import * as en from '@zxcvbn-ts/language-en';

const zxcvbn = new ZxcvbnFactory({ dictionary: { ...common.dictionary, ...en.dictionary }, graphs: common.adjacencyGraphs, translations: en.translations });

/** The estimator's score (0–4) of `password`, computed on this thread. */
export function scoreOnLoop(password: string, words: readonly string[]): number {
  return zxcvbn.check(password.slice(0, 100), [...words]).score;
}
