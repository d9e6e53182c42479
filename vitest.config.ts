import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.{unit,int,e2e}.spec.ts'],
    // Integration tests start real OPC UA / Modbus / HTTP servers on loopback; on a
    // two-core edge box they must not all start at once.
    pool: 'forks',
    maxWorkers: 2,
    // Hang guards, not speed limits: a daemon or simulator start takes seconds on an idle box, but took
    // over 60 s in a beforeAll while eight helpers loaded the two cores. A test asserts order and outcome;
    // these only stop a test that hangs.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // the JSON report lets .ci/run print the plain `N passed, N failed` closing line
    // the first start of a test site, made once per run and copied (test/helpers/first-start.ts)
    globalSetup: ['test/global-setup.ts'],
    reporters: ['default', ['json', { outputFile: '.tmp/vitest-report.json' }]],
  },
});
