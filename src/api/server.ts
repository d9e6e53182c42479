/**
 * The REST API (fastify 5, zod type provider): tenant-scoped routes under /v1/tenants/{tenant}, server-sent
 * events of the tool-call log, bearer tokens from local identities, problem+json errors with the registry's
 * codes, and an OpenAPI document generated from the same zod schemas that validate the requests.
 */
import fastifySwagger from '@fastify/swagger';
import Fastify, { LogController } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Clock } from '../clock.js';
import { silentLogger, type Logger } from '../log.js';
import { VERSION } from '../version.js';
import { LkError } from '../errors.js';
import { guardFactory } from './auth.js';
import { type Api, type ApiContext, type ApiDaemon } from './context.js';
import type { Identity } from './identity.js';
import { clientProblem, frameworkProblem, installProblems, PROBLEM_RESPONSES } from './problem.js';
import { lazyRequestLogger } from './request-log.js';
import { registerConsole } from './console.js';
import { registerReviewRoutes } from './routes-review.js';
import { registerTrailReviewRoutes } from './routes-trail-review.js';
import { registerExceptionRoutes } from './routes-exceptions.js';
import { registerRunRoutes } from './routes-runs.js';
import { registerLifecycleRoutes } from './routes-lifecycle.js';
import { registerSiteRoutes } from './routes-site.js';
import { registerLineRoutes } from './routes-line.js';
import { registerMetricsRoute } from './routes-metrics.js';
import type { Metrics } from '../ops/metrics.js';
import { registerAuthRoutes } from './routes-auth.js';
import { registerAutonomyRoutes } from './routes-autonomy.js';
import { registerArbitrationRoutes } from './routes-arbitration.js';
import { registerWaitingRoutes } from './routes-waiting.js';
import { registerModelRoutes } from './routes-models.js';
import { registerSignatureMeaningRoutes } from './routes-signatures.js';
import { Health } from './schemas.js';
import type { LoopDelaySnapshot } from '../ops/loop-delay.js';
import { RunStreams, type StreamOptions } from './sse.js';

export interface ApiOptions {
  readonly daemon: ApiDaemon;
  readonly clock: Clock;
  /** The site's identities (users in the store, tokens in memory). */
  readonly users: Identity;
  readonly logger?: Logger;
  /** Largest accepted request body in bytes (default 64 KiB). */
  readonly bodyLimit?: number;
  readonly streams?: StreamOptions;
  /** Whether the daemon can serve (GET /readyz); default always. */
  readonly ready?: () => boolean;
  /** The event-loop delay (src/ops/loop-delay.ts), reported by GET /readyz. */
  readonly loopDelay?: () => LoopDelaySnapshot;
  /** The daemon's metrics: served at GET /metrics (loopback, or with the token in `tokenFile`). */
  readonly metrics?: { readonly metrics: Metrics; readonly tokenFile?: string | undefined };
  /** Sign-in throttling (default: 10 failures per address, 3 per account, in 60 s). */
  readonly signInLimits?: { readonly windowMs: number; readonly perAddress: number; readonly perAccount: number };
  /** Serve the review console at /console (default true). */
  readonly console?: boolean;
  /** HTTPS with this certificate and key (PEM; src/config/api-tls.ts checks them); absent: plain HTTP (loopback only). */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer };
}

export interface ApiServer {
  readonly app: Api;
  readonly streams: RunStreams;
  /** Listen on `host:port` (port 0: a free one). @returns the address, e.g. http://127.0.0.1:8080. @throws LkError LK_API_LISTEN. */
  listen(host: string, port: number): Promise<string>;
  /** End the event streams, then stop accepting and close (idempotent). */
  close(): Promise<void>;
}

/**
 * Build the API over a running daemon's parts. Nothing listens until {@link ApiServer.listen}.
 * @throws whatever fastify throws for an invalid route table (a programming error).
 */
