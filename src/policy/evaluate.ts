/**
 * The policy decision (R4–R7), pure: `evaluate(request, bundle, context)`.
 *
 * Every check runs at every autonomy level (the spec: "checks are identical
 * at all levels"); only the outcome differs. Precedence of outcomes:
 *   1. any deny reason → `deny` (also: no bundle → deny everything, fail closed);
 *   2. batch release → `needs_qa` (R3: never performed by an agent);
 *   3. effective level L0/L1 → `recommend_only`;
 *   4. outside the design space / validated parameter without a QA approval → `needs_qa` (R4);
 *   5. no attended operator → `recommend_only` (R5);
 *   6. L2, or L3 on a setpoint that is not low-risk, without a reviewer approval →
 *      `recommend_only` with `pendingApproval: 'reviewer'` (executes once approved);
 *   7. otherwise `allow`.
 * Time, the decision id and every input come from the caller (OPA-style), so
 * a recorded decision replays to the same result.
 */
import { type AutonomyLevel, DENY_REASONS, type Decision, type Outcome, type PolicyContext, type PolicyRequest, type ReasonCode, levelRank } from '../domain/policy.js';
import { LkError } from '../errors.js';
import { isAttended } from './attendance.js';
import { type PolicyBundle, designSpaceKey } from './bundle.js';
import { boundEpsilon, parseRequestedValue, toSetpointUnit } from './value.js';

/**
 * Decide one request.
 * @param bundle the loaded bundle, or null when none could be loaded (every request is then denied)
 * @throws LkError(LK_VALIDATION) only when the context itself is unusable (`now` not a finite number):
 *   then no decision can be made. Bad requests (unknown agent, NaN, wrong unit…) are decisions, not exceptions.
 */
