/**
 * The Python SDK (sdk/python) against a real daemon: its own unittest suite run as a child process
 * (`python3 -m unittest discover sdk/python/tests`) with the daemon's URL and the demo users' passwords in the
 * environment — declarations, errors by code, and B-1042 on line-3 followed step by step across a dropped
 * connection, signed by m.rossi, to SUCCEEDED — and its models (Step, ExceptionMarker, ToolCall, DesignSpace, Limit)
 * checked field by field against the daemon's /openapi.json (sdk/python/tests/test_openapi.py). Asserted here: the child's exit code, unittest's verdict with
 * nothing skipped, the step lines it printed in plan order, and the run as the daemon holds it. The daemon runs on
 * virtual time paced at TEST_PACE (50) times the wall clock (test/helpers/virtual-line.ts), the operator kept present on it as
 * an open console does.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STEP_NAMES } from '../../src/domain/run.js';
import { every } from '../../src/clock.js';
import { call, signIn, startApiNode, type ApiNode } from '../helpers/api.js';
import { TEST_PACE } from '../helpers/virtual-line.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let node: ApiNode;
let presence: (() => void) | undefined;
let paced: (() => Promise<void>) | undefined;

beforeAll(async () => {
  node = await startApiNode({ timeScale: 300, tablets: 30_000, pollMs: 100, virtual: true });
  const op = await signIn(node.url, 'o.operator', node.passwords.get('o.operator')!);
  presence = every(node.line!.clock, 5000, () => void call(node.url, 'POST', '/v1/tenants/acme-pharma/attendance', { token: op, body: {} }).catch(() => undefined));
  paced = node.line!.pace(TEST_PACE);
});
afterAll(async () => {
  presence?.();
  await paced?.();
  await node?.close();
});

/** Run a command to its end; its exit code and output. */
function run(cmd: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the Python SDK against a real daemon', { timeout: 300_000 }, () => {
  it('passes its unittest suite: errors by code, a run of B-1042 step by step across a dropped connection, signed, released or (a specification failed) rejected', async () => {
    const r = await run('python3', ['-m', 'unittest', 'discover', 'sdk/python/tests', '-v'], {
      LINEKEEPER_URL: node.url,
      LINEKEEPER_OPERATOR_PASSWORD: node.passwords.get('o.operator')!,
      LINEKEEPER_QA_PASSWORD: node.passwords.get('m.rossi')!,
      PYTHONDONTWRITEBYTECODE: '1',
      PYTHONUNBUFFERED: '1',
    });
    const detail = `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
    expect(r.code, detail).toBe(0);
    expect(r.stderr, detail).toMatch(/^Ran \d+ tests in /m);
    expect(r.stderr, detail).toMatch(/^OK$/m);
    expect(r.stderr, detail).not.toMatch(/skipped/);
    expect(r.stderr).toMatch(/test_a_run_step_by_step_across_a_dropped_connection .* \.\.\. ok/);
    // the models against the document the daemon serves: a field renamed on either side fails this test
    expect(r.stderr, detail).toMatch(/test_every_model_field_is_in_its_schema_and_every_required_property_in_its_model .* \.\.\. ok/);
    expect(r.stdout, detail).toContain('openapi models checked: Step, ExceptionMarker, ToolCall, DesignSpace, Limit');

    const out = r.stdout.split('\n');
    const steps = out.flatMap((l) => {
      const m = /^step (\d{2}) (\S+) ([A-Z]+) ?(\S*)$/.exec(l);
      return m ? [{ seq: m[1]!, name: m[2]!, status: m[3]!, duration: m[4]! }] : [];
    });
    expect([...new Set(steps.map((s) => s.name))], detail).toEqual([...STEP_NAMES]);
    // the batch's own data decided: released, or (a specification FAILed) rejected — what the child saw is what the daemon holds
    const done = out.map((l) => /^run (run_[0-9a-z]+) ([A-Z]+)$/.exec(l)).find((m) => m !== null);
    expect(['SUCCEEDED', 'REJECTED']).toContain(done?.[2]);
    const released = done![2] === 'SUCCEEDED';
    expect(steps.filter((s) => s.name === 'approval.batch_release').map((s) => s.status).filter((s) => s !== 'RUNNING')).toEqual(['APPROVAL', done![2]]);
    expect(steps.find((s) => s.name === 'inspect.tablets' && s.status === 'SUCCEEDED')?.duration).toBe('continuous');
    expect(out).toContain(`signed m.rossi ${released ? 'approve' : 'reject'}`);
    expect(out).toContain("stream requests [None, '10']");
    const held = node.daemon.engine.get('acme-pharma', done![1]!);
    expect(held).toMatchObject({ batch: 'B-1042', status: done![2], startedBy: 'o.operator' });
    expect(held.approvalGate.signature).toMatchObject({ user: 'm.rossi', decision: released ? 'approve' : 'reject' });
    if (!released) expect((node.daemon.engine.runs.runById(done![1]!)!.data['quality'] as { specTable: { verdict: string } }).specTable.verdict).toBe('FAIL');
  });
});
