import { describe, expect, it } from 'vitest';
import type { Quality, Sample } from '../../connectors/types.js';
import { observeSupervision, type SupervisorView } from '../../src/supervision/plc-watch.js';

const sample = (tag: string, value: Sample['value'], quality: Quality = 'good'): Sample => ({ tag, value, quality, status: quality === 'good' ? 'Good' : 'BadCommunicationError', unit: '1', sourceTime: 0, receivedAt: 0 });

/** Feed batches one after the other; return every event. */
function run(batches: Sample[][]): { event: string; equipment: string }[] {
  let views = new Map<string, SupervisorView>();
  const out: { event: string; equipment: string }[] = [];
  for (const b of batches) {
    const r = observeSupervision(views, b);
    views = r.views;
    out.push(...r.events.map((e) => ({ event: e.event, equipment: e.equipment })));
  }
  return out;
}

describe('PLC watchdog events from supervisor tags', () => {
  const attended = [sample('press.SupervisorState', 'ATTENDED'), sample('press.RevertCount', 0), sample('press.ActiveRecipe', 'SUPERVISED')];

  it('the first reading is a baseline: nothing happened', () => {
    expect(run([attended])).toEqual([]);
  });

  it('a revert is one event whether state and count arrive together or apart, in either order', () => {
    const lost = sample('press.SupervisorState', 'LOST');
    const count = sample('press.RevertCount', 1);
    expect(run([attended, [lost, count]])).toEqual([{ event: 'lkg_revert', equipment: 'press' }]);
    expect(run([attended, [lost], [count]])).toEqual([{ event: 'lkg_revert', equipment: 'press' }]);
    expect(run([attended, [count], [lost]])).toEqual([{ event: 'lkg_revert', equipment: 'press' }]);
  });

  it('a re-arm by a person is its own event; the next revert is recorded again', () => {
    expect(
      run([attended, [sample('press.SupervisorState', 'LOST'), sample('press.RevertCount', 1)], [sample('press.SupervisorState', 'ATTENDED')], [sample('press.RevertCount', 2), sample('press.SupervisorState', 'LOST')]]),
    ).toEqual([
      { event: 'lkg_revert', equipment: 'press' },
      { event: 'rearm', equipment: 'press' },
      { event: 'lkg_revert', equipment: 'press' },
    ]);
  });

  it('Modbus state codes (0 ATTENDED, 1 LOST) and recipe numbers are understood', () => {
    expect(run([[sample('blender.SupervisorState', 0), sample('blender.RevertCount', 3), sample('blender.ActiveRecipe', 0)], [sample('blender.SupervisorState', 1), sample('blender.RevertCount', 4), sample('blender.ActiveRecipe', 7)]])).toEqual([
      { event: 'lkg_revert', equipment: 'blender' },
    ]);
  });

  it('a PLC found LOST at start reverted while linekeeper was away', () => {
    expect(run([[sample('coater.SupervisorState', 'LOST'), sample('coater.RevertCount', 2)]])).toEqual([{ event: 'found_lost', equipment: 'coater' }]);
  });

  it('[P11.10(h)] a bad-quality reading is not evidence of anything', () => {
    expect(run([attended, [sample('press.SupervisorState', null, 'bad'), sample('press.RevertCount', null, 'bad')], [sample('press.SupervisorState', 'ATTENDED')]])).toEqual([]);
  });

  it('equipment are independent; without a count the state change stands in', () => {
    expect(run([[sample('press.SupervisorState', 'ATTENDED'), sample('nir.SupervisorState', 'ATTENDED')], [sample('nir.SupervisorState', 'LOST')]])).toEqual([{ event: 'lkg_revert', equipment: 'nir' }]);
  });
});
