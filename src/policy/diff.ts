/**
 * What a policy change changes, in the words a reviewer checks (pure): setpoint limits of each design space,
 * allow-lists, autonomy levels and ceilings, validated and low-risk setpoints, severities, approver roles and
 * thresholds. One line per change, e.g.
 * `design space ir-family-a × round-10mm-ff: press.MainForce max 18 → 25 kN`. The version hashes alone tell
 * nobody what was approved; this is shown before signing and recorded with the signature.
 */
import canonicalize from 'canonicalize';
import type { BundleContent, CompiledLimit } from './bundle.js';

export interface BundleChange {
  /** `design_space`, `allow_list`, `agent_autonomy`, `autonomy_ceiling`, `validated`, `low_risk`, `severity`, `approvers`, `raise_roles`, `threshold`, `model_family`. */
  readonly area: string;
  /** What changed, e.g. `ir-family-a × round-10mm-ff press.MainForce max`, `agent.compress_fill`. */
  readonly item: string;
  readonly from: string | null;
  readonly to: string | null;
  /** The readable line. */
  readonly text: string;
}

const show = (v: unknown): string => (v === undefined || v === null ? '(none)' : typeof v === 'string' ? v : canonicalize(v) ?? String(v));

/** Every difference between the content in force (null: none) and the new content, in a stable order. */
export function diffBundles(old: BundleContent | null, next: BundleContent): BundleChange[] {
  const out: BundleChange[] = [];
  const add = (area: string, item: string, from: unknown, to: unknown, text?: string): void => {
    const f = from === undefined || from === null ? null : show(from);
    const t = to === undefined || to === null ? null : show(to);
    if (f === t) return;
    out.push({ area, item, from: f, to: t, text: text ?? `${item}: ${f ?? '(none)'} → ${t ?? '(none)'}` });
  };
  const keys = <T>(a: Readonly<Record<string, T>> | undefined, b: Readonly<Record<string, T>> | undefined): string[] => [...new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})])].sort();

  add('threshold', 'capping risk threshold', old?.cappingRiskThreshold, next.cappingRiskThreshold);
  add('threshold', 'attendance window (ms)', old?.attendanceWindowMs, next.attendanceWindowMs);
  add('threshold', 'ownership window (ms)', old?.ownershipWindowMs, next.ownershipWindowMs);
  add('threshold', 'writable batch states', old?.writableBatchStates.join(', '), next.writableBatchStates.join(', '));
  for (const k of keys(old?.approvers as Record<string, readonly string[]> | undefined, next.approvers as Record<string, readonly string[]>)) {
    add('approvers', `approvers.${k}`, (old?.approvers as Record<string, readonly string[]> | undefined)?.[k]?.join(', '), (next.approvers as Record<string, readonly string[]>)[k]?.join(', '));
  }
  for (const k of keys(old?.raiseRoles, next.raiseRoles)) add('raise_roles', `roles that raise autonomy to ${k}`, old?.raiseRoles[k as 'L1']?.join(', '), next.raiseRoles[k as 'L1']?.join(', '));

  for (const id of keys(old?.designSpaces, next.designSpaces)) {
    const a = old?.designSpaces[id];
    const b = next.designSpaces[id];
    const name = `${(a ?? b)!.product} × ${(a ?? b)!.tooling}`;
    if (!a || !b) {
      add('design_space', `design space ${name}`, a ? `${Object.keys(a.setpoints).length} setpoints` : null, b ? `${Object.keys(b.setpoints).length} setpoints` : null);
      if (!b) continue;
    }
    for (const sp of keys(a?.setpoints, b.setpoints)) {
      const la = a?.setpoints[sp];
      const lb = b.setpoints[sp];
      if (!la || !lb) {
        add('design_space', `design space ${name}: ${sp}`, la ? limitText(la) : null, lb ? limitText(lb) : null);
        continue;
      }
      const fields: [string, keyof CompiledLimit['declared']][] = [['min', 'min'], ['max', 'max'], ['max step', 'maxStep'], ['max rate/min', 'maxRatePerMin'], ['unit', 'unit']];
      for (const [label, f] of fields) {
        const from = la.declared[f];
        const to = lb.declared[f];
        if (from === to) continue;
        const unit = f === 'unit' ? '' : ` ${lb.declared.unit}`;
        out.push({ area: 'design_space', item: `${name} ${sp} ${label}`, from: String(from), to: String(to), text: `design space ${name}: ${sp} ${label} ${from} → ${to}${unit}` });
      }
    }
  }

  for (const id of keys(old?.agents, next.agents)) {
    const a = old?.agents[id];
    const b = next.agents[id];
    if (!a || !b) {
      add('allow_list', id, a ? `agent (${a.autonomy}; ${a.allow.join(', ') || 'read-only'})` : null, b ? `agent (${b.autonomy}; ${b.allow.join(', ') || 'read-only'})` : null);
      continue;
    }
    const added = b.allow.filter((s) => !a.allow.includes(s));
    const removed = a.allow.filter((s) => !b.allow.includes(s));
    if (added.length || removed.length) {
      out.push({
        area: 'allow_list', item: id, from: a.allow.join(', '), to: b.allow.join(', '),
        text: `allow-list ${id}: ${[...added.map((s) => `+ ${s}`), ...removed.map((s) => `- ${s}`)].join(', ')}`,
      });
    }
    add('agent_autonomy', `autonomy of ${id}`, a.autonomy, b.autonomy);
    add('model_family', `model family of ${id}`, a.modelFamily, b.modelFamily);
  }

  for (const sp of keys(old?.setpoints, next.setpoints)) {
    const a = old?.setpoints[sp];
    const b = next.setpoints[sp];
    add('autonomy_ceiling', `autonomy ceiling of ${sp}`, a?.autonomy, b?.autonomy);
    add('validated', `${sp} validated parameter`, a ? String(a.validated) : null, b ? String(b.validated) : null);
    add('low_risk', `${sp} low-risk`, a ? String(a.lowRisk) : null, b ? String(b.lowRisk) : null);
  }
  for (const k of keys(old?.exceptionSeverity as Record<string, string> | undefined, next.exceptionSeverity as Record<string, string> | undefined)) {
    add('severity', `severity of ${k} exceptions`, (old?.exceptionSeverity as Record<string, string> | undefined)?.[k], (next.exceptionSeverity as Record<string, string> | undefined)?.[k]);
  }
  return out;
}

function limitText(l: CompiledLimit): string {
  const d = l.declared;
  return `${d.min}–${d.max} ${d.unit}, step ≤ ${d.maxStep}, rate ≤ ${d.maxRatePerMin}/min`;
}
