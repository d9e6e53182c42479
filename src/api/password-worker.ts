/**
 * The password strength estimator's thread (started by password-policy.ts): zxcvbn-ts with its common and English
 * dictionaries, indexed once when the thread starts, answering one estimate per message. Its matching grows faster
 * than linearly with the password (hundreds of milliseconds for a long one): on the daemon's event loop it would
 * hold back the heartbeats and every request while a person chooses a password. The thread runs at a lower
 * priority than the loop (src/engine/worker-priority.ts).
 */
import { createRequire } from 'node:module';
import { parentPort } from 'node:worker_threads';
import type * as Core from '@zxcvbn-ts/core';
import type * as Common from '@zxcvbn-ts/language-common';
import type * as En from '@zxcvbn-ts/language-en';
import { lowerThreadPriority } from '../engine/worker-priority.js';

/** One estimate asked for: the password (cut to the characters the policy estimates) and the account's words. */
export interface EstimateRequest {
  readonly id: number;
  readonly password: string;
  readonly words: readonly string[];
}

/** The estimator's verdict, or why it could not give one. */
export type EstimateReply =
  | { readonly id: number; readonly score: number; readonly warning: string | null; readonly suggestions: readonly string[] }
  | { readonly id: number; readonly error: string };

if (parentPort) {
  const port = parentPort;
  lowerThreadPriority();
  const require = createRequire(import.meta.url);
  const { ZxcvbnFactory } = require('@zxcvbn-ts/core') as typeof Core;
  const common = require('@zxcvbn-ts/language-common') as typeof Common;
  const en = require('@zxcvbn-ts/language-en') as typeof En;
  const zxcvbn = new ZxcvbnFactory({ dictionary: { ...common.dictionary, ...en.dictionary }, graphs: common.adjacencyGraphs, translations: en.translations });
  port.on('message', (m: EstimateRequest) => {
    let reply: EstimateReply;
    try {
      const r = zxcvbn.check(m.password, [...m.words]);
      reply = { id: m.id, score: r.score, warning: r.feedback.warning ?? null, suggestions: [...r.feedback.suggestions] };
    } catch (err) {
      reply = { id: m.id, error: err instanceof Error ? err.message : String(err) };
    }
    port.postMessage(reply);
  });
}
