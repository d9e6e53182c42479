/**
 * The daemon with an `mqtt:` section on the embedded simulator: the line's real tags are born with their units,
 * values flow as DDATA, and at a clean stop the chains' last signed checkpoints reach the broker before the
 * NDEATH — and verify with the site's public key alone, as a party outside the edge node would check them.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkpointSignatureValid, type SignedCheckpoint } from '../../src/audit/checkpoints.js';
import { loadSitePublicKey } from '../../src/audit/keys.js';
import { defaultConfigFile } from '../../src/config/load.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { silentLogger } from '../../src/log.js';
import { aedesBroker, subscriber, until, type Seen } from './mqtt-helpers.js';

let dir: string;
let daemon: Daemon | undefined;
let b: Awaited<ReturnType<typeof aedesBroker>>;
let sub: Awaited<ReturnType<typeof subscriber>>;

beforeAll(async () => {
  b = await aedesBroker();
  sub = await subscriber(b.hostUrl, 'host-d', 'spBv1.0/ravenna/#');
  dir = mkdtempSync(join(tmpdir(), 'lk-mqtt-daemon-'));
  cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'policy'), { recursive: true });
  const site = `${readFileSync(defaultConfigFile(), 'utf8')}\nmqtt:\n  url: ${b.url}\n  group_id: ravenna\n  edge_node_id: line-3\n  reconnect_ms: 200\n`;
  writeFileSync(join(dir, 'site.yaml'), site);
  daemon = await startDaemon({ configFile: join(dir, 'site.yaml'), dataDir: join(dir, 'data'), logger: silentLogger, connectTimeoutMs: 15_000 });
}, 120_000);
afterAll(async () => {
  await daemon?.stop('test done');
  await sub?.client.endAsync(true);
  await b?.close();
  rmSync(dir, { recursive: true, force: true });
});

const metric = (s: Seen, name: string): unknown => s.metrics.find((m) => m.name === name)?.value;

describe('the daemon publishes the line over Sparkplug B', () => {
  it('setpoints and supervisor tags: born with values and good quality; a setpoint write and a commanded LKG revert reach DDATA', async () => {
    await until(() => sub.seen.some((s) => s.topic === 'spBv1.0/ravenna/DBIRTH/line-3/press'), 'the press DBIRTH', 60_000);
    const press = sub.seen.find((s) => s.topic === 'spBv1.0/ravenna/DBIRTH/line-3/press')!;
    const born = new Map(press.metrics.map((m) => [m.name, m]));
    const setpoints = daemon!.simulator!.plant.equipment('press').tags.filter((t) => t.kind === 'setpoint').map((t) => t.name);
    expect(setpoints).toContain('MainForce');
    for (const name of [...setpoints, 'Heartbeat', 'SupervisorState', 'ActiveRecipe', 'LkgRecipeId', 'RevertCount']) {
      const m = born.get(name);
      expect(m, name).toBeDefined();
      expect(m!.raw.is_null, name).toBe(false);
      expect(m!.value, name).not.toBeNull();
      expect(m!.quality, name).toBe(192);
    }
    expect(born.get('SupervisorState')!.value).toBe('ATTENDED');
    expect([born.get('RevertCount')!.type, born.get('RevertCount')!.raw.field]).toEqual(['UInt32', 'int_value']);
    const revertsBefore = born.get('RevertCount')!.value as number;
    expect(sub.errors).toEqual([]);

    const ddata = (name: string, pred: (v: unknown) => boolean) => sub.seen.some((s) => s.topic === 'spBv1.0/ravenna/DDATA/line-3/press' && s.metrics.some((m) => m.name === name && !m.historical && m.quality === 192 && pred(m.value)));
    // a setpoint written at the PLC
    const tagDef = daemon!.simulator!.plant.equipment('press').tags.find((t) => t.name === 'MainForce')!;
    const now = daemon!.simulator!.plant.setpoints('press').MainForce!;
    const next = now + (tagDef.range ? (tagDef.range.max - tagDef.range.min) / 20 : 1);
    daemon!.simulator!.plant.writeSetpoint('press', 'MainForce', next);
    await until(() => ddata('MainForce', (v) => typeof v === 'number' && Math.abs(v - next) < 1e-9), 'the written setpoint in DDATA', 30_000);
    // a commanded revert to LKG: the host sees the PLC go LOST and count the revert
    const [r] = await daemon!.writer.revertToLkg(['press'], { tenant: 'site', reason: 'test: commanded revert', actor: 'test' });
    expect(r).toMatchObject({ ok: true });
    await until(() => ddata('SupervisorState', (v) => v === 'LOST'), 'SupervisorState LOST in DDATA', 30_000);
    await until(() => ddata('RevertCount', (v) => v === revertsBefore + 1), 'RevertCount + 1 in DDATA', 30_000);
    expect(sub.errors).toEqual([]);
  }, 120_000);

  it('births the real tags with units, sends changes, and hands its signed checkpoints to the broker at stop', async () => {
    await until(() => sub.seen.some((s) => s.topic === 'spBv1.0/ravenna/DBIRTH/line-3/press'), 'the press DBIRTH', 60_000);
    const press = sub.seen.find((s) => s.topic === 'spBv1.0/ravenna/DBIRTH/line-3/press')!;
    expect(press.metrics.map((m) => m.name)).toContain('Hardness');
    await until(() => sub.seen.some((s) => s.topic.startsWith('spBv1.0/ravenna/DDATA/line-3/')), 'a DDATA', 60_000);

    await daemon!.stop('test: clean stop');
    daemon = undefined;
    await until(() => sub.seen.some((s) => s.topic === 'spBv1.0/ravenna/NDEATH/line-3'), 'the NDEATH', 30_000);
    const cps = sub.seen.filter((s) => s.topic.endsWith('/NDATA/line-3') && typeof metric(s, 'Audit/Checkpoint/Signature') === 'string');
    expect(cps.length).toBeGreaterThan(0);
    const death = sub.seen.findIndex((s) => s.topic.endsWith('/NDEATH/line-3'));
    expect(sub.seen.indexOf(cps.at(-1)!)).toBeLessThan(death);
    // outside the edge node: the public key and the published fields are enough
    const key = loadSitePublicKey(join(dir, 'data'));
    for (const s of cps) {
      const c: SignedCheckpoint = {
        v: 1, tenant: metric(s, 'Audit/Checkpoint/Tenant') as string, seq: metric(s, 'Audit/Checkpoint/Seq') as number,
        head_hash: metric(s, 'Audit/Checkpoint/HeadHash') as string, ts: metric(s, 'Audit/Checkpoint/Timestamp') as string,
        key_id: metric(s, 'Audit/Checkpoint/KeyId') as string, sig: metric(s, 'Audit/Checkpoint/Signature') as string,
      };
      expect(checkpointSignatureValid(key, c)).toBe(true);
      expect(checkpointSignatureValid(key, { ...c, seq: c.seq - 1 })).toBe(false); // a truncated claim does not verify
    }
  }, 120_000);
});
