/**
 * Once per `vitest run`:
 * - the folder of first-start templates (test/helpers/first-start.ts), removed at the end. A fresh folder per run, so
 *   a template never outlives the code that made it;
 * - the built `linekeeper` (dist/, what `bin/linekeeper.js` runs and the package ships), which the tests that run
 *   the command as a child process start (test/helpers/bin.ts): `npm ci` builds it (the `prepare`
 *   script); when a source file is newer than the build (an edit since), it is built again here, so no test runs
 *   a stale binary.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** A file the build writes (tsc writes every output at each build), whose time says when it was built. */
const BUILT = join(ROOT, 'dist', 'src', 'cli', 'main.js');

/** The newest modification time of the TypeScript sources under `dir`. */
function newestSource(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestSource(p));
    else if (e.name.endsWith('.ts')) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

function ensureBuilt(): void {
  const built = existsSync(BUILT) ? statSync(BUILT).mtimeMs : 0;
  if (Math.max(newestSource(join(ROOT, 'src')), newestSource(join(ROOT, 'connectors'))) <= built) return;
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, stdio: 'inherit' });
}

/** The environment variable naming the run's template folder. */
export const TEMPLATE_ENV = 'LK_TEST_FIRST_STARTS';

export default function setup(): () => void {
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'lk-first-starts-'));
  process.env[TEMPLATE_ENV] = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
