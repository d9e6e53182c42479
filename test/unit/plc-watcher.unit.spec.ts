/**
 * The daemon's PLC watch around the pure observer: the confirming read of a counted revert's state, its failure and
 * the daemon's stop. `read` is injected (a PLC that answers, one that cannot be read); the real connector's path is
 * test/integration/daemon-watchdog.int.spec.ts.
 */
import { describe, expect, it } from 'vitest';
import type { Sample } from '../../connectors/types.js';
import { silentLogger } from '../../src/log.js';
import type { SupervisionEvent } from '../../src/supervision/plc-watch.js';
import { PlcWatcher } from '../../src/supervision/plc-watcher.js';

const sample = (tag: string, value: Sample['value']): Sample => ({ tag, value, quality: 'good', status: 'Good', unit: '1', sourceTime: 0, receivedAt: 0 });
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

function watcher(read: (tags: readonly string[]) => Promise<Sample[]>, stopped = () => false): { w: PlcWatcher; events: SupervisionEvent[]; reads: string[][] } {
  const events: SupervisionEvent[] = [];
  const reads: string[][] = [];
  const w = new PlcWatcher({ read: (tags) => (reads.push([...tags]), read(tags)), record: (e) => events.push(e), stopped, log: silentLogger });
  w.observe([sample('blender.SupervisorState', 0), sample('blender.RevertCount', 0), sample('blender.ActiveRecipe', 0)]);
  return { w, events, reads };
}

describe('PlcWatcher: a counted revert is recorded with the state read after it', () => {
  it('[R8] reads the state again at once and records the revert LOST; meanwhile the state is not shown', async () => {
    const { w, events, reads } = watcher(async () => [sample('blender.SupervisorState', 1)]);
    w.observe([sample('blender.RevertCount', 1), sample('blender.ActiveRecipe', 7)]);
    expect(events).toEqual([]);
    expect(w.views().get('blender')).toEqual({ revertCount: 1, activeRecipe: '7' });
    await settle();
    expect(reads).toEqual([['blender.SupervisorState']]);
    expect(events).toEqual([{ event: 'lkg_revert', equipment: 'blender', old: { state: 'ATTENDED', revertCount: 0, activeRecipe: '0' }, new: { state: 'LOST', revertCount: 1, activeRecipe: '7' } }]);
    expect(w.views().get('blender')?.state).toBe('LOST');
  });

  it('[R8] a state that cannot be read: the revert is recorded with its count and recipe, once', async () => {
    const { w, events } = watcher(async () => {
      throw new Error('LK_CONN_TIMEOUT');
    });
    w.observe([sample('blender.RevertCount', 1), sample('blender.ActiveRecipe', 7)]);
    await settle();
    expect(events).toEqual([{ event: 'lkg_revert', equipment: 'blender', old: { state: 'ATTENDED', revertCount: 0, activeRecipe: '0' }, new: { revertCount: 1, activeRecipe: '7' } }]);
    // the state read later records nothing more
    w.observe([sample('blender.SupervisorState', 1)]);
    expect(events).toHaveLength(1);
  });

  it('a read answered with a bad quality is a read that failed', async () => {
    const { w, events } = watcher(async () => [{ ...sample('blender.SupervisorState', null), quality: 'bad', status: 'BadCommunicationError' }]);
    w.observe([sample('blender.RevertCount', 1)]);
    await settle();
    expect(events).toEqual([{ event: 'lkg_revert', equipment: 'blender', old: { state: 'ATTENDED', revertCount: 0, activeRecipe: '0' }, new: { revertCount: 1, activeRecipe: '0' } }]);
  });

  it('a daemon that stops while the read is under way records nothing more', async () => {
    let stopped = false;
    let answer!: (s: Sample[]) => void;
    const { w, events } = watcher(() => new Promise((r) => (answer = r)), () => stopped);
    w.observe([sample('blender.RevertCount', 1)]);
    stopped = true;
    answer([sample('blender.SupervisorState', 1)]);
    await settle();
    expect(events).toEqual([]);
  });
});
