import { defineConfig } from 'vitest/config';
import LongestFirst from './test/sequencer.js';

/**
 * Test files that need a process of their own: what they assert is the state of a fresh process (a module not yet
 * loaded). Every other file shares its worker's process with the files before it (vitest's `isolate: false`): the
 * modules of linekeeper and its libraries are loaded once per worker instead of once per file, which was a sixth of
 * the suite's time. A file must therefore leave the process as it found it (timers cleared, spies restored,
 * environment put back), and must not depend on what another file left (api-tls: openssl's environment).
 */
const OWN_PROCESS = ['test/unit/password-estimator-lifetime.unit.spec.ts'];

export default defineConfig({
  test: {
    // Integration tests start real OPC UA / Modbus / HTTP servers on loopback; on a
    // two-core edge box they must not all start at once. Three files at a time on two cores: a third of the files
    // wait more than they compute (a paced line, a browser, a child process on the wall clock: the console's Line
    // page used 25 s of CPU in 41 s), so a third worker fills the cores they leave idle — 412 s instead of 449 s for
    // the suite in a fresh clone (2026-11-28), near the two cores' floor of its CPU.
    pool: 'forks',
    maxWorkers: 3,
    // Hang guards, not speed limits: a daemon or simulator start takes seconds on an idle box, but took
    // over 60 s in a beforeAll while eight helpers loaded the two cores. A test asserts order and outcome;
    // these only stop a test that hangs.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // the first start of a test site, made once per run and copied (test/helpers/first-start.ts)
    globalSetup: ['test/global-setup.ts'],
    // the longest files first, also in a fresh clone (test/sequencer.ts)
    sequence: { sequencer: LongestFirst },
    // the JSON report lets .ci/run print the plain `N passed, N failed` closing line
    reporters: ['default', ['json', { outputFile: '.tmp/vitest-report.json' }]],
    projects: [
      { extends: true, test: { name: 'shared', include: ['test/**/*.{unit,int,e2e}.spec.ts'], exclude: OWN_PROCESS, isolate: false } },
      { extends: true, test: { name: 'own-process', include: OWN_PROCESS, isolate: true } },
    ],
  },
});
