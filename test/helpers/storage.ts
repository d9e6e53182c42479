/**
 * Driving a daemon's storage guard on a full disk (docs/fail-safe.md), as the full-disk tests do — the tmpfs one
 * (evidence-daemon) and the one SQLite's own page cap makes full everywhere (store-full): the same steps, so that
 * both show the same behaviour.
 */
import { expect, type MockInstance } from 'vitest';
import { watchdogEvent } from '../../src/audit/site-events.js';
import type { Daemon } from '../../src/daemon.js';

/**
 * Site events until one cannot be written and is held (SQLite may still have room in the pages it holds), then two
 * more: at the bound of 3 held the daemon fails closed — every connector's heartbeats stop (`stops`, spies on
 * `stopHeartbeat`), once — and a retry does not get through. @returns the index of the first held event.
 */
export function fillToFailClosed(d: Daemon, stops: readonly MockInstance[]): number {
  const results: string[] = [];
  for (let i = 0; i < 20_000 && !results.includes('held'); i++) results.push(watchdogEvent(d.storage, { event: 'lkg_revert', equipment: 'press', detail: { i } }));
  expect(results).toContain('held');
  const firstHeld = results.indexOf('held');
  watchdogEvent(d.storage, { event: 'lkg_revert', equipment: 'coater', detail: { i: firstHeld + 1 } });
  expect(stops.every((s) => s.mock.calls.length === 0)).toBe(true);
  watchdogEvent(d.storage, { event: 'lkg_revert', equipment: 'blender', detail: { i: firstHeld + 2 } });
  // the bound (3 held): heartbeats stop, so the PLC watchdogs revert to LKG
  expect(d.storage.outage()).toMatchObject({ held: 3, failedClosed: true });
  expect(stops.every((s) => s.mock.calls.length === 1)).toBe(true);
  expect(d.storage.retry()).toBe(false);
  return firstHeld;
}