export function evaluate(request: PolicyRequest, bundle: PolicyBundle | null | undefined, context: PolicyContext): Decision {
  const now = context.now;
  if (typeof now !== 'number' || !Number.isFinite(now)) {
    throw new LkError('LK_VALIDATION', 'policy context needs `now` as finite epoch milliseconds', { now: String(now) });
  }
  if (typeof request !== 'object' || request === null) throw new LkError('LK_VALIDATION', 'policy request must be an object');
  const inputs = { request, context };
  if (!bundle) {
    const v = parseRequestedValue(request?.value);
    return finish(context, 'none', 'deny', ['BUNDLE_MISSING'], 'L0', 'none', v.ok && v.unit === null ? v.value : null, null, inputs);
  }
  const ix = bundle.index;
  const reasons: ReasonCode[] = [];

  if (request.kind === 'release') {
    // R3: whatever the autonomy level or approvals, release waits for the named QA reviewer
    reasons.push('BATCH_RELEASE_NEEDS_QA');
    if (!context.reviewer) reasons.push('NO_REVIEWER_ASSIGNED');
    return finish(context, bundle.version, 'needs_qa', reasons, 'L0', 'qa', null, null, inputs);
  }

  const agent = typeof request.agent === 'string' ? ix.agents.get(request.agent) : undefined;
  const sp = typeof request.setpoint === 'string' ? ix.setpoints.get(request.setpoint) : undefined;
  if (!agent) reasons.push('AGENT_UNKNOWN', 'NOT_IN_ALLOW_LIST');
  if (!sp) reasons.push('TAG_UNKNOWN');
  else if (agent && !agent.allowSet.has(sp.id)) reasons.push('NOT_IN_ALLOW_LIST');

  const limit = sp ? ix.designSpaces.get(designSpaceKey(request.product, request.tooling))?.get(sp.id) : undefined;
  if (sp && !limit) reasons.push('DESIGN_SPACE_UNKNOWN');

  let value: number | null = null;
  if (sp) {
    const r = toSetpointUnit(ix, request.value, sp.unit);
    if (r.ok) value = r.value;
    else reasons.push(r.reason);
  } else {
    const p = parseRequestedValue(request.value);
    if (!p.ok) reasons.push(p.reason);
  }

  if (sp && value !== null) {
    const ir = sp.instrumentRange;
    if (ir && (value < ir.min - boundEpsilon(ir.min, ir.max) || value > ir.max + boundEpsilon(ir.min, ir.max))) reasons.push('OUTSIDE_INSTRUMENT_RANGE');
    if (limit) {
      const eps = boundEpsilon(limit.min, limit.max);
      if (value < limit.min - eps || value > limit.max + eps) reasons.push('OUTSIDE_DESIGN_SPACE');
      const cur = context.current;
      if (typeof cur !== 'number' || !Number.isFinite(cur)) reasons.push('CURRENT_VALUE_UNKNOWN');
      else if (Math.abs(value - cur) > limit.maxStep + eps) reasons.push('STEP_TOO_LARGE');
      const last = context.lastMove;
      if (last && typeof last.value === 'number' && typeof last.at === 'number') {
        const dv = Math.abs(value - last.value);
        const dtMin = (now - last.at) / 60_000;
        if (!Number.isFinite(dv) || !Number.isFinite(dtMin)) reasons.push('RATE_TOO_HIGH');
        else if (dv > eps && (dtMin <= 0 || dv / dtMin > limit.maxRatePerMin * (1 + 1e-9))) reasons.push('RATE_TOO_HIGH');
      }
    }
  }

  if (typeof context.batchState !== 'string' || !ix.writableBatchStates.has(context.batchState)) reasons.push('BATCH_STATE_FORBIDS');

  const model = context.model;
  if (agent?.modelFamily && !model) reasons.push('MODEL_MISSING');
  if (model) {
    const reason = modelReason(model, context.modelRecord, agent?.modelFamily ?? null, bundle.content.site);
    if (reason) reasons.push(reason);
  }

  // a compression move needs the capping risk of its whole vector, computed from the tenant's twin: none, no move
  if (sp?.equipmentType === 'press') {
    const risk = context.capping?.risk;
    if (typeof risk !== 'number' || !Number.isFinite(risk)) reasons.push('CAPPING_RISK_UNKNOWN');
    else if (risk > bundle.content.cappingRiskThreshold) reasons.push('CAPPING_RISK_TOO_HIGH');
  }

  const needsQa = reasons.includes('OUTSIDE_DESIGN_SPACE') || sp?.validated === true;
  if (sp?.validated) reasons.push('VALIDATED_PARAMETER');

  const approval = context.approval;
  let qaApproved = false;
  let reviewApproved = false;
  if (approval) {
    const roleOk = approval.kind === 'qa' ? ix.qaRoles.has(approval.role) : ix.reviewerRoles.has(approval.role);
    if (!roleOk || typeof approval.by !== 'string' || approval.by.length === 0) reasons.push('APPROVAL_ROLE_INVALID');
    // R6 reviewer assignment: an L2 move is approved by the reviewer assigned to the batch, not by anyone
    // holding the role. QA approvals come from the site's pool of QA reviewers (the role check above).
    else if (approval.kind === 'reviewer' && (!context.reviewer || approval.by !== context.reviewer)) reasons.push('APPROVER_NOT_ASSIGNED');
    else {
      qaApproved = approval.kind === 'qa';
      reviewApproved = true;
    }
  }

  const agentLevel = context.autonomy?.agent ?? agent?.autonomy ?? 'L0';
  const spLevel = context.autonomy?.setpoint ?? sp?.autonomy ?? 'L0';
  const level: AutonomyLevel = levelRank(agentLevel) <= levelRank(spLevel) ? agentLevel : spLevel;
  const attended = isAttended(context.attendance, now, bundle.content.attendanceWindowMs);
  const needsReview = level === 'L2' || (level === 'L3' && sp?.lowRisk !== true);
  if (level === 'L3' && sp && !sp.lowRisk) reasons.push('NOT_LOW_RISK');

  let outcome: Outcome;
  let pending: Decision['pendingApproval'] = 'none';
  if (reasons.some((r) => DENY_REASONS.has(r))) outcome = 'deny';
  else if (levelRank(level) <= 1) {
    outcome = 'recommend_only';
    reasons.push('AUTONOMY_RECOMMEND_ONLY');
  } else if (needsQa && !qaApproved) {
    outcome = 'needs_qa';
    pending = 'qa';
    if (!context.reviewer) reasons.push('NO_REVIEWER_ASSIGNED');
  } else if (!attended) {
    outcome = 'recommend_only';
    reasons.push('UNATTENDED');
  } else if (needsReview && !reviewApproved) {
    outcome = 'recommend_only';
    pending = 'reviewer';
    reasons.push('APPROVAL_REQUIRED');
    if (!context.reviewer) reasons.push('NO_REVIEWER_ASSIGNED');
  } else {
    outcome = 'allow';
    if (qaApproved) reasons.push('QA_APPROVED');
    else if (reviewApproved && needsReview) reasons.push('REVIEWER_APPROVED');
  }
  return finish(context, bundle.version, outcome, reasons, level, pending, value, sp?.unit ?? null, inputs);
}

/**
 * Why the named model may not be used, from the registry's record at call time (undefined: it may): it must be
 * known (MODEL_MISSING), the tenant's own (MODEL_TENANT, R9), of the family the agent's bundle entry names and
 * pinned to this site (MODEL_NOT_PINNED), not retired (MODEL_RETIRED), validated and exactly the named version
 * (MODEL_NOT_VALIDATED). One reason, the most fundamental, so the audit entry says what to fix first.
 */
function modelReason(model: { readonly id: string; readonly version: string }, rec: PolicyContext['modelRecord'], family: string | null, site: string): ReasonCode | undefined {
  if (!rec || typeof rec !== 'object') return 'MODEL_MISSING';
  if (rec.owner !== 'own') return 'MODEL_TENANT';
  if ((family !== null && rec.family !== family) || !Array.isArray(rec.sites) || !rec.sites.includes(site)) return 'MODEL_NOT_PINNED';
  if (rec.status === 'retired') return 'MODEL_RETIRED';
  if (rec.status !== 'validated' || typeof model.version !== 'string' || String(rec.version) !== model.version) return 'MODEL_NOT_VALIDATED';
  return undefined;
}

