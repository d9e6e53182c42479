/**
 * The run engine's view of the line: batched reads through the connectors (read-only; writes go through the
 * guarded writer alone) and the two ways a batch phase starts.
 */
import type { Connector, Sample } from '../../../connectors/types.js';
import { sleep, systemClock } from '../../clock.js';
import { LkError } from '../../errors.js';
import type { LineSequencer } from './types.js';

/** Read tags through whichever connector serves each; a tag no connector serves comes back bad, not thrown. */
export function lineReader(connectors: readonly Connector[], served: ReadonlyMap<string, string>, now: () => number): (tags: readonly string[]) => Promise<Sample[]> {
  const byId = new Map(connectors.map((c) => [c.id, c]));
  return async (tags) => {
    const groups = new Map<string, string[]>();
    const out: Sample[] = [];
    for (const t of tags) {
      const c = served.get(t);
      if (!c) {
        out.push({ tag: t, value: null, quality: 'bad', status: 'LK_TAG_UNKNOWN', unit: '', sourceTime: now(), receivedAt: now() });
        continue;
      }
      groups.set(c, [...(groups.get(c) ?? []), t]);
    }
    const reads = await Promise.all([...groups].map(([c, ts]) => byId.get(c)!.read(ts)));
    for (const r of reads) out.push(...r);
    return out;
  };
}

/**
 * How every line's batch phases start: the PLC's phase logic starts each phase (the operator at the HMI, or the
 * MES); the engine says which phase it waits for (`onWait`: the operator's notice; on the embedded simulator, its
 * simulated operator presses start) and then waits until the phase tag reports it, polling every `pollMs`, for at
 * most `timeoutMs` (the step is then held for a person). The embedded simulator answers through this same
 * interface: the engine has no path of its own for it.
 */
export function plcPhaseObserver(
  read: (tags: readonly string[]) => Promise<Sample[]>,
  opts: {
    tag?: string;
    values?: Readonly<Partial<Record<string, readonly (string | number)[]>>>;
    pollMs?: number;
    timeoutMs?: number;
    now: () => number;
    /** The engine's wait between polls (virtual time in the core simulator); default: wall time. */
    sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
    onWait?: (phase: string, batch: string) => void;
  },
): LineSequencer {
  const tag = opts.tag ?? 'plc.BatchPhase';
  // the PLC's own values for a phase (a PackML UnitState number, an ISA-88 state word), else the phase's name
  const means = (phase: string, v: unknown): boolean => (opts.values?.[phase] ?? [phase]).some((x) => x === v);
  return {
    kind: 'plc',
    tag,
    async enter(phase, batch, signal) {
      const until = opts.now() + (opts.timeoutMs ?? 3_600_000);
      // the notice comes first, every time a step asks (a new batch's phase starts afresh even when the line
      // still shows the same phase from the last one)
      opts.onWait?.(phase, batch);
      for (;;) {
        const [s] = await read([tag]);
        if (s?.quality === 'good' && means(phase, s.value)) return;
        if (opts.now() > until) throw new LkError('LK_CONN_TIMEOUT', `the line PLC did not report phase ${phase} (${tag} is ${String(s?.value)})`, { phase });
        if (signal.aborted) return;
        await (opts.sleep ?? ((ms: number, sig: AbortSignal) => sleep(systemClock, ms, sig)))(opts.pollMs ?? 1000, signal);
      }
    },
  };
}
