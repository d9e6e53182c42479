/**
 * Pure planning for the Modbus connector: the tag table built from the
 * configuration, coalescing of tag reads into register blocks, and the
 * mapping of Modbus exception codes to LK_* codes. No I/O.
 */
import type { ErrorCode } from '../../src/errors.js';
import type { ModbusEquipmentConfig, ModbusTagConfig } from '../../src/config/schema.js';
import type { TagDescription } from '../types.js';
import { registerCount } from './codec.js';

/** Modbus allows at most 125 registers in one FC3/FC4 read. */
export const MAX_REGISTERS_PER_READ = 125;

export type Table = 'holding' | 'input';

/** One configured tag, resolved to where it lives on the wire. */
export interface TagEntry {
  readonly id: string;
  readonly equipment: string;
  readonly unitId: number;
  readonly config: ModbusTagConfig;
  readonly table: Table;
  readonly address: number;
  readonly count: number;
}

/** A contiguous register range of one unit and table, and the tags inside it. */
export interface ReadBlock {
  readonly unitId: number;
  readonly table: Table;
  readonly start: number;
  readonly count: number;
  readonly tags: readonly TagEntry[];
}

/** Build the tag table (`<equipment>.<Tag>` → entry) of the equipment on one connection. */
export function buildTagTable(equipment: readonly ModbusEquipmentConfig[]): Map<string, TagEntry> {
  const out = new Map<string, TagEntry>();
  for (const eq of equipment) {
    for (const t of eq.tags) {
      const id = `${eq.id}.${t.name}`;
      out.set(id, { id, equipment: eq.id, unitId: eq.unit_id, config: t, table: t.table, address: t.address, count: registerCount(t.type) });
    }
  }
  return out;
}

/** Only setpoints in holding registers can be written; supervisor tags are written by the connector itself. */
export function isWritable(e: TagEntry): boolean {
  return e.config.kind === 'setpoint' && e.table === 'holding';
}

export function describeTag(e: TagEntry): TagDescription {
  const t = e.config;
  return {
    tag: e.id,
    equipment: e.equipment,
    name: t.name,
    kind: t.kind,
    unit: t.unit,
    dataType: t.type,
    writable: isWritable(e),
    ...(t.range ? { range: { min: t.range.min, max: t.range.max } } : {}),
    address: `${e.unitId}/${e.table}/${e.address}`,
  };
}

/**
 * Group tags into as few reads as possible: same unit and table, sorted by
 * address, merged while the registers touch or overlap (gap ≤ `maxGap`) and the
 * block stays within {@link MAX_REGISTERS_PER_READ}. The default gap is 0
 * because reading an unmapped register makes many devices answer exception 2
 * for the whole block.
 */
export function planReads(entries: readonly TagEntry[], maxGap = 0, maxCount = MAX_REGISTERS_PER_READ): ReadBlock[] {
  const groups = new Map<string, TagEntry[]>();
  for (const e of entries) {
    const k = `${e.unitId}/${e.table}`;
    const g = groups.get(k);
    if (g) g.push(e);
    else groups.set(k, [e]);
  }
  const blocks: ReadBlock[] = [];
  for (const g of groups.values()) {
    g.sort((a, b) => a.address - b.address || b.count - a.count);
    let cur: { start: number; end: number; tags: TagEntry[] } | undefined;
    const flush = (): void => {
      if (cur) blocks.push({ unitId: g[0]!.unitId, table: g[0]!.table, start: cur.start, count: cur.end - cur.start, tags: cur.tags });
    };
    for (const e of g) {
      const end = e.address + e.count;
      if (cur && e.address <= cur.end + maxGap && Math.max(cur.end, end) - cur.start <= maxCount) {
        cur.end = Math.max(cur.end, end);
        cur.tags.push(e);
      } else {
        flush();
        cur = { start: e.address, end, tags: [e] };
      }
    }
    flush();
  }
  return blocks;
}

/** Modbus exception code (from the server's exception response) → LK code. */
export function exceptionCode(modbusCode: number): ErrorCode {
  switch (modbusCode) {
    case 1: return 'LK_MODBUS_ILLEGAL_FUNCTION';
    case 2: return 'LK_MODBUS_ILLEGAL_ADDRESS';
    case 3: return 'LK_MODBUS_ILLEGAL_VALUE';
    case 4: return 'LK_MODBUS_DEVICE_FAILURE';
    case 6: return 'LK_MODBUS_BUSY';
    case 10:
    case 11: return 'LK_MODBUS_GATEWAY';
    default: return 'LK_MODBUS_EXCEPTION';
  }
}
