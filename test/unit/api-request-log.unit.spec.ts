/**
 * The request logger made on first use: nothing is built for a request that does not log, and a request that
 * logs writes exactly the line an eager pino child (fastify's default) writes, request id included.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { lazyRequestLogger } from '../../src/api/request-log.js';

function capture(): { lines: Record<string, unknown>[]; stream: Writable } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({ write(chunk: Buffer, _enc, done) { lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>); done(); } });
  return { lines, stream };
}

describe('lazyRequestLogger', () => {
  it('builds no child until the request logs, then writes what the eager child writes', () => {
    const { lines, stream } = capture();
    const root = pino({ level: 'info', base: { app: 'linekeeper' }, timestamp: false }, stream);
    let children = 0;
    const parent = new Proxy(root, { get: (t, p) => (p === 'child' ? (...a: Parameters<typeof root.child>) => (children++, t.child(...a)) : Reflect.get(t, p, t)) });
    lazyRequestLogger(parent, { reqId: 'req-1' }, {});
    const lazy = lazyRequestLogger(parent, { reqId: 'req-2' }, {});
    expect(children).toBe(0);
    expect(lazy.level).toBe('info');
    expect(children).toBe(1);
    lazy.info({ code: 'LK_NOT_FOUND', status: 404 }, 'request refused');
    lazy.debug('not at info level');
    root.child({ reqId: 'req-2' }).info({ code: 'LK_NOT_FOUND', status: 404 }, 'request refused');
    // one child in all: built once for the request that logged, none for the quiet one
    expect(children).toBe(1);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toEqual(lines[1]);
    expect(lines[0]).toMatchObject({ app: 'linekeeper', reqId: 'req-2', code: 'LK_NOT_FOUND', msg: 'request refused' });
  });
});
