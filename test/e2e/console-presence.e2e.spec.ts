/**
 * The console as an operator's HMI and a reviewer's desk, in real headless Chromium (Debian's /usr/bin/chromium
 * driven by playwright-core) against a real daemon on the embedded default. No batch runs: a run, a setpoint
 * write the guarded writer queues for QA, an exception and a batch release at the gate are seeded
 * (test/helpers/api-seed.ts).
 * - the strip "Waiting for a person" in the navigation: its counts are what GET /waiting answers for the
 *   signed-in person (moves, deadlocks, exceptions, releases; how many are theirs), for an operator and for a QA
 *   reviewer; each count leads to the page where the item is decided (or, for an operator, where it is shown
 *   with whom it waits for); a new answer does not change the strip while the pointer is over it.
 * - the daemon stops: every page (here the Audit page) shows the global banner with the time of the last answer,
 *   and the audit verdict returns to unknown; a daemon started again on the same data directory and port
 *   answers, the banner goes, and the person is still signed in (sessions are kept in the store); a re-check
 *   that fails while the daemon answers shows no "verified" either.
 * - axe-core: no serious or critical violation with the strip and with the banner.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { silentLogger } from '../../src/log.js';
import type { PendingWrite } from '../../src/engine/guarded-writer.js';
import type { ApprovalRecord, RunRecord } from '../../src/store/run-store.js';
import type { ExceptionRecord } from '../../src/store/exception-store.js';
import { call, signIn, startApiNode, type ApiNode } from '../helpers/api.js';
import { queueWrite, seedGate, seedRun } from '../helpers/api-seed.js';
import { axeOf, closeConsolePage, openConsolePage, signInConsole } from '../helpers/browser.js';

const SHOTS = join(process.cwd(), '.tmp', 'console-screenshots');
const A = '/v1/tenants/acme-pharma';
const KINDS = ['moves', 'escalations', 'exceptions', 'gates'] as const;
let node: ApiNode;
let again: Daemon | undefined;
let browser: Browser;
let page: Page;
const problems: string[] = [];
let run: RunRecord;
let move: PendingWrite;
let exception: ExceptionRecord;
let gate: ApprovalRecord;

const poll = <T>(fn: () => Promise<T>) => expect.poll(fn, { timeout: 30_000 });

async function axe(name: string): Promise<void> {
  expect((await axeOf(page)).bad, name).toEqual([]);
}

async function signInAs(user: string): Promise<void> {
  await signInConsole(page, node.url, user, node.passwords.get(user)!);
}

type Waiting = Record<(typeof KINDS)[number], { count: number; yours: number; runs: string[] }>;

/** What GET /waiting answers to `user`. */
async function waitingOf(user: string): Promise<Waiting> {
  const r = await call(node.url, 'GET', `${A}/waiting`, { token: await signIn(node.url, user, node.passwords.get(user)!) });
  expect(r.status).toBe(200);
  return r.body as Waiting;
}

/** The strip's count and "yours" of each kind, as the page shows them. */
async function strip(): Promise<Record<string, [number, number]>> {
  const out: Record<string, [number, number]> = {};
  for (const k of KINDS) {
    const a = page.getByTestId(`waiting-${k}`);
    out[k] = [Number(await a.getAttribute('data-count')), Number(await a.getAttribute('data-yours'))];
  }
  return out;
}

const expected = (w: Waiting) => Object.fromEntries(KINDS.map((k) => [k, [w[k].count, w[k].yours]]));