export async function createApi(o: ApiOptions): Promise<ApiServer> {
  const log = o.logger ?? silentLogger;
  const app = Fastify({
    ...(o.tls ? { https: { cert: o.tls.cert, key: o.tls.key, minVersion: 'TLSv1.2' as const } } : {}),
    loggerInstance: log.child({ component: 'api' }),
    bodyLimit: o.bodyLimit ?? 64 * 1024,
    // one line per refused or failed request (problem.ts), not two per request
    logController: new LogController({ disableRequestLogging: true }),
    // so a request that logs nothing (most) does not pay for a pino child logger
    childLoggerFactory: lazyRequestLogger,
    // requests under way finish on close (a signature is answered); event streams are ended first, see close()
    forceCloseConnections: 'idle',
    // fastify's own 503 is not a problem+json body: the hook below answers instead
    return503OnClosing: false,
    frameworkErrors: frameworkProblem,
    // what Node's HTTP parser refuses (431, 400, 408) is a problem body too, not fastify's plain JSON
    clientErrorHandler: clientProblem,
  }).withTypeProvider<ZodTypeProvider>() as unknown as Api;
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.decorateRequest('lkUser', null);
  // JSON only: fastify's default text/plain parser would hand a string to the body schemas
  app.removeContentTypeParser('text/plain');
  installProblems(app);
  let stopping = false;
  // a callback hook, not an async one: it runs on every request, and answers at once
  app.addHook('onRequest', (_req, reply, done) => {
    if (!stopping) return done();
    reply.header('connection', 'close');
    done(new LkError('LK_NOT_READY', 'linekeeper is stopping'));
  });

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'linekeeper', version: VERSION, description: 'Supervised batch runs of a tablet line: runs, their tool-call events, genealogy, approvals with Part 11 signatures, models, twin rehearsals, the line and the audit trail. Every error is application/problem+json with a stable LK_* code.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'opaque token from POST /v1/auth/token, or a JWT of the site\'s OIDC provider when api.oidc is configured' } } },
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });

  const tenants = new Set(o.daemon.loaded.config.tenants.map((t) => t.id));
  const streams = new RunStreams(o.daemon.engine, log.child({ component: 'sse' }), o.streams);
  const ctx: ApiContext = { daemon: o.daemon, identity: o.users, streams, clock: o.clock, guard: guardFactory(o.users, tenants) };
  const problems = PROBLEM_RESPONSES;

  registerAuthRoutes(app, o.users, o.clock, o.signInLimits);
  // while the API stops, the onRequest hook above answers every request, this one too, 503 LK_NOT_READY
  app.get('/healthz', { schema: { tags: ['health'], summary: 'The process answers (503 LK_NOT_READY while it stops)', response: { 200: Health, '5xx': problems['5xx'] } } }, async () => ({ status: 'ok' as const, version: VERSION }));
  app.get('/readyz', { schema: { tags: ['health'], summary: 'The daemon can serve requests', response: { 200: Health, ...problems } } }, async () => {
    if (o.ready && !o.ready()) throw new LkError('LK_NOT_READY', 'linekeeper is starting or stopping');
    const d = o.loopDelay?.();
    return {
      status: 'ready' as const, version: VERSION,
      ...(d ? { event_loop: { p99_ms: d.p99Ms, max_ms: d.maxMs, worst_ms: d.worstMs, bound_ms: d.boundMs, window_ms: d.windowMs, over_bound: d.overBound, ok: d.maxMs <= d.boundMs } } : {}),
    };
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  registerRunRoutes(app, ctx);
  registerExceptionRoutes(app, ctx);
  registerLifecycleRoutes(app, ctx);
  registerSiteRoutes(app, ctx);
  registerLineRoutes(app, ctx);
  if (o.metrics) {
    registerMetricsRoute(app, o.metrics.metrics, { tokenFile: o.metrics.tokenFile });
    o.metrics.metrics.setSources({ sseClients: () => streams.size });
  }
  registerAutonomyRoutes(app, ctx);
  registerReviewRoutes(app, ctx);
  registerTrailReviewRoutes(app, ctx);
  registerArbitrationRoutes(app, ctx);
  registerWaitingRoutes(app, ctx);
  if (o.console !== false) registerConsole(app);
  registerModelRoutes(app, ctx);
  registerSignatureMeaningRoutes(app, ctx);
  await app.ready();

  let closing: Promise<void> | undefined;
  return {
    app,
    streams,
    async listen(host, port) {
      try {
        return await app.listen({ host, port });
      } catch (err) {
        throw new LkError('LK_API_LISTEN', `the REST API cannot listen on ${host}:${port}: ${(err as Error).message}`, { host, port }, { cause: err });
      }
    },
    close() {
      closing ??= (async () => {
        stopping = true;
        streams.closeAll('linekeeper is stopping');
        await app.close();
      })();
      return closing;
    },
  };
}
