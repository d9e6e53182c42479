import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Quality, Sample } from '../../connectors/types.js';
import { flushPendingReverts, observeSupervision, supervisorViews, type SupervisionEvent, type SupervisorWatch } from '../../src/supervision/plc-watch.js';

const sample = (tag: string, value: Sample['value'], quality: Quality = 'good'): Sample => ({ tag, value, quality, status: quality === 'good' ? 'Good' : 'BadCommunicationError', unit: '1', sourceTime: 0, receivedAt: 0 });

/** Feed batches one after the other; return every event. */
function run(batches: Sample[][]): { event: string; equipment: string }[] {
  let views = new Map<string, SupervisorWatch>();
  const out: { event: string; equipment: string }[] = [];
  for (const b of batches) {
    const r = observeSupervision(views, b);
    views = r.views;
    out.push(...r.events.map((e) => ({ event: e.event, equipment: e.equipment })));
  }
  return out;
}

type PlcOp = 'revert' | 'rearm' | 'read-state' | 'read-count' | 'deliver';

/**
 * A Modbus-like blender under polling: `ops` revert or re-arm the PLC, read its state or its count (at separate
 * instants, into the poll's batch) or deliver the batch (only values that changed, as the pollers and subscriptions
 * do); after each delivery, the daemon's confirming read of the state for every revert the observer left unconfirmed.
 * A last poll reads both. Returns the events and the PLC's final count.
 */
