/**
 * What `linekeeper run` and `runs watch` print, from log lines and run views alone: the spec's transcript in
 * plan order, nothing printed twice across a re-attachment, a run that stops for a person said so once, and
 * text from agents or equipment made safe for a terminal. Also the problem mapping the attachment rests on, and
 * the CLI's exit codes (the event stream itself: test/integration/cli-event-stream.int.spec.ts).
 */
import { describe, expect, it } from 'vitest';
import { cliError } from '../../src/cli/daemon-client.js';
import { exitCodeFor } from '../../src/cli/main.js';
import { CliExit } from '../../src/cli/prompt.js';
import { header, RunTranscript, stepLine, type ApiRun, type LogLine } from '../../src/cli/run-transcript.js';
import { composePlan } from '../../src/domain/run.js';
import { LinekeeperError, problemOf } from '../../src/sdk/errors.js';
import { LkError } from '../../src/errors.js';

type Status = ApiRun['steps'][number]['status'];

/** A run whose first `done` steps succeeded, the next one in `current`. */
function view(done: number, current: Status = 'RUNNING', over: Partial<ApiRun> = {}): ApiRun {
  return {
    id: 'run_0123456789abcdef0123', tenant: 'acme-pharma', batch: 'B-1042', line: 'line-3', product: 'ir-family-a', tooling: 'round-10mm-ff', status: 'RUNNING',
    goal: 'keep weight and hardness on target', autonomy: 'L3', startedBy: 'o.operator', createdAt: '2026-11-20T10:00:00.000Z', endedAt: null, reason: null,
    plan: { steps: 10, gates: 1, text: '10 steps, 1 approval gate' },
    steps: composePlan().map((p, i) => ({
      seq: p.seq, name: p.name, agent: p.agent, tool: p.tool, gate: p.gate, attempt: 1, detail: '',
      status: i < done ? 'SUCCEEDED' : i === done ? current : 'PENDING',
      durationMs: i <= done ? 1000 * (i + 1) : null,
      duration: i <= done ? (p.continuous ? 'continuous' : `${i + 1}.0s`) : '',
      exceptions: { total: 0, open: 0, blocking: 0, kinds: [] },
    })),
    exceptions: { total: 0, open: 0, blocking: 0, kinds: [] },
    approvalGate: { id: null, step: '09', status: 'not_reached', reviewer: 'm.rossi', recordHash: null, requestedAt: null, signature: null },
    genealogy: '/v1/tenants/acme-pharma/runs/run_0123456789abcdef0123/genealogy', release: null,
    ...over,
  };
}

let nextId = 0;
function line(step: string, kind: LogLine['kind'], tool: string, extra: Partial<LogLine> = {}): LogLine {
  nextId++;
  return { id: nextId, run: 'run_0123456789abcdef0123', at: 0, time: '10:00:00', kind, step, agent: 'agent.orchestrator', tool, auditSeq: nextId, ...extra };
}

/** Feed lines as the attachment does: the view of the run when the transcript asks for one. */
function feed(t: RunTranscript, lines: readonly LogLine[], viewAt: (l: LogLine) => ApiRun): string[] {
  return lines.flatMap((l) => t.line(l, t.needsView(l) ? viewAt(l) : undefined));
}

const seqOf = (name: string): number => composePlan().findIndex((p) => p.name === name);

