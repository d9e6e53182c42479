/**
 * The Line page as an operator's HMI, in real headless Chromium (Debian's /usr/bin/chromium driven by
 * playwright-core) against a real daemon on a virtual line: the daemon's clock is a ManualClock an hour behind the
 * browser's, moved only by this test, so every age the page shows can be known exactly and none can come from the
 * browser's clock (which would make every value an hour old). No batch runs: a run of acme-pharma is seeded
 * (test/helpers/api-seed.ts) so the limits of its batch record are in force, and the press is pushed out of spec at
 * its HMI (as test/helpers/disturb.ts does) — the plant's main force to 15 kN.
 * - each value and each unit shows its age on linekeeper's clock: GET /line's `at` minus the value's `at`;
 * - a unit whose connection stops delivering (the Modbus connection frozen) goes stale: its values are greyed and
 *   say "stale, N s old" with the daemon's N, never shown as live;
 * - the key process values carry the limits of the run's batch record, and an out-of-spec hardness is marked
 *   "✗ out of spec (limit 80–150 N)";
 * - small trends of the five key values are drawn (uPlot) with their limit lines and units as people write them;
 * - another tenant sees neither the values nor the limits nor the trends (R9);
 * - axe-core finds no serious or critical violation; the header fits one line at 1366×768; screenshots at
 *   1366×768 and 1920×1080 go to .tmp/console-screenshots/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MemoryConnector } from '../../connectors/memory/connector.js';
import type { RunRecord } from '../../src/store/run-store.js';
import { call, signIn, startApiNode, type ApiNode } from '../helpers/api.js';
import { seedRun, setStatus } from '../helpers/api-seed.js';
import { axeOf, closeConsolePage, openConsolePage, signInConsole } from '../helpers/browser.js';

const SHOTS = join(process.cwd(), '.tmp', 'console-screenshots');
const A = '/v1/tenants/acme-pharma';
/** The daemon's clock starts an hour behind the browser's (a session still lasts a virtual day from sign-in). */
const BEHIND_MS = 3_600_000;
let node: ApiNode;
let browser: Browser;
let page: Page;
const problems: string[] = [];

const poll = <T>(fn: () => Promise<T>) => expect.poll(fn, { timeout: 60_000 });

type Value = { value: unknown; unit: string; quality: string; at: string; role?: string };
type LineBody = {
  at: string; staleAfterMs: number; activeRun: { batch: string } | null;
  limits: Record<string, { min?: number; max?: number; unit: string; source: string; applies: string }> | null;
  equipment: { id: string; values: Record<string, Value> | null }[];
};

async function axe(name: string): Promise<void> {
  expect((await axeOf(page)).bad, name).toEqual([]);
}

async function lineOf(user = 'o.operator', tenant = 'acme-pharma'): Promise<LineBody> {
  const token = await signIn(node.url, user, node.passwords.get(user)!);
  const r = await call(node.url, 'GET', `/v1/tenants/${tenant}/line`, { token });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as LineBody;
}

/** acme-pharma's run on the line (seeded once: no batch runs behind it). */
function acmeRun(): RunRecord {
  return node.daemon.engine.runs.activeOnLine('line-3') ?? seedRun(node.daemon, { tenant: 'acme-pharma', batch: 'B-1042', by: 'o.operator' });
}

/** The UTC time as the console writes it. */
const utc = (ms: number): string => `${new Date(ms).toISOString().replace('T', ' ').slice(0, 19)} UTC`;

/** Let `ms` of the daemon's time pass, then wait until the page shows the view of that time. */
async function advanceSeen(ms: number): Promise<void> {
  await node.line!.advance(ms);
  const at = utc(node.line!.clock.now());
  await poll(() => page.getByTestId('line-at').textContent()).toContain(at);
}

