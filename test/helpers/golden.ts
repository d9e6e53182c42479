/**
 * The golden batch (test/fixtures/golden-batch): the agent calls of a real run of B-1042 on the embedded
 * simulator, exported with `exportAgentCalls`, and the twin that run used — its artefact, byte for byte, and
 * its model card — in memory, or as a data directory with the run in its store and the twin in its registry.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ExportedAgentCalls } from '../../src/engine/run/replay.js';
import { twinModelOf } from '../../src/models/artefacts.js';
import { changeStatus } from '../../src/models/change.js';
import { artefactFile, registerModel, type LoadedModel, type ModelSummary, type RegisterInput } from '../../src/models/registry.js';
import { RunStore } from '../../src/store/run-store.js';
import { openStore, type Store } from '../../src/store/store.js';
import type { ModelCard } from '../../src/twin/card.js';
import type { TwinModel } from '../../src/twin/simulate.js';
import { APPROVERS, QA, SITE } from './models.js';

export const GOLDEN_DIR = fileURLToPath(new URL('../fixtures/golden-batch/', import.meta.url));
const TWIN_DIR = join(GOLDEN_DIR, 'process-twin-v1');
/** The registry id and version the golden run recorded for its twin (`process-twin-v1@1`). */
const TWIN_ID = 'process-twin-v1';

/** The exported agent calls of the golden batch. */
export function goldenCalls(): ExportedAgentCalls {
  return JSON.parse(readFileSync(join(GOLDEN_DIR, 'agent-calls.json'), 'utf8')) as ExportedAgentCalls;
}

/** The golden twin's artefact.json, as bytes: what the registry hashes. */
function artefactBytes(): Buffer {
  return readFileSync(join(TWIN_DIR, 'artefact.json'));
}

/** The golden twin's model card (card.json: the card the fitting writes for this artefact, acceptance criteria included). */
export function goldenCard(): ModelCard {
  return JSON.parse(readFileSync(join(TWIN_DIR, 'card.json'), 'utf8')) as ModelCard;
}

/**
 * What registering the golden twin for `tenant` takes: its artefact and card (the card's tenant replaced), pinned
 * to the test site. `params` replaces the twin's parameters (a refit that came out different).
 */
export function goldenTwinInput(tenant: string, params?: TwinModel['params']): RegisterInput {
  const artefact = JSON.parse(artefactBytes().toString('utf8')) as { kind: 'twin'; params: TwinModel['params']; validRanges: TwinModel['validRanges'] };
  const card = goldenCard();
  return {
    tenant, analyte: card.analyte, family: card.family, kind: 'twin',
    artefact: params ? { ...artefact, params } : artefact,
    card: { ...card, tenant }, sites: [SITE], by: 'p.bianchi', reason: 'golden batch fixture',
  };
}

/**
 * The golden twin as the registry gives it to the run engine: `twinModelOf` of its row (validated, pinned to the
 * test site, hashed over the fixture's bytes) and its artefact. The row is built in memory: only its id, version,
 * kind and hash matter to a twin; the times are the golden run's first call.
 */
export function goldenLoaded(): LoadedModel {
  const bytes = artefactBytes();
  const card = goldenCard();
  const at = new Date(goldenCalls().calls[0]?.at ?? 0).toISOString();
  const model: ModelSummary = {
    tenant: card.tenant, id: TWIN_ID, analyte: card.analyte, family: card.family, version: 1, kind: 'twin',
    sha256: createHash('sha256').update(bytes).digest('hex'), status: 'validated', sites: [SITE], card,
    createdAt: at, createdBy: 'p.bianchi', changedAt: at, changedBy: QA.by, changeRef: 'CC-2026-0300', auditSeq: 0,
  };
  return { model, artefact: JSON.parse(bytes.toString('utf8')) as unknown };
}

/** The golden batch's twin, ready for `simulate` and for replay. */
export function goldenTwin(): TwinModel {
  return twinModelOf(goldenLoaded());
}

/** Promote a draft through shadow to validated under change control, as a person would (golden gate included). */
export function promoteToValidated(store: Store, dataDir: string, tenant: string, id: string): ModelSummary {
  let m: ModelSummary | undefined;
  for (const to of ['shadow', 'validated'] as const) {
    m = changeStatus(store, dataDir, { tenant, id, to, ...QA, changeRef: 'CC-2026-0300', reason: `test: ${to}` }, { approvers: APPROVERS }).model;
  }
  return m!;
}

/**
 * A data directory with the golden run (status SUCCEEDED) and its agent calls in the store, and its twin in the
 * registry as the run used it: registered for the run's tenant as `process-twin-v1`, promoted to validated, its
 * artefact file the fixture's, byte for byte (checked: a replay against it must put back exactly what the run got).
 * @throws Error when the stored run or model would not be the fixture's (a broken fixture, not a test failure to hide).
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
    const m = registerModel(store, dataDir, goldenTwinInput(g.run.tenant));
    if (m.id !== TWIN_ID || m.version !== 1) throw new Error(`the golden twin registered as ${m.id}@${m.version}, not ${TWIN_ID}@1`);
    if (!readFileSync(artefactFile(dataDir, g.run.tenant, m.id)).equals(artefactBytes())) throw new Error('the registry wrote the golden twin in other bytes than the fixture');
    promoteToValidated(store, dataDir, g.run.tenant, m.id);
  } finally {
    store.close();
  }
  return g;
}
