/**
 * The model registry in a real store (SQLite in a temp dir) with its artefact
 * files: registration as draft, tenant isolation (R9), hash checks at every
 * load, and status changes under change control — named person, permitted
 * role, change reference, golden gate, one transaction with a signed audit
 * entry, and nothing written when a change is refused.
 */
import { readFileSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSitePublicKey, queryAudit, verifyStore, type AuditEntry } from '../../src/audit/index.js';
import { nirModelOf, twinModelOf, visionModelOf } from '../../src/models/artefacts.js';
import { changeStatus, verifyModelChange, type StatusChange } from '../../src/models/change.js';
import { artefactFile, listModels, loadModel, loadValidated, modelStatus, registerModel } from '../../src/models/registry.js';
import { registrySources } from '../../src/models/sources.js';
import { type Store, openStore } from '../../src/store/store.js';
import { cloneParams, NOMINAL_PARAMS } from '../../src/twin/params.js';
import { codeOf } from '../helpers/codes.js';
import { APPROVERS, QA, SITE, goldenPlantTwin, registeredTwin } from '../helpers/models.js';

const A = 'acme-pharma';
const B = 'borealis-bio';
let dir: string;
let store: Store;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lk-registry-'));
  store = openStore({ dataDir: dir });
  goldenPlantTwin();
});
afterAll(() => {
  store?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const trail = (tenant: string): AuditEntry[] => queryAudit(store.db, tenant, {}, { limit: 1000 }).entries;
const head = (tenant: string): number => store.audit.head(tenant).seq;
const change = (over: Partial<StatusChange> & Pick<StatusChange, 'id' | 'to'>): StatusChange => ({ tenant: A, ...QA, changeRef: 'CC-2026-0301', reason: 'PQ report VR-MOD-2026-011 approved', ...over });
const promote = (over: Partial<StatusChange> & Pick<StatusChange, 'id' | 'to'>) => changeStatus(store, dir, change(over), { approvers: APPROVERS });

describe('registration and loading', () => {
  it('[R2] registers drafts numbered per tenant, the artefact as a file checked by SHA-256, the row and its audit entry together', () => {
    const m1 = registeredTwin(store, dir, A, 'draft');
    const m2 = registeredTwin(store, dir, A, 'draft');
    expect([m1.id, m2.id, m1.status]).toEqual(['process-twin-v1', 'process-twin-v2', 'draft']);
    expect(m1.sha256).toMatch(/^[0-9a-f]{64}$/);
    const entry = trail(A).find((e) => e.seq === m2.auditSeq)!;
    expect(entry).toMatchObject({ kind: 'model_change', action: 'model.register', actor: QA.by, new: 'draft', args: { id: 'process-twin-v2', sha256: m2.sha256, sites: [SITE] } });
    expect(modelStatus(store, A, 'process-twin-v1')).toMatchObject({ status: 'draft', version: 1, kind: 'twin', sites: [SITE], sha256: m1.sha256 });
    // a draft is not for use; asked for explicitly it loads, hash-checked, and is typed
    expect(codeOf(() => loadModel(store, dir, A, 'process-twin-v1'))).toBe('LK_MODEL_NOT_VALIDATED');
    expect(twinModelOf(loadModel(store, dir, A, 'process-twin-v1', { statuses: ['draft'] })).version).toBe(1);
  });

  it('never gives tenant A’s model to tenant B [R9]: not listed, not loadable, not its status', () => {
    registeredTwin(store, dir, A, 'draft'); // acme has v3; borealis has nothing
    expect(listModels(store, B)).toEqual([]);
    expect(modelStatus(store, B, 'process-twin-v3')).toBeNull();
    expect(codeOf(() => loadModel(store, dir, B, 'process-twin-v3', { statuses: ['draft'] }))).toBe('LK_MODEL_TENANT');
    expect(codeOf(() => loadValidated(store, dir, B, SITE, 'process', 'twin'))).toBe('LK_MODEL_MISSING');
    expect(codeOf(() => promote({ tenant: B, id: 'process-twin-v3', to: 'shadow' }))).toBe('LK_MODEL_TENANT');
    // the writer's look-up says only "another tenant's"
    expect(registrySources(store, dir, SITE).models(B, 'process-twin-v3')!.tenant).not.toBe(B);
    expect(registrySources(store, dir, SITE).models(B, 'process-twin-v99')).toBeNull();
    const c = goldenPlantTwin();
    expect(codeOf(() => registerModel(store, dir, { ...c, tenant: B, sites: [SITE], by: QA.by }))).toBe('LK_VALIDATION'); // card of another tenant
    expect(codeOf(() => registerModel(store, dir, { ...c, tenant: A, sites: [SITE], by: 'agent.compress_fill' }))).toBe('LK_VALIDATION');
  });

  it('refuses malformed ids and tenants before touching a path', () => {
    expect(codeOf(() => loadModel(store, dir, A, '../etc-twin-v1'))).toBe('LK_VALIDATION');
    expect(codeOf(() => loadModel(store, dir, '../acme', 'process-twin-v1'))).toBe('LK_VALIDATION');
    expect(codeOf(() => listModels(store, 'Acme Pharma'))).toBe('LK_VALIDATION');
  });
});

describe('status changes under change control', () => {
  it('[A11.10] promotes draft → shadow → validated through the golden gate; each change one signed entry with the model’s SHA-256 and the evaluation', () => {
    const s = promote({ id: 'process-twin-v1', to: 'shadow' });
    expect(s).toMatchObject({ from: 'draft', to: 'shadow', model: { status: 'shadow', changeRef: 'CC-2026-0301', changedBy: QA.by } });
    const v = promote({ id: 'process-twin-v1', to: 'validated', name: 'Quirino Russo' });
    expect(v.evaluation).toMatchObject({ passed: true, kind: 'twin', dataset: { file: 'twin-batches.json', items: 10 } });
    expect(v.evaluation!.dataset.sha256).toMatch(/^[0-9a-f]{64}$/);
    const e = trail(A).find((x) => x.seq === v.auditSeq)!;
    expect(e).toMatchObject({ kind: 'model_change', action: 'model.promote', actor: QA.by, old: 'shadow', new: 'validated', reason: 'PQ report VR-MOD-2026-011 approved' });
    expect(e.args).toMatchObject({ id: 'process-twin-v1', sha256: v.model.sha256, from: 'shadow', to: 'validated', change_ref: 'CC-2026-0301', role: 'qa_reviewer', evaluation: { passed: true } });
    expect(e.signature).toMatchObject({ user: QA.by, name: 'Quirino Russo', meaning: expect.stringMatching(/validated/) });
    const key = loadSitePublicKey(dir);
    expect(verifyModelChange(e, key)).toBe(true);
    // the signature binds the record: another SHA-256, status or person in it does not verify
    expect(verifyModelChange({ ...e, args: { ...(e.args as object), sha256: 'b'.repeat(64) } }, key)).toBe(false);
    expect(verifyModelChange({ ...e, args: { ...(e.args as object), to: 'retired' } }, key)).toBe(false);
    expect(verifyModelChange({ ...e, signature: { ...e.signature!, user: 'm.rossi' } }, key)).toBe(false);
    expect(loadValidated(store, dir, A, SITE, 'process', 'twin').model.id).toBe('process-twin-v1');
  });

  it('a refused change writes nothing: wrong role, no change reference, no reason, an agent, a skipped or backward step, retired', () => {
    const before = { head: head(A), rows: listModels(store, A) };
    const refusals: [() => unknown, string][] = [
      [() => promote({ id: 'process-twin-v2', to: 'shadow', role: 'process_engineer' }), 'LK_MODEL_CHANGE'],
      [() => promote({ id: 'process-twin-v2', to: 'shadow', changeRef: '' }), 'LK_MODEL_CHANGE'],
      [() => promote({ id: 'process-twin-v2', to: 'shadow', reason: ' ' }), 'LK_MODEL_CHANGE'],
      [() => promote({ id: 'process-twin-v2', to: 'shadow', by: 'agent.compress_fill' }), 'LK_VALIDATION'],
      [() => promote({ id: 'process-twin-v2', to: 'shadow', by: 'system' }), 'LK_VALIDATION'],
      [() => promote({ id: 'process-twin-v2', to: 'validated' }), 'LK_MODEL_TRANSITION'],
      [() => promote({ id: 'process-twin-v1', to: 'shadow' }), 'LK_MODEL_TRANSITION'],
      [() => promote({ id: 'process-twin-v1', to: 'draft' }), 'LK_MODEL_TRANSITION'],
      [() => promote({ id: 'process-twin-v9', to: 'shadow' }), 'LK_MODEL_MISSING'],
    ];
    for (const [fn, code] of refusals) expect(codeOf(fn)).toBe(code);
    expect(head(A)).toBe(before.head);
    expect(listModels(store, A)).toEqual(before.rows);
  });

  it('refuses promotion when the golden evaluation fails (LK_MODEL_GATE_FAILED), with the failing criteria, writing nothing', () => {
    const c = goldenPlantTwin();
    const nominal = registerModel(store, dir, { ...c, artefact: { kind: 'twin', params: cloneParams(NOMINAL_PARAMS), validRanges: (c.artefact as { validRanges: unknown }).validRanges }, tenant: A, sites: [SITE], by: QA.by });
    const loose = registerModel(store, dir, { ...c, card: { ...c.card, acceptance: { ...c.card.acceptance, 'rmsep.cappingPct': { max: 5 } } }, tenant: A, sites: [SITE], by: QA.by });
    const none = registerModel(store, dir, { ...c, card: { ...c.card, acceptance: undefined }, tenant: A, sites: [SITE], by: QA.by });
    const at = head(A);
    let detail: { evaluation?: { passed: boolean; criteria: { metric: string; pass: boolean }[]; problems: string[] } } | undefined;
    try {
      promote({ id: nominal.id, to: 'shadow' });
    } catch (e) {
      expect((e as { code?: string }).code).toBe('LK_MODEL_GATE_FAILED');
      detail = (e as { detail?: typeof detail }).detail;
    }
    expect(detail!.evaluation!.passed).toBe(false);
    expect(detail!.evaluation!.criteria.filter((x) => !x.pass).map((x) => x.metric)).toEqual(expect.arrayContaining(['rmsep.cappingPct', 'rmsep.hardnessN']));
    // a card may be stricter than the site, never looser; a card without criteria cannot pass
    expect(codeOf(() => promote({ id: loose.id, to: 'shadow' }))).toBe('LK_MODEL_GATE_FAILED');
    expect(codeOf(() => promote({ id: none.id, to: 'shadow' }))).toBe('LK_MODEL_GATE_FAILED');
    expect(head(A)).toBe(at);
    expect([nominal.id, loose.id, none.id].map((id) => modelStatus(store, A, id)!.status)).toEqual(['draft', 'draft', 'draft']);
    // a missing golden dataset means nothing can be evaluated, so nothing is promoted
    expect(codeOf(() => changeStatus(store, dir, change({ id: 'process-twin-v2', to: 'shadow' }), { approvers: APPROVERS, goldenDir: join(dir, 'no-golden') }))).toBe('LK_MODEL_GATE_FAILED');
  });

  it('checks the artefact at every load: an edited file is LK_MODEL_CORRUPT, a missing one LK_MODEL_MISSING — and such a model cannot be promoted', () => {
    const file = artefactFile(dir, A, 'process-twin-v1');
    const good = readFileSync(file, 'utf8');
    writeFileSync(file, good.replace(/"capForce":[0-9.e-]+/, '"capForce":0.01'));
    expect(codeOf(() => loadValidated(store, dir, A, SITE, 'process', 'twin'))).toBe('LK_MODEL_CORRUPT');
    expect(codeOf(() => registrySources(store, dir, SITE).twin(A))).toBe('LK_MODEL_CORRUPT');
    rmSync(file);
    expect(codeOf(() => loadModel(store, dir, A, 'process-twin-v1'))).toBe('LK_MODEL_MISSING');
    writeFileSync(file, good);
    expect(registrySources(store, dir, SITE).twin(A)).toMatchObject({ id: 'process-twin-v1', version: 1 });
    const v2 = artefactFile(dir, A, 'process-twin-v2');
    const text = readFileSync(v2, 'utf8');
    writeFileSync(v2, `${text} `);
    expect(codeOf(() => promote({ id: 'process-twin-v2', to: 'shadow' }))).toBe('LK_MODEL_CORRUPT');
    writeFileSync(v2, text);
  });

  it('uses the newest validated version pinned to the site; retiring is final and falls back to the one before', () => {
    promote({ id: 'process-twin-v2', to: 'shadow' });
    promote({ id: 'process-twin-v2', to: 'validated' });
    expect(loadValidated(store, dir, A, SITE, 'process', 'twin').model.id).toBe('process-twin-v2');
    expect(codeOf(() => loadValidated(store, dir, A, 'site-lisbon', 'process', 'twin'))).toBe('LK_MODEL_NOT_PINNED');
    const r = changeStatus(store, dir, change({ id: 'process-twin-v2', to: 'retired', reason: 'superseded' }), { approvers: APPROVERS });
    expect(r).toMatchObject({ from: 'validated', to: 'retired', evaluation: null });
    expect(verifyModelChange(trail(A).find((e) => e.seq === r.auditSeq)!, loadSitePublicKey(dir))).toBe(true);
    expect(loadValidated(store, dir, A, SITE, 'process', 'twin').model.id).toBe('process-twin-v1');
    expect(codeOf(() => promote({ id: 'process-twin-v2', to: 'validated' }))).toBe('LK_MODEL_TRANSITION');
    // nothing but the code path may change a row: SQL behind its back is refused by triggers
    expect(codeOf(() => store.tx(({ db }) => db.prepare("UPDATE model SET status = 'validated' WHERE tenant = ? AND id = 'process-twin-v2'").run(A)))).toBe('LK_AUDIT_IMMUTABLE');
    expect(codeOf(() => store.tx(({ db }) => db.prepare("UPDATE model SET sha256 = ? WHERE tenant = ? AND id = 'process-twin-v1'").run('c'.repeat(64), A)))).toBe('LK_AUDIT_IMMUTABLE');
    expect(codeOf(() => store.tx(({ db }) => db.prepare("DELETE FROM model WHERE tenant = ? AND id = 'process-twin-v3'").run(A)))).toBe('LK_AUDIT_IMMUTABLE');
    // with every version retired or unvalidated there is no twin: the typed error the writer denies on
    changeStatus(store, dir, change({ id: 'process-twin-v1', to: 'retired', reason: 'line requalified' }), { approvers: APPROVERS });
    expect(codeOf(() => loadValidated(store, dir, A, SITE, 'process', 'twin'))).toBe('LK_MODEL_NOT_VALIDATED');
    expect(verifyStore(store).ok).toBe(true);
  });

  it('types the PLS and vision artefacts and refuses a twin shape under another kind', () => {
    const c = goldenPlantTwin();
    expect(codeOf(() => registerModel(store, dir, { ...c, analyte: 'potency', family: 'pls', kind: 'nir-pls', tenant: A, sites: [SITE], by: QA.by }))).toBe('LK_VALIDATION'); // card of another model
    const wrong = registerModel(store, dir, { ...c, card: { ...c.card, analyte: 'potency', family: 'pls' }, analyte: 'potency', family: 'pls', kind: 'nir-pls', tenant: A, sites: [SITE], by: QA.by });
    const loaded = loadModel(store, dir, A, wrong.id, { statuses: ['draft'] });
    expect(codeOf(() => nirModelOf(loaded))).toBe('LK_MODEL_CORRUPT');
    expect(codeOf(() => visionModelOf(loaded))).toBe('LK_MODEL_CORRUPT');
    expect(codeOf(() => twinModelOf(loaded))).toBe('LK_MODEL_CORRUPT');
  });
});