describe('the run transcript', () => {
  nextId = 0;
  const log = [
    line('ingest.batch_record', 'call', 'mes.read_batch_record'),
    line('ingest.batch_record', 'ok', 'mes.read_batch_record', { summary: 'B-1042 …' }),
    line('twin.rehearse', 'call', 'twin.simulate'),
    line('twin.rehearse', 'ok', 'twin.simulate', { summary: '64 candidates, 14 ranked, 50 discarded; best #12: capping 0.24 % < 1.5 %' }),
    line('twin.rehearse', 'call', 'policy.evaluate'),
    line('twin.rehearse', 'ok', 'policy.evaluate', { summary: '12 of 12 moves inside the design space; release held for QA' }),
    ...composePlan().slice(2, 8).flatMap((p) => [line(p.name, 'call', p.tool), line(p.name, 'ok', p.tool, { summary: 'fine' })]),
    line('approval.batch_release', 'call', 'approval.request', { args: { approval: 'apr_00aa', kind: 'batch_release', batch: 'B-1042', reviewer: 'm.rossi' } }),
  ];
  const upTo = log.length;
  const after = [
    line('approval.batch_release', 'ok', 'approval.request', { summary: 'approved by Maria Rossi (m.rossi), 2026-11-20T10:30:00.000Z; identity and timestamp logged', result: { approval: 'apr_00aa' } }),
    line('release.genealogy', 'call', 'audit.write_release_package'),
    line('release.genealogy', 'ok', 'audit.write_release_package', { summary: 'written' }),
  ];

  it('prints the plan, the twin and policy lines, each step with ok and its duration in plan order, then the approval-required line', () => {
    const t = new RunTranscript();
    const out = [...header(view(0, 'PENDING'), 'started'), ...feed(t, log, (l) => view(seqOf(l.step)))];
    expect(out[0]).toBe('run run_0123456789abcdef0123 started: batch B-1042 on line-3 for acme-pharma, autonomy ≤ L3');
    expect(out[1]).toBe('plan: 10 steps, 1 approval gate');
    const idx = (re: RegExp): number => out.findIndex((s) => re.test(s));
    expect(idx(/^twin: 64 candidates, 14 ranked, 50 discarded; best #12: capping 0\.24 % < 1\.5 %$/)).toBeGreaterThan(idx(/^ {2}01 ingest\.batch_record +ok +1\.0s/));
    expect(idx(/^policy: 12 of 12 moves inside the design space; release held for QA$/)).toBeGreaterThan(idx(/^twin:/));
    expect(idx(/^ {2}02 twin\.rehearse +ok/)).toBeGreaterThan(idx(/^policy:/));
    const steps = out.filter((s) => /^ {2}\d\d /.test(s)).map((s) => s.slice(2, 4));
    expect(steps).toEqual(['01', '02', '03', '04', '05', '06', '07', '08']);
    expect(out.find((s) => s.startsWith('  07'))).toMatch(/ok +continuous/);
    expect(out.at(-2)).toBe('approval required: batch_release — waits for QA reviewer m.rossi (approval apr_00aa)');
    expect(out.at(-1)).toContain('linekeeper approve apr_00aa --decision approve|reject');
    expect(t.state).toMatchObject({ lastEventId: upTo, seen: '09' });
  });

  it('resumed from its saved state prints nothing twice: the approval, the steps left and the completion line', () => {
    const first = new RunTranscript();
    feed(first, log, (l) => view(seqOf(l.step)));
    const resumed = new RunTranscript(JSON.parse(JSON.stringify(first.state)));
    // the stream replays a little before the cursor: those lines are ignored
    expect(resumed.line(log.at(-1)!, view(8, 'APPROVAL'))).toEqual([]);
    expect(resumed.poll(view(8, 'APPROVAL', { status: 'APPROVAL' }))).toEqual([]);
    const out = [...feed(resumed, after, (l) => view(seqOf(l.step))), ...resumed.end(view(10, 'SUCCEEDED', { status: 'SUCCEEDED', endedAt: '2026-11-20T10:31:30.000Z' }))];
    expect(out[0]).toBe('approval apr_00aa: approved by Maria Rossi (m.rossi), 2026-11-20T10:30:00.000Z; identity and timestamp logged');
    expect(out.filter((s) => /^ {2}\d\d /.test(s)).map((s) => s.slice(2, 4))).toEqual(['09', '10']);
    expect(out.at(-1)).toBe('completed: run_0123456789abcdef0123 SUCCEEDED — batch B-1042 released in 31:30; genealogy: linekeeper runs show run_0123456789abcdef0123 --format genealogy');
    expect(out.join('\n')).not.toMatch(/plan:|twin:|policy:|approval required/);
  });

  it('says once that a run stopped for a person (a held step and the run), and a step that ran again', () => {
    const t = new RunTranscript();
    feed(t, log.slice(0, 12), (l) => view(seqOf(l.step))); // the log is in step 05
    const held = view(4, 'HELD', { status: 'HELD', reason: 'dryer past its time-out' });
    held.steps[4] = { ...held.steps[4]!, detail: 'LOD 3.1 % after 90 min' };
    const first = t.poll(held);
    expect(first).toEqual([
      expect.stringMatching(/^ {2}05 compress\.press +held .* — LOD 3\.1 % after 90 min$/),
      'held: run_0123456789abcdef0123 waits for a person — dryer past its time-out',
    ]);
    expect(t.poll(held)).toEqual([]);
    const again = view(5, 'RUNNING');
    again.steps[4] = { ...again.steps[4]!, attempt: 2 };
    expect(t.poll(again)).toEqual([]); // the log has not reached step 06 yet
    expect(t.line(line('coat.spray', 'call', 'coater.write_setpoint'), again)).toEqual([expect.stringMatching(/^ {2}05 compress\.press +ok .* — attempt 2$/)]);
  });

  it('prints a tool error and a rejected release; text from agents cannot drive the terminal', () => {
    const t = new RunTranscript();
    expect(t.line(line('compress.press', 'error', 'press.write_setpoint', { summary: 'LK_WRITE_FAILED: refused\u001b[2J\u202e' }), view(4))).toContain('error: press.write_setpoint in compress.press: LK_WRITE_FAILED: refused?[2J?');
    const end = t.end(view(8, 'REJECTED', { status: 'REJECTED', reason: 'rejected by QA', endedAt: '2026-11-20T10:02:00.000Z' }));
    expect(end.at(-1)).toBe('completed: run_0123456789abcdef0123 REJECTED — batch B-1042 not released in 2:00: rejected by QA');
    expect(stepLine({ ...view(0).steps[0]!, name: 'x\u001b]0;owned\u0007', status: 'FAILED', detail: 'bad\nthing' })).not.toMatch(/[\u0000-\u001f]/);
  });
});

describe('errors of the daemon and exit codes', () => {
  /** What the CLI makes of an answer, as the SDK's client reads it (problemOf) and hands it on. */
  const answered = async (status: number, body: unknown, request = 'GET /x'): Promise<unknown> =>
    cliError(await problemOf(new Response(typeof body === 'string' ? body : JSON.stringify(body), { status, headers: { 'content-type': 'application/problem+json' } }), request));

  it('a problem+json body becomes an LkError of its code and detail (with its hint, issues and reasons); an unknown code keeps its name', async () => {
    const e = await answered(409, { code: 'LK_LINE_BUSY', detail: 'line line-3 runs run_x (RUNNING); one run at a time per line' }, 'POST /runs');
    expect(LkError.is(e, 'LK_LINE_BUSY')).toBe(true);
    expect((e as LkError).message).toBe('line line-3 runs run_x (RUNNING); one run at a time per line');
    const reasons = [{ code: 'PLC_LOST', subject: 'press', message: 'the press PLC is LOST' }];
    const notReady = await answered(409, { code: 'LK_LINE_NOT_READY', detail: 'line-3 is not ready', reasons }, 'POST /runs');
    expect(LkError.is(notReady, 'LK_LINE_NOT_READY')).toBe(true);
    expect((notReady as LkError).detail).toMatchObject({ status: 409, reasons, hint: expect.stringContaining('linekeeper line rearm') });
    const invalid = await answered(400, { code: 'LK_VALIDATION', detail: 'bad', issues: [{ path: 'body.request', message: 'required' }] });
    expect((invalid as LkError).detail?.['issues']).toEqual([{ path: 'body.request', message: 'required' }]);
    expect((await answered(401, { code: 'LK_UNAUTHENTICATED', detail: 'expired' }) as LkError).detail?.['hint']).toBe('sign in again: linekeeper login');
    const unknown = await answered(418, { code: 'LK_FROM_THE_FUTURE', detail: 'newer daemon' });
    expect(LinekeeperError.is(unknown, 'LK_FROM_THE_FUTURE')).toBe(true);
    expect(LkError.is(unknown)).toBe(false);
    // not linekeeper's problem body (a proxy's page): the status says what it can
    const proxy = await answered(502, 'not json');
    expect(LkError.is(proxy, 'LK_INTERNAL')).toBe(true);
    expect((proxy as LkError).message).toBe('GET /x: HTTP 502');
    expect(LkError.is(await answered(401, ''), 'LK_UNAUTHENTICATED')).toBe(true);
    // what is not the SDK's passes as it is
    const other = new Error('x');
    expect(cliError(other)).toBe(other);
  });

  it('exit codes: 77 not signed in, 2 usage, 78 configuration, 65 audit, 130 interrupted, 1 otherwise', () => {
    expect(exitCodeFor(new LkError('LK_UNAUTHENTICATED'))).toBe(77);
    expect(exitCodeFor(new LkError('LK_VALIDATION'))).toBe(2);
    expect(exitCodeFor(new LkError('LK_CONFIG_INVALID'))).toBe(78);
    expect(exitCodeFor(new LkError('LK_AUDIT_BROKEN'))).toBe(65);
    expect(exitCodeFor(new LkError('LK_REAUTH_FAILED'))).toBe(1);
    expect(exitCodeFor(new LkError('LK_API_UNREACHABLE'))).toBe(1);
    expect(exitCodeFor(new CliExit(130))).toBe(130);
    expect(exitCodeFor(new LinekeeperError({ code: 'LK_FROM_THE_FUTURE', status: 418, detail: 'x' }))).toBe(1);
  });
});

describe('what waits for a person, in the transcript', () => {
  const pendingLine = (id: string, over: Record<string, unknown> = {}): LogLine => line('compress.press', 'ok', 'press.write_setpoint', {
    agent: 'agent.compress_fill', summary: 'pending (L2_NEEDS_REVIEW): press.MainForce=10.5 kN',
    result: { status: 'pending', pending: { id, needs: 'reviewer', waitsFor: 'p.bianchi', since: Date.parse('2026-11-20T10:05:00.000Z'), moves: [{ setpoint: 'press.MainForce', from: 12, to: 10.5, unit: 'kN' }], ...over } },
  });

  it('a move that waits says whom it waits for, what, since when and how to decide it — once, also across a re-attachment', () => {
    const t = new RunTranscript();
    const first = t.line(pendingLine('pw_mi0abc_0011aabb'), view(4));
    expect(first.join('\n')).toContain('  waiting for p.bianchi: press.MainForce 12 → 10.5 kN (move pw_mi0abc_0011aabb of agent.compress_fill, since 2026-11-20T10:05:00.000Z)');
    expect(first.join('\n')).toContain('linekeeper moves approve pw_mi0abc_0011aabb');
    const again = new RunTranscript(t.state);
    expect(again.line({ ...pendingLine('pw_mi0abc_0011aabb'), id: nextId + 1 })).toEqual([]);
    // QA, and a move that was written: QA named, nothing printed for the written one
    expect(t.line(pendingLine('pw_mi0abd_0011aabc', { needs: 'qa', waitsFor: null })).join('\n')).toContain('waiting for QA: press.MainForce');
    expect(t.line(line('compress.press', 'ok', 'press.write_setpoint', { result: { status: 'written' } }))).toEqual([]);
  });

  it('a deadlock of this run is printed once while it waits, with its sides and how to decide it; another run\'s is not', () => {
    const t = new RunTranscript();
    const esc = {
      id: 'press.TurretSpeed', setpoint: 'press.TurretSpeed', reason: 'DEADLOCK_EQUAL_RANK' as const, score: 2, rank: 'quality' as const, since: '2026-11-20T10:06:00.000Z',
      sides: [
        { requestId: 'run_0123456789abcdef0123:3:1', agent: 'agent.quality_conf', target: '40 {rev}/min', attribute: 'content_uniformity', justification: '', at: '2026-11-20T10:06:00.000Z' },
        { requestId: 'run_0123456789abcdef0123:05:1:2:press.TurretSpeed', agent: 'agent.compress_fill', target: '44 {rev}/min', attribute: 'content_uniformity', justification: '', at: '2026-11-20T10:01:00.000Z' },
      ],
      outranked: [], runs: ['run_0123456789abcdef0123'], holds: true as const,
    };
    const out = t.escalations('run_0123456789abcdef0123', [esc]);
    expect(out).toHaveLength(1);
    expect(out[0]).toContain('! deadlock on press.TurretSpeed waits for a person since 2026-11-20T10:06:00.000Z');
    expect(out[0]).toContain('agent.quality_conf wants 40 {rev}/min');
    expect(out[0]).toContain('linekeeper escalations decide press.TurretSpeed --choose');
    expect(t.escalations('run_0123456789abcdef0123', [esc])).toEqual([]);
    expect(new RunTranscript().escalations('run_ffffffffffffffffffff', [esc])).toEqual([]);
  });
});
