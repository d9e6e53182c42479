/**
 * Main-level composition of the run engine from the daemon's parts: the connectors (read-only), the one
 * guarded writer, the MES and LIMS folders, the model registry and the way phases start on this line.
 */
import { roleMapOf } from '../../domain/roles.js';
import type { LimsSource } from '../../../connectors/lims/index.js';
import type { MesIntake, MesSource } from '../../../connectors/mes/index.js';
import type { Connector } from '../../../connectors/types.js';
import { sleep, type Clock } from '../../clock.js';
import type { LoadedConfig } from '../../config/load.js';
import { checkBatchRecordAgainstSite } from '../../domain/batch-record.js';
import { parseRunRequest } from '../../domain/run-request.js';
import type { Logger } from '../../log.js';
import type { PolicyBundle } from '../../policy/index.js';
import type { Store } from '../../store/store.js';
import type { GuardedWriter } from '../guarded-writer.js';
import { RunEngine } from './engine.js';
import { effectiveLimits } from './limits.js';
import { lineReader, plcPhaseObserver } from './line.js';
import { registryModels } from './models.js';
import { STEPS } from './steps/index.js';
import type { ParsedRequest } from './types.js';
import type { PeopleLookup } from './lifecycle.js';

export interface ComposeOptions {
  readonly store: Store;
  readonly loaded: LoadedConfig;
  readonly clock: Clock;
  readonly processClock: Clock;
  readonly writer: GuardedWriter;
  readonly connectors: readonly Connector[];
  /** Tag id → connector id. */
  readonly served: ReadonlyMap<string, string>;
  readonly mes: MesSource & { readonly intake?: MesIntake };
  /** Each PLC's supervisor view and the PLCs refused supervision, for the readiness check before a run. */
  readonly supervision?: () => ReadonlyMap<string, { readonly state?: string }>;
  readonly unsupervised?: () => ReadonlySet<string>;
  readonly lims?: LimsSource;
  readonly log: Logger;
  readonly policy: () => PolicyBundle | null;
  /**
   * Told which phase the engine waits for (the operator's notice): the embedded simulator's operator presses start
   * at its HMI; the engine then reads the phase from the line like on any other.
   */
  readonly startPhase?: (phase: string, batch: string) => void;
  readonly pollMs?: number;
  /** The site's people, when linekeeper holds them (its local identities): checked at batch-record intake. */
  readonly people?: PeopleLookup;
}

export function createRunEngine(o: ComposeOptions): RunEngine {
  const read = lineReader(o.connectors, o.served, () => o.clock.now());
  const byId = new Map(o.connectors.map((c) => [c.id, c]));
  const connection = (tag: string): string | undefined => {
    const c = o.served.get(tag);
    return c ? byId.get(c)?.health().state : undefined;
  };
  const { config } = o.loaded;
  return new RunEngine({
    store: o.store,
    site: config,
    dataDir: o.loaded.dataDir,
    clock: o.clock,
    processClock: o.processClock,
    writer: o.writer,
    read,
    connection,
    mes: o.mes,
    line: {
      supervision: o.supervision ?? (() => new Map()),
      unsupervised: o.unsupervised ?? (() => new Set()),
      connections: () => o.connectors.map((c) => ({ id: c.id, state: c.health().state })),
    },
    ...(o.lims ? { lims: o.lims } : {}),
    // one phase source for every line: the embedded simulator's operator answers the engine's notice like a person at the HMI
    sequencer: plcPhaseObserver(read, {
      now: () => o.clock.now(),
      sleep: (ms, signal) => sleep(o.clock, ms, signal),
      pollMs: o.pollMs ?? 1000,
      ...(o.startPhase ? { onWait: o.startPhase } : {}),
      ...(config.line.phase ? { tag: config.line.phase.tag, timeoutMs: config.line.phase.timeout_s * 1000, ...(config.line.phase.values ? { values: config.line.phase.values } : {}) } : { tag: roleMapOf(config).tag('plc.BatchPhase') }),
    }),
    policy: o.policy,
    log: o.log,
    models: registryModels(o.store, o.loaded.dataDir, config.site.id),
    parseRequest: (text) => parseRunRequest(text) as unknown as ParsedRequest,
    checkRecord: (record, site) => checkBatchRecordAgainstSite(record as Parameters<typeof checkBatchRecordAgainstSite>[0], site),
    effectiveLimits,
    steps: STEPS,
    ...(o.pollMs !== undefined ? { pollMs: o.pollMs } : {}),
    ...(o.people ? { people: o.people } : {}),
  });
}
