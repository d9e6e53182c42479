/** Checks and arbitration bookkeeping of a write proposal (no I/O). */
import type { ArbitrationResult, ArbitrationState } from '../arbitration/index.js';
import type { AuditEntryInput } from '../audit/index.js';
import type { SiteConfig } from '../config/schema.js';
import { scoreOf } from '../arbitration/index.js';
import { AUTONOMY_LEVELS } from '../domain/policy.js';
import { LkError } from '../errors.js';
import type { PendingWrite, WriteProposal } from './writer-types.js';

/**
 * Validate a proposal before anything is read, written or audited.
 * @throws LkError LK_VALIDATION for a malformed proposal; LK_NOT_FOUND when the tenant does not run the product (R1).
 */
export function checkProposal(p: WriteProposal, site: SiteConfig): void {
  const bad = (m: string): never => {
    throw new LkError('LK_VALIDATION', `write proposal: ${m}`);
  };
  if (typeof p !== 'object' || p === null) bad('must be an object');
  for (const k of ['id', 'tenant', 'batch', 'agent', 'product', 'tooling', 'attribute', 'justification'] as const) {
    if (typeof p[k] !== 'string' || p[k].length === 0) bad(`${k} must be a non-empty string`);
  }
  // arbitration ranks by attribute: a request naming none it knows would never contest, so it is refused here
  if (scoreOf(p.attribute) === undefined) bad(`attribute "${p.attribute}" is not a quality or throughput attribute`);
  if (!Array.isArray(p.moves) || p.moves.length === 0) bad('moves must be a non-empty array');
  if (p.autonomyCap !== undefined && !(AUTONOMY_LEVELS as readonly string[]).includes(p.autonomyCap)) bad(`autonomyCap "${String(p.autonomyCap)}" is not one of ${AUTONOMY_LEVELS.join(', ')}`);
  const seen = new Set<string>();
  for (const m of p.moves) {
    if (typeof m?.setpoint !== 'string') bad('every move needs a setpoint');
    if (seen.has(m.setpoint)) bad(`setpoint ${m.setpoint} appears twice (a vector moves each setpoint once)`);
    seen.add(m.setpoint);
  }
  if (p.model !== undefined && (typeof p.model !== 'object' || p.model === null || typeof p.model.id !== 'string' || typeof p.model.version !== 'string')) bad('model must be { id, version } strings');
  const tenant = site.tenants.find((t) => t.id === p.tenant);
  if (!tenant || !tenant.products.includes(p.product)) throw new LkError('LK_NOT_FOUND', `tenant ${p.tenant} runs no product ${p.product}`);
}

/** The arbitration state without the ownership this proposal's moves would have gained (it did not move anything). */
export function withoutWins(before: ArbitrationState, r: ArbitrationResult, proposalId: string): ArbitrationState {
  const owners = { ...r.state.owners };
  for (const w of r.winners) {
    if (!w.request.id.startsWith(`${proposalId}:`)) continue;
    const prev = before.owners[w.request.setpoint];
    if (prev) owners[w.request.setpoint] = prev;
    else delete owners[w.request.setpoint];
  }
  return { owners, escalations: r.state.escalations };
}

/** An audit entry of a proposal: its tenant chain, its agent as actor unless named, its batch, agent and run as subject. */
export function entryFor(p: WriteProposal, e: Partial<AuditEntryInput> & Pick<AuditEntryInput, 'kind' | 'action'>): AuditEntryInput {
  return { tenant: p.tenant, actor: p.agent, ...e, subject: { batch: p.batch, agent: p.agent, ...(p.run ? { run: p.run } : {}), ...e.subject } };
}

/** Pending writes sharing a setpoint with a newer proposal (not `keepId`, the one being approved). */
export function supersededBy(pending: Iterable<PendingWrite>, p: WriteProposal, keepId: string | null): PendingWrite[] {
  const touched = new Set(p.moves.map((m) => m.setpoint));
  return [...pending].filter((w) => w.id !== keepId && w.proposal.moves.some((m) => touched.has(m.setpoint)));
}
