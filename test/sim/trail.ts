/** What the simulators read back from the audit trail to judge an equipment write (core-sim and run-sim alike). */
import type Database from 'better-sqlite3';

/**
 * Why the `setpoint.write` intent with these args should not have reached the equipment, or null when it may: its
 * policy decision is in the trail and allowed it, or it waited for approval and a person approved its exact vector
 * (QA's, when it was outside the design space).
 */
export function clearanceProblem(
  db: Database.Database, tenant: string, args: { readonly decision?: string; readonly vectorHash?: string },
): { readonly invariant: 'write-without-allow' | 'outside-design-space-without-qa'; readonly message: string } | null {
  const row = db.prepare(`SELECT result FROM audit_entry WHERE tenant = ? AND kind = 'policy_decision' AND json_extract(result, '$.id') = ?`).get(tenant, args.decision ?? '') as { result: string } | undefined;
  if (!row) return { invariant: 'write-without-allow', message: `names decision ${args.decision}, which is not in the trail` };
  const d = JSON.parse(row.result) as { outcome: string; reasons: string[] };
  if (d.outcome === 'allow') return null;
  if (d.outcome === 'deny') return { invariant: 'write-without-allow', message: `follows a denied decision (${d.reasons.join(', ')})` };
  const kinds = (db.prepare(`SELECT json_extract(args, '$.kind') FROM audit_entry WHERE tenant = ? AND action = 'setpoint.approve' AND json_extract(args, '$.vectorHash') = ?`).pluck().all(tenant, args.vectorHash ?? '') as string[]);
  if (kinds.length === 0) return { invariant: 'write-without-allow', message: `(${d.outcome}: ${d.reasons.join(', ')}) has no approval of its vector ${args.vectorHash?.slice(0, 12)}` };
  if (d.reasons.includes('OUTSIDE_DESIGN_SPACE') && !kinds.includes('qa')) return { invariant: 'outside-design-space-without-qa', message: 'is outside the design space and its vector has no QA approval' };
  return null;
}
