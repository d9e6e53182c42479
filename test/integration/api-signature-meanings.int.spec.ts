/**
 * Signature meanings from the site's controlled list (21 CFR 11.50, EU GMP Annex 11 §14), over real HTTP against
 * a real daemon whose site file lists its own release meanings (`signatures.meanings`; every other purpose keeps
 * the built-in ones): GET /signature-meanings for every signed-in role; a meaning not on the list — free text, the
 * built-in words this site replaced, another decision's entry, another batch's words — refused with 422
 * LK_MEANING_NOT_ALLOWED before the password is checked (a wrong password sent with it is never looked at), with
 * nothing signed, written or audited: the approval stays pending, the move stays held and the equipment where it
 * was; and a list entry, named by its id or by its words, signed with the filled words, the entry's id and the
 * signer's comment in the signed record, the audit entry and the run's view. The same gate holds for the acts whose
 * request may leave the meaning out (an audit-trail review, a model change, a reassignment whose words would not fit
 * a manifestation whole): a wrong one is refused before anything. A reload that changes the list between showing
 * and signing refuses the words shown — over REST, and from `linekeeper approve`, whose password prompt the test
 * answers only after such a reload (src/cli/prompt.js mocked): the CLI signs the words it printed or nothing.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { saveSession } from '../../src/cli/session.js';
import { fillMeaning, MEANING_FILLED_MAX } from '../../src/domain/signature-meanings.js';
import { loadConfig } from '../../src/config/load.js';
import { applyConfigChange } from '../../src/ops/config-change.js';
import { loadSitePublicKey, queryAudit } from '../../src/audit/index.js';
import { verifySignature, type Signature } from '../../src/engine/run/approval.js';
import type { PendingWrite } from '../../src/engine/guarded-writer.js';
import type { RunRecord } from '../../src/store/run-store.js';
import { call, signIn, startApiNode, type ApiNode, type Reply } from '../helpers/api.js';
import { closeOpenExceptions } from '../helpers/exceptions.js';
import { ALL_ROLES, DEMO_USERS } from '../helpers/api-routes.js';
import { queueWrite, seedGate, seedRun, setStatus } from '../helpers/api-seed.js';
import { runCli } from '../helpers/cli.js';

/** The CLI's password prompt, answered by the test: `answer` runs first (a reload, say), then its password is typed. */
const prompt = vi.hoisted(() => ({ answer: undefined as undefined | (() => Promise<string>) }));
vi.mock('../../src/cli/prompt.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/cli/prompt.js')>();
  return { ...real, readPassword: (text: string, io?: Parameters<typeof real.readPassword>[1]) => (prompt.answer ? prompt.answer() : real.readPassword(text, io)) };
});

const A = '/v1/tenants/acme-pharma';
let node: ApiNode;
const tokens = new Map<string, string>();
const tok = (u: string): string => tokens.get(u)!;
let run: RunRecord;

/** The site's own words for a release: the built-in "QA release of batch {batch}" is not on its list. */
const SITE_MEANINGS = [
  '    - { id: qa-disposition-release, text: "QA disposition: batch {batch} released for distribution", for: [release], decision: approve }',
  '    - { id: qa-disposition-reject, text: "QA disposition: batch {batch} rejected", for: [release], decision: reject }',
].join('\n');

const sign = (who: string, id: string, body: Record<string, unknown>): Promise<Reply> =>
  call(node.url, 'POST', `${A}/approvals/${id}`, { token: tok(who), body: { decision: 'approve', password: node.passwords.get(who), ...body } });
const trail = (filter: Record<string, string>) => queryAudit(node.daemon.store.db, 'acme-pharma', filter, { limit: 1000 }).entries;
/** Re-authentications (good or bad) about `key: value` on the site chain: none means no password was looked at. */
const reauths = (key: string, value: string) => queryAudit(node.daemon.store.db, 'site', { kind: 'identity' }, { limit: 1000 }).entries.filter((e) => (e.args as Record<string, unknown>)[key] === value).map((e) => e.action);
const plant = (sp: string): number => {
  const [eq, tag] = sp.split('.') as [string, string];
  return node.plant.setpoints(eq)[tag]!;
};