/** Follow a count's link (the pointer leaves the strip afterwards, so it updates again). */
async function follow(kind: (typeof KINDS)[number]): Promise<string> {
  const href = (await page.getByTestId(`waiting-${kind}`).getAttribute('href'))!;
  await page.getByTestId(`waiting-${kind}`).click();
  await page.mouse.move(600, 700);
  await poll(() => page.evaluate('location.hash')).toBe(href);
  return href;
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  let opened: Awaited<ReturnType<typeof openConsolePage>>;
  [node, opened] = await Promise.all([
    startApiNode({ memory: true }),
    openConsolePage({ viewport: { width: 1366, height: 768 }, ignore: /status of (40[0134]|50[03])|ERR_CONNECTION_REFUSED|Failed to fetch/, problems }),
  ]);
  ({ browser, page } = opened);
  const d = node.daemon;
  // a run started by the batch's process engineer: QA (m.rossi) may sign its moves and its release
  run = seedRun(d, { tenant: 'acme-pharma', batch: 'B-1042', by: 'p.bianchi' });
  move = await queueWrite(d, { run, agent: 'agent.coat_dry', setpoint: 'coater.PanSpeed', from: 14, to: 14.5, unit: '{rev}/min' });
  exception = d.engine.raiseException(run, { kind: 'OOS', key: 'OOS:test:presence', step: null, title: 'seeded for the strip', evidence: { seeded: true }, by: 'system', severity: 'major' })!;
  gate = seedGate(d, run.id);
}, 240_000);

afterAll(async () => {
  await closeConsolePage(browser);
  await again?.stop('test done');
  await node?.close();
}, 60_000);

describe('what waits for a person, in the navigation', { timeout: 240_000 }, () => {
  it('a QA reviewer: the counts are GET /waiting\u2019s, the seeded items are theirs, and each count leads to where it is decided', async () => {
    const w = await waitingOf('m.rossi');
    expect(w.moves).toMatchObject({ count: 1, yours: 1, runs: [run.id] });
    expect(w.exceptions).toMatchObject({ count: 1, yours: 1, runs: [run.id] });
    expect(w.gates).toMatchObject({ count: 1, yours: 1, runs: [run.id] });
    expect(w.escalations.count).toBe(0);
    // the same counts for everyone; "yours" by the deciding routes' rules: the process engineer started the run (and
    // QA signs the move, the major exception and the release), the auditor decides nothing
    for (const other of ['p.bianchi', 'a.ricci']) {
      const o = await waitingOf(other);
      expect(KINDS.map((k) => [o[k].count, o[k].yours]), other).toEqual(KINDS.map((k) => [w[k].count, 0]));
    }
    await signInAs('m.rossi');
    await poll(strip).toEqual(expected(w));
    await page.screenshot({ path: join(SHOTS, 'presence-strip-qa.png') });
    await axe('QA reviewer, the strip');

    expect(await follow('moves')).toBe('#/approvals');
    await page.locator(`[id="apr-${move.id}"]`).waitFor();
    expect(await follow('gates')).toBe('#/approvals');
    await page.locator(`[id="apr-${gate.id}"]`).waitFor();
    expect(await follow('escalations')).toBe('#/approvals');
    await page.getByRole('heading', { name: 'Approvals', level: 1 }).waitFor();
    expect(await follow('exceptions')).toBe(`#/runs/${run.id}`);
    await page.locator(`[data-exception="${exception.id}"]`).waitFor();
  });

  it('an operator sees what waits and for whom without signing anything: none is theirs; the links lead to where it is shown', async () => {
    const w = await waitingOf('o.operator');
    expect(KINDS.map((k) => w[k].yours)).toEqual([0, 0, 0, 0]);
    expect([w.moves.count, w.exceptions.count, w.gates.count]).toEqual([1, 1, 1]);
    await signInAs('o.operator');
    await poll(strip).toEqual(expected(w));
    expect(await page.getByTestId('waiting-moves').textContent()).toContain('for QA 1');
    expect(await page.getByTestId('waiting-gates').textContent()).toContain('QA reviewer');
    expect(await page.getByTestId('waiting').textContent()).not.toContain('yours');
    await page.screenshot({ path: join(SHOTS, 'presence-strip-operator.png') });
    await axe('operator, the strip');
    expect(await follow('moves')).toBe('#/line');
    await poll(() => page.getByTestId('pending-moves').textContent()).toContain('process engineer or QA');
    expect(await follow('gates')).toBe(`#/runs/${run.id}`);
    await poll(() => page.getByTestId('run-status').textContent()).toContain('APPROVAL');
    expect(await follow('exceptions')).toBe(`#/runs/${run.id}`);
    await page.locator(`[data-exception="${exception.id}"]`).waitFor();
  });

  it('nothing changes under the pointer: a new count waits until the pointer leaves the strip', async () => {
    await signInAs('m.rossi');
    await poll(strip).toEqual(expected(await waitingOf('m.rossi')));
    await page.getByTestId('waiting-exceptions').hover();
    node.daemon.engine.raiseException(run, { kind: 'OOS', key: 'OOS:test:presence:2', step: null, title: 'raised under the pointer', evidence: {}, by: 'system', severity: 'minor' });
    // an answer of the poll that counts the new exception arrives while the pointer stays (held up to 15 s)
    await page.waitForResponse(async (r) => r.url().endsWith(`${A}/waiting`) && r.status() === 200 && (await r.json()).exceptions.count === 2);
    expect(await page.getByTestId('waiting-exceptions').getAttribute('data-count')).toBe('1');
    await page.mouse.move(600, 700);
    await poll(() => page.getByTestId('waiting-exceptions').getAttribute('data-count')).toBe('2');
  });
});

