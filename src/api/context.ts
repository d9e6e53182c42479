/** What the routes of the REST API are given: the daemon's parts they drive, and the API's own services. */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance, onRequestAsyncHookHandler } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Connector, Sample } from '../../connectors/types.js';
import type { Clock } from '../clock.js';
import type { LoadedConfig } from '../config/load.js';
import type { GuardedWriter } from '../engine/guarded-writer.js';
import type { RunEngine } from '../engine/run/engine.js';
import type { PolicyBundle } from '../policy/index.js';
import type { Store } from '../store/store.js';
import type { SupervisorView } from '../supervision/plc-watch.js';
import type { Identity, Role } from './identity.js';
import type { RunStreams } from './sse.js';

/** The parts of a running daemon the API drives (`Daemon` has them all). */
export interface ApiDaemon {
  readonly engine: RunEngine;
  /**
   * Pending writes, and their approval or rejection by a person (the writer re-evaluates at call time); pending
   * arbitration deadlocks and a person's decision of one; a person's re-arm of a LOST PLC; what the equipment holds
   * now for a pending write's setpoints (read as the writer reads them).
   */
  readonly writer: Pick<GuardedWriter, 'pending' | 'approve' | 'reject' | 'escalations' | 'resolve' | 'withdrawn' | 'rearm' | 'current'>;
  readonly store: Store;
  readonly loaded: LoadedConfig;
  /** The policy bundle in force, or null (every write is then denied). */
  readonly policy: { readonly bundle: PolicyBundle | null };
  readonly connectors: readonly Pick<Connector, 'health'>[];
  /** Latest sample per tag id. */
  readonly live: ReadonlyMap<string, Sample>;
  /** What each PLC's supervisor tags report, by equipment id. */
  readonly supervision: () => ReadonlyMap<string, SupervisorView>;
}

export type Api = FastifyInstance<Server, IncomingMessage, ServerResponse, FastifyBaseLogger, ZodTypeProvider>;

export interface ApiContext {
  readonly daemon: ApiDaemon;
  readonly identity: Identity;
  readonly streams: RunStreams;
  readonly clock: Clock;
  /** The guard of a route: the roles it needs and, for the 403 detail, what it does. */
  readonly guard: (roles: readonly Role[], what: string) => onRequestAsyncHookHandler;
}

/** The base path of every tenant-scoped route. */
export const BASE = '/v1/tenants/:tenant';
