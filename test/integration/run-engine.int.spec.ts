/**
 * The run engine in one daemon, in process, on virtual time (test/helpers/virtual-line.ts): the embedded plant
 * simulator in memory behind in-memory connectors at time scale 600 and one ManualClock, real SQLite, the shipped
 * policy bundle, the tenant's default models, and copies of the sample record B-1042 with small batches. agent.compress_fill and agent.coat_dry are raised to L3 as a site
 * does it (a named qa_reviewer with a change reference). The tests share the daemon and run in order:
 * refusals, a released batch (B-1042), a rejected one (B-1043), a batch stopped mid-step and resumed, then
 * restarted at the gate (B-1044), and a run its own QA reviewer started (B-1045, left waiting).
 *
 * B-1042 is 40,000 tablets so that the press makes several agent rounds, on a press whose released recipe
 * runs slow, so that the turret-speed contest arises; the other batches are 8,000 (that shortens pressing
 * only: blending, drying and coating take as long).
 *
 * One test needs the model-registry merge (setpoint writes actually written); it is named so.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scoreOf } from '../../src/arbitration/index.js';
import { iterateAudit, keyFiles, loadSitePublicKey } from '../../src/audit/index.js';
import type { Daemon } from '../../src/daemon.js';
import { QUALITY_ATTRIBUTES } from '../../src/domain/policy.js';
import { autonomyLevels, setAutonomy } from '../../src/store/autonomy-store.js';
import { verifySignature, type Signature } from '../../src/engine/run/approval.js';
import type { RunView } from '../../src/engine/run/engine.js';
import type { ToolCallRecord } from '../../src/store/run-store.js';
import { codeOf } from '../helpers/codes.js';
import { closeOpenExceptions } from '../helpers/exceptions.js';
import { auditOfRun, countAction, errorOf, makeRunSite, rearmLostPlcs, SPEC_TOOLS, toolLogOf, type RunSite } from '../helpers/run-site.js';
import { virtualLine, type VirtualLine } from '../helpers/virtual-line.js';
import { every } from '../../src/clock.js';
import { SPEC_PLAN } from '../helpers/spec-plan.js';

const T = 'acme-pharma';
const OTHER = 'borealis-bio';
const OPERATOR = 'o.operator';
const QA = { user: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer' } as const;
const BATCHES = { 'B-1042': 40_000, 'B-1043': 8_000, 'B-1044': 8_000, 'B-1045': 8_000 };
const VERIFIER = fileURLToPath(new URL('../../tools/verify-audit-bundle.mjs', import.meta.url));
/**
 * agent.quality_conf asks to hold the turret speed when the measured weight RSD comes within 80 % of the run's
 * limit: at "under 1.0 %" (the press makes about 1.2 %) it does so at nearly every round, so agent.yield_takt's
 * raise, whenever the press is behind takt, is contested.
 */
const request = (batch: string): string => `run batch ${batch} on line-3, keep weight and hardness on target, capping risk under 1.5%, weight RSD under 1.0%`;

/** The plan of the spec, in order: seq, step, agent, main tool. */
const PLAN = SPEC_PLAN;

let site: RunSite;
let line: VirtualLine;
let d: Daemon;
let presence: (() => void) | undefined;
const boot = (): Promise<Daemon> => line.boot({ pollMs: 100 });
const view = (id: string): RunView => d.engine.get(T, id);

/** Wait until the run leaves the `passing` statuses, then require `want` (the failure shows where it stopped). */
async function settle(id: string, want: string, passing: readonly string[] = ['PENDING', 'RUNNING']): Promise<RunView> {
  const v = await line.until(`run ${id} to leave ${passing.join('/')}`, () => {
    const r = view(id);
    return !passing.includes(r.status) && r;
  });
  expect(v.status, `${v.status}: ${v.reason ?? ''} ${v.steps.filter((s) => s.status !== 'SUCCEEDED').map((s) => `${s.seq} ${s.status} ${s.detail}`).join(' | ')}`).toBe(want);
  return v;
}

/** What a refusal must leave untouched. */
function footprint(): { runs: number; starts: number; head: number } {
  return { runs: d.store.db.prepare('SELECT COUNT(*) FROM run').pluck().get() as number, starts: countAction(d.store, T, 'run.start'), head: d.store.audit.head(T).seq };
}

/** The run's tool-call log, checked line by line (see toolLogOf). */
const checkToolLog = (id: string, open = false): ToolCallRecord[] => toolLogOf(d, T, id, open);

function decideAs(approval: string, signer: { user: string; name: string; role: string }, decision: 'approve' | 'reject' = 'approve', tenant = T): Signature {
  return d.engine.decide(tenant, approval, { signer, decision, meaning: `QA ${decision === 'approve' ? 'release' : 'rejection'} of the batch` });
}

const flip = (s: string, at = 5): string => s.slice(0, at) + (s[at] === '0' ? '1' : '0') + s.slice(at + 1);

