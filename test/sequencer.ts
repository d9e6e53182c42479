/**
 * The order test files start in: the longest first, so that the two workers finish together (the last file to start
 * is a short one). vitest orders by the durations of the previous run, which it keeps in node_modules/.vite; a fresh
 * clone has none, and vitest's fallback — the largest file first — left the core simulator's seeds, small files of
 * long runs, for the end. Until this checkout has run the suite once, the seconds below (each file's time in a
 * fresh-clone `.ci/run`, 2026-11-28; the three console files added later from a later run of the same day; files
 * under 5 s are not listed) stand in for them. An order only: no test
 * depends on it, and a file missing here or renamed merely starts later.
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const SECONDS: Readonly<Record<string, number>> = {
  'test/e2e/console.e2e.spec.ts': 71,
  // the install package unpacked, then its IQ and a whole OQ from it (2026-11-28, measured on a loaded machine)
  'test/integration/package.int.spec.ts': 60,
  'test/e2e/console-line.e2e.spec.ts': 31,
  'test/e2e/console-presence.e2e.spec.ts': 30,
  'test/e2e/console-decisions.e2e.spec.ts': 17,
  'test/integration/serve.int.spec.ts': 36,
  'test/integration/run-renamed-site.int.spec.ts': 35,
  'test/integration/cli-daemon.int.spec.ts': 30,
  'test/integration/run-fault.int.spec.ts': 29,
  'test/integration/release-offload.int.spec.ts': 27,
  'test/integration/api-fuzz.int.spec.ts': 25,
  'test/integration/evidence-daemon.int.spec.ts': 24,
  'test/integration/core-sim-b.int.spec.ts': 22,
  'test/integration/run-engine.int.spec.ts': 21,
  'test/integration/validate-oq.int.spec.ts': 20,
  'test/integration/api-run.int.spec.ts': 19,
  'test/integration/sim-watchdog.int.spec.ts': 17,
  'test/integration/sim-process.int.spec.ts': 17,
  'test/integration/sim-nir-vision.int.spec.ts': 16,
  'test/integration/sdk-ts.int.spec.ts': 16,
  'test/integration/models-golden.int.spec.ts': 15,
  'test/integration/sdk-docs.int.spec.ts': 15,
  'test/integration/run-lifecycle.int.spec.ts': 14,
  'test/unit/audit-tamper.unit.spec.ts': 14,
  'test/integration/core-sim-a.int.spec.ts': 13,
  'test/integration/audit-crash.int.spec.ts': 13,
  'test/e2e/console-desk.e2e.spec.ts': 12,
  'test/integration/cli-users.int.spec.ts': 11,
  'test/integration/sdk-python.int.spec.ts': 10,
  'test/integration/twin-rehearsal.int.spec.ts': 10,
  'test/integration/audit-verify-parallel.int.spec.ts': 9,
  'test/integration/api-tenancy.int.spec.ts': 9,
  'test/integration/sim-cli.int.spec.ts': 9,
  'test/integration/moves-escalations.int.spec.ts': 9,
  'test/integration/release-package.int.spec.ts': 8,
  'test/integration/opcua-watchdog.int.spec.ts': 8,
  'test/integration/opcua-connector.int.spec.ts': 8,
  'test/integration/engine-durable.int.spec.ts': 8,
  'test/integration/daemon-watchdog.int.spec.ts': 7,
  'test/integration/daemon-start.int.spec.ts': 7,
  'test/integration/modbus-connector.int.spec.ts': 7,
  'test/integration/api-sso.int.spec.ts': 7,
  'test/unit/architecture.unit.spec.ts': 6,
  'test/integration/tcp-proxy.int.spec.ts': 6,
  'test/integration/metrics-exposition.int.spec.ts': 6,
  'test/integration/run-fidelity.int.spec.ts': 6,
  'test/integration/api-errors.int.spec.ts': 6,
  'test/integration/audit-bundle.int.spec.ts': 5,
  'test/integration/modbus-late-reply.int.spec.ts': 5,
};

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const key = (f: TestSpecification): string => relative(this.ctx.config.root, f.moduleId).split('\\').join('/');
    const measured = files.filter((f) => this.ctx.cache.getFileTestResults(`${f.project.name}:${key(f)}`)).length;
    if (measured >= files.length / 2) return sorted;
    // a stable sort: files without a figure keep vitest's order among themselves, after the listed ones
    return sorted.map((f, i) => ({ f, i, s: SECONDS[key(f)] ?? 0 })).sort((a, b) => b.s - a.s || a.i - b.i).map((x) => x.f);
  }
}