describe('honest when the daemon does not answer', { timeout: 240_000 }, () => {
  it('a failed re-check shows no "verified"', async () => {
    await signInAs('a.ricci');
    await page.getByRole('link', { name: 'Audit', exact: true }).click();
    const status = page.getByTestId('verify-status');
    await poll(() => status.textContent()).toContain('verified');
    await page.route('**/audit/verify', (r) => r.fulfill({ status: 500, contentType: 'application/problem+json', body: JSON.stringify({ type: 'about:blank', title: 'Internal error', status: 500, code: 'LK_INTERNAL', detail: 'injected by the test' }) }));
    await page.getByRole('button', { name: 'Verify again' }).click();
    await poll(() => status.textContent()).toContain('unknown');
    expect(await page.locator('section.card').first().textContent()).not.toContain('verified');
    await page.unroute('**/audit/verify');
    await page.getByRole('button', { name: 'Verify again' }).click();
    await poll(() => status.textContent()).toContain('verified');
  });

  it('the daemon stops: the banner says so with the last answer\u2019s time and the verdict goes; started again on the same port, it clears, signed in still', async () => {
    expect(await page.getByTestId('away-banner').count()).toBe(0);
    const status = page.getByTestId('verify-status');
    await poll(() => status.textContent()).toContain('verified');
    const before = Date.now();
    // the next answer of a poll is the last before the stop
    await page.waitForResponse((r) => r.url().includes(`${A}/`) && r.ok());
    const port = Number(new URL(node.url).port);
    await node.daemon.stop('the console test stops the daemon');
    const stoppedAt = Date.now();

    const banner = page.getByTestId('away-banner');
    await banner.waitFor();
    expect(await banner.getAttribute('role')).toBe('alert');
    expect(await banner.textContent()).toContain('linekeeper is not answering');
    const last = Date.parse((await page.getByTestId('away-last').getAttribute('datetime'))!);
    // the daemon's Date header has whole seconds
    expect(last).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - 1000);
    expect(last).toBeLessThanOrEqual(stoppedAt);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toContain('Audit trail');
    await poll(() => status.textContent()).toContain('unknown');
    expect(await page.locator('section.card').first().textContent()).not.toContain('verified');
    // the counts of what waits are the last ones read, and say so
    expect(await page.getByTestId('waiting').getAttribute('data-away')).toBe('true');
    expect(await page.getByTestId('waiting-stale').textContent()).toContain('as last read');
    await page.screenshot({ path: join(SHOTS, 'presence-away-banner.png') });
    await axe('the banner');

    again = await startDaemon({ configFile: join(node.dir, 'site.yaml'), dataDir: join(node.dir, 'data'), logger: silentLogger, api: { host: '127.0.0.1', port }, embeddedSimulator: 'memory' });
    expect(again.ready.api).toBe(node.url);
    await poll(() => banner.count()).toBe(0);
    expect(await page.getByTestId('waiting').getAttribute('data-away')).toBe('false');
    // the session is the same: no sign-in page, the same person, and the daemon answers the page's calls
    expect(await page.getByTestId('who').textContent()).toContain('a.ricci');
    await page.getByRole('button', { name: 'Verify again' }).click();
    await poll(() => status.textContent()).toContain('verified');
    expect(problems).toEqual([]);
  });
});
