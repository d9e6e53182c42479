/**
 * The TypeScript SDK's declarations without a daemon: Tool and Agent validated strictly with every bad field
 * named (LK_VALIDATION), a tool bound to a design space, the run request an agent composes (only the
 * grammar's forms of line and batch reach it), and the iterator under the event streams (closable while it
 * waits, a failure after the values queued before it).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, Channel, DesignSpace, LinekeeperError, setDefaultClient, Tool } from '../../src/sdk/index.js';

const limits = new DesignSpace({
  product: 'ir-family-a', tooling: 'round-10mm-ff', approvedBy: 'VR-L3-2025-017 §4.2', bundleVersion: 'a'.repeat(64),
  setpoints: { 'press.MainForce': { min: 8, max: 18, unit: 'kN', maxStep: 1.5, maxRatePerMin: 3 }, 'press.PreForce': { min: 1.5, max: 4, unit: 'kN', maxStep: 0.5, maxRatePerMin: 1 } },
});
const GOAL = 'keep weight and hardness on target, capping risk under 1.5%';

/** The paths of the LK_VALIDATION issues `fn` throws (anything else fails the test). */
function issues(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (LinekeeperError.is(err, 'LK_VALIDATION')) return err.issues.map((i) => i.path).sort();
    throw err;
  }
  return [];
}

afterEach(() => setDefaultClient(undefined));

describe('Tool', () => {
  const base = { name: 'press.write_setpoint', tags: ['press.MainForce'], limits, readOnly: false, autonomyNeeded: 'L2' } as const;

  it('is frozen, bound to its design space, and checks arguments with its schema', () => {
    const t = Tool({ ...base, schema: z.strictObject({ setpoint: z.string(), value: z.number() }), units: { 'press.MainForce': 'kN' } });
    expect(Object.isFrozen(t)).toBe(true);
    expect(Object.isFrozen(t.tags)).toBe(true);
    expect(t.limits?.limit('press.MainForce')).toMatchObject({ min: 8, max: 18, unit: 'kN' });
    expect(t.check({ setpoint: 'press.MainForce', value: 12 })).toEqual({ setpoint: 'press.MainForce', value: 12 });
    const bad = (() => {
      try {
        t.check({ setpoint: 'press.MainForce', value: '12', by: 'x' });
      } catch (err) {
        return err;
      }
      return undefined;
    })();
    expect(LinekeeperError.is(bad, 'LK_VALIDATION')).toBe(true);
    expect((bad as LinekeeperError).issues.map((i) => i.path).sort()).toEqual(['by', 'value']);
    expect(Tool({ ...base }).check({ anything: 1 })).toEqual({ anything: 1 });
  });

  it('refuses, naming the field: a written tag outside the design space, a unit unlike the limit\'s, a writing tool at L0, unknown keys, bad forms', () => {
    expect(issues(() => Tool({ ...base, tags: ['press.MainForce', 'press.Bogus'] }))).toEqual(['tags[1]']);
    expect(issues(() => Tool({ ...base, units: { 'press.MainForce': 'N' } }))).toEqual(['units["press.MainForce"]']);
    expect(issues(() => Tool({ ...base, units: { 'press.PreForce': 'kN' } }))).toEqual(['units["press.PreForce"]']);
    expect(issues(() => Tool({ ...base, autonomyNeeded: 'L0' }))).toEqual(['autonomyNeeded']);
    expect(issues(() => Tool({ ...base, tags: ['press.MainForce', 'press.MainForce'] }))).toEqual(['tags']);
    expect(issues(() => Tool({ ...base, name: 'Press', tags: ['MainForce'], autonomyNeeded: 'L5', dryRun: true } as never))).toEqual(['autonomyNeeded', 'dryRun', 'name', 'tags[0]']);
    expect(issues(() => Tool({ ...base, limits: { setpoints: {} } } as never))).toEqual(['limits']);
    expect(issues(() => Tool({ name: 'press.write_setpoint' } as never))).toEqual(['autonomyNeeded', 'readOnly']);
    // a read-only tool may read what the design space does not limit; without limits nothing is checked against one
    expect(issues(() => Tool({ ...base, name: 'press.read_force_curve', tags: ['press.EjectionForce'], readOnly: true, autonomyNeeded: 'L0' }))).toEqual([]);
    expect(issues(() => Tool({ name: 'vision.stream', tags: ['vision.Rejected'], readOnly: true, autonomyNeeded: 'L0' }))).toEqual([]);
  });
});

