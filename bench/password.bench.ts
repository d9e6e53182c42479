/**
 * The heartbeat while people choose passwords. A password's strength estimate (zxcvbn-ts: dictionaries, keyboard
 * patterns, repeats) grows faster than linearly with its length: hundreds of milliseconds for a long one. A
 * heartbeat timer ticks every 100 ms on the event loop (what holds the loop holds a PLC's heartbeat) while 20
 * passwords of 16–100 characters are checked one after the other, as a site's people choosing theirs:
 * - ours: `checkNewPassword` (src/api/password-policy.ts), the estimate in its own thread at a lower priority;
 * - peer: zxcvbn-ts called on the loop, as its documentation shows (bench/peers/zxcvbn-on-loop.ts).
 * Both give the same scores (asserted). Reported: each side's worst tick lateness and p99, and the time the 20
 * checks took. Target: no tick later than one heartbeat period (100 ms) while passwords are checked.
 */
import { accountWords, checkNewPassword, releaseEstimator } from '../src/api/password-policy.js';
import { LkError } from '../src/errors.js';
import { heartbeatJitterDuring, percentile, report } from './lib.js';
import { scoreOnLoop } from './peers/zxcvbn-on-loop.js';

const ALPHABET = 'aZ3$kL9!qW2@xE7#rT5%yU1^iO8&pA4*sD6(fG0)hJ';
const passwords = Array.from({ length: 20 }, (_, k) => {
  const n = 16 + Math.round((84 * k) / 19);
  return k % 3 === 0 ? `Quarantine lot ${k} of the blue granulate, line ${k}`.repeat(3).slice(0, n) : Array.from({ length: n }, (_, i) => ALPHABET[(i * 7 + k) % ALPHABET.length]).join('');
});
const words = ['m.rossi', 'Maria Rossi'];

/** Our verdict's score: asked with minStrength 5 (above 4), so each check is refused carrying its score. */
const ourScore = async (pw: string): Promise<number> => {
  try {
    await checkNewPassword(pw, { minLength: 12, minStrength: 5, maxAgeDays: 0, history: 0 }, words);
  } catch (err) {
    if (LkError.is(err, 'LK_PASSWORD_WEAK')) return (err.detail as { score: number }).score;
    throw err;
  }
  throw new Error('a check with minStrength 5 was accepted');
};

const personal = accountWords(words);
// warm both (the dictionaries indexed, the thread started)
await ourScore(passwords[0]!);
scoreOnLoop(passwords[0]!, personal);

const ours: number[] = [];
const peer: number[] = [];
const o = await heartbeatJitterDuring(100, async () => {
  for (const pw of passwords) ours.push(await ourScore(pw));
});
const p = await heartbeatJitterDuring(100, async () => {
  for (const pw of passwords) {
    peer.push(scoreOnLoop(pw, personal));
    await new Promise((r) => setImmediate(r)); // the next request's turn, as a server's would be
  }
});
if (ours.join() !== peer.join()) throw new Error(`the scores differ: ours ${ours.join()} vs peer ${peer.join()}`);
await releaseEstimator();

const worst = (late: readonly number[]): number => Math.max(0, ...late);
report({
  name: 'heartbeat while 20 passwords (16–100 characters) are checked',
  unit: 'ms worst tick lateness',
  ours: { label: 'linekeeper checkNewPassword, the estimate in its own thread', value: worst(o.late) },
  peer: { label: 'zxcvbn-ts 4 check() on the event loop', value: worst(p.late) },
  higherIsBetter: false,
  target: 'no tick later than one period (100 ms)',
  extra: {
    ours_p99_ms: percentile(o.late, 99), peer_p99_ms: percentile(p.late, 99),
    ours_loop_max_ms: o.loopMaxMs, peer_loop_max_ms: p.loopMaxMs,
    ours_checks_ms: o.ms, peer_checks_ms: p.ms, scores: ours.join(''),
  },
});
