/**
 * Is the line ready for a run, and the way a named person re-arms a LOST PLC. `GET /line/readiness` lists every
 * reason a run would be refused now (`LK_LINE_NOT_READY`), the same judgement `POST /runs` makes
 * (src/engine/run/readiness.ts); `POST /line/equipment/{unit}/rearm` re-arms one PLC as the signed-in person, with
 * a reason, through the guarded writer (src/engine/rearm.ts says who may and why). The re-arm is audited on the
 * person's tenant chain (intent and outcome), and the PLC's own report of it on the site chain.
 */
import { z } from 'zod';
import { rearmPlc } from '../engine/rearm.js';
import { lineReadiness } from '../engine/run/start-checks.js';
import { userOf } from './auth.js';
import { BASE, type Api, type ApiContext } from './context.js';
import { PROBLEM_RESPONSES } from './problem.js';
import { TenantParams } from './schemas.js';

const security = [{ bearer: [] }];
const problems = PROBLEM_RESPONSES;

export const EquipmentParams = TenantParams.extend({ unit: z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, 'an equipment id is lower-case letters, digits, _ and -') });
export const RearmBody = z.strictObject({
  reason: z.string().min(3).max(1000).describe('why the PLC may be supervised again (audited with the person)'),
});
const Reason = z.object({
  code: z.enum(['LINE_BUSY', 'PLC_LOST', 'PLC_STATE_UNKNOWN', 'PLC_NOT_SUPERVISED', 'CONNECTION_DOWN', 'MODEL_INVALID', 'POLICY_BUNDLE_MISSING']).describe('stable, machine-readable'),
  subject: z.string().describe('the equipment, connection or model kind the reason is about'),
  message: z.string(),
});
export const ReadinessView = z.object({
  line: z.string(), ready: z.boolean().describe('a run may start now'), reasons: z.array(Reason).describe('why not, every reason; empty when ready'),
});
export const RearmView = z.object({
  equipment: z.string(), state: z.string().describe('SupervisorState as the PLC reports it after the command'), verified: z.boolean(),
  activeRecipe: z.union([z.string(), z.number()]).nullable(), revertCount: z.number().nullable(), rearmedBy: z.string(), role: z.string(), reason: z.string(), at: z.string(),
});

export function registerLineRoutes(app: Api, ctx: ApiContext): void {
  const d = ctx.daemon;

  app.get(`${BASE}/line/readiness`, {
    onRequest: ctx.guard(['operator', 'process_engineer', 'qa_reviewer', 'auditor', 'admin'], 'see whether the line is ready'),
    schema: {
      tags: ['line'], summary: 'Is the line ready for a run: every PLC ATTENDED, connections up, the tenant\'s models valid and pinned, a policy bundle in force, no other run — else every reason (what POST /runs refuses with LK_LINE_NOT_READY)',
      security, params: TenantParams, response: { 200: ReadinessView, ...problems },
    },
  }, async (req) => {
    const r = lineReadiness({ ...d.engine.options, runs: d.engine.runs }, req.params.tenant);
    return { line: d.loaded.config.line.id, ready: r.ready, reasons: r.reasons.map((x) => ({ ...x })) };
  });

  app.post(`${BASE}/line/equipment/:unit/rearm`, {
    onRequest: ctx.guard(['process_engineer'], 're-arm a PLC'),
    schema: {
      tags: ['line'], summary: 'Re-arm a LOST PLC as the signed-in person, with a reason (audited plc.rearm intent and outcome): the PLC is supervised again once it reports ATTENDED; it refuses while no heartbeat arrives',
      security, params: EquipmentParams, body: RearmBody, response: { 200: RearmView, ...problems },
    },
  }, async (req) => {
    const user = userOf(req);
    const r = await rearmPlc(
      { site: d.loaded.config, writer: d.writer, policy: () => d.policy.bundle, read: d.engine.options.read, activeTenant: () => d.engine.runs.activeOnLine(d.loaded.config.line.id)?.tenant ?? null },
      { tenant: req.params.tenant, equipment: req.params.unit, person: user.id, role: user.role, reason: req.body.reason },
    );
    return {
      equipment: r.equipment, state: r.state, verified: r.verified, activeRecipe: r.activeRecipe, revertCount: r.revertCount,
      rearmedBy: user.id, role: user.role, reason: req.body.reason.trim(), at: new Date(r.at).toISOString(),
    };
  });
}
