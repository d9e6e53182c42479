/**
 * The embedded default's loop, and its fail-safe, with the real daemon on virtual time (test/helpers/virtual-line.ts:
 * the embedded plant in memory behind in-memory connectors, time scale 600, one ManualClock; the shipped policy
 * bundle and the tenant's default models):
 *
 * 1. At `--autonomy L3` (the bundle graduated compress_fill and coat_dry to L3 under CC-2026-0219) the press agent's
 *    twin-rehearsed moves are written and read back, the twin predicts the press within its card's fidelity
 *    acceptance at every round, and the specification table judges hardness and weight PASS on every sample of the
 *    batch (B-1042, 300,000 tablets).
 * 2. At `--autonomy L2` the same moves wait for the batch's reviewer: nothing is written to the press.
 * 3. A plant the twin no longer describes (the simulator's press skewed: tablets 40 % stronger at the same force)
 *    makes the model lost for the run (R8): a major MODEL_FIDELITY exception with the residuals, the line back on
 *    its last known-good recipe by command, the twin's agents at L0, the run held for a named person.
 *
 * The tests share one daemon and run in order (one run at a time on the line). No timing is asserted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SITE_TENANT } from '../../src/audit/index.js';
import { every } from '../../src/clock.js';
import type { Daemon } from '../../src/daemon.js';
import type { RunView } from '../../src/engine/run/engine.js';
import { autonomyLevels } from '../../src/store/autonomy-store.js';
import { closeOpenExceptions, QA_SIGNER } from '../helpers/exceptions.js';
import { codeOf } from '../helpers/codes.js';
import { auditOfRun, countAction, makeRunSite, rearmLostPlcs, toolLogOf, type RunSite } from '../helpers/run-site.js';
import { virtualLine, type VirtualLine } from '../helpers/virtual-line.js';

const T = 'acme-pharma';
const OPERATOR = 'o.operator';
const request = (batch: string): string => `run batch ${batch} on line-3, keep weight and hardness on target, capping risk under 1.5%`;

let site: RunSite;
let line: VirtualLine;
let d: Daemon;
let presence: (() => void) | undefined;

interface SpecRow { id: string; verdict: string; reason: string; data: { n: number; mean?: number; min?: number; max?: number } }
interface Residual { attribute: string; predicted: number; measuredMean: number | null; n: number; relPct: number | null; residual: number | null; ok: boolean; limit: { maxRelResidualPct?: number; maxAbsResidual?: number } | null }

const view = (id: string): RunView => d.engine.get(T, id);
const specOf = (id: string): SpecRow[] => ((d.engine.runs.runById(id)!.data['quality'] as { specTable: { results: SpecRow[] } }).specTable.results);
const report = (line: string): void => {
  if (process.env['LK_REPORT']) process.stdout.write(`${line}\n`);
};

/** A process engineer re-arms every PLC a watchdog left LOST (audited), and the line is ready for the next run. */
const rearm = async (): Promise<void> => {
  await rearmLostPlcs(d, T, { line });
};

async function settle(id: string, passing: readonly string[] = ['PENDING', 'RUNNING']): Promise<RunView> {
  return line.until(`run ${id} to leave ${passing.join('/')}`, () => {
    const r = view(id);
    return !passing.includes(r.status) && r;
  });
}

beforeAll(async () => {
  site = makeRunSite({ timeScale: 600, batches: { 'B-1042': 300_000, 'B-1047': 40_000, 'B-1048': 80_000 } });
  line = virtualLine(site);
  d = await line.boot({ pollMs: 100 });
  d.engine.presence(OPERATOR);
  presence = every(line.clock, 5_000, () => d.engine.presence(OPERATOR));
}, 180_000);

afterAll(async () => {
  presence?.();
  await d?.stop('test done');
  line?.close();
  site?.cleanup();
});

