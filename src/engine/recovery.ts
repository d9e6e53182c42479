/**
 * After a crash: every `intent` entry left without its `outcome` (the process
 * stopped between announcing an equipment write and recording its result) is
 * closed with an `interrupted` outcome carrying what the equipment holds now,
 * read back through its connector (or `unknown` when it cannot be read), so
 * the auditor sees what the line actually held. One `alarm` entry per tenant
 * chain says a person must check: a vector may have been written in part.
 * Where the equipment moved, the move counts for the rate-of-change check.
 */
import type { AuditEntry } from '../audit/index.js';
import type { Store } from '../store/store.js';
import { json } from './json.js';
import type { LastMove, WriterState } from './writer-state.js';
import type { RecoveryReport } from './writer-types.js';

export interface Reading {
  readonly value: number | null;
  readonly quality: string;
  readonly status: string;
}

type Held = 'intended' | 'previous' | 'other' | 'unknown';

function held(e: AuditEntry, value: number | null, tolerance: number): Held {
  if (value === null) return 'unknown';
  const near = (x: unknown): boolean => typeof x === 'number' && Math.abs(x - value) <= tolerance + 1e-9 * Math.max(1, Math.abs(x));
  if (near(e.new)) return 'intended';
  if (near(e.old)) return 'previous';
  return 'other';
}

/**
 * Close the open intents of every chain. `read` must not throw (an unreadable setpoint is a reading with value null).
 * @returns what was closed, and the moves the equipment made (to merge into the writer's last moves).
 */
export async function closeOpenIntents(
  store: Store,
  state: WriterState,
  read: (setpoint: string) => Promise<Reading>,
  tolerance: (setpoint: string) => number,
  lastMoves: ReadonlyMap<string, LastMove>,
): Promise<{ interrupted: RecoveryReport['interrupted']; moves: Map<string, LastMove> }> {
  const report: RecoveryReport['interrupted'][number][] = [];
  const moves = new Map<string, LastMove>();
  for (const tenant of store.audit.chains()) {
    const open = store.audit.openIntents(tenant);
    if (open.length === 0) continue;
    const readings: Reading[] = [];
    for (const e of open) readings.push(e.subject.setpoint ? await read(e.subject.setpoint) : { value: null, quality: 'bad', status: 'NO_SETPOINT' });
    store.tx((t) => {
      open.forEach((e, i) => {
        const r = readings[i]!;
        const sp = e.subject.setpoint ?? null;
        const h = held(e, r.value, sp ? tolerance(sp) : 0);
        const out = t.audit.outcome(
          { tenant, seq: e.seq, hash: e.hash },
          {
            actor: 'system',
            action: e.action,
            subject: e.subject,
            result: json({ ok: false, status: 'interrupted', equipment: r.value ?? 'unknown', quality: r.quality, equipmentStatus: r.status, held: h }),
            reason: `interrupted: the process stopped before the outcome was recorded; the equipment ${r.value === null ? 'could not be read' : `holds ${r.value}`}`,
            ...(e.old !== undefined ? { old: e.old } : {}),
            new: r.value ?? 'unknown',
          },
        );
        report.push({ tenant, seq: e.seq, setpoint: sp, intended: e.new ?? null, equipment: r.value, quality: r.quality });
        // the equipment moved away from where it was: that move counts for the rate check, at the intent's time
        if (sp && r.value !== null && h !== 'previous') {
          const at = Date.parse(e.ts);
          const prev = moves.get(sp) ?? lastMoves.get(sp);
          if (!prev || prev.at <= at) {
            state.putLastMove(t, sp, { value: r.value, at }, tenant, out.seq);
            moves.set(sp, { value: r.value, at });
          }
        }
      });
      t.audit.append({
        tenant,
        actor: 'system',
        kind: 'alarm',
        action: 'setpoint.interrupted',
        reason: `${open.length} equipment write(s) interrupted by a stop; a vector may be written in part: check the line`,
        result: json(open.map((e, i) => ({ intent: e.seq, setpoint: e.subject.setpoint ?? null, intended: e.new ?? null, equipment: readings[i]!.value ?? 'unknown' }))),
      });
    });
  }
  return { interrupted: report, moves };
}
