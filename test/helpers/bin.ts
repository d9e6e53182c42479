/**
 * The `linekeeper` command as it is installed, for tests that start it as a child process: `node bin/linekeeper.js`
 * runs the build in dist/ (made by `npm ci`'s `prepare`; rebuilt by {@link ensureBuilt}, which the global setup
 * calls, when a source is newer), as the package ships it — half the start-up of the sources through tsx.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
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

/**
 * dist/ as `npm run build` makes it from the sources as they are now: built again when a file of src/ or
 * connectors/ is newer than the build (an edit since), so no test runs a stale command or child.
 */
export function ensureBuilt(): void {
  const built = existsSync(BUILT) ? statSync(BUILT).mtimeMs : 0;
  if (Math.max(newestSource(join(ROOT, 'src')), newestSource(join(ROOT, 'connectors'))) <= built) return;
  // `npm run build`'s build: the compile, and the help manifest written from the compiled commands
  execFileSync(process.execPath, [join(ROOT, 'tools/build.mjs')], { cwd: ROOT, stdio: 'inherit' });
}

let childScriptsBuilt = false;

/**
 * `node <args>` for a child script of the fault tests (`test/fault/run-daemon.ts` and its siblings), compiled
 * beside the build: test/fault/*.ts → dist/test/fault/*.js, type annotations stripped by esbuild and nothing
 * bundled, so the script's `../../src/…` imports are the built modules of dist/src that `linekeeper` itself runs.
 * Under tsx's loader, which compiled the daemon's sources again at every start, a child took 1.3–1.8 s more CPU
 * to start (importing the daemon: 3.5–4.5 s against 2.1–3.1 s from dist). Compiled once per process (a few tens
 * of ms), each file written whole (a temporary name, then renamed): workers compiling at once never read half a
 * file. dist/test is not shipped (tools/package.mjs leaves out every test folder).
 */
export function childScript(source: string): string[] {
  if (!/^test\/fault\/[^/]+\.ts$/.test(source)) throw new Error(`not a child script of test/fault: ${source}`);
  if (!childScriptsBuilt) {
    ensureBuilt();
    const dir = join(ROOT, 'test', 'fault');
    const entryPoints = readdirSync(dir).filter((f) => f.endsWith('.ts')).map((f) => join(dir, f));
    const out = buildSync({ entryPoints, outdir: join(ROOT, 'dist', 'test', 'fault'), bundle: false, format: 'esm', platform: 'node', target: 'node20', write: false, logLevel: 'error' });
    for (const f of out.outputFiles) {
      mkdirSync(dirname(f.path), { recursive: true });
      const tmp = `${f.path}.${process.pid}.tmp`;
      writeFileSync(tmp, f.contents);
      renameSync(tmp, f.path);
    }
    childScriptsBuilt = true;
  }
  return [fileURLToPath(builtModule(source))];
}

/** The arguments to Node that run `linekeeper`. */
export const LINEKEEPER_BIN: readonly string[] = [fileURLToPath(new URL('../../bin/linekeeper.js', import.meta.url))];

/**
 * The built module of a source file (`src/audit/verify-parallel.ts` → dist/src/audit/verify-parallel.js), for a test
 * of what only the build has: a worker thread started from the compiled file beside its module, as the package
 * runs it, instead of one that registers tsx's loader and compiles its sources again at every start.
 */
export const builtModule = (source: string): string => new URL(`../../dist/${source.replace(/\.ts$/, '.js')}`, import.meta.url).href;