describe('the embedded default at L3: the agents keep the batch inside its specifications', () => {
  let run: RunView;

  it('graduated in the bundle: compress_fill and coat_dry are L3 with no person raising them at run time', () => {
    const bundle = d.policy.bundle!;
    expect(bundle.change.change_ref).toBe('CC-2026-0219');
    expect(autonomyLevels(d.store.db, T, bundle, 'agent.compress_fill', 'press.MainForce')).toEqual({ agent: 'L3', setpoint: 'L3' });
    expect(autonomyLevels(d.store.db, T, bundle, 'agent.coat_dry', 'coater.SprayRate')).toEqual({ agent: 'L3', setpoint: 'L3' });
    expect(countAction(d.store, T, 'autonomy.raise')).toBe(0);
  });

  it('B-1042 reaches the gate with press moves written and read back, and hardness and weight PASS on every sample', async () => {
    run = d.engine.start({ tenant: T, request: request('B-1042'), autonomy: 'L3', by: OPERATOR });
    const v = await settle(run.id);
    expect(v.status, `${v.reason}`).toBe('APPROVAL');
    const log = toolLogOf(d, T, run.id, true);
    for (const l of log.filter((r) => r.kind === 'ok' && /write_setpoint/.test(r.tool))) report(`${l.tool} ${l.summary}`);
    for (const e of d.engine.exceptionsOf(T, run.id)) report(`exception ${e.kind} ${e.severity}: ${e.title}`);
    for (const c of d.engine.runs.agentCalls(run.id).filter((x) => x.fn === 'compress_fill.decide')) report(`compress_fill: ${(JSON.parse(c.output) as { trace: { why: string } }).trace.why.slice(0, 300)}`);
    const press = log.filter((r) => r.tool === 'press.write_setpoint' && r.kind === 'ok').map((r) => r.result as { status: string; results?: { tag: string; verified: boolean; readBack: number | null }[] });
    const written = press.filter((o) => o.status === 'written');
    expect(written.length).toBeGreaterThan(1);
    for (const o of written) for (const r of o.results ?? []) expect([r.tag, r.verified]).toEqual([r.tag, true]);
    // the genealogy: the agent's actions and the press's read-back responses
    const ev = d.engine.runs.events(run.id);
    expect(ev.filter((e) => e.kind === 'action' && e.agent === 'agent.compress_fill').length).toBe(written.length);
    const responses = ev.filter((e) => e.kind === 'response' && e.tag?.startsWith('press.'));
    expect(responses.length).toBeGreaterThan(0);
    for (const r of responses) expect((r.data as { verified: boolean }).verified, r.summary).toBe(true);

    const table = specOf(run.id);
    const row = (id: string): SpecRow => table.find((r) => r.id === id)!;
    for (const r of table) report(`spec ${r.id} ${r.verdict} n ${r.data.n} mean ${r.data.mean ?? '-'} min ${r.data.min ?? '-'} max ${r.data.max ?? '-'}: ${r.reason}`);
    expect([row('hardness').verdict, row('tablet_weight').verdict], `${row('hardness').reason} | ${row('tablet_weight').reason}`).toEqual(['PASS', 'PASS']);
    expect(row('hardness').data.n).toBeGreaterThanOrEqual(20);
    expect(row('hardness').data.max!).toBeLessThanOrEqual(150);
    expect(row('hardness').data.min!).toBeGreaterThanOrEqual(80);
    expect(Math.abs(row('tablet_weight').data.mean! - 300)).toBeLessThan(15);
    const xs = d.engine.exceptionsOf(T, run.id);
    const kinds: Record<string, number> = {};
    for (const e of xs) kinds[`${e.kind}/${e.severity}`] = (kinds[`${e.kind}/${e.severity}`] ?? 0) + 1;
    report(`exceptions ${JSON.stringify(kinds)}; press moves written ${written.length}`);
    // nothing says hardness or the weight test left the specification, and the twin stayed trusted; what else the
    // batch did (a single light tablet, the batch's weight RSD with the granulate's drift, a PLC a loaded machine
    // let lapse) is listed as it happened, not asserted away
    expect(xs.filter((e) => e.key.startsWith('OOS:press.Hardness')).map((e) => e.title)).toEqual([]);
    expect(xs.filter((e) => e.key === 'SPEC_FAIL:hardness' || e.key === 'SPEC_FAIL:tablet_weight').map((e) => e.title)).toEqual([]);
    expect(xs.filter((e) => e.kind === 'MODEL_FIDELITY')).toEqual([]);
  }, 900_000);

  it('the twin predicted the press within its card at every round: residuals measured at the setpoints in force', () => {
    const checks = d.engine.runs.events(run.id).filter((e) => e.kind === 'fidelity');
    expect(checks.length).toBeGreaterThan(0);
    const model = d.engine.options.models.twin(T);
    expect(model.fidelity?.from).toBe('card');
    for (const c of checks) {
      const f = c.data as { ok: boolean; residuals: Residual[] };
      expect(f.ok, c.summary).toBe(true);
      for (const r of f.residuals) {
        // only means of at least 3 readings are judged, always against the card's own limit
        if (r.measuredMean !== null) {
          expect(r.n).toBeGreaterThanOrEqual(3);
          expect(r.limit).toEqual(model.fidelity!.acceptance[r.attribute]);
        }
      }
    }
    for (const c of checks) report(`fidelity ${c.summary}`);
    const last = (d.engine.runs.runById(run.id)!.data['compress'] as { fidelity: { checks: number; last: { ok: boolean; residuals: Residual[] } } }).fidelity;
    expect(last.checks).toBe(checks.length);
    expect(last.last.residuals.filter((r) => r.measuredMean !== null).map((r) => r.attribute)).toEqual(expect.arrayContaining(['tabletWeightMg', 'hardnessN']));
  });

  it('QA decides on the batch\'s own data: released once what is open is closed, unless a specification FAILed — then only a rejection', async () => {
    closeOpenExceptions(d.engine, T, run.id);
    const gate = view(run.id).approvalGate;
    const failed = specOf(run.id).filter((r) => r.verdict === 'FAIL');
    report(`release decision on ${failed.length === 0 ? 'no failed specification' : `failed: ${failed.map((r) => r.id).join(', ')}`}`);
    if (failed.length === 0) {
      d.engine.decide(T, gate.id!, { signer: QA_SIGNER, decision: 'approve', meaning: 'QA release of batch B-1042' });
      expect((await settle(run.id, ['APPROVAL', 'RUNNING'])).status).toBe('SUCCEEDED');
      return;
    }
    // every exception closed, and still no release: the data failed, whatever the investigation says
    expect(codeOf(() => d.engine.decide(T, gate.id!, { signer: QA_SIGNER, decision: 'approve', meaning: 'QA release of batch B-1042' }))).toBe('LK_SPEC_FAILED');
    expect(view(run.id).approvalGate.status).toBe('pending');
    d.engine.decide(T, gate.id!, { signer: QA_SIGNER, decision: 'reject', meaning: `QA rejection of batch B-1042: ${failed.map((r) => r.id).join(', ')} failed` });
    expect((await settle(run.id, ['APPROVAL', 'RUNNING'])).status).toBe('REJECTED');
  }, 300_000);
});

