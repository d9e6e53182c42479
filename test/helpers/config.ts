import { loadConfig } from '../../src/config/load.js';
import { LkError } from '../../src/errors.js';

/** The LkError with which linekeeper refuses the configuration `file` (the test fails when it is accepted). */
export function configRefusal(file: string): LkError {
  try {
    loadConfig(file);
  } catch (e) {
    if (LkError.is(e)) return e;
    throw e;
  }
  throw new Error('expected the configuration to be refused');
}
