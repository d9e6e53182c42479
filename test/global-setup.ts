/**
 * Once per `vitest run`: the folder of first-start templates (test/helpers/first-start.ts), removed at the end. A
 * fresh folder per run, so a template never outlives the code that made it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The environment variable naming the run's template folder. */
export const TEMPLATE_ENV = 'LK_TEST_FIRST_STARTS';

export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'lk-first-starts-'));
  process.env[TEMPLATE_ENV] = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