describe('the embedded default at L2: the press moves wait for the batch reviewer', () => {
  it('B-1047: every press move of compress_fill is pending for a person, none written', async () => {
    // the plant keeps its setpoints between batches: the press is put back on its master recipe (as after a
    // changeover), which makes tablets too hard, so that the agent has moves to propose
    await rearm();
    line.plant.writeSetpoints('press', { FillDepth: 8.5, MainForce: 12, PreForce: 2.5, TurretSpeed: 40 });
    const run = d.engine.start({ tenant: T, request: request('B-1047'), autonomy: 'L2', by: OPERATOR });
    const v = await settle(run.id);
    expect(v.status).toBe('APPROVAL');
    const outcomes = d.engine.toolCalls(T, run.id).filter((r) => r.tool === 'press.write_setpoint' && r.kind === 'ok').map((r) => r.result as { status: string; pending?: { needs: string } });
    expect(outcomes.length).toBeGreaterThan(0);
    expect(outcomes.map((o) => o.status)).not.toContain('written');
    expect(outcomes.filter((o) => o.status === 'pending').length).toBeGreaterThan(0);
    // the line is freed for the next test: QA rejects this batch (possible with exceptions open)
    d.engine.decide(T, v.approvalGate.id!, { signer: QA_SIGNER, decision: 'reject', meaning: 'QA rejection of batch B-1047' });
    expect((await settle(run.id, ['APPROVAL', 'RUNNING'])).status).toBe('REJECTED');
  }, 600_000);
});

