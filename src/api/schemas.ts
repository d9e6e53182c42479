/**
 * The zod schemas of the REST API: requests are strict (an unknown field is a 400 naming it), responses
 * describe what the engine returns. The OpenAPI document is generated from these, so they are the contract.
 * What the run routes answer is defined once in src/contract/runs.ts (the engine builds those types, the SDK
 * ships them) and re-exported here with the rest.
 */
import { z } from 'zod';
import { LONE_SURROGATE } from '../audit/json-value.js';
import { AuditFilter } from '../audit/query.js';
import { RUN_ID_RE } from '../domain/run.js';
import { MEANING_FILLED_MAX } from '../domain/signature-meanings.js';
import { ROLES } from '../store/user-store.js';
import { IsoTime } from '../contract/runs.js';

export {
  AbortView, ActSignatureView, ApprovalItem, ApprovalList, CloseExceptionView, ExceptionList, ExceptionMarker, ExceptionView, GenealogyView, ReassignView, RunPage, RunView,
  SignatureView, StepView, ToolCallLine, WriteDecisionView,
} from '../contract/runs.js';

export const Autonomy = z.enum(['L0', 'L1', 'L2', 'L3']);
/**
 * Free text of a request: well-formed Unicode only. A lone surrogate cannot be stored in the audit trail (its
 * entries are well-formed JSON text), so it is refused here, naming the field, instead of failing deep inside.
 */
const text = (min: number, max: number) => z.string().min(min).max(max).refine((s) => !LONE_SURROGATE.test(s), 'has a lone surrogate (not well-formed Unicode)');
/** Free text beside a signature's meaning (the meaning itself comes from the site's list). */
const meaningComment = text(1, 1000);
/** A signature meaning chosen from the site's list (GET /signature-meanings): an entry's id, or its text filled for the record. */
export const MeaningChoice = text(2, MEANING_FILLED_MAX).describe('one of the site\'s signature meanings for this act (GET /signature-meanings), by its id or its text filled for the record; without it, the first entry that fits. Anything else is 422 LK_MEANING_NOT_ALLOWED before the password is checked');
const tenant = z.string().regex(/^[a-z][a-z0-9-]{0,63}$/, 'a tenant id is lower-case letters, digits and dashes');
const eventId = z.string().regex(/^\d{1,15}$/, 'an event id is a non-negative integer');

export const TenantParams = z.strictObject({ tenant });
export const RunParams = z.strictObject({ tenant, id: z.string().regex(RUN_ID_RE, 'a run id is run_<token>') });
export const ApprovalParams = z.strictObject({ tenant, id: z.string().regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'an approval id is letters, digits and _.:-') });

