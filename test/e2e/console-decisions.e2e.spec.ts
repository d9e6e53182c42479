/**
 * The console where people decide, in real headless Chromium (Debian's /usr/bin/chromium driven by playwright-core)
 * against a real daemon on the embedded default, in memory. No batch runs: the run, its gate, its exceptions and its
 * genealogy are seeded in the daemon's store (test/helpers/api-seed.ts), and the move is a real agent's.
 * - A press move: agent.compress_fill's own decision on the golden batch's recorded input (hard tablets, 165 N over
 *   the 150 N limit), run through the guarded writer and the real policy (an L2 move: it waits for the batch's
 *   reviewer). Its card shows each setpoint now → proposed with the approved limits and maximum step equal to
 *   GET /design-space's, what the move is for as the agent reasoned it (hardness first — not "dissolution", the
 *   class it is ranked by), and the twin's prediction; signed, the dialog shows what the writer did (written, each
 *   tag read back) and focus is on Close.
 * - The batch release: the dialog restates the specification table's verdict and counts and the exceptions, which
 *   are closed and by whom; after the signature focus is on Close, and back on the heading once it closes.
 * - Both dialogs send the words of the meaning as shown, not the entry's id (a list reloaded between showing and
 *   signing then refuses them: api-signature-meanings.int.spec.ts).
 * - The genealogy of a run with 1,200 seeded events: one chart per attribute with its specification band, one per
 *   setpoint group with a unit on every axis, repeated lines (sensor snapshots, arbitration rounds, losing requests)
 *   as one entry with a count; the page is a few thousand pixels tall, where a row per event made it ~30,000.
 * axe-core: no serious or critical violation on each page and dialog; screenshots under .tmp/console-screenshots/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decide as compressDecide, type CompressFillInput } from '../../src/agents/compress-fill.js';
import { toWrite } from '../../src/engine/run/steps/common.js';
import type { PendingWrite } from '../../src/engine/guarded-writer.js';
import type { RunRecord } from '../../src/store/run-store.js';
import { setAutonomy } from '../../src/store/autonomy-store.js';
import { call, signIn, startApiNode, type ApiNode } from '../helpers/api.js';
import { seedGate, seedRun, stepOf } from '../helpers/api-seed.js';
import { axeOf, closeConsolePage, openConsolePage, signInConsole } from '../helpers/browser.js';
import { goldenCalls } from '../helpers/golden.js';
import { plantOf } from '../helpers/run-site.js';

const SHOTS = join(process.cwd(), '.tmp', 'console-screenshots');
const T = 'acme-pharma';
const A = `/v1/tenants/${T}`;
let node: ApiNode;
let browser: Browser;
let page: Page;
const problems: string[] = [];
const tokens = new Map<string, string>();
const tok = (u: string): string => tokens.get(u)!;

const poll = <T>(fn: () => Promise<T>) => expect.poll(fn, { timeout: 30_000 });
const focused = () => page.evaluate('(() => { const a = document.activeElement; return a ? `${a.tagName}:${a.getAttribute("data-testid") ?? ""}:${a.textContent}` : null; })()') as Promise<string | null>;

/** axe on the page (or a part of it) as it stands: no serious or critical violation; then a screenshot. */
async function check(name: string, include?: string): Promise<void> {
  expect((await axeOf(page, include)).bad, name).toEqual([]);
  await page.screenshot({ path: join(SHOTS, `decisions-${name}.png`), fullPage: true });
}

async function signInAs(user: string): Promise<void> {
  await signInConsole(page, node.url, user, node.passwords.get(user)!);
}

const present = () => call(node.url, 'POST', `${A}/attendance`, { token: tok('o.operator'), body: {} });

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  let opened: Awaited<ReturnType<typeof openConsolePage>>;
  [node, opened] = await Promise.all([startApiNode({ memory: true }), openConsolePage({ viewport: { width: 1280, height: 900 }, ignore: /status of 40[0134]/, problems })]);
  ({ browser, page } = opened);
  for (const u of ['o.operator', 'p.bianchi', 'm.rossi']) tokens.set(u, await signIn(node.url, u, node.passwords.get(u)!));
}, 240_000);

afterAll(async () => {
  await closeConsolePage(browser);
  await node?.close();
}, 60_000);