beforeAll(async () => {
  node = await startApiNode({ memory: true, site: (yaml) => `${yaml.trimEnd()}\nsignatures:\n  meanings:\n${SITE_MEANINGS}\n` });
  for (const u of DEMO_USERS) tokens.set(u.id, await signIn(node.url, u.id, node.passwords.get(u.id)!));
  // started by the operator: the batch's QA reviewer (m.rossi) signs its release, its process engineer reviews its moves
  run = seedRun(node.daemon, { tenant: 'acme-pharma', batch: 'B-1042', by: 'o.operator' });
}, 120_000);
afterAll(async () => {
  await node?.close();
});

describe('the list in force', () => {
  it('[A11.14] [P11.50] is read by every signed-in role: the site\'s release meanings, the built-in ones of every other purpose, and what each purpose fills', async () => {
    const roles = new Set<string>();
    for (const u of DEMO_USERS.filter((x) => x.tenants.includes('acme-pharma'))) {
      const r = await call(node.url, 'GET', `${A}/signature-meanings`, { token: tok(u.id) });
      expect(r.status, u.id).toBe(200);
      roles.add(u.role);
    }
    expect([...roles].sort()).toEqual([...ALL_ROLES].sort());
    const all = (await call(node.url, 'GET', `${A}/signature-meanings`, { token: tok('o.operator') })).body as { items: { id: string; text: string; for: string[]; decision?: string; source: string }[]; purposes: { purpose: string; placeholders: string[] }[] };
    const release = all.items.filter((m) => m.for.includes('release'));
    expect(release).toEqual([
      { id: 'qa-disposition-release', text: 'QA disposition: batch {batch} released for distribution', for: ['release'], decision: 'approve', source: 'site' },
      { id: 'qa-disposition-reject', text: 'QA disposition: batch {batch} rejected', for: ['release'], decision: 'reject', source: 'site' },
    ]);
    expect(all.items.filter((m) => m.for.includes('move')).map((m) => [m.id, m.source])).toEqual([['move-approval', 'default'], ['move-rejection', 'default']]);
    expect(all.purposes.find((p) => p.purpose === 'release')!.placeholders).toEqual(['batch', 'run', 'approval']);
    // one purpose, and a purpose that does not exist
    const moves = await call(node.url, 'GET', `${A}/signature-meanings?for=move`, { token: tok('a.ricci') });
    expect(moves.body.items.map((m: { id: string }) => m.id)).toEqual(['move-approval', 'move-rejection']);
    expect(moves.body.purposes.map((p: { purpose: string }) => p.purpose)).toEqual(['move']);
    const bad = await call(node.url, 'GET', `${A}/signature-meanings?for=shipping`, { token: tok('a.ricci') });
    expect([bad.status, bad.body.code]).toEqual([400, 'LK_VALIDATION']);
    // another tenant's path is not this person's (R1)
    expect((await call(node.url, 'GET', '/v1/tenants/borealis-bio/signature-meanings', { token: tok('m.rossi') })).status).toBe(404);
  });
});

