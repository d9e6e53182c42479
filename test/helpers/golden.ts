/**
 * The golden batch (test/fixtures/golden-batch): the agent calls of a real run of B-1042 on the embedded
 * simulator, exported with `exportAgentCalls`, and the twin artefact that run used — in memory, or as a data
 * directory with the run in its store and the twin in its registry.
 */
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ExportedAgentCalls } from '../../src/engine/run/replay.js';
import { twinModelOf } from '../../src/models/artefacts.js';
import type { ModelManifest } from '../../src/models/registry.js';
import { RunStore } from '../../src/store/run-store.js';
import { openStore } from '../../src/store/store.js';
import type { TwinModel } from '../../src/twin/simulate.js';

export const GOLDEN_DIR = fileURLToPath(new URL('../fixtures/golden-batch/', import.meta.url));
const TWIN_DIR = join(GOLDEN_DIR, 'process-twin-v1');

/** The exported agent calls of the golden batch. */
export function goldenCalls(): ExportedAgentCalls {
  return JSON.parse(readFileSync(join(GOLDEN_DIR, 'agent-calls.json'), 'utf8')) as ExportedAgentCalls;
}

/** The golden batch's twin as the registry gives it to the run engine (`twinModelOf` of manifest + artefact). */
export function goldenTwin(): TwinModel {
  const manifest = JSON.parse(readFileSync(join(TWIN_DIR, 'manifest.json'), 'utf8')) as ModelManifest;
  return twinModelOf({ manifest, artefact: JSON.parse(readFileSync(join(TWIN_DIR, 'artefact.json'), 'utf8')) });
}

/**
 * A data directory with the golden run (status SUCCEEDED) and its agent calls in the store, and its twin
 * registered for the tenant (the fixture's manifest and artefact, byte for byte).
 */
export function buildGoldenDataDir(dataDir: string): ExportedAgentCalls {
  const g = goldenCalls();
  const store = openStore({ dataDir });
  try {
    const runs = new RunStore(store.db);
    const last = g.calls.at(-1)?.at ?? 0;
    store.tx((t) => {
      runs.insertRun(t, {
        id: g.run.id, tenant: g.run.tenant, batch: g.run.batch, line: g.run.line, product: g.run.product, tooling: g.run.tooling,
        goal: `golden batch ${g.run.batch}`, request: {}, limits: {}, autonomy: 'L2', record: {}, recordSha: '0'.repeat(64), seed: g.run.seed,
        startedBy: 'o.operator', createdAt: g.calls[0]?.at ?? 0,
      }, []);
      for (const c of g.calls) {
        const id = runs.appendAgentCall(t, { run: g.run.id, at: c.at, step: c.step, agent: c.agent, fn: c.fn, model: c.model, input: c.input, output: c.output });
        if (id !== c.id) throw new Error(`golden call ${c.id} stored as ${id}`);
      }
      runs.setStatus(t, g.run.id, 'SUCCEEDED', null, last, true);
    });
  } finally {
    store.close();
  }
  cpSync(TWIN_DIR, join(dataDir, 'models', g.run.tenant, 'process-twin-v1'), { recursive: true });
  return g;
}
