/**
 * The `linekeeper` command as it is installed, for tests that start it as a child process: `node bin/linekeeper.js`
 * runs the build in dist/ (made by `npm ci`'s `prepare`; rebuilt by test/global-setup.ts when a source is newer), as
 * the package ships it — half the start-up of the sources through tsx.
 */
import { fileURLToPath } from 'node:url';

/** The arguments to Node that run `linekeeper`. */
export const LINEKEEPER_BIN: readonly string[] = [fileURLToPath(new URL('../../bin/linekeeper.js', import.meta.url))];

/**
 * The built module of a source file (`src/audit/verify-parallel.ts` → dist/src/audit/verify-parallel.js), for a test
 * of what only the build has: a worker thread started from the compiled file beside its module, as the package
 * runs it, instead of one that registers tsx's loader and compiles its sources again at every start.
 */
export const builtModule = (source: string): string => new URL(`../../dist/${source.replace(/\.ts$/, '.js')}`, import.meta.url).href;