function finish(
  context: PolicyContext,
  bundleVersion: string,
  outcome: Outcome,
  reasons: ReasonCode[],
  autonomy: AutonomyLevel,
  pendingApproval: Decision['pendingApproval'],
  valueInSetpointUnit: number | null,
  setpointUnit: string | null,
  inputs: Decision['inputs'],
): Decision {
  return {
    id: context.decisionId ?? decisionId(inputs, bundleVersion),
    outcome,
    reasons,
    bundleVersion,
    valueInSetpointUnit,
    setpointUnit,
    autonomy,
    pendingApproval,
    at: context.now,
    inputs,
  };
}

/**
 * A deterministic id from the inputs (same inputs, same id: a replay
 * reproduces it): 128 bits from four multiplicative hash lanes fed in one
 * pass (cyrb53-style mixing). Numbers are fed as their IEEE-754 bits and the
 * hex is built from a table: `Number#toString` costs more than the whole
 * decision otherwise. It names a decision; it protects nothing (the audit
 * chain does that).
 */
export function decisionId(inputs: Decision['inputs'], bundleVersion: string): string {
  const { request: r, context: c } = inputs;
  const v = r.value;
  n = 0;
  num(c.now);
  str(bundleVersion, 16); // 64 bits of the version separate bundles; hashing all 64 hex digits costs more than it adds
  str(r.kind ?? 'setpoint');
  str(r.agent);
  str(r.setpoint);
  if (typeof v === 'object' && v !== null) {
    num(v.value);
    str(v.unit);
  } else if (typeof v === 'number') num(v);
  else str(String(v));
  str(r.product);
  str(r.tooling);
  str(c.batchState);
  str(c.autonomy?.agent);
  str(c.autonomy?.setpoint);
  str(c.model?.id);
  str(c.model?.version);
  const mr = c.modelRecord;
  if (mr) {
    str(mr.owner);
    str(mr.family);
    num(mr.version);
    str(mr.status);
    str(mr.sha256, 16); // as the bundle version: 64 bits name the artefact well enough for an id
    if (Array.isArray(mr.sites)) for (const s of mr.sites) str(s);
  } else str(mr);
  num(c.current);
  num(c.lastMove?.value);
  num(c.lastMove?.at);
  str(c.reviewer);
  str(c.attendance?.operator);
  num(c.attendance?.lastPresenceAt);
  str(c.approval?.kind);
  str(c.approval?.by);
  str(c.approval?.role);
  num(c.capping?.risk);
  str(c.capping?.model?.id);
  str(c.capping?.model?.version);
  str(c.capping?.error);
  // the lanes in local variables, over the words gathered above: the same sequence of mixes as feeding them
  // one by one into module-level state, at a fraction of the cost (decisionId was three quarters of a decision)
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  let h3 = 0x9e3779b9;
  let h4 = 0x85ebca6b;
  for (let i = 0; i < n; i++) {
    const x = words[i]!;
    h1 = Math.imul(h1 ^ x, 2654435761);
    h2 = Math.imul(h2 ^ x, 1597334677);
    h3 = Math.imul(h3 ^ x, 2246822519);
    h4 = Math.imul(h4 ^ x, 3266489917);
  }
  return `dec_${hex8(fin(h1, h2))}${hex8(fin(h2, h3))}${hex8(fin(h3, h4))}${hex8(fin(h4, h1))}`;
}

// scratch of one synchronous decisionId call: the 32-bit words to hash, in order
let words = new Uint32Array(1024);
let n = 0;
const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Room for `k` more words. */
function reserve(k: number): void {
  if (n + k <= words.length) return;
  const grown = new Uint32Array(Math.max(words.length * 2, n + k));
  grown.set(words);
  words = grown;
}

function push(x: number): void {
  reserve(1);
  words[n++] = x;
}

function str(s: unknown, max = Number.POSITIVE_INFINITY): void {
  if (typeof s !== 'string') {
    push(s === undefined ? 0x1e : s === null ? 0x1d : 0x1c);
    return;
  }
  const len = Math.min(s.length, max);
  reserve(len + 1);
  // module-level variables are context loads and stores in a loop: copy them to locals
  const w = words;
  let k = n;
  for (let i = 0; i < len; i++) w[k++] = s.charCodeAt(i);
  n = k;
  push(0x1f); // field separator
}

function num(v: unknown): void {
  if (typeof v !== 'number') {
    str(v === undefined || v === null ? v : String(v));
    return;
  }
  f64[0] = v;
  push(u32[0]!);
  push(u32[1]!);
  push(0x1f);
}

function fin(a: number, b: number): number {
  return (Math.imul(a ^ (a >>> 16), 2246822507) ^ Math.imul(b ^ (b >>> 13), 3266489909)) >>> 0;
}

function hex8(x: number): string {
  return HEX[x >>> 24]! + HEX[(x >>> 16) & 255]! + HEX[(x >>> 8) & 255]! + HEX[x & 255]!;
}
