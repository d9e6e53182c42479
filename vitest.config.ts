import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.{unit,int,e2e}.spec.ts'],
    // Integration tests start real OPC UA / Modbus / HTTP servers on loopback; on a
    // two-core edge box they must not all start at once.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // the JSON report lets .ci/run print the plain `N passed, N failed` closing line
    reporters: ['default', ['json', { outputFile: '.tmp/vitest-report.json' }]],
  },
});
