/**
 * The optional `mqtt:` section of the site configuration: strict, with errors that name the field; and the pure
 * Sparkplug helpers (topics, datatypes, values, the historical flag in the encoding).
 */
import { describe, expect, it } from 'vitest';
import { decode, encode, sparkplugType, topicOf } from '../../connectors/mqtt/index.js';
import { MqttConfig, SiteConfig } from '../../src/config/schema.js';
import { loadConfig } from '../../src/config/load.js';

const ok = { url: 'mqtt://broker.plant:1883', group_id: 'ravenna', edge_node_id: 'line-3' };

function pathsOf(input: unknown): string[] {
  const r = MqttConfig.safeParse(input);
  expect(r.success).toBe(false);
  return r.success ? [] : r.error.issues.map((i) => i.path.join('.'));
}

describe('mqtt configuration', () => {
  it('is optional: the shipped site has none (air-gapped default)', () => {
    expect(loadConfig().config.mqtt).toBeUndefined();
    expect(SiteConfig.shape.mqtt.safeParse(undefined).success).toBe(true);
  });

  it('fills defaults for keep-alive, reconnect and the outbox bound', () => {
    const m = MqttConfig.parse(ok);
    expect(m.keepalive_s).toBe(30);
    expect(m.outbox.max_messages).toBeGreaterThan(0);
    expect(m.outbox.max_bytes).toBeGreaterThan(0);
  });

  it('refuses unknown keys, bad urls and topic-breaking ids, naming the field', () => {
    expect(pathsOf({ ...ok, passwrd: 'x' })).toEqual(['']); // unrecognized key reported on the object
    expect(MqttConfig.safeParse({ ...ok, passwrd: 'x' }).error?.issues[0]?.code).toBe('unrecognized_keys');
    expect(pathsOf({ ...ok, url: 'http://broker' })).toEqual(['url']);
    expect(pathsOf({ ...ok, group_id: 'a/b' })).toEqual(['group_id']);
    expect(pathsOf({ ...ok, edge_node_id: 'line#3' })).toEqual(['edge_node_id']);
    expect(pathsOf({ ...ok, outbox: { max_messages: 0 } })).toEqual(['outbox.max_messages']);
  });

  it('a password file needs a username; tls files need mqtts; cert and key go together', () => {
    expect(pathsOf({ ...ok, password_file: 'pw' })).toEqual(['password_file']);
    expect(pathsOf({ ...ok, tls: { ca: 'ca.pem' } })).toEqual(['tls']);
    expect(pathsOf({ ...ok, url: 'mqtts://b:8883', tls: { cert: 'c.pem' } })).toEqual(['tls.cert']);
    expect(MqttConfig.safeParse({ ...ok, url: 'mqtts://b:8883', username: 'lk', password_file: 'pw', tls: { ca: 'ca.pem', cert: 'c.pem', key: 'k.pem' } }).success).toBe(true);
  });
});

describe('sparkplug helpers', () => {
  it('names topics per Sparkplug B', () => {
    expect(topicOf('g', 'n', 'NBIRTH')).toBe('spBv1.0/g/NBIRTH/n');
    expect(topicOf('g', 'n', 'DDATA', 'press')).toBe('spBv1.0/g/DDATA/n/press');
  });

  it('maps datatypes, leaving arrays and bytes out', () => {
    expect(sparkplugType('Double')).toBe('Double');
    expect(sparkplugType('int16')).toBe('Int16');
    expect(sparkplugType('DoubleArray')).toBeUndefined();
    expect(sparkplugType('ByteString')).toBeUndefined();
  });

  it('sets is_historical on every metric of a replayed message, and seq', () => {
    const m = { timestamp: 5, metrics: [{ name: 'A', type: 'Double' as const, value: 1, timestamp: 5, unit: 'N', quality: 'good' as const }, { name: 'B', type: 'Double' as const, value: null, timestamp: 5 }] };
    const live = decode(encode(m, 7, false));
    const hist = decode(encode(m, 8, true));
    expect(live.metrics!.map((x) => x.isHistorical ?? false)).toEqual([false, false]);
    expect(hist.metrics!.map((x) => x.isHistorical)).toEqual([true, true]);
    expect(Number(hist.seq)).toBe(8);
    expect(hist.metrics![0]!.properties!.engUnit!.value).toBe('N');
    expect(hist.metrics![1]!.value).toBeNull(); // a bad-quality value is null, never a made-up number
  });
});
