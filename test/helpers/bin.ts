/**
 * The `linekeeper` command as it is installed, for tests that start it as a child process: `node bin/linekeeper.js`
 * runs the build in dist/ (made by `npm ci`'s `prepare`; rebuilt by test/global-setup.ts when a source is newer), as
 * the package ships it — half the start-up of the sources through tsx.
 */
import { fileURLToPath } from 'node:url';

/** The arguments to Node that run `linekeeper`. */
export const LINEKEEPER_BIN: readonly string[] = [fileURLToPath(new URL('../../bin/linekeeper.js', import.meta.url))];
