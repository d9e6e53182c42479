/**
 * Supervisor heartbeat for Modbus equipment: each equipment's `Heartbeat`
 * holding register is incremented every `heartbeat.period_ms` (wrapping to 0
 * past its type or the profile's `wrap_at`), or toggled 0/1 for a life bit. The PLC-side
 * watchdog reverts to the last known-good recipe when it stops changing
 * (rule R8), so a failed write is reported, never retried in a burst.
 */
import type { ModbusEquipmentConfig } from '../../src/config/schema.js';
import { LkError } from '../../src/errors.js';
import { decode, encode } from './codec.js';
import type { UnitLane } from './lane.js';
import type { TagEntry } from './plan.js';
import { nextBeat, type SupervisionProfile } from '../supervision.js';

export interface HeartbeatOptions {
  readonly equipment: readonly ModbusEquipmentConfig[];
  readonly tags: ReadonlyMap<string, TagEntry>;
  /** Each equipment's supervision profile (connectors/supervision.ts): counter or toggle, and where a counter wraps. */
  readonly profiles?: ReadonlyMap<string, SupervisionProfile>;
  readonly lane: (unitId: number) => UnitLane;
  readonly onFailure: (equipment: string, error: string) => void;
}

/** Start one heartbeat per equipment that has a holding-register `Heartbeat` tag; returns the stop function. */
export function startHeartbeats(o: HeartbeatOptions): () => void {
  const timers: NodeJS.Timeout[] = [];
  let stopped = false;
  for (const eq of o.equipment) {
    const e = o.tags.get(`${eq.id}.Heartbeat`);
    if (!e || e.table !== 'holding') continue;
    const lane = o.lane(e.unitId);
    // Continue from the value the PLC holds, so a daemon restart is a change too.
    let counter: number | undefined;
    let busy = false;
    const tick = async (): Promise<void> => {
      // A write still waiting on a slow unit is not joined by another one.
      if (busy || stopped) return;
      busy = true;
      try {
        if (counter === undefined) {
          const d = decode(e.config, await lane.readRegisters('holding', e.address, e.count));
          counter = d.ok ? d.value : 0;
        }
        const hb = o.profiles?.get(eq.id)?.heartbeat ?? { kind: 'counter' as const, periodMs: eq.heartbeat.period_ms, wrapAt: null };
        let next = nextBeat(counter, hb);
        let regs: number[];
        try {
          regs = encode(e.config, next);
        } catch {
          // wrapped past the register's range
          next = 0;
          regs = encode(e.config, next);
        }
        await lane.writeRegisters(e.address, regs);
        counter = next;
      } catch (err) {
        if (!stopped) o.onFailure(eq.id, LkError.is(err) ? (err as LkError).code : String(err));
      } finally {
        busy = false;
      }
    };
    void tick();
    timers.push(setInterval(() => void tick(), eq.heartbeat.period_ms));
  }
  return () => {
    stopped = true;
    for (const t of timers) clearInterval(t);
  };
}
