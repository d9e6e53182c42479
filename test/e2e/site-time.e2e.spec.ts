/**
 * The site's clock for people (`site.timezone`), against a real daemon of a site in Asia/Kolkata (UTC+05:30, no
 * summer time: every expected text below is the UTC instant plus 5 h 30 min, worked out here without the code under
 * test). Records stay UTC; what people read is the site's clock with its offset.
 * - the console, in real headless Chromium (Debian's /usr/bin/chromium driven by playwright-core) whose own zone is
 *   America/New_York (UTC−05:00 in winter, −04:00 in summer: ten hours and more from the site): the Line page's
 *   "linekeeper's clock", a run's start, its tool-call log and its signature's manifestation, the audit desk's entries
 *   and the genealogy's events and time axis show the site's time, its offset and its zone, never the browser's;
 * - the command line's tables (`runs list`, `runs show`, its log, `audit query`), signed in and offline, print the
 *   site's clock with its offset as ISO 8601; `--json` stays UTC as recorded.
 * A run is seeded (test/helpers/api-seed.ts) with a few tool calls and a batch release the QA reviewer rejects
 * through the API; no batch runs.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saveSession } from '../../src/cli/session.js';
import type { RunRecord } from '../../src/store/run-store.js';
import { call, startApiNode, type ApiNode } from '../helpers/api.js';
import { logLines, seedGate, seedRun, stepOf } from '../helpers/api-seed.js';
import { closeConsolePage, openConsolePage, signInConsole } from '../helpers/browser.js';
import { runCli } from '../helpers/cli.js';

const SHOTS = join(process.cwd(), '.tmp', 'console-screenshots');
const A = '/v1/tenants/acme-pharma';
const BROWSER_ZONE = 'America/New_York';
const IST = 5.5 * 3_600_000;
/** An instant as the console writes it on the site's clock. */
const stamp = (ms: number): string => `${new Date(ms + IST).toISOString().replace('T', ' ').slice(0, 19)} UTC+05:30 (Asia/Kolkata)`;
/** Its time of day with the offset, as the run's log and the genealogy's events list write it. */
const clock = (ms: number): string => `${new Date(ms + IST).toISOString().slice(11, 19)} UTC+05:30`;
/** As the command line's tables print it: ISO 8601 on the site's clock. */
const iso = (ms: number): string => new Date(ms + IST).toISOString().replace('Z', '+05:30');

let node: ApiNode;
let browser: Browser;
let page: Page;
let run: RunRecord;
let token: string;
let signature: { timestamp: string; name: string; user: string };
const problems: string[] = [];
const poll = <T>(fn: () => Promise<T>) => expect.poll(fn, { timeout: 30_000 });

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  let opened: Awaited<ReturnType<typeof openConsolePage>>;
  [node, opened] = await Promise.all([
    startApiNode({
      memory: true,
      site: (yaml) => {
        const out = yaml.replace(/^ {2}timezone: UTC$/m, '  timezone: Asia/Kolkata');
        if (out === yaml) throw new Error('config/site.yaml no longer says "  timezone: UTC": update this test');
        return out;
      },
    }),
    openConsolePage({ viewport: { width: 1366, height: 768 }, ignore: /status of 40[0134]/, problems, timezoneId: BROWSER_ZONE }),
  ]);
  ({ browser, page } = opened);
  const d = node.daemon;
  run = seedRun(d, { tenant: 'acme-pharma', batch: 'B-1042', by: 'p.bianchi' });
  logLines(d, run.id, 2);
  stepOf(d, run.id).event('step', 'a step event seeded for the genealogy');
  const gate = seedGate(d, run.id);
  const password = node.passwords.get('m.rossi')!;
  const t = await call(node.url, 'POST', '/v1/auth/token', { body: { user: 'm.rossi', password } });
  expect(t.status).toBe(200);
  token = t.body.token as string;
  const signed = await call(node.url, 'POST', `${A}/approvals/${gate.id}`, { token, body: { decision: 'reject', meaning: 'QA rejection of batch B-1042', password, recordHash: gate.recordHash } });
  expect(signed.status, JSON.stringify(signed.body)).toBe(200);
  signature = signed.body as typeof signature;
}, 240_000);

afterAll(async () => {
  await closeConsolePage(browser);
  await node?.close();
}, 60_000);

