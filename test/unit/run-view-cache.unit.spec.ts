/**
 * The view cache's parts on their own: a frame's JSON is exactly JSON.stringify(encode(view at now)) whatever
 * steps are running (durations spliced into the encoded template), its encoder runs once per frame, an encoder
 * that drops the durations falls back to encoding per read, shared views are frozen, and the cache keeps at most
 * its size, dropping the least recently read first.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RunView as RunViewSchema } from '../../src/api/schemas.js';
import { composePlan, formatDuration } from '../../src/domain/run.js';
import type { RunView } from '../../src/engine/run/types.js';
import { ViewCache, ViewFrame, type OpenStep } from '../../src/engine/run/view-cache.js';

const T0 = Date.UTC(2026, 10, 23, 8);

/** A view with steps 01–04 done, 05 running since T0, 07 (continuous) running since T0 + 1 s. */
function sample(): { view: RunView; open: OpenStep[] } {
  const plan = composePlan();
  const open: OpenStep[] = [{ index: 4, startedAt: T0, continuous: false }, { index: 6, startedAt: T0 + 1000, continuous: true }];
  const steps = plan.map((p, i) => {
    const o = open.find((x) => x.index === i);
    const done = i < 4;
    return {
      seq: p.seq, name: p.name, agent: p.agent, tool: p.tool, status: o ? 'RUNNING' : done ? 'SUCCEEDED' : 'PENDING', gate: p.gate, attempt: o || done ? 1 : 0,
      durationMs: o ? 0 : done ? 61_000 : null, duration: o ? formatDuration(0, o.continuous) : done ? '1:01' : '', detail: done ? `"${p.name}" ok \u2713` : '',
      exceptions: { total: 0, open: 0, blocking: 0, kinds: [] },
    } as RunView['steps'][number];
  });
  const view: RunView = {
    id: 'run_0a0a0a0a0a0a0a0a0a0a', tenant: 'acme-pharma', batch: 'B-1042', line: 'line-3', product: 'ir-family-a', tooling: 'round-10mm-ff', status: 'RUNNING',
    goal: 'keep weight on target', autonomy: 'L3', startedBy: 'o.operator', createdAt: new Date(T0).toISOString(), endedAt: null, reason: null,
    plan: { steps: 10, gates: 1, text: '10 steps, 1 approval gate' }, steps, exceptions: { total: 0, open: 0, blocking: 0, kinds: [] },
    approvalGate: { id: null, step: '09', status: 'not_reached', reviewer: 'm.rossi', recordHash: null, requestedAt: null, signature: null },
    genealogy: '/v1/tenants/acme-pharma/runs/run_0a0a0a0a0a0a0a0a0a0a/genealogy', release: null,
  };
  return { view, open };
}

const schemaEncode = (v: RunView): RunView => z.encode(RunViewSchema, v as z.output<typeof RunViewSchema>) as RunView;

describe('ViewFrame', () => {
  it('writes the encoder\'s JSON of the view at every clock reading, running steps\' durations included', () => {
    const { view, open } = sample();
    let calls = 0;
    const encode = (v: RunView): RunView => (calls++, schemaEncode(v));
    const frame = new ViewFrame('acme-pharma', view, open);
    for (const now of [T0, T0 + 4_200, T0 + 59_999, T0 + 60_000, T0 + 3_725_000]) {
      expect(frame.json(now, encode)).toBe(JSON.stringify(schemaEncode(frame.at(now))));
    }
    expect(calls).toBe(1);
    const at = frame.at(T0 + 75_000);
    expect(at.steps[4]).toMatchObject({ status: 'RUNNING', durationMs: 75_000, duration: '1:15' });
    expect(at.steps[6]).toMatchObject({ durationMs: 74_000, duration: 'continuous' });
    expect(at.steps[0]).toBe(view.steps[0]);
  });

  it('a frame with no running step is one string and one frozen view, whatever the clock says', () => {
    const { view } = sample();
    const frame = new ViewFrame('acme-pharma', view, []);
    expect(frame.at(T0 + 1e9)).toBe(view);
    expect(frame.json(T0 + 1e9, schemaEncode)).toBe(JSON.stringify(schemaEncode(view)));
    expect(Object.isFrozen(view.steps[0])).toBe(true);
    expect(() => {
      (view as { status: string }).status = 'FAILED';
    }).toThrow(TypeError);
  });

  it('an encoder that drops the durations is run at every read instead (no template)', () => {
    const { view, open } = sample();
    let calls = 0;
    const noDurations = (v: RunView): RunView => (calls++, { ...v, steps: v.steps.map(({ durationMs: _m, duration: _d, ...s }) => s) } as unknown as RunView);
    const frame = new ViewFrame('acme-pharma', view, open);
    expect(frame.json(T0 + 5_000, noDurations)).toBe(JSON.stringify(noDurations(frame.at(T0 + 5_000))));
    expect(frame.json(T0 + 9_000, noDurations)).not.toContain('durationMs');
    expect(calls).toBeGreaterThanOrEqual(4);
  });

  it('a string in the view that looks like a marker stays a string', () => {
    const { view, open } = sample();
    const sly = { ...view, goal: '\u0000 0:ms "durationMs" \\u0000' };
    const frame = new ViewFrame('acme-pharma', sly, open);
    const text = frame.json(T0 + 2_000, schemaEncode);
    expect(text).toBe(JSON.stringify(schemaEncode(frame.at(T0 + 2_000))));
    expect((JSON.parse(text) as RunView).goal).toBe(sly.goal);
  });
});

describe('ViewCache', () => {
  const frame = (id: string): ViewFrame => new ViewFrame('acme-pharma', { ...sample().view, id }, []);

  it('keeps at most its size, dropping the least recently read', () => {
    const c = new ViewCache(2);
    c.set('a', frame('a'));
    c.set('b', frame('b'));
    expect(c.get('a')?.view.id).toBe('a');
    c.set('c', frame('c'));
    expect(c.size).toBe(2);
    expect(c.get('b')).toBeUndefined();
    expect(c.get('a')?.view.id).toBe('a');
    expect(c.get('c')?.view.id).toBe('c');
    c.drop('a');
    expect(c.get('a')).toBeUndefined();
  });

  it('size 0 keeps nothing; a size that is not a count is refused', () => {
    const c = new ViewCache(0);
    c.set('a', frame('a'));
    expect([c.size, c.get('a')]).toEqual([0, undefined]);
    expect(() => new ViewCache(-1)).toThrow(RangeError);
    expect(() => new ViewCache(1.5)).toThrow(RangeError);
  });
});
