/**
 * The daemon's watch of what the PLC watchdogs do (R8): supervisor samples folded by the pure observer
 * (plc-watch.ts), every event it finds handed to `record`, and — for a revert counted without a state read after
 * it — the PLC's `SupervisorState` read again at once through `read`, so the revert is recorded with the state read
 * after it; if that read fails, the revert is recorded with its count and recipe alone, never left out.
 */
import type { SupervisionProfile } from '../../connectors/supervision.js';
import type { Sample } from '../../connectors/types.js';
import type { Logger } from '../log.js';
import { flushPendingReverts, observeSupervision, supervisorViews, type SupervisionEvent, type SupervisorView, type SupervisorWatch } from './plc-watch.js';

export interface PlcWatcherOptions {
  /** Each equipment's state convention (connectors/supervision.ts); without one, the simulator's. */
  readonly profiles?: ReadonlyMap<string, SupervisionProfile>;
  /** Read tags through the connector that serves them; rejects when none does or the read fails. */
  readonly read: (tags: readonly string[]) => Promise<Sample[]>;
  /** Record one event (the site chain, the runs in progress). */
  readonly record: (e: SupervisionEvent) => void;
  /** True once the daemon stops: a read still under way then records nothing. */
  readonly stopped: () => boolean;
  readonly log: Logger;
}

export class PlcWatcher {
  private watch = new Map<string, SupervisorWatch>();

  constructor(private readonly o: PlcWatcherOptions) {}

  /** Fold supervisor samples (a baseline read, a subscription's delivery) and record what they mean. */
  observe(samples: readonly Sample[]): void {
    const r = observeSupervision(this.watch, samples, this.o.profiles);
    this.watch = r.views;
    for (const e of r.events) this.o.record(e);
    for (const equipment of r.unconfirmed) void this.confirm(equipment);
  }

  /** What the line's readiness, the API and the console are shown (no state while a revert waits for one). */
  views(): Map<string, SupervisorView> {
    return supervisorViews(this.watch);
  }

  /** Read the state after a counted revert; record the revert with its count and recipe alone if it cannot be read. */
  private async confirm(equipment: string): Promise<void> {
    const tag = `${equipment}.SupervisorState`;
    let err: unknown = new Error(`${tag} was not readable`);
    try {
      const got = await this.o.read([tag]);
      if (!this.o.stopped()) this.observe(got);
    } catch (e) {
      err = e;
    }
    if (this.o.stopped() || !this.watch.get(equipment)?.pendingRevert) return;
    this.o.log.warn({ err, equipment }, 'the state after a counted PLC revert could not be read: recording the revert with its count and recipe');
    const f = flushPendingReverts(this.watch, [equipment]);
    this.watch = f.views;
    for (const e of f.events) this.o.record(e);
  }
}