/** Nothing on the page is wider than the window, and no card's values table is wider than its card. */
async function fits(): Promise<void> {
  const m = await page.evaluate(`(() => ({
    page: document.documentElement.scrollWidth, view: innerWidth,
    cards: [...document.querySelectorAll('.card')].filter((c) => [...c.querySelectorAll('table')].some((t) => t.getBoundingClientRect().right > c.getBoundingClientRect().right + 1)).map((c) => c.querySelector('h3')?.textContent),
  }))()`) as { page: number; view: number; cards: string[] };
  expect(m.page, 'no horizontal scroll').toBeLessThanOrEqual(m.view);
  expect(m.cards, 'cards whose values overflow them').toEqual([]);
  // every reading stays on one line with its unit, written as people write it
  const wrapped = await page.evaluate(`(() => [...document.querySelectorAll('.values td.num')].filter((td) => {
    const r = document.createRange();
    r.selectNodeContents(td);
    return new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top))).size > 1;
  }).map((td) => td.textContent))()`);
  expect(wrapped).toEqual([]);
  expect((await page.locator('.values td.num').allTextContents()).filter((c) => /\bCel\b|\{|m3\/h/.test(c))).toEqual([]);
}

/** The header fits one line (its height is its tallest item's plus its padding) and does not overflow. */
async function headerOnOneLine(): Promise<void> {
  const m = await page.evaluate(`(() => {
    const h = document.querySelector('header.top');
    const cs = getComputedStyle(h);
    const items = [...h.querySelectorAll('a, button, select, strong, .badge, .brand, .expiry, [data-testid="who"]')];
    const tallest = Math.max(...items.map((e) => e.getBoundingClientRect().height));
    return { height: h.getBoundingClientRect().height, tallest, pad: parseFloat(cs.paddingTop) + parseFloat(cs.paddingBottom), width: h.scrollWidth, view: innerWidth };
  })()`) as { height: number; tallest: number; pad: number; width: number; view: number };
  expect(m.height, JSON.stringify(m)).toBeLessThanOrEqual(m.tallest + m.pad + 2);
  expect(m.width).toBeLessThanOrEqual(m.view);
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  let opened: Awaited<ReturnType<typeof openConsolePage>>;
  [node, opened] = await Promise.all([
    startApiNode({ virtual: true, t0: Date.now() - BEHIND_MS }),
    openConsolePage({ viewport: { width: 1366, height: 768 }, ignore: /status of 40[0134]/, problems }),
  ]);
  ({ browser, page } = opened);
}, 240_000);

afterAll(async () => {
  await closeConsolePage(browser);
  await node?.close();
}, 60_000);