beforeAll(async () => {
  site = makeRunSite({ timeScale: 600, batches: BATCHES });
  line = virtualLine(site);
  // the daemon validates the demo models through the golden gate at its first start (embedded default)
  d = await boot();
  // the press's released (LKG) recipe runs the turret at 30 rpm, the bottom of the design space: the rehearsed
  // candidate plans more, so the press is behind takt and agent.yield_takt asks for speed (which the run's
  // random candidate alone does not always cause)
  line.plant.setLkgRecipe('press', 2, { TurretSpeed: 30 });
  expect(line.plant.read('press', 'TurretSpeed')).toBe(30);
  const bundle = d.policy.bundle!;
  for (const agent of ['agent.compress_fill', 'agent.coat_dry']) {
    setAutonomy(d.store, bundle, { tenant: T, agent, to: 'L3', by: { person: 'q.russo', role: 'qa_reviewer' }, changeRef: 'CC-2026-0151', reason: 'bounded autonomy on low-risk compression and coating setpoints' });
  }
  expect(autonomyLevels(d.store.db, T, bundle, 'agent.compress_fill', 'press.MainForce')).toEqual({ agent: 'L3', setpoint: 'L3' });
  expect(autonomyLevels(d.store.db, T, bundle, 'agent.coat_dry', 'coater.SprayRate')).toEqual({ agent: 'L3', setpoint: 'L3' });
  // the console's presence heartbeats: the operator stays attended (R5) whatever the daemon instance
  d.engine.presence(OPERATOR);
  presence = every(line.clock, 5_000, () => d.engine.presence(OPERATOR));
}, 120_000);

afterAll(async () => {
  presence?.();
  await d?.stop('test done');
  line?.close();
  site?.cleanup();
});

describe('requests the engine refuses write nothing', () => {
  it('an unreadable request names what it misses; a loosening request, an unknown batch or line are refused', () => {
    const before = footprint();
    const missing = errorOf(() => d.engine.start({ tenant: T, request: 'keep weight and hardness on target', by: OPERATOR }));
    expect([missing.code, missing.detail?.['missing']]).toEqual(['LK_RUN_REQUEST_INVALID', ['batch', 'line']]);
    const noLine = errorOf(() => d.engine.start({ tenant: T, request: 'run batch B-1042, keep weight on target', by: OPERATOR }));
    expect([noLine.code, noLine.detail?.['missing']]).toEqual(['LK_RUN_REQUEST_INVALID', ['line']]);
    const loose = errorOf(() => d.engine.start({ tenant: T, request: 'run batch B-1042 on line-3, capping risk under 3%', by: OPERATOR }));
    expect([loose.code, loose.detail?.['limit']]).toEqual(['LK_RUN_REQUEST_LOOSENS', 'cappingRiskPct']);
    expect(codeOf(() => d.engine.start({ tenant: T, request: 'run batch B-1042 on line-3, weight RSD under 2.5%', by: OPERATOR }))).toBe('LK_RUN_REQUEST_LOOSENS');
    expect(codeOf(() => d.engine.start({ tenant: T, request: 'run batch B-9999 on line-3', by: OPERATOR }))).toBe('LK_NOT_FOUND');
    expect(codeOf(() => d.engine.start({ tenant: T, request: 'run batch B-1042 on line-9', by: OPERATOR }))).toBe('LK_NOT_FOUND');
    // B-2001 is borealis-bio's record: acme-pharma cannot start it (R1)
    expect(codeOf(() => d.engine.start({ tenant: T, request: 'run batch B-2001 on line-3', by: OPERATOR }))).toBe('LK_NOT_FOUND');
    expect(footprint()).toEqual(before);
    expect(d.engine.list(T)).toEqual([]);
  });
});

