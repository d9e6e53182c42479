/**
 * GET/PUT autonomy: the levels in force (per agent, per agent × setpoint, per setpoint ceiling) and a change by
 * the signed-in person — never a name taken on trust. Who may change what (raise one level at a time, by a role
 * the bundle permits, with a change reference; lower always) is checked first; a raise is then signed: the
 * person re-authenticates (password, or a fresh SSO sign-in) and the audit entry carries the signature
 * manifestation, its meaning one of the site's signature meanings (checked before the password). Lowering needs no password (it is the safe direction, and must stay quick). Levels are the
 * tenant's (the tenant of the path): a change governs that tenant's runs, is audited on that tenant's chain and
 * shows in that tenant's history only; the guard refuses another tenant's path (404) before any of it.
 */
import { queryAudit } from '../audit/query.js';
import { LkError } from '../errors.js';
import { autonomyMeaningValues, autonomyRows, autonomyView, previewAutonomy, setAutonomy, type AutonomyRequest } from '../store/autonomy-store.js';
import { READERS, userOf } from './auth.js';
import { BASE, type Api, type ApiContext } from './context.js';
import { PROBLEM_RESPONSES } from './problem.js';
import { meaningOf } from './routes-signatures.js';
import { AutonomyBody, AutonomyChangeView, AutonomyView, TenantParams } from './schemas.js';

const security = [{ bearer: [] }];
const problems = PROBLEM_RESPONSES;

export function registerAutonomyRoutes(app: Api, ctx: ApiContext): void {
  const d = ctx.daemon;
  const bundle = () => {
    const b = d.policy.bundle;
    if (!b) throw new LkError('LK_POLICY_BUNDLE', 'no policy bundle is in force: there are no autonomy levels');
    return b;
  };

  app.get(`${BASE}/autonomy`, {
    onRequest: ctx.guard(READERS, 'read autonomy levels'),
    schema: { tags: ['autonomy'], summary: 'The autonomy levels in force: the bundle\'s, overridden by persisted changes (who, role, change reference, when)', security, params: TenantParams, response: { 200: AutonomyView, ...problems } },
  }, async (req) => {
    const b = bundle();
    const tenant = req.params.tenant;
    const history = queryAudit(d.store.db, tenant, { kind: 'autonomy_change' }, { limit: 1000 }).entries.reverse().slice(0, 200).map((e) => {
      const args = (e.args ?? {}) as { role?: string; change_ref?: string };
      return { seq: e.seq, ts: e.ts, actor: e.actor, action: e.action, subject: e.subject ?? null, from: e.old ?? null, to: e.new ?? null, changeRef: args.change_ref ?? null, reason: e.reason ?? null, role: args.role ?? null };
    });
    const raiseRoles = Object.fromEntries(Object.entries(b.content.raiseRoles).map(([k, v]) => [k, [...(v as readonly string[])]]));
    return { ...autonomyView(b, autonomyRows(d.store.db, tenant)), raiseRoles, history };
  });

  app.put(`${BASE}/autonomy`, {
    onRequest: ctx.guard(['operator', 'process_engineer', 'qa_reviewer'], 'change autonomy levels'),
    schema: {
      tags: ['autonomy'], summary: 'Change one level as the signed-in person: lower always; raise one level at a time by a role the bundle permits, with a change reference and a signature (password re-entry)',
      security, params: TenantParams, body: AutonomyBody, response: { 200: AutonomyChangeView, ...problems },
    },
  }, async (req) => {
    const user = userOf(req);
    const b = bundle();
    const { agent, setpoint, level, changeRef, reason, password, meaning: chosen } = req.body;
    if (agent === undefined && setpoint === undefined) throw new LkError('LK_VALIDATION', 'give agent, setpoint, or both', { issues: [{ path: 'body.agent', message: 'agent or setpoint is required' }] });
    if (agent !== undefined && !Object.hasOwn(b.content.agents, agent)) throw new LkError('LK_AUTONOMY_CHANGE', `"${agent}" is not an agent of this site`);
    const change: AutonomyRequest = {
      tenant: req.params.tenant, ...(agent !== undefined ? { agent } : {}), ...(setpoint !== undefined ? { setpoint } : {}), to: level, by: { person: user.id, role: user.role },
      ...(changeRef !== undefined ? { changeRef } : {}), ...(reason !== undefined ? { reason } : {}), requireSignatureToRaise: true,
    };
    const preview = previewAutonomy(d.store, b, change);
    let signer: NonNullable<AutonomyRequest['signer']> | undefined;
    if (preview.type === 'autonomy_raised') {
      // the raise's meaning from the site's list, before the password (the store signs exactly these words, or refuses if the raise changed meanwhile)
      const meaning = meaningOf(ctx, 'autonomy_raise', chosen, autonomyMeaningValues({ ...(agent !== undefined ? { agent } : {}), ...(setpoint !== undefined ? { setpoint } : {}), from: preview.from, to: preview.to, changeRef: preview.changeRef }));
      const signed = await ctx.identity.reauthenticateSigner(user, password, { tenant: req.params.tenant, autonomy: `${agent ?? '*'} on ${setpoint ?? '*'} → ${level}` });
      signer = { name: signed.name, meaning };
    }
    const ev = setAutonomy(d.store, b, { ...change, ...(signer ? { signer } : {}) });
    return {
      type: ev.type, from: ev.from, to: ev.to, agent: agent ?? null, setpoint: setpoint ?? null, by: user.id, role: user.role,
      changeRef: ev.changeRef, auditSeq: ev.auditSeq, signed: signer !== undefined,
    };
  });
}