describe('a twin the plant no longer follows is a lost model [R8]', () => {
  it('B-1048: MODEL_FIDELITY (major, with the residuals), line to LKG by command, twin agents at L0, run held', async () => {
    const plant = line.plant;
    await rearm();
    const run = d.engine.start({ tenant: T, request: request('B-1048'), autonomy: 'L3', by: OPERATOR });
    await line.until('the press step to run', () => view(run.id).steps.find((s) => s.name === 'compress.press')?.status === 'RUNNING');
    const reverts = plant.supervisor('press').revertCount;
    // the material changed: tablets 40 % stronger at the same force, which the fitted twin does not know
    plant.skewPress({ sigma0: 1.4 });
    try {
      const held = await settle(run.id);
      expect(held.status).toBe('HELD');
      expect(held.reason).toMatch(/^twin model lost: LK_MODEL_FIDELITY: process-twin-v1 v1 no longer predicts the press/);
      expect(held.steps.find((s) => s.name === 'compress.press')!.status).toBe('HELD');

      const fx = d.engine.exceptionsOf(T, run.id).filter((e) => e.kind === 'MODEL_FIDELITY');
      expect(fx.map((e) => [e.severity, e.step, e.status])).toEqual([['major', '05 compress.press', 'open']]);
      const residuals = (fx[0]!.evidence as { residuals: Residual[] }).residuals;
      const h = residuals.find((r) => r.attribute === 'hardnessN')!;
      report(`skewed: ${residuals.map((r) => `${r.attribute} ${r.measuredMean} vs ${r.predicted} n ${r.n} ${r.relPct}% ok ${r.ok}`).join('; ')}`);
      expect(h.ok).toBe(false);
      expect(h.relPct!).toBeGreaterThan(h.limit!.maxRelResidualPct!);
      expect(h.measuredMean! - h.predicted).toBeGreaterThan(0);

      // the exception is committed before the fail-safe acts: in the genealogy, the exception, then the model lost
      const ev = d.engine.runs.events(run.id);
      const exc = ev.findIndex((e) => e.kind === 'exception' && /MODEL_FIDELITY/.test(e.summary));
      const lost = ev.findIndex((e) => e.kind === 'watchdog' && /^model lost \(LK_MODEL_FIDELITY\)/.test(e.summary));
      expect(exc).toBeGreaterThanOrEqual(0);
      expect(lost).toBeGreaterThan(exc);

      // the line is on its last known-good recipe by linekeeper's command, and the twin's agents are in shadow
      const s = plant.supervisor('press');
      expect([s.state, s.activeRecipe, s.revertCount]).toEqual(['LOST', s.lkg.id, reverts + 1]);
      for (const a of ['agent.compress_fill', 'agent.granulate_dry', 'agent.coat_dry', 'agent.quality_conf']) {
        expect(autonomyLevels(d.store.db, T, d.policy.bundle!, a, 'press.MainForce').agent, a).toBe('L0');
      }
      const audit = [...auditOfRun(d.store, T, run.id).values()];
      expect(audit.find((e) => e.action === 'model.lost')?.reason).toMatch(/LK_MODEL_FIDELITY/);
      expect(audit.filter((e) => e.action === 'plc.revert_lkg' && e.kind === 'outcome').length).toBeGreaterThan(0);
      // and the release of this batch is blocked while the exception is open
      expect(d.engine.exceptions.blocking(run.id).map((e) => e.kind)).toContain('MODEL_FIDELITY');
    } finally {
      plant.skewPress({});
    }
  }, 600_000);
});
