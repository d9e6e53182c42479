import { describe, expect, it } from 'vitest';
import { judgeReadiness, notReadyError, type ReadinessSnapshot } from '../../src/engine/run/readiness.js';

const READY: ReadinessSnapshot = {
  plcs: [
    { equipment: 'blender', connection: 'modbus-1', state: 'ATTENDED', supervised: true },
    { equipment: 'press', connection: 'opcua-1', state: 'ATTENDED', supervised: true },
  ],
  connections: [{ id: 'modbus-1', state: 'connected' }, { id: 'opcua-1', state: 'connected' }],
  model: null,
  policyBundle: true,
};

const codes = (s: ReadinessSnapshot): string[] => judgeReadiness(s).reasons.map((r) => `${r.code}:${r.subject}`);

describe('line readiness (pure judgement)', () => {
  it('a line with every PLC ATTENDED, every connection up, valid models and a bundle is ready, with no reason', () => {
    expect(judgeReadiness(READY)).toEqual({ ready: true, reasons: [] });
  });

  it('a LOST PLC is named, with the command that re-arms it', () => {
    const r = judgeReadiness({ ...READY, plcs: [READY.plcs[0]!, { ...READY.plcs[1]!, state: 'LOST' }] });
    expect(r.ready).toBe(false);
    expect(r.reasons).toEqual([{ code: 'PLC_LOST', subject: 'press', message: expect.stringContaining('linekeeper line rearm press') }]);
  });

  it('a PLC whose state was never read is not ready; one behind a connection that is down is reported as the connection', () => {
    expect(codes({ ...READY, plcs: [{ ...READY.plcs[0]!, state: undefined }, READY.plcs[1]!] })).toEqual(['PLC_STATE_UNKNOWN:blender']);
    expect(codes({ ...READY, plcs: [{ ...READY.plcs[0]!, state: undefined }, READY.plcs[1]!], connections: [{ id: 'modbus-1', state: 'lost' }, READY.connections[1]!] })).toEqual(['CONNECTION_DOWN:modbus-1']);
    // an unexpected state text is not ATTENDED either
    expect(codes({ ...READY, plcs: [{ ...READY.plcs[0]!, state: 'code 7' }, READY.plcs[1]!] })).toEqual(['PLC_STATE_UNKNOWN:blender']);
  });

  it('a LOST PLC behind a connection that came back is still LOST (its last report stands until it is re-armed)', () => {
    expect(codes({ ...READY, plcs: [{ ...READY.plcs[0]!, state: 'LOST' }, READY.plcs[1]!], connections: [{ id: 'modbus-1', state: 'connecting' }, READY.connections[1]!] })).toEqual(['PLC_LOST:blender', 'CONNECTION_DOWN:modbus-1']);
  });

  it('every reason is listed, in a stable order: PLCs, connections, models, policy', () => {
    const s: ReadinessSnapshot = {
      plcs: [{ ...READY.plcs[0]!, state: 'LOST' }, { ...READY.plcs[1]!, supervised: false }],
      connections: [READY.connections[0]!, { id: 'opcua-1', state: 'closed' }],
      model: { kind: 'twin', code: 'LK_MODEL_NOT_PINNED', message: 'twin@3 is not pinned to site-a' },
      policyBundle: false,
    };
    expect(codes(s)).toEqual(['PLC_LOST:blender', 'PLC_NOT_SUPERVISED:press', 'CONNECTION_DOWN:opcua-1', 'MODEL_INVALID:twin', 'POLICY_BUNDLE_MISSING:policy']);
    expect(judgeReadiness(s).ready).toBe(false);
  });

  it('the refusal is LK_LINE_NOT_READY with every reason in detail.reasons', () => {
    const r = judgeReadiness({ ...READY, plcs: [{ ...READY.plcs[0]!, state: 'LOST' }, READY.plcs[1]!], model: { kind: 'potency', code: 'LK_MODEL_CORRUPT', message: 'sha mismatch' } });
    const e = notReadyError('line-3', r);
    expect(e.code).toBe('LK_LINE_NOT_READY');
    expect(e.detail).toMatchObject({ line: 'line-3', reasons: [{ code: 'PLC_LOST', subject: 'blender' }, { code: 'MODEL_INVALID', subject: 'potency' }] });
    expect(e.message).toContain('blender is LOST');
  });
});

describe('line readiness: another run', () => {
  it('a run on the line is LINE_BUSY, named for its own tenant and anonymous for another [R9]', () => {
    expect(judgeReadiness({ ...READY, activeRun: { id: 'run_ab', status: 'HELD' } }).reasons).toEqual([{ code: 'LINE_BUSY', subject: 'line', message: expect.stringContaining('run_ab (HELD)') }]);
    expect(judgeReadiness({ ...READY, activeRun: { id: null, status: 'RUNNING' } }).reasons[0]!.message).toContain("another tenant's run");
    expect(judgeReadiness({ ...READY, activeRun: null }).ready).toBe(true);
  });
});
