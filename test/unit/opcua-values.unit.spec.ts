import { DataType, DataValue, NodeId, StatusCodes, Variant, VariantArrayType } from 'node-opcua';
import { describe, expect, it } from 'vitest';
import { LkError } from '../../src/errors.js';
import { buildTagTable, lookupTags, resolveNodeId } from '../../connectors/opcua/tags.js';
import { builtInDataType, encodeForWrite, qualityOf, sameValue, toSample } from '../../connectors/opcua/values.js';
import { euInformationFor, ucumOf, unitIdOf, unitMatches } from '../../connectors/opcua/units.js';
import type { OpcUaEquipmentConfig } from '../../src/config/schema.js';

const equipment: OpcUaEquipmentConfig = {
  id: 'press',
  name: 'Press',
  type: 'press',
  protocol: 'opcua',
  connection: 'c',
  heartbeat: { period_ms: 1000 },
  tags: [
    { name: 'MainForce', kind: 'setpoint', unit: 'kN', node_id: 's=press.Setpoints.MainForce', data_type: 'Double' },
    { name: 'State', kind: 'supervisor', unit: '1', node_id: 'ns=4;s=press.State', data_type: 'String' },
    { name: 'Running', kind: 'measurement', unit: '1', node_id: 'nsu=urn:other;i=7', data_type: 'Boolean' },
  ],
};
const tags = buildTagTable([equipment]);
const force = tags.get('press.MainForce')!;
const state = tags.get('press.State')!;
const running = tags.get('press.Running')!;
const dv = (value: Variant | null, status = StatusCodes.Good): DataValue =>
  new DataValue({ value: value ?? undefined, statusCode: status, sourceTimestamp: new Date(1000) });

describe('tag table and node ids', () => {
  it('keys tags by <equipment>.<Tag> and refuses unknown ones with LK_TAG_UNKNOWN naming them', () => {
    expect([...tags.keys()]).toEqual(['press.MainForce', 'press.State', 'press.Running']);
    let err: unknown;
    try {
      lookupTags(tags, ['press.MainForce', 'press.Nope', 'x.Y']);
    } catch (e) {
      err = e;
    }
    expect(LkError.is(err, 'LK_TAG_UNKNOWN')).toBe(true);
    expect((err as LkError).detail).toEqual({ tags: ['press.Nope', 'x.Y'] });
  });

  it('resolves relative ids in the connection namespace and keeps absolute ones', () => {
    expect(resolveNodeId(force.nodeId, 3, []).toString()).toBe('ns=3;s=press.Setpoints.MainForce');
    expect(resolveNodeId(state.nodeId, 3, []).toString()).toBe('ns=4;s=press.State');
    // a bare numeric id is relative like a string id (the schema says so); namespace 0 is asked for explicitly
    expect(resolveNodeId('i=6001', 3, []).toString()).toBe('ns=3;i=6001');
    expect(resolveNodeId('ns=0;i=2258', 3, []).toString()).toBe('ns=0;i=2258');
    expect(resolveNodeId(running.nodeId, 3, ['http://opcfoundation.org/UA/', 'urn:x', 'urn:other']).toString()).toBe('ns=2;i=7');
    expect(() => resolveNodeId(running.nodeId, 3, ['urn:x'])).toThrowError(expect.objectContaining({ code: 'LK_CONFIG_INVALID' }) as Error);
  });
});

describe('DataValue → Sample', () => {
  it('passes a good finite number with its source time and unit', () => {
    const s = toSample(force, dv(new Variant({ dataType: DataType.Double, value: 12.5 })), 2000);
    expect(s).toEqual({ tag: 'press.MainForce', value: 12.5, quality: 'good', status: 'Good', unit: 'kN', sourceTime: 1000, receivedAt: 2000 });
  });

  it.each([
    [StatusCodes.UncertainLastUsableValue, 'uncertain'],
    [StatusCodes.BadSensorFailure, 'bad'],
    [StatusCodes.BadNodeIdUnknown, 'bad'],
  ])('never turns status %s into a number', (status, quality) => {
    const s = toSample(force, dv(new Variant({ dataType: DataType.Double, value: 3 }), status), 2000);
    expect(s.value).toBeNull();
    expect(s.quality).toBe(quality);
    expect(s.status).toBe(status.name);
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])('reports %s as bad LK_VALUE_INVALID', (v) => {
    const s = toSample(force, dv(new Variant({ dataType: DataType.Double, value: v })), 2000);
    expect(s).toMatchObject({ value: null, quality: 'bad', status: 'LK_VALUE_INVALID' });
  });

  it('reports a value of the wrong type as bad BadTypeMismatch', () => {
    expect(toSample(force, dv(new Variant({ dataType: DataType.String, value: '12' })), 0)).toMatchObject({ value: null, quality: 'bad', status: 'BadTypeMismatch' });
    expect(toSample(force, dv(new Variant({ dataType: DataType.Double, arrayType: VariantArrayType.Array, value: [1, 2] })), 0).status).toBe('BadTypeMismatch');
    expect(toSample(state, dv(new Variant({ dataType: DataType.Double, value: 1 })), 0).status).toBe('BadTypeMismatch');
    expect(toSample(force, dv(null), 0).status).toBe('BadTypeMismatch');
    expect(toSample(state, dv(new Variant({ dataType: DataType.String, value: 'LOST' })), 0)).toMatchObject({ value: 'LOST', quality: 'good' });
    expect(toSample(running, dv(new Variant({ dataType: DataType.Boolean, value: false })), 0)).toMatchObject({ value: false, quality: 'good' });
  });

  it('maps status severity bits to quality', () => {
    expect(qualityOf(StatusCodes.Good.value)).toBe('good');
    expect(qualityOf(StatusCodes.UncertainSensorNotAccurate.value)).toBe('uncertain');
    expect(qualityOf(StatusCodes.BadTimeout.value)).toBe('bad');
  });
});

