/**
 * GET /metrics as site IT scrapes it, from a real daemon (process metrics on, as `linekeeper serve` runs, and an
 * MQTT broker configured): the exposition passes Prometheus's own checker, and what site IT alerts on is there —
 * the MQTT connection (0/1 per broker), the outbox depth and the age of its oldest message, the event-loop delay —
 * following the broker as it goes away and comes back.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiNode, until, type ApiNode } from '../helpers/api.js';
import { aedesBroker } from './mqtt-helpers.js';

const PROMTOOL = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0;

let node: ApiNode;
let broker: Awaited<ReturnType<typeof aedesBroker>>;

beforeAll(async () => {
  broker = await aedesBroker();
  node = await startApiNode({
    processMetrics: true,
    site: (yaml) => `${yaml}\nmqtt:\n  url: ${broker.url}\n  group_id: ravenna\n  edge_node_id: line-3\n  reconnect_ms: 200\n`,
  });
}, 120_000);
afterAll(async () => {
  await node?.close();
  await broker?.close();
});

async function scrape(): Promise<string> {
  const r = await fetch(`${node.url}/metrics`);
  expect(r.status).toBe(200);
  return r.text();
}

/** The value of one sample, `name{labels}` as exposed (labels in the order prom-client writes them). */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const BROKER = (): string => `linekeeper_mqtt_connected{broker="mqtt://127.0.0.1:${broker.port}"}`;

describe('the Prometheus exposition', () => {
  it.skipIf(!PROMTOOL)('passes `promtool check metrics` (Debian package prometheus; skipped where promtool is not installed)', async () => {
    const text = await scrape();
    const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(`${r.stdout}${r.stderr}`).toBe('');
    expect(r.status).toBe(0);
  });

  it('has no gauge named like a counter; the process metrics keep the active handles, requests and resources by type', async () => {
    const text = await scrape();
    const gauges = [...text.matchAll(/^# TYPE (\S+) gauge$/gm)].map((m) => m[1]!);
    expect(gauges.filter((g) => g.endsWith('_total'))).toEqual([]);
    expect(gauges).toEqual(expect.arrayContaining(['linekeeper_nodejs_active_handles', 'linekeeper_nodejs_active_resources', 'linekeeper_nodejs_active_requests']));
    expect(text).toMatch(/^linekeeper_nodejs_active_handles\{type="\w+"\} [1-9]\d*$/m);
  });

  it('follows the MQTT connection, the outbox depth and its oldest message as the broker goes away and comes back; the event-loop delay is there', async () => {
    // connected: 1, the outbox drains
    await until(async () => { const t = await scrape(); return sample(t, BROKER()) === 1 && sample(t, 'linekeeper_mqtt_outbox_messages') === 0 ? true : undefined; });
    const live = await scrape();
    expect(sample(live, 'linekeeper_mqtt_outbox_oldest_age_seconds')).toBe(0);
    expect(sample(live, 'linekeeper_mqtt_outbox_dropped_total')).toBe(0);
    const p99 = sample(live, 'linekeeper_event_loop_delay_p99_seconds');
    expect(p99).toBeGreaterThanOrEqual(0);
    expect(p99).toBeLessThan(60);
    expect(sample(live, 'linekeeper_event_loop_delay_bound_seconds')).toBe(0.25);

    // the broker goes away: 0, and the line's data waits in the outbox, its oldest message ageing
    await broker.killEdge();
    const away = await until(async () => {
      const t = await scrape();
      return sample(t, BROKER()) === 0 && sample(t, 'linekeeper_mqtt_outbox_messages')! > 0 && sample(t, 'linekeeper_mqtt_outbox_oldest_age_seconds')! > 0 ? t : undefined;
    });
    expect(sample(away, 'linekeeper_mqtt_outbox_bytes')).toBeGreaterThan(0);
    expect(sample(away, 'linekeeper_mqtt_outbox_oldest_age_seconds')).toBeLessThan(600);

    // back: 1, and the outbox empties (its age back to 0)
    await broker.restartEdge();
    const back = await until(async () => { const t = await scrape(); return sample(t, BROKER()) === 1 && sample(t, 'linekeeper_mqtt_outbox_messages') === 0 ? t : undefined; });
    expect(sample(back, 'linekeeper_mqtt_outbox_oldest_age_seconds')).toBe(0);
  }, 120_000);
});