describe('a setpoint move', () => {
  let w: PendingWrite;

  it('[A11.14] [R4] refuses a meaning not on the move\'s list before the password: the move stays held, nothing signed, nothing written', async () => {
    w = await queueWrite(node.daemon, { run, agent: 'agent.coat_dry', setpoint: 'coater.PanSpeed', from: 14, to: 14.5, unit: '{rev}/min' });
    expect(w.needs).toBe('qa');
    for (const meaning of ['QA approval of the coater move', 'qa-disposition-release', 'move-rejection']) {
      const r = await sign('m.rossi', w.id, { meaning, password: 'not her password', recordHash: w.vectorHash });
      expect([r.status, r.body.code], meaning).toEqual([422, 'LK_MEANING_NOT_ALLOWED']);
      expect(r.body.meanings).toEqual([{ id: 'move-approval', text: 'Approval of setpoint change for batch B-1042' }]);
    }
    expect(reauths('approval', w.id)).toEqual([]);
    expect(node.daemon.writer.pending().some((p) => p.id === w.id)).toBe(true);
    expect(plant('coater.PanSpeed')).toBe(14);
    expect(trail({ setpoint: 'coater.PanSpeed' }).filter((e) => ['setpoint.sign', 'setpoint.approve', 'setpoint.write'].includes(e.action))).toEqual([]);
  });

  it('[A11.14] [P11.50] signs the entry named by its id, with its comment, and the writer writes it', async () => {
    await call(node.url, 'POST', `${A}/attendance`, { token: tok('o.operator') });
    const r = await sign('m.rossi', w.id, { meaning: 'move-approval', comment: 'pan speed within the validated range for this coating', recordHash: w.vectorHash });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.signature).toMatchObject({ meaning: 'Approval of setpoint change for batch B-1042', meaningId: 'move-approval', comment: 'pan speed within the validated range for this coating' });
    expect(verifySignature(loadSitePublicKey(node.daemon.loaded.dataDir), r.body.signature as Signature)).toBe(true);
    expect(r.body.outcome.status).toBe('written');
    expect(plant('coater.PanSpeed')).toBe(14.5);
    const signed = trail({ setpoint: 'coater.PanSpeed' }).find((e) => e.action === 'setpoint.sign')!;
    expect(signed).toMatchObject({ signature: { meaning: 'approve: Approval of setpoint change for batch B-1042' }, args: { meaningId: 'move-approval', comment: 'pan speed within the validated range for this coating' } });
  });
});

describe('a batch release', () => {
  let gate: ReturnType<typeof seedGate>;

  it('[A11.14] [P11.50] [P11.200] refuses a meaning not on the list with LK_MEANING_NOT_ALLOWED before the password: nothing signed, written or audited, the approval still pending', async () => {
    gate = seedGate(node.daemon, run.id);
    const about = () => trail({ run: run.id }).filter((e) => (e.args as { approval?: string } | undefined)?.approval === gate.id || e.action === 'approval.decide' || e.action === 'approval.refused');
    // the built-in words this site replaced, free text, the rejection's entry with an approval, another batch's words
    for (const [meaning, decision] of [['QA release of batch B-1042', 'approve'], ['released, all fine', 'approve'], ['qa-disposition-reject', 'approve'], ['QA disposition: batch B-9999 released for distribution', 'approve'], ['qa-disposition-release', 'reject']] as const) {
      // a wrong password rides along: had it been checked, the answer would be 401 and a failed attempt recorded
      const r = await sign('m.rossi', gate.id, { decision, meaning, password: 'not her password', recordHash: gate.recordHash });
      expect([r.status, r.body.code], `${meaning} (${decision})`).toEqual([422, 'LK_MEANING_NOT_ALLOWED']);
      expect(r.type).toMatch(/^application\/problem\+json/);
      const allowed = decision === 'approve'
        ? { id: 'qa-disposition-release', text: 'QA disposition: batch B-1042 released for distribution' }
        : { id: 'qa-disposition-reject', text: 'QA disposition: batch B-1042 rejected' };
      expect(r.body.meanings).toEqual([allowed]);
      expect(r.body.detail).toContain(`${allowed.id} ("${allowed.text}")`);
    }
    expect(reauths('approval', gate.id)).toEqual([]);
    expect(node.daemon.engine.runs.approval('acme-pharma', gate.id)!.status).toBe('pending');
    expect(node.daemon.engine.runs.runById(run.id)!.status).toBe('APPROVAL');
    // nothing on the run's trail about this approval: no signature, no decision, no refusal of a signer
    expect(about()).toEqual([]);
    // the meaning comes after who may sign: a process engineer is still told he may not (403), not about words
    expect((await sign('p.bianchi', gate.id, { meaning: 'free words' })).body.code).toBe('LK_APPROVAL_FORBIDDEN');
  });

  it('[A11.14] [P11.50] [P11.70] signs an entry of the list named by its words, with the filled words, the entry\'s id and the comment in the signed record and the audit entry', async () => {
    // review by exception: what the run raised meanwhile is closed first (a release waits for it)
    closeOpenExceptions(node.daemon.engine, 'acme-pharma', run.id);
    const r = await sign('m.rossi', gate.id, { meaning: '  qa disposition: batch B-1042 released  for distribution ', comment: 'dissolution reviewed with LIMS-D-7001', recordHash: gate.recordHash });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const sig = r.body as Signature;
    expect(sig).toMatchObject({
      approval: gate.id, user: 'm.rossi', decision: 'approve',
      meaning: 'QA disposition: batch B-1042 released for distribution', meaningId: 'qa-disposition-release', comment: 'dissolution reviewed with LIMS-D-7001',
    });
    // the signature covers the words, the id and the comment: another comment does not verify
    const key = loadSitePublicKey(node.daemon.loaded.dataDir);
    expect(verifySignature(key, sig)).toBe(true);
    expect(verifySignature(key, { ...sig, comment: 'something else' })).toBe(false);
    expect(verifySignature(key, { ...sig, meaningId: 'qa-disposition-reject' })).toBe(false);
    const decided = trail({ run: run.id }).filter((e) => e.action === 'approval.decide');
    expect(decided).toHaveLength(1);
    expect(decided[0]).toMatchObject({
      actor: 'm.rossi', signature: { user: 'm.rossi', name: 'Maria Rossi', meaning: 'approve: QA disposition: batch B-1042 released for distribution', value: sig.signature },
      args: { approval: gate.id, meaningId: 'qa-disposition-release', comment: 'dissolution reviewed with LIMS-D-7001' },
    });
    // the approval as stored: decided, with the signature as signed
    expect(node.daemon.engine.runs.approval('acme-pharma', gate.id)).toMatchObject({ status: 'approved', signature: { meaning: sig.meaning, meaningId: 'qa-disposition-release', comment: 'dissolution reviewed with LIMS-D-7001' } });
    expect(reauths('approval', gate.id)).toEqual(['auth.reauthenticated']);
  });
});

