/**
 * The logger of one request, made on first use. Fastify gives every request a child of the API's logger bound to
 * its request id; pino builds a child eagerly (its bindings serialised to JSON), which cost about as much as the
 * rest of a GET /runs/{id} served from the view cache — and with request logging off (server.ts) most requests
 * never log. Here the pino child is built the first time the request logs, from the same parent, bindings and
 * options, so every line written is the one the eager child would have written.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

type Log = (...args: unknown[]) => void;

class LazyRequestLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly opts: ChildLoggerOptions,
  ) {}

  private get log(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.opts));
  }

  get level(): string {
    return this.log.level;
  }

  set level(level: string) {
    this.log.level = level;
  }

  fatal(...args: unknown[]): void {
    (this.log.fatal as Log)(...args);
  }

  error(...args: unknown[]): void {
    (this.log.error as Log)(...args);
  }

  warn(...args: unknown[]): void {
    (this.log.warn as Log)(...args);
  }

  info(...args: unknown[]): void {
    (this.log.info as Log)(...args);
  }

  debug(...args: unknown[]): void {
    (this.log.debug as Log)(...args);
  }

  trace(...args: unknown[]): void {
    (this.log.trace as Log)(...args);
  }

  silent(...args: unknown[]): void {
    (this.log.silent as Log)(...args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.log.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: the request's child logger, built when the request first logs. */
export function lazyRequestLogger(parent: FastifyBaseLogger, bindings: Bindings, opts: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyRequestLogger(parent, bindings, opts);
}
