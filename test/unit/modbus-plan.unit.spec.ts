import { describe, expect, it } from 'vitest';
import type { ModbusEquipmentConfig } from '../../src/config/schema.js';
import { ModbusEquipment } from '../../src/config/schema.js';
import { buildTagTable, describeTag, exceptionCode, planReads, type TagEntry } from '../../connectors/modbus/plan.js';
import { filterChanges } from '../../connectors/modbus/poller.js';
import type { Sample } from '../../connectors/types.js';

function eq(unit: number, id: string, tags: { name: string; table: 'holding' | 'input'; address: number; type: string; kind?: string }[]): ModbusEquipmentConfig {
  return ModbusEquipment.parse({
    id, name: id, type: 'blender', protocol: 'modbus', connection: 'mb', unit_id: unit,
    tags: tags.map((t) => ({ kind: 'measurement', unit: '1', ...t })),
  });
}

describe('modbus read planning', () => {
  const table = buildTagTable([
    eq(1, 'blender', [
      { name: 'A', table: 'holding', address: 0, type: 'uint32' },
      { name: 'B', table: 'holding', address: 2, type: 'uint32' },
      { name: 'C', table: 'holding', address: 4, type: 'uint16' },
      { name: 'D', table: 'holding', address: 6, type: 'uint32' },
      { name: 'E', table: 'input', address: 0, type: 'float32' },
      { name: 'F', table: 'input', address: 2, type: 'float64' },
      { name: 'S', table: 'holding', address: 100, type: 'float32', kind: 'setpoint' },
    ]),
    eq(2, 'fluidbed', [{ name: 'A', table: 'input', address: 0, type: 'float32' }]),
  ]);
  const all = [...table.values()];

  it('coalesces contiguous registers per unit and table, never across a gap or a unit', () => {
    const blocks = planReads(all).map((b) => ({ key: `${b.unitId}/${b.table}/${b.start}+${b.count}`, tags: b.tags.map((t) => t.id) }));
    expect(blocks).toEqual(
      expect.arrayContaining([
        { key: '1/holding/0+5', tags: ['blender.A', 'blender.B', 'blender.C'] },
        { key: '1/holding/6+2', tags: ['blender.D'] },
        { key: '1/holding/100+2', tags: ['blender.S'] },
        { key: '1/input/0+6', tags: ['blender.E', 'blender.F'] },
        { key: '2/input/0+2', tags: ['fluidbed.A'] },
      ]),
    );
    expect(blocks).toHaveLength(5);
    // with a bridged gap the holding registers 0..7 become one read
    expect(planReads(all, 1).filter((b) => b.unitId === 1 && b.table === 'holding').map((b) => [b.start, b.count])).toEqual([[0, 8], [100, 2]]);
  });

  it('never plans a read of more than 125 registers', () => {
    const many: TagEntry[] = Array.from({ length: 200 }, (_, i) => ({ ...all[0]!, id: `x.T${i}`, address: i * 2, count: 2 }));
    const blocks = planReads(many);
    expect(Math.max(...blocks.map((b) => b.count))).toBeLessThanOrEqual(125);
    expect(blocks.reduce((n, b) => n + b.tags.length, 0)).toBe(200);
    for (const b of blocks) for (const t of b.tags) expect(t.address + t.count).toBeLessThanOrEqual(b.start + b.count);
  });

  it('describes tags with unit/table/address and writability', () => {
    const d = describeTag(table.get('blender.S')!);
    expect(d).toMatchObject({ tag: 'blender.S', address: '1/holding/100', writable: true, dataType: 'float32' });
    expect(describeTag(table.get('blender.E')!).writable).toBe(false);
  });

  it('maps Modbus exception codes to LK codes', () => {
    expect([1, 2, 3, 4, 5, 6, 10, 11].map(exceptionCode)).toEqual([
      'LK_MODBUS_ILLEGAL_FUNCTION', 'LK_MODBUS_ILLEGAL_ADDRESS', 'LK_MODBUS_ILLEGAL_VALUE', 'LK_MODBUS_DEVICE_FAILURE',
      'LK_MODBUS_EXCEPTION', 'LK_MODBUS_BUSY', 'LK_MODBUS_GATEWAY', 'LK_MODBUS_GATEWAY',
    ]);
  });
});

describe('polling deadband', () => {
  const s = (value: number | null, status = 'Good'): Sample => ({ tag: 't', value, quality: value === null ? 'bad' : 'good', status, unit: '1', sourceTime: 0, receivedAt: 0 });

  it('reports the first value, changes beyond the deadband and every quality change', () => {
    const last = new Map<string, Sample>();
    const seen = [10, 10.3, 10.5, 10.7, 11.1, null, null, 11.1].map((v) => filterChanges(last, [s(v, v === null ? 'LK_CONN_TIMEOUT' : 'Good')], 0.5).map((x) => x.value));
    // 10.3 and 10.5 are not more than 0.5 from the last reported 10; 10.7 is; 11.1 is within 0.5 of 10.7
    expect(seen).toEqual([[10], [], [], [10.7], [], [null], [], [11.1]]);
  });

  it('reports every change without a deadband', () => {
    const last = new Map<string, Sample>();
    expect([1, 1, 1.0001, 1.0001].map((v) => filterChanges(last, [s(v)], undefined).length)).toEqual([1, 0, 1, 0]);
  });
});
