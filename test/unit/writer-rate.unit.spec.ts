/**
 * The rate of change of a setpoint is a process quantity: on the fast-forwarded simulator the guarded writer
 * judges the time since a setpoint's last move in process time (wall time × the time scale), so an agent's move
 * five process minutes after the last is not refused as if it came half a second later. On a real line (scale 1)
 * nothing changes.
 */
import { describe, expect, it } from 'vitest';
import { inProcessTime } from '../../src/engine/guarded-writer.js';
import { evaluate } from '../../src/policy/index.js';
import { T0, bundle, context, request } from './policy-helpers.js';

describe('rates of change in process time', () => {
  // press.MainForce: max_step 1.5 kN, max_rate_per_min 3 kN; a move of 1.5 kN needs half a process minute
  const last = { value: 12, at: T0 - 500 };
  const move = (l: { value: number; at: number } | undefined) => evaluate(request({ value: '10.5 kN' }), bundle, context({ current: 12, lastMove: l ?? null }));

  it('half a second of wall time after the last move is five process minutes at time scale 600: allowed', () => {
    expect(move(last).reasons).toContain('RATE_TOO_HIGH');
    const shifted = inProcessTime(last, T0, 600)!;
    expect([shifted.value, T0 - shifted.at]).toEqual([12, 300_000]);
    expect(move(shifted).outcome).toBe('allow');
  });

  it('is the wall clock on a real line, and leaves no last move or a bad scale alone', () => {
    expect(inProcessTime(last, T0, 1)).toBe(last);
    expect(inProcessTime(last, T0)).toBe(last);
    expect(inProcessTime(undefined, T0, 600)).toBeUndefined();
    for (const bad of [0, -2, Number.NaN, Number.POSITIVE_INFINITY]) expect(inProcessTime(last, T0, bad)).toBe(last);
    // still too fast in process time: 1.5 kN within 0.2 process minutes at scale 24
    expect(move(inProcessTime(last, T0, 24)).reasons).toContain('RATE_TOO_HIGH');
  });
});
