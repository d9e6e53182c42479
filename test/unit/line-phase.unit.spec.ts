/**
 * Where the line says its batch phase (src/engine/run/line.ts `plcPhaseObserver`, configured by `line.phase`):
 * a tag of the site's own PLC and the values that mean each phase — a PackML UnitState number, an ISA-88 state
 * word — not only linekeeper's simulator's `plc.BatchPhase` strings. The reads are a function of the test (what the
 * PLC reports, one value per poll); time is the injected clock.
 */
import { describe, expect, it } from 'vitest';
import type { Sample } from '../../connectors/types.js';
import { plcPhaseObserver } from '../../src/engine/run/line.js';
import { rejectionCode } from '../helpers/codes.js';

/** A PLC that reports `values` one per read (the last one from then on), and counts the reads of each tag. */
function plc(values: readonly (string | number)[]) {
  const reads: string[] = [];
  let i = 0;
  const read = async (tags: readonly string[]): Promise<Sample[]> => {
    reads.push(...tags);
    const v = values[Math.min(i++, values.length - 1)]!;
    return tags.map((tag) => ({ tag, value: v, quality: 'good' as const, status: 'Good', unit: '1', sourceTime: 0, receivedAt: 0 }));
  };
  return { read, reads };
}

describe('the phase source of a line', () => {
  it('a PackML UnitState: COMPRESS is entered when the PLC reports 6 (Execute), not on the values before it', async () => {
    const p = plc([2, 5, 6]);
    const seq = plcPhaseObserver(p.read, { tag: 'line.UnitState', values: { COMPRESS: [6] }, pollMs: 1, now: () => 0 });
    await seq.enter('COMPRESS', 'B-1', new AbortController().signal);
    expect(p.reads).toEqual(['line.UnitState', 'line.UnitState', 'line.UnitState']);
  });

  it('an ISA-88 state word, several values for one phase; without a map the phase\'s own name', async () => {
    const words = plc(['IDLE', 'RUNNING-DRY']);
    await plcPhaseObserver(words.read, { tag: 'fbd.State', values: { DRY: ['RUNNING-DRY', 'HOLDING-DRY'] }, pollMs: 1, now: () => 0 }).enter('DRY', 'B-1', new AbortController().signal);
    expect(words.reads).toHaveLength(2);
    const names = plc(['BLEND', 'COAT']);
    await plcPhaseObserver(names.read, { pollMs: 1, now: () => 0 }).enter('COAT', 'B-1', new AbortController().signal);
    expect(names.reads).toEqual(['plc.BatchPhase', 'plc.BatchPhase']);
  });

  it('the operator\u2019s notice comes before the first read, once per step, and the phase still counts only when the line reports it', async () => {
    const p = plc(['BLEND', 'BLEND', 'DRY']);
    const notices: string[] = [];
    const seq = plcPhaseObserver(p.read, { pollMs: 1, now: () => 0, onWait: (phase, batch) => notices.push(`${phase}/${batch}:${p.reads.length}`) });
    await seq.enter('DRY', 'B-7', new AbortController().signal);
    expect(notices).toEqual(['DRY/B-7:0']);
    expect(p.reads).toHaveLength(3);
    // a line already in the phase (a resumed step) is still told, and the step goes on at the first read
    const same = plc(['DRY']);
    const told: string[] = [];
    await plcPhaseObserver(same.read, { pollMs: 1, now: () => 0, onWait: (phase) => told.push(phase) }).enter('DRY', 'B-7', new AbortController().signal);
    expect([told, same.reads.length]).toEqual([['DRY'], 1]);
  });

  it('a phase the PLC never reports ends in LK_CONN_TIMEOUT after the configured wait (injected clock), naming the tag and what it said', async () => {
    let t = 0;
    const p = plc([3]);
    const seq = plcPhaseObserver(async (tags) => ((t += 1000), p.read(tags)), { tag: 'line.UnitState', values: { COAT: [6] }, timeoutMs: 5000, pollMs: 1, now: () => t });
    expect(await rejectionCode(seq.enter('COAT', 'B-1', new AbortController().signal))).toBe('LK_CONN_TIMEOUT');
    expect(p.reads.length).toBeGreaterThanOrEqual(5);
  });
});
