import { describe, expect, it } from 'vitest';
import { createConnector, parseHostPort } from '../../connectors/index.js';
import { loadConfig } from '../../src/config/load.js';

describe('connector factory (Modbus side)', () => {
  const { config } = loadConfig();
  const modbus = config.connections.find((c) => c.protocol === 'modbus')!;

  it('parses host:port endpoints, IPv6 in brackets too', () => {
    expect(parseHostPort('10.0.0.5:502')).toEqual({ host: '10.0.0.5', port: 502 });
    expect(parseHostPort('[::1]:1502')).toEqual({ host: '::1', port: 1502 });
    expect(() => parseHostPort('plc:0')).toThrow(expect.objectContaining({ code: 'LK_CONFIG_INVALID' }));
    expect(() => parseHostPort('plc')).toThrow(expect.objectContaining({ code: 'LK_CONFIG_INVALID' }));
  });

  it('resolves "sim" from the simulator addresses and takes only the equipment on the connection', async () => {
    expect(() => createConnector(modbus, config.equipment, { dataDir: '.' })).toThrow(expect.objectContaining({ code: 'LK_CONFIG_INVALID' }));
    const c = createConnector(modbus, config.equipment, { dataDir: '.', sim: { opcuaUrl: 'opc.tcp://127.0.0.1:1/x', modbusHost: '127.0.0.1', modbusPort: 1502 } });
    expect(c.protocol).toBe('modbus');
    expect(c.health()).toMatchObject({ id: 'modbus-line', endpoint: '127.0.0.1:1502', state: 'connecting' });
    expect(new Set((await c.describe()).map((t) => t.equipment))).toEqual(new Set(['blender', 'fluidbed']));
    await c.close();
  });
});
