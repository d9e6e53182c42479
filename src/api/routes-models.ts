/**
 * Model lifecycle changes (promote, retire) by the signed-in person, never a name taken on trust. The route checks
 * what it can before anyone types a password — the model is the tenant's (another tenant's is 404 exactly as a
 * missing one, R1), the person's role is one the bundle's `approvers.change` permits, the lifecycle has this
 * step, the meaning is one of the site's signature meanings for that step — then re-authenticates the signer (password, or a fresh SSO sign-in) and hands the change to
 * `changeStatus`, which runs the golden-dataset gate of a promotion and commits the row with its signed
 * `model_change` entry on the tenant's chain. Every status change is signed, retirements included: each one
 * carries a signature manifestation with a meaning, so each one is re-authenticated (taking a model out of use
 * costs the same password as putting it in, never more).
 */
import { MEANING_VALUES } from '../domain/signature-meanings.js';
import { LkError } from '../errors.js';
import { changeStatus } from '../models/change.js';
import { nextStatuses, transition, type ModelStatus } from '../models/lifecycle.js';
import { modelRow } from '../models/registry.js';
import type { Role } from './identity.js';
import { userOf } from './auth.js';
import { BASE, type Api, type ApiContext } from './context.js';
import { PROBLEM_RESPONSES } from './problem.js';
import { meaningOf } from './routes-signatures.js';
import { ModelChangeView, ModelParams, ModelPromoteBody, ModelRetireBody } from './schemas.js';

const security = [{ bearer: [] }];
const problems = PROBLEM_RESPONSES;

/** Roles the guard lets through; the bundle's `approvers.change` narrows it (LK_MODEL_CHANGE otherwise). */
export const MODEL_CHANGERS: readonly Role[] = ['process_engineer', 'qa_reviewer'];

export function registerModelRoutes(app: Api, ctx: ApiContext): void {
  const d = ctx.daemon;

  const change = async (req: { params: { tenant: string; id: string }; body: { changeRef: string; reason: string; password?: string | undefined; meaning?: string | undefined }; lkUser: unknown } & Parameters<typeof userOf>[0], to: ModelStatus) => {
    const user = userOf(req);
    const { tenant, id } = req.params;
    const row = modelRow(d.store.db, tenant, id);
    // the same answer whether another tenant holds this id or nobody does (R1: nothing of theirs, not even that)
    if (!row) throw new LkError('LK_NOT_FOUND', `no model ${id}`, { id });
    const bundle = d.policy.bundle;
    if (!bundle) throw new LkError('LK_POLICY_BUNDLE', 'no policy bundle is in force: nobody may approve a model change');
    const approvers = bundle.content.approvers.change;
    if (!approvers.includes(user.role)) throw new LkError('LK_MODEL_CHANGE', `a ${user.role} may not approve a model change (bundle approvers.change: ${approvers.join(', ') || 'none'})`, { role: user.role });
    const from = row.status as ModelStatus;
    if (!transition(from, to)) {
      const next = nextStatuses(from);
      throw new LkError('LK_MODEL_TRANSITION', `model ${id} is ${from}: it can go to ${next.length ? next.join(' or ') : 'nothing (retired is final)'}, not ${to}`, { id, from, to });
    }
    const meaning = meaningOf(ctx, 'model_change', req.body.meaning, MEANING_VALUES.model_change({ model: id, from, to }), to);
    const signer = await ctx.identity.reauthenticateSigner(user, req.body.password, { tenant, model: `${id}: ${from} → ${to}` });
    const c = changeStatus(d.store, d.loaded.dataDir, { tenant, id, to, by: user.id, role: user.role, name: signer.name, changeRef: req.body.changeRef, reason: req.body.reason, meaning }, { approvers });
    return {
      id: c.model.id, tenant: c.model.tenant, version: c.model.version, sha256: c.model.sha256, from: c.from, to: c.to, changeRef: req.body.changeRef, auditSeq: c.auditSeq,
      evaluation: c.evaluation, signature: { user: c.signature.user, name: c.signature.name, meaning: c.signature.meaning, time: c.signature.time, value: c.signature.value ?? '' },
    };
  };

  app.post(`${BASE}/models/:id/promote`, {
    onRequest: ctx.guard(MODEL_CHANGERS, 'change a model\'s status'),
    schema: {
      tags: ['models'], summary: 'Promote one of the tenant\'s models one step (draft → shadow → validated) as the signed-in person: a role in the bundle\'s approvers.change, a change reference, the golden-dataset gate, and a signature (password re-entry)',
      security, params: ModelParams, body: ModelPromoteBody, response: { 200: ModelChangeView, ...problems },
    },
  }, async (req) => change(req, req.body.to));

  app.post(`${BASE}/models/:id/retire`, {
    onRequest: ctx.guard(MODEL_CHANGERS, 'change a model\'s status'),
    schema: {
      tags: ['models'], summary: 'Retire one of the tenant\'s models (from any status; final) as the signed-in person: a role in the bundle\'s approvers.change, a change reference and a signature (password re-entry)',
      security, params: ModelParams, body: ModelRetireBody, response: { 200: ModelChangeView, ...problems },
    },
  }, async (req) => change(req, 'retired'));
}