describe('the console where people decide', { timeout: 240_000 }, () => {
  let run: RunRecord;

  it('a press move\u2019s card: now → proposed against the approved limits and max step, what it is for, the twin\u2019s prediction; signed, what the writer did, focus on Close', async () => {
    const d = node.daemon;
    run = seedRun(d, { tenant: T, batch: 'B-1042', by: 'o.operator' });
    // this site reviews the press agent's moves (L2): the bundle graduated it to L3
    setAutonomy(d.store, d.policy.bundle!, { tenant: T, agent: 'agent.compress_fill', to: 'L2', by: { person: 'p.bianchi', role: 'process_engineer' }, reason: 'moves reviewed for this test' });
    expect((await present()).status).toBe(200);
    // compress_fill's own decision on the golden batch's first press round (hard tablets), the press at its current setpoints
    const input = JSON.parse(goldenCalls().calls.find((c) => c.fn === 'compress_fill.decide')!.input) as CompressFillInput;
    for (const [sp, v] of Object.entries(input.current)) plantOf(d).writeSetpoint(sp.split('.')[0]!, sp.split('.')[1]!, v);
    const out = compressDecide(input);
    const proposal = out.proposals[0]!;
    expect(proposal.serves?.[0]?.tag).toBe('press.Hardness');
    expect(proposal.attribute).toBe('dissolution');
    const ref = d.engine.options.models.twin(T).ref;
    const res = await d.writer.propose({
      ...toWrite(proposal), model: { id: ref.id, version: String(ref.version) },
      id: `${run.id}:05:1:1`, tenant: T, batch: run.batch, run: run.id, product: run.product, tooling: run.tooling,
    });
    expect(res.status, JSON.stringify(res.decisions.map((x) => x.reasons))).toBe('pending');
    const w = d.writer.pending().find((p) => p.id === res.pending!.id) as PendingWrite;

    // what the daemon answers: the table's limits are the design space's, the values now are the equipment's (once read)
    const space = (await call(node.url, 'GET', `${A}/design-space?product=${run.product}&tooling=${run.tooling}`, { token: tok('p.bianchi') })).body as { setpoints: Record<string, { min: number; max: number; maxStep: number; unit: string }> };
    type Listed = { id: string; detail: { table: { setpoint: string; current: number; proposed: number; limits: { min: number; max: number; maxStep: number } }[]; serves: { tag: string }[]; predicted: Record<string, number> } };
    const approvals = async () => ((await call(node.url, 'GET', `${A}/approvals`, { token: tok('p.bianchi') })).body as { items: Listed[] }).items.find((i) => i.id === w.id)!;
    await poll(async () => (await approvals()).detail.table.every((r) => r.current === input.current[r.setpoint as keyof typeof input.current])).toBe(true);
    const listed = await approvals();
    expect(listed.detail.table.map((r) => r.setpoint)).toEqual(proposal.moves.map((m) => m.setpoint));
    for (const r of listed.detail.table) {
      const m = proposal.moves.find((x) => x.setpoint === r.setpoint)!;
      expect([r.current, r.proposed], r.setpoint).toEqual([input.current[r.setpoint as keyof typeof input.current], m.value]);
      expect(r.limits, r.setpoint).toMatchObject({ min: space.setpoints[r.setpoint]!.min, max: space.setpoints[r.setpoint]!.max, maxStep: space.setpoints[r.setpoint]!.maxStep });
    }
    expect(listed.detail.serves.map((s) => s.tag)).toEqual(proposal.serves!.map((s) => s.tag));
    expect(listed.detail.predicted['hardnessN']).toBe(proposal.predicted!['hardnessN']);

    // what the reviewer sees
    await signInAs('p.bianchi');
    await page.getByRole('link', { name: 'Approvals', exact: true }).click();
    const card = page.locator('ul.approvals > li', { has: page.locator(`code:text-is("${w.id}")`) });
    await card.getByTestId('move-table').waitFor();
    const rows = await card.locator('[data-testid="move-table"] tbody tr').evaluateAll((trs) => trs.map((tr) => ({
      setpoint: tr.getAttribute('data-setpoint'), current: Number(tr.getAttribute('data-current')), proposed: Number(tr.getAttribute('data-proposed')),
      min: Number(tr.getAttribute('data-min')), max: Number(tr.getAttribute('data-max')), maxStep: Number(tr.getAttribute('data-max-step')),
      cells: [...tr.querySelectorAll('th, td')].map((c) => c.textContent!.trim()),
    })));
    expect(rows.map((r) => r.setpoint)).toEqual(proposal.moves.map((m) => m.setpoint));
    for (const r of rows) {
      const sp = r.setpoint!;
      const l = space.setpoints[sp]!;
      const m = proposal.moves.find((x) => x.setpoint === sp)!;
      expect([r.current, r.proposed, r.min, r.max, r.maxStep], sp).toEqual([input.current[sp as keyof typeof input.current], m.value, l.min, l.max, l.maxStep]);
      // written as people write them: the unit's symbol on the values, the limits and the step, never a UCUM code
      const u = { mm: 'mm', kN: 'kN', '{rev}/min': 'rpm' }[l.unit as 'mm' | 'kN' | '{rev}/min'];
      expect(r.cells[2], sp).toBe(`${m.value} ${u}`);
      expect(r.cells[4], sp).toBe(`${l.min}–${l.max} ${u}`);
      expect(r.cells[5], sp).toBe(`${l.maxStep} ${u}`);
      expect(r.cells[1], sp).toMatch(new RegExp(`^${input.current[sp as keyof typeof input.current].toFixed(2)} ${u}$`));
    }
    // what the move is for: the attributes its reasoning is about, hardness first — not "dissolution", its rank's class
    const serves = (await card.getByTestId('move-serves').textContent())!;
    expect(serves).toMatch(/^hardness 164\.5 N → 137\.4 N, capping rate 1\.04 % → 0\.35 %, tablet weight 294\.9 mg → 300\.0 mg$/);
    expect(serves).not.toContain('dissolution');
    expect(await card.getByTestId('move-for').textContent()).toContain('ranked in arbitration as a quality move: dissolution');
    expect(await card.getByTestId('move-predicted').textContent()).toMatch(/The twin predicts.*tablet weight 300\.0 mg.*hardness 137\.4 N.*capping risk 0\.35 %/);
    expect(await card.textContent()).toContain(proposal.justification);
    await check('move-card');

    // the run page lists it too, with the same figures
    await page.goto(`${node.url}/console#/runs/${run.id}`);
    const listedRow = page.locator(`[data-testid="pending-moves"] tr[data-move="${w.id}"]`);
    await listedRow.waitFor();
    expect(await listedRow.textContent()).toMatch(/press\.MainForce 12\.00 kN → 10\.5 kN \(approved \d+(\.\d+)?–\d+(\.\d+)? kN, step ≤ [\d.]+ kN\).*hardness 164\.5 N → 137\.4 N/);
    await check('run-pending-moves', '[data-testid="pending-moves"]');

    // signed: the dialog shows what the guarded writer did — written, each tag read back — and focus is on Close
    expect((await present()).status).toBe(200);
    await page.getByRole('link', { name: 'Approvals', exact: true }).click();
    await card.getByRole('button', { name: 'Review and sign…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.getByTestId('move-table').count()).toBe(1);
    await dialog.getByRole('radio', { name: 'Approve' }).check();
    await dialog.getByLabel(/Meaning of this signature/).selectOption({ label: 'Approval of setpoint change for batch B-1042' });
    await check('move-sign-dialog');
    await dialog.getByLabel('Password (re-entered to sign)').fill(node.passwords.get('p.bianchi')!);
    const posted = page.waitForRequest((r) => r.method() === 'POST' && r.url().includes('/approvals/pw_'));
    await dialog.getByRole('button', { name: 'Sign' }).click();
    // the words shown are the words sent
    expect((await posted).postDataJSON()).toMatchObject({ decision: 'approve', meaning: 'Approval of setpoint change for batch B-1042' });
    const outcome = dialog.getByTestId('write-outcome');
    await outcome.waitFor();
    expect(await outcome.textContent()).toMatch(/What the guarded writer did with it: written( \([A-Z_, ]+\))?\./);
    const back = await dialog.getByTestId('write-readback').locator('li').allTextContents();
    expect(back).toHaveLength(proposal.moves.length);
    for (const m of proposal.moves) expect(back.find((t) => t.startsWith(m.setpoint)), m.setpoint).toMatch(new RegExp(`written ${m.value} \\S+, read back [\\d.]+ \\S+ — ✓ verified`));
    await poll(focused).toBe('BUTTON:sign-close:Close');
    await check('move-signed');
    for (const m of proposal.moves) expect(plantOf(d).setpoints(m.setpoint.split('.')[0]!)[m.setpoint.split('.')[1]!]).toBeCloseTo(m.value, 6);
    await dialog.getByRole('button', { name: 'Close' }).click();
    await poll(focused).toMatch(/^H1:/);
  });

  it('the batch release dialog restates the verdict, the counts and the exceptions (closed, by whom); after signing focus is on Close', async () => {
    const d = node.daemon;
    // two exceptions of the run: a major one QA closes with a comment and a deviation, a minor one left open
    const ctx = stepOf(d, run.id, '05');
    const major = ctx.exception({ kind: 'OOS', key: 'OOS:press.Hardness:1', title: 'Hardness 171 N above 150 N', evidence: { value: 171 }, severity: 'major' })!;
    const minor = ctx.exception({ kind: 'OOT', key: 'OOT:press.Thickness:1', title: 'Thickness trending up', evidence: { ewma: 3.31 }, severity: 'minor' })!;
    const closed = await call(node.url, 'POST', `${A}/exceptions/${major.id}/close`, { token: tok('m.rossi'), body: { comment: 'tablets of the excursion segregated', deviation: 'DEV-2026-0142', password: node.passwords.get('m.rossi') } });
    expect(closed.status, JSON.stringify(closed.body)).toBe(200);
    const gate = seedGate(d, run.id);
    const list = (await call(node.url, 'GET', `${A}/runs/${run.id}/exceptions`, { token: tok('m.rossi') })).body as { specTable: { verdict: string; results: { verdict: string }[] } };
    const count = (v: string) => list.specTable.results.filter((r) => r.verdict === v).length;

    await signInAs('m.rossi');
    await page.getByRole('link', { name: 'Approvals', exact: true }).click();
    const card = page.locator('ul.approvals > li', { has: page.locator(`code:text-is("${gate.id}")`) });
    await card.getByRole('button', { name: 'Review and sign…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    // nothing chosen for the reviewer
    expect(await dialog.getByRole('radio', { name: 'Approve' }).isChecked()).toBe(false);
    expect(await dialog.getByRole('radio', { name: 'Reject' }).isChecked()).toBe(false);
    expect(await dialog.getByRole('button', { name: 'Sign' }).isDisabled()).toBe(true);
    // the disposition, restated where it is signed
    expect(await dialog.getByTestId('disposition-verdict').textContent()).toBe(
      `Specifications: ${list.specTable.verdict} — ${list.specTable.results.length} specifications: ${count('PASS')} PASS, ${count('FAIL')} FAIL, ${count('NOT_EVALUATED')} NOT EVALUATED.`,
    );
    expect(await dialog.getByTestId('disposition-exceptions').textContent()).toBe('Exceptions: 2 raised, 1 closed, 1 open.');
    expect(await dialog.locator(`li[data-exception="${major.id}"]`).textContent()).toMatch(/OOS major: Hardness 171 N above 150 N — closed by Maria Rossi \(m\.rossi\), .* UTC: tablets of the excursion segregated \[DEV-2026-0142\]/);
    expect(await dialog.locator(`li[data-exception="${minor.id}"]`).textContent()).toMatch(/OOT minor: Thickness trending up — OPEN/);
    await check('release-dialog');
    await dialog.getByRole('radio', { name: 'Approve' }).check();
    expect(await dialog.getByRole('button', { name: 'Sign' }).isDisabled()).toBe(true);
    await dialog.getByLabel(/Meaning of this signature/).selectOption({ label: 'QA release of batch B-1042' });
    await dialog.getByLabel('Password (re-entered to sign)').fill(node.passwords.get('m.rossi')!);
    const posted = page.waitForRequest((r) => r.method() === 'POST' && r.url().includes(`/approvals/${gate.id}`));
    await dialog.getByRole('button', { name: 'Sign' }).click();
    expect((await posted).postDataJSON()).toMatchObject({ decision: 'approve', meaning: 'QA release of batch B-1042' });
    await dialog.getByTestId('signature-manifestation').waitFor();
    await poll(focused).toBe('BUTTON:sign-close:Close');
    await check('release-signed');
    await page.keyboard.press('Enter');
    expect(await page.getByRole('dialog').count()).toBe(0);
    await poll(focused).toMatch(/^H1:/);
  });

  it('the genealogy: a chart per attribute with its band, per setpoint group with units on every axis, repeated lines counted; a few thousand pixels tall', async () => {
    const d = node.daemon;
    // the run of the cases above (one active run per line), its genealogy given a long press step
    const g = run;
    const before = ((await call(node.url, 'GET', `${A}/runs/${g.id}/genealogy`, { token: tok('m.rossi') })).body as { events: unknown[] }).events.length;
    const ROUNDS = 300;
    const t0 = g.createdAt;
    const sensors = (i: number) => ({
      'press.FillDepth': { value: 8.5 + (i % 5) * 0.03, unit: 'mm' }, 'press.MainForce': { value: 12 - (i % 7) * 0.1, unit: 'kN' }, 'press.PreForce': { value: 2.5, unit: 'kN' },
      'press.TurretSpeed': { value: 40 + (i % 3), unit: '{rev}/min' }, 'press.TabletWeight': { value: 300 + Math.sin(i) * 6, unit: 'mg' }, 'press.Hardness': { value: 120 + Math.cos(i) * 40, unit: 'N' },
      'press.Thickness': { value: 3 + Math.sin(i / 3) * 0.2, unit: 'mm' }, 'press.CappingRate': { value: 0.4 + (i % 4) * 0.1, unit: '%' }, 'press.EjectionForce': { value: 310 + (i % 9), unit: 'N' },
      'press.DwellTime': { value: 18 + (i % 2), unit: 'ms' }, 'press.Output': { value: 96_000, unit: '{tbl}/h' },
      'fluidbed.InletAirTemp': { value: 60, unit: 'Cel' }, 'fluidbed.ProductTemp': { value: 38 + (i % 5) / 10, unit: 'Cel' }, 'fluidbed.Airflow': { value: 1200, unit: 'm3/h' },
    });
    d.store.tx((t) => {
      const ev = (i: number, k: number, kind: string, summary: string, data: unknown, extra: { agent?: string; tag?: string } = {}) =>
        d.engine.runs.appendEvent(t, { run: g.id, at: t0 + i * 30_000 + k, kind, step: 'compress.press', agent: extra.agent ?? 'agent.orchestrator', tag: extra.tag ?? null, summary, data });
      ev(0, 0, 'step', 'in-process limits', { limits: { 'press.TabletWeight': { min: 285, max: 315, unit: 'mg' }, 'press.Hardness': { min: 80, max: 150, unit: 'N' }, 'press.Thickness': { min: 2.6, max: 3.4, unit: 'mm' }, 'press.CappingRate': { max: 1.5, unit: '%' } } });
      for (let i = 1; i <= ROUNDS; i++) {
        ev(i, 1, 'sensor', 'press values', sensors(i));
        ev(i, 2, 'arbitration', `press.TurretSpeed: agent.quality_conf wins (content_uniformity, score 2) → ${40 + (i % 3)}; agent.yield_takt declined (takt, score 1, OUTRANKED), requested ${44 + (i % 2)} {rev}/min`,
          { declined: [{ agent: 'agent.yield_takt', setpoint: 'press.TurretSpeed', score: 1, reason: `OUTRANKED by agent.quality_conf (content_uniformity, score 2), requested ${44 + (i % 2)}` }] }, { tag: 'press.TurretSpeed' });
        ev(i, 3, 'recommendation', `agent.compress_fill pending: press.MainForce=${(12 - (i % 7) * 0.1).toFixed(1)} kN`, null, { agent: 'agent.compress_fill' });
        ev(i, 4, 'response', `press.MainForce read back ${12 - (i % 7) * 0.1} (verified)`, { tag: 'press.MainForce', written: 12 - (i % 7) * 0.1, readBack: 12 - (i % 7) * 0.1, verified: true }, { tag: 'press.MainForce', agent: 'agent.compress_fill' });
      }
    });
    const events = ((await call(node.url, 'GET', `${A}/runs/${g.id}/genealogy`, { token: tok('m.rossi') })).body as { events: unknown[] }).events.length;
    expect(events).toBe(before + 1 + 4 * ROUNDS);

    await page.goto(`${node.url}/console#/genealogy/${g.id}`);
    const plot = page.getByTestId('genealogy-plot');
    await plot.locator('canvas').first().waitFor();
    // one chart per attribute, each with its specification band where both limits are recorded
    const attrs = page.getByTestId('attribute-chart');
    await attrs.first().locator('canvas').waitFor();
    expect(await attrs.evaluateAll((els) => els.map((e) => [e.getAttribute('data-attribute'), e.getAttribute('data-band'), JSON.parse(e.getAttribute('data-axes')!)[1]]))).toEqual([
      ['press.TabletWeight', 'yes', 'tablet weight [mg]'], ['press.Hardness', 'yes', 'hardness [N]'], ['press.Thickness', 'yes', 'thickness [mm]'], ['press.CappingRate', 'no', 'capping rate [%]'],
    ]);
    // one chart per setpoint group (equipment × unit), each axis with its unit as people write it, never 30 series on two axes
    const groups = await page.getByTestId('group-chart').evaluateAll((els) => els.map((e) => ({ group: e.getAttribute('data-group'), series: Number(e.getAttribute('data-series')), axes: JSON.parse(e.getAttribute('data-axes')!) as string[], canvas: e.querySelector('canvas') !== null, legend: e.querySelector('.u-legend')?.textContent ?? '' })));
    expect(groups.map((x) => [x.group, x.series, x.axes[1]])).toEqual([
      ['fluidbed|Cel', 2, 'temperature [°C]'], ['fluidbed|m3/h', 1, 'airflow [m³/h]'],
      ['press|N', 1, 'force [N]'], ['press|kN', 3, 'force [kN]'], ['press|mm', 1, 'length [mm]'], ['press|ms', 1, 'time [ms]'],
      ['press|{rev}/min', 1, 'speed [rpm]'], ['press|{tbl}/h', 1, 'output [tablets/h]'],
    ]);
    for (const x of groups) {
      expect(x.axes[0], x.group!).toBe('time (UTC)');
      expect(x.canvas, x.group!).toBe(true);
      expect(x.legend, x.group!).not.toMatch(/\{rev\}|Cel\b|m3\/h/);
    }
    expect(groups.find((x) => x.group === 'press|kN')!.legend).toMatch(/MainForce \[kN\].*MainForce \(read back\) \[kN\].*PreForce \[kN\]/);
    expect(JSON.parse((await page.getByTestId('events-lane').getAttribute('data-axes'))!)).toEqual(['time (UTC)', 'event kind']);
    // repeated lines as one entry with a count: the arbitration rounds, the snapshots, the requests that lost
    const rows = page.locator('[data-testid="events-table"] tbody tr');
    expect(await rows.count()).toBeLessThanOrEqual(before + 10);
    expect(await page.locator('[data-testid="events-table"] tr[data-kind="arbitration"]').getAttribute('data-count')).toBe(String(ROUNDS));
    expect(await page.locator('[data-testid="events-table"] tr[data-kind="sensor"]').getAttribute('data-count')).toBe(String(ROUNDS));
    const losing = page.locator('[data-testid="losing-requests"] li');
    expect(await losing.count()).toBe(1);
    expect(await losing.first().textContent()).toMatch(new RegExp(`agent\\.yield_takt on press\\.TurretSpeed .*× ${ROUNDS}$`));
    // the whole page: a row per event was ~25 px each (30,000 px for these 1,201), now a few screens
    const height = await page.evaluate('document.documentElement.scrollHeight') as number;
    expect(height).toBeLessThan(5000);
    await check('genealogy');
    // the zoom buttons zoom every time chart together
    await page.getByRole('button', { name: 'Zoom in' }).click();
    await page.getByRole('button', { name: 'Reset zoom' }).click();
    expect(problems).toEqual([]);
  });
});
