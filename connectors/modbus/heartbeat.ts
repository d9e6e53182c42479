/**
 * Supervisor heartbeat for Modbus equipment: each equipment's `Heartbeat`
 * holding register is incremented every `heartbeat.period_ms`. The PLC-side
 * watchdog reverts to the last known-good recipe when it stops changing
 * (rule R8), so a failed write is reported, never retried in a burst.
 */
import type { ModbusEquipmentConfig } from '../../src/config/schema.js';
import { LkError } from '../../src/errors.js';
import { decode, encode } from './codec.js';
import type { UnitLane } from './lane.js';
import type { TagEntry } from './plan.js';

export interface HeartbeatOptions {
  readonly equipment: readonly ModbusEquipmentConfig[];
  readonly tags: ReadonlyMap<string, TagEntry>;
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
        let next = counter + 1;
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