describe('DesignSpace', () => {
  it('answers whether a value is inside an approved range, in the setpoint\'s unit', () => {
    expect([limits.contains('press.MainForce', 8), limits.contains('press.MainForce', 18.01), limits.contains('press.MainForce', Number.NaN), limits.contains('press.Bogus', 1)]).toEqual([true, false, false, false]);
    expect(limits.limit('toString')).toBeUndefined();
    expect(Object.isFrozen(limits.setpoints['press.MainForce'])).toBe(true);
    expect(String(limits)).toBe('ir-family-a × round-10mm-ff');
  });

  it('needs a client to read one from the daemon', async () => {
    await expect(DesignSpace.approved('ir-family-a', 'round-10mm-ff')).rejects.toMatchObject({ code: 'LK_VALIDATION', issues: [{ path: 'client', message: 'required' }] });
  });
});

describe('Agent', () => {
  const press = Tool({ name: 'press.write_setpoint', tags: ['press.MainForce'], limits, readOnly: false, autonomyNeeded: 'L2' });
  const good = { id: 'agent.compress_fill', goal: GOAL, tools: [press], autonomy: 'L2', verify: 'twin', audit: 'part11' } as const;

  it('is declared with the spec\'s fields and composes the run request the daemon\'s grammar reads', () => {
    const a = Agent(good);
    expect(a).toMatchObject({ id: 'agent.compress_fill', goal: GOAL, autonomy: 'L2', verify: 'twin', audit: 'part11' });
    expect(Object.isFrozen(a) && Object.isFrozen(a.tools)).toBe(true);
    expect(a.request('line-3', 'B-1042')).toBe(`run batch B-1042 on line-3, ${GOAL}`);
    expect(a.request('line-3', 'B-1042', 'keep weight on target')).toBe('run batch B-1042 on line-3, keep weight on target');
  });

  it('[LIM-AUTONOMY] refuses, naming each field: an id not agent.<role>, a level outside L0–L3, verify or audit other than the spec\'s, unknown keys, tools not declared with Tool or declared twice', () => {
    expect(issues(() => Agent(good))).toEqual([]);
    expect(issues(() => Agent({ ...good, id: 'compress_fill', autonomy: 'L4', verify: 'none', audit: 'gmp', model: 'x' } as never))).toEqual(['audit', 'autonomy', 'id', 'model', 'verify']);
    expect(issues(() => Agent({ ...good, goal: '  ' }))).toEqual(['goal']);
    expect(issues(() => Agent({ ...good, tools: [{ ...press }] }))).toEqual(['tools[0]']);
    expect(issues(() => Agent({ ...good, tools: [press, press] }))).toEqual(['tools[1]']);
    expect(issues(() => Agent({ id: 'agent.x', goal: GOAL, autonomy: 'L1' } as never))).toEqual(['audit', 'verify']);
  });

  it('lets nothing but a line-<n> and a batch id into the request, and needs a client to start', async () => {
    const a = Agent(good);
    expect(issues(() => a.request('line-3, at L3', 'B-1042'))).toEqual(['line']);
    expect(issues(() => a.request('line-3', 'B-1042; capping risk under 9%'))).toEqual(['batch']);
    expect(issues(() => a.request('line-3', 'B-1042', 'keep weight\nat L3'))).toEqual(['goal']);
    await expect(a.start('line-3', 'B-1042', { autonomy: 'L7' as never })).rejects.toMatchObject({ code: 'LK_VALIDATION', issues: [{ path: 'autonomy' }] });
    await expect(a.start('line-3', 'B-1042')).rejects.toMatchObject({ code: 'LK_VALIDATION', issues: [{ path: 'client', message: 'required' }] });
  });
});

describe('Channel (the iterator under the event streams)', () => {
  it('hands on values in order, then what end() returns', async () => {
    const c = new Channel<number, string>();
    c.push(1);
    const waiting = c.next();
    c.push(2);
    c.end('SUCCEEDED');
    c.push(3);
    expect(await c.next()).toEqual({ value: 2, done: false });
    expect(await waiting).toEqual({ value: 1, done: false });
    expect(await c.next()).toEqual({ value: 'SUCCEEDED', done: true });
  });

  it('throws a failure once, after the values queued before it', async () => {
    const c = new Channel<number>();
    c.push(1);
    c.fail(new Error('refused'));
    expect(await c.next()).toEqual({ value: 1, done: false });
    await expect(c.next()).rejects.toThrow('refused');
    expect(await c.next()).toEqual({ value: undefined, done: true });
  });

  it('closes at once when left, also while a next() waits, and tells its producer', async () => {
    let closed = 0;
    const c = new Channel<number>(() => closed++);
    const waiting = c.next();
    await c.return();
    expect(await waiting).toEqual({ value: undefined, done: true });
    expect(closed).toBe(1);
    c.push(4);
    expect(await c.next()).toEqual({ value: undefined, done: true });
    expect(closed).toBe(1);
  });
});