export const TokenBody = z.strictObject({ user: text(1, 128), password: text(1, 1024) });
export const StartRunBody = z.strictObject({
  request: text(1, 4000).describe('the free-text run request, e.g. "run batch B-1042 on line-3, keep weight and hardness on target"'),
  autonomy: Autonomy.optional().describe('a cap on every agent of the run (never raises a level)'),
});
export const ListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().min(1).max(200).optional().describe('`next` of the previous page'),
});
export const StreamQuery = z.strictObject({ after: eventId.optional().describe('resume after this event id (as Last-Event-ID)') });
export const StreamHeaders = z.looseObject({ 'last-event-id': eventId.optional() });
export const DecisionBody = z.strictObject({
  decision: z.enum(['approve', 'reject']),
  // the audit trail's signature manifestation holds "<decision>: <meaning>" whole: no meaning is longer than MEANING_FILLED_MAX
  meaning: text(3, MEANING_FILLED_MAX).describe('what the signature means: one of the site\'s signature meanings for this act and decision (GET /signature-meanings), by its id ("qa-release") or its text filled for the record ("QA release of batch B-1042"); anything else is 422 LK_MEANING_NOT_ALLOWED before the password is checked'),
  comment: meaningComment.optional().describe('free text beside the meaning, in the signer\'s own words: recorded in the signed record and the audit entry'),
  password: text(1, 1024).optional().describe('the signed-in reviewer\'s password, checked again at signing (21 CFR 11.200); required of a local user, not sent by an SSO user (whose bearer token must come from a fresh provider sign-in)'),
  recordHash: z.string().regex(/^[0-9a-f]{64}$/, 'a record hash is 64 hex digits').optional()
    .describe('the recordHash of the item as GET /approvals showed it: required for a setpoint write (the signature binds to that exact vector), checked when given for a batch release'),
});
export const SimulateBody = z.strictObject({
  candidates: z.int().min(1).max(10_000),
  horizon: text(1, 100).describe('"full batch" or a compression window such as "30 min"'),
  seed: z.int().optional(),
});
export const AttendanceBody = z.strictObject({}).nullish();
const familyId = z.string().regex(/^[a-z][a-z0-9-]{0,63}$/, 'a product or tooling family id is lower-case letters, digits and dashes');
export const DesignSpaceQuery = z.strictObject({ product: familyId.describe('product family, e.g. ir-family-a'), tooling: familyId.describe('tooling family, e.g. round-10mm-ff') });
export const AuditQuery = AuditFilter.extend({
  cursor: z.string().min(1).max(200).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

const iso = IsoTime;

export const AuthUserView = z.object({ id: z.string(), name: z.string(), role: z.enum(ROLES), tenants: z.array(z.string()) });
export const TokenView = z.object({
  token: z.string(), tokenType: z.literal('Bearer'), expiresAt: iso,
  expiresIn: z.int().min(0).describe('seconds from this answer to expiresAt by the daemon\'s clock (OAuth 2.0 expires_in): a client times its renewal from this on its own clock, which may differ from the daemon\'s'),
  sessionEndsAt: iso.optional().describe('renewals (POST /v1/auth/token/refresh) go no further: then sign in again'),
  user: AuthUserView,
  mustChangePassword: z.boolean().describe('the password was set by someone else or has expired: this session may only change it (POST /v1/auth/password)'),
});
export const PasswordBody = z.strictObject({ current: text(1, 1024), password: text(1, 1024).describe('the new password (the site\'s policy: length, strength, not a recent one)') });
export const PasswordChangedView = z.object({ user: AuthUserView, changedAt: iso, mustChangePassword: z.literal(false) });
export const WhoAmIView = z.object({
  user: AuthUserView.extend({ source: z.enum(['local', 'sso']) }),
  mustChangePassword: z.boolean(),
  expiresAt: iso.describe('the bearer token stops being accepted then'),
  sessionEndsAt: iso.nullable().describe('local sessions: renewals go no further; null for an SSO token (renewed at the provider)'),
});
export const SignOutView = z.object({ signedOut: z.string().describe('the user whose session ended') });
export const AutonomyBody = z.strictObject({
  agent: z.string().regex(/^agent\.[a-z_]{1,64}$/, 'an agent id is agent.<role>').optional(),
  setpoint: z.string().regex(/^[a-z][a-z0-9-]{0,63}\.[A-Z][A-Za-z0-9]{0,63}$/, 'a setpoint is <equipment>.<Tag>').optional(),
  level: Autonomy,
  changeRef: text(1, 100).optional().describe('change-control reference (required to raise)'),
  reason: text(1, 500).optional(),
  password: text(1, 1024).optional().describe('the signed-in person\'s password: required to raise a level (re-authentication, 21 CFR 11.200); an SSO user signs with a fresh provider sign-in instead'),
  meaning: MeaningChoice.optional().describe('the meaning of a raise: one of the site\'s signature meanings for autonomy_raise (GET /signature-meanings), by id or text; without it, the first. Ignored when the change lowers'),
});
const AutonomyMeta = z.object({
  level: z.string(), source: z.enum(['bundle', 'changed']), bundleLevel: z.string().optional(), by: z.string().optional(), role: z.string().nullable().optional(), changeRef: z.string().nullable().optional(),
  reason: z.string().nullable().optional(), at: z.string().optional(), auditSeq: z.number().int().optional(),
});
export const AutonomyView = z.object({
  bundleVersion: z.string(),
  agents: z.record(z.string(), AutonomyMeta),
  agentSetpoints: z.array(AutonomyMeta.extend({ agent: z.string(), setpoint: z.string() })),
  setpoints: z.record(z.string(), AutonomyMeta),
  raiseRoles: z.record(z.string(), z.array(z.string())).describe('the roles the bundle permits to raise to each level'),
  history: z.array(z.object({
    seq: z.number().int(), ts: z.string(), actor: z.string(), action: z.string(), subject: z.unknown().nullable(), from: z.unknown().nullable(), to: z.unknown().nullable(),
    changeRef: z.string().nullable(), reason: z.string().nullable(), role: z.string().nullable(),
  })).describe('the latest 200 autonomy changes, newest first (who, when, why, change reference)'),
});
export const AutonomyChangeView = z.object({
  type: z.string(), from: z.string(), to: z.string(), agent: z.string().nullable(), setpoint: z.string().nullable(), by: z.string(), role: z.string(),
  changeRef: z.string().nullable(), auditSeq: z.number().int().nullable(), signed: z.boolean(),
});


export const ModelList = z.object({
  items: z.array(z.object({
    id: z.string(), kind: z.string(), version: z.number().int(), status: z.string(), sites: z.array(z.string()), sha256: z.string(),
    card: z.unknown(), changedAt: iso, changedBy: z.string(), changeRef: z.string().nullable(),
  })),
});
/** A model of the registry by id (`<analyte>-<family>-v<n>`). */
export const ModelParams = z.strictObject({ tenant, id: z.string().regex(/^[a-z][a-z0-9]*-[a-z][a-z0-9]*-v[1-9][0-9]{0,8}$/, 'a model id is <analyte>-<family>-v<n>') });
const ModelChangeFields = {
  changeRef: z.string().regex(/^[A-Z][A-Z0-9]{0,19}-[A-Za-z0-9-]{1,80}$/, 'a change reference is like CC-2026-0214').describe('change-control reference'),
  reason: text(1, 500).describe('why'),
  password: text(1, 1024).optional().describe('the signed-in person\'s password: every model status change is signed (re-authentication, 21 CFR 11.200); an SSO user signs with a fresh provider sign-in instead'),
  meaning: MeaningChoice.optional().describe('one of the site\'s signature meanings for model_change and the status the model goes to (GET /signature-meanings), by id or text; without it, the first. The reason is signed beside it'),
};
export const ModelPromoteBody = z.strictObject({ to: z.enum(['shadow', 'validated']).describe('one step forward: draft → shadow → validated'), ...ModelChangeFields });
export const ModelRetireBody = z.strictObject(ModelChangeFields);
export const ModelChangeView = z.object({
  id: z.string(), tenant: z.string(), version: z.number().int(), sha256: z.string(), from: z.string(), to: z.string(), changeRef: z.string(),
  auditSeq: z.number().int().describe('the model_change entry on the tenant\'s chain'),
  evaluation: z.unknown().nullable().describe('the golden-dataset evaluation that gated a promotion (null for a retirement)'),
  signature: z.object({ user: z.string(), name: z.string(), meaning: z.string(), time: iso, value: z.string() }).describe('the signature manifestation: Ed25519 by the site key over the canonical record in the audit entry'),
});
export const SimulationView = z.looseObject({ model: z.looseObject({ id: z.string(), version: z.number() }), ranked: z.array(z.unknown()), discarded: z.array(z.unknown()) });
const LimitView = z.object({
  min: z.number(), max: z.number(), unit: z.string().describe('UCUM code: the setpoint\'s own (tag) unit'), maxStep: z.number().describe('largest single move'),
  maxRatePerMin: z.number().describe('largest change per minute between moves'),
});
export const DesignSpaceView = z
  .object({
    product: z.string(), tooling: z.string(), approvedBy: z.string().describe('the validation report that approved it'), bundleVersion: z.string().describe('SHA-256 of the policy bundle in force'),
    setpoints: z.record(z.string(), LimitView).describe('approved limits by setpoint tag id (<equipment>.<Tag>)'),
  })
  .meta({ id: 'DesignSpace' });
export const AttendanceView = z.object({ operator: z.string(), lastPresenceAt: iso, attended: z.boolean(), windowMs: z.number().nullable() });
const LineLimitView = z.object({
  min: z.number().optional(), max: z.number().optional(), unit: z.string().describe('the tag\'s unit (UCUM): min and max are converted to it'),
  source: z.string().describe('where the limit comes from, in words: the batch record, the run request that tightened it, the policy bundle'),
  applies: z.enum(['in_process', 'end_point']).describe('in_process: every reading is held to it; end_point: the reading at the end of the phase is (LOD at the end of drying)'),
});
export const LineView = z.object({
  line: z.string(), site: z.string(),
  timezone: z.string().describe('the site\'s time zone (IANA, site.timezone): the console and the CLI show people\'s times on this clock with its UTC offset; every time in the API stays UTC'),
  at: iso.describe('the daemon\'s clock when the view was composed: a value\'s age is at − its at (never a client\'s clock)'),
  staleAfterMs: z.number().int().positive().describe('a value older than this (at − its at) is stale: no longer shown as live'),
  limits: z.record(z.string(), LineLimitView).nullable()
    .describe('by site tag: the limits in force for the key process values (press tablet weight, hardness, thickness, capping rate; dryer LOD) of this tenant\'s run on the line; null when no run of this tenant is on the line'),
  activeRun: z.object({ id: z.string(), status: z.string(), batch: z.string() }).nullable().describe('the run on the line when it is this tenant\'s; null otherwise'),
  phase: z.object({ tag: z.string(), value: z.unknown(), quality: z.string(), at: iso }).nullable()
    .describe('the batch phase the line PLC reports (line.phase.tag, or the tag playing plc.BatchPhase), as read; null when values are hidden (another tenant\'s run) or not read yet'),
  busy: z.boolean().describe('a run is active on the line (whosever it is)'),
  connections: z.array(z.object({ id: z.string(), protocol: z.string(), state: z.string(), endpoint: z.string() })),
  equipment: z.array(z.object({
    id: z.string(), name: z.string(), type: z.string(), connection: z.string(), connectionState: z.string(),
    supervisor: z.object({ state: z.string().nullable(), activeRecipe: z.string().nullable(), revertCount: z.number().nullable() }),
    supervision: z.enum(['supervised', 'monitor_only']).describe('monitor_only: linekeeper reads this unit and writes nothing to it (no heartbeat, no setpoint, no command)'),
    values: z.record(z.string(), z.object({ value: z.unknown(), unit: z.string(), quality: z.string(), at: iso.describe('when linekeeper received it, on the daemon\'s clock'), role: z.string().optional().describe('the role the tag plays (src/domain/roles.ts), when it plays one') })).nullable(),
  })),
});
export const AuditPageView = z.object({ items: z.array(z.record(z.string(), z.unknown())), next: z.string().optional() });
export const Health = z.object({
  status: z.enum(['ok', 'ready']), version: z.string(),
  event_loop: z.object({
    p99_ms: z.number(), max_ms: z.number().describe('worst delay of the last window: how late a PLC heartbeat could have been'),
    worst_ms: z.number().describe('worst delay since start'), bound_ms: z.number(), window_ms: z.number(),
    over_bound: z.number().describe('windows since start whose worst delay passed the bound (each is logged)'),
    ok: z.boolean().describe('the last window stayed within the bound'),
  }).optional().describe('the event-loop delay (GET /readyz only)'),
});

const EscalationSide = z.object({
  requestId: z.string(), agent: z.string(), target: z.string().describe('the value the agent asked for, with its unit'), attribute: z.string(),
  justification: z.string(), at: iso,
});
export const EscalationView = z.object({
  id: z.string().describe('the setpoint: one deadlock per setpoint at a time'), setpoint: z.string(), reason: z.literal('DEADLOCK_EQUAL_RANK'),
  score: z.number().int(), rank: z.enum(['quality', 'throughput']), since: iso, sides: z.array(EscalationSide),
  outranked: z.array(EscalationSide).describe('lower-ranked requests held with the deadlock: declined, naming the winner, when a person decides'),
  runs: z.array(z.string()).describe('the runs whose agents asked (from the request ids)'),
  holds: z.literal(true).describe('no agent moves the setpoint while the deadlock waits; it is never resolved by time'),
});
export const EscalationList = z.object({ items: z.array(EscalationView) });
export const EscalationParams = z.strictObject({ tenant, id: text(1, 200) });
export const EscalationDecisionBody = z.strictObject({
  choose: text(1, 300).describe('the requestId of the side that wins'),
  reason: text(1, 1000).describe('why (audited with the decider)'),
});
export const EscalationDecisionView = z.object({
  setpoint: z.string(), decidedBy: z.string(), role: z.string(), reason: z.string(),
  winner: EscalationSide, declined: z.array(EscalationSide.extend({ reason: z.string() })),
});

export const ExceptionParams = z.strictObject({ tenant, id: z.string().regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'an exception id is exc_<hex>') });
export const CloseExceptionBody = z.strictObject({
  comment: text(3, 2000).describe('what was found and why the batch may proceed (required; audited and printed in the release package)'),
  deviation: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._/-]{0,63}$/, 'a deviation or CAPA reference is letters, digits and ._/- (e.g. DEV-2026-0142)').optional(),
  password: text(1, 1024).optional().describe('the signed-in person\'s password, checked again (21 CFR 11.200): closing a critical or major exception is a signature'),
  meaning: MeaningChoice.optional().describe('the meaning of a signed (critical or major) closure: one of the site\'s signature meanings for exception_close (GET /signature-meanings), by id or text; without it, the first. The comment is signed beside it'),
});

/** The ways out of the states a run stops in (routes-lifecycle.ts): resume, abort, reassign. */
const lifecycleReason = text(3, 1000).describe('why, in words (audited; printed in the genealogy and the package)');
const signingPassword = text(1, 1024).optional().describe('the signed-in person\'s password, checked again (21 CFR 11.200): this act is a signature; not sent by an SSO user');
export const ResumeBody = z.strictObject({ reason: lifecycleReason });
export const AbortBody = z.strictObject({ reason: lifecycleReason, password: signingPassword, meaning: MeaningChoice.optional().describe('one of the site\'s signature meanings for run_abort (GET /signature-meanings), by id or text; without it, the first. The reason is signed beside it') });
export const ReassignBody = z.strictObject({
  to: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/, 'must be a person\'s user id (e.g. m.rossi)').describe('the new QA reviewer: an active user holding a QA role for the tenant'),
  reason: lifecycleReason, password: signingPassword,
  meaning: MeaningChoice.optional().describe('one of the site\'s signature meanings for run_reassign (GET /signature-meanings), by id or text; without it, the first. The reason is signed beside it'),
});