describe('acts whose request may leave the meaning out', () => {
  it('[A11.14] an audit-trail review: a meaning not on the list is refused before the password and nothing is recorded; without one, the built-in words for the scope', async () => {
    const review = (extra: Record<string, unknown>) => call(node.url, 'POST', `${A}/audit/reviews`, { token: tok('m.rossi'), body: { run: run.id, comment: 'no findings', password: node.passwords.get('m.rossi'), ...extra } });
    const wrong = await review({ meaning: 'trail-review-period', password: 'not her password' });
    expect([wrong.status, wrong.body.code]).toEqual([422, 'LK_MEANING_NOT_ALLOWED']);
    expect(wrong.body.meanings).toEqual([{ id: 'trail-review-run', text: `Audit trail of batch B-1042, run ${run.id} reviewed (EU GMP Annex 11 §9)` }]);
    expect(reauths('act', 'audit.review')).toEqual([]);
    expect(trail({ run: run.id, kind: 'audit_review' })).toEqual([]);
    const ok = await review({});
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    expect(ok.body.record).toMatchObject({ meaning: `Audit trail of batch B-1042, run ${run.id} reviewed (EU GMP Annex 11 §9)`, meaningId: 'trail-review-run', comment: 'no findings' });
  });

  it('[A11.14] [P11.50] a reassignment whose words, filled, would not fit the manifestation whole is refused before the password, never cut', async () => {
    // the longest user id a reviewer may have: the built-in words for it run past what a manifestation holds after "reassign: "
    const to = `q${'x'.repeat(127)}`;
    const words = `QA reviewer of run ${run.id} (batch B-1042) reassigned to ${to}`;
    expect(words.length).toBeGreaterThan(MEANING_FILLED_MAX);
    const before = node.daemon.engine.runs.runById(run.id)!.data['qaReviewer'];
    const r = await call(node.url, 'POST', `${A}/runs/${run.id}/reassign`, { token: tok('m.rossi'), body: { to, reason: 'test of the bound on a meaning\'s length', password: 'not her password' } });
    expect([r.status, r.body.code], JSON.stringify(r.body)).toEqual([422, 'LK_MEANING_NOT_ALLOWED']);
    expect(r.body.detail).toContain(`${words.length} characters, more than the ${MEANING_FILLED_MAX}`);
    expect(reauths('act', 'reassign')).toEqual([]);
    expect(node.daemon.engine.runs.runById(run.id)!.data['qaReviewer']).toBe(before);
    expect(trail({ run: run.id }).filter((e) => e.action === 'run.reassign')).toEqual([]);
  });

  it('[A11.14] a model change: the words of another step are refused before the password, the model unchanged', async () => {
    const model = (await call(node.url, 'GET', `${A}/models`, { token: tok('m.rossi') })).body.items.find((m: { status: string }) => m.status === 'validated') as { id: string };
    const r = await call(node.url, 'POST', `${A}/models/${model.id}/retire`, { token: tok('m.rossi'), body: { changeRef: 'CC-2026-0999', reason: 'test of the meanings', meaning: 'model-validated', password: 'not her password' } });
    expect([r.status, r.body.code]).toEqual([422, 'LK_MEANING_NOT_ALLOWED']);
    expect(r.body.meanings).toEqual([{ id: 'model-retire', text: 'Retired: the model is withdrawn from any use' }]);
    expect(reauths('model', `${model.id}: validated → retired`)).toEqual([]);
    expect((await call(node.url, 'GET', `${A}/models`, { token: tok('m.rossi') })).body.items.find((m: { id: string }) => m.id === model.id).status).toBe('validated');
  });
});

