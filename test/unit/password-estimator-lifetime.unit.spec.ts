import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { LkError } from '../../src/errors.js';

const require = createRequire(import.meta.url);
const loadedHere = (): boolean => require.resolve('@zxcvbn-ts/language-en') in require.cache || require.resolve('@zxcvbn-ts/core') in require.cache;

describe('the password strength estimator runs in a thread of its own, held only while passwords are chosen', () => {
  it('no thread before a check; a check starts it, a release stops it, a later check starts it again with the same verdicts; this thread never loads its dictionaries', async () => {
    const { checkNewPassword, estimatorRunning, releaseEstimator } = await import('../../src/api/password-policy.js');
    expect(estimatorRunning()).toBe(false);
    const weak = async (): Promise<unknown> => {
      try {
        await checkNewPassword('password1234');
        return 'accepted';
      } catch (err) {
        return LkError.is(err) ? err.code : err;
      }
    };
    expect(await weak()).toBe('LK_PASSWORD_WEAK');
    expect(estimatorRunning()).toBe(true);
    await releaseEstimator();
    expect(estimatorRunning()).toBe(false);
    // the same verdict from a new thread
    expect(await weak()).toBe('LK_PASSWORD_WEAK');
    await expect(checkNewPassword('Quarantine-lot 7 of the blue granulate')).resolves.toBeUndefined();
    // the length is refused before any thread is asked
    await releaseEstimator();
    await expect(checkNewPassword('short')).rejects.toMatchObject({ code: 'LK_VALIDATION' });
    expect(estimatorRunning()).toBe(false);
    expect(loadedHere()).toBe(false);
  }, 60_000);

  it('the event loop runs while a long password is estimated (it blocked for the estimate\'s whole length before), and a release while one waits refuses it rather than accept it unchecked', async () => {
    const { checkNewPassword, releaseEstimator } = await import('../../src/api/password-policy.js');
    await checkNewPassword('warm-up: Quarantine-lot 7 of the blue granulate');
    // a 100-character password of few repeats: the estimator's costliest kind (hundreds of ms of matching)
    const long = Array.from({ length: 100 }, (_, i) => 'aZ3$kL9!qW2@xE7#rT5%yU1^iO8&pA4*sD6(fG0)hJ'[(i * 7) % 42]).join('');
    let turns = 0;
    let done = false;
    const check = checkNewPassword(long).then(() => (done = true));
    // the order, not a duration: turns of the event loop happen before the verdict arrives
    while (!done && turns < 3) {
      await new Promise((r) => setImmediate(r));
      if (!done) turns++;
    }
    expect(turns).toBe(3);
    await check;
    // a check in flight when the estimator is released is refused (LK_INTERNAL), never taken as strong
    const pending = checkNewPassword(long).then(() => 'accepted', (err: unknown) => (LkError.is(err) ? err.code : err));
    await releaseEstimator();
    expect(await pending).toBe('LK_INTERNAL');
  }, 60_000);
});