describe('write encoding with the node DataType', () => {
  it('rounds and range-checks integers', () => {
    expect(encodeForWrite('t', 12.6, DataType.Int16)).toMatchObject({ dataType: DataType.Int16, value: 13, written: 13 });
    expect(encodeForWrite('t', 4294967295, DataType.UInt32).written).toBe(4294967295);
    for (const [v, t] of [
      [32768, DataType.Int16],
      [-1, DataType.UInt16],
      [-0.6, DataType.UInt32],
      [2 ** 31, DataType.Int32],
      [256, DataType.Byte],
    ] as const) {
      expect(() => encodeForWrite('t', v, t)).toThrowError(expect.objectContaining({ code: 'LK_VALUE_INVALID' }) as Error);
    }
  });

  it('rounds Float to single precision and refuses what it cannot hold', () => {
    const e = encodeForWrite('t', 0.1, DataType.Float);
    expect(e.written).toBe(Math.fround(0.1));
    expect(e.written).not.toBe(0.1);
    expect(() => encodeForWrite('t', 1e39, DataType.Float)).toThrowError(expect.objectContaining({ code: 'LK_VALUE_INVALID' }) as Error);
    expect(encodeForWrite('t', 1e39, DataType.Double).written).toBe(1e39);
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, '12', null, undefined, true])('refuses %s before encoding', (v) => {
    expect(() => encodeForWrite('t', v, DataType.Double)).toThrowError(expect.objectContaining({ code: 'LK_VALUE_INVALID' }) as Error);
  });

  it('refuses a number for String nodes and takes only 0/1 for Boolean', () => {
    expect(() => encodeForWrite('t', 1, DataType.String)).toThrowError(expect.objectContaining({ code: 'LK_VALUE_INVALID' }) as Error);
    expect(encodeForWrite('t', 1, DataType.Boolean).value).toBe(true);
    expect(() => encodeForWrite('t', 0.5, DataType.Boolean)).toThrowError(expect.objectContaining({ code: 'LK_VALUE_INVALID' }) as Error);
  });

  it('maps DataType node ids, including common subtypes', () => {
    expect(builtInDataType(new NodeId(NodeId.NodeIdType.NUMERIC, 11, 0))).toBe(DataType.Double);
    expect(builtInDataType(new NodeId(NodeId.NodeIdType.NUMERIC, 290, 0))).toBe(DataType.Double);
    expect(builtInDataType(new NodeId(NodeId.NodeIdType.NUMERIC, 7, 0))).toBe(DataType.UInt32);
    expect(builtInDataType(new NodeId(NodeId.NodeIdType.NUMERIC, 11, 2))).toBeUndefined();
    expect(builtInDataType(new NodeId(NodeId.NodeIdType.NUMERIC, 3006, 0))).toBeUndefined();
  });

  it('compares watchdog values within the deadband', () => {
    expect(sameValue(1, 1.4, 0.5)).toBe(true);
    expect(sameValue(1, 1.6, 0.5)).toBe(false);
    expect(sameValue('a', 'a', 9)).toBe(true);
    expect(sameValue(null, 0, 0)).toBe(false);
  });
});

describe('engineering units (UCUM ↔ EUInformation)', () => {
  it('packs UNECE codes like OPC UA Part 8', () => {
    expect(unitIdOf('CEL')).toBe(0x43454c);
    expect(euInformationFor('kN')).toMatchObject({ unitId: unitIdOf('B47'), displayName: { text: 'kN' } });
    expect(euInformationFor('{tbl}/h').unitId).toBe(-1);
  });

  it('matches by unitId first, then by display name (UCUM code or symbol)', () => {
    expect(unitMatches({ unitId: unitIdOf('CEL'), displayName: '°C' }, 'Cel')).toBe(true);
    expect(unitMatches({ unitId: unitIdOf('NEW'), displayName: 'kN' }, 'kN')).toBe(false);
    expect(unitMatches({ unitId: -1, displayName: 'g/min' }, 'g/min')).toBe(true);
    expect(unitMatches({ unitId: -1, displayName: 'r/min' }, '{rev}/min')).toBe(true);
    expect(unitMatches({ unitId: -1, displayName: 'furlong' }, 'mm')).toBe(false);
    expect(unitMatches({ unitId: -1, displayName: 'mL/min' }, 'mL/min')).toBe(true);
    expect(ucumOf({ unitId: unitIdOf('MMT') })).toBe('mm');
  });

  it('agrees with the simulator for every unit of the default site', async () => {
    const { loadConfig } = await import('../../src/config/load.js');
    const { euInformation } = await import('../../connectors/sim/eu.js');
    const units = new Set(loadConfig().config.equipment.flatMap((e) => e.tags.map((t) => t.unit)));
    for (const u of units) {
      const eu = euInformation(u);
      expect(unitMatches({ unitId: eu.unitId, displayName: eu.displayName.text }, u), u).toBe(true);
    }
  });
});

