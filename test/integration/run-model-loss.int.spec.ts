/**
 * R8, model lost mid-run: the twin's artefact no longer matches its SHA-256 while the press runs. The engine
 * must revert the line to its last known-good recipe ACTIVELY (not wait for a heartbeat to lapse), through
 * the guarded writer with an audited intent and outcome per PLC, drop the agents that use the twin to L0,
 * record `model.lost`, and hold the run for a person; a resumed step then proposes nothing to a LOST PLC. On
 * virtual time (test/helpers/virtual-line.ts).
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { every } from '../../src/clock.js';
import type { Daemon } from '../../src/daemon.js';
import { autonomyLevels, setAutonomy } from '../../src/store/autonomy-store.js';
import { artefactFile } from '../../src/models/registry.js';
import { auditOfRun, makeRunSite, type RunSite } from '../helpers/run-site.js';
import { virtualLine, type VirtualLine } from '../helpers/virtual-line.js';

const T = 'acme-pharma';
let site: RunSite;
let line: VirtualLine;
let d: Daemon;

beforeAll(async () => {
  site = makeRunSite({ timeScale: 600, batches: { 'B-2101': 40_000 } });
  line = virtualLine(site);
  d = await line.boot({ pollMs: 100 });
  setAutonomy(d.store, d.policy.bundle!, { tenant: T, agent: 'agent.compress_fill', to: 'L3', by: { person: 'q.russo', role: 'qa_reviewer' }, changeRef: 'CC-2026-0151', reason: 'bounded autonomy on low-risk compression setpoints' });
}, 120_000);

afterAll(async () => {
  await d?.stop('test done');
  line?.close();
  site?.cleanup();
});

describe('a model lost during a run [R8]', () => {
  it('[ERR-LKG] reverts every PLC to LKG through the guarded writer, drops the twin agents to L0 and holds the run', async () => {
    const plant = line.plant;
    const run = d.engine.start({ tenant: T, request: 'run batch B-2101 on line-3, keep weight and hardness on target', by: 'o.operator' });
    const presence = every(line.clock, 5_000, () => d.engine.presence('o.operator'));
    try {
      await line.until('the press step to run', () => d.engine.get(T, run.id).steps.find((s) => s.name === 'compress.press')?.status === 'RUNNING');
      const revertsBefore = plant.supervisor('press').revertCount;
      expect(plant.supervisor('press').state).toBe('ATTENDED');
      // the artefact on disk no longer matches the registry's hash
      appendFileSync(artefactFile(site.data, T, 'process-twin-v1'), ' ');
      const held = await line.until('the run to be held', () => {
        const v = d.engine.get(T, run.id);
        return v.status !== 'RUNNING' && v;
      });
      expect(held.status).toBe('HELD');
      expect(held.reason).toMatch(/twin model lost: LK_MODEL_CORRUPT/);
      const step = held.steps.find((s) => s.name === 'compress.press')!;
      expect(step.status).toBe('HELD');

      // the line is on its last known-good recipe, by command of linekeeper (not by a lapsed heartbeat)
      for (const eq of ['blender', 'fluidbed', 'press', 'coater', 'nir', 'vision', 'plc']) {
        const s = plant.supervisor(eq);
        expect([eq, s.state, s.activeRecipe]).toEqual([eq, 'LOST', s.lkg.id]);
        expect(plant.setpoints(eq)).toEqual({ ...plant.setpoints(eq), ...s.lkg.setpoints });
      }
      expect(plant.supervisor('press').revertCount).toBe(revertsBefore + 1);

      // each revert is an audited intent and outcome of the run, and the loss itself is recorded
      const entries = [...auditOfRun(d.store, T, run.id).values()];
      const intents = entries.filter((e) => e.action === 'plc.revert_lkg' && e.kind === 'intent');
      const outcomes = entries.filter((e) => e.action === 'plc.revert_lkg' && e.kind === 'outcome');
      expect(intents.map((e) => e.subject.setpoint).sort()).toEqual(['blender', 'coater', 'fluidbed', 'nir', 'plc', 'press', 'vision'].map((e) => `${e}.SupervisorState`));
      expect(outcomes).toHaveLength(intents.length);
      for (const o of outcomes) expect((o.result as { ok: boolean }).ok).toBe(true);
      const lost = entries.find((e) => e.action === 'model.lost');
      expect(lost?.kind).toBe('watchdog');
      expect(lost?.reason).toMatch(/LK_MODEL_CORRUPT/);

      // the agents that act on the twin's predictions are in shadow now; raising them again is a person's decision
      for (const a of ['agent.compress_fill', 'agent.granulate_dry', 'agent.coat_dry', 'agent.quality_conf']) {
        expect(autonomyLevels(d.store.db, T, d.policy.bundle!, a, 'press.MainForce').agent).toBe('L0');
      }
      const events = d.engine.runs.events(run.id).filter((e) => e.kind === 'watchdog');
      expect(events.some((e) => /model lost \(LK_MODEL_CORRUPT\): 7\/7 PLCs reverted to LKG/.test(e.summary))).toBe(true);
    } finally {
      presence();
    }
  });
});