function polled(ops: readonly PlcOp[]): { events: SupervisionEvent[]; count: number } {
  const plc = { state: 0, count: 0 };
  let views = observeSupervision(new Map(), [sample('blender.SupervisorState', 0), sample('blender.RevertCount', 0)]).views;
  const last = new Map<string, unknown>([['blender.SupervisorState', 0], ['blender.RevertCount', 0]]);
  let batch: Sample[] = [];
  const events: SupervisionEvent[] = [];
  const read = (tag: string, v: number): void => {
    batch = [...batch.filter((x) => x.tag !== tag), sample(tag, v)];
  };
  const deliver = (b: Sample[]): void => {
    const changed = b.filter((x) => last.get(x.tag) !== x.value);
    for (const x of changed) last.set(x.tag, x.value);
    const r = observeSupervision(views, changed);
    views = r.views;
    events.push(...r.events);
    for (const e of r.unconfirmed) {
      const c = observeSupervision(views, [sample(`${e}.SupervisorState`, plc.state)]);
      views = c.views;
      events.push(...c.events);
    }
  };
  for (const o of ops) {
    if (o === 'revert' && plc.state === 0) {
      plc.state = 1;
      plc.count += 1;
    } else if (o === 'rearm' && plc.state === 1) plc.state = 0;
    else if (o === 'read-state') read('blender.SupervisorState', plc.state);
    else if (o === 'read-count') read('blender.RevertCount', plc.count);
    else if (o === 'deliver') {
      deliver(batch);
      batch = [];
    }
  }
  deliver([sample('blender.SupervisorState', plc.state), sample('blender.RevertCount', plc.count)]);
  return { events, count: plc.count };
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

  it('[R8] a revert counted beside a state read before it waits for the state read after it, and is recorded LOST', () => {
    // the Modbus poll reads the state's block, the PLC reverts, the poll reads the count's block: one batch
    let views = new Map<string, SupervisorWatch>();
    views = observeSupervision(views, [sample('blender.SupervisorState', 0), sample('blender.RevertCount', 0), sample('blender.ActiveRecipe', 0)]).views;
    const torn = observeSupervision(views, [sample('blender.SupervisorState', 0), sample('blender.RevertCount', 1), sample('blender.ActiveRecipe', 7)]);
    expect(torn.events).toEqual([]);
    expect(torn.unconfirmed).toEqual(['blender']);
    // meanwhile nobody is shown the ATTENDED read before the revert: the state is not known (the line is not ready)
    expect(supervisorViews(torn.views).get('blender')).toEqual({ revertCount: 1, activeRecipe: '7' });
    // the state read again (the daemon asks at once): the revert, with the state read after it
    const confirmed = observeSupervision(torn.views, [sample('blender.SupervisorState', 1)]);
    expect(confirmed.events).toEqual([{ event: 'lkg_revert', equipment: 'blender', old: { state: 'ATTENDED', revertCount: 0, activeRecipe: '0' }, new: { state: 'LOST', revertCount: 1, activeRecipe: '7' } }]);
    expect(confirmed.unconfirmed).toEqual([]);
    expect(confirmed.views.get('blender')?.pendingRevert).toBeUndefined();
    expect(supervisorViews(confirmed.views).get('blender')).toEqual({ state: 'LOST', revertCount: 1, activeRecipe: '7' });
    // read again, LOST again: nothing more happened
    expect(observeSupervision(confirmed.views, [sample('blender.SupervisorState', 1)]).events).toEqual([]);
  });

  it('[R8] a counted revert whose state reads ATTENDED afterwards (re-armed since) is recorded as a revert and a re-arm, each with what was read', () => {
    let views = observeSupervision(new Map(), attended).views;
    const counted = observeSupervision(views, [sample('press.RevertCount', 1)]);
    expect(counted.events).toEqual([]);
    views = counted.views;
    const after = observeSupervision(views, [sample('press.SupervisorState', 'ATTENDED')]);
    expect(after.events).toEqual([
      { event: 'lkg_revert', equipment: 'press', old: { state: 'ATTENDED', revertCount: 0, activeRecipe: 'SUPERVISED' }, new: { revertCount: 1, activeRecipe: 'SUPERVISED' } },
      { event: 'rearm', equipment: 'press', old: { revertCount: 1, activeRecipe: 'SUPERVISED' }, new: { state: 'ATTENDED', revertCount: 1, activeRecipe: 'SUPERVISED' } },
    ]);
    // nothing more when the state is read again
    expect(observeSupervision(after.views, [sample('press.SupervisorState', 'ATTENDED')]).events).toEqual([]);
  });

  it('[R8] a counted revert whose state cannot be read is recorded with its count and recipe, no state', () => {
    const views = observeSupervision(new Map(), attended).views;
    const counted = observeSupervision(views, [sample('press.RevertCount', 1), sample('press.ActiveRecipe', 'LKG-7')]);
    const unread = observeSupervision(counted.views, [sample('press.SupervisorState', null, 'bad')]);
    expect(unread.events).toEqual([]);
    const f = flushPendingReverts(unread.views, ['press', 'coater']);
    expect(f.events).toEqual([{ event: 'lkg_revert', equipment: 'press', old: { state: 'ATTENDED', revertCount: 0, activeRecipe: 'SUPERVISED' }, new: { revertCount: 1, activeRecipe: 'LKG-7' } }]);
    // recorded once: the state read later changes nothing
    expect(observeSupervision(f.views, [sample('press.SupervisorState', 'LOST')]).events).toEqual([]);
  });

  it('[R8] property: whatever instants the state and the count are read at, every revert is recorded once, LOST, with its count', () => {
    // a PLC that only reverts (no re-arm): a revert may fall before, between or after the two reads of a poll
    fc.assert(fc.property(fc.array(fc.constantFrom<PlcOp>('revert', 'read-state', 'read-count', 'deliver'), { minLength: 1, maxLength: 60 }), (ops) => {
      const { events, count } = polled(ops);
      for (const e of events) {
        expect(e.event).toBe('lkg_revert');
        expect(e.new.state).toBe('LOST');
        expect(e.new.revertCount).toBeGreaterThan(e.old!.revertCount!);
      }
      expect(events.length).toBe(count > 0 ? 1 : 0);
      expect(events.at(-1)?.new.revertCount ?? 0).toBe(count);
    }), { numRuns: 500 });
  });

  it("[R8] another vendor's convention (1 = in remote, 0 = local fallback): the torn read waits and the revert is recorded in canonical words", () => {
    const profile = {
      equipment: 'granulator', mode: 'supervised' as const,
      heartbeat: { kind: 'toggle' as const, periodMs: 500, wrapAt: null },
      state: { supervised: [1], fallback: [0], revert: 0, rearm: 1 },
    };
    const profiles = new Map([['granulator', profile]]);
    let views = observeSupervision(new Map(), [sample('granulator.SupervisorState', 1), sample('granulator.RevertCount', 41)], profiles).views;
    const torn = observeSupervision(views, [sample('granulator.SupervisorState', 1), sample('granulator.RevertCount', 42)], profiles);
    expect(torn.events).toEqual([]);
    expect(torn.unconfirmed).toEqual(['granulator']);
    views = torn.views;
    const confirmed = observeSupervision(views, [sample('granulator.SupervisorState', 0)], profiles);
    expect(confirmed.events).toEqual([{ event: 'lkg_revert', equipment: 'granulator', old: { state: 'ATTENDED', revertCount: 41 }, new: { state: 'LOST', revertCount: 42 } }]);
  });

  it('[R8] property: with re-arms between the reads too, every revert is recorded with its count, LOST as read or followed by the re-arm that was read', () => {
    fc.assert(fc.property(fc.array(fc.constantFrom<PlcOp>('revert', 'rearm', 'read-state', 'read-count', 'deliver'), { minLength: 1, maxLength: 80 }), (ops) => {
      const { events, count } = polled(ops);
      events.forEach((e, i) => {
        if (e.event === 'lkg_revert') {
          // LOST as read, or no state (never read LOST) and the re-arm that was read right after it
          if (e.new.state === undefined) expect(events[i + 1]).toMatchObject({ event: 'rearm', new: { state: 'ATTENDED' } });
          else expect(e.new.state).toBe('LOST');
        } else {
          expect(e.event).toBe('rearm');
          expect(e.new.state).toBe('ATTENDED');
        }
      });
      const reverts = events.filter((e) => e.event === 'lkg_revert');
      expect(reverts.length > 0).toBe(count > 0);
      expect(reverts.at(-1)?.new.revertCount ?? 0).toBe(count);
    }), { numRuns: 500 });
  });
});