describe('a changed list', () => {
  it('[A11.14] [A11.10] applies at a reload: `config apply` takes its own meaning from the list in force (a wrong one before the password), SIGHUP puts the new list in force for the routes', async () => {
    const current = node.daemon.loaded;
    const file = join(node.dir, 'site-next.yaml');
    writeFileSync(file, readFileSync(current.file, 'utf8').replace('text: "QA disposition: batch {batch} rejected"', 'text: "QA disposition: batch {batch} not released"'));
    const next = loadConfig(file, { dataDir: current.dataDir });
    const store = node.daemon.store;
    const identity = node.daemon.identity!;
    const changes = () => queryAudit(store.db, 'site', { kind: 'config_change' }, { limit: 1000 }).entries;
    const before = changes().length;
    // the approval's meaning, against the list in force, before the password (a wrong one rides along and is never checked)
    await expect(applyConfigChange({ store, identity, current, next, changeRef: 'CC-2026-0777', approver: 'd.marino', password: 'not his password', meaning: 'approved, go' })).rejects.toMatchObject({ code: 'LK_MEANING_NOT_ALLOWED' });
    expect(changes().length).toBe(before);
    expect(reauths('change_ref', 'CC-2026-0777')).toEqual([]);
    const applied = await applyConfigChange({ store, identity, current, next, changeRef: 'CC-2026-0777', approver: 'd.marino', password: node.passwords.get('d.marino')!, meaning: 'config-approval' });
    expect(applied.sections).toEqual(['signatures']);
    expect(reauths('change_ref', 'CC-2026-0777')).toEqual(['auth.reauthenticated']);
    expect(changes().find((e) => e.seq === applied.seq)).toMatchObject({ action: 'config.apply', args: { meaning: 'approved: this site configuration may take effect on the line', meaning_id: 'config-approval' } });
    expect((await node.daemon.reload()).outcome).toBe('applied');
    const release = await call(node.url, 'GET', `${A}/signature-meanings?for=release`, { token: tok('m.rossi') });
    expect(release.body.items.map((m: { text: string }) => m.text)).toEqual(['QA disposition: batch {batch} released for distribution', 'QA disposition: batch {batch} not released']);
  });

  /** Reword an entry of the site's list as the site does: `config apply` (signed), then a reload. */
  async function reword(from: string, to: string, changeRef: string): Promise<void> {
    const current = node.daemon.loaded;
    const file = join(node.dir, `site-${changeRef}.yaml`);
    const yaml = readFileSync(current.file, 'utf8');
    expect(yaml).toContain(from);
    writeFileSync(file, yaml.replace(from, to));
    await applyConfigChange({ store: node.daemon.store, identity: node.daemon.identity!, current, next: loadConfig(file, { dataDir: current.dataDir }), changeRef, approver: 'd.marino', password: node.passwords.get('d.marino')!, meaning: 'config-approval' });
    expect((await node.daemon.reload()).outcome).toBe('applied');
  }

  /** A new run of B-1042 at its release gate, the line freed of the one before. */
  function nextGate(): ReturnType<typeof seedGate> {
    for (const r of node.daemon.engine.list('acme-pharma', 10)) if (!['SUCCEEDED', 'REJECTED', 'ABORTED', 'FAILED'].includes(r.status)) setStatus(node.daemon, r.id, 'REJECTED', 'test: the line is free for the next run');
    return seedGate(node.daemon, seedRun(node.daemon, { tenant: 'acme-pharma', batch: 'B-1042', by: 'o.operator' }).id);
  }

  /** The release words a client shows for the record: the list as read now, filled for batch B-1042. */
  async function shownRelease(): Promise<string> {
    const list = (await call(node.url, 'GET', `${A}/signature-meanings?for=release`, { token: tok('m.rossi') })).body as { items: { text: string; decision?: string }[] };
    return fillMeaning(list.items.find((m) => m.decision === 'approve')!.text, { batch: 'B-1042' })!;
  }

  it('[A11.14] [P11.50] refuses the words shown before a reload changed them: nothing signed, no password looked at, the new words listed', async () => {
    const g = nextGate();
    const shown = await shownRelease();
    expect(shown).toBe('QA disposition: batch B-1042 released for distribution');
    // between showing and signing, the site's words change
    await reword('batch {batch} released for distribution', 'batch {batch} released for sale', 'CC-2026-0778');
    const r = await sign('m.rossi', g.id, { meaning: shown, password: 'not her password', recordHash: g.recordHash });
    expect([r.status, r.body.code]).toEqual([422, 'LK_MEANING_NOT_ALLOWED']);
    expect(r.body.meanings).toEqual([{ id: 'qa-disposition-release', text: 'QA disposition: batch B-1042 released for sale' }]);
    expect(reauths('approval', g.id)).toEqual([]);
    expect(node.daemon.engine.runs.approval('acme-pharma', g.id)!.status).toBe('pending');
  });

  it('[A11.14] [P11.50] `linekeeper approve` signs the words it printed: a reload while it asks for the password refuses them, nothing signed', async () => {
    const g = nextGate();
    closeOpenExceptions(node.daemon.engine, 'acme-pharma', g.run);
    const home = mkdtempSync(join(tmpdir(), 'lk-meanings-cli-'));
    const xdg = process.env['XDG_CONFIG_HOME'];
    process.env['XDG_CONFIG_HOME'] = home;
    try {
      saveSession({ format: 1, url: node.url, user: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer', tenant: 'acme-pharma', tenants: ['acme-pharma'], token: tok('m.rossi'), expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
      const shown = await shownRelease();
      // the person reads the words, and while the CLI waits for the password the site's list is reloaded with others
      prompt.answer = async () => {
        await reword('batch {batch} released for sale', 'batch {batch} released for sale and distribution', 'CC-2026-0779');
        return node.passwords.get('m.rossi')!;
      };
      const out = await runCli('approve', g.id, '--decision', 'approve', '--meaning', 'qa-disposition-release');
      expect(out.err).toContain(`meaning: ${shown} (qa-disposition-release)`);
      expect(out.code, out.err).not.toBe(0);
      expect(out.err).toContain('[LK_MEANING_NOT_ALLOWED]');
      expect(node.daemon.engine.runs.approval('acme-pharma', g.id)!.status).toBe('pending');
      expect(reauths('approval', g.id)).toEqual([]);
      // asked again, it prints the words now in force and signs those
      prompt.answer = async () => node.passwords.get('m.rossi')!;
      const signed = await runCli('approve', g.id, '--decision', 'approve', '--meaning', 'qa-disposition-release');
      expect(signed.code, signed.err).toBe(0);
      expect(node.daemon.engine.runs.approval('acme-pharma', g.id)).toMatchObject({ status: 'approved', signature: { meaning: 'QA disposition: batch B-1042 released for sale and distribution', meaningId: 'qa-disposition-release' } });
    } finally {
      prompt.answer = undefined;
      if (xdg === undefined) delete process.env['XDG_CONFIG_HOME'];
      else process.env['XDG_CONFIG_HOME'] = xdg;
      rmSync(home, { recursive: true, force: true });
    }
  });
});
