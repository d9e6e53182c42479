import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { LkError } from '../../src/errors.js';

const require = createRequire(import.meta.url);
const loaded = (): boolean => require.resolve('@zxcvbn-ts/language-en') in require.cache;

describe('the password strength estimator is held only while passwords are chosen', () => {
  it('its dictionaries are not loaded with the module, are loaded by a check, and are let go by a release; a later check rebuilds it', async () => {
    const { checkNewPassword, releaseEstimator } = await import('../../src/api/password-policy.js');
    expect(loaded()).toBe(false);
    const weak = (): unknown => {
      try {
        checkNewPassword('password1234');
        return 'accepted';
      } catch (err) {
        return LkError.is(err) ? err.code : err;
      }
    };
    expect(weak()).toBe('LK_PASSWORD_WEAK');
    expect(loaded()).toBe(true);
    releaseEstimator();
    expect(loaded()).toBe(false);
    // the same verdict from a rebuilt estimator
    expect(weak()).toBe('LK_PASSWORD_WEAK');
    expect(() => checkNewPassword('Quarantine-lot 7 of the blue granulate')).not.toThrow();
    releaseEstimator();
  }, 60_000);
});
