/**
 * Once per `vitest run`:
 * - the folder of first-start templates (test/helpers/first-start.ts), removed at the end. A fresh folder per run, so
 *   a template never outlives the code that made it;
 * - the built `linekeeper` (dist/, what `bin/linekeeper.js` runs and the package ships), which the tests that run
 *   the command as a child process start (test/helpers/bin.ts): `npm ci` builds it (the `prepare`
 *   script); when a source file is newer than the build (an edit since), it is built again here, so no test runs
 *   a stale binary.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt } from './helpers/bin.js';

/** The environment variable naming the run's template folder. */
export const TEMPLATE_ENV = 'LK_TEST_FIRST_STARTS';

export default function setup(): () => void {
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'lk-first-starts-'));
  process.env[TEMPLATE_ENV] = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
