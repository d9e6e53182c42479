/**
 * Reads setpoints back from the equipment for the guarded writer: the current
 * values the policy's step check needs, and the read-back of recovery. Reads
 * only; the write capability stays in the guarded writer.
 */
import type { Connector } from '../../connectors/types.js';
import type { SiteConfig } from '../config/schema.js';
import { LkError } from '../errors.js';
import type { Reading } from './recovery.js';

export class SetpointReader {
  private readonly readers = new Map<string, Connector>();
  /** Setpoint tag id → connection id. */
  readonly connectionOf = new Map<string, string>();
  private readonly tolerances = new Map<string, number>();

  constructor(connectors: readonly Connector[], site: SiteConfig) {
    for (const c of connectors) this.readers.set(c.id, c);
    for (const e of site.equipment) {
      for (const t of e.tags) {
        if (t.kind !== 'setpoint') continue;
        this.connectionOf.set(`${e.id}.${t.name}`, e.connection);
        this.tolerances.set(`${e.id}.${t.name}`, t.readback_tolerance ?? 0);
      }
    }
  }

  /** Read-back tolerance of a setpoint in its unit (0 when the configuration gives none). */
  tolerance(setpoint: string): number {
    return this.tolerances.get(setpoint) ?? 0;
  }

  /** Current values, null where unknown (the policy then denies the move: CURRENT_VALUE_UNKNOWN). Never throws. */
  async current(setpoints: readonly string[]): Promise<Map<string, number | null>> {
    const out = new Map<string, number | null>();
    const byConn = new Map<string, string[]>();
    for (const s of setpoints) {
      const c = this.connectionOf.get(s);
      if (c && this.readers.has(c)) byConn.set(c, [...(byConn.get(c) ?? []), s]);
    }
    for (const [c, tags] of byConn) {
      try {
        for (const smp of await this.readers.get(c)!.read(tags)) out.set(smp.tag, smp.quality === 'good' && typeof smp.value === 'number' && Number.isFinite(smp.value) ? smp.value : null);
      } catch {
        // unknown current value
      }
    }
    return out;
  }

  /** One setpoint with its quality, for recovery: never throws; value null when its connector is not connected. */
  async one(setpoint: string): Promise<Reading> {
    const c = this.readers.get(this.connectionOf.get(setpoint) ?? '');
    if (!c) return { value: null, quality: 'bad', status: 'LK_TAG_UNKNOWN' };
    if (c.health().state !== 'connected') return { value: null, quality: 'bad', status: 'LK_CONN_UNAVAILABLE' };
    try {
      const [smp] = await c.read([setpoint]);
      const ok = smp !== undefined && smp.quality === 'good' && typeof smp.value === 'number' && Number.isFinite(smp.value);
      return { value: ok ? (smp.value as number) : null, quality: smp?.quality ?? 'bad', status: smp?.status ?? 'NO_SAMPLE' };
    } catch (err) {
      return { value: null, quality: 'bad', status: LkError.is(err) ? err.code : 'LK_CONN_UNAVAILABLE' };
    }
  }
}
