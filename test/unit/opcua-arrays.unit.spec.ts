/**
 * DoubleArray and ByteString tags on the OPC UA side: DataValue → Sample
 * (frozen number[] / copied Uint8Array, NaN inside an array → bad), the
 * watchdog's equality on arrays, the camera frame wire format, and the
 * configuration's refusal of array setpoints.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataType, DataValue, StatusCodes, Variant, VariantArrayType } from 'node-opcua';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assembleFrameSet, decodeFrame, encodeFrame, FRAME_HEADER_BYTES, FRAME_HEADER_BYTES_WIDE } from '../../connectors/opcua/frames.js';
import { buildTagTable } from '../../connectors/opcua/tags.js';
import { sameValue, toSample } from '../../connectors/opcua/values.js';
import { defaultConfigFile, loadConfig } from '../../src/config/load.js';
import type { OpcUaEquipmentConfig } from '../../src/config/schema.js';
import { LkError } from '../../src/errors.js';
import { codeOf } from '../helpers/codes.js';

const equipment: OpcUaEquipmentConfig = {
  id: 'nir',
  name: 'NIR',
  type: 'nir',
  protocol: 'opcua',
  connection: 'c',
  heartbeat: { period_ms: 1000 },
  tags: [
    { name: 'Spectrum', kind: 'measurement', unit: '1', node_id: 's=nir.Spectrum', data_type: 'DoubleArray' },
    { name: 'Frame1', kind: 'measurement', unit: '1', node_id: 's=nir.Frame1', data_type: 'ByteString' },
  ],
};
const tags = buildTagTable([equipment]);
const spectrum = tags.get('nir.Spectrum')!;
const frame = tags.get('nir.Frame1')!;
const dv = (value: Variant): DataValue => new DataValue({ value, statusCode: StatusCodes.Good, sourceTimestamp: new Date(1000) });
const doubles = (v: ArrayLike<number>): Variant => new Variant({ dataType: DataType.Double, arrayType: VariantArrayType.Array, value: Float64Array.from(v) });


describe('DoubleArray and ByteString samples', () => {
  it('a Double array arrives as a frozen plain number[] with its source time', () => {
    const s = toSample(spectrum, dv(doubles([0.1, 0.25, 1.5])), 2000);
    expect(s).toMatchObject({ quality: 'good', status: 'Good', sourceTime: 1000, receivedAt: 2000 });
    expect(Array.isArray(s.value)).toBe(true);
    expect(s.value).toEqual([0.1, 0.25, 1.5]);
    expect(Object.isFrozen(s.value)).toBe(true);
    expect(JSON.parse(JSON.stringify(s)).value).toEqual([0.1, 0.25, 1.5]);
  });

  it('one NaN or Infinity inside the array makes the whole sample bad, value null', () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
      const s = toSample(spectrum, dv(doubles([0.1, bad, 0.3])), 2000);
      expect(s).toMatchObject({ value: null, quality: 'bad', status: 'LK_VALUE_INVALID' });
    }
  });

  it('a scalar where an array is configured, or an array of another type, is a type mismatch', () => {
    expect(toSample(spectrum, dv(new Variant({ dataType: DataType.Double, value: 1 })), 0)).toMatchObject({ value: null, quality: 'bad', status: 'BadTypeMismatch' });
    expect(toSample(spectrum, dv(new Variant({ dataType: DataType.String, arrayType: VariantArrayType.Array, value: ['a'] })), 0).status).toBe('BadTypeMismatch');
    expect(toSample(frame, dv(doubles([1, 2])), 0).status).toBe('BadTypeMismatch');
    expect(toSample(frame, dv(new Variant({ dataType: DataType.String, value: 'abc' })), 0).status).toBe('BadTypeMismatch');
  });

  it('a ByteString arrives as a copy in a plain Uint8Array, not a view of the receive buffer', () => {
    const wire = Buffer.from([9, 8, 7, 6, 5]);
    const s = toSample(frame, dv(new Variant({ dataType: DataType.ByteString, value: wire.subarray(1, 4) })), 0);
    expect(s.quality).toBe('good');
    expect(s.value).toBeInstanceOf(Uint8Array);
    expect(Buffer.isBuffer(s.value)).toBe(false);
    expect([...(s.value as Uint8Array)]).toEqual([8, 7, 6]);
    wire[2] = 0; // the connection reuses its buffer
    expect([...(s.value as Uint8Array)]).toEqual([8, 7, 6]);
    expect(toSample(frame, dv(new Variant({ dataType: DataType.ByteString, value: null })), 0)).toMatchObject({ value: null, quality: 'bad', status: 'BadNoData' });
  });

  it('the data-age watchdog compares arrays and bytes by content, not identity', () => {
    expect(sameValue([1, 2, 3], [1, 2, 3], 0)).toBe(true);
    expect(sameValue([1, 2, 3], [1, 2, 4], 0)).toBe(false);
    expect(sameValue([1, 2], [1, 2, 3], 0)).toBe(false);
    expect(sameValue(new Uint8Array([1, 2]), new Uint8Array([1, 2]), 0)).toBe(true);
    expect(sameValue(new Uint8Array([1, 2]), new Uint8Array([2, 2]), 0)).toBe(false);
    expect(sameValue([1, 2], 1, 0)).toBe(false);
    expect(sameValue(null, [1], 0)).toBe(false);
  });
});

describe('camera frame wire format', () => {
  const pixels = (seed: number): Uint8Array => Uint8Array.from({ length: 16 }, (_, i) => (seed * 31 + i * 7) & 255);
  const set = (trigger: number): Uint8Array[] => Array.from({ length: 6 }, (_, cam) => encodeFrame({ triggerId: trigger, camera: cam, width: 4, height: 4, pixels: pixels(cam) }));

  it('round-trips trigger id, camera, size and pixels behind an 8-byte header', () => {
    const bytes = encodeFrame({ triggerId: 0xfedcba98, camera: 5, width: 4, height: 4, pixels: pixels(3) });
    expect(bytes.length).toBe(FRAME_HEADER_BYTES + 16);
    expect([...bytes.subarray(0, 4)]).toEqual([0x98, 0xba, 0xdc, 0xfe]); // little-endian
    const f = decodeFrame(bytes);
    expect(f).toMatchObject({ triggerId: 0xfedcba98, camera: 5, width: 4, height: 4 });
    expect([...f.pixels]).toEqual([...pixels(3)]);
  });

  it('refuses to encode what the header cannot hold, with LK_VALIDATION', () => {
    expect(codeOf(() => encodeFrame({ triggerId: -1, camera: 0, width: 4, height: 4, pixels: pixels(0) }))).toBe('LK_VALIDATION');
    expect(codeOf(() => encodeFrame({ triggerId: 2 ** 32, camera: 0, width: 4, height: 4, pixels: pixels(0) }))).toBe('LK_VALIDATION');
    expect(codeOf(() => encodeFrame({ triggerId: 1, camera: 256, width: 4, height: 4, pixels: pixels(0) }))).toBe('LK_VALIDATION');
    expect(codeOf(() => encodeFrame({ triggerId: 1, camera: 0, width: 4, height: 5, pixels: pixels(0) }))).toBe('LK_VALIDATION');
  });

  it('refuses truncated, mis-sized and unknown-format frames with LK_VALUE_INVALID', () => {
    const good = set(7)[0]!;
    expect(codeOf(() => decodeFrame(good.subarray(0, 5)))).toBe('LK_VALUE_INVALID');
    expect(codeOf(() => decodeFrame(good.subarray(0, good.length - 1)))).toBe('LK_VALUE_INVALID');
    const otherFormat = Uint8Array.from(good);
    otherFormat[7] = 3;
    expect(codeOf(() => decodeFrame(otherFormat))).toBe('LK_VALUE_INVALID');
  });

  it('writes a line camera’s 640×480 frame in format 2 (16-bit size) and reads it back; format 1 stays for small frames', () => {
    const px = Uint8Array.from({ length: 640 * 480 }, (_, i) => (i * 7) & 255);
    const bytes = encodeFrame({ triggerId: 77, camera: 3, width: 640, height: 480, pixels: px });
    expect([bytes.length, bytes[7]]).toEqual([FRAME_HEADER_BYTES_WIDE + 640 * 480, 2]);
    const f = decodeFrame(bytes);
    expect([f.triggerId, f.camera, f.width, f.height]).toEqual([77, 3, 640, 480]);
    expect(Buffer.from(f.pixels).equals(Buffer.from(px))).toBe(true);
    expect(codeOf(() => decodeFrame(bytes.subarray(0, 10)))).toBe('LK_VALUE_INVALID');
    expect(codeOf(() => decodeFrame(bytes.subarray(0, bytes.length - 1)))).toBe('LK_VALUE_INVALID');
    expect(codeOf(() => encodeFrame({ triggerId: 1, camera: 0, width: 65536, height: 1, pixels: new Uint8Array(65536) }))).toBe('LK_VALIDATION');
    expect(encodeFrame({ triggerId: 1, camera: 0, width: 4, height: 4, pixels: pixels(0) })[7]).toBe(1);
  });

  it('assembles six frames of one trigger and refuses a mixed, short, reordered or mismatched set', () => {
    const a = set(41);
    const s = assembleFrameSet(a, 41);
    expect(s.triggerId).toBe(41);
    expect(s.frames.map((f) => [...f])).toEqual(a.map((_, cam) => [...pixels(cam)]));
    const reason = (frames: (Uint8Array | null)[], trigger?: number): unknown => {
      try {
        assembleFrameSet(frames, trigger);
      } catch (e) {
        return LkError.is(e, 'LK_VALUE_INVALID') ? (e.detail as { reason: string }).reason : e;
      }
      return 'accepted';
    };
    const b = set(42);
    expect(reason([...a.slice(0, 5), b[5]!])).toBe('trigger');
    expect(reason(a, 42)).toBe('trigger');
    expect(reason(a.slice(0, 5))).toBe('count');
    expect(reason([a[1]!, a[0]!, ...a.slice(2)])).toBe('camera');
    expect(reason([...a.slice(0, 5), null])).toBe('missing');
    const small = encodeFrame({ triggerId: 41, camera: 5, width: 2, height: 2, pixels: new Uint8Array(4) });
    expect(reason([...a.slice(0, 5), small])).toBe('size');
  });
});

describe('configuration of array tags', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'lk-config-arrays-'));
    cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'policy'), { recursive: true });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the shipped site has the spectrum, its axis and id, and six frames beside the trigger id', () => {
    const eq = loadConfig().config.equipment;
    const type = (e: string, t: string): string | undefined => {
      const tag = eq.find((x) => x.id === e)?.tags.find((x) => x.name === t);
      return tag && 'data_type' in tag ? tag.data_type : undefined;
    };
    expect([type('nir', 'Spectrum'), type('nir', 'Wavelengths'), type('nir', 'SpectrumId')]).toEqual(['DoubleArray', 'DoubleArray', 'UInt32']);
    expect([1, 2, 3, 4, 5, 6].map((i) => type('vision', `Frame${i}`))).toEqual(Array(6).fill('ByteString'));
    expect(type('vision', 'TriggerId')).toBe('UInt32');
  });

  it.each(['DoubleArray', 'ByteString', 'String'])('refuses a %s setpoint with LK_CONFIG_INVALID', (dataType) => {
    const original = readFileSync(defaultConfigFile(), 'utf8');
    const from = 'node_id: "s=nir.Setpoints.ScanInterval", data_type: Double';
    expect(original).toContain(from);
    const f = join(dir, `${dataType}.yaml`);
    writeFileSync(f, original.replace(from, `node_id: "s=nir.Setpoints.ScanInterval", data_type: ${dataType}`));
    let err: unknown;
    try {
      loadConfig(f);
    } catch (e) {
      err = e;
    }
    expect(LkError.is(err, 'LK_CONFIG_INVALID')).toBe(true);
    const issues = (err as LkError).detail as { issues: { path: string }[] };
    expect(issues.issues.map((i) => i.path)).toEqual(['equipment[4].tags[0].data_type']);
  });
});