describe('the site\u2019s clock for people: a site in Asia/Kolkata, a browser in America/New_York', { timeout: 240_000 }, () => {
  it('[P11.10(e)] GET /line names the site\u2019s zone; the console\u2019s Line page and audit desk show its clock with the offset, not the browser\u2019s', async () => {
    const line = await call(node.url, 'GET', `${A}/line`, { token });
    expect(line.body.timezone).toBe('Asia/Kolkata');
    await signInConsole(page, node.url, 'm.rossi', node.passwords.get('m.rossi')!);
    // the browser really is elsewhere: its own clock would say -05:00 or -04:00
    expect(await page.evaluate('Intl.DateTimeFormat().resolvedOptions().timeZone')).toBe(BROWSER_ZONE);
    await page.goto(`${node.url}/console#/line`);
    const at = page.getByTestId('line-at');
    await poll(() => at.textContent()).toMatch(/UTC\+05:30 \(Asia\/Kolkata\)$/);
    const shown = /(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d) UTC\+05:30/.exec((await at.textContent())!)!;
    // the wall clock of Kolkata now (the daemon runs on the wall clock), within the page's poll
    const read = Date.parse(`${shown[1]}T${shown[2]}+05:30`);
    expect(Math.abs(read - Date.now())).toBeLessThan(60_000);
    expect(await page.locator('main').textContent()).not.toMatch(/UTC-0[45]:00|America\/New_York/);
    await page.screenshot({ path: join(SHOTS, 'site-time-line.png') });

    const audit = await call(node.url, 'GET', `${A}/audit?limit=3`, { token });
    expect(audit.status).toBe(200);
    const first = (audit.body.items as { seq: number; ts: string }[])[0]!;
    await page.getByRole('link', { name: 'Audit', exact: true }).click();
    const row = page.locator('table.audit tbody tr').first();
    await poll(() => row.locator('td').nth(1).textContent()).toBe(stamp(Date.parse(first.ts)));
    expect(await row.locator('td').first().textContent()).toContain(`#${first.seq}`);
  });

  it('[P11.50] a run\u2019s start, its tool-call log and its signature\u2019s date and time, and the genealogy\u2019s events and axis, on the site\u2019s clock', async () => {
    await page.goto(`${node.url}/console#/runs/${run.id}`);
    const manifestation = page.getByTestId('manifestation');
    await poll(() => manifestation.textContent()).toContain(`rejected by Maria Rossi (m.rossi), ${stamp(Date.parse(signature.timestamp))}`);
    expect(await page.locator('main').textContent()).toContain(`started by p.bianchi at ${stamp(run.createdAt)}`);
    // the log's rows and an entry's reasoning: its time of day with the offset, then the whole stamp
    const calls = node.daemon.engine.runs.toolCalls(run.id);
    await poll(() => page.locator('.log .t').first().textContent()).toBe(clock(calls[0]!.at));
    await page.locator('.log li button').first().click();
    expect(await page.getByTestId('entry-time').textContent()).toBe(stamp(calls[0]!.at));
    await page.screenshot({ path: join(SHOTS, 'site-time-run.png') });

    await page.goto(`${node.url}/console#/genealogy/${run.id}`);
    const lane = page.getByTestId('events-lane');
    await poll(() => lane.getAttribute('data-axes')).toBe(JSON.stringify(['time (Asia/Kolkata, UTC+05:30)', 'event kind']));
    const events = page.getByTestId('events-table');
    expect(await events.locator('thead th').first().textContent()).toBe('Time (Asia/Kolkata)');
    const step = node.daemon.engine.runs.events(run.id).find((e) => e.kind === 'step')!;
    expect(await events.locator('tr[data-kind="step"] td').first().textContent()).toBe(clock(step.at));
    expect(problems).toEqual([]);
  });

  it('[P11.50] the command line\u2019s tables print the site\u2019s clock with its offset, signed in and offline; --json stays UTC', async () => {
    const home = mkdtempSync(join(tmpdir(), 'lk-site-time-'));
    const before = { xdg: process.env['XDG_CONFIG_HOME'], url: process.env['LINEKEEPER_URL'] };
    try {
      process.env['XDG_CONFIG_HOME'] = home;
      delete process.env['LINEKEEPER_URL'];
      const me = await call(node.url, 'GET', '/v1/auth/me', { token });
      saveSession({ format: 1, url: node.url, user: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer', tenant: 'acme-pharma', tenants: me.body.user.tenants, token, expiresAt: me.body.expiresAt });

      const list = await runCli('runs', 'list');
      expect(list.code, list.err).toBe(0);
      expect(list.out.split('\n').find((l) => l.startsWith(run.id))).toContain(`${run.id}  ${iso(run.createdAt)}  batch B-1042`);
      const json = await runCli('runs', 'list', '--json');
      expect((JSON.parse(json.out) as { id: string; createdAt: string }[]).find((r) => r.id === run.id)!.createdAt).toBe(new Date(run.createdAt).toISOString());

      const show = await runCli('runs', 'show', run.id);
      expect(show.code, show.err).toBe(0);
      expect(show.out).toContain(`started by p.bianchi at ${iso(run.createdAt)}`);
      expect(show.out).toContain(`: rejected by Maria Rossi (m.rossi) at ${iso(Date.parse(signature.timestamp))}: QA rejection of batch B-1042`);

      // the data directory beside the running daemon, read-only: the zone of the site's configuration
      const files = ['--config', join(node.dir, 'site.yaml'), '--data', join(node.dir, 'data')];
      const log = await runCli('runs', 'show', run.id, '--format', 'log', '--offline', '--tenant', 'acme-pharma', ...files);
      expect(log.code, log.err).toBe(0);
      const first = node.daemon.engine.runs.toolCalls(run.id)[0]!;
      expect(log.out.split('\n')[0]).toBe(`${String(first.id).padStart(5)}  ${iso(first.at).slice(11, 19)}+05:30  ${first.tool}(${JSON.stringify(first.args)})`);
      // with --data and --config both: the configuration's zone (with --data alone, an auditor's copy, UTC)
      const audit = await runCli('audit', 'query', '--tenant', 'acme-pharma', '--limit', '2', ...files);
      expect(audit.code, audit.err).toBe(0);
      const entries = (await call(node.url, 'GET', `${A}/audit?limit=2`, { token })).body.items as { seq: number; ts: string; actor: string }[];
      expect(audit.out.split('\n').slice(0, 2).map((l) => l.split(' ').slice(0, 3).join(' '))).toEqual(entries.map((e) => `#${e.seq} ${iso(Date.parse(e.ts))} ${e.actor}`));
    } finally {
      for (const [k, v] of [['XDG_CONFIG_HOME', before.xdg], ['LINEKEEPER_URL', before.url]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      rmSync(home, { recursive: true, force: true });
    }
  });
});