describe('the Line page as an operator\u2019s HMI', { timeout: 240_000 }, () => {
  it('shows each value\u2019s and each unit\u2019s age on linekeeper\u2019s clock, not the browser\u2019s', async () => {
    await signInConsole(page, node.url, 'o.operator', node.passwords.get('o.operator')!);
    await page.getByRole('link', { name: 'Line' }).click();
    await page.getByTestId('key-values').waitFor();
    // the view's time is the daemon's (an hour behind this browser), and the page says it
    const line = await lineOf();
    expect(Date.parse(line.at)).toBe(node.line!.clock.now());
    expect(Date.now() - Date.parse(line.at)).toBeGreaterThan(BEHIND_MS - 60_000);
    await poll(() => page.getByTestId('line-at').textContent()).toContain(utc(Date.parse(line.at)));
    expect(line.staleAfterMs).toBe(10_000);
    expect(line.limits).toBeNull();
    await poll(() => page.locator('#kv-h').textContent()).toContain('no run of this tenant on the line: no limits in force');
    // every age shown is the daemon's: at − the value's at (under a second on a 1 s subscription); by the browser's
    // clock each would be an hour
    const press = line.equipment.find((e) => e.id === 'press')!.values!;
    const weight = press['press.TabletWeight']!;
    const row = page.locator('.card tr[data-tag="press.TabletWeight"]');
    const expected = Date.parse(line.at) - Date.parse(weight.at);
    expect(expected).toBeLessThan(line.staleAfterMs);
    await poll(() => row.locator('[data-age-ms]').getAttribute('data-age-ms')).toBe(String(expected));
    expect(await row.textContent()).toContain(`${Math.floor(expected / 1000)} s old`);
    expect(await page.locator('[data-value-stale="true"]').count()).toBe(0);
    expect(await page.locator('[data-unit-stale="true"]').count()).toBe(0);
    expect(await page.getByTestId('unit-age').first().textContent()).toMatch(/^newest value \d s old$/);
    expect(await page.locator('.card').filter({ hasText: 'Rotary tablet press' }).getByTestId('unit-age').textContent()).toMatch(/^newest value \d s old$/);
    await axe('line, idle');
  });

  it('marks an out-of-spec press value with the limit of the run\u2019s batch record, and draws trends with their limit lines', async () => {
    acmeRun();
    const line = await lineOf();
    expect(line.activeRun?.batch).toBe('B-1042');
    // the batch record's limits, in each tag's unit
    expect(line.limits?.['press.Hardness']).toEqual({ min: 80, max: 150, unit: 'N', source: 'batch record B-1042', applies: 'in_process' });
    expect(line.limits?.['press.Thickness']).toMatchObject({ min: 2.6, max: 3.4, unit: 'mm' });
    expect(line.limits?.['press.TabletWeight']?.min).toBeCloseTo(285, 9);
    expect(line.limits?.['press.TabletWeight']?.max).toBeCloseTo(315, 9);
    expect(line.limits?.['press.CappingRate']).toMatchObject({ max: expect.any(Number), unit: '%' });
    expect(line.limits?.['fluidbed.Lod']).toMatchObject({ max: 2, unit: '%', applies: 'end_point' });
    await poll(() => page.locator('#kv-h').textContent()).toContain('limits of batch B-1042');

    // the press at its HMI: main force 15 kN, pre-force 4 kN — tablets far over 150 N; a few polls of readings
    node.line!.plant.writeSetpoints('press', { MainForce: 15, PreForce: 4 });
    for (let i = 0; i < 6; i++) await advanceSeen(5_000);
    const after = await lineOf();
    const hardness = after.equipment.find((e) => e.id === 'press')!.values!['press.Hardness']!;
    expect(hardness.value as number).toBeGreaterThan(150);
    const key = page.locator('[data-testid="key-value"][data-role="press.Hardness"]');
    await poll(() => key.getAttribute('data-judgement')).toBe('out');
    expect(await key.textContent()).toContain('✗ out of spec (limit 80–150 N)');
    expect(await key.textContent()).toContain('batch record B-1042');
    expect(await page.locator('.card tr[data-oos-for="press.Hardness"]').getByTestId('value-oos').textContent()).toBe('✗ out of spec (limit 80–150 N)');
    // a value inside its limits is not marked (thickness, or weight; whichever the press makes in spec)
    const judged = await page.locator('[data-testid="key-value"]').evaluateAll((rows) => rows.map((r) => [r.getAttribute('data-role'), r.getAttribute('data-judgement')]));
    expect(Object.fromEntries(judged)['press.Hardness']).toBe('out');
    expect(judged.filter(([, j]) => j === 'out').every(([role]) => role !== 'fluidbed.Lod')).toBe(true);

    // the trends: one per key value, with its limit lines and its unit as people write it
    const trends = page.getByTestId('trend');
    await poll(() => trends.count()).toBe(5);
    const hard = page.locator('[data-testid="trend"][data-role="press.Hardness"]');
    await poll(async () => Number(await hard.getAttribute('data-n'))).toBeGreaterThanOrEqual(3);
    expect(await hard.getAttribute('data-limit-lines')).toBe('2');
    expect(JSON.parse((await hard.getAttribute('data-limits'))!)).toEqual([80, 150]);
    expect(Number(await hard.getAttribute('data-outside'))).toBeGreaterThan(0);
    expect(await hard.locator('canvas').count()).toBeGreaterThan(0);
    const legend = await hard.locator('.u-legend').textContent();
    expect(legend).toContain('Hardness [N]');
    expect(legend).toContain('lower limit 80 N');
    expect(legend).toContain('upper limit 150 N');
    expect(await page.locator('[data-testid="trend"][data-role="press.CappingRate"]').getAttribute('data-limit-lines')).toBe('1');
    expect(await page.locator('[data-testid="trend"][data-role="press.TabletWeight"] .u-legend').textContent()).toContain('Tablet weight [mg]');
    const lod = page.locator('[data-testid="trend"][data-role="fluidbed.Lod"]');
    expect(await lod.getAttribute('data-limit-lines')).toBe('1');
    expect(await lod.locator('.u-legend').textContent()).toContain('end-of-drying limit ≤ 2 %');
    // no UCUM code on an axis or in a legend
    expect(await page.locator('[data-testid="trends"]').textContent()).not.toMatch(/\bCel\b|\{rev\}|\{tbl\}/);
    await axe('line, run seeded, press out of spec');
    await headerOnOneLine();
    await fits();
    await page.screenshot({ path: join(SHOTS, 'line-hmi-1366.png'), fullPage: true });
    await page.setViewportSize({ width: 1920, height: 1080 });
    await fits();
    await page.screenshot({ path: join(SHOTS, 'line-hmi-1920.png'), fullPage: true });
    await page.setViewportSize({ width: 1366, height: 768 });
  });

  it('greys a unit whose connection stops delivering and says how old its values are, on the daemon\u2019s clock', async () => {
    const modbus = node.daemon.connectors.find((c) => c.id === 'modbus-line') as unknown as MemoryConnector;
    // nothing more from the blender and the dryer: their last values stay as they were received
    modbus.faults.freeze();
    await advanceSeen(30_000);
    const line = await lineOf();
    const lod = line.equipment.find((e) => e.id === 'fluidbed')!.values!['fluidbed.Lod']!;
    const age = Date.parse(line.at) - Date.parse(lod.at);
    expect(age).toBeGreaterThan(line.staleAfterMs);
    const row = page.locator('.card tr[data-tag="fluidbed.Lod"]');
    await poll(() => row.getAttribute('data-value-stale')).toBe('true');
    expect(await row.locator('[data-age-ms]').getAttribute('data-age-ms')).toBe(String(age));
    expect(await row.textContent()).toContain(`stale, ${Math.floor(age / 1000)} s old`);
    // greyed, and said in words: the row's colour is the muted one, and its class says stale
    expect(await row.getAttribute('class')).toContain('stale');
    expect(await row.locator('td').first().evaluate((td) => (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(td).color)).toBe('rgb(74, 79, 87)');
    const key = page.locator('[data-testid="key-value"][data-role="fluidbed.Lod"]');
    expect(await key.getAttribute('data-value-stale')).toBe('true');
    expect(await key.textContent()).toContain(`stale, ${Math.floor(age / 1000)} s old`);
    // the unit says it too; the press (another connection) is still live
    const dryer = page.locator('.card').filter({ hasText: 'Fluid-bed granulator/dryer' }).getByTestId('unit-age');
    expect(await dryer.getAttribute('data-unit-stale')).toBe('true');
    expect(await dryer.textContent()).toMatch(/^⌛ stale: newest value 3\d s old$/);
    const press = page.locator('.card').filter({ hasText: 'Rotary tablet press' }).getByTestId('unit-age');
    expect(await press.getAttribute('data-unit-stale')).toBe('false');
    expect(await page.locator('.card tr[data-tag="press.Hardness"]').getAttribute('data-value-stale')).toBe('false');
    await axe('line, dryer stale');
    await headerOnOneLine();
    await fits();
    await page.screenshot({ path: join(SHOTS, 'line-hmi-stale-1366.png'), fullPage: true });
    await page.setViewportSize({ width: 1920, height: 1080 });
    await fits();
    await page.screenshot({ path: join(SHOTS, 'line-hmi-stale-1920.png'), fullPage: true });
    await page.setViewportSize({ width: 1366, height: 768 });
    expect(problems).toEqual([]);
  });

  it('another tenant sees neither the values, nor the limits, nor the trends of acme\u2019s run (R9)', async () => {
    const run = acmeRun();
    const theirs = await lineOf('l.conti', 'borealis-bio');
    expect(theirs.limits).toBeNull();
    expect(theirs.equipment.every((e) => e.values === null)).toBe(true);
    await signInConsole(page, node.url, 'l.conti', node.passwords.get('l.conti')!);
    await page.getByRole('link', { name: 'Line' }).click();
    await page.locator('.card').first().waitFor();
    await poll(() => page.getByText('Values hidden: the line runs another tenant\'s batch.').count()).toBeGreaterThan(0);
    expect(await page.getByTestId('key-values').count()).toBe(0);
    expect(await page.getByTestId('trends').count()).toBe(0);
    expect(await page.locator('main').textContent()).not.toContain('B-1042');
    await axe('line, another tenant\u2019s run');
    setStatus(node.daemon, run.id, 'ABORTED', 'test: done');
    expect(problems).toEqual([]);
  });
});