describe('a released batch: B-1042', () => {
  let run: RunView;
  let approval: string;
  let sig: Signature;

  it('composes the plan "10 steps, 1 approval gate" with the spec\'s steps, agents and tools', () => {
    run = d.engine.start({ tenant: T, request: request('B-1042'), by: OPERATOR });
    expect(run.id).toMatch(/^run_[0-9a-z]{10,32}$/);
    expect(run.plan).toEqual({ steps: 10, gates: 1, text: '10 steps, 1 approval gate' });
    expect(run.steps.map((s) => [s.seq, s.name, s.agent, s.tool])).toEqual(PLAN.map((p) => [...p]));
    expect(run.steps.filter((s) => s.gate).map((s) => s.seq)).toEqual(['09']);
    expect([run.batch, run.line, run.startedBy, run.genealogy]).toEqual(['B-1042', 'line-3', OPERATOR, `/v1/tenants/${T}/runs/${run.id}/genealogy`]);
  });

  it('refuses a second run on the busy line, writing nothing (LK_LINE_BUSY)', () => {
    const before = footprint();
    const e = errorOf(() => d.engine.start({ tenant: T, request: request('B-1043'), by: 'l.verdi' }));
    expect([e.code, e.detail?.['run']]).toEqual(['LK_LINE_BUSY', run.id]);
    // another tenant's batch on the same line is refused too: one run at a time per line
    expect(codeOf(() => d.engine.start({ tenant: OTHER, request: 'run batch B-2001 on line-3', by: 'l.verdi' }))).toBe('LK_LINE_BUSY');
    const after = footprint();
    expect([after.runs, after.starts]).toEqual([before.runs, before.starts]);
    expect([...iterateAudit(d.store.db, T, { batch: 'B-1043' })]).toEqual([]);
    expect([...iterateAudit(d.store.db, OTHER, {})].filter((e2) => e2.action === 'run.start')).toEqual([]);
  });

  it('[R3] [ERR-RELEASE-HELD] runs steps 01–08 to SUCCEEDED in order and waits at the gate with the batch on hold: nothing moves', async () => {
    const v = await settle(run.id, 'APPROVAL');
    expect(v.steps.map((s) => s.status)).toEqual([...Array(8).fill('SUCCEEDED'), 'APPROVAL', 'PENDING']);
    const rows = d.engine.runs.steps(run.id);
    for (let i = 0; i < 8; i++) {
      expect(rows[i]!.attempt).toBe(1);
      expect(rows[i]!.endedAt!).toBeLessThanOrEqual(rows[i + 1]!.startedAt!);
    }
    expect(v.steps[6]!.duration).toBe('continuous');
    for (const s of v.steps.slice(0, 6)) expect(s.duration).toMatch(/^(\d+\.\ds|\d+:\d\d)$/);
    expect(v.approvalGate).toMatchObject({ step: '09', status: 'pending', reviewer: 'm.rossi', signature: null });
    approval = v.approvalGate.id!;
    expect(d.engine.batches(T, 'B-1042')).toEqual({ state: 'hold', reviewer: 'p.bianchi' });
    // an L3 move of a low-risk setpoint inside the design space is denied while the batch waits for QA
    const force = line.plant.read('press', 'MainForce') as number;
    const out = await d.writer.propose({
      id: 'test-hold-1', tenant: T, batch: 'B-1042', agent: 'agent.compress_fill', product: 'ir-family-a', tooling: 'round-10mm-ff',
      moves: [{ setpoint: 'press.MainForce', value: { value: Math.min(17, force + 0.5), unit: 'kN' } }], attribute: 'content_uniformity', justification: 'test: nothing moves at the gate',
    });
    expect(out.status).toBe('denied');
    expect(out.decisions[0]!.reasons).toContain('BATCH_STATE_FORBIDS');
    expect(line.plant.read('press', 'MainForce')).toBe(force);
  });

  it('[R10] [R2] logs every tool call as call/ok with monotonic ids and its audit entry; approval.request has no ok line before the signature', () => {
    const rows = checkToolLog(run.id, true);
    const last = rows.at(-1)!;
    expect([last.kind, last.tool, last.step]).toEqual(['call', 'approval.request', 'approval.batch_release']);
    expect(last.args).toMatchObject({ approval, kind: 'batch_release', batch: 'B-1042', reviewer: 'm.rossi', policy: 'needs_qa' });
    expect(rows.filter((r) => r.tool === 'approval.request')).toHaveLength(1);
  });

  it('another tenant finds neither the run, its tool calls nor its approval [R1]', () => {
    expect(codeOf(() => d.engine.get(OTHER, run.id))).toBe('LK_NOT_FOUND');
    expect(codeOf(() => d.engine.toolCalls(OTHER, run.id))).toBe('LK_NOT_FOUND');
    expect(codeOf(() => d.engine.resume(OTHER, run.id, 'l.verdi', 'not theirs'))).toBe('LK_NOT_FOUND');
    expect(codeOf(() => decideAs(approval, QA, 'approve', OTHER))).toBe('LK_NOT_FOUND');
    expect(d.engine.list(OTHER).map((r) => r.id)).not.toContain(run.id);
    expect(d.engine.pendingApprovals(OTHER)).toEqual([]);
    expect(d.engine.pendingApprovals(T).map((a) => a.id)).toEqual([approval]);
    expect(d.engine.batches(OTHER, 'B-1042')).toBeNull();
  });

  it('[R3] [P11.10(g)] refuses a non-QA role, a QA reviewer the batch does not name, and the named one signing in another role; the run keeps waiting', () => {
    const decides = countAction(d.store, T, 'approval.decide');
    const lines = d.engine.toolCalls(T, run.id).length;
    expect(codeOf(() => decideAs(approval, { user: 'p.bianchi', name: 'Paolo Bianchi', role: 'process_engineer' }))).toBe('LK_APPROVAL_FORBIDDEN');
    expect(codeOf(() => decideAs(approval, { user: 'q.russo', name: 'Quinto Russo', role: 'qa_reviewer' }))).toBe('LK_APPROVAL_FORBIDDEN');
    expect(codeOf(() => decideAs(approval, { ...QA, role: 'process_engineer' }, 'reject'))).toBe('LK_APPROVAL_FORBIDDEN');
    expect(codeOf(() => d.engine.decide(T, approval, { signer: QA, decision: 'approve', meaning: ' ' }))).toBe('LK_VALIDATION');
    const v = view(run.id);
    expect([v.status, v.steps[8]!.status, v.approvalGate.status]).toEqual(['APPROVAL', 'APPROVAL', 'pending']);
    expect(countAction(d.store, T, 'approval.decide')).toBe(decides);
    expect(d.engine.toolCalls(T, run.id)).toHaveLength(lines);
  });

  it('[INV-RELEASE-EXCEPTIONS] [A11.13] review by exception: the batch\'s deviations are listed with their evidence; a critical or major one holds the release until QA has closed it with a comment', () => {
    const all = d.engine.exceptionsOf(T, run.id);
    const blocking = d.engine.exceptions.blocking(run.id);
    // every specification of the batch record was judged with its data at the gate, and the table is in the record QA signs
    const quality = d.engine.runs.runById(run.id)!.data['quality'] as { specTable: { results: { id: string; verdict: string; data: { n: number } }[]; verdict: string; sha256: string } };
    expect(quality.specTable.results.map((r) => r.id)).toEqual(['tablet_weight', 'tablet_weight_rsd', 'hardness', 'thickness', 'content_uniformity', 'dissolution', 'defect_rate', 'potency', 'lod_end', 'coat_weight_gain', 'blend_rsd']);
    for (const r of quality.specTable.results) if (r.verdict === 'PASS') expect(r.data.n, r.id).toBeGreaterThan(0);
    // every failed specification is a critical exception; a table without a FAIL raises none
    const failed = quality.specTable.results.filter((x) => x.verdict === 'FAIL').map((r) => `SPEC_FAIL:${r.id}`);
    expect(all.filter((e) => e.kind === 'SPEC_FAIL').map((e) => e.key).sort()).toEqual(failed.sort());
    for (const e of all.filter((x) => x.kind === 'SPEC_FAIL')) expect(e.severity).toBe('critical');
    // each exception is in the log as its own call with the evidence in its audit entry, and on its step's marker
    const lines = d.engine.toolCalls(T, run.id).filter((l) => l.tool === 'exception.raise' && l.kind === 'call');
    expect(lines.map((l) => (l.args as { exception: string }).exception).sort()).toEqual(all.map((e) => e.id).sort());
    const v = view(run.id);
    expect(v.exceptions).toMatchObject({ total: all.length, blocking: blocking.length });
    for (const e of all.filter((x) => x.step)) expect(v.steps.find((s) => `${s.seq} ${s.name}` === e.step)!.exceptions.total).toBeGreaterThan(0);
    expect(codeOf(() => d.engine.closeException(OTHER, all[0]?.id ?? 'exc_0', { signer: QA, comment: 'wrong tenant', deviation: null }))).toBe('LK_NOT_FOUND');

    if (blocking.length > 0) {
      // the press's recipe made tablets out of specification before the agents' moves took hold
      const decides = countAction(d.store, T, 'approval.decide');
      expect(codeOf(() => decideAs(approval, QA))).toBe('LK_EXCEPTIONS_OPEN');
      expect([view(run.id).approvalGate.status, countAction(d.store, T, 'approval.decide')]).toEqual(['pending', decides]);
      // a process engineer closes no major or critical exception; a blank comment closes nothing
      expect(codeOf(() => d.engine.closeException(T, blocking[0]!.id, { signer: { user: 'p.bianchi', name: 'Paolo Bianchi', role: 'process_engineer' }, comment: 'looks fine', deviation: null }))).toBe('LK_APPROVAL_FORBIDDEN');
      expect(codeOf(() => d.engine.closeException(T, blocking[0]!.id, { signer: QA, comment: ' ', deviation: null }))).toBe('LK_VALIDATION');
    } else {
      // the agents kept this batch inside its specifications (their L3 moves were written in time): what is left is
      // minor (a trend) and does not hold the release; a process engineer may close a minor one
      expect(quality.specTable.verdict).not.toBe('FAIL');
      for (const e of all) expect(e.severity).toBe('minor');
      const minor = all.find((e) => e.status === 'open');
      if (minor) {
        const out = d.engine.closeException(T, minor.id, { signer: { user: 'p.bianchi', name: 'Paolo Bianchi', role: 'process_engineer' }, comment: 'trend reviewed: inside the specification, no action', deviation: null });
        expect([out.exception.status, out.signature]).toEqual(['closed', null]);
      }
    }
    for (const e of d.engine.exceptionsOf(T, run.id).filter((x) => x.status === 'open')) {
      const out = d.engine.closeException(T, e.id, { signer: QA, comment: `${e.kind} investigated under the deviation; tablets of the excursion segregated`, deviation: 'DEV-2026-0142' });
      expect(out.exception.status).toBe('closed');
      expect(out.signature !== null).toBe(e.severity !== 'minor');
      if (out.signature) expect(verifySignature(loadSitePublicKey(site.data), out.signature)).toBe(true);
    }
    if (all.length > 0) expect(codeOf(() => d.engine.closeException(T, all[0]!.id, { signer: QA, comment: 'again', deviation: null }))).toBe('LK_EXCEPTION_CLOSED');
    expect(d.engine.exceptions.blocking(run.id)).toEqual([]);
  });

  it('[R3] [ERR-RELEASE-HELD] [P11.70] [A11.14] the named QA reviewer signs: a Part 11 signature bound to the record, and the run SUCCEEDED with its release package', async () => {
    const gate = view(run.id).approvalGate;
    sig = decideAs(approval, QA);
    // the signature says what was reviewed: every exception (closed) and the specification table, by hash
    const all = d.engine.exceptionsOf(T, run.id);
    expect(sig.reviewed).toEqual({ exceptions: all.map((e) => e.id), exceptionsClosed: all.map((e) => e.id), specTableSha256: (d.engine.runs.runById(run.id)!.data['quality'] as { specTable: { sha256: string } }).specTable.sha256 });
    expect(sig).toMatchObject({ format: 1, approval, run: run.id, tenant: T, batch: 'B-1042', recordHash: gate.recordHash, user: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer', decision: 'approve' });
    const key = loadSitePublicKey(site.data);
    expect(verifySignature(key, sig)).toBe(true);
    expect(verifySignature(key, { ...sig, recordHash: flip(sig.recordHash) })).toBe(false);
    expect(verifySignature(key, { ...sig, meaning: `${sig.meaning}.` })).toBe(false);
    expect(verifySignature(key, { ...sig, decision: 'reject' })).toBe(false);

    const v = await settle(run.id, 'SUCCEEDED', ['PENDING', 'RUNNING', 'APPROVAL']);
    expect(v.steps.map((s) => s.status)).toEqual(Array(10).fill('SUCCEEDED'));
    expect(v.approvalGate.status).toBe('approved');
    expect(v.approvalGate.signature).toEqual(sig);
    expect(d.engine.batches(T, 'B-1042')?.state).toBe('complete');

    const rows = checkToolLog(run.id);
    const [call, ok] = rows.filter((r) => r.tool === 'approval.request');
    expect(ok!.id).toBe(call!.id + 1);
    expect(ok!.at).toBeGreaterThanOrEqual(Date.parse(sig.timestamp));
    expect(ok!.result).toMatchObject({ approval, decision: 'approve', user: 'm.rossi', timestamp: sig.timestamp });
    const decided = [...auditOfRun(d.store, T, run.id).values()].find((e) => e.action === 'approval.decide')!;
    expect(decided.signature).toMatchObject({ user: 'm.rossi', value: sig.signature });
    expect(decided.seq).toBeLessThan(ok!.auditSeq);
    expect(rows.at(-1)!.tool).toBe('audit.write_release_package');
    expect([...new Set(rows.map((r) => r.tool))].sort()).toEqual([...SPEC_TOOLS].sort());

    // the view gives download URLs (never a server path); the files are on this node under the data directory
    expect(v.release).toMatchObject({ json: `/v1/tenants/${T}/runs/${run.id}/release?file=json`, pdf: `/v1/tenants/${T}/runs/${run.id}/release?file=pdf` });
    const rel = { json: d.engine.releaseFile(T, run.id, 'json')!, pdf: d.engine.releaseFile(T, run.id, 'pdf')!, bundle: d.engine.releaseFile(T, run.id, 'bundle')! };
    for (const f of [rel.json, rel.pdf, rel.bundle]) expect(existsSync(f), f).toBe(true);
    const pkg = (JSON.parse(readFileSync(rel.json, 'utf8')) as { input: { run: { status: string }; signatures: { user: string; decision: string; signature: string }[]; losingRequests: { agent: string }[]; quality?: { specTable: { results: unknown[] }; exceptions: { id: string; status: string; closedBy?: { user: string; comment: string; deviation?: string } }[] } } }).input;
    expect(pkg.run.status).toBe('RELEASED');
    // the package opens with the verdict: every specification, and every exception with who closed it and why
    expect(pkg.quality?.specTable.results).toHaveLength(11);
    expect(pkg.quality?.exceptions.map((e) => e.id).sort()).toEqual(all.map((e) => e.id).sort());
    for (const e of pkg.quality!.exceptions) expect(e).toMatchObject({ status: 'closed', closedBy: { user: expect.stringMatching(/^(m\.rossi|p\.bianchi)$/) } });
    expect(pkg.signatures).toMatchObject([{ user: 'm.rossi', decision: 'approve', signature: sig.signature }]);
    expect(pkg.losingRequests.map((l) => l.agent)).toContain('agent.yield_takt');
    const verify = spawnSync(process.execPath, [VERIFIER, rel.bundle, '--key', keyFiles(site.data).publicFile], { encoding: 'utf8' });
    expect(verify.status, verify.stdout + verify.stderr).toBe(0);
  }, 120_000);

  it('[ERR-RELEASE-HELD] a second decision on the same approval is refused (LK_APPROVAL_DECIDED)', () => {
    expect(codeOf(() => decideAs(approval, QA))).toBe('LK_APPROVAL_DECIDED');
    expect(codeOf(() => decideAs(approval, QA, 'reject'))).toBe('LK_APPROVAL_DECIDED');
    expect(view(run.id).approvalGate.signature).toEqual(sig);
  });

  it('[ERR-ARBITRATION] the genealogy holds sensor states, recommendations, the turret-speed contest with its loser, score, reason and re-plan, and the approvals', () => {
    const ev = d.engine.runs.events(run.id);
    const kinds = new Set(ev.map((e) => e.kind));
    for (const k of ['sensor', 'recommendation', 'arbitration', 'approval']) expect(kinds, k).toContain(k);
    for (let i = 1; i < ev.length; i++) expect(ev[i]!.at).toBeGreaterThanOrEqual(ev[i - 1]!.at);
    type Contest = { winners: { agent: string; attribute: string; score: number }[]; declined: { agent: string; setpoint: string; score: number; reason: string }[] };
    // rule 1: content uniformity outranks takt — whoever asked first
    const contests = ev.filter((e) => e.kind === 'arbitration' && e.tag === 'press.TurretSpeed' && (e.data as Contest).declined.some((x) => x.agent === 'agent.yield_takt'));
    expect(contests.length, 'turret-speed contests').toBeGreaterThan(0);
    for (const e of contests) {
      const c = e.data as Contest;
      const loser = c.declined.find((x) => x.agent === 'agent.yield_takt')!;
      expect(loser).toMatchObject({ setpoint: 'press.TurretSpeed', reason: expect.stringMatching(/^OUTRANKED\b/) });
      expect(loser.score).toBeLessThan(scoreOf('content_uniformity')!);
      for (const w of c.winners) expect(QUALITY_ATTRIBUTES).toContain(w.attribute);
      // the hold wins, or (when a quality-side owner already holds that speed) is declined as the same target
      const hold = c.winners.some((w) => w.agent === 'agent.quality_conf') || c.declined.some((x) => x.agent === 'agent.quality_conf' && x.reason.startsWith('SAME_TARGET'));
      expect(hold, e.summary).toBe(true);
    }
    const contest = contests[0]!;
    const replan = ev.find((e) => e.kind === 'recommendation' && e.agent === 'agent.yield_takt' && (e.data as { replan?: unknown } | null)?.replan !== undefined);
    expect(replan, 'the loser re-plans').toBeDefined();
    expect(replan!.at).toBeGreaterThanOrEqual(contest!.at);
    // each round is audited with its requests, winners and losers
    const rounds = [...auditOfRun(d.store, T, run.id).values()].filter((e) => e.action === 'arbitration.round' && e.kind === 'arbitration');
    expect(rounds.length).toBeGreaterThanOrEqual(contests.length);
    expect(rounds.some((e) => (e.result as { declined: { agent: string }[] }).declined.some((x) => x.agent === 'agent.yield_takt'))).toBe(true);
    const approvals = ev.filter((e) => e.kind === 'approval');
    expect(approvals.map((e) => (e.data as { approval: string }).approval)).toEqual([approval, approval]);
    expect((approvals[1]!.data as { signature: { user: string } }).signature.user).toBe('m.rossi');
  });

  it('[needs the model-registry merge] L3 moves of agent.compress_fill and agent.coat_dry are written, read back, and in the genealogy as action + response', () => {
    // Until the models branch lands, the bundle's models.yaml names models the registry does not have and
    // every agent proposal is denied (MODEL_MISSING / MODEL_NOT_PINNED): this test fails until then, by design.
    const rows = d.engine.toolCalls(T, run.id).filter((r) => r.kind === 'ok');
    const status = (tool: string): string[] => rows.filter((r) => r.tool === tool).map((r) => (r.result as { status: string }).status);
    const ev = d.engine.runs.events(run.id);
    const responses = ev.filter((e) => e.kind === 'response');
    const intents = [...auditOfRun(d.store, T, run.id).values()].filter((e) => e.kind === 'intent' && e.action === 'setpoint.write');
    // the press: low-risk setpoints inside the design space, moved at L3, each read back
    expect(status('press.write_setpoint')).toContain('written');
    expect(ev.filter((e) => e.kind === 'action' && e.agent === 'agent.compress_fill').length).toBeGreaterThan(0);
    expect(responses.some((e) => e.tag?.startsWith('press.'))).toBe(true);
    for (const r of responses) expect((r.data as { verified: boolean }).verified, r.summary).toBe(true);
    expect(intents.length).toBeGreaterThanOrEqual(responses.length);
    // the L1 unit agents only recommend: no blender or fluid-bed move is written
    expect(status('plc.write_setpoint')).not.toContain('written');
    // the coater: coat_dry at L3 moves its low-risk setpoints (SprayRate, Airflow, PanSpeed)
    expect(status('coater.write_setpoint'), 'a coater move written at L3').toContain('written');
    expect(ev.filter((e) => e.kind === 'action' && e.agent === 'agent.coat_dry').length).toBeGreaterThan(0);
    expect(responses.some((e) => e.tag?.startsWith('coater.'))).toBe(true);
  });
});

describe('a rejected batch: B-1043', () => {
  it('[ERR-RELEASE-HELD] a reject ends the run REJECTED, step 10 SKIPPED, with the genealogy and the rejection package written all the same', async () => {
    // a PLC its own watchdog reverted during the last run's end (a loaded machine) is re-armed by a person first
    await rearmLostPlcs(d, T, { line });
    const run = d.engine.start({ tenant: T, request: request('B-1043'), by: OPERATOR });
    const waiting = await settle(run.id, 'APPROVAL');
    const approval = waiting.approvalGate.id!;
    const sig = decideAs(approval, QA, 'reject');
    expect([sig.decision, sig.user]).toEqual(['reject', 'm.rossi']);
    expect(verifySignature(loadSitePublicKey(site.data), sig)).toBe(true);
    const v = await line.until('the rejection package', () => {
      const r = view(run.id);
      return r.steps[9]!.status === 'SKIPPED' && r;
    });
    expect(v.status).toBe('REJECTED');
    expect(v.endedAt).not.toBeNull();
    expect(v.steps.map((s) => s.status)).toEqual([...Array(8).fill('SUCCEEDED'), 'REJECTED', 'SKIPPED']);
    expect(v.approvalGate).toMatchObject({ status: 'rejected', signature: sig });
    expect(d.engine.batches(T, 'B-1043')?.state).toBe('rejected');
    const rows = checkToolLog(run.id);
    expect(rows.filter((r) => r.tool === 'approval.request').map((r) => r.kind)).toEqual(['call', 'ok']);
    expect(rows.at(-1)!.tool).toBe('audit.write_release_package');
    const pkg = (JSON.parse(readFileSync(d.engine.releaseFile(T, run.id, 'json')!, 'utf8')) as { input: { run: { status: string }; signatures: { decision: string }[]; genealogy: { kind: string }[] } }).input;
    expect(pkg.run.status).toBe('REJECTED');
    expect(pkg.signatures.map((s) => s.decision)).toEqual(['reject']);
    expect(pkg.genealogy.filter((e) => e.kind === 'approval')).toHaveLength(2);
    const verify = spawnSync(process.execPath, [VERIFIER, d.engine.releaseFile(T, run.id, 'bundle')!, '--key', keyFiles(site.data).publicFile], { encoding: 'utf8' });
    expect(verify.status, verify.stdout + verify.stderr).toBe(0);
    // the decision is final
    expect(codeOf(() => decideAs(approval, QA))).toBe('LK_APPROVAL_DECIDED');
    expect(codeOf(() => d.engine.resume(T, run.id, 'p.bianchi', 'try again'))).toBe('LK_RUN_STATE');
  }, 120_000);
});

describe('durability: B-1044 across clean stops', () => {
  let id: string;
  let beforeResume: { steps: ReturnType<Daemon['engine']['runs']['steps']>; calls: ToolCallRecord[] };

  it('[A11.16] a stop during a RUNNING step leaves the run INTERRUPTED with the step and the reason; no step or tool call is lost or duplicated', async () => {
    // a PLC its own watchdog reverted during the last run's end (a loaded machine) is re-armed by a person first
    await rearmLostPlcs(d, T, { line });
    id = d.engine.start({ tenant: T, request: request('B-1044'), by: OPERATOR }).id;
    await line.until('step 04 granulate.dry to run', () => view(id).steps[3]!.status === 'RUNNING');
    const stepsBefore = d.engine.runs.steps(id);
    const callsBefore = d.engine.toolCalls(T, id);
    await d.stop('test: clean stop during drying');
    d = await boot();

    const v = view(id);
    expect(v.status).toBe('INTERRUPTED');
    expect(v.reason).toContain('04 granulate.dry');
    expect(v.reason).toContain('test: clean stop during drying');
    const steps = d.engine.runs.steps(id);
    expect(steps.map((s) => [s.seq, s.status, s.attempt])).toEqual([
      ['01', 'SUCCEEDED', 1], ['02', 'SUCCEEDED', 1], ['03', 'SUCCEEDED', 1], ['04', 'INTERRUPTED', 1],
      ...['05', '06', '07', '08', '09', '10'].map((s) => [s, 'PENDING', 0]),
    ]);
    expect(steps.slice(0, 3)).toEqual(stepsBefore.slice(0, 3));
    expect(steps[3]!.startedAt).toBe(stepsBefore[3]!.startedAt);
    expect(steps[3]!.detail).toContain('test: clean stop during drying');
    const calls = checkToolLog(id);
    expect(calls.slice(0, callsBefore.length)).toEqual(callsBefore);
    const transitions = [...auditOfRun(d.store, T, id).values()].filter((e) => e.action === 'run.status').map((e) => [e.old, e.new]);
    expect(transitions).toEqual([['PENDING', 'RUNNING'], ['RUNNING', 'INTERRUPTED']]);
    // an interrupted run holds the line and its batch until a person decides
    expect(codeOf(() => d.engine.start({ tenant: T, request: request('B-1045'), by: OPERATOR }))).toBe('LK_LINE_BUSY');
    expect(d.engine.batches(T, 'B-1044')?.state).toBe('hold');
    beforeResume = { steps, calls };
  }, 120_000);

  it('[A11.16] resume by a named person re-runs the interrupted step as attempt 2 and the run goes on to the gate', async () => {
    const resumed = d.engine.resume(T, id, 'p.bianchi', 'fluid bed checked after the stop');
    expect([resumed.status, resumed.steps[3]!.status, resumed.steps[3]!.attempt]).toEqual(['RUNNING', 'RUNNING', 2]);
    expect(codeOf(() => d.engine.resume(T, id, 'p.bianchi', 'twice'))).toBe('LK_RUN_STATE');
    const v = await settle(id, 'APPROVAL');
    const steps = d.engine.runs.steps(id);
    expect(steps.map((s) => [s.seq, s.status, s.attempt])).toEqual([
      ...['01', '02', '03'].map((s) => [s, 'SUCCEEDED', 1]), ['04', 'SUCCEEDED', 2],
      ...['05', '06', '07', '08'].map((s) => [s, 'SUCCEEDED', 1]), ['09', 'APPROVAL', 1], ['10', 'PENDING', 0],
    ]);
    expect(steps.slice(0, 3)).toEqual(beforeResume.steps.slice(0, 3));
    expect(steps[3]!.startedAt!).toBeGreaterThan(beforeResume.steps[3]!.endedAt! - 1);
    expect(v.approvalGate.status).toBe('pending');

    const calls = checkToolLog(id, true);
    expect(calls.slice(0, beforeResume.calls.length)).toEqual(beforeResume.calls);
    // the interrupted step ran again from its start (new lines, new ids); nothing before it ran twice
    const rerun = calls.slice(beforeResume.calls.length);
    expect(rerun[0]!.step).toBe('granulate.dry');
    expect(calls.filter((r) => r.tool === 'mes.read_batch_record' && r.kind === 'call')).toHaveLength(1);
    expect(calls.filter((r) => r.tool === 'twin.simulate' && r.kind === 'call')).toHaveLength(1);
    // every step change audited once: 04 went RUNNING → INTERRUPTED → RUNNING (by p.bianchi) → SUCCEEDED
    const audit = [...auditOfRun(d.store, T, id).values()];
    const dry = audit.filter((e) => e.action === 'step.status' && e.subject.tool === 'plc.write_setpoint').map((e) => [e.old, e.new, e.actor]);
    expect(dry).toEqual([['PENDING', 'RUNNING', 'system'], ['RUNNING', 'INTERRUPTED', 'system'], ['INTERRUPTED', 'RUNNING', 'p.bianchi'], ['RUNNING', 'SUCCEEDED', 'agent.granulate_dry']]);
    const press = audit.filter((e) => e.action === 'step.status' && e.subject.tool === 'press.write_setpoint').map((e) => [e.old, e.new]);
    expect(press).toEqual([['PENDING', 'RUNNING'], ['RUNNING', 'SUCCEEDED']]);
    // each proposal of the run is a distinct proposal, the re-run's included
    const proposals = d.engine.runs.events(id).flatMap((e) => (e.kind === 'action' || e.kind === 'recommendation') && typeof (e.data as { proposal?: unknown } | null)?.proposal === 'string' ? [(e.data as { proposal: string }).proposal] : []);
    expect(proposals.length).toBeGreaterThan(0);
    expect(new Set(proposals).size).toBe(proposals.length);
  }, 120_000);

  it('a run waiting at the gate still waits after a restart and completes when signed', async () => {
    const before = view(id);
    const calls = d.engine.toolCalls(T, id);
    await d.stop('test: restart at the gate');
    d = await boot();
    const v = view(id);
    expect([v.status, v.steps[8]!.status, v.approvalGate.status, v.approvalGate.id]).toEqual(['APPROVAL', 'APPROVAL', 'pending', before.approvalGate.id]);
    expect(d.engine.toolCalls(T, id)).toEqual(calls);
    expect(d.engine.batches(T, 'B-1044')?.state).toBe('hold');
    closeOpenExceptions(d.engine, T, id);
    decideAs(v.approvalGate.id!, QA);
    const done = await settle(id, 'SUCCEEDED', ['PENDING', 'RUNNING', 'APPROVAL']);
    expect(done.steps.map((s) => s.status)).toEqual(Array(10).fill('SUCCEEDED'));
    expect(done.steps[8]!.attempt).toBe(1);
    const rows = checkToolLog(id);
    expect(rows.slice(0, calls.length)).toEqual(calls);
    expect(rows.filter((r) => r.tool === 'approval.request').map((r) => r.kind)).toEqual(['call', 'ok']);
    expect(done.release!.bundle).toBe(`/v1/tenants/${T}/runs/${id}/release?file=bundle`);
    expect(existsSync(d.engine.releaseFile(T, id, 'bundle')!)).toBe(true);
  }, 120_000);
});

describe('separation of duties: B-1045', () => {
  it('[R3] [P11.10(g)] the person who started the run cannot sign its release, even as its named QA reviewer; the run keeps waiting', async () => {
    // a PLC its own watchdog reverted during the last run's end (a loaded machine) is re-armed by a person first
    await rearmLostPlcs(d, T, { line });
    const run = d.engine.start({ tenant: T, request: request('B-1045'), by: QA.user });
    const v = await settle(run.id, 'APPROVAL');
    const approval = v.approvalGate.id!;
    expect(v.approvalGate.reviewer).toBe(QA.user);
    const decides = countAction(d.store, T, 'approval.decide');
    expect(codeOf(() => decideAs(approval, QA))).toBe('LK_APPROVAL_FORBIDDEN');
    expect(codeOf(() => decideAs(approval, QA, 'reject'))).toBe('LK_APPROVAL_FORBIDDEN');
    const after = view(run.id);
    expect([after.status, after.steps[8]!.status, after.approvalGate.status, after.approvalGate.signature]).toEqual(['APPROVAL', 'APPROVAL', 'pending', null]);
    expect(countAction(d.store, T, 'approval.decide')).toBe(decides);
    checkToolLog(run.id, true);
  }, 120_000);
});
