/**
 * Supervision profiles on PLCs that are not linekeeper's simulator (test/helpers/vendor-plcs.ts): a Boolean life
 * bit toggled, an Int16 life counter that wraps inside its type, a String state in the vendor's words
 * (REMOTE/LOCAL), an Int32 and a Modbus state whose fallback is 0 (the inverse of the simulator's), and a unit
 * without supervisor tags that linekeeper only reads. Over real OPC UA and Modbus TCP on loopback: every
 * commanded revert writes the PLC's own fallback value and is verified by read-back (ActiveRecipe = its LKG
 * recipe), the state reads as LOST whatever the PLC calls it, a re-arm writes the PLC's supervised value, and
 * nothing is ever written to the monitor-only unit. The vendor's OPC UA stack takes 8 KiB message chunks, as an
 * embedded one may: the connector asks for 64 KiB and everything here runs over the 8 KiB it is given. Before profiles, each of these failed (issue 21): the life
 * bit got `2`, the Int16 counter overflowed, `LOST` was not sent to an Int32 node, and `1` re-armed the fluid bed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModbusConnector, type ModbusConnector } from '../../connectors/modbus/index.js';
import { createOpcUaConnector, type OpcUaConnector } from '../../connectors/opcua/index.js';
import type { ConnectorEvent, WriteCapability } from '../../connectors/types.js';
import { rejectionCode } from '../helpers/codes.js';
import { bufferAllocations } from '../helpers/opcua-fixture.js';
import { waitFor } from '../helpers/sim.js';
import { startVendorPlcs, type VendorPlcs } from '../helpers/vendor-plcs.js';

let plcs: VendorPlcs;
let dataDir: string;
let opcua: OpcUaConnector;
let mb: ModbusConnector;
let ow: WriteCapability;
let mw: WriteCapability;
const events: ConnectorEvent[] = [];

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'lk-vendor-'));
  // a long watchdog: the PLCs fall back only when commanded (the beats still have to be accepted every period)
  plcs = await startVendorPlcs(dataDir, { watchdogMs: 60_000, pressCounterStart: 32_763 });
  const { coater, press, nir, fluidbed } = plcs.equipment;
  opcua = createOpcUaConnector({ connection: plcs.opcua, equipment: [coater, press, nir], url: plcs.opcuaUrl, dataDir, backoff: { initialMs: 100, maxMs: 400 } });
  mb = createModbusConnector({ connection: plcs.modbus, equipment: [fluidbed], host: '127.0.0.1', port: plcs.modbusPort, backoff: { initialMs: 50, maxMs: 400 } });
  opcua.on((e) => events.push(e));
  mb.on((e) => events.push(e));
  await opcua.connect();
  await mb.connect();
  ow = opcua.claimWriter();
  mw = mb.claimWriter();
  opcua.startHeartbeat();
  mb.startHeartbeat();
}, 60_000);

afterAll(async () => {
  opcua?.stopHeartbeat();
  mb?.stopHeartbeat();
  await opcua?.close();
  await mb?.close();
  await plcs?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const unit = (id: string) => plcs.units.get(id)!;

describe('heartbeats as each PLC counts them', () => {
  it('a Boolean life bit is toggled (true, false, true…), never written a number', async () => {
    await waitFor(() => unit('coater').beats.length >= 4, 20_000);
    const beats = unit('coater').beats;
    expect(beats.every((b) => typeof b === 'boolean')).toBe(true);
    for (let i = 1; i < beats.length; i++) expect(beats[i]).toBe(!beats[i - 1]);
  });

  it('an Int16 life counter wraps from 32767 to 0 inside its type, and every beat is accepted', async () => {
    await waitFor(() => unit('press').beats.includes(0) && unit('press').beats.length >= 6, 20_000);
    const beats = unit('press').beats as number[];
    const wrap = beats.indexOf(0);
    expect(beats[wrap - 1]).toBe(32_767);
    expect(beats.slice(0, wrap)).toEqual(Array.from({ length: wrap }, (_, i) => 32_767 - wrap + 1 + i));
    expect(beats[wrap + 1]).toBe(1);
    expect(events.filter((e) => e.type === 'heartbeat_failed')).toEqual([]);
  });

  it('a Modbus life counter of the fluid bed counts; the monitor-only unit gets no heartbeat and no write at all', async () => {
    await waitFor(() => unit('fluidbed').beats.length >= 3, 20_000);
    const beats = unit('fluidbed').beats as number[];
    for (let i = 1; i < beats.length; i++) expect(beats[i]).toBe(beats[i - 1]! + 1);
    expect(plcs.nirWrites).toEqual([]);
  });
});

describe('[INV-LKG-REVERT] a commanded revert writes the PLC\'s own fallback value and is verified by read-back', () => {
  it('coater (String REMOTE/LOCAL): LOCAL written, read back as LOST on its LKG recipe', async () => {
    const r = await ow.commandLkg('coater');
    expect(unit('coater')).toMatchObject({ state: 'LOCAL', active: 'RCP-COAT-LKG', reverts: 1 });
    expect(r).toMatchObject({ equipment: 'coater', state: 'LOST', activeRecipe: 'RCP-COAT-LKG', lkgRecipe: 'RCP-COAT-LKG', revertCount: 1, verified: true });
  });

  it('press (Int32, 1 supervised / 0 fallback): 0 written to the Int32 node, verified', async () => {
    const r = await ow.commandLkg('press');
    expect(unit('press')).toMatchObject({ state: 0, active: 'RCP-PRESS-LKG', reverts: 1 });
    expect(r).toMatchObject({ state: 'LOST', activeRecipe: 'RCP-PRESS-LKG', verified: true });
  });

  it('fluid bed (Modbus, 1 = REMOTE, 0 = LOCAL): 0 written — the simulator\'s 1 would have re-armed it — verified', async () => {
    const r = await mw.commandLkg('fluidbed');
    expect(unit('fluidbed')).toMatchObject({ state: 0, active: 900, reverts: 1 });
    expect(r).toMatchObject({ state: 'LOST', activeRecipe: 900, lkgRecipe: 900, verified: true });
    // a second command on a PLC already on its fallback reverts nothing again
    expect((await mw.commandLkg('fluidbed')).revertCount).toBe(1);
  });

  it('a re-arm writes each PLC\'s supervised value and reads back ATTENDED', async () => {
    for (const [w, id, supervised] of [[ow, 'coater', 'REMOTE'], [ow, 'press', 1], [mw, 'fluidbed', 1]] as const) {
      const r = await w.commandRearm(id);
      expect([id, r.state, r.verified]).toEqual([id, 'ATTENDED', true]);
      expect(unit(id).state).toBe(supervised);
    }
  });
});

describe('a monitor-only unit is read and never written', () => {
  it('its values read; a setpoint write and a revert are refused before anything is sent (LK_MONITOR_ONLY)', async () => {
    const [p] = await opcua.read(['nir.Potency']);
    expect(p).toMatchObject({ quality: 'good', value: 99.7 });
    expect(await rejectionCode(ow.write('nir.Gain', 2))).toBe('LK_MONITOR_ONLY');
    expect(await rejectionCode(ow.commandLkg('nir'))).toBe('LK_TAG_UNKNOWN');
    expect(plcs.nirWrites).toEqual([]);
  });
});

describe('a PLC whose OPC UA stack takes only 8 KiB chunks', () => {
  it('lowers the 64 KiB the connector asks for in the handshake (every test above ran over it), and a read of several chunks goes out in 8 KiB chunks', async () => {
    // the connector's Hello: 64 KiB each way (connectors/opcua/link.ts); the vendor PLC answered 8 KiB to it
    expect(plcs.hellos.length).toBeGreaterThanOrEqual(1);
    for (const h of plcs.hellos) expect([h.receiveBufferSize, h.sendBufferSize]).toEqual([65536, 65536]);
    // and a request of several chunks: every tag of the three units twenty times over in one Read (~12 kB)
    const { coater, press, nir } = plcs.equipment;
    const ids = [coater, press, nir].flatMap((e) => e.tags.map((t) => `${e.id}.${t.name}`));
    const { sizes, result: samples } = await bufferAllocations(() => opcua.read(Array.from({ length: 20 }, () => ids).flat()));
    // node-opcua allocates each chunk it sends whole: the request went out in 8 KiB chunks, none of 64 KiB
    expect(sizes.filter((n) => n === 8192).length).toBeGreaterThanOrEqual(2);
    expect(sizes).not.toContain(65536);
    expect(samples.length).toBe(ids.length * 20);
    expect(samples.every((x) => x.quality === 'good')).toBe(true);
  });
});

